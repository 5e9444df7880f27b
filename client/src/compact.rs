//! Gives back the spare room of decoded objects before an informer caches them.
//!
//! serde fills a `Vec` from JSON without knowing its length, so the vector grows by doubling
//! from a first allocation of 4 elements (1 when an element is over 1 KiB): a pod's one
//! volume mount, two tolerations and five conditions are stored in room for 4, 4 and 8. A
//! cached object lives as long as the object does, and the spare room with it. For the typed
//! Pods of the 10,000-pod controller benchmark (the largest cache by far: heaptrack put
//! 149 MB of the server process's 488 MB peak heap in the decoded objects of its watches), a
//! Running pod decoded to 17,608 bytes of heap and 12,776 after [`compact`]. The contents
//! are untouched; only capacity goes, so readers see the same object. Under mimalloc, the
//! kubemock binary's allocator, 100,000 such pods decoded and kept take 18,249 bytes of RSS
//! each, 13,942 with their lists shrunk in place (`Vec::shrink_to_fit`, which mimalloc does
//! not honour for a list that keeps at least half its block: see [`fit`]), and 13,029 with
//! each list moved to an allocation of its length, as [`compact`] does.
//!
//! Pods are what there are many of (kwok's 100,000 per cluster); other kinds are cached as
//! decoded, apart from their metadata's lists.
//!
//! It runs on every object an informer applies, on the reflector's task: a pod's lists are
//! reallocated (a dozen at most, where decoding the pod made about 80 allocations), other
//! objects pay a type check. The 10,000-pod benchmark's server CPU did not move beyond the
//! noise (docs/benchmarks.md).

use std::any::Any;

use k8s_openapi::api::core::v1::{Container, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::resource::Resource;

/// Shrinks the vectors of `obj` that serde leaves with spare room: those of its metadata for
/// every kind, and those of a pod's spec and status.
pub(crate) fn compact<K: Resource>(obj: &mut K) {
    metadata(obj.meta_mut());
    if let Some(pod) = (obj as &mut dyn Any).downcast_mut::<Pod>() {
        compact_pod(pod);
    }
}

fn shrink<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list {
        fit(list);
    }
}

/// Moves `list` into an allocation of its own length if it has spare room. Not
/// `Vec::shrink_to_fit`: that asks the allocator to shrink the block in place, and mimalloc
/// (the kubemock binary's allocator) keeps a block as it is when the new size is at least half
/// of it (`_mi_heap_realloc_zero` in its `src/alloc.c`: "not more than 50% waste"). So a pod's
/// five conditions kept their room for eight, its two tolerations and three projected sources
/// their room for four: 913 bytes per cached pod (module docs) that `shrink_to_fit` only
/// appeared to give back (`Vec::capacity` said it had).
fn fit<T>(list: &mut Vec<T>) {
    if list.capacity() > list.len() {
        let mut exact = Vec::with_capacity(list.len());
        exact.append(list);
        *list = exact;
    }
}

fn metadata(meta: &mut ObjectMeta) {
    shrink(&mut meta.owner_references);
    shrink(&mut meta.finalizers);
}

fn compact_pod(pod: &mut Pod) {
    if let Some(spec) = &mut pod.spec {
        fit(&mut spec.containers);
        shrink(&mut spec.init_containers);
        for container in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            compact_container(container);
        }
        shrink(&mut spec.tolerations);
        shrink(&mut spec.volumes);
        for volume in spec.volumes.iter_mut().flatten() {
            compact_volume(volume);
        }
    }
    if let Some(status) = &mut pod.status {
        shrink(&mut status.conditions);
        shrink(&mut status.container_statuses);
        shrink(&mut status.init_container_statuses);
        shrink(&mut status.host_ips);
        shrink(&mut status.pod_ips);
    }
}

fn compact_container(container: &mut Container) {
    shrink(&mut container.volume_mounts);
    shrink(&mut container.env);
    shrink(&mut container.ports);
    shrink(&mut container.args);
    shrink(&mut container.command);
}

