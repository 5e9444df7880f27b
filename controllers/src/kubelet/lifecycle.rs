//! What a simulated container does over time, without a Stage: when it becomes Ready, how long
//! it runs, how it exits, and when the kubelet restarts it. A pod chooses with annotations:
//! - [`READY_AFTER_ANNOTATION`] (`kubemock.dev/ready-after`, seconds): Ready that long after
//!   each start of its containers (default: the kubelet's `ready_delay`);
//! - [`RUN_SECONDS_ANNOTATION`] (`kubemock.dev/run-seconds`): the containers exit after
//!   running that long. Without it, pods of restartPolicy Never/OnFailure, and pods that say
//!   [`EXIT_CODE_ANNOTATION`], run for the longest `sleep N` their containers' command or
//!   args show, else [`DEFAULT_RUN_TIME`]; other pods run until deleted, unless a `sleep N`
//!   shows they end;
//! - [`EXIT_CODE_ANNOTATION`] (`kubemock.dev/exit-code`, default 0): the code they exit with.
//!
//! An exit ends the pod (Succeeded on 0, Failed otherwise) when its restartPolicy says not to
//! restart (upstream `pkg/kubelet/kuberuntime/kuberuntime_manager.go` `computePodActions`,
//! `ShouldContainerBeRestarted`). Otherwise the container waits in `CrashLoopBackOff` for the
//! kubelet's back-off, 10 s doubling up to 5 minutes (`pkg/kubelet/kubelet.go` `backOffPeriod`
//! and `MaxContainerBackOff`; the documented "10s, 20s, 40s, … capped at five minutes" of
//! concepts/workloads/pods/pod-lifecycle "Container restarts"), then runs again with
//! `restartCount` one higher and the exit in `lastState.terminated`, which `pods/log?previous`
//! serves. The back-off before a restart is `10s × 2^restartCount`: the first exit waits
//! 10 s (upstream restarts the very first exit at once and backs off from the second; this
//! keeps the sequence the documentation shows).
//!
//! All containers of a pod move together (one plan per pod). Every time is on the kubelet's
//! [`Clock`](crate::clock::Clock), and every transition happens at the time the status says
//! it is due (a start plus a duration), not when the kubelet gets to it, so a virtual clock
//! that jumps gives the same history as one that ticks. Pure: tested without a server.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::node::container_id;

/// Seconds after each start of its containers before a pod is Ready.
pub const READY_AFTER_ANNOTATION: &str = "kubemock.dev/ready-after";
/// Seconds the containers run before they exit.
pub const RUN_SECONDS_ANNOTATION: &str = "kubemock.dev/run-seconds";
/// The code the containers exit with (0: success).
pub const EXIT_CODE_ANNOTATION: &str = "kubemock.dev/exit-code";
/// How long a run-to-completion container runs when neither an annotation nor a `sleep N`
/// says: long enough to be seen Running and Ready, short enough that Jobs finish promptly.
pub const DEFAULT_RUN_TIME: Duration = Duration::from_secs(1);
/// The kubelet's first restart back-off (`backOffPeriod`).
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
/// The kubelet's longest restart back-off (`MaxContainerBackOff`).
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// The waiting reason of a container the kubelet will restart after a back-off.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";

/// What a pod's containers do, from its annotations, spec and the kubelet's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// From each start to Ready.
    pub ready_after: Duration,
    /// From each start to the exit; `None`: until deleted.
    pub run_for: Option<Duration>,
    /// The exit code.
    pub exit_code: i32,
    /// Annotations that did not parse (`name: value`), reported and otherwise ignored.
    pub invalid: Vec<String>,
}

