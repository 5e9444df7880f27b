//! JSON limits and names shared by every decoder and patch engine: how deep a stored object
//! may nest (each of them refuses a deeper one with the same words, before doing any other
//! work on it) and how Go's decoder names a JSON value's kind in its errors. The field
//! validator, the JSON patch engine and the protobuf codec all check the one limit here, so an
//! object one of them accepts, the others can read back.

use serde_json::{Map, Value};

/// How deep (objects and arrays inside each other) a stored object may be. Upstream's decoders
/// stop at 10,000 (`sigs.k8s.io/json`'s scanner, `k8s.io/apimachinery/pkg/util/json`), but
/// serde_json, which kubemock's own client, kube-rs and most Rust programs decode with, stops
/// at 127, and a stored object is also sent inside a list, a watch event or a Table row: 100
/// leaves room for those envelopes, so everything the server stores, every Rust client reads.
/// A deeper object is refused with upstream's wording, before any other work is done on it.
pub const MAX_DEPTH: usize = 100;

/// The message of a too-deep object, in `k8s.io/apimachinery/pkg/util/json`'s words.
pub fn too_deep_message() -> String {
    format!("exceeded max depth of {MAX_DEPTH}")
}

/// Whether `value` nests objects and arrays more than [`MAX_DEPTH`] deep. Stops at the limit,
/// so it never recurses further than that.
pub fn too_deep(value: &Value) -> bool {
    deeper_than(value, MAX_DEPTH)
}

/// Whether `object`, a JSON object, nests more than [`MAX_DEPTH`] deep (itself included).
pub fn object_too_deep(object: &Map<String, Value>) -> bool {
    object.values().any(|v| deeper_than(v, MAX_DEPTH - 1))
}

/// Whether `value` has more than `levels` levels of objects and arrays.
pub fn deeper_than(value: &Value, levels: usize) -> bool {
    match value {
        Value::Object(map) => levels == 0 || map.values().any(|v| deeper_than(v, levels - 1)),
        Value::Array(items) => levels == 0 || items.iter().any(|v| deeper_than(v, levels - 1)),
        _ => false,
    }
}

/// The JSON kind of `value` as Go's decoder names it in errors.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Null => "null",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `levels` arrays inside each other around `1`.
    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn depth_counts_objects_and_arrays_up_to_the_limit() {
        assert!(!deeper_than(&json!(1), 0));
        assert!(deeper_than(&json!([]), 0));
        assert!(!deeper_than(&nested(3), 3));
        assert!(deeper_than(&nested(4), 3));
        assert!(!too_deep(&nested(MAX_DEPTH)));
        assert!(too_deep(&nested(MAX_DEPTH + 1)));
        let Value::Object(object) = json!({"a": nested(MAX_DEPTH - 1)}) else {
            unreachable!("an object")
        };
        assert!(!object_too_deep(&object));
        let Value::Object(object) = json!({"a": nested(MAX_DEPTH)}) else {
            unreachable!("an object")
        };
        assert!(object_too_deep(&object));
        assert_eq!(too_deep_message(), "exceeded max depth of 100");
    }

    #[test]
    fn kinds_are_named_as_go_names_them() {
        let kinds: Vec<&str> = [
            json!("a"),
            json!(1),
            json!(true),
            json!({}),
            json!([]),
            json!(null),
        ]
        .iter()
        .map(json_kind)
        .collect();
        assert_eq!(
            kinds,
            ["string", "number", "bool", "object", "array", "null"]
        );
    }
}
