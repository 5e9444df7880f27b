//! The walks of server-side apply over JSON values with their [`Types`], after
//! structured-merge-diff's `typed` package: the field set of an applied configuration, the
//! comparison of two versions of an object (added, removed and modified fields), the merge of
//! a configuration into a live object, and the removal of fields.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::fieldpath::{Path, PathElement, Set, path_string};
use super::types::{ListKind, TypeDef, TypeId, Types, key_default};

/// What changed between two versions of an object.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Fields present only in the new version.
    pub added: Set,
    /// Fields present only in the old version.
    pub removed: Set,
    /// Leaves whose value changed.
    pub modified: Set,
}

impl Comparison {
    /// `(added ∪ modified, removed)`: what a writer of the new version takes ownership of, and
    /// what it gives up.
    pub fn into_changed_and_removed(self) -> (Set, Set) {
        let mut changed = self.added;
        changed.absorb(self.modified);
        (changed, self.removed)
    }
}

/// The path element of a list item, or `None` when the item cannot be identified (a keyed
/// list's item without any key field, a set's item that is not a scalar).
fn item_element(kind: &ListKind, item: &Value, index: usize) -> Option<PathElement> {
    match kind {
        ListKind::Atomic => Some(PathElement::Index(index)),
        ListKind::Set => match item {
            Value::Array(_) | Value::Object(_) => None,
            scalar => Some(PathElement::Value(scalar.clone())),
        },
        ListKind::Map(keys) => {
            let object = item.as_object()?;
            let mut fields: Vec<(String, Value)> = keys
                .iter()
                .filter_map(|key| {
                    object
                        .get(key)
                        .filter(|v| !v.is_null())
                        .cloned()
                        .or_else(|| key_default(key))
                        .map(|v| (key.clone(), v))
                })
                .collect();
            if fields.is_empty() {
                return None;
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Some(PathElement::Key(fields))
        }
    }
}

/// The items of a list with their elements, the first of duplicates winning (upstream
/// ignores repeated occurrences); unidentifiable items get their position.
fn index_items<'v>(kind: &ListKind, items: &'v [Value]) -> Vec<(PathElement, &'v Value)> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let element = item_element(kind, item, index).unwrap_or(PathElement::Index(index));
        if seen.insert(element.serialize_key()) {
            out.push((element, item));
        }
    }
    out
}

impl PathElement {
    /// A hashable identity of the element.
    fn serialize_key(&self) -> String {
        format!("{self:?}")
    }
}

/// The shape of a value under a type, after deduction for untyped values.
enum Shape<'t> {
    Leaf,
    Map,
    List(&'t ListKind, TypeId),
}

fn shape<'t>(types: &'t Types, id: TypeId, sample: &[Option<&Value>]) -> Shape<'t> {
    match types.def(id) {
        TypeDef::Scalar => Shape::Leaf,
        TypeDef::Map { atomic: true, .. } => Shape::Leaf,
        TypeDef::Map { .. } => Shape::Map,
        TypeDef::List { elem, kind } => match kind {
            ListKind::Atomic => Shape::Leaf,
            kind => Shape::List(kind, *elem),
        },
        // Deduced: objects are granular maps, everything else a leaf.
        TypeDef::Untyped => {
            if sample.iter().flatten().any(|v| v.is_object())
                && sample
                    .iter()
                    .flatten()
                    .all(|v| v.is_object() || v.is_null())
            {
                Shape::Map
            } else {
                Shape::Leaf
            }
        }
    }
}

/// The field set of `value` (the fields an applied configuration specifies).
pub fn field_set(types: &Types, value: &Value) -> Set {
    let mut set = Set::new();
    walk_field_set(types, types.root, value, &mut Vec::new(), &mut set);
    set
}

