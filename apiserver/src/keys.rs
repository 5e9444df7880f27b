//! Storage keys: the one place the key layout is built (`docs/architecture.md#inside-the-api-server`):
//! `/registry/{group}/{resource}/{namespace}/{name}` for namespaced objects and
//! `/registry/{group}/{resource}/{name}` for cluster-scoped ones, with `core` as the core
//! group's name. Byte order of keys is the list order (namespace, then name), which is also
//! what the real server returns. All versions of a resource share its keys, and
//! events.k8s.io/v1 Events share core/v1 Events' (one storage, docs/api-behaviour.md#events).

use crate::registry::Resource;

/// The key prefix of every object of `resource` (all namespaces), ending in `/`.
pub(crate) fn resource_prefix(resource: &Resource) -> String {
    let group = if resource.group.is_empty() || resource.stored_as_core_event() {
        "core"
    } else {
        &resource.group
    };
    format!("/registry/{group}/{}/", resource.plural)
}

/// The key prefix of a collection: one namespace of a namespaced resource, or all of it.
pub(crate) fn collection_prefix(resource: &Resource, namespace: Option<&str>) -> String {
    let mut prefix = resource_prefix(resource);
    if let Some(namespace) = namespace.filter(|_| resource.namespaced) {
        prefix.push_str(namespace);
        prefix.push('/');
    }
    prefix
}

/// The key of one object.
pub(crate) fn object_key(resource: &Resource, namespace: Option<&str>, name: &str) -> String {
    let mut key = collection_prefix(resource, namespace);
    key.push_str(name);
    key
}
