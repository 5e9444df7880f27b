//! `watch-fan-out`: issue 23's watch fan-out benchmark. W watchers follow one resource
//! (ConfigMaps in one namespace) over HTTP while writers create ConfigMaps at a paced rate; for
//! each create it measures the time from the create's acknowledgement (its 201 read by the
//! writer) to its event reaching the *last* watcher, and reports the percentiles of that, the
//! creates per second achieved, and the watchers the server cut off (a stream ended or an ERROR
//! event before the end). Issue 23's goal: 1,000 watchers, 5,000 creates/s, p99 ≤ 5 ms, no
//! watcher cut off.
//!
//! Why it exists: the store's own fan-out (`cargo bench -p kubemock-storage`, one put to 1,000
//! store watchers) leaves out what a client sees: each event's encoding, the watch task, the
//! response body and the socket, once per watcher.
//!
//! The client must cost little next to the server on the same cores, so a watcher is one raw
//! HTTP/1.1 connection ([`crate::http::Connection::start_stream`]) whose lines are scanned for
//! the created object's name (`"name":"fan-N"`), not parsed. Each create N records its
//! acknowledgement time; each watcher that sees N raises N's last-seen time (an atomic maximum)
//! and its count. A create counts as delivered when every watcher still connected saw it.
//! Creates in the warm-up are left out of the percentiles.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde::Serialize;
use tokio::time::Instant;

use crate::cpu::{cpu_between, process_cpu};
use crate::http::{Connection, Endpoint};
use crate::load::Percentiles;
use crate::server::{NO_INFLIGHT_LIMITS, ServerProcess};

/// The namespace the ConfigMaps are created in.
const NAMESPACE: &str = "fan-out";
/// What precedes a created object's number in its event (the server writes compact JSON).
const NAME_MARKER: &[u8] = b"\"name\":\"fan-";
/// How long, after the last create, the watchers may take to see every event.
const DRAIN: Duration = Duration::from_secs(30);
/// How long the watchers may take to connect.
const CONNECT: Duration = Duration::from_secs(60);
/// "Not seen" in the last-seen times.
const UNSEEN: u64 = 0;

/// One run's shape.
#[derive(Debug, Clone)]
pub(crate) struct FanOutConfig {
    /// The kubemock binary.
    pub(crate) kubemock: PathBuf,
    /// Watchers of the ConfigMaps.
    pub(crate) watchers: usize,
    /// Creates per second asked for.
    pub(crate) rate: f64,
    /// Seconds of creates measured.
    pub(crate) duration: Duration,
    /// Seconds of creates before them, left out of the figures.
    pub(crate) warmup: Duration,
    /// Connections the creates are sent on (each has one request in flight).
    pub(crate) writers: usize,
    /// Extra arguments for `kubemock serve`.
    pub(crate) serve_args: Vec<String>,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FanOutReport {
    pub(crate) watchers: usize,
    /// Creates per second asked for.
    pub(crate) rate: f64,
    /// Creates measured (after the warm-up).
    pub(crate) creates: usize,
    /// Creates per second achieved over the measured window.
    pub(crate) achieved_rate: f64,
    /// Acknowledgement to the last watcher's event, over the measured creates, in ms.
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
    /// Acknowledgement of a create, from when it was due, p99 in ms (the server's create
    /// latency, and how far the writers fell behind the schedule).
    pub(crate) create_p99_ms: f64,
    /// Watchers whose stream ended, or that got an ERROR event, before the end.
    pub(crate) watchers_cut_off: usize,
    /// Measured creates that some watcher still connected never saw within the drain time.
    pub(crate) creates_not_delivered: usize,
    /// Events delivered to all watchers per second over the measured window.
    pub(crate) events_per_second: f64,
    /// CPU seconds of the server and of this load generator over the whole run of creates.
    pub(crate) server_cpu_seconds: Option<f64>,
    pub(crate) client_cpu_seconds: Option<f64>,
}

impl FanOutReport {
    /// Issue 23's goal for this shape: p99 ≤ 5 ms and no watcher cut off.
    pub(crate) fn write_goal(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let ok =
            self.p99_ms <= 5.0 && self.watchers_cut_off == 0 && self.creates_not_delivered == 0;
        writeln!(
            out,
            "goal (issue 23, 1,000 watchers at 5,000 creates/s): {} p99 {:.2} ms <= 5 ms, \
             {} watchers cut off, {} creates not delivered (this run: {} watchers, {:.0} \
             creates/s asked, {:.0} achieved)",
            if ok { "PASS" } else { "FAIL" },
            self.p99_ms,
            self.watchers_cut_off,
            self.creates_not_delivered,
            self.watchers,
            self.rate,
            self.achieved_rate,
        )
    }
}

impl std::fmt::Display for FanOutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} watchers, {:.0} creates/s asked, {:.0} achieved ({} measured): ack -> last \
             watcher p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; create p99 {:.2} ms from due; \
             {:.0} events/s delivered; {} watchers cut off, {} creates not delivered",
            self.watchers,
            self.rate,
            self.achieved_rate,
            self.creates,
            self.p50_ms,
            self.p99_ms,
            self.max_ms,
            self.create_p99_ms,
            self.events_per_second,
            self.watchers_cut_off,
            self.creates_not_delivered,
        )?;
        if let (Some(server), Some(client)) = (self.server_cpu_seconds, self.client_cpu_seconds) {
            write!(
                f,
                "; CPU: server {server:.1} s, load generator {client:.1} s"
            )?;
        }
        Ok(())
    }
}

