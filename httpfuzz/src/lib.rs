//! kubemock-httpfuzz: an HTTP-level fuzzer for kubemock (or any Kubernetes API server without
//! authentication). It sends mutated valid requests — objects of many built-in kinds and of
//! custom resources, with wrong JSON types, deep nesting, huge and odd strings, bad names and
//! resourceVersions, odd query parameters, every verb and patch type, JSON, YAML and protobuf
//! bodies, truncated and garbage bodies — and checks that the server never answers 5xx, never
//! panics or dies, keeps `/readyz` fast, and that afterwards every stored object can still be
//! read (JSON, protobuf, Table) and deleted.
//!
//! It is not a coverage-guided fuzzer: requests are drawn from a seeded generator, request
//! `i` from `(seed, i)` alone (`generate`), so a run is reproduced by its seed, and a
//! finding by its seed and index. Server bugs that are known and being fixed elsewhere are
//! recognised by signature (`known`) and counted apart, so that a run looks past them.
//!
//! # Layout
//! - `target`: the resources aimed at and one valid object of each.
//! - `mutate`: mutations of values and of encoded bytes.
//! - `generate`: request `i` of a seed; what is learnt from answers.
//! - `client`: sending a request and reading its answer with deadlines.
//! - `known`: signatures of known server bugs.
//! - `report`: findings, histograms, the reproduction file.
//! - `sweep`: the final read-everything, delete-everything pass.
//! - `server`: `kubemock serve` as a child process.

mod client;
pub mod generate;
pub mod known;
mod mutate;
pub mod report;
mod server;
mod sweep;
mod target;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::Client;
use serde_json::Value;
use tokio::time::Instant;

use crate::client::Outcome;
use crate::generate::{FuzzRequest, Memory};
use crate::known::Known;
use crate::report::{Finding, FindingKind, Recorder, Report};
use crate::server::ServerProcess;

/// A request slower than this (watches aside) is a finding: generous, since this is a fuzzer
/// on a shared machine, not a timed test.
pub const SLOW_LIMIT: Duration = Duration::from_secs(2);
/// A `/readyz` slower than this is a finding.
pub const READYZ_LIMIT: Duration = Duration::from_secs(2);
/// The server's body limit (3 MiB, as upstream's): larger bodies are refused.
const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;
/// How long setup waits for the custom resources to be served.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between polls while waiting during setup.
const POLL: Duration = Duration::from_millis(20);

/// Where the server comes from.
#[derive(Debug, Clone)]
pub enum Server {
    /// Start this `kubemock` binary: `serve --port 0 --no-controllers` plus these arguments.
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// Extra arguments for `serve`.
        args: Vec<String>,
    },
    /// A server already running at this URL (no process checks, no panic scan).
    Url(String),
}

/// A run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server.
    pub server: Server,
    /// The seed of the request sequence.
    pub seed: u64,
    /// Requests to send.
    pub requests: u64,
    /// Check `/readyz`, the process and its log after every this many requests.
    pub check_every: u64,
    /// Known bug signatures to count apart.
    pub known: Vec<Known>,
    /// Where to write findings (JSON lines), if anywhere.
    pub repro: Option<PathBuf>,
    /// Print progress to stderr.
    pub progress: bool,
}

/// A run in progress.
struct Run {
    client: Client,
    base: String,
    server: Option<ServerProcess>,
    report: Report,
    recorder: Recorder,
    /// The server died: stop sending.
    dead: bool,
}

