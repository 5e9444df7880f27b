//! The real server's Table printers, per [`Printer`]: the column definitions and the cell logic
//! of `kubernetes/pkg/printers/internalversion/printers.go` (1.32), and the default convertor of
//! `k8s.io/apiserver/pkg/registry/rest/table.go`. The server always prints wide (the `-o wide`
//! columns have priority 1 and kubectl hides them otherwise), so every row has a cell per
//! column.
//!
//! Upstream prints internal objects, already defaulted and converted; kubemock prints the
//! stored JSON, so where the real server would have defaulted a field before storing it
//! (`spec.replicas`, a Service's `type`, a port's `protocol`, a Secret's `type`) the printer
//! reads the default when the field is absent, and a field another version spells differently
//! (`podIP` and `podIPs`, a Secret's `stringData`, events.k8s.io's field names, an
//! autoscaling/v1 HPA's CPU fields) is read as the conversion would have left it. Quantities
//! print as stored, where the real server prints their canonical form.
//!
//! # Layout
//! This file holds the shared cell helpers (`text`, `int`, `age`, `format_labels`,
//! `format_label_selector`, `containers`, `first_of` ...), the dispatch, and the printers of
//! the core kinds kubectl shows most (pods, deployments, replica sets, services, config maps,
//! secrets, namespaces, nodes, events, leases, scale); the other kinds are in submodules:
//! - `workloads`: stateful sets, daemon sets, jobs, cron jobs, replication controllers,
//!   controller revisions, pod templates;
//! - `networking`: endpoints, endpoint slices, ingresses, ingress classes, network policies;
//! - `storage`: persistent volumes and claims, storage classes;
//! - `access`: service accounts, role bindings and cluster role bindings;
//! - `policy`: horizontal pod autoscalers, pod disruption budgets, priority classes, resource
//!   quotas;
//! - `metrics`: metrics-server's `metrics.k8s.io` kinds;
//! - `cluster`: component statuses, API services, certificate signing requests, CSI kinds and
//!   volume attachments, admission configuration, runtime classes, flow control.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::docs;
use super::duration::{go_duration, human_duration, since, zero_time};
use crate::registry::Printer;
use crate::selector::LabelSelector as Selector;
use kubemock_apimachinery::time;

mod access;
mod cluster;
mod metrics;
mod networking;
mod policy;
mod storage;
mod workloads;

/// One column (`metav1.TableColumnDefinition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Column {
    /// Its title (`Name`, `Ready`).
    pub(super) name: &'static str,
    /// The OpenAPI type hint (`string`, `integer`, `date`); cells need not follow it.
    pub(super) kind: &'static str,
    /// `name` for the column naming the object, else empty.
    pub(super) format: &'static str,
    /// What the column shows.
    pub(super) description: &'static str,
    /// 0 for default columns, 1 for `-o wide` ones.
    pub(super) priority: u8,
}

/// A default column of `kind` (`string` or `integer`).
const fn column(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind,
        format: "",
        description,
        priority: 0,
    }
}

/// A `-o wide` string column.
const fn wide(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind: "string",
        format: "",
        description,
        priority: 1,
    }
}

/// The column naming the object.
const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    description: docs::NAME,
    priority: 0,
};

/// The age column of the printers.
const AGE: Column = column("Age", "string", docs::CREATION_TIMESTAMP);

const DEFAULT_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Created At",
        kind: "date",
        format: "",
        description: docs::CREATION_TIMESTAMP,
        priority: 0,
    },
];

const POD_COLUMNS: &[Column] = &[
    NAME,
    column("Ready", "string", docs::POD_READY),
    column("Status", "string", docs::POD_STATUS),
    column("Restarts", "string", docs::POD_RESTARTS),
    AGE,
    wide("IP", docs::POD_IP),
    wide("Node", docs::POD_NODE_NAME),
    wide("Nominated Node", docs::POD_NOMINATED_NODE_NAME),
    wide("Readiness Gates", docs::POD_READINESS_GATES),
];

const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    column("Ready", "string", docs::DEPLOYMENT_READY),
    column("Up-to-date", "string", docs::DEPLOYMENT_UPDATED),
    column("Available", "string", docs::DEPLOYMENT_AVAILABLE),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
    wide("Selector", docs::DEPLOYMENT_SELECTOR),
];

const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    column("Desired", "integer", docs::RS_SPEC_REPLICAS),
    column("Current", "integer", docs::RS_STATUS_REPLICAS),
    column("Ready", "integer", docs::RS_READY_REPLICAS),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
    wide("Selector", docs::RS_SELECTOR),
];

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    column("Type", "string", docs::SERVICE_TYPE),
    column("Cluster-IP", "string", docs::SERVICE_CLUSTER_IP),
    column("External-IP", "string", docs::SERVICE_EXTERNAL_IPS),
    column("Port(s)", "string", docs::SERVICE_PORTS),
    AGE,
    wide("Selector", docs::SERVICE_SELECTOR),
];

/// Declared `string`, although the cells are integers (as upstream).
const CONFIG_MAP_COLUMNS: &[Column] = &[NAME, column("Data", "string", docs::CONFIGMAP_DATA), AGE];

const SECRET_COLUMNS: &[Column] = &[
    NAME,
    column("Type", "string", docs::SECRET_TYPE),
    column("Data", "string", docs::SECRET_DATA),
    AGE,
];

const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    column("Status", "string", docs::NAMESPACE_STATUS),
    AGE,
];

const NODE_COLUMNS: &[Column] = &[
    NAME,
    column("Status", "string", docs::NODE_STATUS),
    column("Roles", "string", docs::NODE_ROLES),
    AGE,
    column("Version", "string", docs::NODE_KUBELET_VERSION),
    wide("Internal-IP", docs::NODE_ADDRESSES),
    wide("External-IP", docs::NODE_ADDRESSES),
    wide("OS-Image", docs::NODE_OS_IMAGE),
    wide("Kernel-Version", docs::NODE_KERNEL_VERSION),
    wide("Container-Runtime", docs::NODE_CONTAINER_RUNTIME),
];

