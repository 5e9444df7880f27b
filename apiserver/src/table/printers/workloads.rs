//! The printers of the workload kinds beyond Deployments and ReplicaSets: StatefulSets,
//! DaemonSets, Jobs, CronJobs, ReplicationControllers, ControllerRevisions and PodTemplates
//! (`printStatefulSet`, `printDaemonSet`, `printJob`, `printCronJob`,
//! `printReplicationController`, `printControllerRevision`, `printPodTemplate`).

use serde_json::{Value, json};

use super::{
    AGE, Column, NAME, age, column, condition_true, docs, field, flag, format_label_selector,
    format_labels, go_duration, human_duration, int, int_or, list, map, name, since,
    template_containers, text, time, wide,
};

pub(super) const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    column("Ready", "string", docs::DEPLOYMENT_READY),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
];

pub(super) const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    column("Desired", "integer", docs::DS_DESIRED),
    column("Current", "integer", docs::DS_CURRENT),
    column("Ready", "integer", docs::DS_READY),
    column("Up-to-date", "integer", docs::DS_UPDATED),
    column("Available", "integer", docs::DS_AVAILABLE),
    column("Node Selector", "string", docs::POD_NODE_SELECTOR),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
    wide("Selector", docs::DS_SELECTOR),
];

pub(super) const JOB_COLUMNS: &[Column] = &[
    NAME,
    column("Status", "string", docs::JOB_STATUS),
    column("Completions", "string", docs::JOB_SUCCEEDED),
    column("Duration", "string", docs::JOB_DURATION),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
    wide("Selector", docs::JOB_SELECTOR),
];

pub(super) const CRON_JOB_COLUMNS: &[Column] = &[
    NAME,
    column("Schedule", "string", docs::CRONJOB_SCHEDULE),
    column("Timezone", "string", docs::CRONJOB_TIME_ZONE),
    column("Suspend", "boolean", docs::CRONJOB_SUSPEND),
    column("Active", "integer", docs::CRONJOB_ACTIVE),
    column("Last Schedule", "string", docs::CRONJOB_LAST_SCHEDULE),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
    wide("Selector", docs::JOB_SELECTOR),
];

/// `printStatefulSet`: ready of desired replicas (which default to 1).
pub(super) fn stateful_set(set: &Value, now: i128) -> Vec<Value> {
    let (names, images) = template_containers(set, &["spec", "template"]);
    let ready = int(set, &["status", "readyReplicas"]);
    let desired = int_or(set, &["spec", "replicas"], 1);
    vec![
        json!(name(set)),
        json!(format!("{ready}/{desired}")),
        json!(age(set, now)),
        json!(names),
        json!(images),
    ]
}

/// `printDaemonSet`.
pub(super) fn daemon_set(set: &Value, now: i128) -> Vec<Value> {
    let (names, images) = template_containers(set, &["spec", "template"]);
    let status = |key: &str| json!(int(set, &["status", key]));
    vec![
        json!(name(set)),
        status("desiredNumberScheduled"),
        status("currentNumberScheduled"),
        status("numberReady"),
        status("updatedNumberScheduled"),
        status("numberAvailable"),
        json!(format_labels(map(
            set,
            &["spec", "template", "spec", "nodeSelector"]
        ))),
        json!(age(set, now)),
        json!(names),
        json!(images),
        json!(format_label_selector(field(set, &["spec", "selector"]))),
    ]
}