/// The pod's plan. `ready_delay` and `run_time` are the kubelet's defaults.
pub fn plan(pod: &Pod, ready_delay: Duration, run_time: Duration) -> Plan {
    let annotations = pod.metadata.annotations.as_ref();
    let mut invalid = Vec::new();
    let mut seconds = |name: &str| -> Option<Duration> {
        let value = annotations?.get(name)?;
        match parse_seconds(value) {
            Some(duration) => Some(duration),
            None => {
                invalid.push(format!("{name}: {value:?}"));
                None
            }
        }
    };
    let ready_after = seconds(READY_AFTER_ANNOTATION).unwrap_or(ready_delay);
    let run_seconds = seconds(RUN_SECONDS_ANNOTATION);
    let exit = annotations.and_then(|a| a.get(EXIT_CODE_ANNOTATION));
    let exit_code = match exit.map(|v| v.trim().parse::<i32>()) {
        None => 0,
        Some(Ok(code)) => code,
        Some(Err(_)) => {
            invalid.push(format!(
                "{EXIT_CODE_ANNOTATION}: {:?}",
                exit.unwrap_or(&String::new())
            ));
            0
        }
    };
    let completes = restart_policy(pod) != "Always" || exit.is_some();
    let run_for = run_seconds.or_else(|| match sleep_time(pod) {
        Some(time) => Some(time),
        None if completes => Some(run_time),
        None => None,
    });
    Plan {
        ready_after,
        run_for,
        exit_code,
        invalid,
    }
}

/// The pod's restartPolicy (`Always` when unset, as the API server defaults it).
pub fn restart_policy(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

/// Seconds as an annotation gives them: a non-negative number (`30`, `1.5`).
fn parse_seconds(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The longest `sleep N` (N in seconds, or with GNU sleep's `s`/`m`/`h`/`d` suffix) in any
/// container's command or args, as `["sleep", "30"]` or `["sh", "-c", "sleep 30; echo"]`
/// show it. `sleep infinity` or no sleep: `None`.
pub fn sleep_time(pod: &Pod) -> Option<Duration> {
    let containers = pod.spec.as_ref()?.containers.iter();
    let mut longest: Option<Duration> = None;
    for container in containers {
        let words: Vec<&str> = container
            .command
            .iter()
            .flatten()
            .chain(container.args.iter().flatten())
            .flat_map(|arg| arg.split(|c: char| c.is_whitespace() || ";&|()".contains(c)))
            .filter(|word| !word.is_empty())
            .collect();
        for pair in words.windows(2) {
            let is_sleep = pair[0] == "sleep" || pair[0].ends_with("/sleep");
            if let Some(time) = is_sleep.then(|| sleep_argument(pair[1])).flatten() {
                longest = Some(longest.map_or(time, |l| l.max(time)));
            }
        }
    }
    longest
}

/// GNU sleep's operand: a number with an optional unit suffix.
fn sleep_argument(word: &str) -> Option<Duration> {
    let (number, unit) = match word.char_indices().last()? {
        (i, 's') => (&word[..i], 1.0),
        (i, 'm') => (&word[..i], 60.0),
        (i, 'h') => (&word[..i], 3600.0),
        (i, 'd') => (&word[..i], 86400.0),
        _ => (word, 1.0),
    };
    let seconds: f64 = number.parse().ok()?;
    let total = seconds * unit;
    (total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total))
}

/// The kubelet's back-off before restarting a container that has restarted `restarts` times.
pub fn backoff(restarts: i32) -> Duration {
    let doublings = u32::try_from(restarts.clamp(0, 16)).unwrap_or(0);
    BACKOFF_INITIAL
        .saturating_mul(1u32 << doublings)
        .min(BACKOFF_MAX)
}

/// A duration as Go's `time.Duration.String` prints whole seconds (`10s`, `1m20s`, `5m0s`),
/// as the kubelet's back-off message shows it.
pub fn go_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match (seconds / 3600, seconds / 60 % 60, seconds % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// What the kubelet does next for a Running pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Nothing until the pod changes.
    Nothing,
    /// Nothing until this time.
    At(Timestamp),
    /// Write this status, and publish these events (type Warning when the flag is set).
    Write(Box<PodStatus>, Vec<(bool, &'static str, String)>),
}

/// The first regular container's status: all containers move together.
fn first_status(status: &PodStatus) -> Option<&ContainerStatus> {
    status.container_statuses.as_ref()?.first()
}

/// `d` after `t`.
fn after(t: Timestamp, d: Duration) -> Timestamp {
    kubemock_apimachinery::time::shift_std(t, d)
}

/// The next step of a Running pod at `now` under `plan`.
pub fn next(pod: &Pod, status: &PodStatus, plan: &Plan, now: Timestamp) -> Next {
    let Some(first) = first_status(status) else {
        return Next::Nothing;
    };
    let state = first.state.clone().unwrap_or_default();
    if let Some(running) = &state.running {
        let Some(started) = running.started_at.as_ref().map(|t| t.0) else {
            return Next::Nothing;
        };
        let exits = plan.run_for.map(|d| after(started, d));
        if let Some(exit) = exits.filter(|exit| *exit <= now) {
            return Next::Write(
                Box::new(exited(pod, status, plan, started, exit)),
                exit_events(pod, plan),
            );
        }
        let ready_at = after(started, plan.ready_after);
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready && ready_at <= now {
            return Next::Write(
                Box::new(with_ready(status, true, &Time(ready_at))),
                Vec::new(),
            );
        }
        let pending = [(!ready).then_some(ready_at), exits];
        return pending
            .into_iter()
            .flatten()
            .min()
            .map_or(Next::Nothing, Next::At);
    }
    let waiting = state.waiting.as_ref().and_then(|w| w.reason.as_deref());
    let finished = first
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.finished_at.as_ref())
        .map(|t| t.0);
    match (waiting, finished) {
        (Some(CRASH_LOOP_BACK_OFF), Some(finished)) => {
            let due = after(finished, backoff(first.restart_count));
            if due > now {
                return Next::At(due);
            }
            let restarted = restarted(pod, status, plan, due);
            let events = containers(pod)
                .map(|name| (false, "Started", format!("Started container {name}")))
                .collect();
            Next::Write(Box::new(restarted), events)
        }
        _ => Next::Nothing,
    }
}

/// The names of the pod's regular containers.
fn containers(pod: &Pod) -> impl Iterator<Item = &str> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| c.name.as_str())
}

/// The kubelet's `format.Pod`: `name_namespace(uid)`.
fn pod_text(pod: &Pod) -> String {
    format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.uid.as_deref().unwrap_or_default()
    )
}