const EVENT_COLUMNS: &[Column] = &[
    column("Last Seen", "string", docs::EVENT_LAST_TIMESTAMP),
    column("Type", "string", docs::EVENT_TYPE),
    column("Reason", "string", docs::EVENT_REASON),
    column("Object", "string", docs::EVENT_INVOLVED_OBJECT),
    wide("Subobject", docs::EVENT_FIELD_PATH),
    wide("Source", docs::EVENT_SOURCE),
    column("Message", "string", docs::EVENT_MESSAGE),
    wide("First Seen", docs::EVENT_FIRST_TIMESTAMP),
    wide("Count", docs::EVENT_COUNT),
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: docs::NAME,
        priority: 1,
    },
];

const LEASE_COLUMNS: &[Column] = &[NAME, column("Holder", "string", docs::LEASE_HOLDER), AGE];

/// Upstream's Scale name column has no `name` format.
const SCALE_COLUMNS: &[Column] = &[
    column("Name", "string", docs::NAME),
    column("Desired", "integer", docs::SCALE_SPEC_REPLICAS),
    column("Available", "integer", docs::SCALE_STATUS_REPLICAS),
    AGE,
];

/// The columns `printer` prints.
pub(super) fn columns(printer: &Printer) -> &'static [Column] {
    match printer {
        Printer::Default | Printer::Columns(_) => DEFAULT_COLUMNS,
        Printer::PodMetrics | Printer::NodeMetrics => metrics::METRICS_COLUMNS,
        Printer::Pod => POD_COLUMNS,
        Printer::Deployment => DEPLOYMENT_COLUMNS,
        Printer::ReplicaSet => REPLICA_SET_COLUMNS,
        Printer::Service => SERVICE_COLUMNS,
        Printer::ConfigMap => CONFIG_MAP_COLUMNS,
        Printer::Secret => SECRET_COLUMNS,
        Printer::Namespace => NAMESPACE_COLUMNS,
        Printer::Node => NODE_COLUMNS,
        Printer::Event | Printer::EventV1 => EVENT_COLUMNS,
        Printer::Lease => LEASE_COLUMNS,
        Printer::Scale => SCALE_COLUMNS,
        Printer::Endpoints => networking::ENDPOINTS_COLUMNS,
        Printer::EndpointSlice => networking::ENDPOINT_SLICE_COLUMNS,
        Printer::StatefulSet => workloads::STATEFUL_SET_COLUMNS,
        Printer::DaemonSet => workloads::DAEMON_SET_COLUMNS,
        Printer::Job => workloads::JOB_COLUMNS,
        Printer::CronJob => workloads::CRON_JOB_COLUMNS,
        Printer::ReplicationController => workloads::REPLICATION_CONTROLLER_COLUMNS,
        Printer::ControllerRevision => workloads::CONTROLLER_REVISION_COLUMNS,
        Printer::PodTemplate => workloads::POD_TEMPLATE_COLUMNS,
        Printer::Ingress => networking::INGRESS_COLUMNS,
        Printer::IngressClass => networking::INGRESS_CLASS_COLUMNS,
        Printer::NetworkPolicy => networking::NETWORK_POLICY_COLUMNS,
        Printer::PersistentVolume => storage::PERSISTENT_VOLUME_COLUMNS,
        Printer::PersistentVolumeClaim => storage::PERSISTENT_VOLUME_CLAIM_COLUMNS,
        Printer::StorageClass => storage::STORAGE_CLASS_COLUMNS,
        Printer::ServiceAccount => access::SERVICE_ACCOUNT_COLUMNS,
        Printer::RoleBinding => access::ROLE_BINDING_COLUMNS,
        Printer::ClusterRoleBinding => access::CLUSTER_ROLE_BINDING_COLUMNS,
        Printer::HorizontalPodAutoscaler => policy::HORIZONTAL_POD_AUTOSCALER_COLUMNS,
        Printer::PodDisruptionBudget => policy::POD_DISRUPTION_BUDGET_COLUMNS,
        Printer::PriorityClass => policy::PRIORITY_CLASS_COLUMNS,
        Printer::ResourceQuota => policy::RESOURCE_QUOTA_COLUMNS,
        Printer::ComponentStatus => cluster::COMPONENT_STATUS_COLUMNS,
        Printer::ApiService => cluster::API_SERVICE_COLUMNS,
        Printer::CertificateSigningRequest => cluster::CERTIFICATE_SIGNING_REQUEST_COLUMNS,
        Printer::CsiDriver => cluster::CSI_DRIVER_COLUMNS,
        Printer::CsiNode => cluster::CSI_NODE_COLUMNS,
        Printer::CsiStorageCapacity => cluster::CSI_STORAGE_CAPACITY_COLUMNS,
        Printer::VolumeAttachment => cluster::VOLUME_ATTACHMENT_COLUMNS,
        Printer::WebhookConfiguration => cluster::WEBHOOK_CONFIGURATION_COLUMNS,
        Printer::ValidatingAdmissionPolicy => cluster::VALIDATING_ADMISSION_POLICY_COLUMNS,
        Printer::ValidatingAdmissionPolicyBinding => {
            cluster::VALIDATING_ADMISSION_POLICY_BINDING_COLUMNS
        }
        Printer::RuntimeClass => cluster::RUNTIME_CLASS_COLUMNS,
        Printer::FlowSchema => cluster::FLOW_SCHEMA_COLUMNS,
        Printer::PriorityLevelConfiguration => cluster::PRIORITY_LEVEL_CONFIGURATION_COLUMNS,
    }
}

/// One object's row: its cells, one per column, and row conditions (`Completed` for finished
/// pods).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    /// The cells.
    pub(super) cells: Vec<Value>,
    /// `metav1.TableRowCondition`s; usually none.
    pub(super) conditions: Vec<Value>,
}

impl Row {
    /// A row without conditions.
    pub(super) fn plain(cells: Vec<Value>) -> Self {
        Row {
            cells,
            conditions: Vec::new(),
        }
    }
}

