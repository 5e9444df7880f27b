//! `pods/exec`, `pods/attach` and `pods/portforward`: the streaming subresources, served on
//! the upgraded HTTP/1.1 connection (plain or TLS) as a real cluster's kubelet serves them
//! behind the apiserver (upstream `pkg/registry/core/pod/rest/subresources.go`,
//! `staging/src/k8s.io/kubelet/pkg/cri/streaming/remotecommand/` and `.../portforward/`).
//!
//! Protocols (docs/pod-io.md):
//! - WebSocket `v5.channel.k8s.io` and `v4.channel.k8s.io` (kubectl ≥ 1.30 for exec and attach):
//!   one byte of channel, then data; the error channel carries a `metav1.Status`.
//! - SPDY/3.1 with `X-Stream-Protocol-Version: v4.channel.k8s.io` (kubectl ≤ 1.29, and the
//!   fallback of later ones): the client opens one stream per `streamType`.
//! - SPDY/3.1 `portforward.k8s.io`, bare (kubectl ≤ 1.30) or tunnelled in WebSocket binary
//!   messages as `SPDY/3.1+portforward.k8s.io` (kubectl ≥ 1.31).
//!
//! Simulated containers run no processes: exec runs the built-ins of [`builtins`], attach
//! shows the container's simulated log and holds until it ends, and port-forward answers
//! each connection from the pod's `kubemock.dev/port.<PORT>` annotation or with an error
//! saying the pod serves nothing there.

mod builtins;
mod container;
mod exec;
mod portforward;
pub(crate) mod spdy;
pub(crate) mod websocket;

use axum::body::Body;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;
use serde_json::Value;

use crate::handlers::resource::Call;
use crate::keys;
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult};

/// The remote command protocol whose channel 255 half-closes a channel.
pub(crate) const V5: &str = "v5.channel.k8s.io";
/// The remote command protocol kubectl's SPDY executor and older WebSocket clients speak.
pub(crate) const V4: &str = "v4.channel.k8s.io";
/// The port-forward protocol.
pub(crate) const PORT_FORWARD: &str = "portforward.k8s.io";
/// The WebSocket subprotocol of SPDY tunnelled in WebSocket messages
/// (`staging/src/k8s.io/apimachinery/pkg/util/portforward/constants.go`).
pub(crate) const TUNNELED_PORT_FORWARD: &str = "SPDY/3.1+portforward.k8s.io";
/// The annotation prefix of a port's canned response (`kubemock.dev/port.8080`).
pub(crate) const PORT_ANNOTATION: &str = "kubemock.dev/port.";

/// Which streaming subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Exec,
    Attach,
    PortForward,
}

/// The wire a session speaks after the upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// WebSocket channels; `true` for v5 (stream close signals).
    WebSocket { v5: bool },
    /// SPDY/3.1 on the connection.
    Spdy,
    /// SPDY/3.1 in WebSocket binary messages.
    TunneledSpdy,
}

/// The query of exec and attach (`PodExecOptions`, `PodAttachOptions`).
#[derive(Debug, Clone)]
pub(crate) struct Streams {
    pub(crate) stdin: bool,
    pub(crate) stdout: bool,
    pub(crate) stderr: bool,
    pub(crate) tty: bool,
}

