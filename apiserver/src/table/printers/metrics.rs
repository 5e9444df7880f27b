//! metrics-server's Table convertor for `metrics.k8s.io` (`kubernetes-sigs/metrics-server`
//! `pkg/api/table.go`, `addPodMetricsToTable`, `addNodeMetricsToTable`): the name, one
//! `quantity` column per resource in the usage (sorted: `cpu`, `memory`; a pod's summed over
//! its containers) and the `Window`. kubemock's usage model always reports both resources, so
//! the columns are fixed.

use kubemock_apimachinery::quantity::Quantity;
use serde_json::{Value, json};

use super::{Column, list, map, text};

/// The columns of both kinds (upstream gives only the name column a description).
pub(super) const METRICS_COLUMNS: &[Column] = &[
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: "Name of the resource",
        priority: 0,
    },
    quantity_column("cpu"),
    quantity_column("memory"),
    Column {
        name: "Window",
        kind: "string",
        format: "duration",
        description: "",
        priority: 0,
    },
];

const fn quantity_column(name: &'static str) -> Column {
    Column {
        name,
        kind: "string",
        format: "quantity",
        description: "",
        priority: 0,
    }
}

/// The resources the columns show, in their order.
const RESOURCES: [&str; 2] = ["cpu", "memory"];

/// A `PodMetrics` row: each resource summed over the containers.
pub(super) fn pod_metrics(object: &Value) -> Vec<Value> {
    let mut cells = vec![json!(text(object, &["metadata", "name"]))];
    for resource in RESOURCES {
        let mut total = Quantity::default();
        for container in list(object, &["containers"]) {
            if let Some(quantity) = usage_of(container, resource) {
                total.add(&quantity);
            }
        }
        cells.push(json!(total.to_string()));
    }
    cells.push(json!(text(object, &["window"])));
    cells
}

/// A `NodeMetrics` row.
pub(super) fn node_metrics(object: &Value) -> Vec<Value> {
    let mut cells = vec![json!(text(object, &["metadata", "name"]))];
    for resource in RESOURCES {
        let quantity = usage_of(object, resource).unwrap_or_default();
        cells.push(json!(quantity.to_string()));
    }
    cells.push(json!(text(object, &["window"])));
    cells
}

/// `usage[resource]` of a container or node, parsed.
fn usage_of(object: &Value, resource: &str) -> Option<Quantity> {
    map(object, &["usage"])?
        .get(resource)
        .and_then(Value::as_str)
        .and_then(|text| Quantity::parse(text).ok())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_pods_cells_sum_its_containers_in_canonical_form() {
        let pod = json!({
            "metadata": {"name": "web"},
            "window": "15s",
            "containers": [
                {"name": "a", "usage": {"cpu": "250m", "memory": "1Mi"}},
                {"name": "b", "usage": {"cpu": "500000000n", "memory": "1024Ki"}},
            ],
        });
        assert_eq!(pod_metrics(&pod), ["web", "750m", "2Mi", "15s"]);
        let node = json!({"metadata": {"name": "n"}, "window": "15s",
            "usage": {"cpu": "1500m", "memory": "3Gi"}});
        assert_eq!(node_metrics(&node), ["n", "1500m", "3Gi", "15s"]);
    }
}