/// The row `printer` prints for `object`, with ages measured at `now` (Unix nanoseconds).
pub(super) fn row(printer: &Printer, object: &Value, now: i128) -> Row {
    match printer {
        Printer::Default | Printer::Columns(_) => Row::plain(vec![
            json!(text(object, &["metadata", "name"])),
            json!(created_at(object)),
        ]),
        Printer::Pod => pod(object, now),
        Printer::PodMetrics => Row::plain(metrics::pod_metrics(object)),
        Printer::NodeMetrics => Row::plain(metrics::node_metrics(object)),
        Printer::Deployment => Row::plain(deployment(object, now)),
        Printer::ReplicaSet => Row::plain(replica_set(object, now)),
        Printer::Service => Row::plain(service(object, now)),
        Printer::ConfigMap => Row::plain(vec![
            json!(name(object)),
            json!(count(object, &["data"]) + count(object, &["binaryData"])),
            json!(age(object, now)),
        ]),
        Printer::Secret => Row::plain(secret(object, now)),
        Printer::Namespace => Row::plain(vec![
            json!(name(object)),
            json!(text(object, &["status", "phase"])),
            json!(age(object, now)),
        ]),
        Printer::Node => Row::plain(node(object, now)),
        Printer::Event => Row::plain(event(object, now)),
        Printer::EventV1 => Row::plain(event(&core_event(object), now)),
        Printer::Lease => Row::plain(vec![
            json!(name(object)),
            json!(text(object, &["spec", "holderIdentity"])),
            json!(age(object, now)),
        ]),
        Printer::Scale => Row::plain(vec![
            json!(name(object)),
            json!(int(object, &["spec", "replicas"])),
            json!(int(object, &["status", "replicas"])),
            json!(age(object, now)),
        ]),
        Printer::Endpoints => Row::plain(networking::endpoints(object, now)),
        Printer::EndpointSlice => Row::plain(networking::endpoint_slice(object, now)),
        Printer::StatefulSet => Row::plain(workloads::stateful_set(object, now)),
        Printer::DaemonSet => Row::plain(workloads::daemon_set(object, now)),
        Printer::Job => Row::plain(workloads::job(object, now)),
        Printer::CronJob => Row::plain(workloads::cron_job(object, now)),
        Printer::ReplicationController => {
            Row::plain(workloads::replication_controller(object, now))
        }
        Printer::ControllerRevision => Row::plain(workloads::controller_revision(object, now)),
        Printer::PodTemplate => Row::plain(workloads::pod_template(object)),
        Printer::Ingress => Row::plain(networking::ingress(object, now)),
        Printer::IngressClass => Row::plain(networking::ingress_class(object, now)),
        Printer::NetworkPolicy => Row::plain(networking::network_policy(object, now)),
        Printer::PersistentVolume => Row::plain(storage::persistent_volume(object, now)),
        Printer::PersistentVolumeClaim => Row::plain(storage::persistent_volume_claim(object, now)),
        Printer::StorageClass => Row::plain(storage::storage_class(object, now)),
        Printer::ServiceAccount => Row::plain(access::service_account(object, now)),
        Printer::RoleBinding | Printer::ClusterRoleBinding => {
            Row::plain(access::binding(object, now))
        }
        Printer::HorizontalPodAutoscaler => {
            Row::plain(policy::horizontal_pod_autoscaler(object, now))
        }
        Printer::PodDisruptionBudget => Row::plain(policy::pod_disruption_budget(object, now)),
        Printer::PriorityClass => Row::plain(policy::priority_class(object, now)),
        Printer::ResourceQuota => Row::plain(policy::resource_quota(object, now)),
        Printer::ComponentStatus => Row::plain(cluster::component_status(object)),
        Printer::ApiService => Row::plain(cluster::api_service(object, now)),
        Printer::CertificateSigningRequest => {
            Row::plain(cluster::certificate_signing_request(object, now))
        }
        Printer::CsiDriver => Row::plain(cluster::csi_driver(object, now)),
        Printer::CsiNode => Row::plain(cluster::csi_node(object, now)),
        Printer::CsiStorageCapacity => Row::plain(cluster::csi_storage_capacity(object)),
        Printer::VolumeAttachment => Row::plain(cluster::volume_attachment(object, now)),
        Printer::WebhookConfiguration => Row::plain(cluster::webhook_configuration(object, now)),
        Printer::ValidatingAdmissionPolicy => {
            Row::plain(cluster::validating_admission_policy(object, now))
        }
        Printer::ValidatingAdmissionPolicyBinding => {
            Row::plain(cluster::validating_admission_policy_binding(object, now))
        }
        Printer::RuntimeClass => Row::plain(cluster::runtime_class(object, now)),
        Printer::FlowSchema => Row::plain(cluster::flow_schema(object, now)),
        Printer::PriorityLevelConfiguration => {
            Row::plain(cluster::priority_level_configuration(object, now))
        }
    }
}

// ----- reading the stored JSON --------------------------------------------------------------

/// The value at `path`, if present and not null (Go's nil pointer).
fn field<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |value, key| value.get(key))
        .filter(|value| !value.is_null())
}

/// The string at `path`, or empty.
fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    field(value, path).and_then(Value::as_str).unwrap_or("")
}

/// The integer at `path`, or 0.
fn int(value: &Value, path: &[&str]) -> i64 {
    int_or(value, path, 0)
}

/// The integer at `path`, or `default` when absent (a field the real server defaults).
fn int_or(value: &Value, path: &[&str], default: i64) -> i64 {
    field(value, path)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

/// The boolean at `path` (false when absent).
fn flag(value: &Value, path: &[&str]) -> bool {
    field(value, path).and_then(Value::as_bool).unwrap_or(false)
}

/// The array at `path`, or empty.
fn list<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    field(value, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The map at `path`, if any.
fn map<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    field(value, path).and_then(Value::as_object)
}

/// The `resource.Quantity` at `path`, as stored (the real server prints the canonical form,
/// `1Gi` for `1024Mi`; clients usually send that form).
fn quantity(value: &Value, path: &[&str]) -> Option<String> {
    match field(value, path)? {
        Value::String(quantity) => Some(quantity.clone()),
        Value::Number(quantity) => Some(quantity.to_string()),
        _ => None,
    }
}

/// The number of entries of the map at `path`.
fn count(value: &Value, path: &[&str]) -> usize {
    map(value, path).map_or(0, Map::len)
}

fn name(object: &Value) -> &str {
    text(object, &["metadata", "name"])
}

/// `translateTimestampSince(obj.CreationTimestamp)`.
fn age(object: &Value, now: i128) -> String {
    since(
        field(object, &["metadata", "creationTimestamp"]).and_then(Value::as_str),
        now,
    )
}

/// A timestamp as Go's zero-able `metav1.Time` (zero when absent or unreadable).
fn instant(value: &Value, path: &[&str]) -> i128 {
    field(value, path)
        .and_then(Value::as_str)
        .and_then(time::parse_rfc3339)
        .unwrap_or_else(zero_time)
}

/// The default convertor's `Created At`: RFC 3339 in UTC, whole seconds (Go's zero time when
/// there is none).
fn created_at(object: &Value) -> String {
    let seconds = instant(object, &["metadata", "creationTimestamp"]).div_euclid(1_000_000_000);
    time::rfc3339(i64::try_from(seconds).unwrap_or(i64::MIN))
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, or `<none>`.
fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<(&String, String)> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .collect();
    pairs.sort();
    let text: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text.join(",")
    }
}

