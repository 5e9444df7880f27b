//! Workloads (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet; batch/v1 Job, CronJob;
//! core/v1 ReplicationController and PodTemplate): the defaults of `pkg/apis/{apps,batch,core}/
//! v1/defaults.go` (with the pod template's, `pods`), the status a new object starts with, the
//! Job's generated selector, and the validation of `pkg/apis/{apps,batch}/validation` users
//! meet: selectors required, matching the template and immutable, restart policies, strategies.

use kubemock_apimachinery::intstr::IntOrString;
use kubemock_apimachinery::validation;
use serde::Deserialize as _;
use serde_json::{Map, Value, json};

use super::fields::{
    at, child, child_if, default_to, forbidden, go_int_or_string, go_label_selector, go_string_map,
    immutable, invalid, not_supported, obj_at, required, selector_is_empty, selector_matches,
    str_at,
};
use super::pods;
use crate::meta::FieldError;
use crate::object::Object;

/// The Job labels the real server puts on a Job's pods, and the one its selector matches.
const JOB_CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_LABELS: [(&str, JobLabel); 4] = [
    ("batch.kubernetes.io/controller-uid", JobLabel::Uid),
    ("batch.kubernetes.io/job-name", JobLabel::Name),
    ("controller-uid", JobLabel::Uid),
    ("job-name", JobLabel::Name),
];

#[derive(Clone, Copy)]
enum JobLabel {
    Uid,
    Name,
}

/// `SetDefaults_Deployment`.
pub(super) fn default_deployment(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "replicas", json!(1));
    let strategy = child(spec, "strategy");
    default_to(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        let rolling = child(strategy, "rollingUpdate");
        default_to(rolling, "maxUnavailable", json!("25%"));
        default_to(rolling, "maxSurge", json!("25%"));
    }
    default_to(spec, "revisionHistoryLimit", json!(10));
    default_to(spec, "progressDeadlineSeconds", json!(600));
    pods::default_template(child(spec, "template"));
}

/// apps/v1 `SetDefaults_ReplicaSet`.
pub(super) fn default_replica_set(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "replicas", json!(1));
    pods::default_template(child(spec, "template"));
}

/// core/v1 `SetDefaults_ReplicationController`: selector and labels from the template.
pub(super) fn default_replication_controller(object: &mut Object) {
    let template_labels = obj_at(object, &["spec", "template", "metadata", "labels"]).cloned();
    if let Some(labels) = template_labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
        let spec = child(object, "spec");
        if spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            spec.insert("selector".to_owned(), labels.clone());
        }
        let metadata = child(object, "metadata");
        if metadata
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            metadata.insert("labels".to_owned(), labels);
        }
    }
    let spec = child(object, "spec");
    default_to(spec, "replicas", json!(1));
    pods::default_template(child(spec, "template"));
}

/// core/v1 PodTemplate.
pub(super) fn default_pod_template(object: &mut Object) {
    pods::default_template(child(object, "template"));
}

/// `SetDefaults_StatefulSet`.
pub(super) fn default_stateful_set(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "podManagementPolicy", json!("OrderedReady"));
    let strategy = child(spec, "updateStrategy");
    if strategy.get("type").is_none() {
        strategy.insert("type".to_owned(), json!("RollingUpdate"));
        child(strategy, "rollingUpdate");
    }
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
        && let Some(rolling) = child_if(strategy, "rollingUpdate")
    {
        default_to(rolling, "partition", json!(0));
    }
    let retention = child(spec, "persistentVolumeClaimRetentionPolicy");
    default_to(retention, "whenDeleted", json!("Retain"));
    default_to(retention, "whenScaled", json!("Retain"));
    default_to(spec, "replicas", json!(1));
    default_to(spec, "revisionHistoryLimit", json!(10));
    pods::default_template(child(spec, "template"));
    if let Some(Value::Array(claims)) = spec.get_mut("volumeClaimTemplates") {
        for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
            default_to(claim, "apiVersion", json!("v1"));
            default_to(claim, "kind", json!("PersistentVolumeClaim"));
            default_to(child(claim, "spec"), "volumeMode", json!("Filesystem"));
            default_to(child(claim, "status"), "phase", json!("Pending"));
        }
    }
}

