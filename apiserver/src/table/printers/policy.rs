//! The printers of the scaling and scheduling-policy kinds: HorizontalPodAutoscalers (both
//! versions), PodDisruptionBudgets, PriorityClasses and ResourceQuotas
//! (`printHorizontalPodAutoscaler` with `formatHPAMetrics`, `printPodDisruptionBudget`,
//! `printPriorityClass`, `printResourceQuota`). LimitRanges have no printer upstream.

use serde_json::{Value, json};

use super::{
    AGE, Column, NAME, age, column, docs, field, first_of, flag, int, list, map, name, quantity,
    text,
};

pub(super) const HORIZONTAL_POD_AUTOSCALER_COLUMNS: &[Column] = &[
    NAME,
    column("Reference", "string", docs::HPA_REFERENCE),
    column("Targets", "string", docs::HPA_METRICS),
    column("MinPods", "string", docs::HPA_MIN_REPLICAS),
    column("MaxPods", "string", docs::HPA_MAX_REPLICAS),
    column("Replicas", "string", docs::HPA_CURRENT_REPLICAS),
    AGE,
];

pub(super) const POD_DISRUPTION_BUDGET_COLUMNS: &[Column] = &[
    NAME,
    column("Min Available", "string", docs::PDB_MIN_AVAILABLE),
    column("Max Unavailable", "string", docs::PDB_MAX_UNAVAILABLE),
    column(
        "Allowed Disruptions",
        "integer",
        docs::PDB_ALLOWED_DISRUPTIONS,
    ),
    AGE,
];

/// The PreemptionPolicy column is a default one although upstream fills it only when wide
/// (which the server always is).
pub(super) const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    column("Value", "integer", docs::PRIORITY_VALUE),
    column("Global-Default", "boolean", docs::PRIORITY_GLOBAL_DEFAULT),
    AGE,
    column(
        "PreemptionPolicy",
        "string",
        docs::PRIORITY_PREEMPTION_POLICY,
    ),
];

pub(super) const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    column("Request", "string", docs::QUOTA_REQUEST),
    column("Limit", "string", docs::QUOTA_LIMIT),
    AGE,
];

/// How many metrics the Targets cell shows before ` + N more...`.
const METRICS_SHOWN: usize = 2;

/// The CPU utilization autoscaling/v2 defaults `metrics` to when there are none.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// `printHorizontalPodAutoscaler`, over autoscaling/v2 and autoscaling/v1 objects alike (kubemock
/// stores each as written; the real server converts both to one internal form).
pub(super) fn horizontal_pod_autoscaler(hpa: &Value, now: i128) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text(hpa, &["spec", "scaleTargetRef", "kind"]),
        text(hpa, &["spec", "scaleTargetRef", "name"])
    );
    // Defaulted to 1 by either version.
    let min_pods = field(hpa, &["spec", "minReplicas"])
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        json!(name(hpa)),
        json!(reference),
        json!(format_hpa_metrics(
            &metric_specs(hpa),
            &metric_statuses(hpa)
        )),
        json!(min_pods.to_string()),
        json!(int(hpa, &["spec", "maxReplicas"])),
        json!(int(hpa, &["status", "currentReplicas"])),
        json!(age(hpa, now)),
    ]
}

/// A `Resource` metric of the CPU, as the v1 fields convert to and v2 defaulting adds.
fn cpu_metric(side: &str, utilization: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", side: {"averageUtilization": utilization}}})
}

/// The internal `spec.metrics`: v2's, else v1's CPU target, else v2's default (80 % CPU).
fn metric_specs(hpa: &Value) -> Vec<Value> {
    match list(hpa, &["spec", "metrics"]) {
        [] => {
            let target = field(hpa, &["spec", "targetCPUUtilizationPercentage"])
                .and_then(Value::as_i64)
                .unwrap_or(DEFAULT_CPU_UTILIZATION);
            let mut metric = cpu_metric("target", target);
            metric["resource"]["target"]["type"] = json!("Utilization");
            vec![metric]
        }
        metrics => metrics.to_vec(),
    }
}

/// The internal `status.currentMetrics`: v2's, else v1's current CPU utilization.
fn metric_statuses(hpa: &Value) -> Vec<Value> {
    match list(hpa, &["status", "currentMetrics"]) {
        [] => field(hpa, &["status", "currentCPUUtilizationPercentage"])
            .and_then(Value::as_i64)
            .map(|current| cpu_metric("current", current))
            .into_iter()
            .collect(),
        statuses => statuses.to_vec(),
    }
}