/// `metav1.LabelSelectorAsSelector(selector).String()` (the shared `labels::Selector`); `Err`
/// where the conversion fails (an unknown operator, values where there must be none or none
/// where there must be some, an invalid key or value).
fn selector_string(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector else {
        return Ok(String::new());
    };
    Selector::from_label_selector_json(selector)
        .map(|selector| selector.to_string())
        .map_err(|_| ())
}

/// `metav1.FormatLabelSelector`: the selector's string, `<none>` for an empty or absent one,
/// `<error>` for one that does not convert.
fn format_label_selector(selector: Option<&Value>) -> String {
    match selector_string(selector) {
        Ok(text) if text.is_empty() => "<none>".to_owned(),
        Ok(text) => text,
        Err(()) => "<error>".to_owned(),
    }
}

/// The list cells' truncation: what is shown, then ` + N more...` when `hidden` items are not.
fn more(shown: String, hidden: usize) -> String {
    if hidden == 0 {
        shown
    } else {
        format!("{shown} + {hidden} more...")
    }
}

/// The first `shown` of `items` joined with `separator`, then ` + N more...` for the rest (the
/// `max`/`more`/`count` loops of `formatEndpoints`, `listWithMoreString` and
/// `formatHPAMetrics`).
fn first_of(items: impl Iterator<Item = String>, shown: usize, separator: &str) -> String {
    let mut kept = Vec::new();
    let mut count = 0;
    for item in items {
        if kept.len() < shown {
            kept.push(item);
        }
        count += 1;
    }
    more(kept.join(separator), count - kept.len())
}

/// The containers and images of the pod template at `path` (`spec.template`), as
/// [`containers`] lays them out.
fn template_containers(object: &Value, path: &[&str]) -> (String, String) {
    let mut spec_path = path.to_vec();
    spec_path.push("spec");
    containers(field(object, &spec_path))
}

/// Whether the first of `conditions` of type `kind` has status `True` (the printers'
/// `hasJobCondition`, the pod printer's initialized and readiness-gate checks).
fn condition_true(conditions: &[Value], kind: &str) -> bool {
    conditions
        .iter()
        .find(|c| text(c, &["type"]) == kind)
        .is_some_and(|c| text(c, &["status"]) == "True")
}

