//! A load run: N connections, each a task sending requests back to back on one keep-alive
//! connection for a warm-up and then a measured window. Only responses that complete inside the
//! window count towards throughput and latency; every non-2xx answer and every I/O failure, in
//! the warm-up too, is counted as an error and reported, never dropped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cpu;
use crate::http::{Connection, Endpoint};
use crate::workload::Workload;

/// Pause after a failed connect, so that a dead server yields errors, not a busy loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);
/// How long after the window a request in flight may take before it counts as timed out.
const REQUEST_GRACE: Duration = Duration::from_secs(5);
/// How much of an error body is kept for the report.
const ERROR_SAMPLE_BYTES: usize = 300;

/// How a run is shaped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadConfig {
    /// Concurrent connections, each with one request in flight.
    pub(crate) connections: usize,
    /// Time before the measured window (connections open, caches and allocators warm up).
    pub(crate) warmup: Duration,
    /// The measured window.
    pub(crate) duration: Duration,
}

/// The figures of one run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoadReport {
    /// The scenario's name.
    pub(crate) scenario: &'static str,
    /// Concurrent connections.
    pub(crate) connections: usize,
    /// Length of the measured window, seconds.
    pub(crate) duration_s: f64,
    /// Successful (2xx) responses completed in the window.
    pub(crate) requests: u64,
    /// `requests` per second.
    pub(crate) rps: f64,
    /// Non-2xx responses plus I/O failures, over the whole run (warm-up included).
    pub(crate) errors: u64,
    /// Non-2xx responses by status.
    pub(crate) error_statuses: BTreeMap<u16, u64>,
    /// I/O failures (connect, reset, timeout, malformed response).
    pub(crate) io_errors: u64,
    /// The first error seen: status and the start of its body, or the I/O error.
    pub(crate) first_error: Option<String>,
    /// Latency of the successful responses in the window.
    pub(crate) latency_ms: Percentiles,
    /// CPU the load generator used in the window, in cores (CPU seconds per second).
    pub(crate) client_cpu_cores: Option<f64>,
    /// CPU the server used in the window, in cores (when its pid is known).
    pub(crate) server_cpu_cores: Option<f64>,
    /// Load generator CPU per successful request, microseconds.
    pub(crate) client_cpu_us_per_request: Option<f64>,
    /// Server CPU per successful request, microseconds.
    pub(crate) server_cpu_us_per_request: Option<f64>,
}

/// Latency percentiles (nearest rank), milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Percentiles {
    /// Median.
    pub(crate) p50: f64,
    /// 90th percentile.
    pub(crate) p90: f64,
    /// 99th percentile.
    pub(crate) p99: f64,
    /// Largest.
    pub(crate) max: f64,
}

