//! The string `format`s a CRD schema may name and kube-openapi validates (its `strfmt`
//! default registry, `k8s.io/kube-openapi/pkg/validation/strfmt/default.go`): one predicate
//! per format, shared by the schema validator (`apiserver/src/crd/schema.rs`) and the format
//! library (`format.uuid().validate(...)`).
//!
//! A format not in the registry (`int32`, `int64`, `float`, `double`, or one of the user's
//! own) is not validated, as upstream does not validate it.

use std::net::IpAddr;

use base64::Engine;

/// `uuid` (any version): `8-4-4-4-12` hexadecimal digits, either case.
pub fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `byte`: standard base64 with padding.
pub fn is_base64(s: &str) -> bool {
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}

/// `date`: `2006-01-02`.
pub fn is_date(s: &str) -> bool {
    s.len() == 10 && kubemock_apimachinery::time::parse_rfc3339(&format!("{s}T00:00:00Z")).is_some()
}

/// `date-time`: RFC 3339 (strfmt also takes a missing colon in the offset and a space for
/// `T`, as its extra layouts do).
pub fn is_datetime(s: &str) -> bool {
    if kubemock_apimachinery::time::parse_rfc3339(s).is_some() {
        return true;
    }
    let fixed = s.replacen(' ', "T", 1);
    if kubemock_apimachinery::time::parse_rfc3339(&fixed).is_some() {
        return true;
    }
    // `+0700` offsets.
    let b = fixed.as_bytes();
    if b.len() > 5 && matches!(b[b.len() - 5], b'+' | b'-') {
        let (head, tail) = fixed.split_at(fixed.len() - 2);
        return kubemock_apimachinery::time::parse_rfc3339(&format!("{head}:{tail}")).is_some();
    }
    false
}

/// `hostname`: RFC 1123 labels joined by dots, at most 255 bytes (strfmt's pattern, which
/// also admits letters beyond ASCII).
pub fn is_hostname(s: &str) -> bool {
    if s.is_empty() || s.len() > 255 {
        return false;
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.chars().count() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    let labels: Vec<&str> = s.split('.').collect();
    if labels.len() == 1 {
        return label_ok(labels[0]);
    }
    let (last, rest) = labels.split_last().unwrap_or((&"", &[]));
    rest.iter().all(|l| label_ok(l))
        && (2..=63).contains(&last.chars().count())
        && last.chars().all(char::is_alphabetic)
}

/// `email`: one `@`, a non-empty local part without spaces, a hostname domain.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !local.contains(char::is_whitespace)
        && !local.contains('@')
        && (is_hostname(domain) || domain.split('.').count() > 1 && !domain.contains(' '))
}

/// `ipv4` / `ipv6`: Go's `net.ParseIP` and the family.
pub fn is_ip(s: &str, v6: bool) -> bool {
    match s.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => !v6,
        Ok(IpAddr::V6(_)) => v6 || s.contains('.') && !s.contains(':'),
        Err(_) => false,
    }
}

/// `cidr`: `address/bits`.
pub fn is_cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(addr) = addr.parse::<IpAddr>() else {
        return false;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// `mac`: Go's `net.ParseMAC` forms (`01:23:45:67:89:ab`, with `-`, or `0123.4567.89ab`).
pub fn is_mac(s: &str) -> bool {
    let hex_groups = |sep: char, width: usize| {
        let groups: Vec<&str> = s.split(sep).collect();
        matches!(groups.len() * width, 12 | 16 | 40)
            && groups
                .iter()
                .all(|g| g.len() == width && g.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    hex_groups(':', 2) || hex_groups('-', 2) || hex_groups('.', 4)
}

/// Whether `value` is valid for the string format `format`; `None` when upstream does not
/// validate that format.
pub fn validate_string_format(format: &str, value: &str) -> Option<bool> {
    Some(match format {
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(value),
        "byte" => is_base64(value),
        "date" => is_date(value),
        "date-time" | "datetime" => is_datetime(value),
        "hostname" => is_hostname(value),
        "email" => is_email(value),
        "ipv4" => is_ip(value, false),
        "ipv6" => is_ip(value, true),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uri" => crate::library::k8s::parse_url(value).is_ok(),
        "duration" => kubemock_apimachinery::duration::parse_duration(value).is_ok(),
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "hexcolor" => {
            value.len() == 7
                && value.starts_with('#')
                && value[1..].bytes().all(|b| b.is_ascii_hexdigit())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_refuse_as_strfmt() {
        let cases = [
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567e89b12d3a456426614174000", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-30x", false),
            ("date-time", "2024-05-01T12:00:00Z", true),
            ("date-time", "2024-05-01", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("email", "a@example.com", true),
            ("email", "nope", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
        ];
        for (format, value, valid) in cases {
            assert_eq!(
                validate_string_format(format, value),
                Some(valid),
                "{format} {value}"
            );
        }
        assert_eq!(validate_string_format("int32", "x"), None);
    }
}