/// `GET|POST .../pods/{name}/{exec,attach,portforward}`.
pub(crate) async fn serve(
    call: &Call,
    method: &Method,
    upgrade: Option<OnUpgrade>,
) -> ApiResult<Response> {
    let kind = match call.target.subresource.as_deref() {
        Some("exec") => Kind::Exec,
        Some("attach") => Kind::Attach,
        Some("portforward") => Kind::PortForward,
        _ => return crate::handlers::logs::not_simulated(call),
    };
    if *method != Method::GET && *method != Method::POST {
        return Err(ApiError::route_method_not_allowed());
    }
    let name = call.target.name.clone().unwrap_or_default();
    let namespace = call.target.namespace.clone().unwrap_or_default();
    let key = keys::object_key(&call.target.resource, Some(&namespace), &name);
    let Some(kv) = call.state.fetch(&key).await? else {
        return Err(ApiError::not_found(&call.target.resource, &name));
    };
    let pod = object::from_stored(&kv)?;
    let query = &call.query;
    let flag = |key: &str| matches!(query.get(key), Some("true" | "1" | "True" | ""));
    let streams = Streams {
        stdin: flag("stdin"),
        stdout: flag("stdout"),
        stderr: flag("stderr"),
        tty: flag("tty"),
    };
    // Upstream's checks in order: the container (apiserver, `validateContainer`), the node
    // (`streamLocation`), the running container (the kubelet).
    let container = match kind {
        Kind::PortForward => String::new(),
        Kind::Exec | Kind::Attach => {
            crate::handlers::logs::container_of(&pod, &name, query.get("container"))?
        }
    };
    if !has_node(&pod) {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let command: Vec<String> = query
        .all("command")
        .into_iter()
        .map(str::to_owned)
        .collect();
    if kind == Kind::Exec && command.is_empty() {
        return Err(ApiError::bad_request(
            "you must specify at least one command for the container",
        ));
    }
    if kind != Kind::PortForward && !(streams.stdin || streams.stdout || streams.stderr) {
        // `remotecommand.NewOptions` (kubelet).
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "you must specify at least 1 of stdin, stdout, stderr".to_owned(),
        ));
    }
    let running = match kind {
        Kind::PortForward => any_running(&pod),
        Kind::Exec | Kind::Attach => is_running(&pod, &container),
    };
    if !running {
        // The kubelet finds no running container and answers 500 with plain text, which the
        // apiserver passes on (`pkg/kubelet/kubelet_pods.go` `GetExec`, `GetAttach`,
        // `GetPortForward`; `cri/streaming/errors.go` `WriteError`): kubectl prints
        // "unable to upgrade connection: container not found ("c")".
        let full = format!("{name}_{namespace}");
        let message = match kind {
            Kind::Exec => format!("container not found ({container:?})"),
            Kind::Attach => format!("container {container} not found in pod {full}"),
            Kind::PortForward => format!("pod not found ({full:?})"),
        };
        return Ok(plain(StatusCode::INTERNAL_SERVER_ERROR, message));
    }
    let wire = match negotiate(&call.headers, kind) {
        Ok(wire) => wire,
        Err((status, message)) => return Ok(plain(status, message)),
    };
    let Some(upgrade) = upgrade else {
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "Upgrade request required".to_owned(),
        ));
    };
    let response = switching(&call.headers, wire);
    let state = call.state.clone();
    let session = Session {
        state: state.clone(),
        pod,
        pod_key: key,
        revision: kv.mod_revision,
        container,
        streams,
    };
    state.tasks().clone().spawn(async move {
        let upgraded = match upgrade.await {
            Ok(upgraded) => hyper_util::rt::TokioIo::new(upgraded),
            Err(err) => {
                tracing::debug!(%err, "streaming upgrade failed");
                return;
            }
        };
        match kind {
            Kind::Exec => {
                exec::serve(session, wire, exec::Program::Command(command), upgraded).await
            }
            Kind::Attach => exec::serve(session, wire, exec::Program::Attach, upgraded).await,
            Kind::PortForward => portforward::serve(session, wire, upgraded).await,
        }
    });
    Ok(response)
}

/// What a session needs of the request.
pub(crate) struct Session {
    pub(crate) state: crate::state::AppState,
    pub(crate) pod: Object,
    pub(crate) pod_key: String,
    /// The pod's revision when the session started (attach watches from there).
    pub(crate) revision: u64,
    pub(crate) container: String,
    pub(crate) streams: Streams,
}

/// A plain-text answer, as the kubelet's streaming server writes its refusals.
fn plain(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

fn has_node(pod: &Object) -> bool {
    pod.get("spec")
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty())
}

/// Whether `container` of `pod` runs (its status shows `state.running`).
fn is_running(pod: &Object, container: &str) -> bool {
    let status = pod.get("status");
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|list| status.and_then(|s| s.get(list)).and_then(Value::as_array))
    .flatten()
    .any(|s| {
        s.get("name").and_then(Value::as_str) == Some(container)
            && s.get("state").and_then(|s| s.get("running")).is_some()
    })
}

