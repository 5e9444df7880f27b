//! Name, label and other string rules, with upstream's messages, as
//! `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go` defines them; IP and CIDR
//! checks read addresses as `k8s.io/utils/net`'s `ParseIPSloppy`/`ParseCIDRSloppy` do (Go 1.16's
//! parser, which still accepts leading zeros in IPv4 octets).
//!
//! Why here: every object name, namespace, label, annotation key, port name and environment
//! variable is checked by these rules on the server, and a client or controller that builds
//! names (a ReplicaSet's pod names, a generated name) must build ones that pass. Each function
//! returns the list of messages upstream returns, word for word (an empty list when valid), so
//! a 422 reads as kube-apiserver's.
//!
//! Invariant: each pattern is upstream's regular expression (quoted in its messages), matched
//! by hand over bytes, which is equivalent because all their character classes are ASCII; a
//! valid name costs one pass and no regex engine.

use crate::field::{Error, ErrorList, Path};

/// A label's max length in DNS (RFC 1123) (upstream's `DNS1123LabelMaxLength`).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// A subdomain's max length in DNS (RFC 1123) (upstream's `DNS1123SubdomainMaxLength`).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// A label's max length in DNS (RFC 1035) (upstream's `DNS1035LabelMaxLength`).
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// A label value's max length (upstream's `LabelValueMaxLength`).
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// The max length of a qualified name's name part (upstream's `qualifiedNameMaxLength`).
const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// The max length of a port name (IANA service names, RFC 6335).
const PORT_NAME_MAX_LENGTH: usize = 15;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR_MSG_UNDERSCORE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const WILDCARD_DNS1123_SUBDOMAIN_FMT: &str =
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const WILDCARD_DNS1123_SUBDOMAIN_ERR_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";
const C_IDENTIFIER_FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";
const C_IDENTIFIER_ERR_MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";
const HTTP_HEADER_NAME_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_NAME_ERR_MSG: &str =
    "a valid HTTP header must consist of alphanumeric characters or '-'";
const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_NAME_FMT_ERR_MSG: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const RELAXED_ENV_VAR_NAME_FMT_ERR_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// "must be no more than N characters" (upstream's `MaxLenError`).
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// A regular-expression failure: the message, examples, and the pattern (upstream's
/// `RegexError`).
///
/// ```
/// use kubemock_apimachinery::validation::regex_error;
/// assert_eq!(regex_error("bad", "[a-z]+", &["abc"]), "bad (e.g. 'abc', regex used for validation is '[a-z]+')");
/// ```
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// "must be non-empty" (upstream's `EmptyError`).
pub fn empty_error() -> String {
    "must be non-empty".to_string()
}

