//! The usage model behind `metrics.k8s.io` (`handlers::resource_metrics`): kubemock runs no
//! containers, so what metrics-server would scrape from the kubelets is computed from the
//! objects, the same way on every read (no noise: tests and autoscalers see stable figures).
//!
//! - A container's usage: the pod's annotation `kubemock.dev/cpu-usage.<container>` /
//!   `kubemock.dev/memory-usage.<container>`, else `kubemock.dev/cpu-usage` /
//!   `kubemock.dev/memory-usage` (every container), else [`REQUEST_PERCENT`] of the
//!   container's request, else [`DEFAULT_CPU_NANOS`] / [`DEFAULT_MEMORY_BYTES`]. Values are
//!   quantities (`250m`, `64Mi`); one that does not parse is ignored (the next rule applies).
//! - Only pods in phase `Running` bound to a node whose `Ready` condition is `True` have
//!   metrics, and in them only the containers that run (when the pod reports container
//!   statuses); metrics-server has nothing for the others.
//! - A node's usage: its annotations `kubemock.dev/cpu-usage` / `kubemock.dev/memory-usage`
//!   when set (the whole node's figure), else the sum of its pods' usage plus a system
//!   overhead ([`NODE_CPU_OVERHEAD_NANOS`], [`NODE_MEMORY_OVERHEAD_BYTES`]). A node that is not
//!   Ready has no metrics.
//!
//! kwok's `ClusterResourceUsage` / `ResourceUsage` rules (CEL expressions over the pod) are
//! not supported: the annotations cover a pod or a container at a time (docs/metrics.md).

use kubemock_apimachinery::quantity::{Format, Quantity, Scale};
use serde_json::Value;

/// The annotation (prefix, with `.<container>` for one container) setting CPU usage.
pub(crate) const CPU_ANNOTATION: &str = "kubemock.dev/cpu-usage";
/// The annotation (prefix, with `.<container>` for one container) setting memory usage.
pub(crate) const MEMORY_ANNOTATION: &str = "kubemock.dev/memory-usage";
/// Without an annotation, a container uses this percentage of its request.
pub(crate) const REQUEST_PERCENT: i64 = 50;
/// Without an annotation or a CPU request, a container uses 1m of CPU (in nanocores).
pub(crate) const DEFAULT_CPU_NANOS: i64 = 1_000_000;
/// Without an annotation or a memory request, a container uses 4Mi.
pub(crate) const DEFAULT_MEMORY_BYTES: i64 = 4 * 1024 * 1024;
/// What a node's system (kubelet, runtime, OS) uses on top of its pods: 100m of CPU.
pub(crate) const NODE_CPU_OVERHEAD_NANOS: i64 = 100_000_000;
/// What a node's system uses on top of its pods: 256Mi of memory.
pub(crate) const NODE_MEMORY_OVERHEAD_BYTES: i64 = 256 * 1024 * 1024;

/// CPU (nanocores) and memory (bytes) in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// CPU, in nanocores (10^-9 cores).
    pub(crate) cpu_nanos: i64,
    /// Memory (working set), in bytes.
    pub(crate) memory_bytes: i64,
}

impl Usage {
    /// metrics-server's `usage` map: cpu as a nano-scaled quantity (`resource.NewScaledQuantity
    /// (n, -9)`), memory as bytes in the binary format, both in canonical form.
    pub(crate) fn to_json(self) -> Value {
        serde_json::json!({
            "cpu": Quantity::new_scaled(self.cpu_nanos, Scale::NANO).to_string(),
            "memory": Quantity::new(self.memory_bytes, Format::BinarySI).to_string(),
        })
    }

    fn add(&mut self, other: Usage) {
        self.cpu_nanos = self.cpu_nanos.saturating_add(other.cpu_nanos);
        self.memory_bytes = self.memory_bytes.saturating_add(other.memory_bytes);
    }
}

/// Whether `node`'s `Ready` condition is `True`.
pub(crate) fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// The node `pod` is bound to, if any.
pub(crate) fn node_of(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// Each running container of `pod` with its usage, or `None` when the pod has no metrics
/// (not Running, or no container runs). The caller checks the node is Ready.
pub(crate) fn pod_usage(pod: &Value) -> Option<Vec<(String, Usage)>> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return None;
    }
    node_of(pod)?;
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array);
    let annotations = pod.pointer("/metadata/annotations");
    let containers: Vec<(String, Usage)> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|container| {
            let name = container.get("name").and_then(Value::as_str)?;
            let running = match statuses {
                None => true,
                Some(statuses) => statuses.iter().any(|s| {
                    s.get("name").and_then(Value::as_str) == Some(name)
                        && s.pointer("/state/running").is_some()
                }),
            };
            running.then(|| {
                (
                    name.to_owned(),
                    container_usage(annotations, container, name),
                )
            })
        })
        .collect();
    (!containers.is_empty()).then_some(containers)
}

