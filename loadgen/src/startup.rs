//! Startup time: from spawning `kubemock serve --port 0` to the first 200 on `/readyz`.
//!
//! "Process start" here includes everything a test harness that launches the binary waits for:
//! fork and exec of the (already built, page-cached) binary, dynamic loading, the tokio runtime
//! and the tracing subscriber, opening the store (sled; a fresh temporary directory when
//! ephemeral, the data directory when durable, with its history replayed on reopen), binding the
//! port, printing the ready line, creating the startup objects (namespaces, service accounts,
//! the `kubernetes` Service; with fsyncs when durable and fresh), and then one HTTP round trip
//! on a fresh loopback connection, opened as soon as the URL has been read and retried at once
//! until a 200 comes back. It does not include building the binary or stopping the server.
//! One untimed start precedes the timed ones so every run finds the binary in the page cache.
//!
//! The secure modes start `kubemock serve --secure`: the cluster CA, the serving certificate,
//! the service-account key and the admin's client certificate generated in memory every start
//! (`secure`), or read from a `--cert-dir` the untimed first start filled (`secure-cert-dir`);
//! the round trip is then a TLS handshake with the admin's client certificate and a GET.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::ValueEnum;
use serde::Serialize;
use tokio::time::Instant;

use crate::http::{Connection, Endpoint};
use crate::load::Percentiles;
use crate::server::{ServerProcess, kubemock_args};
use crate::workload::write_head;

/// How long a started server may take to answer 200 on `/readyz`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the started server keeps its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StartupMode {
    /// No data directory: the store's history in memory.
    Ephemeral,
    /// A new, empty data directory every run: startup objects are created and flushed.
    DurableFresh,
    /// The same data directory every run, populated by an untimed first start: the store is
    /// reopened and the startup objects exist already.
    DurableReopen,
    /// No data directory, `--secure`: every key and certificate generated in memory.
    Secure,
    /// No data directory, `--secure` with the same `--cert-dir` every run, populated by an
    /// untimed first start: the keys and certificates are read back.
    SecureCertDir,
}

impl StartupMode {
    /// The mode's name, as on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StartupMode::Ephemeral => "ephemeral",
            StartupMode::DurableFresh => "durable-fresh",
            StartupMode::DurableReopen => "durable-reopen",
            StartupMode::Secure => "secure",
            StartupMode::SecureCertDir => "secure-cert-dir",
        }
    }
}

/// Startup figures of one mode, milliseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StartupReport {
    /// The mode.
    pub(crate) mode: StartupMode,
    /// Timed runs.
    pub(crate) runs: usize,
    /// Spawn to the first 200 on `/readyz`.
    pub(crate) first_ok_ms: Summary,
    /// Spawn to the ready line on stdout.
    pub(crate) ready_line_ms: Summary,
}

/// Min, median, p90 and max of a series, milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Summary {
    /// Fastest.
    pub(crate) min: f64,
    /// Median (nearest rank).
    pub(crate) median: f64,
    /// 90th percentile (nearest rank).
    pub(crate) p90: f64,
    /// Slowest.
    pub(crate) max: f64,
}

impl Summary {
    fn of(samples: &mut [Duration]) -> Self {
        let min = samples.iter().min().map_or(0.0, |d| ms(*d));
        let p = Percentiles::of(samples, ms);
        Summary {
            min,
            median: p.p50,
            p90: p.p90,
            max: p.max,
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// [`measure`] on a thread of its own with a single-threaded runtime, whatever runtime the
/// caller uses: a multi-threaded one adds cross-thread wake-ups (about 1 ms on 2 busy cores)
/// to what is being timed.
pub(crate) async fn measure_isolated(
    kubemock: &Path,
    mode: StartupMode,
    runs: usize,
    extra: &[String],
) -> anyhow::Result<StartupReport> {
    let kubemock = kubemock.to_owned();
    let extra = extra.to_vec();
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a runtime for the startup series")?
            .block_on(measure(&kubemock, mode, runs, &extra))
    })
    .await
    .context("the startup series failed")?
}

/// Starts `kubemock` `runs` times in `mode` (after one untimed start) and summarises.
pub(crate) async fn measure(
    kubemock: &Path,
    mode: StartupMode,
    runs: usize,
    extra: &[String],
) -> anyhow::Result<StartupReport> {
    let reopened = tempfile::tempdir().context("creating a data directory")?;
    let certs = tempfile::tempdir().context("creating a cert directory")?;
    let kubeconfig = certs.path().join("kubeconfig");
    let mut first_ok = Vec::with_capacity(runs);
    let mut ready_line = Vec::with_capacity(runs);
    for run in 0..=runs {
        let fresh = tempfile::tempdir().context("creating a data directory")?;
        let data_dir = match mode {
            StartupMode::Ephemeral | StartupMode::Secure | StartupMode::SecureCertDir => None,
            StartupMode::DurableFresh => Some(fresh.path()),
            StartupMode::DurableReopen => Some(reopened.path()),
        };
        let mut extra: Vec<String> = extra.to_vec();
        if matches!(mode, StartupMode::Secure | StartupMode::SecureCertDir) {
            extra.push("--secure".to_owned());
            extra.push(format!("--kubeconfig-out={}", kubeconfig.display()));
        }
        if mode == StartupMode::SecureCertDir {
            extra.push(format!("--cert-dir={}", certs.path().join("pki").display()));
        }
        let (line, ok) = start_once(kubemock, data_dir, &extra).await?;
        if run > 0 {
            ready_line.push(line);
            first_ok.push(ok);
        }
    }
    Ok(StartupReport {
        mode,
        runs,
        first_ok_ms: Summary::of(&mut first_ok),
        ready_line_ms: Summary::of(&mut ready_line),
    })
}

/// One start: (spawn to ready line, spawn to first 200 on `/readyz`).
async fn start_once(
    kubemock: &Path,
    data_dir: Option<&Path>,
    extra: &[String],
) -> anyhow::Result<(Duration, Duration)> {
    let args: Vec<OsString> = kubemock_args(data_dir, extra);
    let server = ServerProcess::start(kubemock, &args).await?;
    let ready = first_ready(server.endpoint()).await;
    let spawned = server.spawned_at();
    let line = server.ready_line_at() - spawned;
    let ready = match ready {
        Ok(at) => at - spawned,
        Err(err) => {
            let log = server.log_tail();
            let _ = server.stop().await;
            return Err(err.context(format!("server stderr:\n{log}")));
        }
    };
    server.stop().await?;
    Ok((line, ready))
}

/// Polls `/readyz` back to back until it answers 200; returns when it did.
async fn first_ready(endpoint: &Endpoint) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut request = Vec::new();
    write_head(
        &mut request,
        "GET",
        "/readyz",
        &endpoint.addr.to_string(),
        None,
    );
    let mut last_error = String::new();
    while Instant::now() < deadline {
        let mut connection = match Connection::connect(endpoint).await {
            Ok(connection) => connection,
            Err(err) => {
                last_error = format!("connect: {err}");
                tokio::task::yield_now().await;
                continue;
            }
        };
        loop {
            match tokio::time::timeout_at(deadline, connection.round_trip(&request)).await {
                Ok(Ok(response)) if response.status == 200 => return Ok(Instant::now()),
                Ok(Ok(response)) => {
                    last_error = format!("status {}", response.status);
                    if response.close {
                        break;
                    }
                }
                Ok(Err(err)) => {
                    last_error = err.to_string();
                    break;
                }
                Err(_) => break,
            }
        }
    }
    bail!("/readyz did not answer 200 within {READY_TIMEOUT:?} (last: {last_error})")
}
