//! The resource metrics API, `metrics.k8s.io/v1beta1`, as metrics-server serves it through the
//! aggregator (`kubernetes-sigs/metrics-server` `pkg/api/install.go`, `pod.go`, `node.go`):
//! `nodes` (`NodeMetrics`, cluster-scoped) and `pods` (`PodMetrics`, namespaced), get and list
//! only (metrics-server's storages are a `rest.Getter` and `rest.Lister`, no `Watcher`), with
//! metrics-server's Table convertor (`pkg/api/table.go`). kubemock computes the figures from
//! its usage model (`usage`) on every read; the handlers are `handlers::resource_metrics`.

use super::{Behaviour, Group, Printer, Resource, Storage};

/// The group's name (`k8s.io/metrics/pkg/apis/metrics` `GroupName`).
pub(crate) const GROUP: &str = "metrics.k8s.io";
/// Its one version.
pub(crate) const VERSION: &str = "v1beta1";
/// The aggregator's priorities of metrics-server's APIService (`manifests/base/apiservice.yaml`:
/// `groupPriorityMinimum: 100`, `versionPriority: 100`).
pub(crate) const PRIORITY: (i64, i64) = (100, 100);

/// The group, as discovery lists it (after the built-in groups: its group priority is the
/// lowest).
pub(super) fn group() -> Group {
    Group {
        name: GROUP.to_owned(),
        versions: vec![VERSION.to_owned()],
    }
}

/// `nodes` and `pods`, in discovery order.
pub(super) fn resources() -> Vec<Resource> {
    vec![
        resource("nodes", "NodeMetrics", false, Printer::NodeMetrics),
        resource("pods", "PodMetrics", true, Printer::PodMetrics),
    ]
}

fn resource(plural: &str, kind: &str, namespaced: bool, printer: Printer) -> Resource {
    Resource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        plural: plural.to_owned(),
        // metrics-server's storages answer `GetSingularName` with "".
        singular: String::new(),
        kind: kind.to_owned(),
        namespaced,
        verbs: vec!["get".to_owned(), "list".to_owned()],
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        behaviour: Behaviour {
            storage: Storage::Virtual,
            ..Behaviour::default()
        },
        printer,
        custom: None,
    }
}

/// The OpenAPI schema of a kind of this group (`k8s.io/metrics/pkg/apis/metrics/v1beta1`
/// `types.go`, as metrics-server's generated OpenAPI describes it), for `own_schema` in
/// `openapi`; `None` for kinds of other groups.
pub(crate) fn schema(resource: &Resource) -> Option<serde_json::Value> {
    if resource.group != GROUP {
        return None;
    }
    let usage = serde_json::json!({"type": "object",
        "description": "The memory and CPU usage.",
        "additionalProperties": {"type": "string", "format": "quantity"}});
    let timestamp = serde_json::json!({"type": "string", "format": "date-time",
        "description": "The following fields define time interval from which metrics were collected from the interval [Timestamp-Window, Timestamp]."});
    let window = serde_json::json!({"type": "string", "description": "The window of the sample (a duration)."});
    match resource.kind.as_str() {
        "NodeMetrics" => Some(serde_json::json!({"type": "object",
            "description": "NodeMetrics sets resource usage metrics of a node.",
            "required": ["timestamp", "window", "usage"],
            "properties": {"timestamp": timestamp, "window": window, "usage": usage}})),
        "PodMetrics" => Some(serde_json::json!({"type": "object",
            "description": "PodMetrics sets resource usage metrics of a pod.",
            "required": ["timestamp", "window", "containers"],
            "properties": {"timestamp": timestamp, "window": window, "containers": {
                "type": "array",
                "description": "Metrics for all containers are collected within the same time window.",
                "items": {"type": "object",
                    "description": "ContainerMetrics sets resource usage metrics of a container.",
                    "required": ["name", "usage"],
                    "properties": {"name": {"type": "string", "description": "Container name corresponding to the one from pod.spec.containers."},
                        "usage": usage}},
                "x-kubernetes-list-type": "atomic"}}})),
        _ => None,
    }
}