/// One container's usage under the rules of the module doc.
fn container_usage(annotations: Option<&Value>, container: &Value, name: &str) -> Usage {
    let annotated = |prefix: &str| {
        let read = |key: &str| {
            annotations
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .and_then(|text| Quantity::parse(text.trim()).ok())
        };
        read(&format!("{prefix}.{name}")).or_else(|| read(prefix))
    };
    let requested = |resource: &str| {
        container
            .pointer(&format!("/resources/requests/{resource}"))
            .and_then(Value::as_str)
            .and_then(|text| Quantity::parse(text).ok())
    };
    let cpu_nanos = match annotated(CPU_ANNOTATION) {
        Some(q) => q.scaled_value(Scale::NANO),
        None => {
            requested("cpu").map_or(DEFAULT_CPU_NANOS, |q| percent(q.scaled_value(Scale::NANO)))
        }
    };
    let memory_bytes = match annotated(MEMORY_ANNOTATION) {
        Some(q) => q.value(),
        None => requested("memory").map_or(DEFAULT_MEMORY_BYTES, |q| percent(q.value())),
    };
    Usage {
        cpu_nanos: cpu_nanos.max(0),
        memory_bytes: memory_bytes.max(0),
    }
}

/// [`REQUEST_PERCENT`] of `value`, rounded down.
fn percent(value: i64) -> i64 {
    value.saturating_mul(REQUEST_PERCENT) / 100
}

/// The usage of a Ready `node` whose pods with metrics are `pods`: its annotations, else the
/// pods' sum plus the system overhead.
pub(crate) fn node_usage<'a>(node: &Value, pods: impl IntoIterator<Item = &'a Value>) -> Usage {
    let annotations = node.pointer("/metadata/annotations");
    let read = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .and_then(|text| Quantity::parse(text.trim()).ok())
    };
    let mut total = Usage {
        cpu_nanos: NODE_CPU_OVERHEAD_NANOS,
        memory_bytes: NODE_MEMORY_OVERHEAD_BYTES,
    };
    for pod in pods {
        for (_, usage) in pod_usage(pod).unwrap_or_default() {
            total.add(usage);
        }
    }
    if let Some(cpu) = read(CPU_ANNOTATION) {
        total.cpu_nanos = cpu.scaled_value(Scale::NANO).max(0);
    }
    if let Some(memory) = read(MEMORY_ANNOTATION) {
        total.memory_bytes = memory.value().max(0);
    }
    total
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(annotations: Value, containers: Value) -> Value {
        json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {"nodeName": "n1", "containers": containers},
            "status": {"phase": "Running"},
        })
    }

    #[test]
    fn a_container_uses_its_annotation_else_the_pods_else_half_its_request_else_the_default() {
        let pod = pod(
            json!({"kubemock.dev/cpu-usage.a": "250m", "kubemock.dev/cpu-usage": "10m",
                   "kubemock.dev/memory-usage.b": "bad"}),
            json!([
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "128Mi"}}},
                {"name": "b", "resources": {"requests": {"memory": "100Mi"}}},
                {"name": "c"},
            ]),
        );
        let usage = pod_usage(&pod).expect("running");
        assert_eq!(usage[0].1.cpu_nanos, 250_000_000);
        assert_eq!(usage[0].1.memory_bytes, 64 * 1024 * 1024);
        assert_eq!(usage[1].1.cpu_nanos, 10_000_000);
        assert_eq!(usage[1].1.memory_bytes, 50 * 1024 * 1024);
        assert_eq!(usage[2].1.memory_bytes, DEFAULT_MEMORY_BYTES);
        assert_eq!(
            usage[0].1.to_json(),
            json!({"cpu": "250m", "memory": "64Mi"})
        );
        let odd = Usage {
            cpu_nanos: 12_345,
            memory_bytes: 5 * 1024 * 1000,
        };
        assert_eq!(odd.to_json(), json!({"cpu": "12345n", "memory": "5000Ki"}));
    }

    #[test]
    fn only_running_containers_of_running_pods_have_usage() {
        let mut pending = pod(json!({}), json!([{"name": "a"}]));
        pending["status"]["phase"] = json!("Pending");
        assert_eq!(pod_usage(&pending), None);
        let mut running = pod(json!({}), json!([{"name": "a"}, {"name": "b"}]));
        running["status"]["containerStatuses"] = json!([
            {"name": "a", "state": {"running": {}}},
            {"name": "b", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        ]);
        let usage = pod_usage(&running).expect("a runs");
        assert_eq!(usage.len(), 1);
        assert_eq!(usage[0].0, "a");
    }

    #[test]
    fn a_node_sums_its_pods_plus_the_overhead_unless_annotated() {
        let node = json!({"metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(node_ready(&node));
        let pods = [pod(
            json!({"kubemock.dev/cpu-usage": "200m", "kubemock.dev/memory-usage": "100Mi"}),
            json!([{"name": "a"}]),
        )];
        let usage = node_usage(&node, &pods);
        assert_eq!(usage.cpu_nanos, 300_000_000);
        assert_eq!(usage.memory_bytes, 356 * 1024 * 1024);
        let annotated = json!({"metadata": {"annotations": {"kubemock.dev/cpu-usage": "3"}}});
        assert_eq!(node_usage(&annotated, &pods).cpu_nanos, 3_000_000_000);
    }
}