/// What the watchers record, shared: per create, when the last watcher saw it (nanoseconds
/// after `epoch`, [`UNSEEN`] if none has) and how many have.
struct Seen {
    epoch: Instant,
    last: Box<[AtomicU64]>,
    count: Box<[AtomicU32]>,
    /// Watchers cut off before the end.
    cut_off: AtomicUsize,
}

impl Seen {
    fn record(&self, index: usize) {
        let (Some(last), Some(count)) = (self.last.get(index), self.count.get(index)) else {
            return;
        };
        // At least 1, so that a sighting is never taken for UNSEEN.
        let now = (self.epoch.elapsed().as_nanos() as u64).max(1);
        last.fetch_max(now, Ordering::Relaxed);
        count.fetch_add(1, Ordering::Release);
    }
}

/// Starts a server, runs the watchers and the creates, stops the server.
pub(crate) async fn run(config: &FanOutConfig) -> anyhow::Result<FanOutReport> {
    if config.watchers == 0 || config.writers == 0 || !config.rate.is_finite() || config.rate <= 0.0
    {
        bail!("--watchers, --writers and --rate must be above 0");
    }
    // A thousand long-running requests and a burst of creates (watches are exempt from
    // kube-apiserver's limits too).
    let mut args: Vec<OsString> = ["serve", "--port", "0", "--no-controllers"]
        .iter()
        .chain(NO_INFLIGHT_LIMITS.iter())
        .map(OsString::from)
        .collect();
    args.extend(config.serve_args.iter().map(OsString::from));
    ServerProcess::measured(&config.kubemock, &args, async |server| {
        measure(config, server).await
    })
    .await
}