/// "must be between lo and hi, inclusive" (upstream's `InclusiveRangeError`).
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `first middle* last`, or a single `first` that is also a `last`: the shape of every
/// `x([...]*y)?` pattern here.
fn matches_shape(
    s: &[u8],
    first: fn(u8) -> bool,
    middle: fn(u8) -> bool,
    last: fn(u8) -> bool,
) -> bool {
    match s {
        [] => false,
        [only] => first(*only) && last(*only),
        [head, inner @ .., tail] => first(*head) && last(*tail) && inner.iter().all(|&c| middle(c)),
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name(s: &[u8]) -> bool {
    matches_shape(
        s,
        is_alnum,
        |c| is_alnum(c) || matches!(c, b'-' | b'_' | b'.'),
        is_alnum,
    )
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &[u8]) -> bool {
    matches_shape(
        s,
        is_lower_alnum,
        |c| is_lower_alnum(c) || c == b'-',
        is_lower_alnum,
    )
}

/// Labels joined by dots, each matching `label`.
fn matches_dotted(s: &[u8], label: fn(&[u8]) -> bool) -> bool {
    s.split(|&c| c == b'.').all(label)
}

/// `_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label_with_underscore(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"_").unwrap_or(s);
    matches_shape(
        s,
        is_lower_alnum,
        |c| is_lower_alnum(c) || c == b'-' || c == b'_',
        is_lower_alnum,
    )
}

/// Whether every byte is in the class and there is at least one.
fn all_of(s: &[u8], class: fn(u8) -> bool) -> bool {
    !s.is_empty() && s.iter().all(|&c| class(c))
}

/// Whether `value` is what Kubernetes calls a qualified name (label and annotation keys,
/// finalizers): an optional DNS subdomain prefix and `/`, then a name of at most 63
/// characters (upstream's `IsQualifiedName`).
///
/// ```
/// use kubemock_apimachinery::validation::is_qualified_name;
/// assert!(is_qualified_name("example.com/MyName").is_empty());
/// assert_eq!(is_qualified_name("a/"), vec!["name part must be non-empty".to_string(),
///     "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
///      alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
///      '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()]);
/// ```
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name(name.as_bytes()) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// A DNS subdomain of at least three labels, without a trailing dot (upstream's deprecated
/// `IsFullyQualifiedName`).
pub fn is_fully_qualified_name(path: &Path, name: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if name.is_empty() {
        all.push(Error::required(path, ""));
        return all;
    }
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        all.push(Error::invalid(path, name, errs.join(",")));
        return all;
    }
    if name.split('.').count() < 3 {
        all.push(Error::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
    all
}

/// A DNS subdomain of at least two labels, a trailing dot allowed (upstream's
/// `IsFullyQualifiedDomainName`).
pub fn is_fully_qualified_domain_name(path: &Path, name: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if name.is_empty() {
        all.push(Error::required(path, ""));
        return all;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        all.push(Error::invalid(path, name, errs.join(",")));
        return all;
    }
    if name.split('.').count() < 2 {
        all.push(Error::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        ));
        return all;
    }
    for label in name.split('.') {
        let errs = is_dns1123_label(label);
        if !errs.is_empty() {
            all.push(Error::invalid(path, label, errs.join(",")));
            return all;
        }
    }
    all
}

/// A DNS subdomain, `/`, then an HTTP path (`acme.io/foo`) (upstream's `IsDomainPrefixedPath`).
pub fn is_domain_prefixed_path(path: &Path, dp_path: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if dp_path.is_empty() {
        all.push(Error::required(path, ""));
        return all;
    }
    let Some((host, http_path)) = dp_path
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        all.push(Error::invalid(
            path,
            dp_path,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return all;
    };
    for err in is_dns1123_subdomain(host) {
        all.push(Error::invalid(path, host, err));
    }
    let http_path_char = |c: u8| is_alnum(c) || b"/-._~%!$&'()*+,;=:".contains(&c);
    if !all_of(http_path.as_bytes(), http_path_char) {
        all.push(Error::invalid(
            path,
            http_path,
            regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
    all
}

/// A label value: empty, or at most 63 alphanumerics, `-`, `_`, `.` starting and ending with an
/// alphanumeric (upstream's `IsValidLabelValue`).
///
/// ```
/// use kubemock_apimachinery::validation::is_valid_label_value;
/// assert!(is_valid_label_value("").is_empty());
/// assert_eq!(is_valid_label_value("-x").len(), 1);
/// ```
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name(value.as_bytes()) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// An RFC 1123 label (namespace names, most resource names' parts) (upstream's
/// `IsDNS1123Label`).
///
/// ```
/// use kubemock_apimachinery::validation::is_dns1123_label;
/// assert!(is_dns1123_label("my-name").is_empty());
/// assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots".to_string()]);
/// assert_eq!(is_dns1123_label("My-Name"), vec![
///     "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
///      start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
///      validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()]);
/// ```
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value.as_bytes()) {
        if matches_dotted(value.as_bytes(), matches_dns1123_label) {
            // A valid subdomain and not a valid label: the length was checked, so it is dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// An RFC 1123 subdomain (most object names) (upstream's `IsDNS1123Subdomain`).
///
/// ```
/// use kubemock_apimachinery::validation::is_dns1123_subdomain;
/// assert!(is_dns1123_subdomain("example.com").is_empty());
/// assert_eq!(is_dns1123_subdomain(&"a".repeat(254))[0], "must be no more than 253 characters");
/// ```
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dotted(value.as_bytes(), matches_dns1123_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// An RFC 1123 subdomain whose labels may start with or contain `_` (upstream's
/// `IsDNS1123SubdomainWithUnderscore`; its message shows the pattern without underscores, as
/// upstream's does).
pub fn is_dns1123_subdomain_with_underscore(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dotted(value.as_bytes(), matches_dns1123_label_with_underscore) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG_UNDERSCORE,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// An RFC 1035 label (Service names): starts with a letter (upstream's `IsDNS1035Label`).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_shape(
        value.as_bytes(),
        |c| c.is_ascii_lowercase(),
        |c| is_lower_alnum(c) || c == b'-',
        is_lower_alnum,
    ) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `*.` and a DNS subdomain (RFC 1034 section 4.3.3) (upstream's `IsWildcardDNS1123Subdomain`).
pub fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let valid = value
        .strip_prefix("*.")
        .is_some_and(|rest| matches_dotted(rest.as_bytes(), matches_dns1123_label));
    if !valid {
        errs.push(regex_error(
            WILDCARD_DNS1123_SUBDOMAIN_ERR_MSG,
            WILDCARD_DNS1123_SUBDOMAIN_FMT,
            &["*.example.com"],
        ));
    }
    errs
}

/// A C identifier, any length (upstream's `IsCIdentifier`).
pub fn is_c_identifier(value: &str) -> Vec<String> {
    let valid = match value.as_bytes() {
        [first, rest @ ..] => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && rest.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
        }
        [] => false,
    };
    if valid {
        return Vec::new();
    }
    vec![regex_error(
        C_IDENTIFIER_ERR_MSG,
        C_IDENTIFIER_FMT,
        &["my_name", "MY_NAME", "MyName"],
    )]
}

/// A non-zero port number, 1 to 65535 (upstream's `IsValidPortNum`).
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    is_in_range(port, 1, 65535)
}

/// `min <= value <= max` (upstream's `IsInRange`).
pub fn is_in_range(value: i64, min: i64, max: i64) -> Vec<String> {
    if (min..=max).contains(&value) {
        Vec::new()
    } else {
        vec![inclusive_range_error(min, max)]
    }
}

/// The largest Unix user and group id libcontainer accepts (2^31 - 1).
const MAX_UNIX_ID: i64 = i32::MAX as i64;

/// A Unix group id, 0 to 2^31 - 1 (upstream's `IsValidGroupID`).
pub fn is_valid_group_id(gid: i64) -> Vec<String> {
    is_in_range(gid, 0, MAX_UNIX_ID)
}

/// A Unix user id, 0 to 2^31 - 1 (upstream's `IsValidUserID`).
pub fn is_valid_user_id(uid: i64) -> Vec<String> {
    is_in_range(uid, 0, MAX_UNIX_ID)
}

/// An IANA service name (a container port's name): at most 15 of `[-a-z0-9]`, a letter among
/// them, no `--`, no hyphen at either end (upstream's `IsValidPortName`).
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let bytes = port.as_bytes();
    if port.len() > PORT_NAME_MAX_LENGTH {
        errs.push(max_len_error(PORT_NAME_MAX_LENGTH));
    }
    if !all_of(bytes, |c| is_lower_alnum(c) || c == b'-') {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !bytes.iter().any(u8::is_ascii_lowercase) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if bytes.first() == Some(&b'-') || bytes.last() == Some(&b'-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// An IP address as `ParseIPSloppy` reads it (upstream's `IsValidIP`).
///
/// ```
/// use kubemock_apimachinery::field::Path;
/// use kubemock_apimachinery::validation::is_valid_ip;
/// assert!(is_valid_ip(&Path::new("ip"), "1.1.1.01").is_empty()); // leading zeros: still accepted
/// assert_eq!(is_valid_ip(&Path::new("ip"), "1.2.3.400").to_string(),
///     r#"ip: Invalid value: "1.2.3.400": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#);
/// ```
pub fn is_valid_ip(path: &Path, value: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if sloppy_ip::parse_ip(value).is_none() {
        all.push(Error::invalid(
            path,
            value,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
    all
}

/// An IPv4 address, IPv4-mapped IPv6 ones included (upstream's `IsValidIPv4Address`).
pub fn is_valid_ipv4_address(path: &Path, value: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if !sloppy_ip::parse_ip(value).is_some_and(|ip| sloppy_ip::is_ipv4(&ip)) {
        all.push(Error::invalid(path, value, "must be a valid IPv4 address"));
    }
    all
}

/// An IPv6 address that is not IPv4-mapped (upstream's `IsValidIPv6Address`).
pub fn is_valid_ipv6_address(path: &Path, value: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if sloppy_ip::parse_ip(value).is_none_or(|ip| sloppy_ip::is_ipv4(&ip)) {
        all.push(Error::invalid(path, value, "must be a valid IPv6 address"));
    }
    all
}

/// A CIDR as `ParseCIDRSloppy` reads it (bits past the prefix allowed) (upstream's
/// `IsValidCIDR`).
pub fn is_valid_cidr(path: &Path, value: &str) -> ErrorList {
    let mut all = ErrorList::new();
    if !sloppy_ip::is_cidr(value) {
        all.push(Error::invalid(
            path,
            value,
            "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        ));
    }
    all
}

/// Digits and a trailing `%` (upstream's `IsValidPercent`).
pub fn is_valid_percent(percent: &str) -> Vec<String> {
    let valid = percent
        .strip_suffix('%')
        .is_some_and(|digits| all_of(digits.as_bytes(), |c| c.is_ascii_digit()));
    if valid {
        return Vec::new();
    }
    vec![regex_error(PERCENT_ERR_MSG, PERCENT_FMT, &["1%", "93%"])]
}

/// Alphanumerics and `-` (Go's HTTP header names) (upstream's `IsHTTPHeaderName`).
pub fn is_http_header_name(value: &str) -> Vec<String> {
    if all_of(value.as_bytes(), |c| is_alnum(c) || c == b'-') {
        return Vec::new();
    }
    vec![regex_error(
        HTTP_HEADER_NAME_ERR_MSG,
        HTTP_HEADER_NAME_FMT,
        &["X-Header-Name"],
    )]
}

/// `.`, `..` and a leading `..` are refused for names that become file names.
fn has_ch_dir_prefix(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".to_string()],
        ".." => vec!["must not be '..'".to_string()],
        v if v.starts_with("..") => vec!["must not start with '..'".to_string()],
        _ => Vec::new(),
    }
}

/// An environment variable name (upstream's `IsEnvVarName`).
pub fn is_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let name_char = |c: u8| c.is_ascii_alphabetic() || matches!(c, b'-' | b'.' | b'_');
    let valid = match value.as_bytes() {
        [first, rest @ ..] => {
            name_char(*first) && rest.iter().all(|&c| name_char(c) || c.is_ascii_digit())
        }
        [] => false,
    };
    if !valid {
        errs.push(regex_error(
            ENV_VAR_NAME_FMT_ERR_MSG,
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

/// An environment variable name under the relaxed rule: printable ASCII but `=`
/// (upstream's `IsRelaxedEnvVarName`).
pub fn is_relaxed_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push(format!("environment variable name {}", empty_error()));
    }
    if value.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(RELAXED_ENV_VAR_NAME_FMT_ERR_MSG.to_string());
    }
    errs
}

/// A ConfigMap or Secret key (upstream's `IsConfigMapKey`).
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !all_of(value.as_bytes(), |c| {
        is_alnum(c) || matches!(c, b'-' | b'.' | b'_')
    }) {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

/// IP addresses as Go 1.16's `net.ParseIP`/`ParseCIDR` read them, the parser that
/// `k8s.io/utils/net` keeps as `ParseIPSloppy`/`ParseCIDRSloppy` so that stored objects with
/// leading zeros (`1.1.1.01`) stay valid.
mod sloppy_ip {
    /// 16 bytes; IPv4 addresses are IPv4-mapped (`::ffff:a.b.c.d`), as in Go.
    pub(super) type Ip = [u8; 16];

    /// Numbers stop here, as Go's `dtoi`/`xtoi` (`big`).
    const BIG: u32 = 0xFF_FFFF;

    /// Leading decimal digits: value and count; `None` without a digit or past [`BIG`].
    fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
        let mut n: u32 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            n = n * 10 + u32::from(s[i] - b'0');
            if n >= BIG {
                return None;
            }
            i += 1;
        }
        if i == 0 { None } else { Some((n, i)) }
    }

    /// Leading hexadecimal digits, any number of them: value and count.
    fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
        let mut n: u32 = 0;
        let mut i = 0;
        while i < s.len() {
            let Some(digit) = (s[i] as char).to_digit(16) else {
                break;
            };
            n = n * 16 + digit;
            if n >= BIG {
                return None;
            }
            i += 1;
        }
        if i == 0 { None } else { Some((n, i)) }
    }

    fn v4_mapped(a: [u8; 4]) -> Ip {
        let mut ip = [0u8; 16];
        ip[10] = 0xff;
        ip[11] = 0xff;
        ip[12..].copy_from_slice(&a);
        ip
    }

    pub(super) fn parse_ipv4(mut s: &[u8]) -> Option<Ip> {
        let mut p = [0u8; 4];
        for (i, octet) in p.iter_mut().enumerate() {
            if s.is_empty() {
                return None;
            }
            if i > 0 {
                s = s.strip_prefix(b".")?;
            }
            let (n, c) = dtoi(s)?;
            *octet = u8::try_from(n).ok()?;
            s = &s[c..];
        }
        if s.is_empty() {
            Some(v4_mapped(p))
        } else {
            None
        }
    }

    pub(super) fn parse_ipv6(mut s: &[u8]) -> Option<Ip> {
        let mut ip = [0u8; 16];
        let mut ellipsis: Option<usize> = None;
        if s.starts_with(b"::") {
            ellipsis = Some(0);
            s = &s[2..];
            if s.is_empty() {
                return Some(ip);
            }
        }
        let mut i = 0;
        while i < 16 {
            let (n, c) = xtoi(s)?;
            if n > 0xFFFF {
                return None;
            }
            if s.get(c) == Some(&b'.') {
                // A trailing IPv4 address.
                if ellipsis.is_none() && i != 12 {
                    return None;
                }
                if i + 4 > 16 {
                    return None;
                }
                let ip4 = parse_ipv4(s)?;
                ip[i..i + 4].copy_from_slice(&ip4[12..]);
                s = &[];
                i += 4;
                break;
            }
            ip[i] = (n >> 8) as u8;
            ip[i + 1] = n as u8;
            i += 2;
            s = &s[c..];
            if s.is_empty() {
                break;
            }
            if s[0] != b':' || s.len() == 1 {
                return None;
            }
            s = &s[1..];
            if s[0] == b':' {
                if ellipsis.is_some() {
                    return None;
                }
                ellipsis = Some(i);
                s = &s[1..];
                if s.is_empty() {
                    break;
                }
            }
        }
        if !s.is_empty() {
            return None;
        }
        if i < 16 {
            let at = ellipsis?;
            let n = 16 - i;
            ip.copy_within(at..i, at + n);
            ip[at..at + n].fill(0);
        } else if ellipsis.is_some() {
            // An ellipsis must stand for at least one group of zeros.
            return None;
        }
        Some(ip)
    }

    /// Go 1.16's `net.ParseIP`: the first `.` or `:` decides the family.
    pub(super) fn parse_ip(s: &str) -> Option<Ip> {
        let s = s.as_bytes();
        match s.iter().find(|&&c| c == b'.' || c == b':')? {
            b'.' => parse_ipv4(s),
            _ => parse_ipv6(s),
        }
    }

    /// Go's `IP.To4() != nil`: an IPv4-mapped address.
    pub(super) fn is_ipv4(ip: &Ip) -> bool {
        ip[..10].iter().all(|&b| b == 0) && ip[10] == 0xff && ip[11] == 0xff
    }

    /// Go 1.16's `net.ParseCIDR` succeeds: an address, `/`, and a prefix length in range.
    pub(super) fn is_cidr(s: &str) -> bool {
        let Some((addr, mask)) = s.split_once('/') else {
            return false;
        };
        let (ip, bits) = match parse_ipv4(addr.as_bytes()) {
            Some(ip) => (Some(ip), 32),
            None => (parse_ipv6(addr.as_bytes()), 128),
        };
        let prefix = dtoi(mask.as_bytes()).filter(|&(_, len)| len == mask.len());
        ip.is_some() && prefix.is_some_and(|(n, _)| n <= bits)
    }
}

/// Problems with `name` as one segment of a URL path, as
/// `k8s.io/apimachinery/pkg/api/validation/path.IsValidPathSegmentName` reports them: the
/// rule for names of kinds whose name is all their identity (RBAC roles, CSRs, ...).
///
/// ```
/// use kubemock_apimachinery::validation::is_valid_path_segment_name;
/// assert!(is_valid_path_segment_name("system:admin").is_empty());
/// assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'".to_string()]);
/// assert_eq!(is_valid_path_segment_name("a/b%"), vec![
///     "may not contain '/'".to_string(), "may not contain '%'".to_string()]);
/// ```
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name == "." || name == ".." {
        errs.push(format!("may not be '{name}'"));
    }
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{illegal}'"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    //! Cases of upstream's `staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go`
    //! (v0.32.0); each test names the Go test it ports. Whole messages were checked against
    //! upstream's functions at v0.32.0.

    use super::*;

    fn good(f: fn(&str) -> Vec<String>, values: &[&str]) {
        for v in values {
            assert!(f(v).is_empty(), "expected no errors for {v:?}: {:?}", f(v));
        }
    }

    fn bad(f: fn(&str) -> Vec<String>, values: &[&str]) {
        for v in values {
            assert!(!f(v).is_empty(), "expected errors for {v:?}");
        }
    }

    fn list_good(f: fn(&Path, &str) -> ErrorList, values: &[&str]) {
        for v in values {
            let errs = f(&Path::new(""), v);
            assert!(errs.is_empty(), "expected no errors for {v:?}: {errs}");
        }
    }

    fn list_bad(f: fn(&Path, &str) -> ErrorList, values: &[&str]) {
        for v in values {
            assert!(
                !f(&Path::new(""), v).is_empty(),
                "expected errors for {v:?}"
            );
        }
    }

    // TestIsDNS1123Label
    #[test]
    fn dns1123_labels() {
        let a63 = "a".repeat(63);
        let a64 = "a".repeat(64);
        good(
            is_dns1123_label,
            &[
                "a",
                "ab",
                "abc",
                "a1",
                "a-1",
                "a--1--2--b",
                "0",
                "01",
                "012",
                "1a",
                "1-a",
                "1--a--b--2",
                &a63,
            ],
        );
        bad(
            is_dns1123_label,
            &[
                "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
                "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ",
                "a ", " a", "a b", "1 ", " 1", "1 2", &a64,
            ],
        );
    }

    // TestIsDNS1123Subdomain
    #[test]
    fn dns1123_subdomains() {
        let a253 = "a".repeat(253);
        let a254 = "a".repeat(254);
        good(
            is_dns1123_subdomain,
            &[
                "a",
                "ab",
                "abc",
                "a1",
                "a-1",
                "a--1--2--b",
                "0",
                "01",
                "012",
                "1a",
                "1-a",
                "1--a--b--2",
                "a.a",
                "ab.a",
                "abc.a",
                "a1.a",
                "a-1.a",
                "a--1--2--b.a",
                "a.1",
                "ab.1",
                "abc.1",
                "a1.1",
                "a-1.1",
                "a--1--2--b.1",
                "0.a",
                "01.a",
                "012.a",
                "1a.a",
                "1-a.a",
                "1--a--b--2",
                "0.1",
                "01.1",
                "012.1",
                "1a.1",
                "1-a.1",
                "1--a--b--2.1",
                "a.b.c.d.e",
                "aa.bb.cc.dd.ee",
                "1.2.3.4.5",
                "11.22.33.44.55",
                &a253,
            ],
        );
        bad(
            is_dns1123_subdomain,
            &[
                "",
                "A",
                "ABC",
                "aBc",
                "A1",
                "A-1",
                "1-A",
                "-",
                "a-",
                "-a",
                "1-",
                "-1",
                "_",
                "a_",
                "_a",
                "a_b",
                "1_",
                "_1",
                "1_2",
                ".",
                "a.",
                ".a",
                "a..b",
                "1.",
                ".1",
                "1..2",
                " ",
                "a ",
                " a",
                "a b",
                "1 ",
                " 1",
                "1 2",
                "A.a",
                "aB.a",
                "ab.A",
                "A1.a",
                "a1.A",
                "A.1",
                "aB.1",
                "A1.1",
                "1A.1",
                "0.A",
                "01.A",
                "012.A",
                "1A.a",
                "1a.A",
                "A.B.C.D.E",
                "AA.BB.CC.DD.EE",
                "a.B.c.d.e",
                "aa.bB.cc.dd.ee",
                "a@b",
                "a,b",
                "a_b",
                "a;b",
                "a:b",
                "a%b",
                "a?b",
                "a$b",
                &a254,
            ],
        );
    }

    // TestIsDNS1035Label
    #[test]
    fn dns1035_labels() {
        let a63 = "a".repeat(63);
        let a64 = "a".repeat(64);
        good(
            is_dns1035_label,
            &["a", "ab", "abc", "a1", "a-1", "a--1--2--b", &a63],
        );
        bad(
            is_dns1035_label,
            &[
                "0",
                "01",
                "012",
                "1a",
                "1-a",
                "1--a--b--2",
                "",
                "A",
                "ABC",
                "aBc",
                "A1",
                "A-1",
                "1-A",
                "-",
                "a-",
                "-a",
                "1-",
                "-1",
                "_",
                "a_",
                "_a",
                "a_b",
                "1_",
                "_1",
                "1_2",
                ".",
                "a.",
                ".a",
                "a.b",
                "1.",
                ".1",
                "1.2",
                " ",
                "a ",
                " a",
                "a b",
                "1 ",
                " 1",
                "1 2",
                &a64,
            ],
        );
    }

    // TestIsCIdentifier
    #[test]
    fn c_identifiers() {
        good(
            is_c_identifier,
            &[
                "a",
                "ab",
                "abc",
                "a1",
                "_a",
                "a_",
                "a_b",
                "a_1",
                "a__1__2__b",
                "__abc_123",
                "A",
                "AB",
                "AbC",
                "A1",
                "_A",
                "A_",
                "A_B",
                "A_1",
                "A__1__2__B",
                "__123_ABC",
            ],
        );
        bad(
            is_c_identifier,
            &[
                "", "1", "123", "1a", "-", "a-", "-a", "1-", "-1", "1_", "1_2", ".", "a.", ".a",
                "a.b", "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "#a#",
            ],
        );
    }

    // TestIsValidPortNum, TestIsInRange, TestIsValidGroupID, TestIsValidUserID
    #[test]
    fn numeric_ranges() {
        for v in [1, 2, 1000, 16384, 32768, 65535] {
            assert!(is_valid_port_num(v).is_empty(), "{v}");
        }
        for v in [0, -1, 65536, 100000] {
            assert_eq!(
                is_valid_port_num(v),
                vec!["must be between 1 and 65535, inclusive".to_string()],
                "{v}"
            );
        }
        for (v, lo, hi) in [(1, 0, 10), (5, 5, 20), (25, 10, 25)] {
            assert!(is_in_range(v, lo, hi).is_empty());
        }
        for (v, lo, hi) in [(1, 2, 10), (5, -4, 2), (25, 100, 120)] {
            assert!(!is_in_range(v, lo, hi).is_empty());
        }
        for v in [0, 1, 1000, 65535, 2147483647] {
            assert!(
                is_valid_group_id(v).is_empty() && is_valid_user_id(v).is_empty(),
                "{v}"
            );
        }
        for v in [-1, -1003, 2147483648, 4147483647] {
            assert_eq!(
                is_valid_group_id(v),
                vec!["must be between 0 and 2147483647, inclusive".to_string()]
            );
            assert!(!is_valid_user_id(v).is_empty());
        }
    }

    // TestIsValidPortName
    #[test]
    fn port_names() {
        good(
            is_valid_port_name,
            &[
                "telnet",
                "re-mail-ck",
                "pop3",
                "a",
                "a-1",
                "1-a",
                "a-1-b-2-c",
                "1-a-2-b-3",
            ],
        );
        let a16 = "a".repeat(16);
        bad(
            is_valid_port_name,
            &[
                "longerthan15characters",
                "",
                &a16,
                "12345",
                "1-2-3-4",
                "-begin",
                "end-",
                "two--hyphens",
                "whois++",
            ],
        );
    }

    // TestIsQualifiedName
    #[test]
    fn qualified_names() {
        let long_prefix = format!("{}/{}", "a".repeat(253), "b".repeat(63));
        let a63 = "a".repeat(63);
        good(
            is_qualified_name,
            &[
                "simple",
                "now-with-dashes",
                "1-starts-with-num",
                "1234",
                "simple/simple",
                "now-with-dashes/simple",
                "now-with-dashes/now-with-dashes",
                "now.with.dots/simple",
                "now-with.dashes-and.dots/simple",
                "1-num.2-num/3-num",
                "1234/5678",
                "1.2.3.4/5678",
                "Uppercase_Is_OK_123",
                "example.com/Uppercase_Is_OK_123",
                "requests.storage-foo",
                &a63,
                &long_prefix,
            ],
        );
        let a64 = "a".repeat(64);
        let too_long_prefix = format!("{}/abc", "a".repeat(254));
        bad(
            is_qualified_name,
            &[
                "nospecialchars%^=@",
                "cantendwithadash-",
                "-cantstartwithadash-",
                "only/one/slash",
                "Example.com/abc",
                "example_com/abc",
                "example.com/",
                "/simple",
                &a64,
                &too_long_prefix,
            ],
        );
    }

    // TestIsValidLabelValue
    #[test]
    fn label_values() {
        let a63 = "a".repeat(63);
        good(
            is_valid_label_value,
            &[
                "simple",
                "now-with-dashes",
                "1-starts-with-num",
                "end-with-num-1",
                "1234",
                &a63,
                "",
            ],
        );
        let a64 = "a".repeat(64);
        bad(
            is_valid_label_value,
            &[
                "nospecialchars%^=@",
                "Tama-nui-te-rā.is.Māori.sun",
                "\\backslashes\\are\\bad",
                "-starts-with-dash",
                "ends-with-dash-",
                ".starts.with.dot",
                "ends.with.dot.",
                &a64,
            ],
        );
    }

    // TestIsValidIP: (input, family 4/6, or 0 for invalid)
    #[test]
    fn ip_addresses() {
        let cases = [
            ("1.2.3.4", 4),
            ("0.0.0.0", 4),
            ("255.255.255.255", 4),
            ("1234::abcd", 6),
            ("::", 6),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 6),
            // good, though non-canonical
            ("0:0:0:0:0:0:0:0", 6),
            ("0001:002:03:4::", 6),
            ("1234::ABCD", 6),
            // bad values we currently consider good
            ("1.1.1.01", 4),
            ("::ffff:1.1.1.1", 4),
            // bad values
            ("", 0),
            ("aaaaaaa", 0),
            ("myhost.mydomain", 0),
            ("1.2.3.0/24", 0),
            ("1.2.3.400", 0),
            ("-1.0.0.0", 0),
            ("2001:db8::10005", 0),
            ("1.2.3.4:80", 0),
            ("[2001:db8::1]", 0),
            ("[2001:db8::1]:80", 0),
            ("example.com:80", 0),
            ("1234::abcd%eth0", 0),
            ("169.254.0.0%eth0", 0),
        ];
        let path = Path::new("");
        for (input, family) in cases {
            let errs = is_valid_ip(&path, input);
            if family == 0 {
                assert_eq!(errs.len(), 1, "{input}");
                assert!(
                    errs[0].detail.contains("must be a valid IP address"),
                    "{input}"
                );
            } else {
                assert!(errs.is_empty(), "{input}: {errs}");
            }
            assert_eq!(
                is_valid_ipv4_address(&path, input).is_empty(),
                family == 4,
                "{input} as IPv4"
            );
            assert_eq!(
                is_valid_ipv6_address(&path, input).is_empty(),
                family == 6,
                "{input} as IPv6"
            );
        }
    }

    // TestIsValidCIDR
    #[test]
    fn cidrs() {
        let valid = [
            "1.0.0.0/8",
            "0.0.0.0/0",
            "1.1.1.1/32",
            "2001:4860:4860::/48",
            "::/0",
            "::1/128",
            // good, though non-canonical
            "2a00:79e0:2:0::/64",
            "2001:DB8::/64",
            // bad values we currently consider good
            "1.1.01.0/24",
            "::ffff:1.1.1.0/24",
            "::ffff:1.1.1.0/120",
            "1.2.3.4/24",
            "2001:db8::1/64",
            "192.168.0.0/016",
        ];
        let invalid = [
            "",
            "aaaaaaa",
            "1.2.3.4",
            "192.168.0.1/healthz",
            "192.168.0.1/0/99",
            "192.168.0.0/-16",
            "192.168.0.0/+16",
        ];
        list_good(is_valid_cidr, &valid);
        list_bad(is_valid_cidr, &invalid);
        for input in invalid {
            let errs = is_valid_cidr(&Path::new(""), input);
            assert_eq!(errs.len(), 1);
            assert!(
                errs[0].detail.contains("must be a valid CIDR value"),
                "{input}"
            );
        }
    }

    // TestIsHTTPHeaderName
    #[test]
    fn http_header_names() {
        good(
            is_http_header_name,
            &[
                "Accept-Encoding",
                "Host",
                "If-Modified-Since",
                "X-Forwarded-For",
                "a",
                "ab",
                "abc",
                "a1",
                "-a",
                "a-",
                "a-b",
                "a-1",
                "a--1--2--b",
                "--abc-123",
                "A",
                "AB",
                "AbC",
                "A1",
                "-A",
                "A-",
                "A-B",
                "A-1",
                "A--1--2--B",
                "--123-ABC",
            ],
        );
        bad(
            is_http_header_name,
            &[
                "Host:",
                "X-Forwarded-For:",
                "X-@Home",
                "",
                "_",
                "a_",
                "_a",
                "1_",
                "1_2",
                ".",
                "a.",
                ".a",
                "a.b",
                "1.",
                ".1",
                "1.2",
                " ",
                "a ",
                " a",
                "a b",
                "1 ",
                " 1",
                "1 2",
                "#a#",
                "^",
                ",",
                ";",
                "=",
                "<",
                "?",
                "@",
                "{",
            ],
        );
    }

    // TestIsValidPercent
    #[test]
    fn percents() {
        good(
            is_valid_percent,
            &["0%", "00000%", "1%", "01%", "99%", "100%", "101%"],
        );
        bad(
            is_valid_percent,
            &[
                "", "0", "100", "0.0%", "99.9%", "hundred", " 1%", "1% ", "-0%", "-1%", "+1%",
            ],
        );
    }

    // TestIsConfigMapKey
    #[test]
    fn config_map_keys() {
        good(
            is_config_map_key,
            &[
                "a",
                "good",
                "good-good",
                "still.good",
                "this.is.also.good",
                ".so.is.this",
                "THIS_IS_GOOD",
                "so_is_this_17",
            ],
        );
        bad(is_config_map_key, &[".", "..", "..bad", "b*d", "bad!&bad"]);
    }

    // TestIsWildcardDNS1123Subdomain
    #[test]
    fn wildcard_subdomains() {
        good(
            is_wildcard_dns1123_subdomain,
            &["*.example.com", "*.bar.com", "*.foo.bar.com"],
        );
        bad(
            is_wildcard_dns1123_subdomain,
            &["*.*.bar.com", "*.foo.*.com", "*bar.com", "f*.bar.com", "*"],
        );
    }

    // TestIsFullyQualifiedDomainName
    #[test]
    fn fully_qualified_domain_names() {
        let long_label = format!("{}.k8s.io", "a".repeat(63));
        let long = format!(
            "{}.{}.{}.{}.k8s.io",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(54)
        );
        list_good(
            is_fully_qualified_domain_name,
            &[
                "a.com",
                "k8s.io",
                "dev.k8s.io",
                "dev.k8s.io.",
                "foo.example.com",
                "this.is.a.really.long.fqdn",
                "bbc.co.uk",
                "10.0.0.1",
                "hyphens-are-good.k8s.io",
                &long_label,
                &long,
            ],
        );
        let too_long_label = format!("{}.k8s.io", "a".repeat(64));
        let too_long = format!(
            "{}.{}.{}.{}.k8s.io",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(55)
        );
        list_bad(
            is_fully_qualified_domain_name,
            &[
                ".",
                "...",
                ".io",
                "com",
                ".com",
                "Dev.k8s.io",
                ".foo.example.com",
                "*.example.com",
                "*.bar.com",
                "*.foo.bar.com",
                "underscores_are_bad.k8s.io",
                "foo@bar.example.com",
                "http://foo.example.com",
                &too_long_label,
                &too_long,
            ],
        );
    }

    // TestIsFullyQualifiedName, with its message checks.
    #[test]
    fn fully_qualified_names() {
        let long = format!("{}.k8s.io", "a".repeat(246));
        list_good(
            is_fully_qualified_name,
            &[
                "dev.k8s.io",
                "foo.example.com",
                "this.is.a.really.long.fqdn",
                "bbc.co.uk",
                "10.0.0.1",
                "hyphens-are-good.k8s.io",
                &long,
            ],
        );
        let too_long = format!("{}.k8s.io", "a".repeat(247));
        list_bad(
            is_fully_qualified_name,
            &[
                "...",
                "dev.k8s.io.",
                ".io",
                "Dev.k8s.io",
                "k8s.io",
                "*.example.com",
                "*.bar.com",
                "*.foo.bar.com",
                "underscores_are_bad.k8s.io",
                "foo@bar.example.com",
                "http://foo.example.com",
                &too_long,
            ],
        );
        let rfc1123 =
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters";
        let messages = [
            (
                "k8s.io",
                "should be a domain with at least three segments separated by dots",
            ),
            ("http://foo.k8s.io", rfc1123),
            ("example@foo.k8s.io", rfc1123),
            ("", "Required value"),
            ("A.B.C", rfc1123),
        ];
        for (name, message) in messages {
            let err = is_fully_qualified_name(&Path::new(""), name).to_string();
            assert!(err.contains(message), "{name:?}: {err}");
        }
    }

    // TestIsDomainPrefixedPath
    #[test]
    fn domain_prefixed_paths() {
        let long_host = format!("{}.k8s.io/a", "a".repeat(240));
        let long_path = format!("k8s.io/{}", "a".repeat(240));
        list_good(
            is_domain_prefixed_path,
            &[
                "a/b",
                "a/b/c/d",
                "a.com/foo",
                "a.b.c.d/foo",
                "k8s.io/foo/bar",
                "k8s.io/FOO/BAR",
                "dev.k8s.io/more/path",
                "this.is.a.really.long.fqdn/even/longer/path/just/because",
                "bbc.co.uk/path/goes/here",
                "10.0.0.1/foo",
                "hyphens-are-good.k8s.io/and-in-paths-too",
                &long_host,
                &long_path,
            ],
        );
        let too_long = format!("{}.k8s.io", "a".repeat(247));
        list_bad(
            is_domain_prefixed_path,
            &[
                ".",
                "...",
                "/b",
                "com",
                ".com",
                "a.b.c.d/foo?a=b",
                "a.b.c.d/foo#a",
                "Dev.k8s.io",
                ".foo.example.com",
                "*.example.com",
                "example.com/foo{}[]@^`",
                "underscores_are_bad.k8s.io",
                "underscores_are_bad.k8s.io/foo",
                "foo@bar.example.com",
                "foo@bar.example.com/foo",
                &too_long,
            ],
        );
    }

    // TestIsRelaxedEnvVarName
    #[test]
    fn relaxed_env_var_names() {
        good(
            is_relaxed_env_var_name,
            &[
                "-", ":", "_", "+a", ">a", "<a", "a.", "a..", "*a", "%a", "?a", "a:a", "a_a",
                "aAz", "~a", "|a", "a0a", "a9", "/a", "a ", "#a", "0a", "0 a", "'a", "(a", "@a",
            ],
        );
        bad(
            is_relaxed_env_var_name,
            &[
                "",
                "=",
                "a=",
                "1=a",
                "a=b",
                "#%=&&",
                "\u{1}abc",
                "\u{82}abc",
                "Ç ç",
                "Ä ä",
                "Ñ ñ",
                "Ø ø",
            ],
        );
    }

    // Whole messages, as upstream's functions return them at v0.32.0.
    #[test]
    fn messages_are_upstreams() {
        let label_regex = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        assert_eq!(is_dns1123_label("A"), vec![label_regex.to_string()]);
        assert_eq!(
            is_dns1123_label(&format!("{}.", "a".repeat(63))),
            vec![
                "must be no more than 63 characters".to_string(),
                label_regex.to_string()
            ]
        );
        assert_eq!(is_dns1123_subdomain("A"), vec![
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()
        ]);
        assert_eq!(is_dns1035_label("1a"), vec![
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()
        ]);
        assert_eq!(is_qualified_name("a/b/c"), vec![
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()
        ]);
        assert_eq!(is_qualified_name("/a")[0], "prefix part must be non-empty");
        assert_eq!(
            is_qualified_name("A/a")[0],
            format!("prefix part {}", is_dns1123_subdomain("A")[0])
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64))[0],
            "name part must be no more than 63 characters"
        );
        assert_eq!(is_valid_label_value("-"), vec![
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()
        ]);
        assert_eq!(is_c_identifier("1"), vec![
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')".to_string()
        ]);
        assert_eq!(
            is_valid_port_name("-A-"),
            vec![
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
                    .to_string(),
                "must contain at least one letter (a-z)".to_string(),
                "must not begin or end with a hyphen".to_string(),
            ]
        );
        assert_eq!(is_env_var_name(".."), vec!["must not be '..'".to_string()]);
        assert_eq!(
            is_env_var_name("1a")[0],
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
        );
        assert_eq!(
            is_relaxed_env_var_name(""),
            vec!["environment variable name must be non-empty".to_string()]
        );
        assert_eq!(
            is_config_map_key("..x"),
            vec!["must not start with '..'".to_string()]
        );
        assert_eq!(
            is_domain_prefixed_path(&Path::new("p"), "a.com/foo?").to_string(),
            r#"p: Invalid value: "foo?": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#
        );
        assert_eq!(
            is_fully_qualified_domain_name(&Path::new("p"), "a.b_c").to_string(),
            r#"p: Invalid value: "a.b_c": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
        );
        assert_eq!(is_valid_percent("x"), vec![
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')".to_string()
        ]);
    }
}