/// `printJob`.
pub(super) fn job(job: &Value, now: i128) -> Vec<Value> {
    let succeeded = int(job, &["status", "succeeded"]);
    let parallelism = field(job, &["spec", "parallelism"]).and_then(Value::as_i64);
    // Both unset default to 1; completions alone stays unset (a work queue).
    let completions = field(job, &["spec", "completions"])
        .and_then(Value::as_i64)
        .or(if parallelism.is_none() { Some(1) } else { None });
    let completions = match (completions, parallelism.unwrap_or(1)) {
        (Some(completions), _) => format!("{succeeded}/{completions}"),
        (None, parallelism) if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        (None, _) => format!("{succeeded}/1"),
    };
    let conditions = list(job, &["status", "conditions"]);
    let status = if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if field(job, &["metadata", "deletionTimestamp"]).is_some() {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = template_containers(job, &["spec", "template"]);
    vec![
        json!(name(job)),
        json!(status),
        json!(completions),
        json!(job_duration(job, now)),
        json!(age(job, now)),
        json!(names),
        json!(images),
        json!(format_label_selector(field(job, &["spec", "selector"]))),
    ]
}

/// A Job's Duration: from its start to its completion, or to `now` while it runs; empty before
/// it starts.
fn job_duration(job: &Value, now: i128) -> String {
    let time = |key: &str| {
        field(job, &["status", key])
            .and_then(Value::as_str)
            .and_then(time::parse_rfc3339)
    };
    match time("startTime") {
        None => String::new(),
        Some(start) => human_duration(go_duration(time("completionTime").unwrap_or(now) - start)),
    }
}

/// `printCronJob`.
pub(super) fn cron_job(cron_job: &Value, now: i128) -> Vec<Value> {
    let last_schedule = match field(cron_job, &["status", "lastScheduleTime"]) {
        Some(time) => since(time.as_str(), now),
        None => "<none>".to_owned(),
    };
    let time_zone = field(cron_job, &["spec", "timeZone"])
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    // `printBoolPtr` of a field defaulted to false.
    let suspend = match field(cron_job, &["spec", "suspend"]).and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) | None => "False",
    };
    let (names, images) =
        template_containers(cron_job, &["spec", "jobTemplate", "spec", "template"]);
    vec![
        json!(name(cron_job)),
        json!(text(cron_job, &["spec", "schedule"])),
        json!(time_zone),
        json!(suspend),
        json!(list(cron_job, &["status", "active"]).len()),
        json!(last_schedule),
        json!(age(cron_job, now)),
        json!(names),
        json!(images),
        json!(format_label_selector(field(
            cron_job,
            &["spec", "jobTemplate", "spec", "selector"]
        ))),
    ]
}

pub(super) const REPLICATION_CONTROLLER_COLUMNS: &[Column] = &[
    NAME,
    column("Desired", "integer", docs::RC_SPEC_REPLICAS),
    column("Current", "integer", docs::RC_STATUS_REPLICAS),
    column("Ready", "integer", docs::RC_READY_REPLICAS),
    AGE,
    wide("Containers", docs::CONTAINERS),
    wide("Images", docs::IMAGES),
    wide("Selector", docs::RC_SELECTOR),
];

pub(super) const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    column("Controller", "string", docs::REVISION_CONTROLLER),
    column("Revision", "string", docs::REVISION),
    AGE,
];

/// No Age column (as upstream).
pub(super) const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    column("Containers", "string", docs::CONTAINERS),
    column("Images", "string", docs::IMAGES),
    column("Pod Labels", "string", docs::POD_TEMPLATE_LABELS),
];

/// `printReplicationController`: the selector is a plain label map.
pub(super) fn replication_controller(controller: &Value, now: i128) -> Vec<Value> {
    let (names, images) = template_containers(controller, &["spec", "template"]);
    vec![
        json!(name(controller)),
        json!(int_or(controller, &["spec", "replicas"], 1)),
        json!(int(controller, &["status", "replicas"])),
        json!(int(controller, &["status", "readyReplicas"])),
        json!(age(controller, now)),
        json!(names),
        json!(images),
        json!(format_labels(map(controller, &["spec", "selector"]))),
    ]
}

/// `printControllerRevision`: the controller as `kind.group/name` (lower-cased kind and group).
pub(super) fn controller_revision(revision: &Value, now: i128) -> Vec<Value> {
    let controller = list(revision, &["metadata", "ownerReferences"])
        .iter()
        .find(|owner| flag(owner, &["controller"]))
        .map_or_else(
            || "<none>".to_owned(),
            |owner| {
                // `schema.ParseGroupVersion`: the group is what comes before the slash.
                let group = text(owner, &["apiVersion"])
                    .split_once('/')
                    .map_or("", |(group, _)| group);
                let kind = text(owner, &["kind"]);
                let name = text(owner, &["name"]);
                match (group, kind) {
                    ("", "") => name.to_owned(),
                    ("", kind) => format!("{}/{name}", kind.to_lowercase()),
                    (group, kind) => format!("{}/{name}", format!("{kind}.{group}").to_lowercase()),
                }
            },
        );
    vec![
        json!(name(revision)),
        json!(controller),
        json!(int(revision, &["revision"])),
        json!(age(revision, now)),
    ]
}

