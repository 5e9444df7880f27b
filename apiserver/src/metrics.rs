//! `/metrics`: what the server is doing, in the Prometheus text exposition format (0.0.4), under
//! the metric names and labels of the real kube-apiserver (k8s.io/apiserver
//! `pkg/endpoints/metrics/metrics.go`, v1.32), so that dashboards and alerts written for a real
//! cluster read kubemock unchanged:
//!
//! - `apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}`
//! - `apiserver_request_duration_seconds` (histogram, the real buckets, same labels but `code`)
//! - `apiserver_longrunning_requests` (gauge: watches open now)
//! - `apiserver_current_inflight_requests{request_kind}` (`readOnly`, `mutating`)
//! - `kubemock_store_revision`, `kubemock_store_compacted_revision`, the backend's own
//!   gauges (the embedded store's `kubemock_store_live_bytes` and
//!   `kubemock_store_history_bytes`; etcd's `kubemock_etcd_watches`,
//!   `kubemock_etcd_watch_caches`),
//!   `kubemock_crd_sync_timeouts_total`, `kubemock_watch_catch_ups_total`,
//!   `process_start_time_seconds`, and `kubemock_heap_in_use_bytes` in a binary that counts
//!   its allocations (the `heap-count` feature; [`crate::ServerConfig::heap_in_use`])
//! - `kubemock_http_requests_total{verb,group,resource,request_content_type,response_content_type}`:
//!   kubemock's own (upstream has no such metric), so that a test can tell which wire format
//!   a client spoke (client-go's typed clients protobuf, the others JSON) without a request log
//!
//! Requests are labelled from the [`RequestInfo`] the pipeline classified them into (the same
//! parse the handlers use); requests upstream does not instrument are not counted, except
//! when the in-flight limit turns them away. A watch is counted when it ends, with its whole
//! duration, as upstream does; while open it is in the long-running gauge.
//!
//! The encoder is written here rather than taken from a crate: `prometheus-client` writes
//! OpenMetrics (`# EOF`, its own content type and counter naming rules), and the `prometheus`
//! crate (protobuf by default, a default process-wide registry, its own vector types) is more
//! machinery and build time than seven families need. The text format is a few lines: names,
//! label pairs sorted by name with `\`, `"` and newlines escaped, cumulative buckets ending in
//! `+Inf`, then `_sum` and `_count`; the unit tests below pin it.
//!
//! The request counter and histogram share one map, the gauge has its own, each under a
//! short-held mutex; no lock is held across an await and no two are held at once. Label values
//! come only from the registry, the status code and fixed lists, never from raw paths, so the
//! number of series stays bounded whatever clients send.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use parking_lot::Mutex;

use crate::limits::{InUse, Rejected};
use crate::target::{RequestInfo, RequestLabels};

/// The content type of the text exposition format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `apiserver_request_duration_seconds` buckets, as kube-apiserver 1.32 declares them.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// The server's metrics. A cheap-clone handle: the pipeline records, `/metrics` renders.
#[derive(Debug, Clone)]
pub(crate) struct Metrics {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `apiserver_request_total` and `apiserver_request_duration_seconds`: one entry per label
    /// set, written by the middleware on every request. A hash map under one lock, so a request
    /// costs one hash and one comparison of its labels; sorted only when rendered.
    requests: Mutex<HashMap<RequestLabels, Series>>,
    /// `apiserver_longrunning_requests`: open watches by labels (`dry_run` left empty, as the
    /// gauge has no such label). A series that went back to 0 stays, as upstream's does.
    /// Written by [`OpenRequest`].
    long_running: Mutex<BTreeMap<RequestLabels, u64>>,
    /// `kubemock_http_requests_total`: requests by verb, resource and the media types of
    /// their body and answer. Written by the middleware with `requests`, for the same requests.
    wire: Mutex<HashMap<WireLabels, u64>>,
    /// When the server started, in seconds since the Unix epoch.
    start_time: f64,
}

/// The labels of `kubemock_http_requests_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct WireLabels {
    /// As in [`RequestLabels::verb`].
    verb: &'static str,
    /// As in [`RequestLabels::group`].
    group: String,
    /// As in [`RequestLabels::resource`].
    resource: String,
    /// The request's `Content-Type` as [`media_type`] names it (empty without one).
    request: &'static str,
    /// The response's `Content-Type` as [`media_type`] names it.
    response: &'static str,
}