/// The projected volume every pod with a ServiceAccount gets (its token, `kube-root-ca.crt`
/// and its namespace).
fn compact_volume(volume: &mut Volume) {
    let Some(sources) = volume
        .projected
        .as_mut()
        .and_then(|projected| projected.sources.as_mut())
    else {
        return;
    };
    fit(sources);
    for source in sources {
        if let Some(config_map) = &mut source.config_map {
            shrink(&mut config_map.items);
        }
        if let Some(downward) = &mut source.downward_api {
            shrink(&mut downward.items);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Running pod as the simulated cluster writes it (kube-api-access volume, default
    /// tolerations, five conditions).
    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u","controller":true}],"finalizers":["a"]},
      "spec":{"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}]}],
        "tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],
        "volumes":[{"name":"kube-api-access","projected":{"sources":[{"serviceAccountToken":{"path":"token","expirationSeconds":3607}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}]}}]},
      "status":{"phase":"Running","hostIPs":[{"ip":"10.0.0.10"}],"podIPs":[{"ip":"10.244.0.1"}],
        "conditions":[{"type":"PodReadyToStartContainers","status":"True"},{"type":"Initialized","status":"True"},{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"},{"type":"PodScheduled","status":"True"}],
        "containerStatuses":[{"name":"c","image":"nginx","imageID":"","ready":true,"restartCount":0}]}}"#;

    fn capacities(pod: &Pod) -> Vec<(&'static str, usize, usize)> {
        fn of<T>(name: &'static str, list: Option<&Vec<T>>) -> (&'static str, usize, usize) {
            list.map_or((name, 0, 0), |l| (name, l.len(), l.capacity()))
        }
        let spec = pod.spec.as_ref().expect("a spec");
        let status = pod.status.as_ref().expect("a status");
        let projected = spec.volumes.as_ref().expect("volumes")[0]
            .projected
            .as_ref()
            .expect("a projected volume");
        let sources = projected.sources.as_ref().expect("sources");
        vec![
            of("ownerReferences", pod.metadata.owner_references.as_ref()),
            of("finalizers", pod.metadata.finalizers.as_ref()),
            of("containers", Some(&spec.containers)),
            of("volumeMounts", spec.containers[0].volume_mounts.as_ref()),
            of("tolerations", spec.tolerations.as_ref()),
            of("volumes", spec.volumes.as_ref()),
            of("sources", Some(sources)),
            of(
                "configMap.items",
                sources[1]
                    .config_map
                    .as_ref()
                    .and_then(|c| c.items.as_ref()),
            ),
            of(
                "downwardAPI.items",
                sources[2]
                    .downward_api
                    .as_ref()
                    .and_then(|d| d.items.as_ref()),
            ),
            of("conditions", status.conditions.as_ref()),
            of("containerStatuses", status.container_statuses.as_ref()),
            of("hostIPs", status.host_ips.as_ref()),
            of("podIPs", status.pod_ips.as_ref()),
        ]
    }

    #[test]
    fn a_decoded_pod_keeps_no_spare_room_and_reads_the_same() {
        let mut pod: Pod = serde_json::from_str(POD).expect("a pod");
        let decoded = pod.clone();
        // serde leaves room: the test would prove nothing if it did not.
        assert!(
            capacities(&pod).iter().any(|(_, len, cap)| cap > len),
            "{:?}",
            capacities(&pod)
        );
        compact(&mut pod);
        for (name, len, cap) in capacities(&pod) {
            assert_eq!(len, cap, "{name}");
        }
        assert_eq!(pod, decoded);
    }

    /// The lists that kept their block under mimalloc when they were shrunk in place (each
    /// shrinks to at least half of it): they must now move to an allocation of their length.
    /// Shrinking in place keeps the address under any allocator that shrinks in place (glibc's
    /// does too), so this fails with `shrink_to_fit`.
    #[test]
    fn lists_with_room_move_to_an_allocation_of_their_length() {
        fn place<T>(list: &[T], capacity: usize) -> (usize, usize, usize) {
            (list.as_ptr().addr(), list.len(), capacity)
        }
        fn addresses(pod: &Pod) -> [(usize, usize, usize); 3] {
            let spec = pod.spec.as_ref().expect("a spec");
            let tolerations = spec.tolerations.as_ref().expect("tolerations");
            let sources = spec.volumes.as_ref().expect("volumes")[0]
                .projected
                .as_ref()
                .and_then(|p| p.sources.as_ref())
                .expect("sources");
            let conditions = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .expect("conditions");
            [
                place(tolerations, tolerations.capacity()),
                place(sources, sources.capacity()),
                place(conditions, conditions.capacity()),
            ]
        }
        let mut pod: Pod = serde_json::from_str(POD).expect("a pod");
        let before = addresses(&pod);
        // Room as serde leaves it: 2 in 4, 3 in 4, 5 in 8, each at least half used.
        for (_, len, cap) in before {
            assert!(cap > len && len * 2 >= cap, "{before:?}");
        }
        compact(&mut pod);
        for ((old, _, _), (new, len, cap)) in before.into_iter().zip(addresses(&pod)) {
            assert_ne!(old, new, "the list stayed in its block");
            assert_eq!(len, cap);
        }
    }

    #[test]
    fn other_kinds_lose_only_their_metadata_lists_room() {
        let mut map: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_str(
            r#"{"metadata":{"name":"m","finalizers":["a"]},"data":{"k":"v"}}"#,
        )
        .expect("a config map");
        let decoded = map.clone();
        compact(&mut map);
        let finalizers = map.metadata.finalizers.as_ref().expect("finalizers");
        assert_eq!(finalizers.capacity(), finalizers.len());
        assert_eq!(map, decoded);
    }
}