/// Runs the fuzzer as configured and returns what it found.
pub async fn run(config: &Config) -> anyhow::Result<Report> {
    let (server, base) = match &config.server {
        Server::Spawn { binary, args } => {
            let server = ServerProcess::start(binary, args).await?;
            let base = server.url().to_owned();
            (Some(server), base)
        }
        Server::Url(url) => (None, url.trim_end_matches('/').to_owned()),
    };
    let mut run = Run {
        client: client::client()?,
        base,
        server,
        report: Report {
            seed: config.seed,
            known: config.known.iter().map(|k| k.name).collect(),
            ..Report::default()
        },
        recorder: Recorder::new(config.known.clone(), config.seed, config.repro.clone()),
        dead: false,
    };
    if config.progress {
        let pid = run
            .server
            .as_ref()
            .and_then(ServerProcess::pid)
            .map_or(String::new(), |pid| format!(" (pid {pid})"));
        eprintln!(
            "kubemock-httpfuzz: seed {}, {} requests against {}{pid}",
            config.seed, config.requests, run.base
        );
    }
    let preexisting = sweep::inventory(&run.client, &run.base)
        .await
        .context("listing what the server has before the run")?;
    setup(&run.client, &run.base).await.context("setup")?;
    let mut memory = Memory::default();
    let start = Instant::now();
    for index in 0..config.requests {
        let request = generate::generate(config.seed, index, &memory);
        let outcome = client::send(&run.client, &run.base, &request).await;
        run.account(index, &request, &outcome);
        if let Some(status) = outcome.status {
            memory.learn(&request, status, &outcome.content_type, &outcome.body);
        }
        if outcome.error.is_some() || (index + 1) % config.check_every.max(1) == 0 {
            run.check(Some(index)).await;
        }
        if run.dead {
            break;
        }
        if config.progress && (index + 1) % 10_000 == 0 {
            eprintln!(
                "kubemock-httpfuzz: {} requests, {} findings ({} unexplained)",
                index + 1,
                run.report.counts.values().sum::<u64>(),
                run.report.unexplained()
            );
        }
    }
    run.report.elapsed = start.elapsed();
    run.check(None).await;
    if !run.dead {
        let mut failures = Vec::new();
        sweep::sweep(
            &run.client,
            &run.base,
            &preexisting,
            &mut run.report,
            &mut failures,
        )
        .await
        .context("the final sweep")?;
        for failure in failures {
            run.recorder
                .record(&mut run.report, failure.into_finding(), None);
        }
        run.check(None).await;
    }
    if let Some(server) = run.server.take()
        && let Err(err) = server.stop().await
    {
        // A request the server never finished keeps a graceful shutdown waiting: say which
        // hangs came before, so that a known one explains this too.
        let hangs: Vec<String> = run
            .report
            .counts
            .keys()
            .filter(|(kind, _)| *kind == FindingKind::Hang.name())
            .map(|(_, known)| format!("after a {} hang", known.unwrap_or("NEW")))
            .collect();
        let finding = check_finding(
            FindingKind::StopFailed,
            None,
            format!("{err:#} {}", hangs.join(", ")),
        );
        run.recorder.record(&mut run.report, finding, None);
    }
    Ok(run.report)
}

/// Creates the fuzzer's namespaces and custom resource definitions and waits until the
/// custom resources are served.
async fn setup(client: &Client, base: &str) -> anyhow::Result<()> {
    let mut creates: Vec<(String, Value)> = target::NAMESPACES
        .iter()
        .map(|ns| {
            (
                "/api/v1/namespaces".to_owned(),
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns}}),
            )
        })
        .collect();
    for crd in target::setup_definitions() {
        creates.push((
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".to_owned(),
            crd,
        ));
    }
    for (path, body) in creates {
        let response = client
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .with_context(|| format!("POST {path}"))?;
        let status = response.status().as_u16();
        if !matches!(status, 201 | 409) {
            let text = response.text().await.unwrap_or_default();
            bail!("POST {path}: {status} {text}");
        }
    }
    let deadline = Instant::now() + SETUP_TIMEOUT;
    for plural in ["widgets", "gadgets"] {
        let url = format!("{base}/apis/{}/v1/{plural}", target::FUZZ_GROUP);
        loop {
            let status = client.get(&url).send().await.map(|r| r.status().as_u16());
            if let Ok(200) = status {
                break;
            }
            if Instant::now() > deadline {
                bail!("{url} not served within {SETUP_TIMEOUT:?} (last: {status:?})");
            }
            tokio::time::sleep(POLL).await;
        }
    }
    Ok(())
}

fn check_finding(kind: FindingKind, index: Option<u64>, message: String) -> Finding {
    Finding {
        index,
        kind,
        op: "check".to_owned(),
        method: "GET".to_owned(),
        path: "/readyz".to_owned(),
        status: None,
        elapsed_ms: 0.0,
        message,
        content_type: String::new(),
        depth: 0,
        copy_ops: 0,
        known: None,
    }
}