async fn measure(config: &FanOutConfig, server: &ServerProcess) -> anyhow::Result<FanOutReport> {
    let endpoint = server.endpoint().clone();
    let pid = server.pid();
    let host = server.addr().to_string();
    let mut connection = Connection::connect(&endpoint)
        .await
        .context("connecting to the server")?;
    let namespace =
        format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{NAMESPACE}"}}}}"#);
    let response = connection
        .round_trip(&post(&host, "/api/v1/namespaces", &namespace))
        .await
        .context("creating the namespace")?;
    if response.status != 201 {
        bail!(
            "creating the namespace: {}: {}",
            response.status,
            String::from_utf8_lossy(response.body)
        );
    }
    let list = connection
        .round_trip(&get(
            &host,
            &format!("/api/v1/namespaces/{NAMESPACE}/configmaps"),
        ))
        .await
        .context("listing the ConfigMaps")?;
    if list.status != 200 {
        bail!("listing the ConfigMaps: {}", list.status);
    }
    let listed: serde_json::Value =
        serde_json::from_slice(list.body).context("decoding the list")?;
    let revision = listed["metadata"]["resourceVersion"]
        .as_str()
        .ok_or_else(|| anyhow!("the list has no resourceVersion"))?
        .to_owned();

    let warmup_creates = (config.rate * config.warmup.as_secs_f64()).round() as usize;
    let measured_creates = (config.rate * config.duration.as_secs_f64())
        .round()
        .max(1.0) as usize;
    let total = warmup_creates + measured_creates;
    let seen = Arc::new(Seen {
        epoch: Instant::now(),
        last: (0..total).map(|_| AtomicU64::new(UNSEEN)).collect(),
        count: (0..total).map(|_| AtomicU32::new(0)).collect(),
        cut_off: AtomicUsize::new(0),
    });

    // The watchers, each connected and past its response head before any create.
    let watch_path =
        format!("/api/v1/namespaces/{NAMESPACE}/configmaps?watch=true&resourceVersion={revision}");
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<anyhow::Result<()>>(64);
    let mut watchers = Vec::with_capacity(config.watchers);
    for _ in 0..config.watchers {
        let endpoint = endpoint.clone();
        let request = get(&host, &watch_path);
        let seen = Arc::clone(&seen);
        let ready = ready_tx.clone();
        watchers.push(tokio::spawn(watcher(endpoint, request, seen, ready)));
    }
    drop(ready_tx);
    let connect_deadline = Instant::now() + CONNECT;
    for _ in 0..config.watchers {
        match tokio::time::timeout_at(connect_deadline, ready_rx.recv()).await {
            Ok(Some(Ok(()))) => {}
            Ok(Some(Err(err))) => return Err(err.context("starting a watch")),
            Ok(None) => bail!("a watcher ended before its stream started"),
            Err(_) => bail!("the watchers were not all connected within {CONNECT:?}"),
        }
    }

    // The creates, each due at start + index / rate.
    let cpu_before = (process_cpu(pid), process_cpu(None));
    let acked: Arc<[AtomicU64]> = (0..total).map(|_| AtomicU64::new(UNSEEN)).collect();
    let late: Arc<[AtomicU64]> = (0..total).map(|_| AtomicU64::new(0)).collect();
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut writers = Vec::with_capacity(config.writers);
    for _ in 0..config.writers {
        let endpoint = endpoint.clone();
        let host = host.clone();
        let (seen, acked, late, next) = (
            Arc::clone(&seen),
            Arc::clone(&acked),
            Arc::clone(&late),
            Arc::clone(&next),
        );
        let rate = config.rate;
        writers.push(tokio::spawn(async move {
            let mut connection = Connection::connect(&endpoint)
                .await
                .context("connecting a writer")?;
            let path = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    return anyhow::Ok(());
                }
                let due = start + Duration::from_secs_f64(index as f64 / rate);
                tokio::time::sleep_until(due).await;
                let body = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"fan-{index}"}},"data":{{"index":"{index}"}}}}"#
                );
                let response = connection
                    .round_trip(&post(&host, &path, &body))
                    .await
                    .context("creating a ConfigMap")?;
                let at = seen.epoch.elapsed().as_nanos() as u64;
                if response.status != 201 {
                    bail!(
                        "creating fan-{index}: {}: {}",
                        response.status,
                        String::from_utf8_lossy(response.body)
                    );
                }
                if let (Some(acked), Some(late)) = (acked.get(index), late.get(index)) {
                    acked.store(at.max(1), Ordering::Relaxed);
                    late.store(due.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }
            }
        }));
    }
    for writer in writers {
        writer.await.context("a writer panicked")??;
    }
    let created_at = start.elapsed();

    // Every create reaches every watcher still connected, or the drain time runs out.
    let drain_deadline = Instant::now() + DRAIN;
    let delivered = |index: usize| {
        let connected = config.watchers - seen.cut_off.load(Ordering::Acquire);
        seen.count[index].load(Ordering::Acquire) as usize >= connected
    };
    while (0..total).any(|index| !delivered(index)) && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cpu_after = (process_cpu(pid), process_cpu(None));
    let cut_off = seen.cut_off.load(Ordering::Acquire);
    for watcher in watchers {
        watcher.abort();
    }

    let measured = warmup_creates..total;
    let mut latencies: Vec<u64> = Vec::with_capacity(measured_creates);
    let mut creates_not_delivered = 0;
    for index in measured.clone() {
        let ack = acked[index].load(Ordering::Relaxed);
        let last = seen.last[index].load(Ordering::Relaxed);
        if !delivered(index) || last == UNSEEN {
            creates_not_delivered += 1;
            continue;
        }
        // An event may reach every watcher before its writer has read the 201: zero, then.
        latencies.push(last.saturating_sub(ack));
    }
    let mut create_latencies: Vec<u64> = measured
        .clone()
        .map(|index| late[index].load(Ordering::Relaxed))
        .collect();
    let nanos_to_ms = |nanos: u64| nanos as f64 / 1e6;
    let delivery = Percentiles::of(&mut latencies, nanos_to_ms);
    let create = Percentiles::of(&mut create_latencies, nanos_to_ms);
    // The measured window: from the first measured create's due time to the last's ack.
    let window_start = Duration::from_secs_f64(warmup_creates as f64 / config.rate);
    let window = created_at
        .saturating_sub(window_start)
        .as_secs_f64()
        .max(f64::EPSILON);
    Ok(FanOutReport {
        watchers: config.watchers,
        rate: config.rate,
        creates: measured_creates,
        achieved_rate: measured_creates as f64 / window,
        p50_ms: delivery.p50,
        p99_ms: delivery.p99,
        max_ms: delivery.max,
        create_p99_ms: create.p99,
        watchers_cut_off: cut_off,
        creates_not_delivered,
        events_per_second: (measured_creates - creates_not_delivered) as f64
            * (config.watchers - cut_off) as f64
            / window,
        server_cpu_seconds: cpu_between(cpu_before.0, cpu_after.0),
        client_cpu_seconds: cpu_between(cpu_before.1, cpu_after.1),
    })
}

