//! `PartialObjectMetadata` and `PartialObjectMetadataList` (`meta.k8s.io`): an object's, or a
//! list's items', metadata alone. client-go's metadata client asks for them (controller-runtime's
//! metadata-only watches and caches, kube-controller-manager's garbage collector), and a Table
//! row carries one by default. Built as upstream's `asPartialObjectMetadata[List]`
//! (`k8s.io/apiserver/pkg/endpoints/handlers/response.go`): the whole `metadata`, under the
//! kind and the `meta.k8s.io` version asked for.

use serde_json::{Map, Value, json};

/// The group of the conversions clients ask for (these kinds and `Table`).
pub(crate) const META_GROUP: &str = "meta.k8s.io";

/// The `PartialObjectMetadata` of `object` in `meta.k8s.io/{version}`.
pub(crate) fn object(version: &str, object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("{META_GROUP}/{version}"),
        "metadata": metadata_of(object),
    })
}

/// The `PartialObjectMetadataList` of `list` in `meta.k8s.io/{version}`: each item's
/// `PartialObjectMetadata`, with the list's resourceVersion, continue token and remaining
/// count. Upstream appends the items to a nil slice, so an empty list's `items` is `null`.
pub(crate) fn list(version: &str, list: &Value) -> Value {
    let items: Vec<Value> = list
        .get("items")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(|item| object(version, item)).collect())
        .unwrap_or_default();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": format!("{META_GROUP}/{version}"),
        "metadata": metadata_of(list),
        "items": if items.is_empty() { Value::Null } else { Value::Array(items) },
    })
}

/// A copy of `value`'s `metadata` (empty when it has none).
fn metadata_of(value: &Value) -> Value {
    value
        .get("metadata")
        .filter(|m| m.is_object())
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_keeps_its_whole_metadata_under_the_meta_kind() {
        let pod = json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"},
                         "resourceVersion": "7", "finalizers": ["x"]},
            "spec": {"containers": []}});
        assert_eq!(
            object("v1", &pod),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": pod["metadata"]})
        );
        assert_eq!(object("v1beta1", &pod)["apiVersion"], "meta.k8s.io/v1beta1");
        // A bookmark's object: its metadata is the resourceVersion (and annotations).
        let bookmark =
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}});
        assert_eq!(
            object("v1", &bookmark)["metadata"],
            json!({"resourceVersion": "9"})
        );
    }

    #[test]
    fn a_list_keeps_its_metadata_and_each_item_becomes_partial() {
        let list = json!({"kind": "ConfigMapList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "12", "continue": "abc", "remainingItemCount": 3},
            "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}, {"metadata": {"name": "b"}}]});
        assert_eq!(
            super::list("v1", &list),
            json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "12", "continue": "abc", "remainingItemCount": 3},
            "items": [
                {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}},
                {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "b"}},
            ]})
        );
        let empty =
            json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "3"}, "items": []});
        assert_eq!(super::list("v1", &empty)["items"], Value::Null);
    }
}
