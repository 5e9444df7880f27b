//! The simulated nodes (kwok-like): what a registered kubelet's Node looks like, and the pod
//! status a running pod's kubelet reports. Pure, tested without a server.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, Node, NodeAddress, NodeCondition,
    NodeSpec, NodeStatus, NodeSystemInfo, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference, Time};

/// The annotation (value `"true"`) that stops a simulated node's kubelet: it renews no
/// Lease, posts no status and runs no pods, as a machine that went down; so the node
/// lifecycle controller finds it unreachable after its grace period. Removing it (or any
/// other value) starts the kubelet again.
pub const DOWN_ANNOTATION: &str = "kubemock.dev/down";

/// Namespace of the node heartbeat Leases (`v1.NamespaceNodeLease`).
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The Leases' duration: the kubelet's default `nodeLeaseDurationSeconds`
/// (`pkg/kubelet/apis/config/v1beta1/defaults.go`).
pub const LEASE_DURATION_SECONDS: i32 = 40;

/// How often a live kubelet renews its Lease: a quarter of [`LEASE_DURATION_SECONDS`]
/// (`nodeLeaseRenewIntervalFraction` in `pkg/kubelet/kubelet.go`), 10 s.
pub const LEASE_RENEW: Duration = Duration::from_secs(10);

/// How often a live kubelet posts its node status even when nothing changed: upstream's
/// default `nodeStatusReportFrequency` (`pkg/kubelet/apis/config/v1beta1/defaults.go`), so
/// the Ready condition's `lastHeartbeatTime` moves at that pace, as on a real node.
pub const NODE_STATUS_REPORT_FREQUENCY: Duration = Duration::from_secs(300);

/// Whether the kubelet of `node` is stopped ([`DOWN_ANNOTATION`]): then it renews no
/// Lease, posts no status and runs no pods. The one switch a Stage (or a test) flips to take
/// a simulated node down and bring it back.
pub fn is_stopped(node: &Node) -> bool {
    node.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DOWN_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// Whether a live kubelet posts the status of `node` at `now`: its Ready condition is not
/// True (never posted, or set Unknown by the node lifecycle controller while the kubelet
/// was stopped), or its heartbeat is older than [`NODE_STATUS_REPORT_FREQUENCY`].
pub fn status_due(node: &Node, now: Timestamp) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    let Some(ready) = ready.filter(|c| c.status == "True") else {
        return true;
    };
    let every = jiff::SignedDuration::try_from(NODE_STATUS_REPORT_FREQUENCY).unwrap_or_default();
    ready
        .last_heartbeat_time
        .as_ref()
        .is_none_or(|beat| beat.0 + every <= now)
}

/// The heartbeat Lease of `node` renewed at `now`, from its current Lease when it has one,
/// as upstream's lease controller writes it (`component-helpers/apimachinery/lease/
/// controller.go` `newLease`): holder the node's name, duration [`LEASE_DURATION_SECONDS`],
/// and an ownerReference to the Node (`pkg/kubelet/util/nodelease.go` `SetNodeOwnerFunc`),
/// so the Lease goes with its Node.
pub fn lease(node: &Node, current: Option<&Lease>, now: Timestamp) -> Lease {
    let name = node.metadata.name.clone().unwrap_or_default();
    let mut lease = current.cloned().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NODE_LEASE_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.clone()),
            lease_duration_seconds: Some(LEASE_DURATION_SECONDS),
            ..LeaseSpec::default()
        }),
    });
    if lease
        .metadata
        .owner_references
        .as_ref()
        .is_none_or(Vec::is_empty)
        && let Some(uid) = node.metadata.uid.clone()
    {
        lease.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Node".to_owned(),
            name,
            uid,
            ..OwnerReference::default()
        }]);
    }
    lease.spec.get_or_insert_with(LeaseSpec::default).renew_time = Some(MicroTime(now));
    lease
}

/// Whether a live kubelet renews `lease` at `now`: it has no renewTime, or that is
/// [`LEASE_RENEW`] old (or in the future: a clock set back).
pub fn lease_due(lease: &Lease, now: Timestamp) -> bool {
    let every = jiff::SignedDuration::try_from(LEASE_RENEW).unwrap_or_default();
    lease
        .spec
        .as_ref()
        .and_then(|s| s.renew_time.as_ref())
        .is_none_or(|renewed| renewed.0 + every <= now || renewed.0 > now)
}

