//! Pods and pod templates: the defaults of `pkg/apis/core/v1/defaults.go` (a pod spec's and
//! every container's, applied to pods and to the templates inside workloads alike), what the
//! admission plugins of a real cluster add to a created pod (service account and its token
//! volume, default tolerations, priority), its initial status, the spec validation of
//! `pkg/apis/core/validation` that users meet most, and the immutability of a pod's spec.

use std::collections::BTreeMap;

use kubemock_apimachinery::quantity::Quantity;
use kubemock_apimachinery::validation;
use serde_json::{Map, Value, json};

use super::fields::{
    at, child, child_if, default_to, duplicate, each_object_mut, forbidden, go_str, go_value,
    immutable, invalid, items, not_found, not_supported, required, str_at,
};
use crate::meta::{self, FieldError};
use crate::object::Object;

/// `v1.DefaultTerminationGracePeriodSeconds`.
const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// The default toleration of the DefaultTolerationSeconds admission plugin.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;
/// The taints DefaultTolerationSeconds tolerates for a while.
const DEFAULT_TOLERATED_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];
/// Where the ServiceAccount admission plugin mounts the token volume.
const SERVICE_ACCOUNT_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// File mode of secret, config map, downward API and projected volumes (0644).
const DEFAULT_VOLUME_MODE: i64 = 420;
/// Priorities of the built-in priority classes.
pub(super) const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];
/// The container lists of a pod spec, in validation order.
const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];
/// What `kubectl` and users read when a pod update changes more than it may.
const POD_UPDATE_FORBIDDEN: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `SetDefaults_PodSpec` and the defaults of what a pod spec holds (containers, probes,
/// volumes): for pods and pod templates.
pub(super) fn default_pod_spec(spec: &mut Map<String, Value>) {
    default_to(spec, "dnsPolicy", json!("ClusterFirst"));
    default_to(spec, "restartPolicy", json!("Always"));
    default_to(spec, "securityContext", json!({}));
    default_to(
        spec,
        "terminationGracePeriodSeconds",
        json!(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS),
    );
    default_to(spec, "schedulerName", json!("default-scheduler"));
    if spec.get("serviceAccountName").is_none()
        && let Some(account) = spec.get("serviceAccount").cloned()
    {
        spec.insert("serviceAccountName".to_owned(), account);
    }
    for list in CONTAINER_LISTS {
        for container in each_object_mut(spec, list) {
            default_container(container);
        }
    }
    for volume in each_object_mut(spec, "volumes") {
        default_volume(volume);
    }
}

/// `SetDefaults_Container` plus the container's ports, probes and env.
fn default_container(container: &mut Map<String, Value>) {
    if container
        .get("imagePullPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image) == "latest" {
            "Always"
        } else {
            "IfNotPresent"
        };
        container.insert("imagePullPolicy".to_owned(), json!(policy));
    }
    default_to(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    default_to(container, "terminationMessagePolicy", json!("File"));
    // ResourceRequirements is a struct, so it is always serialised.
    default_to(container, "resources", json!({}));
    for port in each_object_mut(container, "ports") {
        default_to(port, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = child_if(container, probe) {
            default_to(probe, "timeoutSeconds", json!(1));
            default_to(probe, "periodSeconds", json!(10));
            default_to(probe, "successThreshold", json!(1));
            default_to(probe, "failureThreshold", json!(3));
            if let Some(get) = child_if(probe, "httpGet") {
                default_to(get, "path", json!("/"));
                default_to(get, "scheme", json!("HTTP"));
            }
        }
    }
    if let Some(lifecycle) = child_if(container, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(get) = child_if(lifecycle, hook).and_then(|h| child_if(h, "httpGet")) {
                default_to(get, "path", json!("/"));
                default_to(get, "scheme", json!("HTTP"));
            }
        }
    }
    for env in each_object_mut(container, "env") {
        if let Some(field_ref) = child_if(env, "valueFrom").and_then(|v| child_if(v, "fieldRef")) {
            default_to(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// `SetDefaults_Volume` and the volume sources' modes.
fn default_volume(volume: &mut Map<String, Value>) {
    if volume.keys().all(|k| k == "name") {
        volume.insert("emptyDir".to_owned(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = child_if(volume, source) {
            default_to(source, "defaultMode", json!(DEFAULT_VOLUME_MODE));
        }
    }
    if let Some(host_path) = child_if(volume, "hostPath") {
        default_to(host_path, "type", json!(""));
    }
    for item in child_if(volume, "downwardAPI")
        .into_iter()
        .flat_map(|d| each_object_mut(d, "items"))
    {
        if let Some(field_ref) = child_if(item, "fieldRef") {
            default_to(field_ref, "apiVersion", json!("v1"));
        }
    }
    if let Some(projected) = child_if(volume, "projected") {
        for source in each_object_mut(projected, "sources") {
            if let Some(token) = child_if(source, "serviceAccountToken") {
                default_to(token, "expirationSeconds", json!(3600));
            }
        }
    }
}

/// The tag of an image reference (`latest` when it has neither tag nor digest), as
/// `parsers.ParseImageName` finds it.
fn image_tag(image: &str) -> &str {
    if image.contains('@') {
        return "";
    }
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    match last_segment.rsplit_once(':') {
        Some((_, tag)) => tag,
        None => "latest",
    }
}

/// Defaults of a pod template (`spec.template` of workloads).
pub(super) fn default_template(template: &mut Map<String, Value>) {
    default_pod_spec(child(template, "spec"));
}

/// `SetDefaults_Pod`: the pod spec's defaults and the pod-only ones.
pub(super) fn default_pod(pod: &mut Object) {
    let spec = child(pod, "spec");
    default_pod_spec(spec);
    default_to(spec, "enableServiceLinks", json!(true));
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in ["initContainers", "containers"] {
        for container in each_object_mut(spec, list) {
            // Requests default to the limits.
            let limits = at(&Value::Object(container.clone()), &["resources", "limits"])
                .and_then(Value::as_object)
                .cloned();
            if let Some(limits) = limits {
                let requests = child(child(container, "resources"), "requests");
                for (name, value) in limits {
                    requests.entry(name).or_insert(value);
                }
            }
            if host_network {
                for port in each_object_mut(container, "ports") {
                    if let Some(container_port) = port.get("containerPort").cloned() {
                        default_to(port, "hostPort", container_port);
                    }
                }
            }
        }
    }
}

/// What a created pod gets besides its defaults in a real cluster: the ServiceAccount plugin's
/// account name and token volume (unless `service_accounts` is false: the plugin disabled by
/// `--disable-admission-plugins=ServiceAccount`, as envtest starts kube-apiserver),
/// DefaultTolerationSeconds' tolerations, Priority's priority, and the registry's initial
/// status (phase Pending, QoS class).
pub(super) fn admit_new_pod(pod: &mut Object, service_accounts: bool) {
    let spec = child(pod, "spec");
    if service_accounts {
        default_to(spec, "serviceAccountName", json!("default"));
    }
    // `serviceAccount` is the deprecated mirror of `serviceAccountName`, written by the v1
    // conversion (`Convert_core_PodSpec_To_v1_PodSpec`) whether or not the plugin ran.
    if let Some(account) = spec.get("serviceAccountName").cloned() {
        spec.insert("serviceAccount".to_owned(), account);
    }
    if service_accounts
        && spec
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            != Some(false)
    {
        mount_token_volume(spec);
    }
    add_default_tolerations(spec);
    default_to(spec, "priority", json!(0));
    default_to(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let qos = qos_class(spec);
    pod.insert(
        "status".to_owned(),
        json!({"phase": "Pending", "qosClass": qos}),
    );
}

/// The ServiceAccount admission plugin's projected token volume, mounted read-only in every
/// container that does not mount something at its path already.
fn mount_token_volume(spec: &mut Map<String, Value>) {
    let mounted = |c: &Value| {
        items(Some(c), "volumeMounts")
            .iter()
            .any(|m| str_at(m, &["mountPath"]) == SERVICE_ACCOUNT_MOUNT_PATH)
    };
    let all: Vec<Value> = CONTAINER_LISTS
        .iter()
        .flat_map(|list| items(Some(&Value::Object(spec.clone())), list).to_vec())
        .collect();
    if all.iter().any(mounted) {
        return;
    }
    let name = meta::generate_name("kube-api-access-");
    let volume = json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
            "defaultMode": DEFAULT_VOLUME_MODE,
        },
    });
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Value::Array(volumes) = volumes {
        volumes.push(volume);
    }
    for list in ["initContainers", "containers"] {
        for container in each_object_mut(spec, list) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if let Value::Array(mounts) = mounts {
                mounts.push(json!({
                    "name": name,
                    "readOnly": true,
                    "mountPath": SERVICE_ACCOUNT_MOUNT_PATH,
                }));
            }
        }
    }
}

/// DefaultTolerationSeconds: tolerate not-ready and unreachable nodes for 300 s unless the pod
/// says otherwise.
fn add_default_tolerations(spec: &mut Map<String, Value>) {
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Value::Array(tolerations) = tolerations else {
        return;
    };
    for taint in DEFAULT_TOLERATED_TAINTS {
        let tolerated = tolerations.iter().any(|t| {
            let key = str_at(t, &["key"]);
            let effect = str_at(t, &["effect"]);
            (key == taint || (key.is_empty() && str_at(t, &["operator"]) == "Exists"))
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            tolerations.push(json!({
                "key": taint,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
            }));
        }
    }
}

/// The pod's QoS class, as upstream's `ComputePodQOS` (`pkg/apis/core/helper/qos/qos.go`):
/// only cpu and memory count, and only above zero; the requests and limits of every container
/// (init containers too) are summed per resource. No such request or limit: `BestEffort`.
/// Every container limiting both cpu and memory, and the summed requests equal to the summed
/// limits, resource by resource: `Guaranteed`. Else `Burstable`. A quantity that does not
/// parse counts as absent (validation refuses the pod anyway).
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    /// The resources QoS considers (`supportedQoSComputeResources`).
    const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];
    let mut requests: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut limits: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut guaranteed = true;
    for list in ["containers", "initContainers"] {
        for container in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let positive = |kind: &str| -> Vec<(&'static str, Quantity)> {
                QOS_RESOURCES
                    .iter()
                    .filter_map(|name| {
                        let text = at(container, &["resources", kind, name])?.as_str()?;
                        let quantity = Quantity::parse(text).ok()?;
                        (quantity.sign() > 0).then_some((*name, quantity))
                    })
                    .collect()
            };
            for (name, quantity) in positive("requests") {
                requests
                    .entry(name)
                    .or_insert_with(|| Quantity::new(0, quantity.format()))
                    .add(&quantity);
            }
            let found = positive("limits");
            if found.len() < QOS_RESOURCES.len() {
                guaranteed = false;
            }
            for (name, quantity) in found {
                limits
                    .entry(name)
                    .or_insert_with(|| Quantity::new(0, quantity.format()))
                    .add(&quantity);
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests == limits {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// `ValidatePodSpec`'s checks that matter most, under `path` (`spec`, `spec.template.spec`).
pub(super) fn validate_pod_spec(spec: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let Some(spec) = spec else {
        errors.push(required(format!("{path}.containers"), ""));
        return;
    };
    let volumes: Vec<&str> = items(Some(spec), "volumes")
        .iter()
        .map(|v| str_at(v, &["name"]))
        .collect();
    for (i, name) in volumes.iter().enumerate() {
        let field = format!("{path}.volumes[{i}].name");
        if name.is_empty() {
            errors.push(required(field, ""));
        } else if volumes[..i].contains(name) {
            errors.push(duplicate(field, go_str(name)));
        } else {
            label_errors(name, &field, errors);
        }
    }
    if items(Some(spec), "containers").is_empty() {
        errors.push(required(format!("{path}.containers"), ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for list in CONTAINER_LISTS {
        for (i, container) in items(Some(spec), list).iter().enumerate() {
            let at = format!("{path}.{list}[{i}]");
            let name = str_at(container, &["name"]);
            if name.is_empty() {
                errors.push(required(format!("{at}.name"), ""));
            } else {
                label_errors(name, &format!("{at}.name"), errors);
                if names.contains(&name) {
                    errors.push(duplicate(format!("{at}.name"), go_str(name)));
                }
                names.push(name);
            }
            validate_container(
                container,
                &at,
                &volumes,
                list == "ephemeralContainers",
                errors,
            );
        }
    }
    let restart = str_at(spec, &["restartPolicy"]);
    if !restart.is_empty() && !["Always", "OnFailure", "Never"].contains(&restart) {
        errors.push(not_supported(
            format!("{path}.restartPolicy"),
            restart,
            &["Always", "OnFailure", "Never"],
        ));
    }
    let dns = str_at(spec, &["dnsPolicy"]);
    let dns_policies = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
    if !dns.is_empty() && !dns_policies.contains(&dns) {
        errors.push(not_supported(
            format!("{path}.dnsPolicy"),
            dns,
            &dns_policies,
        ));
    }
    if let Some(seconds) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && seconds <= 0
    {
        errors.push(invalid(
            format!("{path}.activeDeadlineSeconds"),
            seconds.to_string(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for (i, toleration) in items(Some(spec), "tolerations").iter().enumerate() {
        let operator = str_at(toleration, &["operator"]);
        if !operator.is_empty() && !["Equal", "Exists"].contains(&operator) {
            errors.push(not_supported(
                format!("{path}.tolerations[{i}].operator"),
                operator,
                &["Equal", "Exists"],
            ));
        }
        let effect = str_at(toleration, &["effect"]);
        let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
        if !effect.is_empty() && !effects.contains(&effect) {
            errors.push(not_supported(
                format!("{path}.tolerations[{i}].effect"),
                effect,
                &effects,
            ));
        }
    }
}

/// One container's checks: image, pull policy, ports, volume mounts.
fn validate_container(
    container: &Value,
    at: &str,
    volumes: &[&str],
    ephemeral: bool,
    errors: &mut Vec<FieldError>,
) {
    let image = str_at(container, &["image"]);
    if image.is_empty() {
        errors.push(required(format!("{at}.image"), ""));
    } else if image.trim() != image {
        errors.push(invalid(
            format!("{at}.image"),
            go_str(image),
            "must not have leading or trailing whitespace",
        ));
    }
    let policy = str_at(container, &["imagePullPolicy"]);
    let policies = ["Always", "IfNotPresent", "Never"];
    if !policy.is_empty() && !policies.contains(&policy) {
        errors.push(not_supported(
            format!("{at}.imagePullPolicy"),
            policy,
            &policies,
        ));
    }
    if ephemeral {
        validate_ephemeral_fields(container, at, errors);
    }
    let mut port_names: Vec<&str> = Vec::new();
    for (j, port) in items(Some(container), "ports").iter().enumerate() {
        let port_at = format!("{at}.ports[{j}]");
        if ephemeral {
            // Refused as a whole above.
            continue;
        }
        match port.get("containerPort").and_then(Value::as_i64) {
            None | Some(0) => errors.push(required(format!("{port_at}.containerPort"), "")),
            Some(p) if !(1..=65535).contains(&p) => errors.push(invalid(
                format!("{port_at}.containerPort"),
                p.to_string(),
                "must be between 1 and 65535, inclusive",
            )),
            Some(_) => {}
        }
        let name = str_at(port, &["name"]);
        if !name.is_empty() {
            if port_names.contains(&name) {
                errors.push(duplicate(format!("{port_at}.name"), go_str(name)));
            }
            port_names.push(name);
        }
        let protocol = str_at(port, &["protocol"]);
        let protocols = ["SCTP", "TCP", "UDP"];
        if !protocol.is_empty() && !protocols.contains(&protocol) {
            errors.push(not_supported(
                format!("{port_at}.protocol"),
                protocol,
                &protocols,
            ));
        }
    }
    validate_resources(
        container.get("resources"),
        &format!("{at}.resources"),
        errors,
    );
    for (j, mount) in items(Some(container), "volumeMounts").iter().enumerate() {
        let name = str_at(mount, &["name"]);
        let field = format!("{at}.volumeMounts[{j}].name");
        if name.is_empty() {
            errors.push(required(field, ""));
        } else if !volumes.contains(&name) {
            errors.push(not_found(field, go_str(name)));
        }
        if str_at(mount, &["mountPath"]).is_empty() {
            errors.push(required(format!("{at}.volumeMounts[{j}].mountPath"), ""));
        }
    }
}

/// Upstream's `ValidateResourceRequirements` (`pkg/apis/core/validation/validation.go`) of a
/// container's `resources` at `at`: resource names, non-negative quantities, whole numbers for
/// extended resources, requests within limits (equal to them for resources that cannot be
/// overcommitted), hugepages only beside cpu or memory. The quantities were parsed when the
/// object was decoded; one that still does not parse is left to that.
fn validate_resources(resources: Option<&Value>, at: &str, errors: &mut Vec<FieldError>) {
    let list = |kind: &str| -> Vec<(&str, Quantity)> {
        resources
            .and_then(|r| r.get(kind))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, q)| Some((name.as_str(), Quantity::parse(q.as_str()?).ok()?)))
            .collect()
    };
    let (limits, requests) = (list("limits"), list("requests"));
    let mut cpu_or_memory = false;
    let mut hugepages = false;
    for (kind, entries) in [("limits", &limits), ("requests", &requests)] {
        for (name, quantity) in entries {
            let field = format!("{at}.{kind}[{name}]");
            resource_name_errors(name, &field, errors);
            if quantity.sign() < 0 {
                errors.push(invalid(
                    field.clone(),
                    go_str(&quantity.to_string()),
                    "must be greater than or equal to 0",
                ));
            }
            if is_extended_resource(name) && quantity.milli_value() % 1000 != 0 {
                errors.push(invalid(
                    field.clone(),
                    quantity.to_string(),
                    "must be an integer",
                ));
            }
            cpu_or_memory |= matches!(*name, "cpu" | "memory");
            hugepages |= name.starts_with("hugepages-");
        }
    }
    for (name, request) in &requests {
        let limit = limits.iter().find(|(n, _)| n == name).map(|(_, q)| q);
        let overcommit = is_native_resource(name) && !name.starts_with("hugepages-");
        match limit {
            Some(limit) if !overcommit && request.cmp(limit).is_ne() => errors.push(invalid(
                format!("{at}.requests"),
                go_str(&request.to_string()),
                &format!("must be equal to {name} limit of {limit}"),
            )),
            Some(limit) if request.cmp(limit).is_gt() => errors.push(invalid(
                format!("{at}.requests"),
                go_str(&request.to_string()),
                &format!("must be less than or equal to {name} limit of {limit}"),
            )),
            None if !overcommit => errors.push(required(
                format!("{at}.limits"),
                "Limit must be set for non overcommitable resources",
            )),
            _ => {}
        }
    }
    if hugepages && !cpu_or_memory {
        errors.push(forbidden(at.to_owned(), "HugePages require cpu or memory"));
    }
}

/// `validateContainerResourceName`: a qualified name, and a standard container resource
/// unless it has a domain (then an extended resource unless under `kubernetes.io/`).
fn resource_name_errors(name: &str, field: &str, errors: &mut Vec<FieldError>) {
    let messages = validation::is_qualified_name(name);
    if !messages.is_empty() {
        for message in messages {
            errors.push(invalid(field.to_owned(), go_str(name), &message));
        }
        return;
    }
    let standard =
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-");
    if !name.contains('/') {
        if !standard {
            errors.push(invalid(
                field.to_owned(),
                go_str(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource(name) {
        errors.push(invalid(
            field.to_owned(),
            go_str(name),
            "doesn't follow extended resource name standard",
        ));
    }
}

/// What an ephemeral container may not have (`validateEphemeralContainers`: the fields
/// `allowedEphemeralContainerFields` leaves out, checked for a non-zero value, then a volume
/// mount's sub-paths and a restart policy), one Forbidden per field.
fn validate_ephemeral_fields(container: &Value, at: &str, errors: &mut Vec<FieldError>) {
    const FORBIDDEN: &str = "cannot be set for an Ephemeral Container";
    let set = |key: &str| match container.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) if key == "resources" => map
            .values()
            .any(|v| !v.is_null() && v != &json!({}) && v != &json!([])),
        Some(_) => true,
    };
    for key in [
        "ports",
        "resources",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "resizePolicy",
    ] {
        if set(key) {
            errors.push(forbidden(format!("{at}.{key}"), FORBIDDEN));
        }
    }
    for (i, mount) in items(Some(container), "volumeMounts").iter().enumerate() {
        for key in ["subPath", "subPathExpr"] {
            if !str_at(mount, &[key]).is_empty() {
                errors.push(forbidden(
                    format!("{at}.volumeMounts[{i}].{key}"),
                    FORBIDDEN,
                ));
            }
        }
    }
    if container.get("restartPolicy").is_some_and(|p| !p.is_null()) {
        errors.push(forbidden(format!("{at}.restartPolicy"), FORBIDDEN));
    }
}

/// `ValidatePodStatusUpdate`'s rule for the QoS class (`pkg/apis/core/validation/validation.go`):
/// computed when the pod was created, it never changes, whoever writes the status.
pub(super) fn validate_status_update(
    existing: &Object,
    updated: &Object,
    errors: &mut Vec<FieldError>,
) {
    let qos = |object: &Object| {
        object
            .get("status")
            .and_then(|status| status.get("qosClass"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (old, new) = (qos(existing), qos(updated));
    if old != new {
        errors.push(immutable("status.qosClass", go_str(&new)));
    }
}

/// `ValidatePodEphemeralContainersUpdate`: the ephemeral containers a pod has may be added to,
/// never removed or changed; each names a container of the pod as its target, if any.
pub(super) fn validate_ephemeral_update(
    existing: &Object,
    updated: &Object,
    errors: &mut Vec<FieldError>,
) {
    let old = items(existing.get("spec"), "ephemeralContainers");
    let new = items(updated.get("spec"), "ephemeralContainers");
    for container in old {
        let name = str_at(container, &["name"]);
        match new.iter().find(|c| str_at(c, &["name"]) == name) {
            None => errors.push(forbidden(
                "spec.ephemeralContainers",
                &format!(
                    "existing ephemeral containers {} may not be removed\n",
                    go_str(name)
                ),
            )),
            Some(now) if now != container => errors.push(forbidden(
                "spec.ephemeralContainers",
                &format!(
                    "existing ephemeral containers {} may not be changed\n{}",
                    go_str(name),
                    spec_diff(container, now)
                ),
            )),
            Some(_) => {}
        }
    }
    let others: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| items(updated.get("spec"), list))
        .map(|c| str_at(c, &["name"]))
        .collect();
    for (i, container) in new.iter().enumerate() {
        let target = str_at(container, &["targetContainerName"]);
        if !target.is_empty() && !others.contains(&target) {
            errors.push(not_found(
                format!("spec.ephemeralContainers[{i}].targetContainerName"),
                go_str(target),
            ));
        }
    }
}

/// `validatePodCreate`: ephemeral containers come only through their subresource.
pub(super) fn validate_pod_create(pod: &Object, errors: &mut Vec<FieldError>) {
    if !items(pod.get("spec"), "ephemeralContainers").is_empty() {
        errors.push(forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
}

/// `IsNativeResource`: no domain, or under `kubernetes.io/`.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: not native, not a quota's `requests.` name, and a qualified name
/// once prefixed with `requests.`.
fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with("requests.")
        && validation::is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// A DNS-1123 label check with the real message.
fn label_errors(name: &str, field: &str, errors: &mut Vec<FieldError>) {
    for detail in meta::name_errors(name, crate::registry::NameRule::Label, false) {
        errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueInvalid",
            detail,
        });
    }
}

/// `ValidatePodUpdate`: only images, `activeDeadlineSeconds`, added tolerations and a negative
/// grace period turned to 1 may change (and scheduling gates be removed).
pub(super) fn validate_pod_update(
    existing: &Object,
    updated: &Object,
    errors: &mut Vec<FieldError>,
) {
    let (Some(old), Some(new)) = (existing.get("spec"), updated.get("spec")) else {
        return;
    };
    let old_tolerations = items(Some(old), "tolerations");
    let new_tolerations = items(Some(new), "tolerations");
    let removed = old_tolerations.iter().any(|t| !new_tolerations.contains(t));
    let mut masked_old = old.clone();
    let mut masked_new = new.clone();
    for spec in [&mut masked_old, &mut masked_new] {
        if let Value::Object(spec) = spec {
            for list in ["containers", "initContainers"] {
                for container in each_object_mut(spec, list) {
                    container.shift_remove("image");
                }
            }
            spec.shift_remove("activeDeadlineSeconds");
            spec.shift_remove("tolerations");
            spec.shift_remove("schedulingGates");
        }
    }
    // A negative grace period may become 1.
    let old_grace = old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let new_grace = new
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_grace.is_some_and(|g| g < 0)
        && new_grace == Some(1)
        && let Value::Object(spec) = &mut masked_old
    {
        spec.insert("terminationGracePeriodSeconds".to_owned(), json!(1));
    }
    let old_gates = items(Some(old), "schedulingGates");
    let gates_added = items(Some(new), "schedulingGates")
        .iter()
        .any(|g| !old_gates.contains(g));
    if masked_old != masked_new || removed || gates_added {
        let diff = spec_diff(&masked_old, &masked_new);
        errors.push(forbidden(
            "spec",
            &format!("{POD_UPDATE_FORBIDDEN}\n{diff}"),
        ));
    }
}

/// The top-level spec fields that differ, one `-`/`+` line pair each (the real server prints a
/// Go struct diff here).
fn spec_diff(old: &Value, new: &Value) -> String {
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut lines = vec!["  core.PodSpec{".to_owned()];
    for key in keys {
        let (a, b) = (old.get(key), new.get(key));
        if a != b {
            if let Some(a) = a {
                lines.push(format!("- \t{key}: {}", go_value(a)));
            }
            if let Some(b) = b {
                lines.push(format!("+ \t{key}: {}", go_value(b)));
            }
        }
    }
    lines.push("  }".to_owned());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A container of upstream's QoS test table: (cpu, memory) requests and limits, `""`
    /// for absent; `extra` adds one more resource to both.
    fn qos_container(
        requests: (&str, &str),
        limits: (&str, &str),
        extra: Option<(&str, &str)>,
    ) -> Value {
        let list = |(cpu, memory): (&str, &str)| {
            let mut list = Map::new();
            for (name, value) in [("cpu", cpu), ("memory", memory)] {
                if !value.is_empty() {
                    list.insert(name.to_owned(), json!(value));
                }
            }
            if let Some((name, value)) = extra {
                list.insert(name.to_owned(), json!(value));
            }
            Value::Object(list)
        };
        json!({"name": "c", "resources": {"requests": list(requests), "limits": list(limits)}})
    }

    /// Upstream's `TestComputePodQOS` (`pkg/apis/core/v1/helper/qos/qos_test.go`), its
    /// cases without pod-level resources (a 1.32 alpha feature, off): (name, containers,
    /// init containers, class).
    #[test]
    fn qos_classes_are_upstreams() {
        let c = qos_container;
        let none = ("", "");
        let cases: Vec<(&str, Vec<Value>, Vec<Value>, &str)> = vec![
            (
                "guaranteed",
                vec![c(("100m", "100Mi"), ("100m", "100Mi"), None)],
                vec![],
                "Guaranteed",
            ),
            (
                "guaranteed-guaranteed",
                vec![
                    c(("100m", "100Mi"), ("100m", "100Mi"), None),
                    c(("100m", "100Mi"), ("100m", "100Mi"), None),
                ],
                vec![],
                "Guaranteed",
            ),
            (
                "best-effort-best-effort",
                vec![c(none, none, None), c(none, none, None)],
                vec![],
                "BestEffort",
            ),
            (
                "best-effort",
                vec![c(none, none, None)],
                vec![],
                "BestEffort",
            ),
            (
                "best-effort-burstable",
                vec![c(none, none, None), c(("1", ""), ("2", ""), None)],
                vec![],
                "Burstable",
            ),
            (
                "best-effort-guaranteed",
                vec![
                    c(none, none, None),
                    c(("10m", "100Mi"), ("10m", "100Mi"), None),
                ],
                vec![],
                "Burstable",
            ),
            (
                "burstable-cpu-guaranteed-memory",
                vec![c(("", "100Mi"), ("", "100Mi"), None)],
                vec![],
                "Burstable",
            ),
            (
                "burstable-no-limits",
                vec![c(("100m", "100Mi"), none, None)],
                vec![],
                "Burstable",
            ),
            (
                "burstable-guaranteed",
                vec![
                    c(("1", "100Mi"), ("2", "100Mi"), None),
                    c(("100m", "100Mi"), ("100m", "100Mi"), None),
                ],
                vec![],
                "Burstable",
            ),
            (
                "burstable-unbounded-but-requests-match-limits",
                vec![
                    c(("100m", "100Mi"), ("200m", "200Mi"), None),
                    c(("100m", "100Mi"), none, None),
                ],
                vec![],
                "Burstable",
            ),
            (
                "burstable-1",
                vec![c(("10m", "100Mi"), ("100m", "200Mi"), None)],
                vec![],
                "Burstable",
            ),
            (
                "burstable-2",
                vec![c(("0", "0"), ("100m", "200Mi"), None)],
                vec![],
                "Burstable",
            ),
            (
                "best-effort-hugepages",
                vec![c(("0", "0"), ("0", "0"), Some(("hugepages-2Mi", "1Gi")))],
                vec![],
                "BestEffort",
            ),
            (
                "init-container",
                vec![c(none, none, None)],
                vec![c(("10m", "100Mi"), ("100m", "200Mi"), None)],
                "Burstable",
            ),
            // Beyond upstream's table: quantities compare by value, not as written.
            (
                "guaranteed-equal-values",
                vec![c(("1", "1Gi"), ("1000m", "1024Mi"), None)],
                vec![],
                "Guaranteed",
            ),
        ];
        for (name, containers, init, want) in cases {
            let spec = json!({"containers": containers, "initContainers": init});
            let spec = spec.as_object().expect("an object");
            assert_eq!(qos_class(spec), want, "{name}");
        }
    }

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(image_tag("nginx"), "latest");
        assert_eq!(image_tag("nginx:latest"), "latest");
        assert_eq!(image_tag("nginx:1.27"), "1.27");
        assert_eq!(image_tag("localhost:5000/app"), "latest");
        assert_eq!(image_tag("localhost:5000/app:v1"), "v1");
        assert_eq!(image_tag("nginx@sha256:abc"), "");
    }

    /// envtest starts kube-apiserver with `--disable-admission-plugins=ServiceAccount`
    /// (controller-runtime `pkg/internal/testing/controlplane/apiserver.go`): its pods keep
    /// no account name and get no token volume, as the plugin
    /// (`plugin/pkg/admission/serviceaccount/admission.go`) is what adds both.
    #[test]
    fn without_the_service_account_plugin_pods_get_no_account_or_token_volume() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "nginx"}
        ]}})
        .as_object()
        .cloned()
        .unwrap();
        default_pod(&mut pod);
        admit_new_pod(&mut pod, false);
        let spec = &pod["spec"];
        assert!(spec.get("serviceAccountName").is_none(), "{spec}");
        assert!(spec.get("serviceAccount").is_none(), "{spec}");
        assert!(spec.get("volumes").is_none(), "{spec}");
        assert!(
            spec["containers"][0].get("volumeMounts").is_none(),
            "{spec}"
        );
        // The other plugins still act.
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(spec["priority"], 0);

        let mut named = json!({"metadata": {"name": "p"}, "spec": {
            "serviceAccountName": "builder", "containers": [{"name": "a", "image": "nginx"}]
        }})
        .as_object()
        .cloned()
        .unwrap();
        default_pod(&mut named);
        admit_new_pod(&mut named, false);
        assert_eq!(named["spec"]["serviceAccount"], "builder");
        assert!(named["spec"].get("volumes").is_none());
    }

    #[test]
    fn pods_get_the_real_defaults_and_admission_additions() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "busybox:1.36",
             "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
        ]}})
        .as_object()
        .cloned()
        .unwrap();
        default_pod(&mut pod);
        admit_new_pod(&mut pod, true);
        let spec = &pod["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["securityContext"], json!({}));
        assert_eq!(spec["enableServiceLinks"], true);
        assert_eq!(spec["serviceAccountName"], "default");
        assert_eq!(spec["priority"], 0);
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(spec["containers"][1]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(spec["containers"][1]["resources"]["requests"]["cpu"], "1");
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(spec["volumes"][0]["projected"]["defaultMode"], 420);
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0]["mountPath"],
            SERVICE_ACCOUNT_MOUNT_PATH
        );
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "Burstable"})
        );
    }

    #[test]
    fn resource_requirements_are_validated_as_upstream_does() {
        let spec = json!({"containers": [{"name": "a", "image": "x", "resources": {
            "limits": {"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "4Mi"},
            "requests": {"cpu": "2", "memory": "-1", "example.com/gpu": "2",
                         "example.com/fpga": "500m", "bogus": "1"}}}]});
        let mut errors = Vec::new();
        validate_pod_spec(Some(&spec), "spec", &mut errors);
        let texts: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        let at = "spec.containers[0].resources";
        assert_eq!(
            texts,
            [
                format!(
                    "{at}.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0"
                ),
                format!("{at}.requests[example.com/fpga]: Invalid value: 500m: must be an integer"),
                format!(
                    "{at}.requests[bogus]: Invalid value: \"bogus\": must be a standard resource for containers"
                ),
                format!(
                    "{at}.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
                ),
                format!(
                    "{at}.requests: Invalid value: \"2\": must be equal to example.com/gpu limit of 1"
                ),
                format!(
                    "{at}.limits: Required value: Limit must be set for non overcommitable resources"
                ),
            ]
        );
    }

    #[test]
    fn spec_errors_name_their_fields() {
        let spec = json!({"containers": [{"name": "a"}, {"name": "a", "image": "x"}]});
        let mut errors = Vec::new();
        validate_pod_spec(Some(&spec), "spec", &mut errors);
        let texts: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        assert_eq!(
            texts,
            [
                "spec.containers[0].image: Required value",
                "spec.containers[1].name: Duplicate value: \"a\""
            ]
        );
    }

    #[test]
    fn only_images_may_change_in_a_pod_spec() {
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x", "env": []}]}})
            .as_object()
            .cloned()
            .unwrap();
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("y");
        let mut errors = Vec::new();
        validate_pod_update(&old, &new, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        new["spec"]["containers"][0]["env"] = json!([{"name": "X"}]);
        validate_pod_update(&old, &new, &mut errors);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0]
                .detail
                .starts_with("Forbidden: pod updates may not change fields")
        );
    }
}
