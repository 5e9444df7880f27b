//! Object metadata rules (docs/api-behaviour.md#object-metadata): the conversion between store revisions and resourceVersion
//! strings (the only place it happens), timestamps (written and read, on the server's
//! clock), uids, name validation, generateName, and the canonical order of metadata fields.

use std::future::Future;

use axum::http::StatusCode;
use kubemock_storage::Revision;
use serde_json::{Map, Value};

use kubemock_apimachinery::clock::Clock;
use kubemock_apimachinery::{time, validation};

pub(crate) use crate::field_error::FieldError;
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
    parse_uint(value)
        .map(Some)
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {value}")))
}

/// `value` read as Go's `strconv.ParseUint(value, 10, 64)` reads it, which is how upstream
/// parses resourceVersions (`staging/src/k8s.io/apiserver/pkg/storage/api_object_versioner.go`):
/// decimal digits only (no sign, no space), within 64 bits.
pub(crate) fn parse_uint(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

tokio::task_local! {
    /// The clock of the server a task works for ([`ServerConfig::clock`]), in scope around
    /// every request (`lib::router`) and every background task of the server (`scoped`).
    /// Timestamps are stamped deep inside pure functions (managed fields, strategies,
    /// admission) that have no server state to read it from; a task-local lets them read the
    /// server's clock without threading it through every signature, and lets several servers
    /// in one process (tests) each keep their own clock.
    ///
    /// [`ServerConfig::clock`]: crate::ServerConfig::clock
    static CLOCK: Clock;
}

/// The clock of the server this task works for; the system clock outside one (unit tests of
/// pure functions).
pub(crate) fn clock() -> Clock {
    CLOCK.try_with(Clock::clone).unwrap_or_default()
}

/// `future` with `clock` as the clock its timestamps come from.
pub(crate) fn scoped<F: Future>(clock: Clock, future: F) -> impl Future<Output = F::Output> {
    CLOCK.scope(clock, future)
}

/// `future`, to be spawned, keeping this task's clock.
pub(crate) fn keep_clock<F: Future>(future: F) -> impl Future<Output = F::Output> {
    scoped(clock(), future)
}

/// Now, as RFC 3339 UTC with seconds precision (`metav1.Time`), on the server's clock.
pub(crate) fn now_rfc3339() -> String {
    rfc3339_after(0)
}

/// `seconds` from now on the server's clock, as RFC 3339 UTC (a graceful deletion's
/// deadline).
pub(crate) fn rfc3339_after(seconds: i64) -> String {
    time::rfc3339(clock().unix_seconds().saturating_add(seconds))
}

/// Now on the server's clock, as nanoseconds since the Unix epoch (what
/// [`time::parse_rfc3339`] returns), for ages.
pub(crate) fn now_unix_nanos() -> i128 {
    clock().unix_nanos()
}

/// A fresh object uid.
pub(crate) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Characters of generated name suffixes: no vowels, no confusable digits (docs/api-behaviour.md#generated-names).
const NAME_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// generateName is cut to this many characters before the suffix.
const GENERATE_NAME_PREFIX_MAX: usize = 58;
/// Length of the random suffix.
const GENERATE_NAME_SUFFIX_LEN: usize = 5;

/// A name generated from `prefix` (docs/api-behaviour.md#generated-names).
pub(crate) fn generate_name(prefix: &str) -> String {
    let mut name: String = prefix.chars().take(GENERATE_NAME_PREFIX_MAX).collect();
    for _ in 0..GENERATE_NAME_SUFFIX_LEN {
        let i = fastrand::usize(..NAME_SUFFIX_ALPHABET.len());
        name.push(char::from(NAME_SUFFIX_ALPHABET[i]));
    }
    name
}

/// Problems with `name` under `rule`, as field-error details (empty when valid). With
/// `prefix`, `name` is a generateName prefix: a trailing `-` is allowed.
pub(crate) fn name_errors(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    // `staging/src/k8s.io/apimachinery/pkg/api/validation/generic.go`: a generateName prefix
    // has its trailing dash masked (`maskTrailingDash`), the rules are upstream's
    // (`kubemock_apimachinery::validation`), each message after the quoted name.
    let masked;
    let checked = match name.strip_suffix('-') {
        Some(rest) if prefix && name.len() > 1 => {
            masked = format!("{rest}a");
            masked.as_str()
        }
        _ => name,
    };
    let messages = match rule {
        NameRule::Subdomain => validation::is_dns1123_subdomain(checked),
        NameRule::Label => validation::is_dns1123_label(checked),
        NameRule::Dns1035 => validation::is_dns1035_label(checked),
        NameRule::PathSegment => validation::is_valid_path_segment_name(checked),
    };
    let quoted = serde_json::to_string(name).unwrap_or_default();
    messages
        .into_iter()
        .map(|message| format!("Invalid value: {quoted}: {message}"))
        .collect()
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

/// Whether `key` comes before `resourceVersion` in canonical metadata.
pub(crate) fn precedes_resource_version(key: &str) -> bool {
    METADATA_ORDER
        .iter()
        .take_while(|k| **k != "resourceVersion")
        .any(|k| *k == key)
}

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
    fn now_is_rfc3339_seconds_utc() {
        assert_eq!(now_rfc3339().len(), 20);
    }

    #[test]
    fn resource_versions_round_trip_and_reject_garbage() {
        assert_eq!(parse_resource_version("42").unwrap(), Some(42));
        assert_eq!(parse_resource_version("").unwrap(), None);
        for garbage in ["+5", " 5", "-1", "5.0", "18446744073709551616"] {
            assert!(parse_resource_version(garbage).is_err(), "{garbage:?}");
        }
        assert_eq!(parse_uint("007"), Some(7));
        assert_eq!(parse_uint("18446744073709551615"), Some(u64::MAX));
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
