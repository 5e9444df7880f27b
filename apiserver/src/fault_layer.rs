//! The pipeline's fault step: after authorization (a fault acts on requests the server
//! would have run, never on ones it refuses), before routing. It matches each resource
//! request against the Faults that could match its resource, namespace and name
//! (`Current::candidates`), in name order; the first whose schedule fires acts on it, and
//! the Faults after it are not consulted.
//!
//! Matching is synchronous and allocation-free on the fields of the request (verb, target,
//! user, user agent, query); a Fault with a label selector reads the stored object's labels
//! only once everything else matched. A watch action is handed to the watch handler through
//! a task-local ([`watch_fault`]) for the span of the request.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use kubemock_apimachinery::labels::Selector as LabelSelector;
use serde_json::Value;

use crate::faults::Fault;
use crate::faults::spec::{Matcher, Named, WatchAction};
use crate::identity;
use crate::query::Query;
use crate::registry::testing::GROUP;
use crate::requestlog::kubernetes_verb;
use crate::state::AppState;
use crate::target::{RequestInfo, Target};

tokio::task_local! {
    /// The watch action a fault gave the request the task serves.
    static WATCH_FAULT: Arc<WatchAction>;
}

/// The watch action a fault gave the request being served, if any (read by the watch
/// handler before it starts its task).
pub(crate) fn watch_fault() -> Option<Arc<WatchAction>> {
    WATCH_FAULT.try_with(Arc::clone).ok()
}

/// What a request is, as faults match it.
struct Facts<'a> {
    verb: &'static str,
    target: &'a Target,
    user: &'a str,
    user_agent: Option<&'a str>,
    query: Option<&'a str>,
}

impl Matcher {
    /// Whether the request matches every field but the label selector.
    fn matches(&self, facts: &Facts<'_>) -> bool {
        let target = facts.target;
        let resource = &target.resource;
        let same =
            |wanted: &Option<String>, actual: &str| wanted.as_deref().is_none_or(|w| w == actual);
        self.verbs
            .as_ref()
            .is_none_or(|verbs| verbs.contains(&facts.verb))
            && same(&self.group, &resource.group)
            && same(&self.resource, &resource.plural)
            && same(
                &self.subresource,
                target.subresource.as_deref().unwrap_or(""),
            )
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| target.namespace.as_deref() == Some(ns))
            && self.name.as_ref().is_none_or(|glob| {
                target
                    .name
                    .as_deref()
                    .is_some_and(|name| glob.matches(name))
            })
            && self
                .user
                .as_deref()
                .is_none_or(|user| facts.user.contains(user))
            && self
                .user_agent
                .as_deref()
                .is_none_or(|agent| facts.user_agent.is_some_and(|ua| ua.contains(agent)))
            && (self.labels.is_none() || target.name.is_some())
            && self.query_matches(facts.query)
    }

    /// `fieldManager` and `dryRun`, read from the query only when the fault asks.
    fn query_matches(&self, query: Option<&str>) -> bool {
        if self.field_manager.is_none() && self.dry_run.is_none() {
            return true;
        }
        let query = Query::parse(query);
        self.field_manager
            .as_deref()
            .is_none_or(|manager| query.get("fieldManager") == Some(manager))
            && self
                .dry_run
                .is_none_or(|dry_run| query.all("dryRun").is_empty() != dry_run)
    }
}

/// The layer: see the module documentation.
#[derive(Clone)]
pub(crate) struct FaultLayer {
    state: AppState,
}

impl FaultLayer {
    pub(crate) fn new(state: AppState) -> Self {
        FaultLayer { state }
    }
}

impl<S> tower::Layer<S> for FaultLayer {
    type Service = Faulted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Faulted {
            state: self.state.clone(),
            inner,
        }
    }
}

/// The service of [`FaultLayer`].
#[derive(Clone)]
pub(crate) struct Faulted<S> {
    state: AppState,
    inner: S,
}

impl<S> tower::Service<Request> for Faulted<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if !self.state.faults().any() {
            return Box::pin(inner.call(request));
        }
        let Some((target, matched)) = matching(&self.state, &request) else {
            return Box::pin(inner.call(request));
        };
        let state = self.state.clone();
        Box::pin(async move {
            let mut labels: Option<Option<Value>> = None;
            for fault in matched {
                if let Some(selector) = &fault.compiled.matcher.labels {
                    if labels.is_none() {
                        labels = Some(stored_labels(&state, &target).await);
                    }
                    if !selected(selector, labels.as_ref().and_then(Option::as_ref)) {
                        continue;
                    }
                }
                if fault.fires(now_nanos()) {
                    return Ok(act(&state, &fault, &target, request, inner).await);
                }
            }
            inner.call(request).await
        })
    }
}

