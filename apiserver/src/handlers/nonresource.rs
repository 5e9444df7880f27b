//! Non-resource endpoints (docs/api-behaviour.md#version-and-health): `/version`, which kubectl's dispatcher reads to pick
//! its bundled kubectl, the health checks, and `/metrics`.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::metrics::{self, Snapshot};
use crate::state::AppState;
use kubemock_apimachinery::version::{
    GIT_COMMIT, KUBERNETES_MAJOR, KUBERNETES_MINOR, PLATFORM, git_version,
};

/// `GET /version`.
pub(crate) async fn version() -> Json<serde_json::Value> {
    Json(json!({
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": git_version(),
        "gitCommit": GIT_COMMIT,
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.3",
        "compiler": "gc",
        "platform": PLATFORM,
    }))
}

/// The checks each health endpoint reports with `?verbose`, each also served alone at
/// `/{endpoint}/{check}`. The post-start hooks complete before the server serves:
/// `rbac/bootstrap-roles` is upstream's name for what `crate::rbac` does at startup (the
/// bootstrap policy created and repaired).
const CHECKS: [&str; 3] = ["ping", "log", "poststarthook/rbac/bootstrap-roles"];

fn health(endpoint: &'static str, query: Option<String>) -> Response {
    let verbose = query.as_deref().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("verbose"))
    });
    let body = if verbose {
        let mut text: String = CHECKS.iter().map(|c| format!("[+]{c} ok\n")).collect();
        text.push_str(&format!("{endpoint} check passed\n"));
        text
    } else {
        "ok".to_owned()
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /healthz`.
pub(crate) async fn healthz(RawQuery(query): RawQuery) -> Response {
    health("healthz", query)
}

/// `GET /livez`.
pub(crate) async fn livez(RawQuery(query): RawQuery) -> Response {
    health("livez", query)
}

/// `GET /readyz`.
pub(crate) async fn readyz(RawQuery(query): RawQuery) -> Response {
    health("readyz", query)
}

/// `GET /{healthz,livez,readyz}/{check}`: one named check (names may hold slashes, as
/// `poststarthook/rbac/bootstrap-roles`).
pub(crate) async fn single_check(
    axum::extract::Path(check): axum::extract::Path<String>,
) -> Response {
    if CHECKS.contains(&check.as_str()) {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "ok",
        )
            .into_response()
    } else {
        not_found_text()
    }
}

/// `GET /metrics`: the Prometheus text exposition (`crate::metrics`). A store that does not
/// answer leaves its two gauges without a sample rather than failing the scrape.
pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    let store = state.store();
    let snapshot = Snapshot {
        in_flight: state.in_flight().in_use(),
        revision: store.current_revision().await.ok(),
        compacted: store.compacted_revision().await.ok(),
        crd_sync_timeouts: state.crd_sync_timeouts(),
        watch_catch_ups: state.watch_catch_ups(),
        store: store.gauges(),
        heap_in_use: state
            .config()
            .heap_in_use
            .map(|in_use| u64::try_from(in_use()).unwrap_or(u64::MAX)),
        audit: state.config().audit.as_ref().map(|audit| {
            let counts = audit.counts();
            let load = |counter: &std::sync::atomic::AtomicU64| {
                counter.load(std::sync::atomic::Ordering::Relaxed)
            };
            metrics::AuditSnapshot {
                events: load(&counts.events),
                errors: load(&counts.errors),
                levels: [
                    load(&counts.levels[0]),
                    load(&counts.levels[1]),
                    load(&counts.levels[2]),
                    load(&counts.levels[3]),
                ],
            }
        }),
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics().render(snapshot),
    )
        .into_response()
}

/// The plain-text 404 the real server sends for paths outside every API root.
pub(crate) fn not_found_text() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "404 page not found\n",
    )
        .into_response()
}
