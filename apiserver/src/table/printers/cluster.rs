//! The printers of the kinds that configure the cluster rather than run workloads:
//! ComponentStatuses, APIServices (kube-aggregator's own convertor,
//! `pkg/registry/apiservice/etcd/etcd.go`), CertificateSigningRequests, the CSI kinds and
//! VolumeAttachments, webhook configurations and ValidatingAdmissionPolicies with their
//! bindings, RuntimeClasses, FlowSchemas and PriorityLevelConfigurations (`printComponentStatus`,
//! `printCertificateSigningRequest`, `printCSIDriver`, `printCSINode`,
//! `printCSIStorageCapacity`, `printVolumeAttachment`, `printMutatingWebhook`,
//! `printValidatingWebhook`, `printValidatingAdmissionPolicy`,
//! `printValidatingAdmissionPolicyBinding`, `printRuntimeClass`, `printFlowSchema`,
//! `printPriorityLevelConfiguration` of `printers.go`).
//!
//! Upstream describes the CSR columns with `certificates/v1beta1`'s field documentation; the
//! texts here are `certificates/v1`'s (the only one the schemas carry), and a FlowSchema list is
//! printed in stored order where upstream sorts it by matching precedence.

use serde_json::{Value, json};

use super::super::duration::human_duration;
use super::{AGE, Column, NAME, age, column, docs, field, flag, int, list, name, quantity, text};

/// Go's `time.Second` in nanoseconds.
const SECOND_NANOS: i64 = 1_000_000_000;

pub(super) const COMPONENT_STATUS_COLUMNS: &[Column] = &[
    NAME,
    column("Status", "string", docs::COMPONENT_STATUS),
    column("Message", "string", docs::COMPONENT_MESSAGE),
    column("Error", "string", docs::COMPONENT_ERROR),
];

pub(super) const API_SERVICE_COLUMNS: &[Column] = &[
    NAME,
    column("Service", "string", docs::API_SERVICE_SERVICE),
    column("Available", "string", docs::API_SERVICE_AVAILABLE),
    AGE,
];

pub(super) const CERTIFICATE_SIGNING_REQUEST_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    column("SignerName", "string", docs::CSR_SIGNER_NAME),
    column("Requestor", "string", docs::CSR_REQUEST),
    column("RequestedDuration", "string", docs::CSR_EXPIRATION_SECONDS),
    column("Condition", "string", docs::CSR_CONDITIONS),
];

pub(super) const CSI_DRIVER_COLUMNS: &[Column] = &[
    NAME,
    column(
        "AttachRequired",
        "boolean",
        docs::CSI_DRIVER_ATTACH_REQUIRED,
    ),
    column(
        "PodInfoOnMount",
        "boolean",
        docs::CSI_DRIVER_POD_INFO_ON_MOUNT,
    ),
    column(
        "StorageCapacity",
        "boolean",
        docs::CSI_DRIVER_STORAGE_CAPACITY,
    ),
    column("TokenRequests", "string", docs::CSI_DRIVER_TOKEN_REQUESTS),
    column(
        "RequiresRepublish",
        "boolean",
        docs::CSI_DRIVER_REQUIRES_REPUBLISH,
    ),
    column("Modes", "string", docs::CSI_DRIVER_MODES),
    AGE,
];

pub(super) const CSI_NODE_COLUMNS: &[Column] = &[
    NAME,
    column("Drivers", "integer", docs::CSI_NODE_DRIVERS),
    AGE,
];

pub(super) const CSI_STORAGE_CAPACITY_COLUMNS: &[Column] = &[
    NAME,
    column(
        "StorageClassName",
        "string",
        docs::CSI_STORAGE_CAPACITY_CLASS,
    ),
    column("Capacity", "string", docs::CSI_STORAGE_CAPACITY_CAPACITY),
];

