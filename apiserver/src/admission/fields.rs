//! Field errors as the real validation writes them (`k8s.io/apimachinery/pkg/util/validation/
//! field`): one builder per error type, and the Go `%#v` renderings of the values they quote
//! (`map[string]string{"app":"web"}`, `v1.LabelSelector{...}`), because clients and people match
//! on those texts. Also the small JSON accessors the per-kind modules share.

use kubemock_apimachinery::field::{self, BadValue, ErrorType};
use serde_json::{Map, Value};

use crate::meta::FieldError;
use crate::object::Object;

/// A field error of `kind` at the printed path `field`, worded by
/// `kubemock_apimachinery::field` (the one place upstream's wording lives).
fn error(kind: ErrorType, field: String, bad_value: BadValue, detail: &str) -> FieldError {
    field::Error {
        kind,
        field,
        bad_value,
        detail: detail.to_owned(),
    }
    .into()
}

/// `Required value` (with `: detail` when there is one).
pub(super) fn required(field: impl Into<String>, detail: &str) -> FieldError {
    error(ErrorType::Required, field.into(), BadValue::Omitted, detail)
}

/// `Invalid value: <value>: detail`; `value` already rendered (see [`go_str`] and friends).
pub(super) fn invalid(field: impl Into<String>, value: String, detail: &str) -> FieldError {
    error(
        ErrorType::Invalid,
        field.into(),
        BadValue::GoSyntax(value),
        detail,
    )
}

/// `Unsupported value: "x": supported values: "a", "b"`.
pub(super) fn not_supported(
    field: impl Into<String>,
    value: &str,
    supported: &[&str],
) -> FieldError {
    let quoted: Vec<String> = supported.iter().map(|s| go_str(s)).collect();
    error(
        ErrorType::NotSupported,
        field.into(),
        BadValue::String(value.to_owned()),
        &format!("supported values: {}", quoted.join(", ")),
    )
}

/// `Duplicate value: <value>`.
pub(super) fn duplicate(field: impl Into<String>, value: String) -> FieldError {
    error(
        ErrorType::Duplicate,
        field.into(),
        BadValue::GoSyntax(value),
        "",
    )
}

/// `Forbidden: detail`.
pub(super) fn forbidden(field: impl Into<String>, detail: &str) -> FieldError {
    error(
        ErrorType::Forbidden,
        field.into(),
        BadValue::Omitted,
        detail,
    )
}

/// `Not found: <value>`.
pub(super) fn not_found(field: impl Into<String>, value: String) -> FieldError {
    error(
        ErrorType::NotFound,
        field.into(),
        BadValue::GoSyntax(value),
        "",
    )
}

/// `Too long: detail`.
pub(super) fn too_long(field: impl Into<String>, detail: &str) -> FieldError {
    error(ErrorType::TooLong, field.into(), BadValue::Omitted, detail)
}

/// The `field is immutable` error of `ValidateImmutableField`, quoting the new value.
pub(super) fn immutable(field: impl Into<String>, value: String) -> FieldError {
    invalid(field, value, "field is immutable")
}

/// A Go string as `%q` prints it.
pub(super) fn go_str(text: &str) -> String {
    kubemock_apimachinery::go::quote(text)
}

/// A JSON value quoted as field errors quote simple values: strings `%q`, numbers and booleans
/// plain, anything else as JSON.
pub(super) fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_str(s),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// A `map[string]string` as `%#v` prints it (keys sorted; `(nil)` when absent).
pub(super) fn go_string_map(map: Option<&Value>) -> String {
    let Some(Value::Object(map)) = map else {
        return "map[string]string(nil)".to_owned();
    };
    let mut pairs: Vec<(&String, String)> = map
        .iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_owned()))
        .collect();
    pairs.sort();
    let inner: Vec<String> = pairs
        .into_iter()
        .map(|(k, v)| format!("{}:{}", go_str(k), go_str(&v)))
        .collect();
    format!("map[string]string{{{}}}", inner.join(", "))
}

/// A `[]string` as `%#v` prints it.
pub(super) fn go_string_slice(values: Option<&Value>) -> String {
    let Some(Value::Array(values)) = values else {
        return "[]string(nil)".to_owned();
    };
    let inner: Vec<String> = values
        .iter()
        .map(|v| go_str(v.as_str().unwrap_or_default()))
        .collect();
    format!("[]string{{{}}}", inner.join(", "))
}