/// `formatHPAMetrics`: `current/target` per metric (statuses matched by position), the first
/// two, then ` + N more...`; `<none>` without metrics.
fn format_hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let targets = specs.iter().enumerate().map(|(i, spec)| {
        // The status at the same position, when it carries this source.
        let status = |source: &str| statuses.get(i).and_then(|s| field(s, &[source]));
        // A `*Quantity` printed as Go does (`<nil>` when unset).
        let value = |value: &Value, path: &[&str]| quantity(value, path).unwrap_or("<nil>".into());
        match text(spec, &["type"]) {
            kind @ ("External" | "Object") => {
                let source = if kind == "External" {
                    "external"
                } else {
                    "object"
                };
                if field(spec, &[source, "target", "averageValue"]).is_some() {
                    let current = status(source)
                        .and_then(|s| quantity(s, &["current", "averageValue"]))
                        .unwrap_or("<unknown>".into());
                    let target = value(spec, &[source, "target", "averageValue"]);
                    format!("{current}/{target} (avg)")
                } else {
                    let current = status(source)
                        .map_or("<unknown>".into(), |s| value(s, &["current", "value"]));
                    format!("{current}/{}", value(spec, &[source, "target", "value"]))
                }
            }
            "Pods" => {
                let current = status("pods").map_or("<unknown>".into(), |s| {
                    value(s, &["current", "averageValue"])
                });
                let target = value(spec, &["pods", "target", "averageValue"]);
                format!("{current}/{target}")
            }
            kind @ ("Resource" | "ContainerResource") => {
                let source = if kind == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let resource = text(spec, &[source, "name"]);
                if field(spec, &[source, "target", "averageValue"]).is_some() {
                    let current = status(source).map_or("<unknown>".into(), |s| {
                        value(s, &["current", "averageValue"])
                    });
                    let target = value(spec, &[source, "target", "averageValue"]);
                    format!("{resource}: {current}/{target}")
                } else {
                    let percent = |value: Option<&Value>| {
                        value.and_then(Value::as_i64).map(|p| format!("{p}%"))
                    };
                    let current = percent(
                        status(source).and_then(|s| field(s, &["current", "averageUtilization"])),
                    )
                    .unwrap_or("<unknown>".into());
                    let target = percent(field(spec, &[source, "target", "averageUtilization"]))
                        .unwrap_or("<auto>".into());
                    format!("{resource}: {current}/{target}")
                }
            }
            _ => "<unknown type>".to_owned(),
        }
    });
    first_of(targets, METRICS_SHOWN, ", ")
}

/// `printPodDisruptionBudget`: the int-or-percent bounds, `N/A` when unset.
pub(super) fn pod_disruption_budget(budget: &Value, now: i128) -> Vec<Value> {
    let bound = |key: &str| match field(budget, &["spec", key]) {
        Some(Value::String(percent)) => percent.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => "N/A".to_owned(),
    };
    vec![
        json!(name(budget)),
        json!(bound("minAvailable")),
        json!(bound("maxUnavailable")),
        json!(int(budget, &["status", "disruptionsAllowed"])),
        json!(age(budget, now)),
    ]
}

/// `printPriorityClass` (preemption policy defaulted to `PreemptLowerPriority`).
pub(super) fn priority_class(class: &Value, now: i128) -> Vec<Value> {
    let policy = match text(class, &["preemptionPolicy"]) {
        "" => "PreemptLowerPriority",
        policy => policy,
    };
    vec![
        json!(name(class)),
        json!(int(class, &["value"])),
        json!(flag(class, &["globalDefault"])),
        json!(age(class, now)),
        json!(policy),
    ]
}

