//! Strategic merge patch (docs/api-behaviour.md#strategic-merge-patch), what `kubectl apply`, `kubectl patch` and the Python
//! client send for built-in kinds: a JSON merge patch, except that lists whose Go field is
//! marked `+patchStrategy=merge` are merged element-wise (by `+patchMergeKey`, or as a set of
//! scalars), with the `$patch`, `$retainKeys`, `$setElementOrder/` and
//! `$deleteFromPrimitiveList/` directives. The markers come from the same 1.32 schemas the
//! protobuf codec walks ([`crate::protobuf::schema`]), so the strategies are data, not code.

use serde_json::{Map, Value};

use crate::protobuf::schema::{Field, FieldType, Message, ProtoSchema};

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// A malformed patch document (400).
    BadRequest(String),
    /// A patch that does not fit the object (422 with the generic message of docs/api-behaviour.md#json-patch).
    Invalid(String),
}

/// What is known of the JSON object being merged.
#[derive(Clone, Copy)]
enum Shape<'s> {
    /// A struct of this message.
    Struct(&'s Message),
    /// A map whose values are of this message (or scalars when `None`).
    Map(Option<&'s Message>),
    /// Nothing: merged like a JSON merge patch.
    Unknown,
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// `original` with the strategic merge patch `patch` applied; `message` is the object's kind.
pub fn apply(
    schema: &ProtoSchema,
    message: Option<&Message>,
    original: Value,
    patch: &Value,
) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::BadRequest(
            "the strategic merge patch must be a JSON object".to_owned(),
        ));
    };
    let mut object = match original {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    let shape = message.map_or(Shape::Unknown, Shape::Struct);
    Merger { schema }.merge_object(&mut object, patch, shape, false)?;
    Ok(Value::Object(object))
}

struct Merger<'s> {
    schema: &'s ProtoSchema,
}