/// Names of the simulated nodes: `kubemock-node-0`, `kubemock-node-1`, ...
pub fn node_name(index: usize) -> String {
    format!("kubemock-node-{index}")
}

/// The InternalIP of node `index` (10.0.0.x / 10.0.y.x).
pub fn node_ip(index: usize) -> String {
    format!("10.0.{}.{}", index / 250, index % 250 + 10)
}

/// The pod CIDR prefix of node `index` (10.244.index.0/24; beyond 255 nodes, 10.(244+).x).
fn pod_prefix(index: usize) -> String {
    format!("10.{}.{}", 244 + index / 256, index % 256)
}

/// The IP of the `n`th pod on node `index`.
pub fn pod_ip(index: usize, n: u32) -> String {
    format!("{}.{}", pod_prefix(index), n % 254 + 1)
}

/// The ID of the `restarts`th run of the container `name` of `pod`, as the runtime
/// reports it: `kubemock://` (the runtime the nodes report, `containerRuntimeVersion`) and 64
/// hex digits, like containerd's IDs. Unique per pod (its uid), container and run, and the
/// same every time it is computed, so a restarted simulator reports the same IDs.
pub fn container_id(pod: &Pod, name: &str, restarts: i32) -> String {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{uid}/{name}/{restarts}").as_bytes(),
    );
    format!("kubemock://{}", hex(digest.as_ref()))
}

/// The image ID a runtime reports for `image` as a pod names it: the repository, fully
/// qualified as containerd resolves short names (`nginx:1.25` is
/// `docker.io/library/nginx`), with the digest the reference pins, else a digest of the
/// reference itself (no registry is asked): `docker.io/library/nginx@sha256:...`.
pub fn image_id(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest.to_owned())),
        None => (image, None),
    };
    // A tag follows the last `:` after the last `/` (a registry's port comes before it).
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let repository = match name[last_slash..].rfind(':') {
        Some(i) => &name[..last_slash + i],
        None => name,
    };
    let first = repository.split('/').next().unwrap_or_default();
    let has_registry = repository.contains('/')
        && (first.contains('.') || first.contains(':') || first == "localhost");
    let qualified = if has_registry {
        repository.to_owned()
    } else if repository.contains('/') {
        format!("docker.io/{repository}")
    } else {
        format!("docker.io/library/{repository}")
    };
    let digest = digest.unwrap_or_else(|| {
        let hash = ring::digest::digest(&ring::digest::SHA256, image.as_bytes());
        format!("sha256:{}", hex(hash.as_ref()))
    });
    format!("{qualified}@{digest}")
}

