//! Resource quota accounting, shared by the API server's ResourceQuota admission (which
//! charges a new object against the quotas of its namespace) and the quota controller (which
//! recounts what the namespace holds): both must measure an object the same way, or the two
//! drift apart. Objects are JSON values, as the server holds them.
//!
//! Upstream: `pkg/quota/v1/evaluator/core/{pods,services,persistent_volume_claims}.go` (the
//! evaluators), `staging/src/k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go` (object
//! counts, scope matching) and `.../quota/v1/resources.go` (list arithmetic), and the
//! admission's `checkRequest` and `prettyPrint`
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go`).
//!
//! Not done: the `CrossNamespacePodAffinity` scope matches nothing (its admission
//! configuration is not read either), and PVC `VolumeAttributesClass` scopes; pod usage sums
//! containers and init containers as upstream's `PodRequests` without in-place resize status
//! nor pod-level resources.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::quantity::Quantity;

/// Quantities by resource name (`corev1.ResourceList`), in name order.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Pod compute resources a quota may track (`podResources`).
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// Resources for which a quota makes every container state its requests or limits
/// (`validationSet`, "a mistake" upstream keeps for compatibility).
const VALIDATION_SET: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// Resources a Service consumes (`serviceResources`).
const SERVICE_RESOURCES: [&str; 4] = [
    "count/services",
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources a claim consumes, before the per-class ones (`pvcResources`).
const CLAIM_RESOURCES: [&str; 3] = [
    "persistentvolumeclaims",
    "count/persistentvolumeclaims",
    "requests.storage",
];

/// Suffix of the per-StorageClass claim resources
/// (`<class>.storageclass.storage.k8s.io/requests.storage`).
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The pre-`count/` names of some object counts (`legacyObjectCountAliases`).
const LEGACY_ALIASES: [(&str, &str); 4] = [
    ("configmaps", "configmaps"),
    ("resourcequotas", "resourcequotas"),
    ("replicationcontrollers", "replicationcontrollers"),
    ("secrets", "secrets"),
];

/// The object count resource of `group`/`resource` (`ObjectCountQuotaResourceNameFor`):
/// `count/pods`, `count/deployments.apps`.
pub fn object_count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// Whether `name` is a resource a quota on objects of `group`/`resource` tracks (the
/// evaluator's `MatchingResources`).
pub fn tracks(group: &str, resource: &str, name: &str) -> bool {
    if name == object_count_name(group, resource) {
        return true;
    }
    match (group, resource) {
        ("", "pods") => {
            POD_RESOURCES.contains(&name)
                || name.starts_with("hugepages-")
                || name.starts_with("requests.hugepages-")
                || (name.starts_with("requests.") && !is_native(name))
        }
        ("", "services") => SERVICE_RESOURCES.contains(&name),
        ("", "persistentvolumeclaims") => {
            CLAIM_RESOURCES.contains(&name)
                || name
                    .split_once(STORAGE_CLASS_SUFFIX)
                    .is_some_and(|(_, r)| r == "requests.storage" || r == "persistentvolumeclaims")
        }
        ("", _) => LEGACY_ALIASES
            .iter()
            .any(|(r, alias)| *r == resource && *alias == name),
        _ => false,
    }
}

/// Whether a resource name is in the `kubernetes.io` namespace (unprefixed, or
/// `*kubernetes.io/`), as `IsNativeResource`.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// The quantity at `path` of a resource list object, when it parses.
fn quantities(list: Option<&Value>) -> ResourceList {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| {
            let text = value.as_str()?;
            Some((name.clone(), Quantity::parse(text).ok()?))
        })
        .collect()
}

/// `a + b`, name by name (`quota.Add`).
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut sum = a.clone();
    for (name, quantity) in b {
        sum.entry(name.clone())
            .and_modify(|q| *q += quantity)
            .or_insert_with(|| quantity.clone());
    }
    sum
}

/// `a - b`, name by name, never below zero (`SubtractWithNonNegativeResult`).
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let zero = Quantity::default();
    a.iter()
        .map(|(name, quantity)| {
            let mut left = quantity.clone();
            if let Some(other) = b.get(name) {
                left -= other;
            }
            if left < zero {
                left = zero.clone();
            }
            (name.clone(), left)
        })
        .collect()
}

/// The element-wise maximum (`quota.Max`).
fn max(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (name, quantity) in b {
        match out.get(name) {
            Some(current) if current >= quantity => {}
            _ => {
                out.insert(name.clone(), quantity.clone());
            }
        }
    }
    out
}

/// Only the entries of `list` named in `names` (`quota.Mask`).
pub fn mask<'n>(list: &ResourceList, names: impl IntoIterator<Item = &'n String>) -> ResourceList {
    names
        .into_iter()
        .filter_map(|name| Some((name.clone(), list.get(name)?.clone())))
        .collect()
}

/// `list` without its zero entries (`quota.RemoveZeros`).
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, q)| !q.is_zero())
        .map(|(n, q)| (n.clone(), q.clone()))
        .collect()
}

/// The names whose quantity in `list` is negative (`quota.IsNegative`).
pub fn negative(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, q)| q.sign() < 0)
        .map(|(n, _)| n.clone())
        .collect()
}

/// The names of `a` whose quantity exceeds `b`'s (absent from `b`: no limit), sorted
/// (`quota.LessThanOrEqual`'s second result); empty when `a <= b`.
pub fn exceeded(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    a.iter()
        .filter(|(name, quantity)| b.get(*name).is_some_and(|limit| *quantity > limit))
        .map(|(name, _)| name.clone())
        .collect()
}

/// `name=value,name=value` in name order, as the admission's `prettyPrint`.
pub fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(name, quantity)| format!("{name}={quantity}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A resource list as a JSON object of quantity strings.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(name, quantity)| (name.clone(), Value::String(quantity.to_string())))
            .collect(),
    )
}

/// A resource list from a JSON object of quantity strings (entries that do not parse are
/// left out: the API server validated them).
pub fn from_json(list: Option<&Value>) -> ResourceList {
    quantities(list)
}

/// `1`.
fn one() -> Quantity {
    Quantity::parse("1").unwrap_or_default()
}

/// The usage of object `obj` of `group`/`resource` (the evaluator's `Usage`); `now_nanos`
/// (nanoseconds since the epoch) decides whether a terminating pod's grace period is over.
pub fn usage(group: &str, resource: &str, obj: &Value, now_nanos: i128) -> ResourceList {
    let mut result = ResourceList::new();
    result.insert(object_count_name(group, resource), one());
    match (group, resource) {
        ("", "pods") => {
            let compute = if charged(obj, now_nanos) {
                pod_compute_usage(obj)
            } else {
                ResourceList::new()
            };
            result = add(&result, &compute);
        }
        ("", "services") => {
            result.insert("services".to_owned(), one());
            let spec = obj.get("spec");
            let kind = spec
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let ports = spec
                .and_then(|s| s.get("ports"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ports = i64::try_from(ports).unwrap_or(i64::MAX);
            match kind {
                "NodePort" => {
                    result.insert(
                        "services.nodeports".to_owned(),
                        Quantity::new(ports, crate::quantity::Format::DecimalSI),
                    );
                }
                "LoadBalancer" => {
                    result.insert("services.loadbalancers".to_owned(), one());
                    let allocate = spec
                        .and_then(|s| s.get("allocateLoadBalancerNodePorts"))
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    if allocate {
                        result.insert(
                            "services.nodeports".to_owned(),
                            Quantity::new(ports, crate::quantity::Format::DecimalSI),
                        );
                    }
                }
                _ => {}
            }
        }
        ("", "persistentvolumeclaims") => {
            result.insert("persistentvolumeclaims".to_owned(), one());
            let class = obj
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !class.is_empty() {
                result.insert(
                    format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                    one(),
                );
            }
            // The larger of the request and the allocated size (a resize in progress).
            let requested = obj
                .pointer("/spec/resources/requests/storage")
                .and_then(Value::as_str)
                .and_then(|s| Quantity::parse(s).ok());
            let allocated = obj
                .pointer("/status/allocatedResources/storage")
                .and_then(Value::as_str)
                .and_then(|s| Quantity::parse(s).ok());
            let storage = match (requested, allocated) {
                (Some(r), Some(a)) => Some(r.max(a)),
                (r, a) => r.or(a),
            };
            if let Some(storage) = storage {
                if !class.is_empty() {
                    result.insert(
                        format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                        storage.clone(),
                    );
                }
                result.insert("requests.storage".to_owned(), storage);
            }
        }
        ("", _) => {
            if let Some((_, alias)) = LEGACY_ALIASES.iter().find(|(r, _)| *r == resource) {
                result.insert((*alias).to_owned(), one());
            }
        }
        _ => {}
    }
    result
}

/// Whether a pod's compute resources are charged (`QuotaV1Pod`): not once terminal, nor once
/// its deletion's grace period is over (a pod stuck terminating on a lost node).
fn charged(pod: &Value, now_nanos: i128) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(crate::time::parse_rfc3339);
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (deleted, grace) {
        (Some(deleted), Some(grace)) => {
            now_nanos <= deleted + i128::from(grace) * crate::time::NANOS_PER_SECOND
        }
        _ => true,
    }
}

/// The requests (or limits) of the pod: its containers' summed, at least each init
/// container's (restartable init containers, sidecars, count with the containers), plus the
/// pod's overhead (`resourcehelper.PodRequests`/`PodLimits`).
fn pod_resources(pod: &Value, which: &str) -> ResourceList {
    let of = |c: &Value| quantities(c.pointer(&format!("/resources/{which}")));
    let spec = pod.get("spec");
    let list = |field: &str| {
        spec.and_then(|s| s.get(field))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut sum = ResourceList::new();
    for container in list("containers") {
        sum = add(&sum, &of(&container));
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for container in list("initContainers") {
        let restartable = container.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        if restartable {
            sidecars = add(&sidecars, &of(&container));
            sum = add(&sum, &of(&container));
        } else {
            init_max = max(&init_max, &add(&sidecars, &of(&container)));
        }
    }
    let mut total = max(&sum, &init_max);
    if let Some(overhead) = spec.and_then(|s| s.get("overhead")) {
        total = add(&total, &quantities(Some(overhead)));
    }
    total
}

/// A container's (or pod's) compute usage from its requests and limits
/// (`podComputeUsageHelper`).
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut result = ResourceList::new();
    result.insert("pods".to_owned(), one());
    for name in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(name) {
            result.insert(name.to_owned(), request.clone());
            result.insert(format!("requests.{name}"), request.clone());
        }
        if let Some(limit) = limits.get(name) {
            result.insert(format!("limits.{name}"), limit.clone());
        }
    }
    for (name, request) in requests {
        if name.starts_with("hugepages-") {
            result.insert(name.clone(), request.clone());
            result.insert(format!("requests.{name}"), request.clone());
        } else if !is_native(name) {
            result.insert(format!("requests.{name}"), request.clone());
        }
    }
    result
}

/// The compute usage of a charged pod.
fn pod_compute_usage(pod: &Value) -> ResourceList {
    compute_usage(
        &pod_resources(pod, "requests"),
        &pod_resources(pod, "limits"),
    )
}

/// Why `pod` may not be admitted under a quota tracking `required` (the pod evaluator's
/// `Constraints`): with cpu or memory tracked, every container must state them —
/// `must specify limits.cpu for: app; requests.memory for: app,side`. `None`: it may.
pub fn pod_constraints(pod: &Value, required: &[String]) -> Option<String> {
    let required: Vec<&str> = required
        .iter()
        .map(String::as_str)
        .filter(|r| VALIDATION_SET.contains(r))
        .collect();
    if required.is_empty() {
        return None;
    }
    let mut missing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for field in ["containers", "initContainers"] {
        for container in pod
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let usage = compute_usage(
                &quantities(container.pointer("/resources/requests")),
                &quantities(container.pointer("/resources/limits")),
            );
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            for resource in &required {
                if !usage.contains_key(*resource) {
                    let names = missing.entry(resource).or_default();
                    if !names.contains(&name) {
                        names.push(name.clone());
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(resource, mut names)| {
            names.sort();
            format!("{resource} for: {}", names.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// One scope requirement of a quota: its `spec.scopes` (each an `Exists`) and its
/// `spec.scopeSelector.matchExpressions` (`getScopeSelectorsFromQuota`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRequirement {
    /// `Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass`,
    /// `CrossNamespacePodAffinity`.
    pub scope: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    /// The values of `In`/`NotIn`.
    pub values: Vec<String>,
}

/// The scope requirements of a ResourceQuota object.
pub fn scopes_of(quota: &Value) -> Vec<ScopeRequirement> {
    let mut out: Vec<ScopeRequirement> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|scope| ScopeRequirement {
            scope: scope.to_owned(),
            operator: "Exists".to_owned(),
            values: Vec::new(),
        })
        .collect();
    for expression in quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| {
            expression
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        out.push(ScopeRequirement {
            scope: text("scopeName"),
            operator: text("operator"),
            values: expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        });
    }
    out
}

/// Whether `obj` of `group`/`resource` is in scope `requirement` (`podMatchesScopeFunc`;
/// other kinds are in no scope, as the generic evaluator's `MatchesNoScopeFunc`).
pub fn in_scope(group: &str, resource: &str, obj: &Value, requirement: &ScopeRequirement) -> bool {
    if (group, resource) != ("", "pods") {
        return false;
    }
    let terminating = obj
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0);
    let best_effort = obj.pointer("/status/qosClass").and_then(Value::as_str) == Some("BestEffort");
    let class = obj
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    match requirement.scope.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => match requirement.operator.as_str() {
            "Exists" => !class.is_empty(),
            "DoesNotExist" => class.is_empty(),
            "In" => !class.is_empty() && requirement.values.iter().any(|v| v == class),
            "NotIn" => class.is_empty() || !requirement.values.iter().any(|v| v == class),
            _ => false,
        },
        _ => false,
    }
}

/// Whether the quota `quota` (its `status.hard` and scopes) covers `obj` of
/// `group`/`resource` (`generic.Matches`): it tracks at least one of its resources, and the
/// object is in every scope.
pub fn matches(quota: &Value, group: &str, resource: &str, obj: &Value) -> bool {
    let hard = from_json(quota.pointer("/status/hard"));
    hard.keys().any(|name| tracks(group, resource, name))
        && scopes_of(quota)
            .iter()
            .all(|requirement| in_scope(group, resource, obj, requirement))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list(entries: &[(&str, &str)]) -> ResourceList {
        entries
            .iter()
            .map(|(n, q)| ((*n).to_owned(), Quantity::parse(q).expect("quantity")))
            .collect()
    }

    #[test]
    fn a_pod_is_charged_its_summed_requests_and_limits_until_it_ends() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]
        }});
        let usage = usage("", "pods", &pod, 0);
        assert_eq!(
            pretty(&usage),
            "count/pods=1,cpu=1,limits.cpu=200m,memory=64Mi,pods=1,requests.cpu=1,requests.memory=64Mi"
        );
        let done = json!({"spec": pod["spec"], "status": {"phase": "Succeeded"}});
        assert_eq!(pretty(&super::usage("", "pods", &done, 0)), "count/pods=1");
        let stuck = json!({"metadata": {"deletionTimestamp": "2030-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30},
            "spec": pod["spec"]});
        let at = |t: &str| crate::time::parse_rfc3339(t).expect("time");
        assert!(super::usage("", "pods", &stuck, at("2030-01-01T00:00:30Z")).contains_key("pods"));
        assert!(!super::usage("", "pods", &stuck, at("2030-01-01T00:00:31Z")).contains_key("pods"));
    }

    #[test]
    fn objects_count_under_their_count_name_and_legacy_alias() {
        assert_eq!(
            pretty(&usage("apps", "deployments", &json!({}), 0)),
            "count/deployments.apps=1"
        );
        assert_eq!(
            pretty(&usage("", "secrets", &json!({}), 0)),
            "count/secrets=1,secrets=1"
        );
        let service = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            pretty(&usage("", "services", &service, 0)),
            "count/services=1,services=1,services.nodeports=2"
        );
        let claim = json!({"spec": {"storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}}});
        assert_eq!(
            pretty(&usage("", "persistentvolumeclaims", &claim, 0)),
            "count/persistentvolumeclaims=1,persistentvolumeclaims=1,requests.storage=1Gi,\
             standard.storageclass.storage.k8s.io/persistentvolumeclaims=1,\
             standard.storageclass.storage.k8s.io/requests.storage=1Gi"
        );
        assert!(tracks("apps", "deployments", "count/deployments.apps"));
        assert!(!tracks("apps", "deployments", "pods"));
        assert!(tracks("", "pods", "requests.nvidia.com/gpu"));
        assert!(tracks("", "configmaps", "configmaps"));
    }

    #[test]
    fn a_quota_on_cpu_or_memory_makes_every_container_state_it() {
        let pod = json!({"spec": {"containers": [
            {"name": "b", "resources": {"requests": {"cpu": "1"}}},
            {"name": "a"}
        ]}});
        let required = vec![
            "limits.cpu".to_owned(),
            "requests.cpu".to_owned(),
            "pods".to_owned(),
        ];
        assert_eq!(
            pod_constraints(&pod, &required).as_deref(),
            Some("must specify limits.cpu for: a,b; requests.cpu for: a")
        );
        assert_eq!(pod_constraints(&pod, &["pods".to_owned()]), None);
    }

    #[test]
    fn lists_add_mask_and_compare_as_upstream() {
        let used = list(&[("pods", "2"), ("requests.cpu", "500m")]);
        let hard = list(&[("pods", "2"), ("requests.cpu", "1")]);
        let request = list(&[("pods", "1"), ("requests.cpu", "100m"), ("count/pods", "1")]);
        let requested = mask(&request, hard.keys());
        let new = add(&used, &requested);
        assert_eq!(exceeded(&new, &hard), vec!["pods".to_owned()]);
        assert_eq!(pretty(&mask(&requested, &exceeded(&new, &hard))), "pods=1");
        assert_eq!(
            pretty(&subtract_non_negative(&hard, &list(&[("pods", "3")]))),
            "pods=0,requests.cpu=1"
        );
        assert_eq!(negative(&list(&[("cpu", "-1")])), vec!["cpu".to_owned()]);
        assert_eq!(
            pretty(&remove_zeros(&list(&[("cpu", "0"), ("pods", "1")]))),
            "pods=1"
        );
    }

    #[test]
    fn scopes_select_pods_as_upstream() {
        let quota = json!({"spec": {"scopes": ["NotBestEffort"], "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}},
            "status": {"hard": {"pods": "1"}}});
        let pod = |qos: &str, class: &str| json!({"spec": {"priorityClassName": class}, "status": {"qosClass": qos}});
        assert!(matches(&quota, "", "pods", &pod("Burstable", "high")));
        assert!(!matches(&quota, "", "pods", &pod("BestEffort", "high")));
        assert!(!matches(&quota, "", "pods", &pod("Burstable", "low")));
        assert!(
            !matches(&quota, "", "services", &json!({})),
            "scoped quotas cover pods only"
        );
        let terminating =
            json!({"spec": {"scopes": ["Terminating"]}, "status": {"hard": {"pods": "1"}}});
        assert!(matches(
            &terminating,
            "",
            "pods",
            &json!({"spec": {"activeDeadlineSeconds": 10}})
        ));
        assert!(!matches(&terminating, "", "pods", &json!({"spec": {}})));
    }
}
