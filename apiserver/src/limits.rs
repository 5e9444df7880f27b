//! The in-flight limit: a burst of clients must not make the server slow for everyone or grow
//! its memory without bound. Like kube-apiserver's `--max-requests-inflight` and
//! `--max-mutating-requests-inflight` (k8s.io/apiserver `pkg/server/filters/maxinflight.go`),
//! reads and writes each get a fixed number of slots; a request that finds no free slot is
//! turned away at once with 429 and `Retry-After: 1` (no queueing), and client-go, kube-rs and
//! kubectl retry it after that second (docs/api-behaviour.md#errors).
//!
//! Watches (and other long-running requests) hold no slot: they stay open for minutes, and
//! counting them would let a few informers lock out every short request. They are counted
//! apart, by the metrics' open-requests gauge. The health checks and `/metrics` are never
//! turned away, so that an overloaded server still reports itself alive and can be observed.
//!
//! Counting requests does not bound memory: 200 writes of 3 MiB bodies hold 600 MiB before
//! they are parsed (several times that after). So request bodies also take their bytes from a
//! budget (`ServerConfig::max_request_body_bytes_inflight`): a request whose body would take it
//! past the budget is turned away like one that finds no slot. The bytes are the
//! `Content-Length`, or the whole 3 MiB limit for a body of unknown length.
//!
//! A slot is a semaphore permit taken with `try_acquire` and given back when the handler
//! returns; nothing waits for one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::debug;

use crate::status::MAX_BODY_BYTES;
use crate::target::RequestInfo;

/// Bytes of request bodies in flight by default: room for every mutating slot's body at an
/// ordinary size, and for 40 bodies at the 3 MiB limit at once.
pub const DEFAULT_MAX_REQUEST_BODY_BYTES_INFLIGHT: usize = 128 * 1024 * 1024;

/// Read-only requests in flight by default: kube-apiserver's `--max-requests-inflight`.
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 400;
/// Mutating requests in flight by default: kube-apiserver's `--max-mutating-requests-inflight`.
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: usize = 200;

/// The seconds a turned-away client should wait, as the real server sends it.
const RETRY_AFTER_SECONDS: &str = "1";
/// The real server's plain-text 429 body (`http.Error` adds the newline).
const TOO_MANY_REQUESTS_BODY: &str = "Too many requests, please try again later.\n";