/// Lower-case hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Capacity (and allocatable) of a simulated node: kwok's defaults are about this size.
pub fn capacity() -> BTreeMap<String, Quantity> {
    [
        ("cpu", "32"),
        ("memory", "256Gi"),
        ("pods", "110"),
        ("ephemeral-storage", "1Ti"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), Quantity(v.to_owned())))
    .collect()
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &Time) -> NodeCondition {
    NodeCondition {
        type_: kind.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

/// The Node object of simulated node `index`, Ready.
pub fn node(index: usize, now: &Time) -> Node {
    let name = node_name(index);
    let labels: BTreeMap<String, String> = [
        ("kubernetes.io/hostname", name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
        ("type", "kubemock"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    Node {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(labels),
            annotations: Some([("node.alpha.kubernetes.io/ttl".to_owned(), "0".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(format!("{}.0/24", pod_prefix(index))),
            pod_cidrs: Some(vec![format!("{}.0/24", pod_prefix(index))]),
            ..NodeSpec::default()
        }),
        status: Some(node_status(index, now)),
    }
}

/// The status a healthy simulated kubelet reports.
pub fn node_status(index: usize, now: &Time) -> NodeStatus {
    NodeStatus {
        capacity: Some(capacity()),
        allocatable: Some(capacity()),
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".to_owned(),
                address: node_ip(index),
            },
            NodeAddress {
                type_: "Hostname".to_owned(),
                address: node_name(index),
            },
        ]),
        conditions: Some(vec![
            condition(
                "MemoryPressure",
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
                now,
            ),
            condition(
                "DiskPressure",
                "False",
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure",
                now,
            ),
            condition(
                "PIDPressure",
                "False",
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
                now,
            ),
            condition(
                "Ready",
                "True",
                "KubeletReady",
                "kubelet is posting ready status",
                now,
            ),
        ]),
        node_info: Some(NodeSystemInfo {
            architecture: "amd64".to_owned(),
            boot_id: String::new(),
            container_runtime_version: "kubemock://1.0.0".to_owned(),
            kernel_version: "6.0.0".to_owned(),
            kube_proxy_version: String::new(),
            kubelet_version: "v1.32.0".to_owned(),
            machine_id: String::new(),
            operating_system: "linux".to_owned(),
            os_image: "kubemock".to_owned(),
            system_uuid: String::new(),
            // Fields of later Kubernetes versions (`swap`): unset, as 1.32 has them.
            ..NodeSystemInfo::default()
        }),
        phase: Some("Running".to_owned()),
        ..NodeStatus::default()
    }
}

/// The status a live kubelet posts for simulated node `index` named `name` at `now`, after
/// `previous`: the healthy status, with `previous`'s capacity and allocatable when it states
/// them (a user-created node's own), and each condition's `lastTransitionTime` kept while
/// its status stays the same (only the heartbeat moves), as the kubelet's setters do
/// (`pkg/kubelet/nodestatus/setters.go`).
pub fn posted_status(
    index: usize,
    name: &str,
    previous: Option<&NodeStatus>,
    now: &Time,
) -> NodeStatus {
    let mut status = node_status(index, now);
    if let Some(hostname) = status
        .addresses
        .iter_mut()
        .flatten()
        .find(|a| a.type_ == "Hostname")
    {
        name.clone_into(&mut hostname.address);
    }
    let Some(previous) = previous else {
        return status;
    };
    if previous.capacity.is_some() {
        status.capacity.clone_from(&previous.capacity);
    }
    if previous.allocatable.is_some() {
        status.allocatable.clone_from(&previous.allocatable);
    }
    for condition in status.conditions.iter_mut().flatten() {
        let before = previous
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == condition.type_ && c.status == condition.status);
        if let Some(before) = before.and_then(|c| c.last_transition_time.clone()) {
            condition.last_transition_time = Some(before);
        }
    }
    status
}

/// Whether the pod's containers run to completion (restartPolicy Never or OnFailure).
pub fn runs_to_completion(pod: &Pod) -> bool {
    matches!(
        pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()),
        Some("Never" | "OnFailure")
    )
}

fn pod_condition(kind: &str, status: &str, reason: Option<&str>, now: &Time) -> PodCondition {
    PodCondition {
        type_: kind.to_owned(),
        status: status.to_owned(),
        reason: reason.map(str::to_owned),
        message: None,
        last_probe_time: None,
        last_transition_time: Some(now.clone()),
        ..PodCondition::default()
    }
}

/// The status of a pod whose containers run (`ready`: they passed readiness), started at
/// `started`, on a node at `host_ip`, with `pod_ip`.
pub fn running_status(
    pod: &Pod,
    host_ip: &str,
    pod_ip: &str,
    started: &Time,
    ready: bool,
    now: &Time,
) -> PodStatus {
    let ready_text = if ready { "True" } else { "False" };
    let not_ready = (!ready).then_some("ContainersNotReady");
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    PodStatus {
        phase: Some("Running".to_owned()),
        host_ip: Some(host_ip.to_owned()),
        host_ips: Some(vec![k8s_openapi::api::core::v1::HostIP {
            ip: host_ip.to_owned(),
        }]),
        pod_ip: Some(pod_ip.to_owned()),
        pod_ips: Some(vec![PodIP {
            ip: pod_ip.to_owned(),
        }]),
        start_time: Some(started.clone()),
        // Computed by the API server at creation, and immutable.
        qos_class: pod.status.as_ref().and_then(|s| s.qos_class.clone()),
        conditions: Some(vec![
            pod_condition("PodReadyToStartContainers", "True", None, now),
            pod_condition("Initialized", "True", None, now),
            pod_condition("Ready", ready_text, not_ready, now),
            pod_condition("ContainersReady", ready_text, not_ready, now),
            pod_condition("PodScheduled", "True", None, started),
        ]),
        container_statuses: Some(
            containers
                .iter()
                .map(|c| ContainerStatus {
                    name: c.name.clone(),
                    image: c.image.clone().unwrap_or_default(),
                    image_id: image_id(c.image.as_deref().unwrap_or_default()),
                    container_id: Some(container_id(pod, &c.name, 0)),
                    ready,
                    started: Some(true),
                    restart_count: 0,
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(started.clone()),
                        }),
                        ..ContainerState::default()
                    }),
                    ..ContainerStatus::default()
                })
                .collect(),
        ),
        ephemeral_container_statuses: ephemeral_statuses(pod, None, now),
        ..PodStatus::default()
    }
}