/// One watcher: starts its stream, says so on `ready`, then records every created object it
/// sees until the stream ends (cut off: the server ended it, or sent an ERROR event) or the
/// task is aborted.
async fn watcher(
    endpoint: Endpoint,
    request: Vec<u8>,
    seen: Arc<Seen>,
    ready: tokio::sync::mpsc::Sender<anyhow::Result<()>>,
) {
    let started = async {
        let mut connection = Connection::connect(&endpoint).await?;
        match connection.start_stream(&request).await? {
            200 => anyhow::Ok(connection),
            status => bail!("watch answered {status}"),
        }
    }
    .await;
    let mut connection = match started {
        Ok(connection) => {
            let _ = ready.send(Ok(())).await;
            connection
        }
        Err(err) => {
            let _ = ready.send(Err(err)).await;
            return;
        }
    };
    drop(ready);
    let mut body = Vec::with_capacity(64 * 1024);
    loop {
        match connection.read_stream(&mut body).await {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
        let complete = match body.iter().rposition(|b| *b == b'\n') {
            Some(at) => at + 1,
            None => continue,
        };
        for line in body[..complete].split(|b| *b == b'\n') {
            if line.is_empty() {
                continue;
            }
            match created_index(line) {
                Some(index) => seen.record(index),
                None if is_error_event(line) => {
                    seen.cut_off.fetch_add(1, Ordering::AcqRel);
                    return;
                }
                None => {}
            }
        }
        body.drain(..complete);
    }
    seen.cut_off.fetch_add(1, Ordering::AcqRel);
}

/// N of the object `fan-N` an event line names, if it names one.
fn created_index(line: &[u8]) -> Option<usize> {
    let at = line
        .windows(NAME_MARKER.len())
        .position(|window| window == NAME_MARKER)?;
    let digits = &line[at + NAME_MARKER.len()..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// Whether an event line is an ERROR event (the server ending the watch, e.g. a 410).
fn is_error_event(line: &[u8]) -> bool {
    line.starts_with(b"{\"type\":\"ERROR\"")
}

fn get(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\r\n").into_bytes()
}

fn post(host: &str, path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_name_their_object() {
        let line = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"fan-1234","namespace":"fan-out"}}}"#;
        assert_eq!(created_index(line), Some(1234));
        assert_eq!(created_index(br#"{"type":"BOOKMARK","object":{}}"#), None);
        assert_eq!(created_index(br#"{"metadata":{"name":"fan-"}}"#), None);
        assert!(is_error_event(
            br#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#
        ));
        assert!(!is_error_event(line));
    }
}
