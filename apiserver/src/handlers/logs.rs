//! `GET .../pods/{name}/log` (upstream `pkg/registry/core/pod/rest/log.go`, the kubelet's
//! container logs): kubemock runs no processes, so a simulated container's log is what the
//! pod asks for, `kubemock.dev/log.<container>` or `kubemock.dev/log` (lines of text), else one
//! line saying the container started and that kubemock simulates it. Every line is stamped
//! with the container's start time. `tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`,
//! `limitBytes`, `previous` and `follow` (the stream stays open until the pod is deleted, its
//! container ends, or the server stops) behave as upstream's, and so do the refusals: no
//! container named when the pod has several, an unknown container, a pod not yet on a node, a
//! container still waiting, no previous container (`previous` reads the run the container's
//! `lastState.terminated` records: a restarted container's).
//!
//! `exec`, `attach` and `portforward` are served by `podio`; the `proxy` subresources of pods
//! and nodes need sockets kubemock does not simulate: they answer a 400 that says so, instead
//! of a 404 that looks like a missing API.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde_json::Value;

use super::resource::Call;
use crate::keys;
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult};

/// The annotation holding every container's log text.
pub(crate) const LOG_ANNOTATION: &str = "kubemock.dev/log";
/// The prefix of the annotation holding one container's log text (`kubemock.dev/log.NAME`).
pub(crate) const CONTAINER_LOG_ANNOTATION: &str = "kubemock.dev/log.";

/// `GET .../pods/{name}/log`.
pub(crate) async fn log(call: &Call) -> ApiResult<Response> {
    call.require_verb("get")?;
    let options = Options::parse(call)?;
    let name = call.target.name.clone().unwrap_or_default();
    let namespace = call.target.namespace.clone().unwrap_or_default();
    let key = keys::object_key(&call.target.resource, Some(&namespace), &name);
    let Some(kv) = call.state.fetch(&key).await? else {
        return Err(ApiError::not_found(&call.target.resource, &name));
    };
    let pod = object::from_stored(&kv)?;
    let container = container_of(&pod, &name, options.container.as_deref())?;
    let (started, running) = state_of(&pod, &name, &container, options.previous)?;
    let lines = log_lines(&pod, &container);
    // Bytes, as the kubelet counts them: a limit may cut a character in two.
    let mut text = render(&lines, &started, &options).into_bytes();
    if let Some(limit) = options.limit_bytes {
        text.truncate(limit);
    }
    let head = [(header::CONTENT_TYPE, "text/plain")];
    if !(options.follow && running) {
        return Ok((StatusCode::OK, head, text).into_response());
    }
    // Follow: what there is, then nothing more until the container's end closes the stream.
    let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(1);
    let state = call.state.clone();
    let revision = kv.mod_revision;
    let tasks = state.tasks().clone();
    tasks.spawn(async move {
        if sender.send(Bytes::from(text)).await.is_err() {
            return;
        }
        let shutdown = state.shutdown().clone();
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = sender.closed() => {}
            () = until_ended(&state, key, revision, container) => {}
        }
    });
    let body = Body::from_stream(futures_util::stream::unfold(receiver, |mut r| async move {
        r.recv().await.map(|chunk| (Ok::<_, Infallible>(chunk), r))
    }));
    Ok((StatusCode::OK, head, body).into_response())
}

/// Returns once the pod at `key` is deleted or `container` is no longer running (or the
/// watch fails).
pub(crate) async fn until_ended(
    state: &crate::state::AppState,
    key: String,
    after: u64,
    container: String,
) {
    let Ok(mut watch) = state.store().watch(Bytes::from(key.clone()), after).await else {
        return;
    };
    while let Some(item) = watch.next().await {
        let Ok(kubemock_storage::WatchItem::Event(event)) = item else {
            if item.is_err() {
                return;
            }
            continue;
        };
        if event.kv.key.as_ref() != key.as_bytes() {
            continue;
        }
        let Ok(pod) = object::parse_stored(&event.kv.value) else {
            return;
        };
        if event.kind == kubemock_storage::EventKind::Delete
            || status_of(&pod, &container).is_none_or(|s| s.get("running").is_none())
        {
            return;
        }
    }
}

/// The query of a log request (`PodLogOptions`).
struct Options {
    container: Option<String>,
    follow: bool,
    previous: bool,
    timestamps: bool,
    tail_lines: Option<usize>,
    since_seconds: Option<i64>,
    since_time: Option<i128>,
    limit_bytes: Option<usize>,
}