/// A `metav1.LabelSelector` as `%#v` prints it.
pub(super) fn go_label_selector(selector: Option<&Value>) -> String {
    let labels = go_string_map(selector.and_then(|s| s.get("matchLabels")));
    let expressions = match selector
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
    {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(items) => {
            let inner: Vec<String> = items
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        go_str(str_at(e, &["key"])),
                        go_str(str_at(e, &["operator"])),
                        go_string_slice(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", inner.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

/// An `intstr.IntOrString` as `%#v` prints it.
pub(super) fn go_int_or_string(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => {
            format!(
                "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
                go_str(s)
            )
        }
        Some(v) => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            v.as_i64().unwrap_or(0)
        ),
        None => "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}".to_owned(),
    }
}

/// The string at `path` (empty when absent or not a string).
pub(super) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    at(value, path).and_then(Value::as_str).unwrap_or("")
}

/// The value at `path`.
pub(super) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(*key))
}

/// The value at `path` in an object.
pub(super) fn obj_at<'a>(object: &'a Object, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(object.get(*first)?, |v, key| v.get(*key))
}

/// The object at `key` of `map`, created (or replaced, if not an object) empty.
pub(super) fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    crate::object::child_object(map, key)
}

/// The object at `key` of `map`, if there is one.
pub(super) fn child_if<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// Sets `key` to `value` when it is absent or null (defaulting never overrides a value).
pub(super) fn default_to(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get(key) {
        None | Some(Value::Null) => {
            map.insert(key.to_owned(), value);
        }
        Some(Value::String(s)) if s.is_empty() && value.is_string() => {
            map.insert(key.to_owned(), value);
        }
        Some(_) => {}
    }
}

/// The elements of the array at `key` that are objects, mutably.
pub(super) fn each_object_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// The elements of the array at `key` of `value`.
pub(super) fn items<'a>(value: Option<&'a Value>, key: &str) -> &'a [Value] {
    value
        .and_then(|v| v.get(key))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// Label selector matching (`matchLabels` and `matchExpressions`) of `labels`, as
/// `metav1.LabelSelectorAsSelector(...).Matches` decides it, with the shared selector of
/// `kubemock-apimachinery`; `None` for an unparseable selector.
pub(crate) fn selector_matches(selector: &Value, labels: Option<&Value>) -> Option<bool> {
    let selector =
        kubemock_apimachinery::labels::Selector::from_label_selector_json(selector).ok()?;
    let empty = serde_json::Map::new();
    let labels = labels.and_then(Value::as_object).unwrap_or(&empty);
    Some(selector.matches(labels))
}

/// True when the selector selects nothing in particular (no labels, no expressions).
pub(crate) fn selector_is_empty(selector: &Value) -> bool {
    let count = |key: &str| match selector.get(key) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_renderings_match_the_real_messages() {
        let selector = json!({"matchLabels": {"b": "2", "a": "1"}});
        assert_eq!(
            go_label_selector(Some(&selector)),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"a":"1", "b":"2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
        assert_eq!(
            go_label_selector(None),
            "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        assert_eq!(
            go_int_or_string(Some(&json!("25%"))),
            r#"intstr.IntOrString{Type:1, IntVal:0, StrVal:"25%"}"#
        );
        assert_eq!(
            go_int_or_string(Some(&json!(0))),
            r#"intstr.IntOrString{Type:0, IntVal:0, StrVal:""}"#
        );
        assert_eq!(go_string_slice(Some(&json!(["a"]))), r#"[]string{"a"}"#);
    }

    #[test]
    fn errors_read_like_the_real_ones() {
        assert_eq!(required("spec.selector", "").detail, "Required value");
        assert_eq!(
            not_supported("spec.type", "X", &["A", "B"]).detail,
            r#"Unsupported value: "X": supported values: "A", "B""#
        );
        assert_eq!(
            invalid(
                "spec.replicas",
                "-1".into(),
                "must be greater than or equal to 0"
            )
            .detail,
            "Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = json!({"app": "web", "tier": "front"});
        let s = json!({"matchLabels": {"app": "web"},
                       "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]});
        assert_eq!(selector_matches(&s, Some(&labels)), Some(true));
        let s = json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]});
        assert_eq!(selector_matches(&s, Some(&labels)), Some(false));
        assert_eq!(
            selector_matches(&json!({"matchLabels": {"app": "db"}}), Some(&labels)),
            Some(false)
        );
        assert!(selector_is_empty(&json!({"matchLabels": {}})));
    }
}