/// Whether an exit with `code` ends the pod rather than restarting its containers.
fn ends(pod: &Pod, code: i32) -> bool {
    match restart_policy(pod) {
        "Never" => true,
        "OnFailure" => code == 0,
        _ => false,
    }
}

/// The events of the containers' exit: a back-off warning when they will restart.
fn exit_events(pod: &Pod, plan: &Plan) -> Vec<(bool, &'static str, String)> {
    if ends(pod, plan.exit_code) {
        return Vec::new();
    }
    containers(pod)
        .map(|name| {
            (
                true,
                "BackOff",
                format!(
                    "Back-off restarting failed container {name} in pod {}",
                    pod_text(pod)
                ),
            )
        })
        .collect()
}

/// Sets the Ready and ContainersReady conditions and the containers' `ready`.
fn with_ready(status: &PodStatus, ready: bool, at: &Time) -> PodStatus {
    let mut status = status.clone();
    let names: Vec<String> = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect();
    for condition in status.conditions.iter_mut().flatten() {
        if condition.type_ == "Ready" || condition.type_ == "ContainersReady" {
            let value = if ready { "True" } else { "False" };
            if condition.status != value {
                condition.last_transition_time = Some(at.clone());
            }
            condition.status = value.to_owned();
            condition.reason = (!ready).then(|| "ContainersNotReady".to_owned());
            condition.message =
                (!ready).then(|| format!("containers with unready status: [{}]", names.join(" ")));
        }
    }
    for container in status.container_statuses.iter_mut().flatten() {
        container.ready = ready;
    }
    status
}