/// The statuses of the pod's ephemeral containers (`kubectl debug`): each running since its
/// status in `current` says, or since `now` when it has none yet. `None` when the pod has none.
pub fn ephemeral_statuses(
    pod: &Pod,
    current: Option<&[ContainerStatus]>,
    now: &Time,
) -> Option<Vec<ContainerStatus>> {
    let containers = pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_ref())?;
    if containers.is_empty() {
        return None;
    }
    Some(
        containers
            .iter()
            .map(|c| {
                let known = current
                    .into_iter()
                    .flatten()
                    .find(|status| status.name == c.name);
                known.cloned().unwrap_or_else(|| ContainerStatus {
                    name: c.name.clone(),
                    image: c.image.clone().unwrap_or_default(),
                    image_id: image_id(c.image.as_deref().unwrap_or_default()),
                    container_id: Some(container_id(pod, &c.name, 0)),
                    ready: false,
                    started: Some(true),
                    restart_count: 0,
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(now.clone()),
                        }),
                        ..ContainerState::default()
                    }),
                    ..ContainerStatus::default()
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_ready_with_capacity_and_addresses() {
        let now = Time(kubemock_client::resource::now());
        let n = node(1, &now);
        assert_eq!(n.metadata.name.as_deref(), Some("kubemock-node-1"));
        let status = n.status.expect("status");
        assert!(
            status
                .conditions
                .expect("conditions")
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        );
        assert_eq!(status.addresses.expect("addresses")[0].address, "10.0.0.11");
        assert_eq!(status.allocatable.expect("allocatable")["pods"].0, "110");
        assert_eq!(pod_ip(1, 0), "10.244.1.1");
    }

    #[test]
    fn running_pods_keep_their_qos_class_and_get_container_ids_of_their_own() {
        let now = Time(kubemock_client::resource::now());
        let pod = |uid: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "uid": uid},
                "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]},
                "status": {"phase": "Pending", "qosClass": "Burstable"}
            }))
            .expect("a pod")
        };
        let ids = |pod: &Pod| -> Vec<String> {
            let status = running_status(pod, "10.0.0.10", "10.244.0.1", &now, true, &now);
            assert_eq!(status.qos_class.as_deref(), Some("Burstable"));
            status
                .container_statuses
                .into_iter()
                .flatten()
                .filter_map(|c| c.container_id)
                .collect()
        };
        let (first, second) = (
            pod("4b2f1c5e-0000-0000-0000-000000000001"),
            pod("4b2f1c5e-0000-0000-0000-000000000002"),
        );
        let (a, b) = (ids(&first), ids(&second));
        assert_eq!(a.len(), 2);
        assert_ne!(a[0], a[1], "containers of one pod");
        assert!(a.iter().all(|id| !b.contains(id)), "pods {a:?} {b:?}");
        assert_eq!(ids(&first), a, "the same every time");
        let hex = a[0]
            .strip_prefix("kubemock://")
            .expect("the runtime's prefix");
        assert_eq!(hex.len(), 64);
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(
            container_id(&first, "a", 1),
            a[0],
            "a restart is a new container"
        );
    }

    #[test]
    fn image_ids_name_the_resolved_repository_and_a_digest() {
        let digest = |id: String| {
            id.split_once("@sha256:")
                .map(|(r, d)| (r.to_owned(), d.len()))
        };
        for (image, repository) in [
            ("nginx", "docker.io/library/nginx"),
            ("nginx:1.25", "docker.io/library/nginx"),
            ("bitnami/redis:7", "docker.io/bitnami/redis"),
            ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause"),
            ("localhost:5000/app:dev", "localhost:5000/app"),
            ("localhost/app", "localhost/app"),
        ] {
            assert_eq!(
                digest(image_id(image)),
                Some((repository.to_owned(), 64)),
                "{image}"
            );
        }
        assert_ne!(image_id("nginx:1.25"), image_id("nginx:1.26"));
        assert_eq!(image_id("nginx:1.25"), image_id("nginx:1.25"));
        let pinned = format!("busybox@sha256:{}", "a".repeat(64));
        assert_eq!(
            image_id(&pinned),
            format!("docker.io/library/busybox@sha256:{}", "a".repeat(64))
        );
    }
}
