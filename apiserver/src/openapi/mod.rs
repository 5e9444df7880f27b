//! OpenAPI documents (docs/api-behaviour.md#openapi): `/openapi/v3` (a root listing one document per group-version),
//! `/openapi/v3/{api/v1|apis/g/v}` and `/openapi/v2`, built from the resource registry and the
//! generated schemas. kubectl reads them before `create -f` and `apply -f`: a PATCH operation
//! that carries the kind's `x-kubernetes-group-version-kind` and a `fieldValidation` parameter
//! tells it the server validates fields itself (`fieldvalidation`), and `kubectl explain`
//! reads the component schemas.
//!
//! PATCH operations have no `requestBody`: with one, client-side apply would compute strategic
//! merge patches from these schemas, which lack the patch-strategy extensions; without one it
//! uses its compiled-in types, as against a real cluster.

mod v2proto;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::registry::{Registry, Resource};
pub(crate) use kubemock_apimachinery::openapi::SCHEMAS;
use kubemock_apimachinery::openapi::{COMPONENTS_PREFIX, Schemas};
use kubemock_apimachinery::version::git_version;

/// The served documents, serialised once.
pub(crate) struct Documents {
    v3_root: Bytes,
    v3: HashMap<String, Bytes>,
    v2: Bytes,
    /// `/openapi/v2` as gnostic's protobuf (`v2proto`), built on first use.
    v2_protobuf: std::sync::OnceLock<Bytes>,
}

impl Documents {
    /// The documents for the resources of `registry`.
    pub(crate) fn build(registry: &Registry) -> Documents {
        let schemas = &*SCHEMAS;
        let mut root_paths = Map::new();
        let mut v3 = HashMap::new();
        let mut v2_paths = Map::new();
        let mut v2_roots = Vec::new();
        let mut v2_custom = Map::new();
        for group in registry.groups() {
            for version in &group.versions {
                let resources = registry.resources_in(&group.name, version);
                let operations: Vec<PathItem> = resources
                    .iter()
                    .flat_map(|resource| path_items(schemas, resource))
                    .collect();
                let roots: Vec<&str> = operations
                    .iter()
                    .flat_map(|item| item.operations.iter())
                    .filter_map(|op| op.schema.as_deref())
                    .collect();
                // Custom resources bring their schema; they refer to ObjectMeta.
                let customs: Vec<&Arc<Resource>> =
                    resources.iter().filter(|r| own_schema(r)).collect();
                let meta_root = (!customs.is_empty()).then_some(OBJECT_META);
                let mut components = schemas.closure(roots.iter().copied().chain(meta_root));
                for resource in customs {
                    let (name, schema) = custom_component(resource);
                    v2_custom.insert(name.clone(), schema.clone());
                    components.insert(name, schema);
                }
                v2_roots.extend(meta_root.map(str::to_owned));
                v2_roots.extend(roots.iter().map(|r| (*r).to_owned()));
                let mut paths = Map::new();
                for item in &operations {
                    paths.insert(item.path.clone(), item.v3());
                    v2_paths.insert(item.path.clone(), item.v2());
                }
                let document = json!({
                    "openapi": "3.0.0",
                    "info": {"title": "Kubernetes", "version": git_version()},
                    "paths": paths,
                    "components": {"schemas": components},
                });
                let bytes = Bytes::from(serde_json::to_vec(&document).unwrap_or_default());
                let key = if group.name.is_empty() {
                    format!("api/{version}")
                } else {
                    format!("apis/{}/{version}", group.name)
                };
                root_paths.insert(
                    key.clone(),
                    json!({ "serverRelativeURL": format!("/openapi/v3/{key}?hash={}", hash(&bytes)) }),
                );
                v3.insert(key, bytes);
            }
        }
        let mut definitions = schemas.closure(v2_roots.iter().map(String::as_str));
        definitions.extend(v2_custom);
        let v2 = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": git_version()},
            "paths": v2_paths,
            "definitions": definitions,
        });
        let v2 = serde_json::to_string(&v2)
            .unwrap_or_default()
            .replace(COMPONENTS_PREFIX, "#/definitions/");
        Documents {
            v2_protobuf: std::sync::OnceLock::new(),
            v3_root: Bytes::from(
                serde_json::to_vec(&json!({ "paths": root_paths })).unwrap_or_default(),
            ),
            v3,
            v2: Bytes::from(v2),
        }
    }

    /// `GET /openapi/v3`.
    pub(crate) fn v3_root(&self) -> Bytes {
        self.v3_root.clone()
    }

    /// `GET /openapi/v3/{path}` (`api/v1`, `apis/apps/v1`).
    pub(crate) fn v3(&self, path: &str) -> Option<Bytes> {
        self.v3.get(path).cloned()
    }

    /// `GET /openapi/v2` (JSON).
    pub(crate) fn v2(&self) -> Bytes {
        self.v2.clone()
    }

    /// `GET /openapi/v2` in protobuf (gnostic's `openapi.v2.Document`).
    pub(crate) fn v2_protobuf(&self) -> Bytes {
        self.v2_protobuf
            .get_or_init(|| {
                let document: Value = serde_json::from_slice(&self.v2).unwrap_or(Value::Null);
                Bytes::from(v2proto::encode(&document))
            })
            .clone()
    }
}

