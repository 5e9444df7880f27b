//! What the client needs to know about a kind to talk about it: where it lives on the server
//! (group, version, plural, scope) and how to reach its `ObjectMeta`. Typed k8s-openapi objects
//! know this statically; `DynamicObject`s (custom resources, JSON) carry it in an
//! [`ApiResource`] value, so one `Api<K>` serves both.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use serde::{Deserialize, Serialize};

/// Where a kind is served: group, version, kind, plural resource name and scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiResource {
    /// API group, `""` for the core group.
    pub group: String,
    /// API version within the group (`v1`).
    pub version: String,
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// Kind (`ConfigMap`).
    pub kind: String,
    /// Plural resource name in URLs (`configmaps`).
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ApiResource {
    /// The resource of a typed k8s-openapi object.
    pub fn of<K: TypedResource>() -> Self {
        K::api_resource()
    }

    /// A resource given by group, version, kind and plural.
    ///
    /// ```
    /// let widgets = kubemock_client::ApiResource::new("example.com", "v1", "Widget", "widgets", true);
    /// assert_eq!(widgets.api_version, "example.com/v1");
    /// ```
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        let api_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version,
            kind: kind.to_owned(),
            plural: plural.to_owned(),
            namespaced,
        }
    }

    /// The URL path of the collection, in `namespace` when given (`/api/v1/namespaces/ns/pods`).
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let mut path = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if let Some(ns) = namespace.filter(|_| self.namespaced) {
            path.push_str("/namespaces/");
            path.push_str(ns);
        }
        path.push('/');
        path.push_str(&self.plural);
        path
    }
}

/// An object the client can store, send and receive: serialisable, cheap to share, with
/// `ObjectMeta`.
pub trait Resource:
    Clone + fmt::Debug + Serialize + serde::de::DeserializeOwned + Send + Sync + 'static
{
    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;
    /// The object's metadata, mutably.
    fn meta_mut(&mut self) -> &mut ObjectMeta;

    /// `namespace/name` (or `name` when cluster-scoped): the key of caches and work queues.
    fn key(&self) -> ObjectKey {
        ObjectKey::from_meta(self.meta())
    }

    /// The object's resourceVersion, `""` when unset.
    fn resource_version(&self) -> &str {
        self.meta().resource_version.as_deref().unwrap_or("")
    }

    /// Fills in `apiVersion` and `kind` where the object keeps them and they are missing
    /// (items of built-in lists come without them, docs/api-behaviour.md#list-shape). Typed objects need nothing.
    fn fill_type(&mut self, _resource: &ApiResource) {}
}

/// A [`Resource`] whose group, version, plural and scope are known from its type.
pub trait TypedResource: Resource {
    /// Where this kind is served.
    fn api_resource() -> ApiResource;
}

impl<K> Resource for K
where
    K: k8s_openapi::Metadata<Ty = ObjectMeta>
        + Clone
        + fmt::Debug
        + Serialize
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    fn meta(&self) -> &ObjectMeta {
        k8s_openapi::Metadata::metadata(self)
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        k8s_openapi::Metadata::metadata_mut(self)
    }
}

impl<K> TypedResource for K
where
    K: k8s_openapi::Resource + Resource + k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    fn api_resource() -> ApiResource {
        let namespaced = std::any::type_name::<K::Scope>().ends_with("NamespaceResourceScope");
        ApiResource::new(
            K::GROUP,
            K::VERSION,
            K::KIND,
            K::URL_PATH_SEGMENT,
            namespaced,
        )
    }
}

/// The current wall-clock time as the timestamp type of k8s-openapi.
pub fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// An untyped object: `apiVersion`, `kind`, `metadata`, everything else as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DynamicObject {
    /// `group/version` of the object.
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    /// Kind of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Every other top-level field (spec, status, data...).
    #[serde(flatten)]
    pub data: serde_json::Map<String, serde_json::Value>,
}

impl DynamicObject {
    /// An object of `resource`'s kind named `name`, with no other content.
    pub fn new(name: &str, resource: &ApiResource) -> Self {
        DynamicObject {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            data: serde_json::Map::new(),
        }
    }

    /// Sets the namespace.
    #[must_use]
    pub fn within(mut self, namespace: &str) -> Self {
        self.metadata.namespace = Some(namespace.to_owned());
        self
    }

    /// Sets a top-level field (`spec`, `data`...).
    #[must_use]
    pub fn with(mut self, field: &str, value: serde_json::Value) -> Self {
        self.data.insert(field.to_owned(), value);
        self
    }
}

impl Resource for DynamicObject {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    fn fill_type(&mut self, resource: &ApiResource) {
        if self.api_version.is_empty() {
            self.api_version = resource.api_version.clone();
        }
        if self.kind.is_empty() {
            self.kind = resource.kind.clone();
        }
    }
}

/// A list answer: `metadata` (resourceVersion, continue) and the items.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(bound(deserialize = "K: serde::de::DeserializeOwned"))]
pub struct ObjectList<K> {
    /// The list's metadata: the snapshot resourceVersion and a continue token.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects (`[]` when none; `null` tolerated).
    #[serde(default, deserialize_with = "nullable_vec")]
    pub items: Vec<K>,
}

fn nullable_vec<'de, D, K>(deserializer: D) -> Result<Vec<K>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: serde::de::DeserializeOwned,
{
    Ok(Option::<Vec<K>>::deserialize(deserializer)?.unwrap_or_default())
}

/// The identity of an object inside its resource: namespace (if namespaced) and name.
/// Displays as `namespace/name` (client-go's `MetaNamespaceKeyFunc`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key in `namespace`.
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        ObjectKey {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    /// The key of an object's metadata.
    pub fn from_meta(meta: &ObjectMeta) -> Self {
        ObjectKey {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    #[test]
    fn typed_resources_know_their_place() {
        let cm = ApiResource::of::<ConfigMap>();
        assert_eq!(cm.plural, "configmaps");
        assert!(cm.namespaced);
        assert_eq!(
            cm.collection_path(Some("x")),
            "/api/v1/namespaces/x/configmaps"
        );
        let ns = ApiResource::of::<Namespace>();
        assert!(!ns.namespaced);
        assert_eq!(ns.collection_path(Some("x")), "/api/v1/namespaces");
        let lease = ApiResource::of::<k8s_openapi::api::coordination::v1::Lease>();
        assert_eq!(
            lease.collection_path(None),
            "/apis/coordination.k8s.io/v1/leases"
        );
    }

    #[test]
    fn dynamic_objects_round_trip_their_fields() {
        let json = serde_json::json!({"apiVersion":"example.com/v1","kind":"Widget",
            "metadata":{"name":"w","namespace":"n"},"spec":{"size":3}});
        let obj: DynamicObject = serde_json::from_value(json.clone()).expect("decodes");
        assert_eq!(obj.key().to_string(), "n/w");
        assert_eq!(obj.data["spec"]["size"], 3);
        assert_eq!(serde_json::to_value(&obj).expect("encodes"), json);
    }
}