/// The request's target and the Faults whose fields (all but labels) it matches, in name
/// order; `None` when there are none (or it is no resource request, or one for
/// `testing.kubemock.dev`).
fn matching(state: &AppState, request: &Request) -> Option<(Arc<Target>, Vec<Arc<Fault>>)> {
    let info = request.extensions().get::<RequestInfo>()?;
    let target = info.target.as_ref()?;
    if target.resource.group == GROUP {
        return None;
    }
    let current = state.faults().current();
    let candidates = current.candidates(
        &target.resource.plural,
        target.namespace.as_deref(),
        target.name.as_deref(),
    );
    if candidates.is_empty() {
        return None;
    }
    let user = identity::requester(request.extensions());
    let facts = Facts {
        verb: kubernetes_verb(info.labels.verb, Some(target), request.method()),
        target,
        user: &user.name,
        user_agent: request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
        query: request.uri().query(),
    };
    let matched: Vec<Arc<Fault>> = candidates
        .iter()
        .filter(|fault| fault.compiled.matcher.matches(&facts))
        .cloned()
        .collect();
    (!matched.is_empty()).then(|| (Arc::clone(target), matched))
}

/// The labels of the object `target` names, as stored (`None`: absent, or no labels).
async fn stored_labels(state: &AppState, target: &Target) -> Option<Value> {
    let name = target.name.as_deref()?;
    let key = crate::keys::object_key(&target.resource, target.namespace.as_deref(), name);
    let kv = state.fetch(&key).await.ok()??;
    let object: Value = serde_json::from_slice(&kv.value).ok()?;
    object.get("metadata")?.get("labels").cloned()
}

fn selected(selector: &LabelSelector, labels: Option<&Value>) -> bool {
    match labels.and_then(Value::as_object) {
        Some(labels) => selector.matches(labels),
        None => selector.matches(&serde_json::Map::new()),
    }
}

/// Now on the server's clock: a Fault's `startTime` and `expiryTime` are times of the
/// cluster, virtual under `--virtual-clock`.
fn now_nanos() -> i128 {
    crate::meta::now_unix_nanos()
}

/// Acts on `request` as `fault` says.
async fn act<S>(
    state: &AppState,
    fault: &Fault,
    target: &Target,
    request: Request,
    mut inner: S,
) -> Response
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let action = &fault.compiled.action;
    tracing::debug!(fault = %fault.name, path = %request.uri().path(), "fault acts");
    if action.compact {
        let store = state.store();
        if let Ok(revision) = store.current_revision().await
            && let Err(err) = store.compact(revision).await
        {
            tracing::warn!(error = %err, "a fault's compaction failed");
        }
    }
    if let Some(latency) = action.latency_before {
        sleep(state, latency).await;
    }
    let requested = Query::parse(request.uri().query())
        .get("resourceVersion")
        .unwrap_or("")
        .to_owned();
    let named = |current_revision: u64| Named {
        group: &target.resource.group,
        resource: &target.resource.plural,
        name: target.name.as_deref().unwrap_or(""),
        requested_revision: &requested,
        current_revision,
    };
    let response = if let Some(answer) = &action.status {
        let current = state.store().current_revision().await.unwrap_or(0);
        answer.to_error(&named(current)).into_response()
    } else {
        let call = inner.call(request);
        let response = match &action.watch {
            Some(watch) => WATCH_FAULT.scope(Arc::clone(watch), call).await,
            None => call.await,
        };
        let Ok(response) = response;
        match &action.fail_after_commit {
            Some(answer) if response.status().is_success() => {
                drop(response);
                let current = state.store().current_revision().await.unwrap_or(0);
                answer.to_error(&named(current)).into_response()
            }
            _ => response,
        }
    };
    if let Some(latency) = action.latency_after {
        sleep(state, latency).await;
    }
    response
}

/// Sleeps `latency`, or until the server shuts down.
async fn sleep(state: &AppState, latency: std::time::Duration) {
    tokio::select! {
        () = tokio::time::sleep(latency) => {}
        () = state.shutdown().cancelled() => {}
    }
}
