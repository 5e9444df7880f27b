//! HorizontalPodAutoscalers in their two served versions over one stored form. Upstream
//! stores them as `autoscaling/v2` and converts `autoscaling/v1` on the way in and out
//! through its internal type (`pkg/apis/autoscaling/v1/conversion.go`): v1 has one CPU
//! utilization target, and carries every other metric, the behavior, the current metrics
//! and the conditions in four round-trip annotations. Without this a v2 client could read a
//! v1-shaped object (no `metrics`) and a v1 client a v2-shaped one.
//!
//! Also the defaults each version applies on decode (`pkg/apis/autoscaling/v1/defaults.go`,
//! `pkg/apis/autoscaling/v2/defaults.go`).

use serde_json::{Map, Value, json};

use super::fields::{child, forbidden, go_str, invalid, not_supported, required};
use crate::meta::FieldError;
use crate::object::Object;
use kubemock_apimachinery::quantity::Quantity;

/// The stored (and preferred) version.
pub(crate) const V2: &str = "autoscaling/v2";
/// The older served version.
pub(crate) const V1: &str = "autoscaling/v1";

/// `autoscaling.MetricSpecsAnnotation`: v1's metrics other than CPU utilization.
const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `autoscaling.MetricStatusesAnnotation`: v1's current metrics.
const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `autoscaling.HorizontalPodAutoscalerConditionsAnnotation`.
const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `autoscaling.BehaviorSpecsAnnotation`.
const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// The four annotations v1 round-trips v2's fields in (`DropRoundTripHorizontalPodAutoscalerAnnotations`).
const ROUND_TRIP_ANNOTATIONS: [&str; 4] = [
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
];

/// `autoscaling.DefaultCPUUtilization`: the target when an HPA names no metric.
const DEFAULT_CPU_UTILIZATION: i64 = 80;
/// v2's default scale-up rules: `scaleUpLimitMinimumPods` pods or `scaleUpLimitPercent` %
/// per `scaleUpPeriod` seconds, no stabilization (`v2/defaults.go`).
const SCALE_UP_PODS: i64 = 4;
const SCALE_UP_PERCENT: i64 = 100;
const SCALE_UP_PERIOD_SECONDS: i64 = 15;
/// v2's default scale-down rule: `scaleDownLimitPercent` % per `scaleDownPeriod` seconds; its
/// stabilization window stays unset (the controller's `--horizontal-pod-autoscaler-
/// downscale-stabilization` applies).
const SCALE_DOWN_PERCENT: i64 = 100;
const SCALE_DOWN_PERIOD_SECONDS: i64 = 15;

/// `object` (an HPA in either version) in `target` (`autoscaling/v1` or `autoscaling/v2`).
/// An object already in `target`'s version is returned as it is.
pub(crate) fn convert(object: Object, target: &str) -> Object {
    let source = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or(V2)
        .to_owned();
    match (source.as_str(), target) {
        (V1, V2) => v1_to_v2(&object),
        (V2, V1) => v2_to_v1(&object),
        _ => object,
    }
}

/// v1's decode-time defaults (`v1/defaults.go`), and the round trip through upstream's
/// internal type that every v1 write makes: what a v1 client is answered.
pub(crate) fn default_v1(object: &mut Object) {
    let spec = child(object, "spec");
    if !spec.contains_key("minReplicas") {
        spec.insert("minReplicas".to_owned(), json!(1));
    }
    let mut copy = object.clone();
    copy.insert("apiVersion".to_owned(), json!(V1));
    let mut round_trip = v2_to_v1(&v1_to_v2(&copy));
    if let Some(version) = object.get("apiVersion") {
        round_trip.insert("apiVersion".to_owned(), version.clone());
    }
    *object = round_trip;
}

/// v2's decode-time defaults (`v2/defaults.go`): `minReplicas` 1, a CPU utilization target
/// of 80 % when no metric is named, and every unset field of a given `behavior` filled.
pub(crate) fn default_v2(object: &mut Object) {
    let spec = child(object, "spec");
    if !spec.contains_key("minReplicas") {
        spec.insert("minReplicas".to_owned(), json!(1));
    }
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec.insert(
            "metrics".to_owned(),
            json!([cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]),
        );
    }
    if let Some(Value::Object(behavior)) = spec.get_mut("behavior") {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": SCALE_UP_PODS, "periodSeconds": SCALE_UP_PERIOD_SECONDS},
                {"type": "Percent", "value": SCALE_UP_PERCENT, "periodSeconds": SCALE_UP_PERIOD_SECONDS},
            ],
        });
        let down = json!({
            "selectPolicy": "Max",
            "policies": [
                {"type": "Percent", "value": SCALE_DOWN_PERCENT, "periodSeconds": SCALE_DOWN_PERIOD_SECONDS},
            ],
        });
        for (key, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let given = behavior.get(key).and_then(Value::as_object);
            let filled = fill_rules(given, defaults);
            behavior.insert(key.to_owned(), filled);
        }
    }
}

/// The longest stabilization window (`MaxStabilizationWindowSeconds`).
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
/// The longest policy period (`MaxPeriodSeconds`).
const MAX_PERIOD_SECONDS: i64 = 1800;
/// The metric source types (`validMetricSourceTypesList`, sorted).
const METRIC_SOURCE_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