/// The status once the containers, started at `started`, exit at `exit`: the pod ends, or
/// they wait in CrashLoopBackOff with the exit as their last state.
fn exited(
    pod: &Pod,
    status: &PodStatus,
    plan: &Plan,
    started: Timestamp,
    exit: Timestamp,
) -> PodStatus {
    let code = plan.exit_code;
    let end = ends(pod, code);
    let at = Time(exit);
    let mut status = with_ready(status, false, &at);
    let reason = if code == 0 { "Completed" } else { "Error" };
    for container in status.container_statuses.iter_mut().flatten() {
        let terminated = ContainerStateTerminated {
            exit_code: code,
            reason: Some(reason.to_owned()),
            started_at: Some(Time(started)),
            finished_at: Some(at.clone()),
            container_id: container.container_id.clone(),
            ..ContainerStateTerminated::default()
        };
        container.started = Some(false);
        if end {
            container.state = Some(ContainerState {
                terminated: Some(terminated),
                ..ContainerState::default()
            });
        } else {
            let wait = backoff(container.restart_count);
            container.last_state = Some(ContainerState {
                terminated: Some(terminated),
                ..ContainerState::default()
            });
            container.state = Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(CRASH_LOOP_BACK_OFF.to_owned()),
                    message: Some(format!(
                        "back-off {} restarting failed container={} pod={}",
                        go_duration(wait),
                        container.name,
                        pod_text(pod)
                    )),
                }),
                ..ContainerState::default()
            });
        }
    }
    if end {
        let (phase, why) = if code == 0 {
            ("Succeeded", "PodCompleted")
        } else {
            ("Failed", "PodFailed")
        };
        status.phase = Some(phase.to_owned());
        for condition in status.conditions.iter_mut().flatten() {
            if condition.type_ == "Ready" || condition.type_ == "ContainersReady" {
                condition.reason = Some(why.to_owned());
                condition.message = None;
            }
            if condition.type_ == "PodReadyToStartContainers" {
                condition.status = "False".to_owned();
            }
        }
    }
    status
}