/// Upstream gives the Attacher column the `name` format too.
pub(super) const VOLUME_ATTACHMENT_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Attacher",
        kind: "string",
        format: "name",
        description: docs::VOLUME_ATTACHMENT_ATTACHER,
        priority: 0,
    },
    column("PV", "string", docs::VOLUME_ATTACHMENT_PV),
    column("Node", "string", docs::VOLUME_ATTACHMENT_NODE),
    column("Attached", "boolean", docs::VOLUME_ATTACHMENT_ATTACHED),
    AGE,
];

pub(super) const WEBHOOK_CONFIGURATION_COLUMNS: &[Column] =
    &[NAME, column("Webhooks", "integer", docs::WEBHOOKS), AGE];

pub(super) const VALIDATING_ADMISSION_POLICY_COLUMNS: &[Column] = &[
    NAME,
    column("Validations", "integer", docs::VAP_VALIDATIONS),
    column("ParamKind", "string", docs::VAP_PARAM_KIND),
    AGE,
];

pub(super) const VALIDATING_ADMISSION_POLICY_BINDING_COLUMNS: &[Column] = &[
    NAME,
    column("PolicyName", "string", docs::VAPB_POLICY_NAME),
    column("ParamRef", "string", docs::VAPB_PARAM_REF),
    AGE,
];

/// Upstream describes the Handler column with `ObjectMeta`'s (absent) `handler` doc: empty.
pub(super) const RUNTIME_CLASS_COLUMNS: &[Column] = &[NAME, column("Handler", "string", ""), AGE];

pub(super) const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    column("PriorityLevel", "string", docs::FLOW_SCHEMA_PRIORITY_LEVEL),
    column(
        "MatchingPrecedence",
        "string",
        docs::FLOW_SCHEMA_MATCHING_PRECEDENCE,
    ),
    column(
        "DistinguisherMethod",
        "string",
        docs::FLOW_SCHEMA_DISTINGUISHER,
    ),
    AGE,
    column("MissingPL", "string", docs::FLOW_SCHEMA_MISSING_PL),
];

pub(super) const PRIORITY_LEVEL_CONFIGURATION_COLUMNS: &[Column] = &[
    NAME,
    column("Type", "string", docs::PRIORITY_LEVEL_TYPE),
    column(
        "NominalConcurrencyShares",
        "string",
        docs::PRIORITY_LEVEL_SHARES,
    ),
    column("Queues", "string", docs::PRIORITY_LEVEL_QUEUES),
    column("HandSize", "string", docs::PRIORITY_LEVEL_HAND_SIZE),
    column(
        "QueueLengthLimit",
        "string",
        docs::PRIORITY_LEVEL_QUEUE_LENGTH,
    ),
    AGE,
];

/// The condition of `kind` in the object's `conditions` at `path`.
fn condition<'a>(object: &'a Value, path: &[&str], kind: &str) -> Option<&'a Value> {
    list(object, path)
        .iter()
        .find(|condition| text(condition, &["type"]) == kind)
}