/// The media types `kubemock_http_requests_total` names; any other is `other`, so that the
/// number of series stays bounded whatever clients send. Parameters (`;stream=watch`,
/// `;as=Table;g=meta.k8s.io;v=v1`, `charset`) are left out: the verb tells a watch apart.
const MEDIA_TYPES: [&str; 10] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/cbor",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
    "text/plain",
];

/// The label value of a `Content-Type` header: one of [`MEDIA_TYPES`] (its type and subtype,
/// case-insensitively, parameters ignored), empty when there is none, else `other`.
fn media_type(header: Option<&header::HeaderValue>) -> &'static str {
    let Some(header) = header else {
        return "";
    };
    let essence = header
        .to_str()
        .ok()
        .and_then(|text| text.split(';').next())
        .map(str::trim)
        .unwrap_or_default();
    MEDIA_TYPES
        .iter()
        .find(|known| known.eq_ignore_ascii_case(essence))
        .copied()
        .unwrap_or("other")
}

/// The request metrics of one label set.
#[derive(Debug, Default)]
struct Series {
    /// `apiserver_request_total` by HTTP code.
    codes: BTreeMap<u16, u64>,
    /// `apiserver_request_duration_seconds`; empty (and not rendered) for a label set whose
    /// requests were all turned away by the in-flight limit.
    durations: Histogram,
}

/// One histogram series.
#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Observations per bucket (not cumulative); the last slot counts those above every bound.
    buckets: [u64; DURATION_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let slot = DURATION_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(DURATION_BUCKETS.len());
        self.buckets[slot] += 1;
        self.sum += seconds;
        self.count += 1;
    }
}

/// What `/metrics` reports besides the request metrics, read when it is scraped.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Requests holding an in-flight slot.
    pub(crate) in_flight: InUse,
    /// The store's current revision (`None` if the store did not answer).
    pub(crate) revision: Option<u64>,
    /// The store's compaction point (`None` if the store did not answer).
    pub(crate) compacted: Option<u64>,
    /// Definition writes that gave up waiting for the CustomResourceDefinitions controller.
    pub(crate) crd_sync_timeouts: u64,
    /// Watches that fell behind the store's live events and caught up from its history.
    pub(crate) watch_catch_ups: u64,
    /// The audit log's counters, when the server audits.
    pub(crate) audit: Option<AuditSnapshot>,
    /// The store backend's own gauges ([`kubemock_storage::Kv::gauges`]).
    pub(crate) store: Vec<kubemock_storage::Gauge>,
    /// The bytes the process's allocations hold, when the binary counts them.
    pub(crate) heap_in_use: Option<u64>,
}

/// The audit log's counters (upstream's `pkg/audit/metrics.go`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AuditSnapshot {
    /// Events handed to the log writer.
    pub(crate) events: u64,
    /// Events dropped (the writer behind, or writing failed).
    pub(crate) errors: u64,
    /// Requests by policy level: None, Metadata, Request, RequestResponse.
    pub(crate) levels: [u64; 4],
}

impl Metrics {
    /// Empty metrics, started now.
    pub(crate) fn new() -> Self {
        let start_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Metrics {
            inner: Arc::new(Inner {
                requests: Mutex::new(HashMap::new()),
                long_running: Mutex::new(BTreeMap::new()),
                wire: Mutex::new(HashMap::new()),
                start_time,
            }),
        }
    }

    /// Counts a request that ended with `code` and, when given, observes its duration.
    fn record(&self, labels: &RequestLabels, code: u16, elapsed: Option<Duration>) {
        let mut requests = self.inner.requests.lock();
        // The labels are cloned only for a new series: this runs on every request.
        let series = match requests.get_mut(labels) {
            Some(series) => series,
            None => requests.entry(labels.clone()).or_default(),
        };
        *series.codes.entry(code).or_default() += 1;
        if let Some(elapsed) = elapsed {
            series.durations.observe(elapsed.as_secs_f64());
        }
    }

    /// Counts a request in `kubemock_http_requests_total` by the media types of its body
    /// (`request`, from its `Content-Type`) and of its answer (`response`).
    fn record_wire(&self, labels: &RequestLabels, request: &'static str, response: &'static str) {
        let key = WireLabels {
            verb: labels.verb,
            group: labels.group.clone(),
            resource: labels.resource.clone(),
            request,
            response,
        };
        *self.inner.wire.lock().entry(key).or_default() += 1;
    }

