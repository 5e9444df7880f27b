//! Non-resource endpoints (§2.1, §2.8): `/version`, which kubectl's dispatcher reads to pick
//! its bundled kubectl, the health checks, and `/metrics`.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::metrics::{self, Snapshot};
use crate::state::AppState;

/// The Kubernetes version kubemock reports: the kubectl on these machines runs its bundled
/// 1.32 when the server's minor version is 32.
pub const KUBERNETES_MINOR: &str = "32";

/// The full version, `v1.32.0`.
pub(crate) fn git_version() -> String {
    format!("v1.{KUBERNETES_MINOR}.0")
}

/// `GET /version`.
pub(crate) async fn version() -> Json<serde_json::Value> {
    Json(json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "gitVersion": git_version(),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.3",
        "compiler": "gc",
        "platform": "linux/amd64",
    }))
}

/// The checks each health endpoint reports with `?verbose`, each also served alone at
/// `/{endpoint}/{check}`. The post-start hooks complete before the server serves.
const CHECKS: [&str; 3] = ["ping", "log", crate::rbac::HEALTH_CHECK];

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