fn walk_field_set(types: &Types, id: TypeId, value: &Value, path: &mut Path, set: &mut Set) {
    match shape(types, id, &[Some(value)]) {
        Shape::Leaf => set.insert(path),
        Shape::Map => {
            let Value::Object(map) = value else {
                return;
            };
            for (key, child) in map {
                let child_type = types.child(id, key);
                path.push(PathElement::Field(key.clone()));
                walk_field_set(types, child_type, child, path, set);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !types.declares(id, key) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(kind, elem) => {
            let Value::Array(items) = value else {
                set.insert(path);
                return;
            };
            for (element, item) in index_items(kind, items) {
                path.push(element);
                walk_field_set(types, elem, item, path, set);
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// Checks an applied configuration as upstream's typed conversion of it does (duplicates not
/// allowed, unlike in a live object): each item of a keyed list has every key field (or its
/// default), each item of a set is a scalar, and no two items of a list are the same element.
/// The error names the list and the item in upstream's words.
pub fn check_applied(types: &Types, value: &Value) -> Result<(), String> {
    walk_check(types, types.root, value, &mut Vec::new())
}

fn walk_check(types: &Types, id: TypeId, value: &Value, path: &mut Path) -> Result<(), String> {
    match shape(types, id, &[Some(value)]) {
        Shape::Leaf => Ok(()),
        Shape::Map => {
            if let Value::Object(map) = value {
                for (key, child) in map {
                    path.push(PathElement::Field(key.clone()));
                    walk_check(types, types.child(id, key), child, path)?;
                    path.pop();
                }
            }
            Ok(())
        }
        Shape::List(kind, elem) => {
            let Value::Array(items) = value else {
                return Ok(());
            };
            let mut seen = HashSet::new();
            for (index, item) in items.iter().enumerate() {
                let at =
                    |detail: String| format!("{}: element {index}: {detail}", path_string(path));
                match (kind, item) {
                    (ListKind::Map(_), Value::Object(_)) | (ListKind::Atomic, _) => {}
                    (ListKind::Map(_), _) => {
                        return Err(at(
                            "associative list with keys may not have non-map elements".to_owned(),
                        ));
                    }
                    (ListKind::Set, Value::Array(_) | Value::Object(_)) => {
                        return Err(at("set elements must be scalars".to_owned()));
                    }
                    (ListKind::Set, _) => {}
                }
                if let (ListKind::Map(keys), Value::Object(object)) = (kind, item)
                    && let Some(missing) = keys.iter().find(|key| {
                        object.get(key.as_str()).is_none_or(Value::is_null)
                            && key_default(key).is_none()
                    })
                {
                    return Err(at(format!(
                        "associative list with keys has an element that omits key field \
                         {missing:?} (and doesn't have default value)"
                    )));
                }
                let element = item_element(kind, item, index).unwrap_or(PathElement::Index(index));
                if !seen.insert(element.serialize_key()) {
                    return Err(format!(
                        "{}: duplicate entries for key {element}",
                        path_string(path)
                    ));
                }
                path.push(element);
                walk_check(types, elem, item, path)?;
                path.pop();
            }
            Ok(())
        }
    }
}

/// Compares `old` with `new`.
pub fn compare(types: &Types, old: &Value, new: &Value) -> Comparison {
    let mut comparison = Comparison::default();
    walk_compare(
        types,
        types.root,
        Some(old),
        Some(new),
        None,
        &mut Vec::new(),
        &mut comparison,
    );
    comparison
}

/// Compares two objects as if every map in them had the members of the same map in `zero`
/// they lack (the fields Go marshals even when unset), without copying them. Top-level
/// members named in `skip` are not compared: nothing under them is in the comparison (for
/// what the caller would remove from it anyway, such as a status write's `spec`).
pub fn compare_objects(
    types: &Types,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    zero: &Value,
    skip: &[&str],
) -> Comparison {
    let mut comparison = Comparison::default();
    let maps = Maps {
        old: Some(old),
        new: Some(new),
        zero: zero.as_object(),
    };
    compare_maps(
        types,
        types.root,
        maps,
        skip,
        &mut Vec::new(),
        &mut comparison,
    );
    comparison
}

/// The two sides of a map compared, and the members Go would marshal when unset.
#[derive(Clone, Copy)]
struct Maps<'a> {
    old: Option<&'a Map<String, Value>>,
    new: Option<&'a Map<String, Value>>,
    zero: Option<&'a Map<String, Value>>,
}

/// The members of two maps compared, missing members filled from `zero` on either side.
fn compare_maps(
    types: &Types,
    id: TypeId,
    maps: Maps<'_>,
    skip: &[&str],
    path: &mut Path,
    out: &mut Comparison,
) {
    let Maps {
        old: old_map,
        new: new_map,
        zero: zero_map,
    } = maps;
    let mut keys: Vec<&String> = old_map.into_iter().flat_map(|m| m.keys()).collect();
    for key in new_map.into_iter().flat_map(|m| m.keys()) {
        if old_map.is_none_or(|m| !m.contains_key(key)) {
            keys.push(key);
        }
    }
    if old_map.is_some() || new_map.is_some() {
        for key in zero_map.into_iter().flat_map(|m| m.keys()) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    for key in keys {
        if skip.contains(&key.as_str()) {
            continue;
        }
        let child = types.child(id, key);
        let zero = zero_map.and_then(|m| m.get(key));
        let old_child = old_map.and_then(|m| m.get(key).or(zero));
        let new_child = new_map.and_then(|m| m.get(key).or(zero));
        path.push(PathElement::Field(key.clone()));
        walk_compare(types, child, old_child, new_child, zero, path, out);
        path.pop();
    }
}

fn leaf(path: &Path, old: Option<&Value>, new: Option<&Value>, out: &mut Comparison) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(a), Some(b)) if a != b => out.modified.insert(path),
        _ => {}
    }
}

fn is_empty_container(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(map)) => map.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    }
}

fn walk_compare(
    types: &Types,
    id: TypeId,
    old: Option<&Value>,
    new: Option<&Value>,
    zero: Option<&Value>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let shape = shape(types, id, &[old, new]);
    // Both sides empty (or null): a leaf, which keeps the empty/null distinction.
    let promote = is_empty_container(old) && is_empty_container(new);
    match shape {
        Shape::Leaf => return leaf(path, old, new, out),
        _ if promote => return leaf(path, old, new, out),
        Shape::Map => {
            let (Some(old_map), Some(new_map)) = (as_map(old), as_map(new)) else {
                return leaf(path, old, new, out);
            };
            let maps = Maps {
                old: old_map,
                new: new_map,
                zero: zero.and_then(Value::as_object),
            };
            compare_maps(types, id, maps, &[], path, out);
        }
        Shape::List(kind, elem) => {
            let (Some(old_items), Some(new_items)) = (as_list(old), as_list(new)) else {
                return leaf(path, old, new, out);
            };
            let old_items = index_items(kind, old_items.unwrap_or_default());
            let new_items = index_items(kind, new_items.unwrap_or_default());
            for (element, item) in &old_items {
                let counterpart = new_items.iter().find(|(e, _)| e == element).map(|p| p.1);
                path.push(element.clone());
                walk_compare(types, elem, Some(item), counterpart, None, path, out);
                path.pop();
            }
            for (element, item) in &new_items {
                if old_items.iter().any(|(e, _)| e == element) {
                    continue;
                }
                path.push(element.clone());
                walk_compare(types, elem, None, Some(item), None, path, out);
                path.pop();
            }
        }
    }
    // A container that appears or disappears as a whole is itself added or removed.
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    }
}