impl Run {
    /// Counts an answer and records what is wrong with it.
    fn account(&mut self, index: u64, request: &FuzzRequest, outcome: &Outcome) {
        let status = outcome
            .status
            .map_or_else(|| "io".to_owned(), |s| s.to_string());
        *self.report.statuses.entry(status.clone()).or_default() += 1;
        *self
            .report
            .by_op
            .entry(request.op.name())
            .or_default()
            .entry(status)
            .or_default() += 1;
        self.report.requests += 1;
        if !request.watch {
            self.report.slowest = self.report.slowest.max(outcome.elapsed);
        }
        let finding = |kind, message: String| Finding {
            index: Some(index),
            kind,
            op: request.op.name().to_owned(),
            method: request.method.to_string(),
            path: request.path_and_query.clone(),
            status: outcome.status,
            elapsed_ms: outcome.elapsed.as_secs_f64() * 1e3,
            message,
            content_type: request.content_type().to_owned(),
            depth: request.depth,
            copy_ops: request.copy_ops,
            known: None,
        };
        let mut findings = Vec::new();
        let too_large_resource_version =
            outcome.status == Some(504) && outcome.message().contains("Too large resource version");
        let create_with_resource_version = outcome.status == Some(500)
            && outcome.message().contains(RESOURCE_VERSION_ON_CREATE)
            && sets_positive_resource_version(request);
        match outcome.status {
            Some(504) if too_large_resource_version => {
                self.report.too_large_resource_versions += 1;
            }
            Some(500) if create_with_resource_version => {
                self.report.creates_with_resource_version += 1;
            }
            Some(status) if status >= 500 => {
                findings.push(finding(FindingKind::ServerError, outcome.message()));
            }
            _ => {}
        }
        if let Some(message) = &outcome.watch_error {
            findings.push(finding(FindingKind::WatchServerError, message.clone()));
        }
        let oversize = request
            .body
            .as_ref()
            .is_some_and(|body| body.len() > MAX_BODY_BYTES);
        if let Some(error) = &outcome.error
            && oversize
            && error.contains("writing a body")
        {
            // The server answers 413 to a body over its limit without reading the rest, and
            // closes the connection: the client may still be writing. Not a finding.
            self.report.oversize_hangups += 1;
        } else if let Some(error) = &outcome.error {
            let kind = if error.contains("within") {
                FindingKind::Hang
            } else {
                FindingKind::Transport
            };
            findings.push(finding(kind, error.clone()));
        } else if !request.watch && !too_large_resource_version && outcome.elapsed > SLOW_LIMIT {
            findings.push(finding(
                FindingKind::Slow,
                format!(
                    "answered {} in {:?}",
                    status_or_io(outcome),
                    outcome.elapsed
                ),
            ));
        }
        for finding in findings {
            self.recorder
                .record(&mut self.report, finding, Some(request));
        }
    }

    /// `/readyz` answers 200 quickly, the process lives, its log has no new panic.
    async fn check(&mut self, index: Option<u64>) {
        let start = Instant::now();
        let answer = tokio::time::timeout(
            client::HANG_LIMIT,
            self.client.get(format!("{}/readyz", self.base)).send(),
        )
        .await;
        let elapsed = start.elapsed();
        self.report.readyz_checks += 1;
        self.report.readyz_max = self.report.readyz_max.max(elapsed);
        let failed = match answer {
            Ok(Ok(response)) if response.status() == 200 => None,
            Ok(Ok(response)) => Some(format!("/readyz answered {}", response.status())),
            Ok(Err(err)) => Some(format!("/readyz: {err}")),
            Err(_) => Some(format!(
                "/readyz: no answer within {:?}",
                client::HANG_LIMIT
            )),
        };
        let mut findings = Vec::new();
        if let Some(message) = failed {
            findings.push(check_finding(FindingKind::ReadyzFailed, index, message));
        } else if elapsed > READYZ_LIMIT {
            findings.push(check_finding(
                FindingKind::ReadyzSlow,
                index,
                format!("/readyz took {elapsed:?}"),
            ));
        }
        if let Some(server) = &mut self.server {
            for line in server.new_panics() {
                findings.push(check_finding(FindingKind::Panic, index, line));
            }
            if let Some(status) = server.exited() {
                self.dead = true;
                findings.push(check_finding(
                    FindingKind::ServerDied,
                    index,
                    format!("exited ({status}); stderr ends:\n{}", server.log_tail()),
                ));
            }
        }
        for finding in findings {
            self.recorder.record(&mut self.report, finding, None);
        }
    }
}

/// Upstream's (plain error, so 500) refusal of a create whose object has a resourceVersion.
const RESOURCE_VERSION_ON_CREATE: &str =
    "resourceVersion should not be set on objects to be created";

/// Whether `request`'s body sets a `metadata.resourceVersion` that Go's `strconv.ParseUint`
/// reads as more than zero: upstream's store refuses to create such an object with a 500
/// (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`, `Create`) and ignores any other
/// value. A protobuf body read back from the server carries the object's own.
fn sets_positive_resource_version(request: &FuzzRequest) -> bool {
    let Some(body) = &request.body else {
        return false;
    };
    if request.content_type().contains("protobuf") {
        return request.from_server;
    }
    let value = serde_json::from_slice::<Value>(body)
        .ok()
        .or_else(|| serde_yaml_ng::from_slice::<Value>(body).ok());
    value
        .as_ref()
        .and_then(|v| v["metadata"]["resourceVersion"].as_str())
        .is_some_and(|rv| {
            !rv.is_empty()
                && rv.bytes().all(|b| b.is_ascii_digit())
                && rv.parse::<u64>().is_ok_and(|n| n > 0)
        })
}

fn status_or_io(outcome: &Outcome) -> String {
    outcome
        .status
        .map_or_else(|| "nothing".to_owned(), |s| s.to_string())
}