impl Options {
    /// Reads and checks the options as upstream's `ValidatePodLogOptions` does.
    fn parse(call: &Call) -> ApiResult<Self> {
        let query = &call.query;
        let flag = |key: &str| -> ApiResult<bool> {
            match query.get(key) {
                None | Some("false") => Ok(false),
                Some("true" | "") => Ok(true),
                Some(other) => Err(ApiError::bad_request(format!(
                    "strconv.ParseBool: parsing \"{other}\": invalid syntax"
                ))),
            }
        };
        let int = |key: &str| -> ApiResult<Option<i64>> {
            query
                .get(key)
                .map(|text| {
                    text.parse::<i64>().map_err(|_| {
                        ApiError::bad_request(format!(
                            "strconv.ParseInt: parsing \"{text}\": invalid syntax"
                        ))
                    })
                })
                .transpose()
        };
        let mut errors = Vec::new();
        let tail_lines = int("tailLines")?;
        if tail_lines.is_some_and(|n| n < 0) {
            errors.push(crate::meta::FieldError {
                field: "tailLines".to_owned(),
                reason: "FieldValueInvalid",
                detail: format!(
                    "Invalid value: {}: must be greater than or equal to 0",
                    tail_lines.unwrap_or_default()
                ),
            });
        }
        let limit_bytes = int("limitBytes")?;
        if limit_bytes.is_some_and(|n| n < 1) {
            errors.push(crate::meta::FieldError {
                field: "limitBytes".to_owned(),
                reason: "FieldValueInvalid",
                detail: format!(
                    "Invalid value: {}: must be greater than 0",
                    limit_bytes.unwrap_or_default()
                ),
            });
        }
        let since_seconds = int("sinceSeconds")?;
        if since_seconds.is_some_and(|n| n < 1) {
            errors.push(crate::meta::FieldError {
                field: "sinceSeconds".to_owned(),
                reason: "FieldValueInvalid",
                detail: format!(
                    "Invalid value: {}: must be greater than 0",
                    since_seconds.unwrap_or_default()
                ),
            });
        }
        let since_time = match query.get("sinceTime") {
            None => None,
            Some(text) => Some(kubemock_apimachinery::time::parse_rfc3339(text).ok_or_else(
                || ApiError::bad_request(format!("parsing time \"{text}\" as RFC 3339 failed")),
            )?),
        };
        if since_seconds.is_some() && since_time.is_some() {
            errors.push(crate::meta::FieldError {
                field: String::new(),
                reason: "FieldValueForbidden",
                detail: "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
                    .to_owned(),
            });
        }
        if !errors.is_empty() {
            return Err(crate::meta::invalid(
                "PodLogOptions",
                "",
                "PodLogOptions",
                "",
                errors,
            ));
        }
        Ok(Options {
            container: query
                .get("container")
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            follow: flag("follow")?,
            previous: flag("previous")?,
            timestamps: flag("timestamps")?,
            tail_lines: tail_lines.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            since_seconds,
            since_time,
            limit_bytes: limit_bytes.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        })
    }
}

/// The names of the pod's containers of `list` (`containers`, `initContainers`).
fn names(pod: &Object, list: &str) -> Vec<String> {
    pod.get("spec")
        .and_then(|s| s.get(list))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The container the request reads (upstream `LogLocation`'s choice and refusals).
pub(crate) fn container_of(pod: &Object, name: &str, asked: Option<&str>) -> ApiResult<String> {
    let (containers, init) = (names(pod, "containers"), names(pod, "initContainers"));
    let ephemeral = names(pod, "ephemeralContainers");
    match asked {
        Some(asked) => {
            if containers
                .iter()
                .chain(&init)
                .chain(&ephemeral)
                .any(|c| c == asked)
            {
                Ok(asked.to_owned())
            } else {
                Err(ApiError::bad_request(format!(
                    "container {asked} is not valid for pod {name}"
                )))
            }
        }
        None if containers.len() + init.len() + ephemeral.len() == 1 => Ok(containers
            .into_iter()
            .chain(init)
            .chain(ephemeral)
            .next()
            .unwrap_or_default()),
        None => {
            let mut message = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            );
            if !init.is_empty() {
                message.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            if !ephemeral.is_empty() {
                message.push_str(&format!(
                    " or one of the ephemeral containers: [{}]",
                    ephemeral.join(" ")
                ));
            }
            Err(ApiError::bad_request(message))
        }
    }
}

/// The container's status, from any of the pod's status lists.
fn container_status<'a>(pod: &'a Object, container: &str) -> Option<&'a Value> {
    let status = pod.get("status")?;
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|list| status.get(list).and_then(Value::as_array))
    .flatten()
    .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