/// A map view: `Some(None)` for absent or null, `None` for a non-map.
fn as_map(value: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match value {
        Some(Value::Object(map)) => Some(Some(map)),
        None | Some(Value::Null) => Some(None),
        Some(_) => None,
    }
}

/// A list view: `Some(None)` for absent or null, `None` for a non-list.
fn as_list(value: Option<&Value>) -> Option<Option<&[Value]>> {
    match value {
        Some(Value::Array(items)) => Some(Some(items)),
        None | Some(Value::Null) => Some(None),
        Some(_) => None,
    }
}

/// `live` with `config` merged in (structured-merge-diff's `Merge` with the configuration's
/// values winning): granular maps merge by key, keyed lists and sets by element (in the
/// configuration's order for the elements it has, the live-only ones kept in place), leaves
/// and atomic values are replaced. A `null` in the configuration removes the field.
pub fn merge(types: &Types, live: &Value, config: &Value) -> Value {
    walk_merge(types, types.root, Some(live), Some(config)).unwrap_or(Value::Null)
}

fn walk_merge(
    types: &Types,
    id: TypeId,
    live: Option<&Value>,
    config: Option<&Value>,
) -> Option<Value> {
    let (Some(live), Some(config)) = (live, config) else {
        return match (live, config) {
            // A map or list only the configuration has merges into an empty one, so that
            // its nulls go as they do where the live object has it (and a re-apply of the
            // same configuration changes nothing).
            (None, Some(Value::Object(_))) => {
                walk_merge(types, id, Some(&Value::Object(Map::new())), config)
            }
            (None, Some(Value::Array(_))) => {
                walk_merge(types, id, Some(&Value::Array(Vec::new())), config)
            }
            _ => config.or(live).cloned(),
        };
    };
    match shape(types, id, &[Some(live), Some(config)]) {
        Shape::Leaf => Some(config.clone()),
        Shape::Map => {
            let (Value::Object(live_map), Value::Object(config_map)) = (live, config) else {
                return Some(config.clone());
            };
            let mut out = live_map.clone();
            for (key, value) in config_map {
                if value.is_null() {
                    out.shift_remove(key);
                    continue;
                }
                let child = types.child(id, key);
                if let Some(merged) = walk_merge(types, child, live_map.get(key), Some(value)) {
                    out.insert(key.clone(), merged);
                }
            }
            Some(Value::Object(out))
        }
        Shape::List(kind, elem) => {
            let (Value::Array(live_items), Value::Array(config_items)) = (live, config) else {
                return Some(config.clone());
            };
            Some(Value::Array(merge_lists(
                types,
                kind,
                elem,
                live_items,
                config_items,
            )))
        }
    }
}