impl<'s> Merger<'s> {
    /// The field a JSON key names in `message`, looking into inlined embedded structs.
    fn field(&self, message: &'s Message, key: &str) -> Option<&'s Field> {
        message
            .fields
            .iter()
            .find(|f| !f.inline && f.json == key)
            .or_else(|| {
                message.fields.iter().filter(|f| f.inline).find_map(|f| {
                    let FieldType::Message(name) = &f.ty else {
                        return None;
                    };
                    self.schema
                        .message(name)
                        .and_then(|inner| self.field(inner, key))
                })
            })
    }

    /// The shape of a field's value (for a list: of its elements).
    fn shape_of(&self, field: Option<&'s Field>) -> Shape<'s> {
        match field.map(|f| &f.ty) {
            Some(FieldType::Message(name)) => self
                .schema
                .message(name)
                .map_or(Shape::Unknown, Shape::Struct),
            Some(FieldType::Map(_, value)) => Shape::Map(match value.as_ref() {
                FieldType::Message(name) => self.schema.message(name),
                _ => None,
            }),
            _ => Shape::Unknown,
        }
    }

    fn merge_object(
        &self,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        shape: Shape<'s>,
        retain_keys: bool,
    ) -> Result<(), PatchError> {
        match patch.get(PATCH) {
            None => {}
            Some(Value::String(directive)) if directive == "merge" => {}
            Some(Value::String(directive)) if directive == "replace" => {
                *original = strip_directives_map(patch);
                return Ok(());
            }
            Some(other) => {
                return Err(PatchError::BadRequest(format!(
                    "unknown patch type: {other} in map"
                )));
            }
        }
        if let Some(keys) = patch.get(RETAIN_KEYS) {
            let Some(keys) = keys
                .as_array()
                .and_then(|k| k.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            else {
                return Err(PatchError::BadRequest(
                    "invalid patch format of retainKeys".to_owned(),
                ));
            };
            if !retain_keys {
                return Err(PatchError::Invalid(
                    "retainKeys directive on a field without the retainKeys strategy".to_owned(),
                ));
            }
            original.retain(|key, _| keys.contains(&key.as_str()));
        }
        let mut orders = Vec::new();
        for (key, value) in patch {
            if key == PATCH || key == RETAIN_KEYS {
                continue;
            }
            if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
                orders.push((field, value));
                continue;
            }
            if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                let Value::Array(remove) = value else {
                    return Err(PatchError::BadRequest(
                        "invalid patch format of primitive list".to_owned(),
                    ));
                };
                if let Some(Value::Array(items)) = original.get_mut(field) {
                    items.retain(|item| !remove.contains(item));
                }
                continue;
            }
            let field = match shape {
                Shape::Struct(message) => self.field(message, key),
                _ => None,
            };
            self.merge_key(original, key, value, shape, field)?;
        }
        for (field, order) in orders {
            let Value::Array(order) = order else {
                return Err(PatchError::BadRequest(format!(
                    "invalid patch format of $setElementOrder/{field}"
                )));
            };
            let merge_key = match shape {
                Shape::Struct(message) => self
                    .field(message, field)
                    .and_then(|f| f.markers.patch_merge_key.clone()),
                _ => None,
            };
            if let Some(Value::Array(items)) = original.get_mut(field) {
                reorder(items, order, merge_key.as_deref());
            }
        }
        Ok(())
    }

    /// Merges `patch[key] = value` into `original`.
    fn merge_key(
        &self,
        original: &mut Map<String, Value>,
        key: &str,
        value: &Value,
        shape: Shape<'s>,
        field: Option<&'s Field>,
    ) -> Result<(), PatchError> {
        match value {
            Value::Null => {
                original.shift_remove(key);
            }
            Value::Object(patch) => {
                if patch.get(PATCH).and_then(Value::as_str) == Some("delete") {
                    original.shift_remove(key);
                    return Ok(());
                }
                let child_shape = match shape {
                    Shape::Map(values) => values.map_or(Shape::Unknown, Shape::Struct),
                    _ => self.shape_of(field),
                };
                let retain = field.is_some_and(|f| f.markers.retains_keys());
                let slot = original
                    .entry(key.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(child) = slot {
                    self.merge_object(child, patch, child_shape, retain)?;
                }
            }
            Value::Array(items) => {
                let merges = field.is_some_and(|f| f.markers.merges());
                match (merges, original.get_mut(key)) {
                    (true, Some(Value::Array(existing))) => {
                        let element_shape = self.shape_of(field);
                        let merged = self.merge_list(
                            std::mem::take(existing),
                            items,
                            field.and_then(|f| f.markers.patch_merge_key.as_deref()),
                            element_shape,
                        )?;
                        *existing = merged;
                    }
                    _ => {
                        let items: Vec<Value> = items
                            .iter()
                            .filter(|item| item.get(PATCH).is_none())
                            .map(strip_directives)
                            .collect();
                        original.insert(key.to_owned(), Value::Array(items));
                    }
                }
            }
            scalar => {
                original.insert(key.to_owned(), scalar.clone());
            }
        }
        Ok(())
    }

    /// A merge list: by `merge_key` for objects, as a set for scalars.
    fn merge_list(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        merge_key: Option<&str>,
        element: Shape<'s>,
    ) -> Result<Vec<Value>, PatchError> {
        let replaces = patch
            .iter()
            .any(|item| item.get(PATCH).and_then(Value::as_str) == Some("replace"));
        if replaces {
            return Ok(patch
                .iter()
                .filter(|item| item.get(PATCH).is_none())
                .map(strip_directives)
                .collect());
        }
        let Some(merge_key) = merge_key else {
            for item in patch {
                if item.is_object() || item.is_array() {
                    return Err(PatchError::Invalid(
                        "lists of lists are not supported".to_owned(),
                    ));
                }
                if !original.contains(item) {
                    original.push(item.clone());
                }
            }
            return Ok(original);
        };
        for item in patch {
            let Value::Object(item) = item else {
                return Err(PatchError::BadRequest(format!(
                    "invalid patch: {item} is not an object of a list merged by {merge_key}"
                )));
            };
            let Some(key_value) = item.get(merge_key) else {
                return Err(PatchError::BadRequest(format!(
                    "map: {} does not contain declared merge key: {merge_key}",
                    Value::Object(item.clone())
                )));
            };
            match item.get(PATCH).and_then(Value::as_str) {
                Some("delete") => {
                    original.retain(|e| e.get(merge_key) != Some(key_value));
                    continue;
                }
                Some("merge") | None => {}
                Some(other) => {
                    return Err(PatchError::BadRequest(format!(
                        "unknown patch type: {other} in list"
                    )));
                }
            }
            match original
                .iter_mut()
                .find(|e| e.get(merge_key) == Some(key_value))
            {
                Some(Value::Object(existing)) => {
                    self.merge_object(existing, item, element, false)?;
                }
                _ => original.push(Value::Object(strip_directives_map(item))),
            }
        }
        Ok(original)
    }
}

/// Orders `items` as `order` lists them (by merge key, or by value for scalars); items the
/// order does not name keep their relative order after the named ones.
fn reorder(items: &mut [Value], order: &[Value], merge_key: Option<&str>) {
    let position = |item: &Value| {
        order
            .iter()
            .position(|o| match merge_key {
                Some(key) => o.get(key).is_some() && o.get(key) == item.get(key),
                None => o == item,
            })
            .unwrap_or(usize::MAX)
    };
    items.sort_by_key(position);
}

/// A value with every directive removed, for content taken over whole.
fn strip_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(strip_directives_map(map)),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

fn strip_directives_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(key, _)| {
            key.as_str() != PATCH
                && key.as_str() != RETAIN_KEYS
                && !key.starts_with(SET_ELEMENT_ORDER)
                && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        })
        .map(|(key, value)| (key.clone(), strip_directives(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::SCHEMA;
    use serde_json::json;

    fn patch(
        api_version: &str,
        kind: &str,
        original: Value,
        patch: Value,
    ) -> Result<Value, PatchError> {
        let schema = SCHEMA.as_ref().expect("schemas");
        apply(schema, schema.kind(api_version, kind), original, &patch)
    }

    fn deployment() -> Value {
        json!({
            "metadata": {"name": "d", "labels": {"a": "1", "c": "3"}, "finalizers": ["x", "y"]},
            "spec": {
                "replicas": 2,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "template": {"spec": {
                    "containers": [
                        {"name": "c", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 80}]},
                        {"name": "side", "image": "busybox"}
                    ],
                    "tolerations": [{"key": "k1"}],
                    "volumes": [{"name": "v", "emptyDir": {}}]
                }}
            }
        })
    }

    #[test]
    fn kubectl_applys_patch_merges_containers_and_env_by_name() {
        // The patch kubectl apply sends for: image changed, env A removed, container side
        // removed, label c removed (docs/api-behaviour.md#strategic-merge-patch).
        let result = patch(
            "apps/v1",
            "Deployment",
            deployment(),
            json!({"metadata": {"labels": {"c": null}},
                   "spec": {"replicas": 3, "template": {"spec": {
                       "$setElementOrder/containers": [{"name": "c"}],
                       "containers": [
                           {"$setElementOrder/env": [{"name": "B"}],
                            "env": [{"name": "B", "value": "3"}, {"$patch": "delete", "name": "A"}],
                            "image": "nginx:2", "name": "c"},
                           {"$patch": "delete", "name": "side"}]}}}}),
        )
        .expect("applies");
        assert_eq!(result["metadata"]["labels"], json!({"a": "1"}));
        assert_eq!(result["spec"]["replicas"], 3);
        let containers = result["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("containers");
        assert_eq!(containers.len(), 1);
        assert_eq!(
            containers[0],
            json!({"name": "c", "image": "nginx:2", "env": [{"name": "B", "value": "3"}],
                   "ports": [{"containerPort": 80}]})
        );
    }

    #[test]
    fn lists_without_a_strategy_are_replaced_and_scalar_sets_unioned() {
        let result = patch(
            "apps/v1",
            "Deployment",
            deployment(),
            json!({"metadata": {"finalizers": ["z", "x"]},
                   "spec": {"template": {"spec": {"tolerations": [{"key": "k2"}],
                                                   "containers": [{"name": "new", "image": "i"}]}}}}),
        )
        .expect("applies");
        assert_eq!(result["metadata"]["finalizers"], json!(["x", "y", "z"]));
        assert_eq!(
            result["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "k2"}])
        );
        let names: Vec<&str> = result["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("containers")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["c", "side", "new"]);
    }

    #[test]
    fn directives_replace_delete_retain_keys_and_delete_from_primitive_list() {
        let result = patch(
            "apps/v1",
            "Deployment",
            deployment(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]},
                   "spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"},
                            "template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "i"}]}}}}),
        )
        .expect("applies");
        assert_eq!(result["metadata"]["finalizers"], json!(["y"]));
        assert_eq!(result["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            result["spec"]["template"]["spec"]["containers"],
            json!([{"name": "only", "image": "i"}])
        );
        let result = patch(
            "apps/v1",
            "Deployment",
            deployment(),
            json!({"spec": {"template": {"spec": {"$patch": "replace", "containers": []}}}}),
        )
        .expect("applies");
        assert_eq!(
            result["spec"]["template"]["spec"],
            json!({"containers": []})
        );
        let result = patch(
            "apps/v1",
            "Deployment",
            deployment(),
            json!({"spec": {"strategy": {"$patch": "delete"}}}),
        )
        .expect("applies");
        assert!(result["spec"].get("strategy").is_none());
    }

    #[test]
    fn services_merge_ports_by_port_and_volumes_are_inlined_types() {
        let service = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
        let result = patch(
            "v1",
            "Service",
            service,
            json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
        )
        .expect("applies");
        assert_eq!(
            result["spec"]["ports"],
            json!([{"port": 80, "targetPort": 9090}, {"port": 443}])
        );
        // Volume's source fields are inlined from VolumeSource; emptyDir is still a struct.
        let result = patch(
            "apps/v1",
            "Deployment",
            deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}]}}}}),
        )
        .expect("applies");
        assert_eq!(
            result["spec"]["template"]["spec"]["volumes"],
            json!([{"name": "v", "emptyDir": {"medium": "Memory"}}])
        );
    }

    #[test]
    fn malformed_directives_are_errors() {
        assert!(matches!(
            patch(
                "apps/v1",
                "Deployment",
                deployment(),
                json!({"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}})
            ),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            patch(
                "apps/v1",
                "Deployment",
                deployment(),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}})
            ),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            patch(
                "apps/v1",
                "Deployment",
                deployment(),
                json!({"spec": {"$patch": "explode"}})
            ),
            Err(PatchError::BadRequest(_))
        ));
        assert!(matches!(
            patch(
                "apps/v1",
                "Deployment",
                deployment(),
                json!(["not", "a", "map"])
            ),
            Err(PatchError::BadRequest(_))
        ));
    }
}