/// The container's current state.
fn status_of<'a>(pod: &'a Object, container: &str) -> Option<&'a Object> {
    container_status(pod, container)?.get("state")?.as_object()
}

/// When the container (or, `previous`, its last run) started, and whether it still runs; the
/// kubelet's refusals otherwise.
fn state_of(
    pod: &Object,
    name: &str,
    container: &str,
    previous: bool,
) -> ApiResult<(String, bool)> {
    let node = pod
        .get("spec")
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    if previous {
        // The run before the last restart, as the kubelet keeps it in `lastState`
        // (upstream `pkg/kubelet/kuberuntime/kuberuntime_container.go` `GetContainerLogs` of
        // the previous container ID; `pkg/kubelet/kubelet_pods.go` `validateContainerLogStatus`).
        let previous_start = container_status(pod, container)
            .and_then(|s| s.get("lastState"))
            .and_then(|s| s.get("terminated"))
            .map(|t| {
                t.get("startedAt")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            });
        return match previous_start {
            Some(started) => Ok((started, false)),
            None => Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            ))),
        };
    }
    let Some(state) = status_of(pod, container) else {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        )));
    };
    let started = |kind: &str| {
        state
            .get(kind)
            .and_then(|s| s.get("startedAt"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if let Some(at) = started("running") {
        return Ok((at, true));
    }
    if let Some(at) = started("terminated") {
        return Ok((at, false));
    }
    let reason = state
        .get("waiting")
        .and_then(|w| w.get("reason"))
        .and_then(Value::as_str)
        .unwrap_or("ContainerCreating");
    Err(ApiError::bad_request(format!(
        "container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"
    )))
}

/// The container's log lines, from the pod's annotations or the default line.
pub(crate) fn log_lines(pod: &Object, container: &str) -> Vec<String> {
    let annotations = pod.get("metadata").and_then(|m| m.get("annotations"));
    let annotation = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let text = annotation(&format!("{CONTAINER_LOG_ANNOTATION}{container}"))
        .or_else(|| annotation(LOG_ANNOTATION));
    match text {
        Some(text) => text.lines().map(str::to_owned).collect(),
        None => {
            let image = ["containers", "initContainers", "ephemeralContainers"]
                .iter()
                .filter_map(|list| {
                    pod.get("spec")
                        .and_then(|s| s.get(list))
                        .and_then(Value::as_array)
                })
                .flatten()
                .find(|c| c.get("name").and_then(Value::as_str) == Some(container))
                .and_then(|c| c.get("image"))
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![format!(
                "kubemock: container {container} (image {image}) started; kubemock simulates containers and runs no processes (set the pod annotation {CONTAINER_LOG_ANNOTATION}{container} or {LOG_ANNOTATION} to choose this log)"
            )]
        }
    }
}

/// The lines the options select, as the kubelet writes them: since a time, the last
/// `tailLines`, each stamped when `timestamps`.
fn render(lines: &[String], started: &str, options: &Options) -> String {
    let started_at = kubemock_apimachinery::time::parse_rfc3339(started);
    let since = options.since_time.or_else(|| {
        options.since_seconds.map(|seconds| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
            now - i128::from(seconds) * 1_000_000_000
        })
    });
    // Every line was written when the container started.
    if let (Some(since), Some(at)) = (since, started_at)
        && at < since
    {
        return String::new();
    }
    let skip = options
        .tail_lines
        .map_or(0, |tail| lines.len().saturating_sub(tail));
    let stamp = stamp_of(started);
    lines[skip..]
        .iter()
        .map(|line| {
            if options.timestamps {
                format!("{stamp} {line}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// The kubelet's line stamp (`RFC3339Nano`) of an RFC 3339 time in seconds.
fn stamp_of(started: &str) -> String {
    match started.strip_suffix('Z') {
        Some(seconds) if !seconds.contains('.') => format!("{seconds}.000000000Z"),
        _ => started.to_owned(),
    }
}

/// `proxy` of pods and nodes: not simulated.
pub(crate) fn not_simulated(call: &Call) -> ApiResult<Response> {
    let what = call.target.subresource.as_deref().unwrap_or_default();
    let plural = &call.target.resource.plural;
    Err(ApiError::bad_request(format!(
        "kubemock does not simulate {plural}/{what}: its simulated containers serve no ports (docs/pod-io.md)"
    )))
}