/// `printResourceQuota`: `resource: used/hard` for each hard limit in name order, those named
/// `limits.*` in the Limit cell, the others in the Request cell.
pub(super) fn resource_quota(quota: &Value, now: i128) -> Vec<Value> {
    let mut resources: Vec<&String> = map(quota, &["status", "hard"])
        .into_iter()
        .flat_map(|hard| hard.keys())
        .collect();
    resources.sort();
    let (limits, requests): (Vec<&String>, Vec<&String>) = resources
        .into_iter()
        .partition(|resource| resource.starts_with("limits."));
    let usage = |resources: Vec<&String>| {
        resources
            .into_iter()
            .map(|resource| {
                let used = quantity(quota, &["status", "used", resource]).unwrap_or("0".into());
                let hard = quantity(quota, &["status", "hard", resource]).unwrap_or("0".into());
                format!("{resource}: {used}/{hard}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        json!(name(quota)),
        json!(usage(requests)),
        json!(usage(limits)),
        json!(age(quota, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{CREATED, cells};
    use super::*;
    use crate::registry::Printer;

    fn hpa(spec: Value, status: Value) -> Vec<Value> {
        let mut spec = spec;
        spec["scaleTargetRef"] =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
        cells(
            Printer::HorizontalPodAutoscaler,
            json!({"metadata": {"name": "web", "creationTimestamp": CREATED}, "spec": spec, "status": status}),
        )
    }

    #[test]
    fn autoscalers_print_reference_targets_bounds_and_replicas() {
        let v2 = hpa(
            json!({"minReplicas": 2, "maxReplicas": 10, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            ]}),
            json!({"currentReplicas": 3, "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "120m"}}},
            ]}),
        );
        assert_eq!(
            v2,
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: 45%/60%"),
                json!("2"),
                json!(10),
                json!(3),
                json!("10m")
            ]
        );
        let v1 = hpa(
            json!({"maxReplicas": 5, "targetCPUUtilizationPercentage": 70}),
            json!({"currentReplicas": 1, "currentCPUUtilizationPercentage": 12}),
        );
        assert_eq!(
            v1[2..4],
            [json!("cpu: 12%/70%"), json!("1")],
            "v1's CPU fields; minReplicas defaults to 1"
        );
        let defaulted = hpa(json!({"maxReplicas": 5}), json!({}));
        assert_eq!(
            defaulted[2], "cpu: <unknown>/80%",
            "no metrics: v2's default CPU target"
        );
    }

    #[test]
    fn autoscaler_targets_format_each_source_and_truncate_after_two() {
        let specs = json!([
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
            {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
            {"type": "Object", "object": {"metric": {"name": "hits"}, "target": {"type": "Value", "value": "10"}}},
            {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
        ]);
        let statuses = json!([
            {"type": "Pods", "pods": {"current": {"averageValue": "250"}}},
            {"type": "External", "external": {"current": {"value": "3"}}},
        ]);
        let specs = specs.as_array().unwrap();
        let statuses = statuses.as_array().unwrap();
        assert_eq!(
            format_hpa_metrics(specs, statuses),
            "250/1k, <unknown>/30 (avg) + 3 more..."
        );
        let rest: Vec<String> = (2..5)
            .map(|i| format_hpa_metrics(&specs[i..=i], &[]))
            .collect();
        assert_eq!(
            rest,
            [
                "<unknown>/10",
                "memory: <unknown>/500Mi",
                "cpu: <unknown>/<auto>"
            ]
        );
        let object_status = [json!({"type": "Object", "object": {"current": {}}})];
        assert_eq!(
            format_hpa_metrics(&specs[2..3], &object_status),
            "<nil>/10",
            "a status without its value prints Go's nil quantity"
        );
        assert_eq!(
            format_hpa_metrics(&[json!({"type": "Bogus"})], &[]),
            "<unknown type>"
        );
        assert_eq!(format_hpa_metrics(&[], &[]), "<none>");
    }

    #[test]
    fn disruption_budgets_print_int_or_percent_bounds() {
        let budget = json!({"metadata": {"name": "pdb", "creationTimestamp": CREATED},
                            "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            cells(Printer::PodDisruptionBudget, budget),
            [
                json!("pdb"),
                json!("2"),
                json!("N/A"),
                json!(1),
                json!("10m")
            ]
        );
        let percent = json!({"metadata": {"name": "pdb"}, "spec": {"maxUnavailable": "25%"}});
        assert_eq!(
            cells(Printer::PodDisruptionBudget, percent)[1..4],
            [json!("N/A"), json!("25%"), json!(0)]
        );
    }

    #[test]
    fn priority_classes_print_value_default_and_preemption_policy() {
        let class = json!({"metadata": {"name": "high", "creationTimestamp": CREATED},
                           "value": 1000, "globalDefault": true});
        assert_eq!(
            cells(Printer::PriorityClass, class),
            [
                json!("high"),
                json!(1000),
                json!(true),
                json!("10m"),
                json!("PreemptLowerPriority")
            ]
        );
        let never = json!({"metadata": {"name": "low"}, "value": -5, "preemptionPolicy": "Never"});
        assert_eq!(
            cells(Printer::PriorityClass, never)[1..],
            [json!(-5), json!(false), json!("<unknown>"), json!("Never")]
        );
    }

    #[test]
    fn resource_quotas_split_requests_and_limits_in_name_order() {
        let quota = json!({
            "metadata": {"name": "q", "creationTimestamp": CREATED},
            "status": {
                "hard": {"pods": "10", "limits.memory": "2Gi", "requests.cpu": "1", "limits.cpu": "2", "configmaps": 5},
                "used": {"pods": "3", "requests.cpu": "500m", "limits.cpu": "1"},
            },
        });
        assert_eq!(
            cells(Printer::ResourceQuota, quota),
            [
                json!("q"),
                json!("configmaps: 0/5, pods: 3/10, requests.cpu: 500m/1"),
                json!("limits.cpu: 1/2, limits.memory: 0/2Gi"),
                json!("10m")
            ]
        );
        let empty = cells(
            Printer::ResourceQuota,
            json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}}),
        );
        assert_eq!(
            empty[1..3],
            [json!(""), json!("")],
            "only the status counts"
        );
    }
}