/// FNV-1a: a stable content hash for the `?hash=` of each document's URL (kubectl caches by
/// URL, so the hash must change whenever the document does).
fn hash(bytes: &[u8]) -> String {
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        state ^= u64::from(*byte);
        state = state.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{state:016X}")
}

/// One URL with its operations.
struct PathItem {
    path: String,
    namespaced: bool,
    named: bool,
    operations: Vec<Operation>,
}

/// One operation of a path.
struct Operation {
    /// HTTP method, lower case.
    method: &'static str,
    /// `x-kubernetes-action`.
    action: &'static str,
    operation_id: String,
    /// group, version, kind.
    gvk: (String, String, String),
    /// The component schema of the body and response, when it has one.
    schema: Option<String>,
    /// Query parameters.
    query: &'static [&'static str],
    /// Whether it takes a body (POST and PUT).
    body: bool,
}

const WRITE_PARAMETERS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMETERS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMETERS: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const LIST_PARAMETERS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];

/// `RbacAuthorizationV1` for `rbac.authorization.k8s.io/v1`, `CoreV1` for core, as the real
/// operation ids spell group-versions.
fn group_version_id(group: &str, version: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    let mut id: String = group
        .trim_end_matches(".k8s.io")
        .split('.')
        .map(capitalise)
        .collect();
    id.push_str(&capitalise(version));
    id
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The paths of one resource: collection, item, all-namespaces list and subresources.
/// The ObjectMeta component every custom resource schema refers to.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Whether `resource`'s schema is its own rather than a built-in kind's: custom resources
/// (their definition's), kubemock's `testing.kubemock.dev` kinds (`registry::testing`),
/// kwok's Stage (`registry::kwok`) and `metrics.k8s.io`'s (`registry::resource_metrics`).
fn own_schema(resource: &Resource) -> bool {
    resource.is_custom()
        || resource.group == crate::registry::testing::GROUP
        || resource.group == kubemock_apimachinery::stage::GROUP
        || resource.group == crate::registry::resource_metrics::GROUP
}

/// The component name of a custom resource's kind: the group reversed (`com.example`), the
/// version, the kind, as the real server names them.
fn custom_component_name(resource: &Resource) -> String {
    let reversed: Vec<&str> = resource.group.split('.').rev().collect();
    format!(
        "{}.{}.{}",
        reversed.join("."),
        resource.version,
        resource.kind
    )
}

/// A custom resource's component: its definition's schema with `apiVersion`, `kind` and
/// `metadata` described, and its group-version-kind.
fn custom_component(resource: &Resource) -> (String, Value) {
    let mut schema = resource
        .custom
        .as_ref()
        .and_then(|c| c.schema.clone())
        .or_else(|| crate::registry::own_schema(resource))
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if let Value::Object(schema) = &mut schema {
        let properties = schema.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(properties) = properties {
            properties.insert("apiVersion".to_owned(), json!({"type": "string",
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
            properties.insert("kind".to_owned(), json!({"type": "string",
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
            properties.insert("metadata".to_owned(), json!({
                "allOf": [{"$ref": format!("{COMPONENTS_PREFIX}{OBJECT_META}")}],
                "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}));
        }
        schema.insert(
            "x-kubernetes-group-version-kind".to_owned(),
            json!([{"group": resource.group, "version": resource.version, "kind": resource.kind}]),
        );
    }
    (custom_component_name(resource), schema)
}

fn path_items(schemas: &Schemas, resource: &Resource) -> Vec<PathItem> {
    let prefix = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    let scope = if resource.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let collection = format!("{prefix}{scope}/{}", resource.plural);
    let item = format!("{collection}/{{name}}");
    let id = group_version_id(&resource.group, &resource.version);
    let namespaced = if resource.namespaced {
        "Namespaced"
    } else {
        ""
    };
    let kind = &resource.kind;
    let gvk = (
        resource.group.clone(),
        resource.version.clone(),
        kind.clone(),
    );
    let schema = if own_schema(resource) {
        Some(custom_component_name(resource))
    } else {
        schemas
            .kind(&resource.group, &resource.version, kind)
            .map(str::to_owned)
    };
    let op = |method, action, verb: &str, suffix: &str, query, body| Operation {
        method,
        action,
        operation_id: format!("{verb}{id}{namespaced}{kind}{suffix}"),
        gvk: gvk.clone(),
        schema: schema.clone(),
        query,
        body,
    };
    let has = |verb: &str| resource.has_verb(verb);
    let mut items = Vec::new();
    let mut collection_ops = Vec::new();
    if has("list") {
        collection_ops.push(op("get", "list", "list", "", LIST_PARAMETERS, false));
    }
    if has("create") {
        collection_ops.push(op("post", "post", "create", "", WRITE_PARAMETERS, true));
    }
    if has("deletecollection") {
        collection_ops.push(op(
            "delete",
            "deletecollection",
            "deleteCollection",
            "",
            DELETE_PARAMETERS,
            false,
        ));
    }
    items.push(PathItem {
        path: collection,
        namespaced: resource.namespaced,
        named: false,
        operations: collection_ops,
    });
    let mut item_ops = Vec::new();
    if has("get") {
        item_ops.push(op("get", "get", "read", "", &[], false));
    }
    if has("update") {
        item_ops.push(op("put", "put", "replace", "", WRITE_PARAMETERS, true));
    }
    if has("patch") {
        item_ops.push(op("patch", "patch", "patch", "", PATCH_PARAMETERS, false));
    }
    if has("delete") {
        item_ops.push(op(
            "delete",
            "delete",
            "delete",
            "",
            DELETE_PARAMETERS,
            false,
        ));
    }
    items.push(PathItem {
        path: item.clone(),
        namespaced: resource.namespaced,
        named: true,
        operations: item_ops,
    });
    if resource.namespaced && has("list") {
        items.push(PathItem {
            path: format!("{prefix}/{}", resource.plural),
            namespaced: false,
            named: false,
            operations: vec![Operation {
                operation_id: format!("list{id}{kind}ForAllNamespaces"),
                ..op("get", "list", "list", "", LIST_PARAMETERS, false)
            }],
        });
    }
    for sub in &resource.subresources {
        let (sub_gvk, sub_schema) = match &sub.response {
            Some(gvk) => (
                (gvk.group.clone(), gvk.version.clone(), gvk.kind.clone()),
                schemas
                    .kind(&gvk.group, &gvk.version, &gvk.kind)
                    .map(str::to_owned),
            ),
            None => (gvk.clone(), schema.clone()),
        };
        let suffix = capitalise(&sub.name);
        let sub_op = |method, action, verb: &str, query, body| Operation {
            gvk: sub_gvk.clone(),
            schema: sub_schema.clone(),
            ..op(method, action, verb, &suffix, query, body)
        };
        let mut ops = Vec::new();
        for verb in &sub.verbs {
            match verb.as_str() {
                "get" => ops.push(sub_op("get", "get", "read", &[], false)),
                "update" => ops.push(sub_op("put", "put", "replace", WRITE_PARAMETERS, true)),
                "patch" => ops.push(sub_op("patch", "patch", "patch", PATCH_PARAMETERS, false)),
                "create" => ops.push(sub_op("post", "post", "create", WRITE_PARAMETERS, true)),
                _ => {}
            }
        }
        items.push(PathItem {
            path: format!("{item}/{}", sub.name),
            namespaced: resource.namespaced,
            named: true,
            operations: ops,
        });
    }
    items.retain(|item| !item.operations.is_empty());
    items
}

/// Which OpenAPI document a path item is rendered for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    /// Swagger 2.0 (`/openapi/v2`).
    V2,
    /// OpenAPI 3.0 (`/openapi/v3/...`).
    V3,
}

impl Version {
    /// A string/boolean/integer parameter: v3 nests its type in a `schema`.
    fn parameter(self, name: &str, place: &str, ty: &str) -> Value {
        match self {
            Version::V3 => {
                json!({"name": name, "in": place, "schema": {"type": ty}, "uniqueItems": true})
            }
            Version::V2 => json!({"name": name, "in": place, "type": ty, "uniqueItems": true}),
        }
    }
}

impl PathItem {
    fn v3(&self) -> Value {
        self.render(Version::V3)
    }

    fn v2(&self) -> Value {
        self.render(Version::V2)
    }

    /// The path item: its operations, then the path and `pretty` parameters.
    fn render(&self, version: Version) -> Value {
        let mut item = Map::new();
        for op in &self.operations {
            let mut operation = op.common();
            let mut parameters: Vec<Value> = op
                .query
                .iter()
                .map(|name| version.parameter(name, "query", query_type(name)))
                .collect();
            let reference = op
                .schema
                .as_ref()
                .map(|name| json!({"$ref": format!("{COMPONENTS_PREFIX}{name}")}));
            if op.body
                && let Some(reference) = &reference
            {
                match version {
                    Version::V3 => {
                        operation.insert(
                            "requestBody".to_owned(),
                            json!({"content": {"*/*": {"schema": reference}}, "required": true}),
                        );
                    }
                    Version::V2 => parameters.push(
                        json!({"name": "body", "in": "body", "required": true, "schema": reference}),
                    ),
                }
            }
            operation.insert("parameters".to_owned(), Value::Array(parameters));
            let typed = op.action != "list" && op.action != "deletecollection";
            let response = match (&reference, version) {
                (Some(reference), Version::V3) if typed => {
                    json!({"description": "OK", "content": {"application/json": {"schema": reference}}})
                }
                (Some(reference), Version::V2) if typed => {
                    json!({"description": "OK", "schema": reference})
                }
                _ => json!({"description": "OK"}),
            };
            operation.insert("responses".to_owned(), json!({ "200": response }));
            if version == Version::V2 {
                operation.insert("consumes".to_owned(), json!(["*/*"]));
                operation.insert(
                    "produces".to_owned(),
                    json!(["application/json", "application/yaml"]),
                );
            }
            item.insert(op.method.to_owned(), Value::Object(operation));
        }
        let mut parameters = Vec::new();
        if self.named {
            parameters.push(path_parameter(version, "name", "name of the resource"));
        }
        if self.namespaced {
            parameters.push(path_parameter(
                version,
                "namespace",
                "object name and auth scope, such as for teams and projects",
            ));
        }
        parameters.push(version.parameter("pretty", "query", "string"));
        item.insert("parameters".to_owned(), Value::Array(parameters));
        Value::Object(item)
    }
}

/// A required path parameter with its description.
fn path_parameter(version: Version, name: &str, description: &str) -> Value {
    let mut parameter = version.parameter(name, "path", "string");
    if let Value::Object(map) = &mut parameter {
        map.insert("required".to_owned(), json!(true));
        map.insert("description".to_owned(), json!(description));
    }
    parameter
}

impl Operation {
    /// The members both versions share.
    fn common(&self) -> Map<String, Value> {
        let (group, version, kind) = &self.gvk;
        let mut operation = Map::new();
        operation.insert("operationId".to_owned(), json!(self.operation_id));
        operation.insert("x-kubernetes-action".to_owned(), json!(self.action));
        operation.insert(
            "x-kubernetes-group-version-kind".to_owned(),
            json!({"group": group, "kind": kind, "version": version}),
        );
        operation
    }
}

/// The type of a query parameter.
fn query_type(name: &str) -> &'static str {
    match name {
        "allowWatchBookmarks"
        | "watch"
        | "sendInitialEvents"
        | "orphanDependents"
        | "force"
        | "ignoreStoreReadErrorWithClusterBreakingPotential" => "boolean",
        "limit" | "timeoutSeconds" | "gracePeriodSeconds" => "integer",
        _ => "string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_kind_has_a_schema() {
        let registry = Registry::builtin();
        for group in registry.groups() {
            for version in &group.versions {
                for resource in registry.resources_in(&group.name, version) {
                    assert!(
                        SCHEMAS
                            .kind(&resource.group, &resource.version, &resource.kind)
                            .is_some()
                            || crate::registry::own_schema(&resource).is_some(),
                        "no schema for {}",
                        resource.qualified_kind()
                    );
                }
            }
        }
    }

    #[test]
    fn group_versions_are_spelled_like_the_real_operation_ids() {
        assert_eq!(group_version_id("", "v1"), "CoreV1");
        assert_eq!(group_version_id("apps", "v1"), "AppsV1");
        assert_eq!(
            group_version_id("rbac.authorization.k8s.io", "v1"),
            "RbacAuthorizationV1"
        );
        assert_eq!(group_version_id("autoscaling", "v2"), "AutoscalingV2");
    }

    #[test]
    fn every_served_group_version_has_a_document_with_patch_operations() {
        let registry = Registry::builtin();
        let documents = Documents::build(&registry);
        let root: Value = serde_json::from_slice(&documents.v3_root()).expect("json");
        let paths = root["paths"].as_object().expect("paths");
        assert!(paths.contains_key("api/v1"));
        assert!(paths.contains_key("apis/apps/v1"));
        for (key, entry) in paths {
            let url = entry["serverRelativeURL"].as_str().expect("a URL");
            assert!(
                url.starts_with(&format!("/openapi/v3/{key}?hash=")),
                "{url}"
            );
            let document: Value =
                serde_json::from_slice(&documents.v3(key).expect("listed documents exist"))
                    .expect("json");
            assert_eq!(document["openapi"], "3.0.0");
        }
        let apps: Value =
            serde_json::from_slice(&documents.v3("apis/apps/v1").expect("apps")).expect("json");
        let patch =
            &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "kind": "Deployment", "version": "v1"})
        );
        assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
        assert!(
            patch["parameters"]
                .as_array()
                .expect("parameters")
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert!(patch.get("requestBody").is_none());
        let scale = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
            ["patch"];
        assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
        assert!(
            apps["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"].is_object(),
            "the Scale schema travels with apps/v1"
        );
        let v2: Value = serde_json::from_slice(&documents.v2()).expect("json");
        assert_eq!(v2["swagger"], "2.0");
        assert!(v2["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
        assert!(!String::from_utf8_lossy(&documents.v2()).contains(COMPONENTS_PREFIX));
    }
}
