//! What a run found and how it ends up on paper: the status histogram (overall and per
//! operation), every finding counted by kind and known signature, the first few of each kept
//! for the report, and all of them (up to a cap per kind) written to a reproduction file with
//! the seed, the request index and the full request.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use serde_json::json;

use crate::generate::FuzzRequest;
use crate::known::Known;

/// Findings of one kind and signature kept in the report (the rest are counted).
const KEPT_PER_KEY: usize = 5;
/// Findings of one kind and signature written to the reproduction file.
const WRITTEN_PER_KEY: usize = 50;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FindingKind {
    /// A 5xx answer (other than the 504 a too-new resourceVersion is meant to get).
    ServerError,
    /// A 5xx `Status` in a watch stream's `ERROR` event.
    WatchServerError,
    /// No answer: connection refused, reset or closed mid-response.
    Transport,
    /// An answer that took longer than the slow limit.
    Slow,
    /// No complete answer within the hang limit.
    Hang,
    /// `/readyz` slower than its limit.
    ReadyzSlow,
    /// `/readyz` not 200.
    ReadyzFailed,
    /// The server process exited.
    ServerDied,
    /// The server did not stop cleanly on SIGTERM.
    StopFailed,
    /// The server logged a panic.
    Panic,
    /// A check of the final sweep failed (which one).
    Sweep(&'static str),
}

impl FindingKind {
    /// Its name in reports.
    pub fn name(self) -> String {
        match self {
            FindingKind::ServerError => "5xx".to_owned(),
            FindingKind::WatchServerError => "watch-5xx".to_owned(),
            FindingKind::Transport => "transport".to_owned(),
            FindingKind::Slow => "slow".to_owned(),
            FindingKind::Hang => "hang".to_owned(),
            FindingKind::ReadyzSlow => "readyz-slow".to_owned(),
            FindingKind::ReadyzFailed => "readyz-failed".to_owned(),
            FindingKind::ServerDied => "server-died".to_owned(),
            FindingKind::StopFailed => "stop-failed".to_owned(),
            FindingKind::Panic => "panic".to_owned(),
            FindingKind::Sweep(check) => format!("sweep:{check}"),
        }
    }
}

/// One finding.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Index of the request in the run (`None` for checks outside the sequence).
    pub index: Option<u64>,
    /// What went wrong.
    pub kind: FindingKind,
    /// The operation (`create`, `sweep`, ...).
    pub op: String,
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Status, if any.
    pub status: Option<u16>,
    /// Milliseconds to the answer.
    pub elapsed_ms: f64,
    /// The `Status` message, error or log line.
    pub message: String,
    /// The request's `Content-Type`.
    pub content_type: String,
    /// Deepest nesting the request's body was given.
    pub depth: usize,
    /// JSON patch `copy` operations in it.
    pub copy_ops: usize,
    /// The known signature it matched.
    pub known: Option<&'static str>,
}

/// How the final sweep went.
#[derive(Debug, Default, Clone)]
pub struct SweepReport {
    /// Resources listed.
    pub resources: usize,
    /// Objects read (as JSON, and as protobuf and a Table where served).
    pub objects: usize,
    /// Objects created during the run, deleted and then gone.
    pub deleted: usize,
    /// Namespaces deleted and left Terminating (expected without controllers).
    pub terminating_namespaces: usize,
    /// Objects the server had before the run (read, not deleted).
    pub preexisting: usize,
}

/// The result of a run.
#[derive(Debug, Default)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Requests sent.
    pub requests: u64,
    /// Time the requests took (setup and sweep excluded).
    pub elapsed: Duration,
    /// Answers by status (`io` for none).
    pub statuses: BTreeMap<String, u64>,
    /// Answers by operation and status.
    pub by_op: BTreeMap<&'static str, BTreeMap<String, u64>>,
    /// 504s for a resourceVersion newer than the store: upstream's answer, not a finding.
    pub too_large_resource_versions: u64,
    /// 500s for a create whose object sets a positive resourceVersion: upstream's answer, not
    /// a finding.
    pub creates_with_resource_version: u64,
    /// Bodies over the server's limit whose connection the server closed while they were
    /// still being sent (it answers 413 without reading them): not findings.
    pub oversize_hangups: u64,
    /// Slowest `/readyz`.
    pub readyz_max: Duration,
    /// `/readyz` checks made.
    pub readyz_checks: u64,
    /// Slowest request that was not a watch.
    pub slowest: Duration,
    /// Findings by kind and known signature.
    pub counts: BTreeMap<(String, Option<&'static str>), u64>,
    /// The first few findings of each kind and signature.
    pub findings: Vec<Finding>,
    /// The final sweep.
    pub sweep: SweepReport,
    /// Where the findings were written.
    pub repro_path: Option<PathBuf>,
    /// The known signatures in force.
    pub known: Vec<&'static str>,
}

impl Report {
    /// Findings that matched no known signature.
    pub fn unexplained(&self) -> u64 {
        self.counts
            .iter()
            .filter(|((_, known), _)| known.is_none())
            .map(|(_, n)| n)
            .sum()
    }