/// Whether any container of `pod` runs (the kubelet forwards into a running sandbox).
fn any_running(pod: &Object) -> bool {
    pod.get("status")
        .and_then(|s| s.get("containerStatuses"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| s.get("state").and_then(|s| s.get("running")).is_some())
}

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect()
}

/// Chooses the wire from the upgrade headers, or the refusal upstream answers.
fn negotiate(headers: &HeaderMap, kind: Kind) -> Result<Wire, (StatusCode, String)> {
    let upgrade = header_values(headers, "upgrade");
    if upgrade.iter().any(|u| u.eq_ignore_ascii_case("websocket")) {
        let offered = header_values(headers, "sec-websocket-protocol");
        let supported: &[&str] = match kind {
            Kind::PortForward => &[TUNNELED_PORT_FORWARD],
            Kind::Exec | Kind::Attach => &[V5, V4],
        };
        // The client's order of preference (`wsstream/conn.go` `handshake`).
        return match offered.iter().find(|p| supported.contains(p)) {
            Some(&V5) => Ok(Wire::WebSocket { v5: true }),
            Some(&V4) => Ok(Wire::WebSocket { v5: false }),
            Some(_) => Ok(Wire::TunneledSpdy),
            None => Err((
                StatusCode::BAD_REQUEST,
                format!(
                    "requested protocol(s) are not supported: {offered:?}; supports {supported:?} (kubemock serves no base64 or v1-v3 channel protocols)"
                ),
            )),
        };
    }
    if upgrade.iter().any(|u| u.eq_ignore_ascii_case("SPDY/3.1")) {
        let offered = header_values(headers, "x-stream-protocol-version");
        let wanted = match kind {
            Kind::PortForward => PORT_FORWARD,
            Kind::Exec | Kind::Attach => V4,
        };
        if offered.contains(&wanted) {
            return Ok(Wire::Spdy);
        }
        // `staging/src/k8s.io/apimachinery/pkg/util/httpstream/httpstream.go` `Handshake`.
        return Err((
            StatusCode::FORBIDDEN,
            format!(
                "unable to upgrade: unable to negotiate protocol: client supports {offered:?}, server supports [{wanted}]"
            ),
        ));
    }
    Err((
        StatusCode::BAD_REQUEST,
        "Upgrade request required".to_owned(),
    ))
}

/// The 101 answer for `wire`.
fn switching(headers: &HeaderMap, wire: Wire) -> Response {
    let mut builder = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "Upgrade");
    match wire {
        Wire::Spdy => {
            let protocol =
                if header_values(headers, "x-stream-protocol-version").contains(&PORT_FORWARD) {
                    PORT_FORWARD
                } else {
                    V4
                };
            builder = builder
                .header(header::UPGRADE, "SPDY/3.1")
                .header("X-Stream-Protocol-Version", protocol);
        }
        Wire::WebSocket { .. } | Wire::TunneledSpdy => {
            let key = headers
                .get("sec-websocket-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let protocol = match wire {
                Wire::WebSocket { v5: true } => V5,
                Wire::WebSocket { v5: false } => V4,
                _ => TUNNELED_PORT_FORWARD,
            };
            builder = builder
                .header(header::UPGRADE, "websocket")
                .header("Sec-WebSocket-Accept", websocket::accept_key(key))
                .header("Sec-WebSocket-Protocol", protocol);
        }
    }
    builder
        .body(Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The `metav1.Status` a remote command's error channel carries at its end
/// (`staging/src/k8s.io/kubelet/pkg/cri/streaming/remotecommand/exec.go` `ServeExec`, decoded
/// by client-go's `errorDecoderV4`).
pub(crate) fn exit_status(code: i32, argv: &[String]) -> Vec<u8> {
    let status = if code == 0 {
        serde_json::json!({"metadata": {}, "status": "Success"})
    } else {
        serde_json::json!({
            "metadata": {},
            "status": "Failure",
            "message": format!(
                "command terminated with non-zero exit code: command {argv:?} exited with {code}"
            ),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        })
    };
    serde_json::to_vec(&status).unwrap_or_default()
}
