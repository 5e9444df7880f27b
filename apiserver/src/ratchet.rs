//! Validation ratcheting of custom objects (the `CRDValidationRatcheting` feature, beta and on
//! by default in Kubernetes 1.30 to 1.32, GA in 1.33): on an update, a schema error or a
//! failed `x-kubernetes-validations` rule in a part of the object the update left unchanged
//! does not refuse the update. Without it, an object stored before its CRD grew a stricter
//! schema could never be updated again, not even to fix it; a real cluster allows it, so a
//! controller test must too.
//!
//! What "unchanged" means is upstream's `CorrelatedObject`
//! (`staging/src/k8s.io/apiserver/pkg/cel/common/equality.go`): a node of the new object is
//! *correlated* with a node of the old one when they are reached the same way: object
//! properties and map values by name, items of an `x-kubernetes-list-type: map` list by their
//! keys (`maplist.go`). Items of other lists are not correlated one by one: such a list only
//! compares as a whole. A correlated node is unchanged when it deep-equals its old value,
//! comparing map lists by key (so a reordered map list is unchanged) and objects property by
//! property, a property without a schema counting as changed, as upstream's does.
//!
//! Who ratchets what, as upstream (`pkg/apiserver/validation/ratcheting.go` and
//! `pkg/apiserver/schema/cel/validation.go` in apiextensions-apiserver): the errors raised at
//! or under a node are dropped when the nearest correlated node, itself or an ancestor, is
//! unchanged. Schema errors are dropped silently; failed rules that do not read `oldSelf` are
//! sent back as warnings instead.

use serde_json::{Map, Value};

/// The schema of the property `name` of an object node: its `properties` entry, else its
/// `additionalProperties` schema.
pub(crate) fn property_schema<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

/// The keys of a `x-kubernetes-list-type: map` list's schema; `None` for any other list.
fn map_keys(list_schema: &Value) -> Option<Vec<&str>> {
    let is_map = list_schema
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str)
        == Some("map");
    let keys: Vec<&str> = list_schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    (is_map && !keys.is_empty()).then_some(keys)
}

/// The value of key `key` of a map-list item: the item's, else the key's schema default
/// (upstream's `makeKeyStrategy`).
fn key_value<'a>(list_schema: &'a Value, item: &'a Value, key: &str) -> Option<&'a Value> {
    item.get(key).or_else(|| {
        list_schema
            .get("items")
            .and_then(|items| items.get("properties"))
            .and_then(|p| p.get(key))
            .and_then(|k| k.get("default"))
    })
}

/// The old item `item` (of a list under `list_schema`) is correlated with: the old item with
/// the same keys in a map list; `None` in any other list, or when no old item has its keys.
pub(crate) fn correlated_item<'a>(
    list_schema: &Value,
    old: Option<&'a Value>,
    item: &Value,
) -> Option<&'a Value> {
    let keys = map_keys(list_schema)?;
    if !item.is_object() {
        return None;
    }
    old?.as_array()?.iter().find(|candidate| {
        candidate.is_object()
            && keys
                .iter()
                .all(|k| key_value(list_schema, candidate, k) == key_value(list_schema, item, k))
    })
}

/// Whether the correlated pair `old`/`new` under `schema` is unchanged (upstream's
/// `CachedDeepEqual`).
pub(crate) fn unchanged(schema: &Value, old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::Array(olds), Value::Array(news)) => {
            if olds.len() != news.len() {
                return false;
            }
            match (map_keys(schema), schema.get("items")) {
                (Some(_), Some(item_schema)) => news.iter().all(|item| {
                    correlated_item(schema, Some(old), item)
                        .is_some_and(|o| unchanged(item_schema, o, item))
                }),
                // Not correlatable item by item: the list is one value.
                _ => olds == news,
            }
        }
        (Value::Object(olds), Value::Object(news)) => unchanged_map(schema, olds, news),
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (o, n) => o == n,
    }
}

/// [`unchanged`] for an object node's maps.
pub(crate) fn unchanged_map(
    schema: &Value,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) -> bool {
    old.len() == new.len()
        && new.iter().all(
            |(name, value)| match (old.get(name), property_schema(schema, name)) {
                (Some(o), Some(s)) => unchanged(s, o, value),
                _ => false,
            },
        )
}

/// The nearest correlated node on the way down a walk: the node's old and new values and its
/// schema. Its errors, and those of the uncorrelated nodes under it, ratchet when it is
/// unchanged.
#[derive(Clone, Copy)]
pub(crate) struct Nearest<'a> {
    pub(crate) old: &'a Value,
    pub(crate) new: &'a Value,
    pub(crate) schema: &'a Value,
}

impl Nearest<'_> {
    /// Whether errors under it ratchet.
    pub(crate) fn unchanged(&self) -> bool {
        unchanged(self.schema, self.old, self.new)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "protocol"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "protocol": {"type": "string", "default": "TCP"},
                    "port": {"type": "integer"}}}},
            "args": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }})
    }

    #[test]
    fn map_lists_compare_by_key_and_other_lists_as_a_whole() {
        let s = schema();
        let old = json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "protocol": "UDP", "port": 2}],
            "args": ["x", "y"], "labels": {"k": "v"}});
        // Reordered map list, defaulted key spelled out: unchanged (upstream's maplist keys
        // fall back to the key's default).
        let reordered = json!({"ports": [{"name": "b", "protocol": "UDP", "port": 2}, {"name": "a", "port": 1}],
            "args": ["x", "y"], "labels": {"k": "v"}});
        assert!(unchanged(&s, &old, &reordered));
        // Reordered atomic list: changed.
        let args = json!({"ports": old["ports"], "args": ["y", "x"], "labels": {"k": "v"}});
        assert!(!unchanged(&s, &old, &args));
        // A changed map value, a new key: changed.
        let labels = json!({"ports": old["ports"], "args": ["x", "y"], "labels": {"k": "w"}});
        assert!(!unchanged(&s, &old, &labels));
        let item = json!({"name": "a", "protocol": "TCP", "port": 9});
        let found = correlated_item(&s["properties"]["ports"], Some(&old["ports"]), &item);
        assert_eq!(found, Some(&json!({"name": "a", "port": 1})));
        assert_eq!(
            correlated_item(&s["properties"]["args"], Some(&old["args"]), &json!("x")),
            None
        );
    }

    #[test]
    fn a_property_without_a_schema_counts_as_changed() {
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let value = json!({"free": 1});
        assert!(!unchanged(&s, &value, &value));
        assert!(unchanged(&s, &json!({}), &json!({})));
    }
}
