//! Creating the fixtures (`kubemock serve --load`, read by `fixtures`) at startup, through
//! the server's own routes, in dependency order: CustomResourceDefinitions first, each
//! waited for until Established, then Namespaces, then the rest. Apart from `fixtures`
//! because it needs the server's state, which holds the fixtures read.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::Value;
use tower::ServiceExt;

use crate::fixtures::{Fixture, FixtureError, is_kind};
use crate::state::AppState;

/// How long startup waits for a fixture CRD to be Established.
const ESTABLISHED_WAIT: Duration = Duration::from_secs(30);
/// How often it looks while it waits.
const ESTABLISHED_POLL: Duration = Duration::from_millis(10);
/// The most a fixture answer may be read of (an answer is an object or a Status).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Creates `fixtures` through `routes` (the server's router, without the pipeline: as the
/// open mode's `system:admin`, neither logged nor faulted), in dependency order.
pub(crate) async fn create(
    state: &AppState,
    routes: &axum::Router,
    fixtures: &[Fixture],
) -> Result<(), FixtureError> {
    let crd = |f: &&Fixture| is_kind(f, "apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let namespace = |f: &&Fixture| is_kind(f, "v1", "Namespace");
    let definitions: Vec<&Fixture> = fixtures.iter().filter(crd).collect();
    for fixture in &definitions {
        create_one(state, routes, fixture).await?;
    }
    for fixture in &definitions {
        established(routes, fixture).await?;
    }
    for fixture in fixtures.iter().filter(namespace) {
        create_one(state, routes, fixture).await?;
    }
    for fixture in fixtures.iter().filter(|f| !crd(f) && !namespace(f)) {
        create_one(state, routes, fixture).await?;
    }
    Ok(())
}

/// The collection path `fixture`'s object is created at.
fn collection(state: &AppState, fixture: &Fixture) -> Result<(String, bool), FixtureError> {
    let object = &fixture.object;
    let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let refused = |message: String| FixtureError::Create {
        origin: fixture.origin(),
        message,
    };
    if api_version.is_empty() || kind.is_empty() {
        return Err(refused("apiVersion and kind are required".to_owned()));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = state
        .registry()
        .resources_in(group, version)
        .into_iter()
        .find(|r| r.kind == kind)
        .ok_or_else(|| {
            refused(format!(
                "no resource serves kind {kind} in {api_version} (is its CustomResourceDefinition among the fixtures?)"
            ))
        })?;
    let root = if group.is_empty() {
        "/api/v1".to_owned()
    } else {
        format!("/apis/{group}/{version}")
    };
    let path = if resource.namespaced {
        let namespace = object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default");
        format!("{root}/namespaces/{namespace}/{}", resource.plural)
    } else {
        format!("{root}/{}", resource.plural)
    };
    Ok((path, resource.namespaced))
}

async fn call(
    routes: &axum::Router,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut request = Request::builder().method(method).uri(path);
    let body = match body {
        Some(value) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Body::from(serde_json::to_vec(value).unwrap_or_default())
        }
        None => Body::empty(),
    };
    let Ok(request) = request.body(body) else {
        return (400, Value::Null);
    };
    let Ok(response) = routes.clone().oneshot(request).await;
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
        .await
        .unwrap_or_default();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn create_one(
    state: &AppState,
    routes: &axum::Router,
    fixture: &Fixture,
) -> Result<(), FixtureError> {
    let (path, _) = collection(state, fixture)?;
    let (code, answer) = call(routes, Method::POST, &path, Some(&fixture.object)).await;
    match code {
        200..=299 => Ok(()),
        409 if answer.get("reason").and_then(Value::as_str) == Some("AlreadyExists") => {
            tracing::info!(origin = %fixture.origin(), "fixture exists already; left as it is");
            Ok(())
        }
        _ => Err(FixtureError::Create {
            origin: fixture.origin(),
            message: format!(
                "creating {} {:?}: {} {}",
                fixture
                    .object
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                fixture
                    .object
                    .get("metadata")
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                code,
                answer
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
            ),
        }),
    }
}

/// Waits until the fixture CRD is Established.
async fn established(routes: &axum::Router, fixture: &Fixture) -> Result<(), FixtureError> {
    let name = fixture
        .object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
    let deadline = Instant::now() + ESTABLISHED_WAIT;
    loop {
        let (_, answer) = call(routes, Method::GET, &path, None).await;
        let is_established = answer
            .get("status")
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("type") == Some(&Value::from("Established"))
                    && c.get("status") == Some(&Value::from("True"))
            });
        if is_established {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(FixtureError::Create {
                origin: fixture.origin(),
                message: format!(
                    "CustomResourceDefinition {name:?} was not Established in {ESTABLISHED_WAIT:?}"
                ),
            });
        }
        tokio::time::sleep(ESTABLISHED_POLL).await;
    }
}