/// Paths never turned away: the health checks (and their single checks) and `/metrics`.
fn exempt(path: &str) -> bool {
    path == "/metrics"
        || ["/healthz", "/livez", "/readyz"].iter().any(|root| {
            path.strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

/// The slots of both kinds of request. A cheap-clone handle, shared by the middleware (which
/// takes and returns slots) and `/metrics` (which reads how many are taken).
#[derive(Debug, Clone)]
pub(crate) struct InFlight {
    read_only: Lane,
    mutating: Lane,
    /// The free bytes of the request body budget; `None` when unlimited.
    body_bytes: Option<Arc<Semaphore>>,
}

/// The slots of one kind of request.
#[derive(Debug, Clone)]
struct Lane {
    /// The free slots; `None` when the limit is 0 (unlimited, as upstream).
    slots: Option<Arc<Semaphore>>,
    /// Requests of this kind in flight now, limited or not; written only by [`Slot`].
    in_use: Arc<AtomicUsize>,
}

impl Lane {
    fn new(limit: usize) -> Self {
        Lane {
            slots: (limit > 0).then(|| Arc::new(Semaphore::new(limit.min(Semaphore::MAX_PERMITS)))),
            in_use: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn try_acquire(&self) -> Option<Slot> {
        let permit = match &self.slots {
            Some(slots) => Some(slots.clone().try_acquire_owned().ok()?),
            None => None,
        };
        self.in_use.fetch_add(1, Ordering::Relaxed);
        Some(Slot {
            _permit: permit,
            in_use: self.in_use.clone(),
            _body: None,
        })
    }
}

/// A taken slot (and the body bytes it holds); dropping it gives them back.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
    in_use: Arc<AtomicUsize>,
    _body: Option<OwnedSemaphorePermit>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Requests in flight now, per kind (watches excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InUse {
    /// GET and HEAD requests.
    pub(crate) read_only: usize,
    /// Every other request.
    pub(crate) mutating: usize,
}

impl InFlight {
    /// Limits of `max_read_only` and `max_mutating` requests in flight, and of `max_body_bytes`
    /// of their bodies; 0 is unlimited.
    pub(crate) fn new(max_read_only: usize, max_mutating: usize, max_body_bytes: usize) -> Self {
        InFlight {
            read_only: Lane::new(max_read_only),
            mutating: Lane::new(max_mutating),
            body_bytes: (max_body_bytes > 0)
                .then(|| Arc::new(Semaphore::new(max_body_bytes.min(Semaphore::MAX_PERMITS)))),
        }
    }

    /// Takes a slot of the given kind and `body_bytes` of the body budget, if both are free;
    /// never waits.
    pub(crate) fn try_acquire(&self, read_only: bool, body_bytes: usize) -> Option<Slot> {
        let body = match (&self.body_bytes, u32::try_from(body_bytes)) {
            (_, Ok(0)) | (None, _) => None,
            (Some(budget), Ok(bytes)) => Some(budget.clone().try_acquire_many_owned(bytes).ok()?),
            // More than any body may be: the handler answers 413 without reading it.
            (Some(_), Err(_)) => None,
        };
        let mut slot = if read_only {
            self.read_only.try_acquire()
        } else {
            self.mutating.try_acquire()
        }?;
        slot._body = body;
        Some(slot)
    }

    /// How many slots are taken now.
    pub(crate) fn in_use(&self) -> InUse {
        InUse {
            read_only: self.read_only.in_use.load(Ordering::Relaxed),
            mutating: self.mutating.in_use.load(Ordering::Relaxed),
        }
    }
}

/// Marks a response as the in-flight limit's 429, so the metrics count it without timing it
/// (as upstream's `RecordDroppedRequest` does).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rejected;

/// The middleware: holds a slot while the request is handled, or answers 429.
pub(crate) async fn limit(
    State(in_flight): State<InFlight>,
    request: Request,
    next: Next,
) -> Response {
    if exempt(request.uri().path()) {
        return next.run(request).await;
    }
    let (long_running, read_only) = match request.extensions().get::<RequestInfo>() {
        Some(info) => (info.long_running, info.read_only),
        None => (
            false,
            matches!(*request.method(), Method::GET | Method::HEAD),
        ),
    };
    if long_running {
        return next.run(request).await;
    }
    match in_flight.try_acquire(read_only, body_bytes(&request)) {
        Some(slot) => {
            let response = next.run(request).await;
            drop(slot);
            response
        }
        None => {
            debug!(
                method = %request.method(),
                path = request.uri().path(),
                read_only,
                "too many requests in flight"
            );
            too_many_requests()
        }
    }
}

/// The bytes a request's body takes from the budget: its `Content-Length` (capped at the body
/// limit), the whole limit for a chunked body of unknown length, none without a body.
fn body_bytes(request: &Request) -> usize {
    let headers = request.headers();
    if let Some(length) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return length.min(MAX_BODY_BYTES);
    }
    if headers.contains_key(header::TRANSFER_ENCODING) {
        MAX_BODY_BYTES
    } else {
        0
    }
}

/// The real server's 429: a plain-text body, not a `Status` (docs/api-behaviour.md#errors), and `Retry-After: 1`.
fn too_many_requests() -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECONDS),
            ),
        ],
        TOO_MANY_REQUESTS_BODY,
    )
        .into_response();
    response.extensions_mut().insert(Rejected);
    response
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::routing::any;
    use tokio_util::sync::CancellationToken;
    use tower::ServiceExt;

    use super::*;

    /// A router whose every route blocks until `release` is cancelled, behind the limit.
    fn blocking_app(in_flight: InFlight, release: CancellationToken) -> Router {
        let handler = move || {
            let release = release.clone();
            async move {
                release.cancelled().await;
                "done"
            }
        };
        Router::new()
            .route("/{*path}", any(handler))
            .layer(axum::middleware::from_fn_with_state(in_flight, limit))
    }

    fn request(method: Method, path: &str) -> Request {
        Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap()
    }

    /// Waits until `n` requests of the kind hold a slot.
    async fn wait_for_in_use(in_flight: &InFlight, read_only: usize, mutating: usize) {
        let want = InUse {
            read_only,
            mutating,
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while in_flight.in_use() != want {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the requests take their slots");
    }

    fn with_body(length: Option<usize>) -> Request {
        let mut builder = Request::builder().method(Method::POST).uri("/w");
        builder = match length {
            Some(length) => builder.header(header::CONTENT_LENGTH, length),
            None => builder.header(header::TRANSFER_ENCODING, "chunked"),
        };
        builder.body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn request_bodies_take_their_bytes_from_the_budget() {
        let in_flight = InFlight::new(0, 0, 1000);
        let release = CancellationToken::new();
        let app = blocking_app(in_flight.clone(), release.clone());
        let held = tokio::spawn(app.clone().oneshot(with_body(Some(800))));
        wait_for_in_use(&in_flight, 0, 1).await;
        // 800 of 1000 bytes are taken: 300 more do not fit, a chunked body (3 MiB) neither.
        for length in [Some(300), None] {
            let response = app.clone().oneshot(with_body(length)).await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::TOO_MANY_REQUESTS,
                "{length:?}"
            );
        }
        // What fits, and requests without a body, still go through.
        let small = tokio::spawn(app.clone().oneshot(with_body(Some(200))));
        let read = tokio::spawn(app.clone().oneshot(request(Method::GET, "/r")));
        wait_for_in_use(&in_flight, 1, 2).await;
        release.cancel();
        for handle in [held, small, read] {
            assert_eq!(handle.await.unwrap().unwrap().status(), StatusCode::OK);
        }
        // The bytes are given back.
        let again = tokio::spawn(app.clone().oneshot(with_body(Some(1000))));
        assert_eq!(again.await.unwrap().unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_full_lane_turns_requests_away_with_429_and_the_other_lane_is_unaffected() {
        let in_flight = InFlight::new(1, 1, 0);
        let release = CancellationToken::new();
        let app = blocking_app(in_flight.clone(), release.clone());
        let held_read = tokio::spawn(app.clone().oneshot(request(Method::GET, "/a")));
        wait_for_in_use(&in_flight, 1, 0).await;
        // A full read lane leaves the mutating lane open: this write is admitted.
        let held_write = tokio::spawn(app.clone().oneshot(request(Method::POST, "/b")));
        wait_for_in_use(&in_flight, 1, 1).await;

        for method in [Method::GET, Method::HEAD, Method::PUT, Method::DELETE] {
            let response = app
                .clone()
                .oneshot(request(method.clone(), "/c"))
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{method}");
            assert_eq!(response.headers()[header::RETRY_AFTER], "1");
            assert_eq!(
                response.headers()[header::CONTENT_TYPE],
                "text/plain; charset=utf-8"
            );
            assert!(response.extensions().get::<Rejected>().is_some());
            if method != Method::HEAD {
                let body = axum::body::to_bytes(response.into_body(), 1024)
                    .await
                    .unwrap();
                assert_eq!(&body[..], b"Too many requests, please try again later.\n");
            }
        }

        release.cancel();
        assert_eq!(held_read.await.unwrap().unwrap().status(), StatusCode::OK);
        assert_eq!(held_write.await.unwrap().unwrap().status(), StatusCode::OK);
        assert_eq!(
            in_flight.in_use(),
            InUse {
                read_only: 0,
                mutating: 0
            }
        );
    }

    #[tokio::test]
    async fn health_checks_metrics_and_watches_are_never_turned_away() {
        let in_flight = InFlight::new(1, 1, 0);
        let release = CancellationToken::new();
        let app = blocking_app(in_flight.clone(), release.clone());
        let held = tokio::spawn(app.clone().oneshot(request(Method::GET, "/a")));
        wait_for_in_use(&in_flight, 1, 0).await;

        let mut waiting = Vec::new();
        for path in ["/healthz", "/livez", "/readyz/ping", "/metrics"] {
            waiting.push(tokio::spawn(
                app.clone().oneshot(request(Method::GET, path)),
            ));
        }
        let mut watch = request(Method::GET, "/api/v1/pods?watch=true");
        watch.extensions_mut().insert(RequestInfo {
            labels: Default::default(),
            instrumented: true,
            long_running: true,
            read_only: true,
            target: None,
        });
        waiting.push(tokio::spawn(app.clone().oneshot(watch)));
        // None of them takes a slot; each is answered by the handler (200), none with 429.
        assert_eq!(
            app.clone()
                .oneshot(request(Method::GET, "/healthzz"))
                .await
                .unwrap()
                .status(),
            StatusCode::TOO_MANY_REQUESTS,
            "only the health paths themselves are exempt"
        );

        release.cancel();
        for task in waiting {
            assert_eq!(task.await.unwrap().unwrap().status(), StatusCode::OK);
        }
        assert_eq!(held.await.unwrap().unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_limit_of_zero_is_unlimited_but_still_counted() {
        let in_flight = InFlight::new(0, 0, 0);
        let release = CancellationToken::new();
        let app = blocking_app(in_flight.clone(), release.clone());
        let held: Vec<_> = (0..3)
            .map(|_| tokio::spawn(app.clone().oneshot(request(Method::GET, "/a"))))
            .chain((0..2).map(|_| tokio::spawn(app.clone().oneshot(request(Method::POST, "/b")))))
            .collect();
        wait_for_in_use(&in_flight, 3, 2).await;
        release.cancel();
        for task in held {
            assert_eq!(task.await.unwrap().unwrap().status(), StatusCode::OK);
        }
    }
}
