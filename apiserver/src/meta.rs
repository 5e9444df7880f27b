//! Object metadata rules (§3): the conversion between store revisions and resourceVersion
//! strings (the only place it happens), timestamps, uids, name validation, generateName, and
//! the canonical order of metadata fields.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use kubemock_storage::Revision;
use serde_json::{Map, Value};

use crate::registry::NameRule;
use crate::status::{ApiError, Cause, Details};

/// A store revision as a resourceVersion string.
pub(crate) fn resource_version(revision: Revision) -> String {
    revision.to_string()
}

/// Parses a resourceVersion query parameter or body field; `""` is `None`.
pub(crate) fn parse_resource_version(value: &str) -> Result<Option<Revision>, ApiError> {
    if value.is_empty() {
        return Ok(None);
    }
    value
        .parse::<Revision>()
        .map(Some)
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {value}")))
}

/// Now, as RFC 3339 UTC with seconds precision (`metav1.Time`).
pub(crate) fn now_rfc3339() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(seconds)
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (`metav1.Time`).
pub(crate) fn rfc3339(unix_seconds: u64) -> String {
    rfc3339_fraction(i64::try_from(unix_seconds).unwrap_or(i64::MAX), None)
}

/// Unix seconds and nanoseconds as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (`metav1.MicroTime`).
pub(crate) fn rfc3339_micro(unix_seconds: i64, nanos: u32) -> String {
    rfc3339_fraction(unix_seconds, Some(nanos / 1000))
}

fn rfc3339_fraction(unix_seconds: i64, micros: Option<u32>) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let rem = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let fraction = micros.map(|m| format!(".{m:06}")).unwrap_or_default();
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A fresh object uid.
pub(crate) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Characters of generated name suffixes: no vowels, no confusable digits (§3.2).
const NAME_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// generateName is cut to this many characters before the suffix.
const GENERATE_NAME_PREFIX_MAX: usize = 58;
/// Length of the random suffix.
const GENERATE_NAME_SUFFIX_LEN: usize = 5;

/// A name generated from `prefix` (§3.2).
pub(crate) fn generate_name(prefix: &str) -> String {
    let mut name: String = prefix.chars().take(GENERATE_NAME_PREFIX_MAX).collect();
    for _ in 0..GENERATE_NAME_SUFFIX_LEN {
        let i = fastrand::usize(..NAME_SUFFIX_ALPHABET.len());
        name.push(char::from(NAME_SUFFIX_ALPHABET[i]));
    }
    name
}

const SUBDOMAIN_REGEX: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035_REGEX: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

fn is_label(s: &str, first_alpha: bool) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    let first_ok = if first_alpha {
        first.is_ascii_lowercase()
    } else {
        first.is_ascii_lowercase() || first.is_ascii_digit()
    };
    first_ok
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// Problems with `name` under `rule`, as field-error details (empty when valid). With
/// `prefix`, `name` is a generateName prefix: a trailing `-` is allowed.
pub(crate) fn name_errors(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    let checked = if prefix {
        name.strip_suffix('-').unwrap_or(name)
    } else {
        name
    };
    let mut errors = Vec::new();
    let quoted = serde_json::to_string(name).unwrap_or_default();
    match rule {
        NameRule::Subdomain => {
            if name.len() > 253 {
                errors.push(format!(
                    "Invalid value: {quoted}: must be no more than 253 characters"
                ));
            }
            if !checked.split('.').all(|part| is_label(part, false)) {
                errors.push(format!(
                    "Invalid value: {quoted}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{SUBDOMAIN_REGEX}')"
                ));
            }
        }
        NameRule::Label => {
            if name.len() > 63 {
                errors.push(format!(
                    "Invalid value: {quoted}: must be no more than 63 characters"
                ));
            }
            if name.contains('.') {
                errors.push(format!("Invalid value: {quoted}: must not contain dots"));
            } else if !is_label(checked, false) {
                errors.push(format!(
                    "Invalid value: {quoted}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{LABEL_REGEX}')"
                ));
            }
        }
        NameRule::Dns1035 => {
            if name.len() > 63 {
                errors.push(format!(
                    "Invalid value: {quoted}: must be no more than 63 characters"
                ));
            }
            if !is_label(checked, true) {
                errors.push(format!(
                    "Invalid value: {quoted}: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '{DNS1035_REGEX}')"
                ));
            }
        }
    }
    errors
}

/// A field error, for [`invalid`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// The field path (`metadata.name`).
    pub(crate) field: String,
    /// Cause type (`FieldValueInvalid`).
    pub(crate) reason: &'static str,
    /// The text after the field path (`Invalid value: "x": ...`).
    pub(crate) detail: String,
}