/// `layoutContainerCells`: container names and images, comma-separated.
fn containers(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec.map_or(&[][..], |spec| list(spec, &["containers"]));
    let names: Vec<&str> = containers.iter().map(|c| text(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

// ----- printers -----------------------------------------------------------------------------

const POD_SUCCEEDED: &str = "Succeeded";
const POD_FAILED: &str = "Failed";

/// `printPod`.
fn pod(pod: &Value, now: i128) -> Row {
    let init_specs = list(pod, &["spec", "initContainers"]);
    let restartable = |name: &str| {
        init_specs
            .iter()
            .find(|c| text(c, &["name"]) == name)
            .is_some_and(|c| text(c, &["restartPolicy"]) == "Always")
    };
    let total = list(pod, &["spec", "containers"]).len()
        + init_specs
            .iter()
            .filter(|c| text(c, &["restartPolicy"]) == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut restartable_restarts = 0;
    let mut last_restart = zero_time();
    let mut last_restartable_restart = zero_time();
    let phase = text(pod, &["status", "phase"]);
    let mut reason = match text(pod, &["status", "reason"]) {
        "" => phase.to_owned(),
        status_reason => status_reason.to_owned(),
    };
    let conditions = list(pod, &["status", "conditions"]);
    if conditions
        .iter()
        .any(|c| text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_owned();
    }
    let row_conditions = match phase {
        POD_SUCCEEDED => vec![
            json!({"type": "Completed", "status": "True", "reason": POD_SUCCEEDED, "message": "The pod has completed successfully."}),
        ],
        POD_FAILED => vec![
            json!({"type": "Completed", "status": "True", "reason": POD_FAILED, "message": "The pod failed."}),
        ],
        _ => Vec::new(),
    };

    let init_statuses = list(pod, &["status", "initContainerStatuses"]);
    let mut initializing = false;
    for (i, container) in init_statuses.iter().enumerate() {
        let container_restarts = int(container, &["restartCount"]);
        let finished = instant(container, &["lastState", "terminated", "finishedAt"]);
        restarts += container_restarts;
        if field(container, &["lastState", "terminated"]).is_some() {
            last_restart = last_restart.max(finished);
        }
        let is_restartable = restartable(text(container, &["name"]));
        if is_restartable {
            restartable_restarts += container_restarts;
            if field(container, &["lastState", "terminated"]).is_some() {
                last_restartable_restart = last_restartable_restart.max(finished);
            }
        }
        let terminated = field(container, &["state", "terminated"]);
        let waiting_reason = text(container, &["state", "waiting", "reason"]);
        if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
            continue;
        }
        if is_restartable && flag(container, &["started"]) {
            if flag(container, &["ready"]) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(terminated) = terminated {
            match text(terminated, &["reason"]) {
                "" => match int(terminated, &["signal"]) {
                    0 => format!("Init:ExitCode:{}", int(terminated, &["exitCode"])),
                    signal => format!("Init:Signal:{signal}"),
                },
                terminated_reason => format!("Init:{terminated_reason}"),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || condition_true(conditions, "Initialized") {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for container in list(pod, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(container, &["restartCount"]);
            if field(container, &["lastState", "terminated"]).is_some() {
                let finished = instant(container, &["lastState", "terminated", "finishedAt"]);
                last_restart = last_restart.max(finished);
            }
            let waiting_reason = text(container, &["state", "waiting", "reason"]);
            let terminated = field(container, &["state", "terminated"]);
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_owned();
            } else if let Some(terminated) = terminated {
                reason = match text(terminated, &["reason"]) {
                    "" => match int(terminated, &["signal"]) {
                        0 => format!("ExitCode:{}", int(terminated, &["exitCode"])),
                        signal => format!("Signal:{signal}"),
                    },
                    terminated_reason => terminated_reason.to_owned(),
                };
            } else if flag(container, &["ready"])
                && field(container, &["state", "running"]).is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        // Back to "Running" if a container still runs after another completed.
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| text(c, &["type"]) == "Ready" && text(c, &["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_owned();
        }
    }

    let deleting = field(pod, &["metadata", "deletionTimestamp"]).is_some();
    if deleting && text(pod, &["status", "reason"]) == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && phase != POD_SUCCEEDED && phase != POD_FAILED {
        reason = "Terminating".to_owned();
    }

    let restarts_cell = if restarts != 0 && last_restart != zero_time() {
        let ago = human_duration(go_duration(now - last_restart));
        format!("{restarts} ({ago} ago)")
    } else {
        restarts.to_string()
    };

    // The internal PodIPs, as converted from v1: `podIP` wins over `podIPs`.
    let ip = match text(pod, &["status", "podIP"]) {
        "" => list(pod, &["status", "podIPs"])
            .first()
            .map_or("", |ip| text(ip, &["ip"])),
        ip => ip,
    };
    let gates = list(pod, &["spec", "readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let true_gates = gates
            .iter()
            .filter(|gate| condition_true(conditions, text(gate, &["conditionType"])))
            .count();
        format!("{true_gates}/{}", gates.len())
    };
    Row {
        cells: vec![
            json!(name(pod)),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            json!(age(pod, now)),
            json!(or_none(ip)),
            json!(or_none(text(pod, &["spec", "nodeName"]))),
            json!(or_none(text(pod, &["status", "nominatedNodeName"]))),
            json!(readiness_gates),
        ],
        conditions: row_conditions,
    }
}

/// `value`, or `<none>` when empty.
fn or_none(value: &str) -> &str {
    if value.is_empty() { "<none>" } else { value }
}

/// `printDeployment`.
fn deployment(deployment: &Value, now: i128) -> Vec<Value> {
    let desired = int_or(deployment, &["spec", "replicas"], 1);
    let ready = int(deployment, &["status", "readyReplicas"]);
    let (names, images) = template_containers(deployment, &["spec", "template"]);
    let selector = selector_string(field(deployment, &["spec", "selector"]))
        .unwrap_or_else(|()| "<invalid>".to_owned());
    vec![
        json!(name(deployment)),
        json!(format!("{ready}/{desired}")),
        json!(int(deployment, &["status", "updatedReplicas"])),
        json!(int(deployment, &["status", "availableReplicas"])),
        json!(age(deployment, now)),
        json!(names),
        json!(images),
        json!(selector),
    ]
}

/// `printReplicaSet`.
fn replica_set(replica_set: &Value, now: i128) -> Vec<Value> {
    let (names, images) = template_containers(replica_set, &["spec", "template"]);
    let selector = format_label_selector(field(replica_set, &["spec", "selector"]));
    vec![
        json!(name(replica_set)),
        json!(int_or(replica_set, &["spec", "replicas"], 1)),
        json!(int(replica_set, &["status", "replicas"])),
        json!(int(replica_set, &["status", "readyReplicas"])),
        json!(age(replica_set, now)),
        json!(names),
        json!(images),
        json!(selector),
    ]
}

/// `printService`.
fn service(service: &Value, now: i128) -> Vec<Value> {
    let kind = match text(service, &["spec", "type"]) {
        "" => "ClusterIP",
        kind => kind,
    };
    // The internal ClusterIPs, as converted from v1: `clusterIPs`, else `clusterIP`.
    let cluster_ip = list(service, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(service, &["spec", "clusterIP"]));
    let external_ips: Vec<&str> = list(service, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external = match kind {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let mut all = load_balancer_ingress(service);
            if external_ips.is_empty() && all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.extend(external_ips);
                all.join(",")
            }
        }
        "ExternalName" => text(service, &["spec", "externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = list(service, &["spec", "ports"])
        .iter()
        .map(|port| {
            let protocol = match text(port, &["protocol"]) {
                "" => "TCP",
                protocol => protocol,
            };
            match int(port, &["nodePort"]) {
                node_port if node_port > 0 => {
                    format!("{}:{node_port}/{protocol}", int(port, &["port"]))
                }
                _ => format!("{}/{protocol}", int(port, &["port"])),
            }
        })
        .collect();
    vec![
        json!(name(service)),
        json!(kind),
        json!(or_none(cluster_ip)),
        json!(external),
        json!(or_none(&ports.join(","))),
        json!(age(service, now)),
        json!(format_labels(map(service, &["spec", "selector"]))),
    ]
}

/// `loadBalancerStatusStringer` (Services) and `ingressLoadBalancerStatusStringer` (Ingresses),
/// wide (unclipped): the IP, else the hostname, of each `status.loadBalancer.ingress`, unique
/// and sorted.
fn load_balancer_ingress(object: &Value) -> Vec<&str> {
    let ingress: BTreeSet<&str> = list(object, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|i| match text(i, &["ip"]) {
            "" => text(i, &["hostname"]),
            ip => ip,
        })
        .filter(|s| !s.is_empty())
        .collect();
    ingress.into_iter().collect()
}

/// `printSecret`: `stringData` counts as `data`, as the v1 conversion merges it.
fn secret(secret: &Value, now: i128) -> Vec<Value> {
    let keys: BTreeSet<&String> = ["data", "stringData"]
        .into_iter()
        .filter_map(|key| map(secret, &[key]))
        .flat_map(Map::keys)
        .collect();
    let kind = match text(secret, &["type"]) {
        "" => "Opaque",
        kind => kind,
    };
    vec![
        json!(name(secret)),
        json!(kind),
        json!(keys.len()),
        json!(age(secret, now)),
    ]
}

/// `printNode`.
fn node(node: &Value, now: i128) -> Vec<Value> {
    let mut status: Vec<&str> = Vec::new();
    // The last Ready condition wins, as in upstream's map of conditions by type.
    if let Some(ready) = list(node, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| text(c, &["type"]) == "Ready")
    {
        status.push(if text(ready, &["status"]) == "True" {
            "Ready"
        } else {
            "NotReady"
        });
    } else {
        status.push("Unknown");
    }
    if flag(node, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    // `findNodeRoles`: `node-role.kubernetes.io/<role>` keys and a `kubernetes.io/role` value.
    let roles: BTreeSet<&str> = map(node, &["metadata", "labels"])
        .into_iter()
        .flatten()
        .filter_map(
            |(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
                Some(role) => Some(role),
                None if key == "kubernetes.io/role" => value.as_str(),
                None => None,
            },
        )
        .filter(|role| !role.is_empty())
        .collect();
    let roles: Vec<&str> = roles.into_iter().collect();
    let address = |kind: &str| {
        list(node, &["status", "addresses"])
            .iter()
            .find(|a| text(a, &["type"]) == kind)
            .map_or("<none>", |a| text(a, &["address"]))
    };
    let info = |key: &str| match text(node, &["status", "nodeInfo", key]) {
        "" => "<unknown>",
        value => value,
    };
    vec![
        json!(name(node)),
        json!(status.join(",")),
        json!(or_none(&roles.join(","))),
        json!(age(node, now)),
        json!(text(node, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

/// `printEvent`, over a core/v1 Event.
fn event(event: &Value, now: i128) -> Vec<Value> {
    let timestamp = |path: &[&str]| field(event, path).and_then(Value::as_str);
    let first_seen = if instant(event, &["firstTimestamp"]) == zero_time() {
        since(timestamp(&["eventTime"]), now)
    } else {
        since(timestamp(&["firstTimestamp"]), now)
    };
    let mut last_seen = if instant(event, &["lastTimestamp"]) == zero_time() {
        first_seen.clone()
    } else {
        since(timestamp(&["lastTimestamp"]), now)
    };
    let mut count = int(event, &["count"]);
    if field(event, &["series"]).is_some() {
        last_seen = since(timestamp(&["series", "lastObservedTime"]), now);
        count = int(event, &["series", "count"]);
    } else if count == 0 {
        // Singleton events have no count in the new API.
        count = 1;
    }
    let kind = text(event, &["involvedObject", "kind"]).to_lowercase();
    let target = match text(event, &["involvedObject", "name"]) {
        "" => kind,
        involved => format!("{kind}/{involved}"),
    };
    let component = first_non_empty(
        text(event, &["source", "component"]),
        text(event, &["reportingComponent"]),
    );
    let instance = first_non_empty(
        text(event, &["source", "host"]),
        text(event, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last_seen),
        json!(text(event, &["type"])),
        json!(text(event, &["reason"])),
        json!(target),
        json!(text(event, &["involvedObject", "fieldPath"])),
        json!(source),
        json!(text(event, &["message"]).trim()),
        json!(first_seen),
        json!(count),
        json!(name(event)),
    ]
}

fn first_non_empty<'a>(first: &'a str, second: &'a str) -> &'a str {
    if first.is_empty() { second } else { first }
}

/// An events.k8s.io/v1 Event in core/v1 field names, as the real server converts it before
/// printing (`pkg/apis/events/v1` conversion; the one mapping is admission's).
fn core_event(event: &Value) -> Value {
    let empty = Map::new();
    let event = event.as_object().unwrap_or(&empty);
    Value::Object(crate::admission::event_v1_to_core(event))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i128 = 1_000_000_000;
    /// The creation time of the test objects.
    pub(super) const CREATED: &str = "2024-05-01T12:00:00Z";

    /// Now: ten minutes after [`CREATED`].
    pub(super) fn now() -> i128 {
        time::parse_rfc3339(CREATED).unwrap() + 600 * SECOND
    }

    /// The cells `printer` prints for `object` at [`now`], one per column.
    pub(super) fn cells(printer: Printer, object: Value) -> Vec<Value> {
        let row = row(&printer, &object, now());
        assert_eq!(
            row.cells.len(),
            columns(&printer).len(),
            "a cell per column"
        );
        row.cells
    }

    fn pod_with(status: Value) -> Value {
        json!({
            "metadata": {"name": "web", "creationTimestamp": CREATED},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": status,
        })
    }

    fn pod_cells(status: Value) -> (String, String, String) {
        let cells = cells(Printer::Pod, pod_with(status));
        let s = |i: usize| cells[i].as_str().unwrap().to_owned();
        (s(1), s(2), s(3))
    }

    #[test]
    fn every_printer_has_a_name_column_and_only_priority_0_or_1() {
        for printer in [
            Printer::Default,
            Printer::Pod,
            Printer::Deployment,
            Printer::ReplicaSet,
            Printer::Service,
            Printer::ConfigMap,
            Printer::Secret,
            Printer::Namespace,
            Printer::Node,
            Printer::Event,
            Printer::EventV1,
            Printer::Lease,
            Printer::Scale,
            Printer::Endpoints,
            Printer::EndpointSlice,
            Printer::StatefulSet,
            Printer::DaemonSet,
            Printer::Job,
            Printer::CronJob,
            Printer::ReplicationController,
            Printer::ControllerRevision,
            Printer::PodTemplate,
            Printer::Ingress,
            Printer::IngressClass,
            Printer::NetworkPolicy,
            Printer::PersistentVolume,
            Printer::PersistentVolumeClaim,
            Printer::StorageClass,
            Printer::ServiceAccount,
            Printer::RoleBinding,
            Printer::ClusterRoleBinding,
            Printer::HorizontalPodAutoscaler,
            Printer::PodDisruptionBudget,
            Printer::PriorityClass,
            Printer::ResourceQuota,
        ] {
            let columns = columns(&printer);
            assert!(columns.iter().any(|c| c.name == "Name"), "{printer:?}");
            assert!(columns.iter().all(|c| c.priority <= 1), "{printer:?}");
            let row = row(&printer, &json!({}), now());
            assert_eq!(
                row.cells.len(),
                columns.len(),
                "{printer:?} on an empty object"
            );
        }
    }

    #[test]
    fn a_pending_pod_shows_its_phase_and_no_restarts() {
        let pod = pod_with(json!({"phase": "Pending"}));
        let cells = cells(Printer::Pod, pod);
        assert_eq!(
            cells,
            [
                json!("web"),
                json!("0/2"),
                json!("Pending"),
                json!("0"),
                json!("10m"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn a_running_pod_counts_ready_running_containers_and_shows_its_placement() {
        let mut pod = pod_with(json!({
            "phase": "Running",
            "podIP": "10.0.0.5",
            "nominatedNodeName": "n2",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "gate-a", "status": "True"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"running": {}}},
            ],
        }));
        pod["spec"]["nodeName"] = json!("n1");
        pod["spec"]["readinessGates"] =
            json!([{"conditionType": "gate-a"}, {"conditionType": "gate-b"}]);
        let cells = cells(Printer::Pod, pod);
        assert_eq!(cells[1], "1/2");
        assert_eq!(cells[2], "Running");
        assert_eq!(
            cells[5..],
            [json!("10.0.0.5"), json!("n1"), json!("n2"), json!("1/2")]
        );
    }

    #[test]
    fn container_waiting_and_terminated_reasons_replace_the_phase() {
        let (_, status, _) = pod_cells(json!({
            "phase": "Pending",
            "containerStatuses": [
                {"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}},
                {"name": "b", "state": {"waiting": {"reason": "ContainerCreating"}}},
            ],
        }));
        assert_eq!(
            status, "ImagePullBackOff",
            "the first container's reason, read last"
        );
        let (_, status, _) = pod_cells(json!({
            "phase": "Running",
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}}],
        }));
        assert_eq!(status, "Signal:9");
        let (_, status, _) = pod_cells(json!({
            "phase": "Running",
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 2}}}],
        }));
        assert_eq!(status, "ExitCode:2");
        let (_, status, _) = pod_cells(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "state": {"running": {}}},
                {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            ],
        }));
        assert_eq!(
            status, "NotReady",
            "Completed with a container still running"
        );
        let (_, status, _) = pod_cells(json!({"phase": "Pending", "reason": "Evicted"}));
        assert_eq!(status, "Evicted");
        let (_, status, _) = pod_cells(json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
        }));
        assert_eq!(status, "SchedulingGated");
    }

    #[test]
    fn init_containers_show_their_progress() {
        let mut pod = pod_with(json!({
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "state": {"running": {}}},
            ],
        }));
        pod["spec"]["initContainers"] =
            json!([{"name": "i1"}, {"name": "i2"}, {"name": "side", "restartPolicy": "Always"}]);
        let cells = cells(Printer::Pod, pod.clone());
        assert_eq!(
            cells[1], "0/3",
            "a restartable init container counts as a container"
        );
        assert_eq!(cells[2], "Init:1/3");
        pod["status"]["initContainerStatuses"][1]["state"] =
            json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert_eq!(
            super::row(&Printer::Pod, &pod, now()).cells[2],
            "Init:CrashLoopBackOff"
        );
        pod["status"]["initContainerStatuses"][1]["state"] =
            json!({"terminated": {"exitCode": 1, "reason": "Error"}});
        assert_eq!(
            super::row(&Printer::Pod, &pod, now()).cells[2],
            "Init:Error"
        );
    }

    #[test]
    fn restarts_show_when_the_last_one_was() {
        let (_, _, restarts) = pod_cells(json!({
            "phase": "Running",
            "containerStatuses": [
                {"name": "a", "restartCount": 3, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T12:05:00Z"}}},
                {"name": "b", "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T12:01:00Z"}}},
            ],
        }));
        assert_eq!(
            restarts, "5 (5m ago)",
            "the latest restart of any container"
        );
        let (_, _, restarts) = pod_cells(json!({
            "phase": "Running",
            "containerStatuses": [{"name": "a", "restartCount": 4, "state": {"running": {}}}],
        }));
        assert_eq!(restarts, "4", "no termination time, no suffix");
    }

    #[test]
    fn deleting_pods_are_terminating_unless_finished_and_finished_pods_are_completed_rows() {
        let mut pod = pod_with(json!({"phase": "Running"}));
        pod["metadata"]["deletionTimestamp"] = json!(CREATED);
        assert_eq!(cells(Printer::Pod, pod.clone())[2], "Terminating");
        pod["status"] = json!({"phase": "Running", "reason": "NodeLost"});
        assert_eq!(cells(Printer::Pod, pod.clone())[2], "Unknown");
        pod["status"] = json!({"phase": "Succeeded"});
        let row = row(&Printer::Pod, &pod, now());
        assert_eq!(row.cells[2], "Succeeded");
        assert_eq!(
            row.conditions,
            [
                json!({"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."})
            ]
        );
    }

    #[test]
    fn deployments_and_replica_sets_print_replicas_containers_and_selectors() {
        let template = json!({"spec": {"containers": [
            {"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}
        ]}});
        let deployment = json!({
            "metadata": {"name": "d", "creationTimestamp": CREATED},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}}, "template": template},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
        });
        assert_eq!(
            cells(Printer::Deployment, deployment),
            [
                json!("d"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("10m"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("app=d")
            ]
        );
        let defaulted = json!({"metadata": {"name": "d"}, "spec": {"selector": {
            "matchExpressions": [{"key": "a", "operator": "Bogus"}]}}});
        let cells_of = cells(Printer::Deployment, defaulted);
        assert_eq!(cells_of[1], "0/1", "replicas default to 1");
        assert_eq!(cells_of[4], "<unknown>");
        assert_eq!(cells_of[7], "<invalid>");
        let replica_set = json!({
            "metadata": {"name": "rs"},
            "spec": {"replicas": 2, "template": template},
            "status": {"replicas": 2, "readyReplicas": 1},
        });
        let rs = cells(Printer::ReplicaSet, replica_set);
        assert_eq!(rs[..4], [json!("rs"), json!(2), json!(2), json!(1)]);
        assert_eq!(rs[7], "<none>", "FormatLabelSelector of no selector");
    }

    #[test]
    fn services_print_type_addresses_and_ports() {
        let service = |spec: Value, status: Value| {
            cells(
                Printer::Service,
                json!({"metadata": {"name": "s"}, "spec": spec, "status": status}),
            )
        };
        let cluster = service(
            json!({"clusterIP": "10.96.0.10", "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
                   "selector": {"b": "2", "a": "1"}}),
            json!({}),
        );
        assert_eq!(
            cluster,
            [
                json!("s"),
                json!("ClusterIP"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80/TCP,53/UDP"),
                json!("<unknown>"),
                json!("a=1,b=2")
            ]
        );
        let pending = service(
            json!({"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 443, "nodePort": 30443, "protocol": "TCP"}]}),
            json!({}),
        );
        assert_eq!(
            pending[2..5],
            [
                json!("10.0.0.1"),
                json!("<pending>"),
                json!("443:30443/TCP")
            ]
        );
        assert_eq!(pending[6], "<none>");
        let balanced = service(
            json!({"type": "LoadBalancer", "externalIPs": ["9.9.9.9"]}),
            json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "1.2.3.4"}]}}),
        );
        assert_eq!(balanced[3], "1.2.3.4,lb.example,9.9.9.9");
        assert_eq!(balanced[4], "<none>");
        let external = service(
            json!({"type": "ExternalName", "externalName": "db.example"}),
            json!({}),
        );
        assert_eq!(external[2..4], [json!("<none>"), json!("db.example")]);
    }

    #[test]
    fn config_maps_and_secrets_count_their_keys_as_integers() {
        let config_map = json!({"metadata": {"name": "c", "creationTimestamp": CREATED},
                                "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(
            cells(Printer::ConfigMap, config_map),
            [json!("c"), json!(3), json!("10m")]
        );
        let secret = json!({"metadata": {"name": "s"}, "data": {"a": "MQ=="}, "stringData": {"a": "1", "b": "2"}});
        assert_eq!(
            cells(Printer::Secret, secret),
            [json!("s"), json!("Opaque"), json!(2), json!("<unknown>")]
        );
    }

    #[test]
    fn namespaces_and_leases_print_phase_and_holder() {
        let ns = json!({"metadata": {"name": "default", "creationTimestamp": CREATED}, "status": {"phase": "Active"}});
        assert_eq!(
            cells(Printer::Namespace, ns),
            [json!("default"), json!("Active"), json!("10m")]
        );
        let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}});
        assert_eq!(cells(Printer::Lease, lease)[1], "me");
        assert_eq!(
            cells(Printer::Lease, json!({"metadata": {"name": "l"}}))[1],
            ""
        );
    }

    #[test]
    fn nodes_print_readiness_roles_version_and_wide_info() {
        let node = json!({
            "metadata": {"name": "n1", "creationTimestamp": CREATED, "labels": {
                "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
                "kubernetes.io/role": "worker", "other": "y"}},
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
                "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "172.18.0.2"}],
                "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian"},
            },
        });
        assert_eq!(
            cells(Printer::Node, node),
            [
                json!("n1"),
                json!("NotReady,SchedulingDisabled"),
                json!("control-plane,worker"),
                json!("10m"),
                json!("v1.32.0"),
                json!("172.18.0.2"),
                json!("<none>"),
                json!("Debian"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
        let bare = cells(Printer::Node, json!({"metadata": {"name": "n2"}}));
        assert_eq!(bare[1..3], [json!("Unknown"), json!("<none>")]);
    }

    #[test]
    fn events_print_times_object_source_and_count() {
        let event = json!({
            "metadata": {"name": "web.17a"},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{a}"},
            "reason": "Pulled", "type": "Normal", "message": " pulled image \n",
            "firstTimestamp": "2024-05-01T12:01:00Z", "lastTimestamp": "2024-05-01T12:08:00Z",
            "count": 4, "source": {"component": "kubelet", "host": "n1"},
        });
        assert_eq!(
            cells(Printer::Event, event),
            [
                json!("2m"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/web"),
                json!("spec.containers{a}"),
                json!("kubelet, n1"),
                json!("pulled image"),
                json!("9m"),
                json!(4),
                json!("web.17a")
            ]
        );
        let singleton = json!({
            "metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
            "eventTime": "2024-05-01T12:09:30.000000Z", "reportingComponent": "scheduler",
        });
        let singleton = cells(Printer::Event, singleton);
        assert_eq!(
            singleton[0], "30s",
            "last seen falls back to first seen, from eventTime"
        );
        assert_eq!(singleton[3], "node");
        assert_eq!(singleton[5], "scheduler");
        assert_eq!(singleton[8], 1, "singleton events count 1");
        let series = json!({
            "metadata": {"name": "e"}, "count": 9, "eventTime": CREATED,
            "series": {"count": 7, "lastObservedTime": "2024-05-01T12:09:00.000000Z"},
        });
        let series = cells(Printer::Event, series);
        assert_eq!(
            (series[0].clone(), series[8].clone()),
            (json!("60s"), json!(7))
        );
    }

    #[test]
    fn events_k8s_io_events_print_like_core_events() {
        let event = json!({
            "metadata": {"name": "e"},
            "regarding": {"kind": "Deployment", "name": "web"},
            "note": "Scaled up", "reason": "ScalingReplicaSet", "type": "Normal",
            "eventTime": "2024-05-01T12:09:00.000000Z", "reportingController": "deployment-controller",
            "reportingInstance": "kcm-1",
        });
        let cells = cells(Printer::EventV1, event);
        assert_eq!(
            cells[..7],
            [
                json!("60s"),
                json!("Normal"),
                json!("ScalingReplicaSet"),
                json!("deployment/web"),
                json!(""),
                json!("deployment-controller, kcm-1"),
                json!("Scaled up")
            ]
        );
    }

    #[test]
    fn the_default_convertor_prints_name_and_creation_time_in_rfc3339() {
        let job =
            json!({"metadata": {"name": "j", "creationTimestamp": "2024-05-01T14:00:00+02:00"}});
        assert_eq!(cells(Printer::Default, job), [json!("j"), json!(CREATED)]);
        assert_eq!(
            cells(Printer::Default, json!({"metadata": {"name": "j"}}))[1],
            "0001-01-01T00:00:00Z",
            "Go's zero time"
        );
        let columns = columns(&Printer::Default);
        assert_eq!((columns[1].name, columns[1].kind), ("Created At", "date"));
    }

    #[test]
    fn scales_print_desired_and_available_replicas() {
        let scale = json!({"metadata": {"name": "web", "creationTimestamp": CREATED},
                           "spec": {"replicas": 3}, "status": {"replicas": 1}});
        assert_eq!(
            cells(Printer::Scale, scale),
            [json!("web"), json!(3), json!(1), json!("10m")]
        );
        assert_eq!(columns(&Printer::Scale)[0].format, "");
    }
}
