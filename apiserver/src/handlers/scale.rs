//! The `scale` subresource (§4.7): an `autoscaling/v1` Scale view of a workload's replicas.

use serde_json::{Map, Value, json};

use crate::object::Object;
use crate::registry::Resource;
use crate::selector::label_selector_string;

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
    let mut scale = Map::new();
    scale.insert("kind".to_owned(), json!("Scale"));
    scale.insert("apiVersion".to_owned(), json!("autoscaling/v1"));
    scale.insert("metadata".to_owned(), Value::Object(scale_meta));
    scale.insert("spec".to_owned(), json!({ "replicas": spec_replicas }));
    scale.insert("status".to_owned(), Value::Object(status));
    scale
}