/// `SetDefaults_DaemonSet`.
pub(super) fn default_daemon_set(object: &mut Object) {
    let spec = child(object, "spec");
    let strategy = child(spec, "updateStrategy");
    default_to(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        let rolling = child(strategy, "rollingUpdate");
        default_to(rolling, "maxUnavailable", json!(1));
        default_to(rolling, "maxSurge", json!(0));
    }
    default_to(spec, "revisionHistoryLimit", json!(10));
    pods::default_template(child(spec, "template"));
}

/// Where apps/v1 DaemonSets show the template generation of the internal type
/// (`DeprecatedTemplateGeneration`); the DaemonSet controller labels pods with it.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The DaemonSet strategy's template generation: 1 on create (`old` absent), then one more
/// whenever an update changes the template, whatever the client sent (`PrepareForCreate`,
/// `PrepareForUpdate` and the v1 conversion, which always writes the annotation).
pub(super) fn set_template_generation(object: &mut Object, old: Option<&Object>) {
    let generation = match old {
        None => 1,
        Some(old) => {
            let previous = obj_at(old, &["metadata", "annotations"])
                .and_then(|a| a.get(TEMPLATE_GENERATION))
                .and_then(Value::as_str)
                .and_then(|g| g.parse::<i64>().ok())
                .unwrap_or(0);
            let template = |o: &Object| obj_at(o, &["spec", "template"]).cloned();
            if template(old) == template(object) {
                previous
            } else {
                previous + 1
            }
        }
    };
    let metadata = crate::object::metadata_mut(object);
    let annotations = child(metadata, "annotations");
    annotations.insert(
        TEMPLATE_GENERATION.to_owned(),
        json!(generation.to_string()),
    );
}

/// `SetDefaults_Job` (1.32: with the pod replacement policy of the JobPodReplacementPolicy
/// beta).
pub(super) fn default_job(object: &mut Object) {
    let template_labels = obj_at(object, &["spec", "template", "metadata", "labels"]).cloned();
    let spec = child(object, "spec");
    default_job_spec(spec);
    if let Some(labels) = template_labels.filter(Value::is_object) {
        let metadata = child(object, "metadata");
        if metadata
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            metadata.insert("labels".to_owned(), labels);
        }
    }
}

fn default_job_spec(spec: &mut Map<String, Value>) {
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        spec.insert("completions".to_owned(), json!(1));
        spec.insert("parallelism".to_owned(), json!(1));
    }
    default_to(spec, "parallelism", json!(1));
    let backoff = if spec.get("backoffLimitPerIndex").is_some() {
        i64::from(i32::MAX)
    } else {
        6
    };
    default_to(spec, "backoffLimit", json!(backoff));
    default_to(spec, "completionMode", json!("NonIndexed"));
    default_to(spec, "suspend", json!(false));
    let replacement = if spec.get("podFailurePolicy").is_some() {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_to(spec, "podReplacementPolicy", json!(replacement));
    pods::default_template(child(spec, "template"));
}

/// `SetDefaults_CronJob` (the job template gets the pod template's defaults, not the Job's).
pub(super) fn default_cron_job(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "concurrencyPolicy", json!("Allow"));
    default_to(spec, "suspend", json!(false));
    default_to(spec, "successfulJobsHistoryLimit", json!(3));
    default_to(spec, "failedJobsHistoryLimit", json!(1));
    let job_spec = child(child(spec, "jobTemplate"), "spec");
    pods::default_template(child(job_spec, "template"));
}

/// The status a new workload starts with (the strategies' `PrepareForCreate` reset it; the
/// fields without `omitempty` show as zeros).
pub(super) fn initial_status(kind: &str) -> Value {
    match kind {
        "ReplicaSet" | "ReplicationController" => json!({"replicas": 0}),
        "StatefulSet" => json!({"replicas": 0, "availableReplicas": 0}),
        "DaemonSet" => json!({
            "currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0,
        }),
        _ => json!({}),
    }
}

/// The Job strategy's `generateSelector`: the Job's pods are labelled with its uid and name,
/// and its selector matches the uid (unless `manualSelector`).
pub(super) fn generate_job_selector(object: &mut Object) {
    if obj_at(object, &["spec", "manualSelector"]).and_then(Value::as_bool) == Some(true) {
        return;
    }
    let name = crate::object::name_of(object).to_owned();
    let uid = crate::object::meta_str(object, "uid")
        .unwrap_or("")
        .to_owned();
    let spec = child(object, "spec");
    let labels = child(child(child(spec, "template"), "metadata"), "labels");
    for (key, value) in JOB_LABELS {
        let value = match value {
            JobLabel::Uid => &uid,
            JobLabel::Name => &name,
        };
        labels.entry(key.to_owned()).or_insert_with(|| json!(value));
    }
    labels.sort_keys();
    let match_labels = child(child(spec, "selector"), "matchLabels");
    match_labels
        .entry(JOB_CONTROLLER_UID.to_owned())
        .or_insert_with(|| json!(uid));
}