/// `printPodTemplate`.
pub(super) fn pod_template(template: &Value) -> Vec<Value> {
    let (names, images) = template_containers(template, &["template"]);
    vec![
        json!(name(template)),
        json!(names),
        json!(images),
        json!(format_labels(map(
            template,
            &["template", "metadata", "labels"]
        ))),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::tests::{CREATED, cells};
    use super::*;
    use crate::registry::Printer;

    fn template() -> Value {
        json!({"spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}})
    }

    #[test]
    fn stateful_sets_print_ready_of_desired_replicas() {
        let set = json!({
            "metadata": {"name": "db", "creationTimestamp": CREATED},
            "spec": {"replicas": 3, "template": template()},
            "status": {"readyReplicas": 2},
        });
        assert_eq!(
            cells(Printer::StatefulSet, set),
            [
                json!("db"),
                json!("2/3"),
                json!("10m"),
                json!("web,log"),
                json!("nginx:1,busybox")
            ]
        );
        let defaulted = json!({"metadata": {"name": "db"}});
        assert_eq!(
            cells(Printer::StatefulSet, defaulted)[1],
            "0/1",
            "replicas default to 1"
        );
    }

    #[test]
    fn daemon_sets_print_node_counts_node_selector_and_selector() {
        let mut spec_template = template();
        spec_template["spec"]["nodeSelector"] = json!({"zone": "b", "disk": "ssd"});
        let set = json!({
            "metadata": {"name": "agent", "creationTimestamp": CREATED},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": spec_template},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                       "updatedNumberScheduled": 1, "numberAvailable": 2},
        });
        assert_eq!(
            cells(Printer::DaemonSet, set),
            [
                json!("agent"),
                json!(3),
                json!(3),
                json!(2),
                json!(1),
                json!(2),
                json!("disk=ssd,zone=b"),
                json!("10m"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("app=agent")
            ]
        );
        let bare = cells(Printer::DaemonSet, json!({"metadata": {"name": "a"}}));
        assert_eq!(
            (bare[1].clone(), bare[6].clone(), bare[10].clone()),
            (json!(0), json!("<none>"), json!("<none>"))
        );
    }

    fn job_with(spec: Value, status: Value) -> Vec<Value> {
        cells(
            Printer::Job,
            json!({"metadata": {"name": "j", "creationTimestamp": CREATED}, "spec": spec, "status": status}),
        )
    }

    #[test]
    fn job_completions_read_completions_or_parallelism() {
        let succeeded = json!({"succeeded": 2});
        assert_eq!(
            job_with(
                json!({"completions": 5, "parallelism": 2}),
                succeeded.clone()
            )[2],
            "2/5"
        );
        assert_eq!(
            job_with(json!({}), succeeded.clone())[2],
            "2/1",
            "both unset default to 1"
        );
        assert_eq!(
            job_with(json!({"parallelism": 4}), succeeded.clone())[2],
            "2/1 of 4",
            "a work queue"
        );
        assert_eq!(job_with(json!({"parallelism": 1}), succeeded)[2], "2/1");
    }

    #[test]
    fn job_status_follows_conditions_in_upstream_order() {
        let status_of =
            |conditions: Value| job_with(json!({}), json!({"conditions": conditions}))[1].clone();
        assert_eq!(status_of(json!([])), "Running");
        assert_eq!(
            status_of(json!([{"type": "Suspended", "status": "True"}])),
            "Suspended"
        );
        assert_eq!(
            status_of(
                json!([{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}])
            ),
            "Failed"
        );
        assert_eq!(
            status_of(
                json!([{"type": "Complete", "status": "False"}, {"type": "Complete", "status": "True"}])
            ),
            "Running",
            "the first condition of a type decides"
        );
        assert_eq!(
            status_of(
                json!([{"type": "Failed", "status": "True"}, {"type": "Complete", "status": "True"}])
            ),
            "Complete"
        );
        let mut deleting = json!({"metadata": {"name": "j", "deletionTimestamp": CREATED},
                                  "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(cells(Printer::Job, deleting.clone())[1], "Terminating");
        deleting["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(cells(Printer::Job, deleting)[1], "Complete");
    }

    #[test]
    fn job_duration_runs_from_start_to_completion_or_now() {
        assert_eq!(job_with(json!({}), json!({}))[3], "", "not started");
        assert_eq!(
            job_with(json!({}), json!({"startTime": "2024-05-01T12:01:30Z"}))[3],
            "8m30s",
            "running: until now"
        );
        assert_eq!(
            job_with(
                json!({}),
                json!({"startTime": "2024-05-01T12:00:00Z", "completionTime": "2024-05-01T12:00:42Z"})
            )[3],
            "42s"
        );
    }

    #[test]
    fn jobs_print_wide_containers_and_selector() {
        let job = job_with(
            json!({"template": template(), "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}}),
            json!({}),
        );
        assert_eq!(
            job[4..],
            [
                json!("10m"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("batch.kubernetes.io/controller-uid=u1")
            ]
        );
    }

    #[test]
    fn cron_jobs_print_schedule_time_zone_suspend_active_and_last_schedule() {
        let cron_job = json!({
            "metadata": {"name": "nightly", "creationTimestamp": CREATED},
            "spec": {"schedule": "0 3 * * *", "timeZone": "Europe/Paris", "suspend": true,
                     "jobTemplate": {"spec": {"template": template(), "selector": {"matchLabels": {"a": "b"}}}}},
            "status": {"active": [{"name": "nightly-1"}, {"name": "nightly-2"}],
                       "lastScheduleTime": "2024-05-01T12:05:00Z"},
        });
        assert_eq!(
            cells(Printer::CronJob, cron_job),
            [
                json!("nightly"),
                json!("0 3 * * *"),
                json!("Europe/Paris"),
                json!("True"),
                json!(2),
                json!("5m"),
                json!("10m"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("a=b")
            ]
        );
        let bare = json!({"metadata": {"name": "c"}, "spec": {"schedule": "@hourly"}});
        assert_eq!(
            cells(Printer::CronJob, bare)[1..6],
            [
                json!("@hourly"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("<none>")
            ],
            "no time zone, suspend defaulted to false, never scheduled"
        );
    }

    #[test]
    fn replication_controllers_print_replicas_and_a_label_map_selector() {
        let controller = json!({
            "metadata": {"name": "rc", "creationTimestamp": CREATED},
            "spec": {"selector": {"tier": "web", "app": "x"}, "template": template()},
            "status": {"replicas": 1, "readyReplicas": 1},
        });
        assert_eq!(
            cells(Printer::ReplicationController, controller),
            [
                json!("rc"),
                json!(1),
                json!(1),
                json!(1),
                json!("10m"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("app=x,tier=web")
            ],
            "replicas default to 1"
        );
        let bare = cells(
            Printer::ReplicationController,
            json!({"metadata": {"name": "rc"}}),
        );
        assert_eq!(
            (bare[5].clone(), bare[7].clone()),
            (json!(""), json!("<none>"))
        );
    }

    #[test]
    fn controller_revisions_print_their_controller_as_kind_dot_group() {
        let revision = |owners: Value| {
            cells(
                Printer::ControllerRevision,
                json!({"metadata": {"name": "web-7d9", "creationTimestamp": CREATED,
                                    "ownerReferences": owners}, "revision": 3}),
            )
        };
        assert_eq!(
            revision(json!([
                {"apiVersion": "v1", "kind": "Pod", "name": "other"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true},
            ])),
            [
                json!("web-7d9"),
                json!("statefulset.apps/web"),
                json!(3),
                json!("10m")
            ]
        );
        assert_eq!(
            revision(
                json!([{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "controller": true}])
            )[1],
            "replicationcontroller/rc",
            "the core group adds nothing"
        );
        assert_eq!(revision(json!([]))[1], "<none>");
    }

    #[test]
    fn pod_templates_print_containers_images_and_pod_labels_without_age() {
        let mut spec_template = template();
        spec_template["metadata"] = json!({"labels": {"run": "x", "app": "y"}});
        let template = json!({"metadata": {"name": "t"}, "template": spec_template});
        assert_eq!(
            cells(Printer::PodTemplate, template),
            [
                json!("t"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("app=y,run=x")
            ]
        );
    }
}
