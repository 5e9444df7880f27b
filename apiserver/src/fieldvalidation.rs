//! Server-side field validation (§4.9): fields a built-in kind does not have are dropped, as the
//! real server drops what its Go types cannot hold, and reported as `fieldValidation` asks —
//! silently (`Ignore`), as `Warning` headers (`Warn`, the default), or as a 400 (`Strict`,
//! what kubectl sends once OpenAPI tells it the server validates). The schemas are the ones the
//! OpenAPI documents serve (`openapi::schemas`).

use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::Value;

use crate::object::Object;
use crate::openapi::schemas::Schemas;
use crate::query::Query;
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult};

/// How unknown fields are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, each reported in a `Warning` header.
    Warn,
    /// Refused with a 400.
    Strict,
}

impl FieldValidation {
    /// `?fieldValidation=`; `Warn` when absent, as the real server defaults.
    pub(crate) fn from_query(query: &Query) -> ApiResult<FieldValidation> {
        match query.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\" or \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// Drops the fields of `object` that `resource`'s schema does not know, and reports them as
/// `mode` says: the warnings to send (for `Warn`), or the real 400 (for `Strict`). Custom
/// resources are pruned by their definition's structural schema (§11.3).
pub(crate) fn prune_unknown_fields(
    schemas: &Schemas,
    resource: &Resource,
    mode: FieldValidation,
    object: &mut Object,
) -> ApiResult<Vec<String>> {
    let mut unknown = Vec::new();
    if let Some(custom) = &resource.custom {
        if let Some(schema) = &custom.schema {
            crate::crd::schema::prune(schema, object, &mut unknown);
        }
    } else if let Some(schema) = schemas
        .kind(&resource.group, &resource.version, &resource.kind)
        .and_then(|name| schemas.component(name))
    {
        let mut path = String::new();
        prune_object(schemas, schema, object, &mut path, &mut unknown);
    }
    let messages: Vec<String> = unknown
        .iter()
        .map(|field| format!("unknown field \"{field}\""))
        .collect();
    match mode {
        _ if messages.is_empty() => Ok(Vec::new()),
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(messages),
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            messages.join(", "),
            kind = resource.kind,
            version = resource.version,
        ))),
    }
}

/// Adds one `Warning: 299 - "..."` header per message, as the real server sends them.
pub(crate) fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

/// Walks `value` against `schema`, removing and recording unknown fields (paths like
/// `spec.containers[0].foo`, the real server's notation).
fn prune(
    schemas: &Schemas,
    schema: &Value,
    value: &mut Value,
    path: &mut String,
    unknown: &mut Vec<String>,
) {
    let schema = schemas.resolve(schema);
    if schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return;
    }
    match value {
        Value::Object(map) => prune_object(schemas, schema, map, path, unknown),
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items") else {
                return;
            };
            for (index, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                prune(schemas, item_schema, item, path, unknown);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn prune_object(
    schemas: &Schemas,
    schema: &Value,
    map: &mut Object,
    path: &mut String,
    unknown: &mut Vec<String>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    if properties.is_none() && additional.is_none() {
        // A free-form object (RawExtension, JSON): anything goes.
        return;
    }
    let mut unknown_keys = Vec::new();
    for (key, child) in map.iter_mut() {
        let child_schema = properties
            .and_then(|p| p.get(key))
            .or_else(|| additional.filter(|a| a.is_object()));
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        match child_schema {
            Some(child_schema) => prune(schemas, child_schema, child, path, unknown),
            None if additional.and_then(Value::as_bool) == Some(true) => {}
            None => {
                unknown.push(path.clone());
                unknown_keys.push(key.clone());
            }
        }
        path.truncate(len);
    }
    for key in unknown_keys {
        map.shift_remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;
    use std::sync::LazyLock;

    static SCHEMAS: LazyLock<Schemas> = LazyLock::new(Schemas::builtin);

    fn check(
        group: &str,
        plural: &str,
        mode: FieldValidation,
        value: Value,
    ) -> (ApiResult<Vec<String>>, Value) {
        let registry = Registry::builtin();
        let resource = registry.lookup(group, "v1", plural).expect("a resource");
        let Value::Object(mut object) = value else {
            panic!("an object")
        };
        let result = prune_unknown_fields(&SCHEMAS, &resource, mode, &mut object);
        (result, Value::Object(object))
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "b"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                "template": {
                    "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
                    "spec": {
                        "containers": [{
                            "name": "web", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": 1}},
                            "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}}
                        }],
                        "nodeSelector": {"disk": "ssd"},
                        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
                    }
                }
            },
            "status": {"replicas": 0}
        })
    }

    #[test]
    fn a_realistic_deployment_has_no_unknown_fields() {
        let (result, after) = check("apps", "deployments", FieldValidation::Strict, deployment());
        assert_eq!(result.expect("valid"), Vec::<String>::new());
        assert_eq!(after, deployment());
    }

    #[test]
    fn unknown_fields_are_reported_with_their_paths_in_input_order_and_dropped() {
        let mut value = deployment();
        value["spec"]["foo"] = json!(1);
        value["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
        value["metadata"]["bogus"] = json!("x");
        let (result, after) = check("apps", "deployments", FieldValidation::Warn, value.clone());
        assert_eq!(
            result.expect("warnings"),
            [
                "unknown field \"metadata.bogus\"",
                "unknown field \"spec.template.spec.containers[0].imagePullPolicyy\"",
                "unknown field \"spec.foo\"",
            ]
        );
        assert_eq!(after, deployment());
        let (result, _) = check(
            "apps",
            "deployments",
            FieldValidation::Strict,
            value.clone(),
        );
        let err = result.expect_err("strict");
        assert_eq!(err.code.as_u16(), 400);
        assert_eq!(
            err.message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
             unknown field \"metadata.bogus\", \
             unknown field \"spec.template.spec.containers[0].imagePullPolicyy\", \
             unknown field \"spec.foo\""
        );
        let (result, after) = check("apps", "deployments", FieldValidation::Ignore, value);
        assert!(result.expect("ignored").is_empty());
        assert_eq!(after, deployment());
    }

    #[test]
    fn maps_and_free_form_fields_accept_any_key() {
        let value = json!({
            "metadata": {"name": "c"},
            "data": {"any.key": "v", "other": "w"},
            "binaryData": {"b": "AAEC"},
        });
        let (result, _) = check("", "configmaps", FieldValidation::Strict, value);
        assert!(result.expect("valid").is_empty());
        // A CRD's schema is free-form JSON below openAPIV3Schema.
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                     "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": true,
                                       "properties": {"spec": {"type": "object"}}}}}]}
        });
        let registry = Registry::builtin();
        let resource = registry
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .expect("crds");
        let Value::Object(mut object) = crd else {
            panic!("an object")
        };
        let result =
            prune_unknown_fields(&SCHEMAS, &resource, FieldValidation::Strict, &mut object);
        assert!(result.expect("valid").is_empty());
    }

    #[test]
    fn warnings_become_headers() {
        let response = with_warnings(
            Response::new(axum::body::Body::empty()),
            &["unknown field \"spec.foo\"".to_owned()],
        );
        assert_eq!(
            response.headers().get("warning").expect("a header"),
            "299 - \"unknown field \\\"spec.foo\\\"\""
        );
    }
}