    /// Opens a long-running request: in the gauge until the returned guard drops, then counted.
    fn open(&self, labels: &RequestLabels, start: Instant) -> OpenRequest {
        let gauge_labels = RequestLabels {
            dry_run: String::new(),
            ..labels.clone()
        };
        *self
            .inner
            .long_running
            .lock()
            .entry(gauge_labels.clone())
            .or_default() += 1;
        OpenRequest {
            metrics: self.clone(),
            labels: labels.clone(),
            gauge_labels,
            start,
            code: None,
        }
    }

    /// The text exposition of every metric.
    pub(crate) fn render(&self, snapshot: Snapshot) -> String {
        let mut out = Text::default();
        out.family(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            "counter",
        );
        let requests = self.inner.requests.lock();
        let mut series: Vec<_> = requests.iter().collect();
        series.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (labels, Series { codes, .. }) in &series {
            for (code, value) in codes {
                let code = code.to_string();
                let mut pairs = label_pairs(labels, true);
                pairs.insert(0, ("code", &code));
                out.sample("apiserver_request_total", pairs, *value as f64);
            }
        }
        out.family(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            "histogram",
        );
        for (labels, Series { durations, .. }) in series {
            if durations.count > 0 {
                out.histogram("apiserver_request_duration_seconds", labels, durations);
            }
        }
        drop(requests);
        out.family(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
            "gauge",
        );
        for (labels, open) in self.inner.long_running.lock().iter() {
            out.sample(
                "apiserver_longrunning_requests",
                label_pairs(labels, false),
                *open as f64,
            );
        }
        out.family(
            "apiserver_current_inflight_requests",
            "Number of requests in flight against the in-flight limits per request kind (watches are not counted).",
            "gauge",
        );
        for (kind, value) in [
            ("mutating", snapshot.in_flight.mutating),
            ("readOnly", snapshot.in_flight.read_only),
        ] {
            out.sample(
                "apiserver_current_inflight_requests",
                vec![("request_kind", kind)],
                value as f64,
            );
        }
        for (name, help, value) in [
            (
                "kubemock_store_compacted_revision",
                "The store's compaction point: the oldest revision still readable.",
                snapshot.compacted,
            ),
            (
                "kubemock_store_revision",
                "The store's current revision: the resourceVersion of its latest change.",
                snapshot.revision,
            ),
        ] {
            out.family(name, help, "gauge");
            if let Some(value) = value {
                out.sample(name, Vec::new(), value as f64);
            }
        }
        for gauge in &snapshot.store {
            out.family(gauge.name, gauge.help, "gauge");
            out.sample(gauge.name, Vec::new(), gauge.value as f64);
        }
        out.family(
            "kubemock_crd_sync_timeouts_total",
            "CustomResourceDefinition writes that answered before the definitions controller had caught up with them (it did not within 5 s).",
            "counter",
        );
        out.sample(
            "kubemock_crd_sync_timeouts_total",
            Vec::new(),
            snapshot.crd_sync_timeouts as f64,
        );
        out.family(
            "kubemock_watch_catch_ups_total",
            "Watches that fell behind the store's live events (their client read slower than the writes came) and went on from the store's history instead of ending.",
            "counter",
        );
        out.sample(
            "kubemock_watch_catch_ups_total",
            Vec::new(),
            snapshot.watch_catch_ups as f64,
        );
        if let Some(bytes) = snapshot.heap_in_use {
            out.family(
                "kubemock_heap_in_use_bytes",
                "Bytes the process's allocations hold now (the live heap, without what the allocator keeps around it); only in a binary built to count them.",
                "gauge",
            );
            out.sample("kubemock_heap_in_use_bytes", Vec::new(), bytes as f64);
        }
        if let Some(audit) = snapshot.audit {
            out.family(
                "apiserver_audit_event_total",
                "Counter of audit events generated and sent to the audit backend.",
                "counter",
            );
            out.sample(
                "apiserver_audit_event_total",
                Vec::new(),
                audit.events as f64,
            );
            out.family(
                "apiserver_audit_error_total",
                "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
                "counter",
            );
            out.sample(
                "apiserver_audit_error_total",
                vec![("plugin", "log")],
                audit.errors as f64,
            );
            out.family(
                "apiserver_audit_level_total",
                "Counter of policy levels for audit events (1 per request).",
                "counter",
            );
            for (level, value) in ["Metadata", "None", "Request", "RequestResponse"]
                .into_iter()
                .zip([
                    audit.levels[1],
                    audit.levels[0],
                    audit.levels[2],
                    audit.levels[3],
                ])
            {
                out.sample(
                    "apiserver_audit_level_total",
                    vec![("level", level)],
                    value as f64,
                );
            }
        }
        out.family(
            "kubemock_http_requests_total",
            "Requests by verb, group, resource and the media types of the request body and of the response (parameters left out; empty when there is no body).",
            "counter",
        );
        let wire = self.inner.wire.lock();
        let mut series: Vec<_> = wire.iter().collect();
        series.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (labels, value) in series {
            out.sample(
                "kubemock_http_requests_total",
                vec![
                    ("group", labels.group.as_str()),
                    ("request_content_type", labels.request),
                    ("resource", &labels.resource),
                    ("response_content_type", labels.response),
                    ("verb", labels.verb),
                ],
                *value as f64,
            );
        }
        drop(wire);
        out.family(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            "gauge",
        );
        out.sample(
            "process_start_time_seconds",
            Vec::new(),
            self.inner.start_time,
        );
        out.text
    }
}