/// Upstream's list merge order: walk both lists, merging shared elements in the
/// configuration's order and keeping live-only elements where they were.
fn merge_lists(
    types: &Types,
    kind: &ListKind,
    elem: TypeId,
    live: &[Value],
    config: &[Value],
) -> Vec<Value> {
    let lhs = index_items(kind, live);
    let rhs = index_items(kind, config);
    let in_rhs = |e: &PathElement| rhs.iter().find(|(r, _)| r == e).map(|p| p.1);
    let in_lhs = |e: &PathElement| lhs.iter().find(|(l, _)| l == e).map(|p| p.1);
    let mut shared: std::collections::VecDeque<&PathElement> = rhs
        .iter()
        .map(|(e, _)| e)
        .filter(|e| in_lhs(e).is_some())
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: Vec<&PathElement> = Vec::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut l, mut r) = (0, 0);
    while l < lhs.len() || r < rhs.len() {
        if l < lhs.len() && r < rhs.len() {
            let element = &lhs[l].0;
            if *element == rhs[r].0 {
                merged_rhs.push(element);
                out.extend(walk_merge(types, elem, Some(lhs[l].1), Some(rhs[r].1)));
                l += 1;
                r += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if in_rhs(element).is_some() && next_shared.is_some_and(|n| n != element) {
                l += 1;
                continue;
            }
        }
        if l < lhs.len() {
            let element = &lhs[l].0;
            if in_rhs(element).is_none() {
                out.push(lhs[l].1.clone());
                l += 1;
                continue;
            } else if merged_rhs.contains(&element) {
                l += 1;
                continue;
            }
        }
        if r < rhs.len() {
            let element = &rhs[r].0;
            merged_rhs.push(element);
            out.extend(walk_merge(types, elem, in_lhs(element), Some(rhs[r].1)));
            r += 1;
            if next_shared.is_some_and(|n| n == element) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// Removes every member of `set` from `value` (fields, map entries, list elements).
pub fn remove(types: &Types, value: &mut Value, set: &Set) {
    walk_remove(types, types.root, value, set);
}

fn walk_remove(types: &Types, id: TypeId, value: &mut Value, set: &Set) {
    match shape(types, id, &[Some(value)]) {
        Shape::Leaf => {}
        Shape::Map => {
            let Value::Object(map) = value else {
                return;
            };
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let element = PathElement::Field(key.clone());
                if set.has_member(&element) {
                    map.shift_remove(&key);
                } else if let (Some(below), Some(child)) = (set.child(&element), map.get_mut(&key))
                {
                    walk_remove(types, types.child(id, &key), child, below);
                }
            }
        }
        Shape::List(kind, elem) => {
            let Value::Array(items) = value else {
                return;
            };
            let mut kept = Vec::with_capacity(items.len());
            for (index, mut item) in std::mem::take(items).into_iter().enumerate() {
                let element = item_element(kind, &item, index).unwrap_or(PathElement::Index(index));
                if set.has_member(&element) {
                    continue;
                }
                if let Some(below) = set.child(&element) {
                    walk_remove(types, elem, &mut item, below);
                }
                kept.push(item);
            }
            *items = kept;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::SCHEMA;
    use serde_json::json;

    fn deployment_types() -> std::sync::Arc<Types> {
        Types::for_kind(SCHEMA.as_ref().expect("schema"), "apps/v1", "Deployment")
    }

    #[test]
    fn an_applied_configuration_owns_its_leaves_and_list_elements() {
        let types = deployment_types();
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "nginx",
                    "ports": [{"containerPort": 80}]}]}}}});
        let set = field_set(&types, &config);
        let fields = set.to_fields_v1();
        assert_eq!(
            fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"],
            json!({".": {}, "f:image": {}, "f:name": {},
                   "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}})
        );
        // The selector is atomic; labels are granular without a "." of their own.
        assert_eq!(fields["f:spec"]["f:selector"], json!({}));
        assert_eq!(fields["f:metadata"]["f:labels"], json!({"f:app": {}}));
    }

    #[test]
    fn comparison_marks_containers_that_appear_as_added() {
        let types = deployment_types();
        let old = json!({"metadata": {}, "spec": {"template": {"spec": {"containers": null}}}});
        let new = json!({"metadata": {"labels": {"app": "x"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let comparison = compare(&types, &old, &new);
        let added = comparison.added.to_fields_v1();
        assert_eq!(
            added["f:metadata"]["f:labels"],
            json!({".": {}, "f:app": {}})
        );
        // `containers` was null, not absent: the list itself is not added, its item is.
        assert_eq!(
            added["f:spec"]["f:template"]["f:spec"]["f:containers"],
            json!({"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}})
        );
        let changed = compare(
            &types,
            &new,
            &json!({"metadata": {"labels": {"app": "y"}},
            "spec": {"template": {"spec": {"containers": []}}}}),
        );
        assert_eq!(
            changed.modified.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:app": {}}}})
        );
        assert!(changed.added.is_empty());
        assert!(
            changed
                .removed
                .to_fields_v1()
                .to_string()
                .contains("k:{\\\"name\\\":\\\"c\\\"}")
        );
    }

    #[test]
    fn a_skipped_member_is_left_out_and_nothing_else_changes() {
        let types = deployment_types();
        let old = json!({"metadata": {"labels": {"app": "x"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
            "status": {"replicas": 1}});
        let new = json!({"metadata": {"labels": {"app": "y", "tier": "web"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "d"}]}}},
            "status": {"replicas": 2, "readyReplicas": 2}});
        let zero = json!({"metadata": {}, "spec": {}, "status": {}});
        let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
            panic!("objects");
        };
        let whole = compare_objects(&types, old, new, &zero, &[]);
        let skipped = compare_objects(&types, old, new, &zero, &["spec"]);
        let spec = [PathElement::Field("spec".to_owned())];
        let in_spec = |set: &Set| {
            set.paths()
                .iter()
                .any(|path| path.first() == Some(&spec[0]))
        };
        assert!(in_spec(&whole.modified));
        for (mut all, part) in [
            (whole.added, skipped.added),
            (whole.removed, skipped.removed),
            (whole.modified, skipped.modified),
        ] {
            assert!(!in_spec(&part));
            all.remove_subtree(&spec);
            assert_eq!(all, part);
        }
    }

    #[test]
    fn merge_follows_list_keys_and_replaces_atomic_values() {
        let types = deployment_types();
        let live = json!({"spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}},
            "template": {"spec": {"containers": [
                {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
                {"name": "b", "image": "b:1"}]}}}});
        let config = json!({"spec": {"selector": {"matchLabels": {"a": "1"}},
            "template": {"spec": {"containers": [
                {"name": "c", "image": "c:1"},
                {"name": "a", "image": "a:2"}]}}}});
        let merged = merge(&types, &live, &config);
        assert_eq!(
            merged["spec"]["selector"],
            json!({"matchLabels": {"a": "1"}})
        );
        let containers = &merged["spec"]["template"]["spec"]["containers"];
        let names: Vec<&str> = containers
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["c", "a", "b"]);
        assert_eq!(containers[1]["image"], "a:2");
        assert_eq!(containers[1]["env"][0]["name"], "X");
    }

    #[test]
    fn merge_drops_the_nulls_of_a_map_or_list_the_live_object_lacks() {
        // Found by the `apply` fuzz target: a null under a map the live object did not have
        // was kept (a create), then dropped when the same configuration was applied again.
        let types = deployment_types();
        let config = json!({"metadata": {"labels": {"a": null, "b": "1"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": null, "env": [{"name": "X", "value": null}]}]}}}});
        let expected = json!({"metadata": {"labels": {"b": "1"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "c", "env": [{"name": "X"}]}]}}}});
        let created = merge(&types, &json!({}), &config);
        assert_eq!(created, expected);
        assert_eq!(merge(&types, &created, &config), expected);
        assert_eq!(merge(&types, &json!({"metadata": {}}), &config), expected);
    }

    #[test]
    fn removal_drops_fields_and_keyed_elements() {
        let types = deployment_types();
        let mut value = json!({"metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}}});
        let mut set = Set::new();
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("a".into()),
        ]);
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("template".into()),
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key(vec![("name".into(), json!("b"))]),
        ]);
        remove(&types, &mut value, &set);
        assert_eq!(value["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(
            value["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "x"}])
        );
    }
}