/// What checks a workload's selector and template.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Selector {
    /// `metav1.LabelSelector`, required; the kind named in the empty-selector message.
    Required(&'static str),
    /// Job: optional (generated).
    Optional,
}

/// The restart policies a workload's template may have.
const ALWAYS: &[&str] = &["Always"];
const ON_FAILURE_OR_NEVER: &[&str] = &["OnFailure", "Never"];

/// Selector and template checks shared by the apps kinds (`ValidatePodTemplateSpecForReplicaSet`
/// and friends).
fn validate_selector_and_template(
    spec: Option<&Value>,
    selector_rule: Selector,
    restart_policies: &[&str],
    errors: &mut Vec<FieldError>,
) {
    let selector = spec.and_then(|s| s.get("selector"));
    let mut selects_template = true;
    match (selector, selector_rule) {
        (None, Selector::Required(_)) => {
            errors.push(required("spec.selector", ""));
            // A missing selector selects nothing, so it does not match the template either.
            selects_template = false;
        }
        (Some(selector), Selector::Required(kind)) if selector_is_empty(selector) => {
            errors.push(invalid(
                "spec.selector",
                go_label_selector(Some(selector)),
                &format!("empty selector is invalid for {kind}"),
            ));
        }
        _ => {}
    }
    let template = spec.and_then(|s| s.get("template"));
    let Some(template) = template else {
        errors.push(required("spec.template", ""));
        return;
    };
    let labels = at(template, &["metadata", "labels"]);
    let matched = match selector {
        Some(selector) if !selector_is_empty(selector) => selector_matches(selector, labels),
        _ => Some(selects_template),
    };
    match matched {
        Some(true) => {}
        Some(false) => errors.push(invalid(
            "spec.template.metadata.labels",
            go_string_map(labels),
            "`selector` does not match template `labels`",
        )),
        None => errors.push(invalid(
            "spec.selector",
            go_label_selector(selector),
            "invalid label selector",
        )),
    }
    let pod_spec = template.get("spec");
    // A StatefulSet's template is not validated as a pod spec (`ValidatePodTemplateSpecFor
    // StatefulSet`: its containers mount the volumes of `volumeClaimTemplates`, which the
    // template does not declare).
    let stateful = matches!(selector_rule, Selector::Required("statefulset"));
    if !stateful {
        pods::validate_pod_spec(pod_spec, "spec.template.spec", errors);
    }
    let restart = pod_spec.map_or("", |s| str_at(s, &["restartPolicy"]));
    if !restart_policies.contains(&restart) {
        errors.push(not_supported(
            "spec.template.spec.restartPolicy",
            restart,
            restart_policies,
        ));
    }
    if stateful
        && pod_spec
            .and_then(|s| s.get("activeDeadlineSeconds"))
            .is_some()
    {
        errors.push(forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    } else if restart_policies == ALWAYS
        && let Some(deadline) = pod_spec.and_then(|s| s.get("activeDeadlineSeconds"))
    {
        errors.push(invalid(
            "spec.template.spec.activeDeadlineSeconds",
            deadline.to_string(),
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
}

/// `must be greater than or equal to 0` for each of `fields` of `spec` that is negative.
fn non_negative(spec: Option<&Value>, fields: &[&str], errors: &mut Vec<FieldError>) {
    for field in fields {
        if let Some(n) = spec.and_then(|s| s.get(*field)).and_then(Value::as_i64)
            && n < 0
        {
            errors.push(invalid(
                format!("spec.{field}"),
                n.to_string(),
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// `ValidateDeployment`.
pub(super) fn validate_deployment(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    non_negative(spec, &["replicas"], errors);
    validate_selector_and_template(spec, Selector::Required("deployment"), ALWAYS, errors);
    let strategy = spec.and_then(|s| s.get("strategy"));
    let kind = strategy.map_or("", |s| str_at(s, &["type"]));
    let rolling = strategy.and_then(|s| s.get("rollingUpdate"));
    match kind {
        "Recreate" if rolling.is_some() => errors.push(forbidden(
            "spec.strategy.rollingUpdate",
            "may not be specified when strategy `type` is 'Recreate'",
        )),
        "Recreate" => {}
        "RollingUpdate" => {
            if let Some(rolling) = rolling {
                validate_rolling_update(rolling, "spec.strategy.rollingUpdate", errors);
            }
        }
        other => errors.push(not_supported(
            "spec.strategy.type",
            other,
            &["Recreate", "RollingUpdate"],
        )),
    }
    non_negative(spec, &["minReadySeconds", "revisionHistoryLimit"], errors);
    if let Some(deadline) = spec
        .and_then(|s| s.get("progressDeadlineSeconds"))
        .and_then(Value::as_i64)
    {
        let min_ready = spec
            .and_then(|s| s.get("minReadySeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if deadline <= min_ready {
            errors.push(invalid(
                "spec.progressDeadlineSeconds",
                deadline.to_string(),
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// The value of an int-or-percent as upstream's apps validation reads it
/// (`ValidatePositiveIntOrPercent`, `getIntOrPercentValue`): the number, or the percentage;
/// `Err` with `IsValidPercent`'s message for a string that is not digits and a `%`.
fn int_or_percent(value: &Value) -> Result<(i64, bool), String> {
    // Decoding has already refused what is neither a string nor an int32.
    match IntOrString::deserialize(value).unwrap_or_default() {
        IntOrString::String(text) => {
            if let Some(message) = validation::is_valid_percent(&text).into_iter().next() {
                return Err(message);
            }
            let digits = text.strip_suffix('%').unwrap_or(&text);
            Ok((IntOrString::from(digits).int_value(), true))
        }
        number => Ok((number.int_value(), false)),
    }
}

/// `ValidateRollingUpdateDeployment`.
fn validate_rolling_update(rolling: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let mut values = Vec::new();
    for field in ["maxUnavailable", "maxSurge"] {
        let value = rolling.get(field);
        let parsed = match value.map(int_or_percent) {
            None => Some(0),
            Some(Ok((n, _))) if n < 0 => {
                errors.push(invalid(
                    format!("{path}.{field}"),
                    go_int_or_string(value),
                    "must be greater than or equal to 0",
                ));
                None
            }
            Some(Ok((n, _))) => Some(n),
            Some(Err(message)) => {
                errors.push(invalid(
                    format!("{path}.{field}"),
                    go_int_or_string(value),
                    &message,
                ));
                None
            }
        };
        values.push(parsed);
    }
    if values == [Some(0), Some(0)] {
        errors.push(invalid(
            format!("{path}.maxUnavailable"),
            go_int_or_string(rolling.get("maxUnavailable")),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    if let Some(Ok((n, true))) = rolling.get("maxUnavailable").map(int_or_percent)
        && n > 100
    {
        errors.push(invalid(
            format!("{path}.maxUnavailable"),
            go_int_or_string(rolling.get("maxUnavailable")),
            "must not be greater than 100%",
        ));
    }
}

/// `ValidateReplicaSet`.
pub(super) fn validate_replica_set(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    non_negative(spec, &["replicas", "minReadySeconds"], errors);
    validate_selector_and_template(spec, Selector::Required("deployment"), ALWAYS, errors);
}

/// `ValidateReplicationController`: a map selector, required and matching the template.
pub(super) fn validate_replication_controller(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    non_negative(spec, &["replicas", "minReadySeconds"], errors);
    let selector = spec.and_then(|s| s.get("selector"));
    if selector
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
    {
        errors.push(required("spec.selector", ""));
    }
    let Some(template) = spec.and_then(|s| s.get("template")) else {
        errors.push(required("spec.template", ""));
        return;
    };
    let labels = at(template, &["metadata", "labels"]);
    if let Some(selector) = selector
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        let matched = selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        if !matched {
            errors.push(invalid(
                "spec.template.metadata.labels",
                go_string_map(labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    pods::validate_pod_spec(template.get("spec"), "spec.template.spec", errors);
}

/// PodTemplate: its pod spec.
pub(super) fn validate_pod_template(object: &Object, errors: &mut Vec<FieldError>) {
    pods::validate_pod_spec(
        obj_at(object, &["template", "spec"]),
        "template.spec",
        errors,
    );
}

/// `ValidateStatefulSet`.
pub(super) fn validate_stateful_set(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    non_negative(spec, &["replicas", "minReadySeconds"], errors);
    let policy = spec.map_or("", |s| str_at(s, &["podManagementPolicy"]));
    if !["OrderedReady", "Parallel"].contains(&policy) {
        errors.push(not_supported(
            "spec.podManagementPolicy",
            policy,
            &["OrderedReady", "Parallel"],
        ));
    }
    let strategy = spec.map_or("", |s| str_at(s, &["updateStrategy", "type"]));
    if !["OnDelete", "RollingUpdate"].contains(&strategy) {
        errors.push(not_supported(
            "spec.updateStrategy.type",
            strategy,
            &["OnDelete", "RollingUpdate"],
        ));
    }
    validate_selector_and_template(spec, Selector::Required("statefulset"), ALWAYS, errors);
}

/// `ValidateDaemonSet`.
pub(super) fn validate_daemon_set(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    validate_selector_and_template(spec, Selector::Required("daemonset"), ALWAYS, errors);
    non_negative(spec, &["minReadySeconds", "revisionHistoryLimit"], errors);
    let strategy = spec.and_then(|s| s.get("updateStrategy"));
    let kind = strategy.map_or("", |s| str_at(s, &["type"]));
    match kind {
        "OnDelete" => {}
        "RollingUpdate" => {
            if let Some(rolling) = strategy.and_then(|s| s.get("rollingUpdate")) {
                validate_rolling_update(rolling, "spec.updateStrategy.rollingUpdate", errors);
            }
        }
        other => errors.push(not_supported(
            "spec.updateStrategy.type",
            other,
            &["OnDelete", "RollingUpdate"],
        )),
    }
}

/// `ValidateJob` (with the generated-selector check).
pub(super) fn validate_job(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    non_negative(
        spec,
        &[
            "parallelism",
            "completions",
            "backoffLimit",
            "activeDeadlineSeconds",
        ],
        errors,
    );
    validate_selector_and_template(spec, Selector::Optional, ON_FAILURE_OR_NEVER, errors);
    let mode = spec.map_or("", |s| str_at(s, &["completionMode"]));
    if !mode.is_empty() && !["NonIndexed", "Indexed"].contains(&mode) {
        errors.push(not_supported(
            "spec.completionMode",
            mode,
            &["NonIndexed", "Indexed"],
        ));
    }
    let manual = spec
        .and_then(|s| s.get("manualSelector"))
        .and_then(Value::as_bool)
        == Some(true);
    if !manual && let Some(selector) = spec.and_then(|s| s.get("selector")) {
        let uid = crate::object::meta_str(object, "uid").unwrap_or("");
        let expected = json!({ JOB_CONTROLLER_UID: uid });
        let generated = selector_matches(selector, Some(&expected)) == Some(true)
            && selector
                .get("matchLabels")
                .and_then(Value::as_object)
                .is_some_and(|m| m.len() == 1)
            && selector.get("matchExpressions").is_none();
        if !generated {
            errors.push(invalid(
                "spec.selector",
                go_label_selector(Some(selector)),
                "`selector` not auto-generated",
            ));
        }
    }
}

/// `ValidateCronJob`.
pub(super) fn validate_cron_job(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    let schedule = spec.map_or("", |s| str_at(s, &["schedule"]));
    if schedule.is_empty() {
        errors.push(required("spec.schedule", ""));
    } else if let Err(message) = check_schedule(schedule) {
        errors.push(invalid(
            "spec.schedule",
            super::fields::go_str(schedule),
            &message,
        ));
    }
    let policy = spec.map_or("", |s| str_at(s, &["concurrencyPolicy"]));
    if !["Allow", "Forbid", "Replace"].contains(&policy) {
        errors.push(not_supported(
            "spec.concurrencyPolicy",
            policy,
            &["Allow", "Forbid", "Replace"],
        ));
    }
    non_negative(
        spec,
        &[
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        ],
        errors,
    );
    let template = spec.and_then(|s| at(s, &["jobTemplate", "spec", "template"]));
    let pod_spec = template.and_then(|t| t.get("spec"));
    pods::validate_pod_spec(pod_spec, "spec.jobTemplate.spec.template.spec", errors);
    let restart = pod_spec.map_or("", |s| str_at(s, &["restartPolicy"]));
    if !ON_FAILURE_OR_NEVER.contains(&restart) {
        errors.push(not_supported(
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            restart,
            ON_FAILURE_OR_NEVER,
        ));
    }
}

/// A cron schedule as `robfig/cron`'s standard parser takes it: five fields or a descriptor;
/// the error in its words.
fn check_schedule(schedule: &str) -> Result<(), String> {
    let body = match schedule.split_once(' ') {
        Some((tz, rest)) if tz.starts_with("TZ=") || tz.starts_with("CRON_TZ=") => rest,
        _ => schedule,
    };
    if let Some(descriptor) = body.strip_prefix('@') {
        let known = [
            "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly",
        ];
        if known.contains(&descriptor) || descriptor.starts_with("every ") {
            return Ok(());
        }
        return Err(format!("unrecognized descriptor: {body}"));
    }
    let fields: Vec<&str> = body.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: {}",
            fields.len(),
            body
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "*/,-?".contains(c);
    match fields.iter().find(|f| !f.chars().all(allowed)) {
        Some(field) => Err(format!("failed to parse int from {field}")),
        None => Ok(()),
    }
}

/// Update rules of the workloads: selectors (and a Job's template and completions) are
/// immutable; a StatefulSet may change only a few spec fields.
pub(super) fn validate_workload_update(
    kind: &str,
    existing: &Object,
    updated: &Object,
    errors: &mut Vec<FieldError>,
) {
    let old = existing.get("spec");
    let new = updated.get("spec");
    let field = |spec: Option<&Value>, name: &str| spec.and_then(|s| s.get(name)).cloned();
    let selector_immutable = [
        "Deployment",
        "ReplicaSet",
        "DaemonSet",
        "StatefulSet",
        "Job",
    ];
    if selector_immutable.contains(&kind) && field(old, "selector") != field(new, "selector") {
        errors.push(immutable(
            "spec.selector",
            go_label_selector(new.and_then(|s| s.get("selector"))),
        ));
    }
    if kind == "StatefulSet" {
        let mutable = [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "revisionHistoryLimit",
            "persistentVolumeClaimRetentionPolicy",
            "selector",
        ];
        let strip = |spec: Option<&Value>| {
            let mut spec = spec.and_then(Value::as_object).cloned().unwrap_or_default();
            spec.retain(|k, _| !mutable.contains(&k.as_str()));
            spec
        };
        if strip(old) != strip(new) {
            errors.push(forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
    if kind == "Job" {
        let suspended = new.and_then(|s| s.get("suspend")).and_then(Value::as_bool) == Some(true);
        if !suspended && field(old, "template") != field(new, "template") {
            errors.push(invalid(
                "spec.template",
                "core.PodTemplateSpec{...}".to_owned(),
                "field is immutable",
            ));
        }
        let mode = new.map_or("", |s| str_at(s, &["completionMode"]));
        if mode != "Indexed" && field(old, "completions") != field(new, "completions") {
            errors.push(immutable(
                "spec.completions",
                field(new, "completions").map_or("null".to_owned(), |v| v.to_string()),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        value.as_object().cloned().unwrap()
    }

    fn texts(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn deployments_get_their_defaults() {
        let mut d = object(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:1.27"}]}}}}));
        default_deployment(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        let mut recreate = object(json!({"spec": {"strategy": {"type": "Recreate"}}}));
        default_deployment(&mut recreate);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn a_missing_selector_is_required_and_does_not_match() {
        let mut d = object(
            json!({"spec": {"template": {"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        );
        default_deployment(&mut d);
        let mut errors = Vec::new();
        validate_deployment(&d, &mut errors);
        assert_eq!(
            texts(&errors),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: `selector` does not match template `labels`"
            ]
        );
    }

    #[test]
    fn rolling_updates_need_room_to_move() {
        let mut errors = Vec::new();
        validate_rolling_update(
            &json!({"maxUnavailable": 0, "maxSurge": "0%"}),
            "s",
            &mut errors,
        );
        assert_eq!(
            texts(&errors),
            [
                "s.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0"
            ]
        );
    }

    #[test]
    fn jobs_get_a_generated_selector_and_labels() {
        let mut job = object(json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "perl"}]}}}}));
        default_job(&mut job);
        generate_job_selector(&mut job);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["job-name"],
            "pi"
        );
        assert_eq!(job["spec"]["backoffLimit"], 6);
        let mut errors = Vec::new();
        validate_job(&job, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn schedules_are_checked() {
        assert!(check_schedule("*/5 * * * *").is_ok());
        assert!(check_schedule("@hourly").is_ok());
        assert!(check_schedule("TZ=UTC 0 0 * * *").is_ok());
        assert_eq!(
            check_schedule("bad").unwrap_err(),
            "expected exactly 5 fields, found 1: bad"
        );
    }
}