/// The labels of a request series, sorted by name as the real server writes them (`code`,
/// where present, sorts first; a histogram's `le` goes last).
fn label_pairs(labels: &RequestLabels, with_dry_run: bool) -> Vec<(&'static str, &str)> {
    let mut pairs = vec![("component", labels.component)];
    if with_dry_run {
        pairs.push(("dry_run", &labels.dry_run));
    }
    pairs.extend([
        ("group", labels.group.as_str()),
        ("resource", &labels.resource),
        ("scope", labels.scope),
        ("subresource", &labels.subresource),
        ("verb", labels.verb),
        ("version", &labels.version),
    ]);
    pairs
}

/// A long-running request in the gauge; dropping it takes it out and counts it (with its
/// code, once known) and its whole duration.
#[derive(Debug)]
struct OpenRequest {
    metrics: Metrics,
    labels: RequestLabels,
    gauge_labels: RequestLabels,
    start: Instant,
    /// The response's code; `None` if the request was dropped before it had one.
    code: Option<u16>,
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        // Counted before it leaves the gauge: a scrape that starts after the gauge went down
        // sees the count.
        if let Some(code) = self.code {
            self.metrics
                .record(&self.labels, code, Some(self.start.elapsed()));
        }
        if let Some(open) = self
            .metrics
            .inner
            .long_running
            .lock()
            .get_mut(&self.gauge_labels)
        {
            *open = open.saturating_sub(1);
        }
    }
}

/// The middleware: times and counts each classified request; keeps long-running ones in the
/// gauge until their response body ends or is dropped.
pub(crate) async fn observe(
    State(metrics): State<Metrics>,
    request: Request,
    next: Next,
) -> Response {
    let Some(info) = request.extensions().get::<RequestInfo>().cloned() else {
        return next.run(request).await;
    };
    let start = Instant::now();
    let request_type = media_type(request.headers().get(header::CONTENT_TYPE));
    if info.instrumented && info.long_running {
        let mut open = metrics.open(&info.labels, start);
        let response = next.run(request).await;
        open.code = Some(response.status().as_u16());
        // Counted when the answer starts: its media type is known then.
        metrics.record_wire(
            &info.labels,
            request_type,
            media_type(response.headers().get(header::CONTENT_TYPE)),
        );
        if !response.status().is_success() {
            return response; // `open` drops here: a refused watch is over at once.
        }
        let (parts, body) = response.into_parts();
        // The stream owns the guard: it drops when the body ends or the client goes away.
        let body = futures_util::stream::unfold(
            (body.into_data_stream(), open),
            |(mut stream, open)| async move {
                let chunk = stream.next().await?;
                Some((chunk, (stream, open)))
            },
        );
        return Response::from_parts(parts, Body::from_stream(body));
    }
    let response = next.run(request).await;
    let code = response.status().as_u16();
    let rejected = response.extensions().get::<Rejected>().is_some();
    if rejected {
        metrics.record(&info.labels, code, None);
    } else if info.instrumented {
        metrics.record(&info.labels, code, Some(start.elapsed()));
    }
    if rejected || info.instrumented {
        let response_type = media_type(response.headers().get(header::CONTENT_TYPE));
        metrics.record_wire(&info.labels, request_type, response_type);
    }
    response
}

