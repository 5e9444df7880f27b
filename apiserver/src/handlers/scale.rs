//! The `scale` subresource (docs/api-behaviour.md#scale-subresource): an `autoscaling/v1` Scale view of a workload's replicas.

use serde_json::{Map, Value, json};

use crate::object::Object;
use crate::registry::Resource;
use crate::selector::label_selector_string;
use crate::table::lookup;

/// The Scale of `parent` (an object of `resource`, with its resourceVersion).
pub(crate) fn scale_of(resource: &Resource, parent: &Object) -> Object {
    let metadata = parent.get("metadata").and_then(Value::as_object);
    let mut scale_meta = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = metadata.and_then(|m| m.get(field)) {
            scale_meta.insert(field.to_owned(), value.clone());
        }
    }
    let paths = resource.custom.as_ref().and_then(|c| c.scale.as_ref());
    if let Some(paths) = paths {
        // A custom resource's replicas and selector live where its definition says (docs/api-behaviour.md#scale-subresource).
        let parent = Value::Object(parent.clone());
        let at = |path: &str| lookup(&parent, path).cloned();
        let mut status = Map::new();
        status.insert(
            "replicas".to_owned(),
            at(&paths.status_replicas).unwrap_or(json!(0)),
        );
        if let Some(Value::String(selector)) = paths.label_selector.as_deref().and_then(at) {
            status.insert("selector".to_owned(), Value::String(selector));
        }
        let spec_replicas = at(&paths.spec_replicas).unwrap_or(json!(0));
        return scale_object(scale_meta, spec_replicas, status);
    }
    let spec_replicas = parent
        .get("spec")
        .and_then(|s| s.get("replicas"))
        .cloned()
        .unwrap_or(json!(1));
    let status_replicas = parent
        .get("status")
        .and_then(|s| s.get("replicas"))
        .cloned()
        .unwrap_or(json!(0));
    let selector = match parent.get("spec").and_then(|s| s.get("selector")) {
        // ReplicationControllers have a plain map selector.
        Some(Value::Object(map)) if resource.kind == "ReplicationController" => {
            label_selector_string(&json!({ "matchLabels": map }))
        }
        Some(selector) => label_selector_string(selector),
        None => String::new(),
    };
    let mut status = Map::new();
    status.insert("replicas".to_owned(), status_replicas);
    if !selector.is_empty() {
        status.insert("selector".to_owned(), Value::String(selector));
    }
    scale_object(scale_meta, spec_replicas, status)
}

fn scale_object(
    metadata: Map<String, Value>,
    replicas: Value,
    status: Map<String, Value>,
) -> Object {
    let mut scale = Map::new();
    scale.insert("kind".to_owned(), json!("Scale"));
    scale.insert("apiVersion".to_owned(), json!("autoscaling/v1"));
    scale.insert("metadata".to_owned(), Value::Object(metadata));
    scale.insert("spec".to_owned(), json!({ "replicas": replicas }));
    scale.insert("status".to_owned(), Value::Object(status));
    scale
}

/// Sets the parent's desired replicas: `spec.replicas`, or where a custom resource's
/// definition says.
pub(crate) fn set_replicas(resource: &Resource, parent: &mut Object, replicas: i64) {
    let path = resource
        .custom
        .as_ref()
        .and_then(|c| c.scale.as_ref())
        .map_or(".spec.replicas", |p| p.spec_replicas.as_str());
    let keys: Vec<&str> = path.split('.').filter(|k| !k.is_empty()).collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut current = parent;
    for key in parents {
        current = crate::object::child_object(current, key);
    }
    current.insert((*last).to_owned(), json!(replicas));
}