/// `validateHorizontalPodAutoscalerSpec` (`pkg/apis/autoscaling/validation/validation.go`):
/// the replica bounds, the scale target, the metrics and the behavior, on the object as
/// upstream validates it (its internal form: v2's fields, so a v1 object is converted first and
/// its errors name v2's paths, as upstream's do).
pub(crate) fn validate(object: &Object, errors: &mut Vec<FieldError>) {
    let converted;
    let object = if object.get("apiVersion").and_then(Value::as_str) == Some(V1) {
        converted = v1_to_v2(object);
        &converted
    } else {
        object
    };
    let spec = object.get("spec");
    let int = |key: &str| spec.and_then(|s| s.get(key)).and_then(Value::as_i64);
    let min = int("minReplicas");
    let max = int("maxReplicas").unwrap_or(0);
    // The HPAScaleToZero feature gate is alpha and off: the lower bound is 1.
    if let Some(min) = min.filter(|m| *m < 1) {
        errors.push(invalid(
            "spec.minReplicas",
            min.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errors.push(invalid(
            "spec.maxReplicas",
            max.to_string(),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|min| max < min) {
        errors.push(invalid(
            "spec.maxReplicas",
            max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    validate_reference(
        spec.and_then(|s| s.get("scaleTargetRef")),
        "spec.scaleTargetRef",
        errors,
    );
    let metrics = spec
        .and_then(|s| s.get("metrics"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (index, metric) in metrics.iter().enumerate() {
        validate_metric(metric, &format!("spec.metrics[{index}]"), errors);
    }
    if let Some(behavior) = spec
        .and_then(|s| s.get("behavior"))
        .filter(|b| b.is_object())
    {
        for key in ["scaleUp", "scaleDown"] {
            if let Some(rules) = behavior.get(key).filter(|r| r.is_object()) {
                validate_rules(rules, &format!("spec.behavior.{key}"), errors);
            }
        }
    }
}

/// `validateScalingRules` and `validateScalingPolicy`.
fn validate_rules(rules: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(window) = rules
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
    {
        let field = format!("{path}.stabilizationWindowSeconds");
        if window < 0 {
            errors.push(invalid(
                field.clone(),
                window.to_string(),
                "must be greater than or equal to zero",
            ));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            errors.push(invalid(
                field,
                window.to_string(),
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(select) = rules.get("selectPolicy").and_then(Value::as_str)
        && !["Disabled", "Max", "Min"].contains(&select)
    {
        errors.push(not_supported(
            format!("{path}.selectPolicy"),
            select,
            &["Disabled", "Max", "Min"],
        ));
    }
    let policies = rules
        .get("policies")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if policies.is_empty() {
        errors.push(required(
            format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (index, policy) in policies.iter().enumerate() {
        let at = format!("{path}.policies[{index}]");
        let kind = policy.get("type").and_then(Value::as_str).unwrap_or("");
        if !["Pods", "Percent"].contains(&kind) {
            errors.push(not_supported(
                format!("{at}.type"),
                kind,
                &["Percent", "Pods"],
            ));
        }
        let value = policy.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            errors.push(invalid(
                format!("{at}.value"),
                value.to_string(),
                "must be greater than zero",
            ));
        }
        let period = policy
            .get("periodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if period <= 0 {
            errors.push(invalid(
                format!("{at}.periodSeconds"),
                period.to_string(),
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errors.push(invalid(
                format!("{at}.periodSeconds"),
                period.to_string(),
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
}

/// `validateMetricSpec`: a known type, its source present and no other, and the source's
/// own checks (only the first source present is checked, as upstream's).
fn validate_metric(metric: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let kind = metric.get("type").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        errors.push(required(
            format!("{path}.type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&kind) {
        errors.push(not_supported(
            format!("{path}.type"),
            kind,
            &METRIC_SOURCE_TYPES,
        ));
    }
    let present: Vec<&str> = [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ]
    .into_iter()
    .filter(|key| metric.get(*key).is_some_and(|v| !v.is_null()))
    .collect();
    if let Some(first) = present.first() {
        validate_source(first, &metric[*first], &format!("{path}.{first}"), errors);
    }
    let expected = match kind {
        "Object" => Some("object"),
        "Pods" => Some("pods"),
        "Resource" => Some("resource"),
        "External" => Some("external"),
        "ContainerResource" => Some("containerResource"),
        _ => None,
    };
    match expected {
        Some(key) if !present.contains(&key) => errors.push(required(
            format!("{path}.{key}"),
            "must populate information for the given metric source",
        )),
        Some(_) => {}
        // Upstream's switch adds a second NotSupported after the check above.
        None => errors.push(not_supported(
            format!("{path}.type"),
            kind,
            &METRIC_SOURCE_TYPES,
        )),
    }
    if present.len() != 1 {
        for key in present.iter().filter(|k| Some(**k) != expected) {
            errors.push(forbidden(
                format!("{path}.{key}"),
                "must populate the given metric source only",
            ));
        }
    }
}

/// The checks of one metric source (`validateObjectSource`, `validateExternalSource`,
/// `validatePodsSource`, `validateResourceSource`, `validateContainerResourceSource`).
fn validate_source(key: &str, source: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let target = source.get("target");
    match key {
        "object" | "external" | "pods" => {
            if key == "object" {
                validate_reference(
                    source.get("describedObject"),
                    &format!("{at}.describedObject"),
                    errors,
                );
            }
            validate_identifier(source.get("metric"), at, errors);
            validate_target(target, at, errors);
            let averaged = format!("{at}.target.averageValue");
            match key {
                "object" if !has(target, "value") && !has(target, "averageValue") => {
                    errors.push(required(
                        averaged,
                        "must set either a target value or averageValue",
                    ));
                }
                "external" => {
                    if !has(target, "value") && !has(target, "averageValue") {
                        errors.push(required(
                            averaged,
                            "must set either a target value for metric or a per-pod target",
                        ));
                    }
                    if has(target, "value") && has(target, "averageValue") {
                        errors.push(forbidden(
                            format!("{at}.target.value"),
                            "may not set both a target value for metric and a per-pod target",
                        ));
                    }
                }
                "pods" if !has(target, "averageValue") => {
                    errors.push(required(
                        averaged,
                        "must specify a positive target averageValue",
                    ));
                }
                _ => {}
            }
        }
        _ => {
            let name = source.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                errors.push(required(
                    format!("{at}.name"),
                    "must specify a resource name",
                ));
            }
            if key == "containerResource" {
                let container = source
                    .get("container")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if container.is_empty() {
                    errors.push(required(
                        format!("{at}.container"),
                        "must specify a container",
                    ));
                } else {
                    for message in kubemock_apimachinery::validation::is_dns1123_label(container) {
                        errors.push(invalid(
                            format!("{at}.container"),
                            go_str(container),
                            &message,
                        ));
                    }
                }
            }
            validate_target(target, at, errors);
            if !has(target, "averageUtilization") && !has(target, "averageValue") {
                errors.push(required(
                    format!("{at}.target.averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            }
            if has(target, "averageUtilization") && has(target, "averageValue") {
                errors.push(forbidden(
                    format!("{at}.target.averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
    }
}

/// Whether `target` has a non-null `key`.
fn has(target: Option<&Value>, key: &str) -> bool {
    target
        .and_then(|t| t.get(key))
        .is_some_and(|v| !v.is_null())
}

/// `ValidateCrossVersionObjectReference`: the scale target's, or a metric's described object's.
fn validate_reference(reference: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    for key in ["kind", "name"] {
        let value = reference
            .and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .unwrap_or("");
        if value.is_empty() {
            errors.push(required(format!("{path}.{key}"), ""));
            continue;
        }
        for message in kubemock_apimachinery::validation::is_valid_path_segment_name(value) {
            errors.push(invalid(format!("{path}.{key}"), go_str(value), &message));
        }
    }
}

/// `validateMetricIdentifier` of a source's `metric`.
fn validate_identifier(metric: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let name = metric
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.is_empty() {
        errors.push(required(
            format!("{path}.metric.name"),
            "must specify a metric name",
        ));
        return;
    }
    for message in kubemock_apimachinery::validation::is_valid_path_segment_name(name) {
        errors.push(invalid(
            format!("{path}.metric.name"),
            go_str(name),
            &message,
        ));
    }
}

/// `validateMetricTarget` of a source's `target`.
fn validate_target(target: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let at = format!("{path}.target");
    let kind = target
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind.is_empty() {
        errors.push(required(
            format!("{at}.type"),
            "must specify a metric target type",
        ));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&kind) {
        errors.push(invalid(
            format!("{at}.type"),
            go_str(kind),
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for key in ["value", "averageValue"] {
        let Some(text) = target.and_then(|t| t.get(key)).and_then(Value::as_str) else {
            continue;
        };
        if let Ok(quantity) = text.parse::<Quantity>()
            && quantity.sign() != 1
        {
            // A Quantity is a Stringer: upstream prints its canonical text unquoted.
            errors.push(FieldError::from(kubemock_apimachinery::field::Error {
                kind: kubemock_apimachinery::field::ErrorType::Invalid,
                field: format!("{at}.{key}"),
                bad_value: kubemock_apimachinery::field::BadValue::Stringer(quantity.to_string()),
                detail: "must be positive".to_owned(),
            }));
        }
    }
    if let Some(utilization) = target
        .and_then(|t| t.get("averageUtilization"))
        .and_then(Value::as_i64)
        .filter(|u| *u < 1)
    {
        errors.push(invalid(
            format!("{at}.averageUtilization"),
            utilization.to_string(),
            "must be greater than 0",
        ));
    }
}

/// `copyHPAScalingRules`: the given rules' set fields over the defaults, in v2's field order.
fn fill_rules(given: Option<&Map<String, Value>>, defaults: Value) -> Value {
    let Value::Object(mut rules) = defaults else {
        return defaults;
    };
    if let Some(given) = given {
        for key in ["stabilizationWindowSeconds", "selectPolicy", "policies"] {
            if let Some(value) = given.get(key).filter(|v| !v.is_null()) {
                rules.insert(key.to_owned(), value.clone());
            }
        }
        let mut ordered = Map::new();
        for key in ["stabilizationWindowSeconds", "selectPolicy", "policies"] {
            if let Some(value) = rules.remove(key) {
                ordered.insert(key.to_owned(), value);
            }
        }
        // Fields this server does not know (a newer client's `tolerance`) are kept.
        for (key, value) in given {
            if !ordered.contains_key(key) {
                ordered.insert(key.clone(), value.clone());
            }
        }
        return Value::Object(ordered);
    }
    Value::Object(rules)
}

/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`, then v2's
/// defaults as a read from storage applies them.
fn v1_to_v2(v1: &Object) -> Object {
    let mut annotations = annotations_of(v1);
    let spec = v1.get("spec").and_then(Value::as_object);
    let status = v1.get("status").and_then(Value::as_object);

    let mut out_spec = Map::new();
    copy_field(spec, &mut out_spec, "scaleTargetRef");
    copy_field(spec, &mut out_spec, "minReplicas");
    copy_field(spec, &mut out_spec, "maxReplicas");
    let mut metrics: Vec<Value> = Vec::new();
    if let Some(others) = annotations
        .get(METRICS_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok())
    {
        metrics.extend(others.iter().map(metric_spec_v1_to_v2));
    }
    if let Some(cpu) = spec
        .and_then(|s| s.get("targetCPUUtilizationPercentage"))
        .and_then(Value::as_i64)
    {
        metrics.push(cpu_utilization_metric(cpu));
    }
    if metrics.is_empty() {
        // v1 formerly defaulted in the controller; the conversion applies it explicitly.
        metrics.push(cpu_utilization_metric(DEFAULT_CPU_UTILIZATION));
    }
    out_spec.insert("metrics".to_owned(), Value::Array(metrics));
    if let Some(behavior) = annotations
        .get(BEHAVIOR_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|internal| behavior_internal_to_v2(&internal))
    {
        out_spec.insert("behavior".to_owned(), behavior);
    }

    let mut out_status = Map::new();
    copy_field(status, &mut out_status, "observedGeneration");
    copy_field(status, &mut out_status, "lastScaleTime");
    copy_field(status, &mut out_status, "currentReplicas");
    copy_field(status, &mut out_status, "desiredReplicas");
    let mut current: Option<Vec<Value>> = status
        .and_then(|s| s.get("currentCPUUtilizationPercentage"))
        .and_then(Value::as_i64)
        .map(|cpu| {
            vec![json!({
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": cpu}},
            })]
        });
    // The annotation's current metrics have more information: they replace the CPU one.
    if let Some(statuses) = annotations
        .get(CURRENT_METRICS_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok())
    {
        current = Some(statuses.iter().map(metric_status_v1_to_v2).collect());
    }
    if let Some(current) = current {
        out_status.insert("currentMetrics".to_owned(), Value::Array(current));
    }
    if let Some(conditions) = annotations
        .get(CONDITIONS_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok())
    {
        out_status.insert(
            "conditions".to_owned(),
            Value::Array(conditions.iter().map(condition).collect()),
        );
    }

    for key in ROUND_TRIP_ANNOTATIONS {
        annotations.shift_remove(key);
    }
    let mut out = with_metadata(v1, V2, annotations);
    out.insert("spec".to_owned(), Value::Object(out_spec));
    out.insert("status".to_owned(), Value::Object(out_status));
    default_v2(&mut out);
    out
}

/// `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`.
fn v2_to_v1(v2: &Object) -> Object {
    let mut annotations = annotations_of(v2);
    for key in ROUND_TRIP_ANNOTATIONS {
        annotations.shift_remove(key);
    }
    let spec = v2.get("spec").and_then(Value::as_object);
    let status = v2.get("status").and_then(Value::as_object);
    let metrics: &[Value] = spec
        .and_then(|s| s.get("metrics"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);

    let mut out_spec = Map::new();
    copy_field(spec, &mut out_spec, "scaleTargetRef");
    copy_field(spec, &mut out_spec, "minReplicas");
    copy_field(spec, &mut out_spec, "maxReplicas");
    if let Some(cpu) = metrics.iter().find_map(cpu_utilization_target) {
        out_spec.insert("targetCPUUtilizationPercentage".to_owned(), cpu.clone());
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| cpu_utilization_target(m).is_none())
        .map(metric_spec_v2_to_v1)
        .collect();
    if !others.is_empty() {
        annotations.insert(
            METRICS_ANNOTATION.to_owned(),
            Value::String(Value::Array(others).to_string()),
        );
    }
    let current: &[Value] = status
        .and_then(|s| s.get("currentMetrics"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    // Saved even when it maps to the CPU status, for its raw value.
    if !current.is_empty() {
        let statuses: Vec<Value> = current.iter().map(metric_status_v2_to_v1).collect();
        annotations.insert(
            CURRENT_METRICS_ANNOTATION.to_owned(),
            Value::String(Value::Array(statuses).to_string()),
        );
    }
    if let Some(behavior) = spec
        .and_then(|s| s.get("behavior"))
        .filter(|b| b.is_object())
    {
        annotations.insert(
            BEHAVIOR_ANNOTATION.to_owned(),
            Value::String(behavior_v2_to_internal(behavior).to_string()),
        );
    }
    let conditions: &[Value] = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if !conditions.is_empty() {
        let conditions: Vec<Value> = conditions.iter().map(condition).collect();
        annotations.insert(
            CONDITIONS_ANNOTATION.to_owned(),
            Value::String(Value::Array(conditions).to_string()),
        );
    }

    let mut out_status = Map::new();
    copy_field(status, &mut out_status, "observedGeneration");
    copy_field(status, &mut out_status, "lastScaleTime");
    out_status.insert(
        "currentReplicas".to_owned(),
        status
            .and_then(|s| s.get("currentReplicas"))
            .cloned()
            .unwrap_or(json!(0)),
    );
    out_status.insert(
        "desiredReplicas".to_owned(),
        status
            .and_then(|s| s.get("desiredReplicas"))
            .cloned()
            .unwrap_or(json!(0)),
    );
    let cpu_now = current
        .iter()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("Resource"))
        .filter_map(|m| m.get("resource"))
        .filter(|r| r.get("name").and_then(Value::as_str) == Some("cpu"))
        .filter_map(|r| r.pointer("/current/averageUtilization"))
        .next_back();
    if let Some(cpu) = cpu_now {
        out_status.insert("currentCPUUtilizationPercentage".to_owned(), cpu.clone());
    }

    let mut out = with_metadata(v2, V1, annotations);
    out.insert("spec".to_owned(), Value::Object(out_spec));
    out.insert("status".to_owned(), Value::Object(out_status));
    out
}

/// The kind, `apiVersion` and metadata of `object`, its annotations replaced (dropped when
/// none remain).
fn with_metadata(object: &Object, api_version: &str, annotations: Map<String, Value>) -> Object {
    let mut out = Map::new();
    out.insert(
        "kind".to_owned(),
        object
            .get("kind")
            .cloned()
            .unwrap_or(json!("HorizontalPodAutoscaler")),
    );
    out.insert("apiVersion".to_owned(), json!(api_version));
    let mut metadata = object
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if annotations.is_empty() {
        metadata.shift_remove("annotations");
    } else {
        metadata.insert("annotations".to_owned(), Value::Object(annotations));
    }
    out.insert("metadata".to_owned(), Value::Object(metadata));
    out
}

/// The object's annotations (a copy).
fn annotations_of(object: &Object) -> Map<String, Value> {
    object
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `from[key]` into `to`, when present and not null.
fn copy_field(from: Option<&Map<String, Value>>, to: &mut Map<String, Value>, key: &str) {
    put(to, key, from.and_then(|f| f.get(key)));
}

/// `to[key] = value`, when there is one and it is not null (Go's omitted pointer).
fn put(to: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(value) = value.filter(|v| !v.is_null()) {
        to.insert(key.to_owned(), value.clone());
    }
}

/// `to[key] = from[key]` for each key present in `from`, in `keys`' order.
fn pick(from: &Value, keys: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for key in keys {
        if let Some(value) = from.get(*key).filter(|v| !v.is_null()) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    out
}

/// A v2 metric targeting `percent` average CPU utilization.
fn cpu_utilization_metric(percent: i64) -> Value {
    json!({
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": percent},
        },
    })
}

/// The utilization of a v2 metric that v1's `targetCPUUtilizationPercentage` carries: a
/// Resource metric on `cpu` with an average utilization target.
fn cpu_utilization_target(metric: &Value) -> Option<&Value> {
    if metric.get("type").and_then(Value::as_str) != Some("Resource") {
        return None;
    }
    let resource = metric.get("resource")?;
    if resource.get("name").and_then(Value::as_str) != Some("cpu") {
        return None;
    }
    resource
        .pointer("/target/averageUtilization")
        .filter(|v| !v.is_null())
}

/// A Go `resource.Quantity` field that is not a pointer: its zero value is `"0"`.
fn quantity_or_zero(value: Option<&Value>) -> Value {
    value
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or(json!("0"))
}

/// `{kind, name, apiVersion}` of a CrossVersionObjectReference.
fn reference(value: Option<&Value>) -> Value {
    let value = value.cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert(
        "kind".to_owned(),
        value.get("kind").cloned().unwrap_or(json!("")),
    );
    out.insert(
        "name".to_owned(),
        value.get("name").cloned().unwrap_or(json!("")),
    );
    if let Some(version) = value
        .get("apiVersion")
        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    {
        out.insert("apiVersion".to_owned(), version.clone());
    }
    Value::Object(out)
}

/// v2's `MetricIdentifier` from v1's name and selector fields.
fn identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("name".to_owned(), name.cloned().unwrap_or(json!("")));
    put(&mut out, "selector", selector);
    Value::Object(out)
}

/// A v1 metric source (`MetricSpec` in its v2beta1 shape) as v2's (the `Convert_v1_*Source*`
/// functions).
fn metric_spec_v1_to_v2(metric: &Value) -> Value {
    let kind = metric.get("type").cloned().unwrap_or(json!(""));
    let mut out = Map::new();
    out.insert("type".to_owned(), kind);
    if let Some(object) = metric.get("object").filter(|v| v.is_object()) {
        let average = object.get("averageValue").filter(|v| !v.is_null());
        let mut target = Map::new();
        target.insert(
            "type".to_owned(),
            json!(if average.is_none() {
                "Value"
            } else {
                "AverageValue"
            }),
        );
        target.insert(
            "value".to_owned(),
            quantity_or_zero(object.get("targetValue")),
        );
        if let Some(average) = average {
            target.insert("averageValue".to_owned(), average.clone());
        }
        out.insert(
            "object".to_owned(),
            json!({
                "describedObject": reference(object.get("target")),
                "target": target,
                "metric": identifier(object.get("metricName"), object.get("selector")),
            }),
        );
    }
    if let Some(pods) = metric.get("pods").filter(|v| v.is_object()) {
        out.insert(
            "pods".to_owned(),
            json!({
                "metric": identifier(pods.get("metricName"), pods.get("selector")),
                "target": {
                    "type": "AverageValue",
                    "averageValue": quantity_or_zero(pods.get("targetAverageValue")),
                },
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(source) = metric.get(key).filter(|v| v.is_object()) {
            let utilization = source
                .get("targetAverageUtilization")
                .filter(|v| !v.is_null());
            let mut target = Map::new();
            target.insert(
                "type".to_owned(),
                json!(if utilization.is_none() {
                    "AverageValue"
                } else {
                    "Utilization"
                }),
            );
            put(
                &mut target,
                "averageValue",
                source.get("targetAverageValue"),
            );
            if let Some(utilization) = utilization {
                target.insert("averageUtilization".to_owned(), utilization.clone());
            }
            let mut out_source = Map::new();
            out_source.insert(
                "name".to_owned(),
                source.get("name").cloned().unwrap_or(json!("")),
            );
            out_source.insert("target".to_owned(), Value::Object(target));
            if key == "containerResource" {
                out_source.insert(
                    "container".to_owned(),
                    source.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.to_owned(), Value::Object(out_source));
        }
    }
    if let Some(external) = metric.get("external").filter(|v| v.is_object()) {
        let value = external.get("targetValue").filter(|v| !v.is_null());
        let mut target = Map::new();
        target.insert(
            "type".to_owned(),
            json!(if value.is_none() {
                "AverageValue"
            } else {
                "Value"
            }),
        );
        if let Some(value) = value {
            target.insert("value".to_owned(), value.clone());
        }
        put(
            &mut target,
            "averageValue",
            external.get("targetAverageValue"),
        );
        out.insert(
            "external".to_owned(),
            json!({
                "metric": identifier(external.get("metricName"), external.get("metricSelector")),
                "target": target,
            }),
        );
    }
    Value::Object(out)
}

/// A v2 metric source as v1's (the `Convert_autoscaling_*Source_To_v1_*` functions).
fn metric_spec_v2_to_v1(metric: &Value) -> Value {
    let kind = metric.get("type").cloned().unwrap_or(json!(""));
    let mut out = Map::new();
    out.insert("type".to_owned(), kind);
    if let Some(object) = metric.get("object").filter(|v| v.is_object()) {
        let mut source = Map::new();
        source.insert(
            "target".to_owned(),
            reference(object.get("describedObject")),
        );
        source.insert(
            "metricName".to_owned(),
            object.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        source.insert(
            "targetValue".to_owned(),
            quantity_or_zero(object.pointer("/target/value")),
        );
        put(&mut source, "selector", object.pointer("/metric/selector"));
        put(
            &mut source,
            "averageValue",
            object.pointer("/target/averageValue"),
        );
        out.insert("object".to_owned(), Value::Object(source));
    }
    if let Some(pods) = metric.get("pods").filter(|v| v.is_object()) {
        let mut source = Map::new();
        source.insert(
            "metricName".to_owned(),
            pods.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        source.insert(
            "targetAverageValue".to_owned(),
            quantity_or_zero(pods.pointer("/target/averageValue")),
        );
        put(&mut source, "selector", pods.pointer("/metric/selector"));
        out.insert("pods".to_owned(), Value::Object(source));
    }
    for key in ["resource", "containerResource"] {
        if let Some(resource) = metric.get(key).filter(|v| v.is_object()) {
            let mut source = pick(resource, &["name"]);
            if let Some(target) = resource.get("target") {
                put(
                    &mut source,
                    "targetAverageUtilization",
                    target.get("averageUtilization"),
                );
                put(
                    &mut source,
                    "targetAverageValue",
                    target.get("averageValue"),
                );
            }
            if key == "containerResource" {
                source.insert(
                    "container".to_owned(),
                    resource.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.to_owned(), Value::Object(source));
        }
    }
    if let Some(external) = metric.get("external").filter(|v| v.is_object()) {
        let mut source = Map::new();
        source.insert(
            "metricName".to_owned(),
            external
                .pointer("/metric/name")
                .cloned()
                .unwrap_or(json!("")),
        );
        put(
            &mut source,
            "metricSelector",
            external.pointer("/metric/selector"),
        );
        put(
            &mut source,
            "targetValue",
            external.pointer("/target/value"),
        );
        put(
            &mut source,
            "targetAverageValue",
            external.pointer("/target/averageValue"),
        );
        out.insert("external".to_owned(), Value::Object(source));
    }
    Value::Object(out)
}

/// A v1 metric status as v2's (the `Convert_v1_*Status_To_autoscaling_*` functions).
fn metric_status_v1_to_v2(metric: &Value) -> Value {
    let kind = metric.get("type").cloned().unwrap_or(json!(""));
    let mut out = Map::new();
    out.insert("type".to_owned(), kind);
    if let Some(object) = metric.get("object").filter(|v| v.is_object()) {
        let mut current = Map::new();
        current.insert(
            "value".to_owned(),
            quantity_or_zero(object.get("currentValue")),
        );
        put(&mut current, "averageValue", object.get("averageValue"));
        out.insert(
            "object".to_owned(),
            json!({
                "metric": identifier(object.get("metricName"), object.get("selector")),
                "current": current,
                "describedObject": reference(object.get("target")),
            }),
        );
    }
    if let Some(pods) = metric.get("pods").filter(|v| v.is_object()) {
        out.insert(
            "pods".to_owned(),
            json!({
                "metric": identifier(pods.get("metricName"), pods.get("selector")),
                "current": {"averageValue": quantity_or_zero(pods.get("currentAverageValue"))},
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(source) = metric.get(key).filter(|v| v.is_object()) {
            let mut current = Map::new();
            current.insert(
                "averageValue".to_owned(),
                quantity_or_zero(source.get("currentAverageValue")),
            );
            put(
                &mut current,
                "averageUtilization",
                source.get("currentAverageUtilization"),
            );
            let mut out_source = pick(source, &["name"]);
            out_source.insert("current".to_owned(), Value::Object(current));
            if key == "containerResource" {
                out_source.insert(
                    "container".to_owned(),
                    source.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.to_owned(), Value::Object(out_source));
        }
    }
    if let Some(external) = metric.get("external").filter(|v| v.is_object()) {
        let mut current = Map::new();
        current.insert(
            "value".to_owned(),
            quantity_or_zero(external.get("currentValue")),
        );
        put(
            &mut current,
            "averageValue",
            external.get("currentAverageValue"),
        );
        out.insert(
            "external".to_owned(),
            json!({
                "metric": identifier(external.get("metricName"), external.get("metricSelector")),
                "current": current,
            }),
        );
    }
    Value::Object(out)
}

/// A v2 metric status as v1's (the `Convert_autoscaling_*Status_To_v1_*` functions).
fn metric_status_v2_to_v1(metric: &Value) -> Value {
    let kind = metric.get("type").cloned().unwrap_or(json!(""));
    let mut out = Map::new();
    out.insert("type".to_owned(), kind);
    if let Some(object) = metric.get("object").filter(|v| v.is_object()) {
        let mut status = Map::new();
        status.insert(
            "target".to_owned(),
            reference(object.get("describedObject")),
        );
        status.insert(
            "metricName".to_owned(),
            object.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        status.insert(
            "currentValue".to_owned(),
            quantity_or_zero(object.pointer("/current/value")),
        );
        put(&mut status, "selector", object.pointer("/metric/selector"));
        put(
            &mut status,
            "averageValue",
            object.pointer("/current/averageValue"),
        );
        out.insert("object".to_owned(), Value::Object(status));
    }
    if let Some(pods) = metric.get("pods").filter(|v| v.is_object()) {
        let mut status = Map::new();
        status.insert(
            "metricName".to_owned(),
            pods.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        status.insert(
            "currentAverageValue".to_owned(),
            quantity_or_zero(pods.pointer("/current/averageValue")),
        );
        put(&mut status, "selector", pods.pointer("/metric/selector"));
        out.insert("pods".to_owned(), Value::Object(status));
    }
    for key in ["resource", "containerResource"] {
        if let Some(resource) = metric.get(key).filter(|v| v.is_object()) {
            let mut status = pick(resource, &["name"]);
            put(
                &mut status,
                "currentAverageUtilization",
                resource.pointer("/current/averageUtilization"),
            );
            status.insert(
                "currentAverageValue".to_owned(),
                quantity_or_zero(resource.pointer("/current/averageValue")),
            );
            if key == "containerResource" {
                status.insert(
                    "container".to_owned(),
                    resource.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.to_owned(), Value::Object(status));
        }
    }
    if let Some(external) = metric.get("external").filter(|v| v.is_object()) {
        let mut status = Map::new();
        status.insert(
            "metricName".to_owned(),
            external
                .pointer("/metric/name")
                .cloned()
                .unwrap_or(json!("")),
        );
        put(
            &mut status,
            "metricSelector",
            external.pointer("/metric/selector"),
        );
        status.insert(
            "currentValue".to_owned(),
            quantity_or_zero(external.pointer("/current/value")),
        );
        put(
            &mut status,
            "currentAverageValue",
            external.pointer("/current/averageValue"),
        );
        out.insert("external".to_owned(), Value::Object(status));
    }
    Value::Object(out)
}

/// A condition in the field order both versions share.
fn condition(condition: &Value) -> Value {
    Value::Object(pick(
        condition,
        &["type", "status", "lastTransitionTime", "reason", "message"],
    ))
}

/// v2's `behavior` as upstream's annotation holds it: the internal Go type marshalled, with
/// its field names and nulls (`json.Marshal(in.Spec.Behavior)`).
fn behavior_v2_to_internal(behavior: &Value) -> Value {
    let rules = |rules: Option<&Value>| -> Value {
        let Some(rules) = rules.filter(|r| r.is_object()) else {
            return Value::Null;
        };
        let policies = match rules.get("policies").and_then(Value::as_array) {
            Some(policies) => Value::Array(
                policies
                    .iter()
                    .map(|p| {
                        json!({
                            "Type": p.get("type").cloned().unwrap_or(json!("")),
                            "Value": p.get("value").cloned().unwrap_or(json!(0)),
                            "PeriodSeconds": p.get("periodSeconds").cloned().unwrap_or(json!(0)),
                        })
                    })
                    .collect(),
            ),
            None => Value::Null,
        };
        json!({
            "StabilizationWindowSeconds": rules.get("stabilizationWindowSeconds").cloned().unwrap_or(Value::Null),
            "SelectPolicy": rules.get("selectPolicy").cloned().unwrap_or(Value::Null),
            "Policies": policies,
        })
    };
    json!({
        "ScaleUp": rules(behavior.get("scaleUp")),
        "ScaleDown": rules(behavior.get("scaleDown")),
    })
}

/// The behavior annotation as v2's `behavior`, or `None` when it names neither direction.
/// Go's decoder matches field names case-insensitively, so `scaleUp` reads as `ScaleUp`.
fn behavior_internal_to_v2(internal: &Value) -> Option<Value> {
    let field = |value: &Value, name: &str| -> Option<Value> {
        value
            .as_object()?
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_null())
    };
    let rules = |rules: Value| -> Value {
        let mut out = Map::new();
        if let Some(window) = field(&rules, "StabilizationWindowSeconds") {
            out.insert("stabilizationWindowSeconds".to_owned(), window);
        }
        if let Some(select) = field(&rules, "SelectPolicy") {
            out.insert("selectPolicy".to_owned(), select);
        }
        if let Some(Value::Array(policies)) = field(&rules, "Policies") {
            let policies = policies
                .iter()
                .map(|p| {
                    let mut policy = Map::new();
                    for (name, key) in [
                        ("Type", "type"),
                        ("Value", "value"),
                        ("PeriodSeconds", "periodSeconds"),
                    ] {
                        if let Some(value) = field(p, name) {
                            policy.insert(key.to_owned(), value);
                        }
                    }
                    Value::Object(policy)
                })
                .collect();
            out.insert("policies".to_owned(), Value::Array(policies));
        }
        Value::Object(out)
    };
    let up = field(internal, "ScaleUp").map(rules);
    let down = field(internal, "ScaleDown").map(rules);
    if up.is_none() && down.is_none() {
        return None;
    }
    let mut behavior = Map::new();
    if let Some(up) = up {
        behavior.insert("scaleUp".to_owned(), up);
    }
    if let Some(down) = down {
        behavior.insert("scaleDown".to_owned(), down);
    }
    Some(Value::Object(behavior))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// A v2 HPA with a CPU target, a Pods metric, behavior, current metrics and a condition.
    fn full_v2() -> Object {
        object(json!({
            "kind": "HorizontalPodAutoscaler",
            "apiVersion": V2,
            "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {"type": "Pods", "pods": {
                        "metric": {"name": "qps"},
                        "target": {"type": "AverageValue", "averageValue": "100"}}},
                    cpu_utilization_metric(60),
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
            },
            "status": {
                "currentReplicas": 3,
                "desiredReplicas": 4,
                "currentMetrics": [
                    {"type": "Resource", "resource": {
                        "name": "cpu", "current": {"averageValue": "250m", "averageUtilization": 75}}},
                ],
                "conditions": [
                    {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale"},
                ],
            },
        }))
    }

    #[test]
    fn v2_to_v1_keeps_cpu_in_fields_and_the_rest_in_annotations() {
        // Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler.
        let v1 = convert(full_v2(), V1);
        assert_eq!(v1["apiVersion"], V1);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 75);
        assert_eq!(v1["status"]["desiredReplicas"], 4);
        let annotations = &v1["metadata"]["annotations"];
        assert_eq!(annotations["team"], "a");
        let metrics: Value =
            serde_json::from_str(annotations[METRICS_ANNOTATION].as_str().expect("set"))
                .expect("json");
        assert_eq!(
            metrics,
            json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "100"}}])
        );
        let behavior: Value =
            serde_json::from_str(annotations[BEHAVIOR_ANNOTATION].as_str().expect("set"))
                .expect("json");
        assert_eq!(
            behavior,
            json!({"ScaleUp": null, "ScaleDown": {
                "StabilizationWindowSeconds": 60, "SelectPolicy": null, "Policies": null}})
        );
        assert!(annotations[CONDITIONS_ANNOTATION].is_string());
        assert!(annotations[CURRENT_METRICS_ANNOTATION].is_string());
        assert!(v1["spec"].get("metrics").is_none());
    }

    #[test]
    fn v2_through_v1_and_back_is_the_defaulted_v2() {
        let original = full_v2();
        let back = convert(convert(original.clone(), V1), V2);
        let mut expected = original;
        default_v2(&mut expected);
        // The CPU metric comes back last, after the annotation's others (as upstream).
        assert_eq!(back["spec"]["metrics"], expected["spec"]["metrics"]);
        assert_eq!(back["spec"]["behavior"], expected["spec"]["behavior"]);
        assert_eq!(
            back["spec"]["behavior"]["scaleUp"]["policies"][0]["value"],
            SCALE_UP_PODS
        );
        assert_eq!(
            back["status"]["currentMetrics"],
            expected["status"]["currentMetrics"]
        );
        assert_eq!(
            back["status"]["conditions"],
            expected["status"]["conditions"]
        );
        assert_eq!(back["metadata"]["annotations"], json!({"team": "a"}));
    }

    #[test]
    fn v1_without_a_target_gets_the_default_cpu_metric() {
        let v1 = object(json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": V1,
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
        }));
        let v2 = convert(v1.clone(), V2);
        assert_eq!(v2["spec"]["metrics"], json!([cpu_utilization_metric(80)]));
        assert_eq!(v2["spec"]["minReplicas"], 1);
        assert!(v2["metadata"].get("annotations").is_none());
        // What a v1 create answers: the default made explicit, as upstream's round trip does.
        let mut answered = v1;
        default_v1(&mut answered);
        assert_eq!(answered["spec"]["targetCPUUtilizationPercentage"], 80);
        assert_eq!(answered["spec"]["minReplicas"], 1);
        assert_eq!(answered["apiVersion"], V1);
    }

    #[test]
    fn the_behavior_annotation_reads_case_insensitively_and_empty_is_none() {
        let internal = json!({"scaleUp": {"selectPolicy": "Disabled"}});
        assert_eq!(
            behavior_internal_to_v2(&internal),
            Some(json!({"scaleUp": {"selectPolicy": "Disabled"}}))
        );
        assert_eq!(
            behavior_internal_to_v2(&json!({"ScaleUp": null, "ScaleDown": null})),
            None
        );
        // An unparsable annotation is ignored, as upstream ignores the unmarshal error.
        let v1 = object(json!({
            "apiVersion": V1,
            "metadata": {"annotations": {BEHAVIOR_ANNOTATION: "{not json"}},
            "spec": {"maxReplicas": 1},
        }));
        let v2 = convert(v1, V2);
        assert!(v2["spec"].get("behavior").is_none());
        assert!(v2["metadata"].get("annotations").is_none());
    }

    #[test]
    fn every_metric_kind_survives_the_round_trip() {
        let metrics = json!([
            {"type": "Object", "object": {
                "describedObject": {"kind": "Ingress", "name": "main", "apiVersion": "networking.k8s.io/v1"},
                "target": {"type": "Value", "value": "10k"},
                "metric": {"name": "requests", "selector": {"matchLabels": {"a": "b"}}}}},
            {"type": "External", "external": {
                "metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "30"}}},
            {"type": "ContainerResource", "containerResource": {
                "name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"},
                "container": "app"}},
            {"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "AverageValue", "averageValue": "500m"}}},
        ]);
        let v2 = object(json!({
            "apiVersion": V2, "metadata": {"name": "x"},
            "spec": {"maxReplicas": 5, "minReplicas": 1, "metrics": metrics},
        }));
        let back = convert(convert(v2, V1), V2);
        assert_eq!(back["spec"]["metrics"], metrics);
    }

    /// `field: detail` of each error `validate` finds.
    fn messages(value: Value) -> Vec<String> {
        let mut errors = Vec::new();
        validate(&object(value), &mut errors);
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn metrics_and_behavior_are_validated_as_upstream_words_it() {
        // pkg/apis/autoscaling/validation/validation.go.
        let spec = |metrics: Value, behavior: Value| {
            json!({"apiVersion": V2, "spec": {"maxReplicas": 3,
                "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "metrics": metrics, "behavior": behavior}})
        };
        assert_eq!(
            messages(spec(
                json!([
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 0}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"},
                        "target": {"type": "AverageValue", "averageValue": "-1"}},
                     "resource": {"name": "cpu"}},
                    {"type": "Bogus"},
                ]),
                json!({"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Most",
                    "policies": [{"type": "Pods", "value": 0, "periodSeconds": 2000}]},
                       "scaleDown": {}}),
            )),
            vec![
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
                "spec.metrics[1].pods.target.averageValue: Invalid value: -1: must be positive",
                "spec.metrics[1].resource: Forbidden: must populate the given metric source only",
                "spec.metrics[2].type: Unsupported value: \"Bogus\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[2].type: Unsupported value: \"Bogus\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
            ]
        );
        // A v1 object is validated in v2's form: its CPU target is a v2 metric.
        let v1 = json!({"apiVersion": V1, "spec": {"maxReplicas": 3,
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "targetCPUUtilizationPercentage": -5}});
        assert_eq!(
            messages(v1),
            vec![
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: -5: must be greater than 0"
            ]
        );
    }
}