    /// How often each known signature occurred.
    pub fn known_seen(&self) -> BTreeMap<&'static str, u64> {
        let mut seen = BTreeMap::new();
        for ((_, known), n) in &self.counts {
            if let Some(name) = known {
                *seen.entry(*name).or_default() += n;
            }
        }
        seen
    }

    /// 5xx answers seen during the run, known or not (the 504s and 500s upstream sends
    /// excluded).
    pub fn server_errors(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(status, _)| status.starts_with('5'))
            .map(|(_, n)| n)
            .sum::<u64>()
            - self.too_large_resource_versions
            - self.creates_with_resource_version
    }

    /// Writes the report as text.
    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        let seconds = self.elapsed.as_secs_f64();
        writeln!(
            out,
            "httpfuzz seed {}: {} requests in {:.1} s ({:.0}/s)",
            self.seed,
            self.requests,
            seconds,
            self.requests as f64 / seconds.max(1e-9)
        )?;
        writeln!(out, "status histogram:")?;
        for (status, n) in &self.statuses {
            writeln!(out, "  {status:>4} {n:>8}")?;
        }
        writeln!(
            out,
            "  as upstream: 504 for a resourceVersion newer than the store {}, 500 for a create \
             setting a positive resourceVersion {}; io for a body over 3 MiB cut off by the \
             server: {}",
            self.too_large_resource_versions,
            self.creates_with_resource_version,
            self.oversize_hangups
        )?;
        writeln!(out, "by operation:")?;
        for (op, statuses) in &self.by_op {
            let row: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}:{n}")).collect();
            writeln!(out, "  {op:<17} {}", row.join(" "))?;
        }
        writeln!(
            out,
            "readyz: {} checks, slowest {:.1} ms; slowest request {:.1} ms",
            self.readyz_checks,
            self.readyz_max.as_secs_f64() * 1e3,
            self.slowest.as_secs_f64() * 1e3
        )?;
        let s = &self.sweep;
        writeln!(
            out,
            "sweep: {} resources, {} objects read, {} deleted and gone, {} namespaces left \
             Terminating, {} pre-existing objects read only",
            s.resources, s.objects, s.deleted, s.terminating_namespaces, s.preexisting
        )?;
        writeln!(out, "known signatures in force: {}", self.known.join(", "))?;
        if self.counts.is_empty() {
            writeln!(out, "findings: none")?;
        } else {
            writeln!(out, "findings:")?;
            for ((kind, known), n) in &self.counts {
                let label = known.map_or("NEW".to_owned(), |k| format!("known {k}"));
                writeln!(out, "  {kind:<22} {label:<34} {n:>6}")?;
            }
            writeln!(out, "first findings:")?;
            for f in &self.findings {
                let index = f.index.map_or("-".to_owned(), |i| i.to_string());
                let status = f.status.map_or("---".to_owned(), |s| s.to_string());
                writeln!(
                    out,
                    "  #{index} {} [{}] {} {} {} -> {status} ({:.0} ms): {}",
                    f.kind.name(),
                    f.known.unwrap_or("NEW"),
                    f.op,
                    f.method,
                    truncate(&f.path, 160),
                    f.elapsed_ms,
                    truncate(&f.message, 200)
                )?;
            }
        }
        if let Some(path) = &self.repro_path {
            writeln!(out, "reproduction file: {}", path.display())?;
        }
        writeln!(
            out,
            "{} unexplained findings, {} 5xx answers",
            self.unexplained(),
            self.server_errors()
        )?;
        Ok(())
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

/// Collects findings into a report and a reproduction file.
pub(crate) struct Recorder {
    known: Vec<Known>,
    seed: u64,
    path: Option<PathBuf>,
    file: Option<BufWriter<File>>,
    written: BTreeMap<(String, Option<&'static str>), usize>,
}

impl Recorder {
    pub(crate) fn new(known: Vec<Known>, seed: u64, path: Option<PathBuf>) -> Self {
        Recorder {
            known,
            seed,
            path,
            file: None,
            written: BTreeMap::new(),
        }
    }

    /// Records `finding` (caused by `request`, if one) in `report`.
    pub(crate) fn record(
        &mut self,
        report: &mut Report,
        mut finding: Finding,
        request: Option<&FuzzRequest>,
    ) {
        finding.known = self
            .known
            .iter()
            .find(|k| k.matches(&finding))
            .map(|k| k.name);
        let key = (finding.kind.name(), finding.known);
        let count = report.counts.entry(key.clone()).or_default();
        *count += 1;
        if *count as usize <= KEPT_PER_KEY {
            report.findings.push(finding.clone());
        }
        let written = self.written.entry(key).or_default();
        if *written < WRITTEN_PER_KEY {
            *written += 1;
            if let Err(err) = self.write(&finding, request) {
                eprintln!("kubemock-httpfuzz: cannot write the reproduction file: {err}");
                self.path = None;
            }
            report.repro_path.clone_from(&self.path);
        }
    }

    fn write(&mut self, finding: &Finding, request: Option<&FuzzRequest>) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if self.file.is_none() {
            self.file = Some(BufWriter::new(File::create(path)?));
        }
        let mut line = json!({
            "seed": self.seed,
            "index": finding.index,
            "kind": finding.kind.name(),
            "known": finding.known,
            "op": finding.op,
            "method": finding.method,
            "path": finding.path,
            "status": finding.status,
            "elapsedMs": finding.elapsed_ms,
            "message": finding.message,
        });
        if let Some(request) = request {
            line["headers"] = json!(request.headers);
            line["depth"] = json!(request.depth);
            line["fromServer"] = json!(request.from_server);
            if let Some(body) = &request.body {
                line["bodyLength"] = json!(body.len());
                match std::str::from_utf8(body) {
                    Ok(text) => line["body"] = json!(text),
                    Err(_) => {
                        line["bodyBase64"] =
                            json!(base64::engine::general_purpose::STANDARD.encode(body))
                    }
                }
            }
            if let Some(index) = finding.index {
                line["replay"] = json!(format!(
                    "kubemock-httpfuzz --seed {} --requests {}",
                    self.seed,
                    index + 1
                ));
            }
        }
        if let Some(file) = &mut self.file {
            writeln!(file, "{line}")?;
            file.flush()?;
        }
        Ok(())
    }
}