/// The status once the containers restart at `at` after their back-off.
fn restarted(pod: &Pod, status: &PodStatus, plan: &Plan, at: Timestamp) -> PodStatus {
    let ready = plan.ready_after.is_zero();
    let time = Time(at);
    let mut status = with_ready(status, ready, &time);
    for container in status.container_statuses.iter_mut().flatten() {
        container.restart_count = container.restart_count.saturating_add(1);
        container.container_id = Some(container_id(pod, &container.name, container.restart_count));
        container.started = Some(true);
        container.state = Some(ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(time.clone()),
            }),
            ..ContainerState::default()
        });
    }
    status
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kubelet::node::running_status;

    fn pod(restart: &str, annotations: serde_json::Value, command: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "annotations": annotations},
            "spec": {"restartPolicy": restart,
                     "containers": [{"name": "app", "image": "busybox", "command": command}]},
        }))
        .expect("a pod")
    }

    #[test]
    fn plans_come_from_annotations_then_sleep_then_defaults() {
        let d = |s| Duration::from_secs(s);
        let p = pod(
            "Never",
            json!({}),
            json!(["sh", "-c", "sleep 30; echo done"]),
        );
        assert_eq!(plan(&p, d(0), d(1)).run_for, Some(d(30)));
        let p = pod("Never", json!({}), json!(["sleep", "2m"]));
        assert_eq!(plan(&p, d(0), d(1)).run_for, Some(d(120)));
        let p = pod("OnFailure", json!({}), json!(["echo", "hi"]));
        assert_eq!(plan(&p, d(0), d(1)).run_for, Some(d(1)));
        let p = pod("Always", json!({}), json!(["nginx"]));
        assert_eq!(plan(&p, d(0), d(1)).run_for, None);
        let p = pod("Always", json!({}), json!(["sleep", "infinity"]));
        assert_eq!(plan(&p, d(0), d(1)).run_for, None);
        let p = pod(
            "Always",
            json!({"kubemock.dev/exit-code": "3", "kubemock.dev/ready-after": "5"}),
            json!(null),
        );
        let got = plan(&p, d(0), d(1));
        assert_eq!(
            (got.run_for, got.exit_code, got.ready_after),
            (Some(d(1)), 3, d(5))
        );
        let p = pod(
            "Never",
            json!({"kubemock.dev/run-seconds": "7", "kubemock.dev/ready-after": "soon"}),
            json!(["sleep", "30"]),
        );
        let got = plan(&p, d(2), d(1));
        assert_eq!((got.run_for, got.ready_after), (Some(d(7)), d(2)));
        assert_eq!(got.invalid, vec!["kubemock.dev/ready-after: \"soon\""]);
    }

    #[test]
    fn the_backoff_doubles_from_ten_seconds_to_five_minutes() {
        let got: Vec<String> = (0..7).map(|r| go_duration(backoff(r))).collect();
        assert_eq!(got, ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]);
        assert_eq!(backoff(i32::MAX), BACKOFF_MAX);
    }

    #[test]
    fn a_crashing_container_waits_its_backoff_then_restarts_with_its_last_state() {
        let t0 = "2030-01-01T00:00:00Z"
            .parse::<jiff::Timestamp>()
            .expect("a time");
        let p = pod(
            "Always",
            json!({"kubemock.dev/exit-code": "2", "kubemock.dev/run-seconds": "5"}),
            json!(null),
        );
        let plan = plan(&p, Duration::ZERO, DEFAULT_RUN_TIME);
        let mut status = running_status(&p, "10.0.0.10", "10.244.0.1", &Time(t0), true, &Time(t0));
        let at = |s: i64| kubemock_apimachinery::time::shift_seconds(t0, s);
        assert_eq!(next(&p, &status, &plan, at(1)), Next::At(at(5)));
        let mut clock = 5;
        let mut restarts = Vec::new();
        for round in 0..4 {
            let Next::Write(crashed, events) = next(&p, &status, &plan, at(clock)) else {
                panic!("round {round}: no exit at {clock}");
            };
            assert_eq!(events[0].1, "BackOff");
            let c = &crashed.container_statuses.as_ref().expect("statuses")[0];
            let waiting = c
                .state
                .as_ref()
                .and_then(|s| s.waiting.as_ref())
                .expect("waiting");
            assert_eq!(waiting.reason.as_deref(), Some(CRASH_LOOP_BACK_OFF));
            let last = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
            assert_eq!(
                last.map(|t| (t.exit_code, t.reason.as_deref())),
                Some((2, Some("Error")))
            );
            assert_eq!(crashed.phase.as_deref(), Some("Running"));
            let Next::At(due) = next(&p, &crashed, &plan, at(clock)) else {
                panic!("no restart time");
            };
            restarts.push(due.duration_since(at(clock)).as_secs());
            let Next::Write(running, _) = next(&p, &crashed, &plan, due) else {
                panic!("no restart");
            };
            let c = &running.container_statuses.as_ref().expect("statuses")[0];
            assert_eq!(c.restart_count, round + 1);
            assert!(c.state.as_ref().and_then(|s| s.running.as_ref()).is_some());
            clock = due.duration_since(t0).as_secs() + 5;
            status = *running;
        }
        assert_eq!(restarts, [10, 20, 40, 80]);
    }

    #[test]
    fn exits_end_the_pod_as_its_restart_policy_says() {
        let t0 = "2030-01-01T00:00:00Z"
            .parse::<jiff::Timestamp>()
            .expect("a time");
        let later = kubemock_apimachinery::time::shift_seconds(t0, 60);
        for (restart, code, phase) in [
            ("Never", "0", "Succeeded"),
            ("Never", "1", "Failed"),
            ("OnFailure", "0", "Succeeded"),
            ("OnFailure", "1", "Running"),
            ("Always", "0", "Running"),
        ] {
            let p = pod(
                restart,
                json!({"kubemock.dev/exit-code": code}),
                json!(null),
            );
            let plan = plan(&p, Duration::ZERO, DEFAULT_RUN_TIME);
            let status = running_status(&p, "10.0.0.10", "10.244.0.1", &Time(t0), true, &Time(t0));
            let Next::Write(done, _) = next(&p, &status, &plan, later) else {
                panic!("{restart} {code}: no exit");
            };
            assert_eq!(done.phase.as_deref(), Some(phase), "{restart} {code}");
        }
    }
}