/// The 422 Invalid error for `kind` `name` (`qualified_kind` is `Kind` or `Kind.group`).
pub(crate) fn invalid(
    qualified_kind: &str,
    group: &str,
    kind: &str,
    name: &str,
    errors: Vec<FieldError>,
) -> ApiError {
    let mut texts: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.detail))
        .collect();
    texts.dedup();
    let summary = if texts.len() == 1 {
        texts[0].clone()
    } else {
        format!("[{}]", texts.join(", "))
    };
    let causes = errors
        .into_iter()
        .map(|e| Cause {
            reason: e.reason.to_owned(),
            message: e.detail,
            field: e.field,
        })
        .collect();
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("{qualified_kind} \"{name}\" is invalid: {summary}"),
    )
    .with_details(Details {
        name: Some(name.to_owned()),
        group: (!group.is_empty()).then(|| group.to_owned()),
        kind: Some(kind.to_owned()),
        causes,
        ..Details::default()
    })
}

/// The 422 for invalid list or watch options (`ListOptions.meta.k8s.io "" is invalid: ...`).
pub(crate) fn list_options_invalid(errors: Vec<FieldError>) -> ApiError {
    let mut error = invalid(
        "ListOptions.meta.k8s.io",
        "meta.k8s.io",
        "ListOptions",
        "",
        errors,
    );
    if let Some(details) = error.details.as_mut() {
        details.name = None;
    }
    error
}

/// Metadata fields in the order the real server writes them.
const METADATA_ORDER: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Reorders `metadata` into the real server's field order (unknown fields last, in order).
pub(crate) fn canonicalize_metadata(metadata: &mut Map<String, Value>) {
    let mut ordered = Map::with_capacity(metadata.len());
    for key in METADATA_ORDER {
        if let Some(value) = metadata.shift_remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.append(metadata);
    *metadata = ordered;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_seconds_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_714_564_800), "2024-05-01T12:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(now_rfc3339().len(), 20);
    }

    #[test]
    fn resource_versions_round_trip_and_reject_garbage() {
        assert_eq!(parse_resource_version("42").unwrap(), Some(42));
        assert_eq!(parse_resource_version("").unwrap(), None);
        let err = parse_resource_version("abc").unwrap_err();
        assert_eq!(err.code, StatusCode::BAD_REQUEST);
        assert_eq!(resource_version(7), "7");
    }

    #[test]
    fn names_follow_the_real_rules() {
        assert!(name_errors("web-1.example", NameRule::Subdomain, false).is_empty());
        assert_eq!(name_errors("Bad_Name", NameRule::Subdomain, false).len(), 1);
        assert!(name_errors("a.b", NameRule::Label, false)[0].ends_with("must not contain dots"));
        assert!(!name_errors("1svc", NameRule::Dns1035, false).is_empty());
        assert!(name_errors("svc-1", NameRule::Dns1035, false).is_empty());
        assert!(name_errors("web-", NameRule::Subdomain, true).is_empty());
        assert!(!name_errors("web-", NameRule::Subdomain, false).is_empty());
        assert!(!name_errors(&"a".repeat(254), NameRule::Subdomain, false).is_empty());
        assert!(!name_errors("", NameRule::Subdomain, false).is_empty());
    }

    #[test]
    fn generated_names_keep_a_58_character_prefix_and_add_5() {
        let name = generate_name(&"x".repeat(70));
        assert_eq!(name.len(), 63);
        assert!(
            name[58..]
                .bytes()
                .all(|b| NAME_SUFFIX_ALPHABET.contains(&b))
        );
        assert!(generate_name("web-").starts_with("web-"));
    }

    #[test]
    fn invalid_lists_several_errors_in_brackets() {
        let errors = vec![
            FieldError {
                field: "spec.containers[0].name".into(),
                reason: "FieldValueRequired",
                detail: "Required value".into(),
            },
            FieldError {
                field: "spec.containers[0].image".into(),
                reason: "FieldValueRequired",
                detail: "Required value".into(),
            },
        ];
        let err = invalid("Pod", "", "Pod", "p", errors);
        assert_eq!(
            err.message,
            "Pod \"p\" is invalid: [spec.containers[0].name: Required value, spec.containers[0].image: Required value]"
        );
        assert_eq!(err.details.unwrap().causes.len(), 2);
    }

    #[test]
    fn metadata_is_reordered_like_the_real_server() {
        let mut m: Map<String, Value> = serde_json::from_str(
            r#"{"labels":{},"x":1,"resourceVersion":"3","name":"a","uid":"u"}"#,
        )
        .unwrap();
        canonicalize_metadata(&mut m);
        let keys: Vec<&String> = m.keys().collect();
        assert_eq!(keys, ["name", "uid", "resourceVersion", "labels", "x"]);
    }
}