/// `printComponentStatus`: the `Healthy` condition's status, message and error.
pub(super) fn component_status(status: &Value) -> Vec<Value> {
    let (state, message, error) = match condition(status, &["conditions"], "Healthy") {
        Some(healthy) => (
            if text(healthy, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            text(healthy, &["message"]),
            text(healthy, &["error"]),
        ),
        None => ("Unknown", "", ""),
    };
    vec![
        json!(name(status)),
        json!(state),
        json!(message),
        json!(error),
    ]
}

/// The aggregator's APIService row: `Local` or `namespace/name` of its service, and the
/// `Available` condition (`False (reason)` when not true and a reason is given).
pub(super) fn api_service(service: &Value, now: i128) -> Vec<Value> {
    let target = match field(service, &["spec", "service"]) {
        Some(reference) => format!(
            "{}/{}",
            text(reference, &["namespace"]),
            text(reference, &["name"])
        ),
        None => "Local".to_owned(),
    };
    let available = match condition(service, &["status", "conditions"], "Available") {
        None => "Unknown".to_owned(),
        Some(available) => {
            let status = text(available, &["status"]);
            let reason = text(available, &["reason"]);
            if status == "True" || reason.is_empty() {
                status.to_owned()
            } else {
                format!("{status} ({reason})")
            }
        }
    };
    vec![
        json!(name(service)),
        json!(target),
        json!(available),
        json!(age(service, now)),
    ]
}

/// `extractCSRStatus`: Denied, Approved or Pending, then `,Failed` and `,Issued`.
fn csr_condition(csr: &Value) -> String {
    let has = |kind: &str| condition(csr, &["status", "conditions"], kind).is_some();
    let mut status = if has("Denied") {
        "Denied".to_owned()
    } else if has("Approved") {
        "Approved".to_owned()
    } else {
        "Pending".to_owned()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(csr, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// `printCertificateSigningRequest`.
pub(super) fn certificate_signing_request(csr: &Value, now: i128) -> Vec<Value> {
    let signer = match text(csr, &["spec", "signerName"]) {
        "" => "<none>",
        signer => signer,
    };
    let requested = match field(csr, &["spec", "expirationSeconds"]).and_then(Value::as_i64) {
        Some(seconds) => human_duration(seconds.saturating_mul(SECOND_NANOS)),
        None => "<none>".to_owned(),
    };
    vec![
        json!(name(csr)),
        json!(age(csr, now)),
        json!(signer),
        json!(text(csr, &["spec", "username"])),
        json!(requested),
        json!(csr_condition(csr)),
    ]
}

/// A boolean pointer read with its default.
fn flag_or(value: &Value, path: &[&str], default: bool) -> bool {
    field(value, path)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// `printCSIDriver`.
pub(super) fn csi_driver(driver: &Value, now: i128) -> Vec<Value> {
    let modes: Vec<&str> = list(driver, &["spec", "volumeLifecycleModes"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let modes = if modes.is_empty() {
        "<none>".to_owned()
    } else {
        modes.join(",")
    };
    let token_requests = match field(driver, &["spec", "tokenRequests"]).and_then(Value::as_array) {
        Some(requests) => requests
            .iter()
            .map(|request| text(request, &["audience"]))
            .collect::<Vec<_>>()
            .join(","),
        None => "<unset>".to_owned(),
    };
    vec![
        json!(name(driver)),
        json!(flag_or(driver, &["spec", "attachRequired"], true)),
        json!(flag(driver, &["spec", "podInfoOnMount"])),
        json!(flag(driver, &["spec", "storageCapacity"])),
        json!(token_requests),
        json!(flag(driver, &["spec", "requiresRepublish"])),
        json!(modes),
        json!(age(driver, now)),
    ]
}

/// `printCSINode`: how many drivers it lists.
pub(super) fn csi_node(node: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(node)),
        json!(list(node, &["spec", "drivers"]).len()),
        json!(age(node, now)),
    ]
}

/// `printCSIStorageCapacity` (no age column).
pub(super) fn csi_storage_capacity(capacity: &Value) -> Vec<Value> {
    vec![
        json!(name(capacity)),
        json!(text(capacity, &["storageClassName"])),
        json!(quantity(capacity, &["capacity"]).unwrap_or_else(|| "<unset>".to_owned())),
    ]
}

/// `printVolumeAttachment`.
pub(super) fn volume_attachment(attachment: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(attachment)),
        json!(text(attachment, &["spec", "attacher"])),
        json!(text(
            attachment,
            &["spec", "source", "persistentVolumeName"]
        )),
        json!(text(attachment, &["spec", "nodeName"])),
        json!(flag(attachment, &["status", "attached"])),
        json!(age(attachment, now)),
    ]
}

/// `printMutatingWebhook` and `printValidatingWebhook`: how many webhooks.
pub(super) fn webhook_configuration(configuration: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(configuration)),
        json!(list(configuration, &["webhooks"]).len()),
        json!(age(configuration, now)),
    ]
}

/// `printValidatingAdmissionPolicy`.
pub(super) fn validating_admission_policy(policy: &Value, now: i128) -> Vec<Value> {
    let param_kind = match field(policy, &["spec", "paramKind"]) {
        Some(kind) => format!("{}/{}", text(kind, &["apiVersion"]), text(kind, &["kind"])),
        None => "<unset>".to_owned(),
    };
    vec![
        json!(name(policy)),
        json!(list(policy, &["spec", "validations"]).len()),
        json!(param_kind),
        json!(age(policy, now)),
    ]
}

/// `printValidatingAdmissionPolicyBinding`: the parameter as `namespace/name`, `*/name`, or
/// its selector.
pub(super) fn validating_admission_policy_binding(binding: &Value, now: i128) -> Vec<Value> {
    let param = match field(binding, &["spec", "paramRef"]) {
        None => "<unset>".to_owned(),
        Some(reference) => match (
            text(reference, &["name"]),
            text(reference, &["namespace"]),
            field(reference, &["selector"]),
        ) {
            ("", _, Some(selector)) => kubemock_apimachinery::go::label_selector_string(selector),
            ("", _, None) => "<unset>".to_owned(),
            (name, "", _) => format!("*/{name}"),
            (name, namespace, _) => format!("{namespace}/{name}"),
        },
    };
    vec![
        json!(name(binding)),
        json!(text(binding, &["spec", "policyName"])),
        json!(param),
        json!(age(binding, now)),
    ]
}

/// `printRuntimeClass`.
pub(super) fn runtime_class(class: &Value, now: i128) -> Vec<Value> {
    vec![
        json!(name(class)),
        json!(text(class, &["handler"])),
        json!(age(class, now)),
    ]
}

/// `printFlowSchema`: the `Dangling` condition's status in MissingPL (`?` without one).
pub(super) fn flow_schema(schema: &Value, now: i128) -> Vec<Value> {
    let distinguisher = match text(schema, &["spec", "distinguisherMethod", "type"]) {
        "" if field(schema, &["spec", "distinguisherMethod"]).is_none() => "<none>",
        method => method,
    };
    let missing = condition(schema, &["status", "conditions"], "Dangling")
        .map_or("?", |dangling| text(dangling, &["status"]));
    vec![
        json!(name(schema)),
        json!(text(
            schema,
            &["spec", "priorityLevelConfiguration", "name"]
        )),
        json!(int(schema, &["spec", "matchingPrecedence"])),
        json!(distinguisher),
        json!(age(schema, now)),
        json!(missing),
    ]
}

/// `printPriorityLevelConfiguration`: the limited level's shares and queuing, `<none>` for
/// what it does not have.
pub(super) fn priority_level_configuration(level: &Value, now: i128) -> Vec<Value> {
    let none = || json!("<none>");
    let limited = field(level, &["spec", "limited"]);
    let shares = limited.map_or_else(none, |limited| {
        json!(int(limited, &["nominalConcurrencyShares"]))
    });
    let queuing = limited.and_then(|limited| field(limited, &["limitResponse", "queuing"]));
    let of_queuing = |key: &str| queuing.map_or_else(none, |queuing| json!(int(queuing, &[key])));
    vec![
        json!(name(level)),
        json!(text(level, &["spec", "type"])),
        shares,
        of_queuing("queues"),
        of_queuing("handSize"),
        of_queuing("queueLengthLimit"),
        json!(age(level, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{CREATED, cells};
    use super::*;
    use crate::registry::Printer;

    #[test]
    fn component_statuses_print_their_healthy_condition() {
        let healthy = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            cells(Printer::ComponentStatus, healthy),
            [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
        let unknown = json!({"metadata": {"name": "scheduler"}});
        assert_eq!(cells(Printer::ComponentStatus, unknown)[1], "Unknown");
    }

    #[test]
    fn api_services_print_local_or_their_service_and_availability() {
        let local = json!({"metadata": {"name": "v1.apps", "creationTimestamp": CREATED},
            "spec": {"group": "apps", "version": "v1"},
            "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(
            cells(Printer::ApiService, local),
            [
                json!("v1.apps"),
                json!("Local"),
                json!("True"),
                json!("10m")
            ]
        );
        let remote = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {"conditions": [{"type": "Available", "status": "False",
                "reason": "MissingEndpoints"}]}});
        let row = cells(Printer::ApiService, remote);
        assert_eq!(row[1], "kube-system/metrics-server");
        assert_eq!(row[2], "False (MissingEndpoints)");
    }

    #[test]
    fn certificate_signing_requests_print_signer_requestor_duration_and_condition() {
        let csr = json!({"metadata": {"name": "alice", "creationTimestamp": CREATED},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "admin",
                     "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}],
                       "certificate": "LS0t"}});
        assert_eq!(
            cells(Printer::CertificateSigningRequest, csr),
            [
                json!("alice"),
                json!("10m"),
                json!("kubernetes.io/kube-apiserver-client"),
                json!("admin"),
                json!("24h"),
                json!("Approved,Issued")
            ]
        );
        let pending = json!({"metadata": {"name": "bob"}, "spec": {}});
        let row = cells(Printer::CertificateSigningRequest, pending);
        assert_eq!(
            row[2..],
            [
                json!("<none>"),
                json!(""),
                json!("<none>"),
                json!("Pending")
            ]
        );
    }

    #[test]
    fn flow_control_kinds_print_their_levels() {
        let schema = json!({"metadata": {"name": "exempt"},
            "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        let row = cells(Printer::FlowSchema, schema);
        assert_eq!(
            row[..4],
            [json!("exempt"), json!("exempt"), json!(1), json!("<none>")]
        );
        assert_eq!(row[5], "False");
        let level = json!({"metadata": {"name": "workload-low"}, "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
        let row = cells(Printer::PriorityLevelConfiguration, level);
        assert_eq!(
            row[..6],
            [
                json!("workload-low"),
                json!("Limited"),
                json!(100),
                json!(128),
                json!(6),
                json!(50)
            ]
        );
        let exempt = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        assert_eq!(
            cells(Printer::PriorityLevelConfiguration, exempt)[2],
            "<none>"
        );
    }

    #[test]
    fn admission_configuration_kinds_count_their_rules() {
        let webhooks = json!({"metadata": {"name": "w"}, "webhooks": [{}, {}]});
        assert_eq!(cells(Printer::WebhookConfiguration, webhooks)[1], 2);
        let policy = json!({"metadata": {"name": "p"}, "spec": {"validations": [{}],
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(
            cells(Printer::ValidatingAdmissionPolicy, policy)[1..3],
            [json!(1), json!("v1/ConfigMap")]
        );
        let binding = |reference: Value| {
            cells(
                Printer::ValidatingAdmissionPolicyBinding,
                json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": reference}}),
            )[2]
            .clone()
        };
        assert_eq!(binding(json!({"name": "cfg", "namespace": "ns"})), "ns/cfg");
        assert_eq!(binding(json!({"name": "cfg"})), "*/cfg");
        assert_eq!(
            binding(json!({"selector": {"matchLabels": {"b": "2", "a": "1"}}})),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
    }

    #[test]
    fn storage_driver_kinds_print_their_defaults() {
        let driver = json!({"metadata": {"name": "csi.example.com"}, "spec": {}});
        assert_eq!(
            cells(Printer::CsiDriver, driver)[1..7],
            [
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("<none>")
            ]
        );
        let capacity = json!({"metadata": {"name": "c"}, "storageClassName": "fast"});
        assert_eq!(
            cells(Printer::CsiStorageCapacity, capacity),
            [json!("c"), json!("fast"), json!("<unset>")]
        );
        let attachment = json!({"metadata": {"name": "a"}, "spec": {"attacher": "csi",
            "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}},
            "status": {"attached": true}});
        assert_eq!(
            cells(Printer::VolumeAttachment, attachment)[..5],
            [
                json!("a"),
                json!("csi"),
                json!("pv1"),
                json!("n1"),
                json!(true)
            ]
        );
    }
}