/// Text exposition output.
#[derive(Debug, Default)]
struct Text {
    text: String,
}

impl Text {
    fn family(&mut self, name: &str, help: &str, kind: &str) {
        let help = help.replace('\\', r"\\").replace('\n', r"\n");
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: Vec<(&str, &str)>, value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let value = value
                    .replace('\\', r"\\")
                    .replace('"', "\\\"")
                    .replace('\n', r"\n");
                let _ = write!(self.text, "{label}=\"{value}\"");
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(value));
    }

    fn histogram(&mut self, name: &str, labels: &RequestLabels, histogram: &Histogram) {
        let mut cumulative = 0;
        let bounds = DURATION_BUCKETS.iter().map(|b| number(*b));
        for (count, bound) in histogram
            .buckets
            .iter()
            .zip(bounds.chain(std::iter::once("+Inf".to_owned())))
        {
            cumulative += count;
            let mut pairs = label_pairs(labels, true);
            pairs.push(("le", &bound));
            self.sample(&format!("{name}_bucket"), pairs, cumulative as f64);
        }
        self.sample(
            &format!("{name}_sum"),
            label_pairs(labels, true),
            histogram.sum,
        );
        self.sample(
            &format!("{name}_count"),
            label_pairs(labels, true),
            histogram.count as f64,
        );
    }
}