impl Percentiles {
    /// Percentiles of `samples` (any unit; `to_ms` converts one), sorting them in place.
    pub(crate) fn of<T: Ord + Copy>(samples: &mut [T], to_ms: impl Fn(T) -> f64) -> Self {
        if samples.is_empty() {
            return Percentiles::default();
        }
        samples.sort_unstable();
        let at = |q: f64| {
            // Nearest rank: the smallest sample with at least q of all samples at or below it.
            let rank = (q * samples.len() as f64).ceil() as usize;
            to_ms(samples[rank.clamp(1, samples.len()) - 1])
        };
        Percentiles {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// When the measured window opens and closes.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

/// What one connection's task saw.
#[derive(Debug, Default)]
struct TaskTally {
    /// Latencies of the successful responses in the window, microseconds.
    latencies_us: Vec<u32>,
    error_statuses: BTreeMap<u16, u64>,
    io_errors: u64,
    first_error: Option<String>,
}

impl TaskTally {
    fn status_error(&mut self, status: u16, body: &[u8]) {
        *self.error_statuses.entry(status).or_default() += 1;
        if self.first_error.is_none() {
            let body = &body[..body.len().min(ERROR_SAMPLE_BYTES)];
            self.first_error = Some(format!("{status}: {}", String::from_utf8_lossy(body)));
        }
    }

    fn io_error(&mut self, error: impl std::fmt::Display) {
        self.io_errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(format!("I/O: {error}"));
        }
    }
}

/// Runs `workload` against `endpoint`; `server_pid`, when known, lets the report show the server's
/// CPU use.
pub(crate) async fn run(
    endpoint: Endpoint,
    workload: Workload,
    config: LoadConfig,
    server_pid: Option<u32>,
) -> anyhow::Result<LoadReport> {
    workload.setup(&endpoint).await?;
    let workload = Arc::new(workload);
    let start = Instant::now() + config.warmup;
    let window = Window {
        start,
        end: start + config.duration,
    };
    let mut tasks = JoinSet::new();
    for connection in 0..config.connections {
        tasks.spawn(drive(
            endpoint.clone(),
            Arc::clone(&workload),
            connection,
            window,
        ));
    }
    let cpu = tokio::spawn(sample_cpu(window, server_pid));
    let mut tally = TaskTally::default();
    while let Some(done) = tasks.join_next().await {
        let task = done?;
        tally.latencies_us.extend_from_slice(&task.latencies_us);
        for (status, count) in task.error_statuses {
            *tally.error_statuses.entry(status).or_default() += count;
        }
        tally.io_errors += task.io_errors;
        if tally.first_error.is_none() {
            tally.first_error = task.first_error;
        }
    }
    let (client_cpu, server_cpu) = cpu.await?;
    let seconds = config.duration.as_secs_f64();
    let requests = tally.latencies_us.len() as u64;
    let per_request = |cpu: Option<Duration>| {
        cpu.filter(|_| requests > 0)
            .map(|cpu| cpu.as_secs_f64() * 1e6 / requests as f64)
    };
    Ok(LoadReport {
        scenario: workload.scenario().name(),
        connections: config.connections,
        duration_s: seconds,
        requests,
        rps: requests as f64 / seconds,
        errors: tally.error_statuses.values().sum::<u64>() + tally.io_errors,
        error_statuses: tally.error_statuses,
        io_errors: tally.io_errors,
        first_error: tally.first_error,
        latency_ms: Percentiles::of(&mut tally.latencies_us, |us| f64::from(us) / 1000.0),
        client_cpu_cores: client_cpu.map(|cpu| cpu.as_secs_f64() / seconds),
        server_cpu_cores: server_cpu.map(|cpu| cpu.as_secs_f64() / seconds),
        client_cpu_us_per_request: per_request(client_cpu),
        server_cpu_us_per_request: per_request(server_cpu),
    })
}

/// CPU used by this process and by the server during `window`.
async fn sample_cpu(
    window: Window,
    server_pid: Option<u32>,
) -> (Option<Duration>, Option<Duration>) {
    tokio::time::sleep_until(window.start).await;
    let client = cpu::process_cpu(None);
    let server = server_pid.and_then(|pid| cpu::process_cpu(Some(pid)));
    tokio::time::sleep_until(window.end).await;
    let client = client
        .zip(cpu::process_cpu(None))
        .map(|(a, b)| b.saturating_sub(a));
    let server = server
        .zip(server_pid.and_then(|pid| cpu::process_cpu(Some(pid))))
        .map(|(a, b)| b.saturating_sub(a));
    (client, server)
}

/// One connection: requests back to back until the window ends; reconnects after a failure or
/// a `Connection: close`.
async fn drive(
    endpoint: Endpoint,
    workload: Arc<Workload>,
    id: usize,
    window: Window,
) -> TaskTally {
    let mut tally = TaskTally::default();
    let mut request = Vec::with_capacity(512);
    let mut connection: Option<Connection> = None;
    let mut seq = 0u64;
    while Instant::now() < window.end {
        let open = match &mut connection {
            Some(open) => open,
            None => match Connection::connect(&endpoint).await {
                Ok(open) => connection.insert(open),
                Err(err) => {
                    tally.io_error(format!("connect: {err}"));
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    continue;
                }
            },
        };
        workload.write_request(id, seq, &mut request);
        seq += 1;
        let sent = Instant::now();
        let close =
            match tokio::time::timeout_at(window.end + REQUEST_GRACE, open.round_trip(&request))
                .await
            {
                Ok(Ok(response)) => {
                    let done = Instant::now();
                    if (200..300).contains(&response.status) {
                        if done >= window.start && done < window.end {
                            let micros = (done - sent).as_micros();
                            tally
                                .latencies_us
                                .push(u32::try_from(micros).unwrap_or(u32::MAX));
                        }
                    } else {
                        tally.status_error(response.status, response.body);
                    }
                    response.close
                }
                Ok(Err(err)) => {
                    tally.io_error(err);
                    true
                }
                Err(_) => {
                    tally.io_error("no response within the grace period after the window");
                    true
                }
            };
        if close {
            connection = None;
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut samples: Vec<u32> = (1..=100).rev().collect();
        let p = Percentiles::of(&mut samples, f64::from);
        assert_eq!((p.p50, p.p90, p.p99, p.max), (50.0, 90.0, 99.0, 100.0));
        let mut one = [7u32];
        let p = Percentiles::of(&mut one, f64::from);
        assert_eq!((p.p50, p.p99), (7.0, 7.0));
        let p = Percentiles::of::<u32>(&mut [], f64::from);
        assert_eq!(p.max, 0.0);
    }
}