/// A sample value or bucket bound as the format spells it.
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(verb: &'static str, resource: &str) -> RequestLabels {
        RequestLabels {
            verb,
            resource: resource.to_owned(),
            version: "v1".to_owned(),
            scope: "namespace",
            component: "apiserver",
            ..RequestLabels::default()
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            in_flight: InUse {
                read_only: 2,
                mutating: 1,
            },
            revision: Some(42),
            compacted: Some(7),
            crd_sync_timeouts: 3,
            watch_catch_ups: 4,
            audit: None,
            store: vec![kubemock_storage::Gauge {
                name: "kubemock_etcd_watches",
                help: "h",
                value: 2,
            }],
            heap_in_use: None,
        }
    }

    #[test]
    fn the_heap_gauge_is_there_only_when_the_binary_counts_its_allocations() {
        let metrics = Metrics::new();
        let text = metrics.render(snapshot());
        assert!(!text.contains("kubemock_heap_in_use_bytes"), "{text}");
        let text = metrics.render(Snapshot {
            heap_in_use: Some(123_456_789),
            ..snapshot()
        });
        assert!(
            text.contains(
                "\n# TYPE kubemock_heap_in_use_bytes gauge\nkubemock_heap_in_use_bytes 123456789\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn counters_and_gauges_render_with_sorted_labels() {
        let metrics = Metrics::new();
        let list = labels("LIST", "configmaps");
        metrics.record(&list, 200, Some(Duration::from_millis(3)));
        metrics.record(&list, 200, Some(Duration::from_millis(30)));
        metrics.record(&list, 429, None);
        let text = metrics.render(snapshot());
        assert!(text.contains(
            "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n"
        ));
        assert!(text.contains(
            "\napiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"} 2\n"
        ), "{text}");
        assert!(
            text.contains("{code=\"429\",component=\"apiserver\","),
            "{text}"
        );
        assert!(text.contains(
            "\napiserver_current_inflight_requests{request_kind=\"mutating\"} 1\napiserver_current_inflight_requests{request_kind=\"readOnly\"} 2\n"
        ));
        assert!(text.contains("\nkubemock_store_revision 42\n"));
        assert!(text.contains("\n# TYPE kubemock_etcd_watches gauge\nkubemock_etcd_watches 2\n"));
        assert!(text.contains("\nkubemock_store_compacted_revision 7\n"));
        assert!(text.contains("\nkubemock_crd_sync_timeouts_total 3\n"));
        assert!(text.contains("\nkubemock_watch_catch_ups_total 4\n"));
        assert!(
            text.contains("\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds ")
        );
    }

    #[test]
    fn histograms_are_cumulative_and_end_with_inf_sum_and_count() {
        let metrics = Metrics::new();
        let get = labels("GET", "pods");
        // Binary fractions, so that the sum is exact.
        for seconds in [0.00390625, 0.015625, 0.015625, 70.0] {
            metrics.record(&get, 200, Some(Duration::from_secs_f64(seconds)));
        }
        let text = metrics.render(snapshot());
        let series = "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"GET\",version=\"v1\"";
        for (le, count) in [("0.005", 1), ("0.025", 3), ("60", 3), ("+Inf", 4)] {
            let line = format!(
                "apiserver_request_duration_seconds_bucket{{{series},le=\"{le}\"}} {count}\n"
            );
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert_eq!(
            text.matches("apiserver_request_duration_seconds_bucket{")
                .count(),
            DURATION_BUCKETS.len() + 1
        );
        assert!(text.contains(&format!(
            "apiserver_request_duration_seconds_sum{{{series}}} 70.03515625\n"
        )));
        assert!(text.contains(&format!(
            "apiserver_request_duration_seconds_count{{{series}}} 4\n"
        )));
    }

    #[test]
    fn an_open_request_is_in_the_gauge_until_dropped_then_counted() {
        let metrics = Metrics::new();
        let watch = RequestLabels {
            dry_run: "All".to_owned(),
            ..labels("WATCH", "configmaps")
        };
        let gauge = "apiserver_longrunning_requests{component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"}";
        let mut first = metrics.open(&watch, Instant::now());
        let second = metrics.open(&watch, Instant::now());
        assert!(metrics.render(snapshot()).contains(&format!("{gauge} 2\n")));
        first.code = Some(200);
        drop(first);
        drop(second); // never answered: leaves the gauge, is not counted
        let text = metrics.render(snapshot());
        assert!(text.contains(&format!("{gauge} 0\n")), "{text}");
        assert!(text.contains("apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"All\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 1\n"), "{text}");
    }

    #[test]
    fn media_types_are_named_without_parameters_and_bounded() {
        let named = |value: &str| {
            media_type(Some(
                &header::HeaderValue::from_str(value).expect("a header value"),
            ))
        };
        assert_eq!(media_type(None), "");
        assert_eq!(
            named("application/vnd.kubernetes.protobuf;stream=watch"),
            "application/vnd.kubernetes.protobuf"
        );
        assert_eq!(
            named("application/json;as=Table;g=meta.k8s.io;v=v1"),
            "application/json"
        );
        assert_eq!(
            named("Application/JSON ; charset=utf-8"),
            "application/json"
        );
        assert_eq!(
            named("application/apply-patch+yaml"),
            "application/apply-patch+yaml"
        );
        assert_eq!(named("application/x-anything-a-client-invents"), "other");
        assert_eq!(named(""), "other");
        let invalid =
            header::HeaderValue::from_bytes(b"application/json\xff").expect("opaque bytes");
        assert_eq!(media_type(Some(&invalid)), "other");
    }

    #[test]
    fn requests_are_counted_by_the_media_types_of_body_and_answer() {
        let metrics = Metrics::new();
        let create = labels("POST", "configmaps");
        let protobuf = "application/vnd.kubernetes.protobuf";
        metrics.record_wire(&create, protobuf, protobuf);
        metrics.record_wire(&create, protobuf, protobuf);
        metrics.record_wire(&labels("GET", "configmaps"), "", "application/json");
        let text = metrics.render(snapshot());
        assert!(
            text.contains("\n# TYPE kubemock_http_requests_total counter\n"),
            "{text}"
        );
        assert!(text.contains(
            "\nkubemock_http_requests_total{group=\"\",request_content_type=\"\",resource=\"configmaps\",response_content_type=\"application/json\",verb=\"GET\"} 1\n"
        ), "{text}");
        assert!(text.contains(
            "\nkubemock_http_requests_total{group=\"\",request_content_type=\"application/vnd.kubernetes.protobuf\",resource=\"configmaps\",response_content_type=\"application/vnd.kubernetes.protobuf\",verb=\"POST\"} 2\n"
        ), "{text}");
    }

    #[test]
    fn label_values_are_escaped_and_values_spelled_as_the_format_wants() {
        let mut out = Text::default();
        out.sample("m", vec![("l", "a\"b\\c\nd")], f64::INFINITY);
        out.sample("m", Vec::new(), 0.5);
        out.family("m", "multi\nline \\ help", "gauge");
        assert_eq!(
            out.text,
            "m{l=\"a\\\"b\\\\c\\nd\"} +Inf\nm 0.5\n# HELP m multi\\nline \\\\ help\n# TYPE m gauge\n"
        );
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1.0), "1");
    }
}
