//! The benchmark suite: every figure the HTTP performance targets name, measured in one run,
//! each server a separate process started here, then one table with the ratios against the
//! targets (pass or fail each) and, if asked, the same as JSON.
//!
//! Order: baseline POST, kubemock ephemeral create, baseline GET, kubemock ephemeral GET (of one
//! ConfigMap, in a store that now holds the created ones), each pair back to back; then kubemock
//! durable create, then the startup series.
//! A row with any error fails its target whatever its throughput.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::load::{self, LoadConfig, LoadReport};
use crate::server::{ServerProcess, kubemock_args};
use crate::startup::{self, StartupMode, StartupReport};
use crate::workload::{Scenario, Workload};

/// Ephemeral create must reach this share of the baseline's POST throughput.
const CREATE_VS_BASELINE: f64 = 0.25;
/// GET must reach this share of the baseline's GET throughput.
const GET_VS_BASELINE: f64 = 0.50;
/// Durable creates per second required.
const DURABLE_CREATES_PER_SECOND: f64 = 10_000.0;
/// Longest acceptable median from spawn to the first 200 on `/readyz`, milliseconds.
const STARTUP_MS: f64 = 10.0;

/// What the suite runs.
#[derive(Debug, Clone)]
pub(crate) struct SuiteConfig {
    /// The `kubemock` binary.
    pub(crate) kubemock: PathBuf,
    /// The `hello-baseline` binary.
    pub(crate) baseline: PathBuf,
    /// Shape of every load run.
    pub(crate) load: LoadConfig,
    /// Timed starts per startup mode.
    pub(crate) startup_runs: usize,
    /// Worker threads of the load generator's runtime (for the report).
    pub(crate) client_threads: usize,
}

/// Everything the suite measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SuiteReport {
    /// Cores the machine has (the generator and the servers share them).
    pub(crate) cores: usize,
    /// Worker threads of the load generator.
    pub(crate) client_threads: usize,
    /// Baseline `GET /`.
    pub(crate) baseline_get: LoadReport,
    /// Baseline `POST /`.
    pub(crate) baseline_post: LoadReport,
    /// kubemock, ephemeral store: create ConfigMaps.
    pub(crate) ephemeral_create: LoadReport,
    /// kubemock, ephemeral store: GET one ConfigMap.
    pub(crate) ephemeral_get: LoadReport,
    /// kubemock, durable store: create ConfigMaps.
    pub(crate) durable_create: LoadReport,
    /// Startup series, one per mode.
    pub(crate) startup: Vec<StartupReport>,
    /// The targets, evaluated.
    pub(crate) targets: Vec<Target>,
}

/// One performance target, evaluated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Target {
    /// What is measured.
    pub(crate) name: String,
    /// The requirement, for people.
    pub(crate) required: String,
    /// The measured figure, for people.
    pub(crate) measured: String,
    /// Met, and measured without errors.
    pub(crate) pass: bool,
}

/// Runs the suite.
pub(crate) async fn run(config: &SuiteConfig) -> anyhow::Result<SuiteReport> {
    // Both servers run side by side (an idle one costs nothing) so that each kubemock row
    // directly follows the baseline row it is compared with: on a shared machine, load from
    // elsewhere then skews both alike.
    let mut baseline = ServerProcess::start(&config.baseline, &[]).await?;
    let mut ephemeral = ServerProcess::start(&config.kubemock, &kubemock_args(None)).await?;
    let baseline_post = load_run(&mut baseline, Scenario::BaselinePost, config.load).await?;
    let ephemeral_create = load_run(&mut ephemeral, Scenario::Create, config.load).await?;
    let baseline_get = load_run(&mut baseline, Scenario::BaselineGet, config.load).await?;
    let ephemeral_get = load_run(&mut ephemeral, Scenario::Get, config.load).await?;
    baseline.stop().await.context("stopping the baseline")?;
    ephemeral
        .stop()
        .await
        .context("stopping kubemock (ephemeral)")?;

    let data_dir = tempfile::tempdir().context("creating a data directory")?;
    let mut durable =
        ServerProcess::start(&config.kubemock, &kubemock_args(Some(data_dir.path()))).await?;
    let durable_create = load_run(&mut durable, Scenario::Create, config.load).await?;
    durable
        .stop()
        .await
        .context("stopping kubemock (durable)")?;
    drop(data_dir);

    let mut startup = Vec::new();
    for mode in [
        StartupMode::Ephemeral,
        StartupMode::DurableFresh,
        StartupMode::DurableReopen,
    ] {
        progress(&format!("startup {} x{}", mode.name(), config.startup_runs));
        startup.push(startup::measure(&config.kubemock, mode, config.startup_runs).await?);
    }

    let targets = evaluate(
        &baseline_get,
        &baseline_post,
        &ephemeral_create,
        &ephemeral_get,
        &durable_create,
        &startup,
    );
    Ok(SuiteReport {
        cores: std::thread::available_parallelism().map_or(0, usize::from),
        client_threads: config.client_threads,
        baseline_get,
        baseline_post,
        ephemeral_create,
        ephemeral_get,
        durable_create,
        startup,
        targets,
    })
}

async fn load_run(
    server: &mut ServerProcess,
    scenario: Scenario,
    config: LoadConfig,
) -> anyhow::Result<LoadReport> {
    progress(&format!(
        "{} @{} against {} ({:?} warm-up, {:?} measured)",
        scenario.name(),
        config.connections,
        server.addr(),
        config.warmup,
        config.duration
    ));
    let report = load::run(
        server.addr(),
        Workload::new(scenario, server.addr()),
        config,
        server.pid(),
    )
    .await;
    let report = match report {
        Ok(report) => report,
        Err(err) => {
            return Err(err.context(format!(
                "scenario {} ({})",
                scenario.name(),
                server.diagnose()
            )));
        }
    };
    progress(&format!(
        "  {:.0} req/s, {} errors",
        report.rps, report.errors
    ));
    Ok(report)
}

fn progress(message: &str) {
    eprintln!("kubemock-loadgen: {message}");
}

fn evaluate(
    baseline_get: &LoadReport,
    baseline_post: &LoadReport,
    create: &LoadReport,
    get: &LoadReport,
    durable: &LoadReport,
    startup: &[StartupReport],
) -> Vec<Target> {
    let clean = |reports: &[&LoadReport]| reports.iter().all(|r| r.errors == 0);
    let ratio = |a: &LoadReport, b: &LoadReport| if b.rps > 0.0 { a.rps / b.rps } else { 0.0 };
    let c = create.connections;
    let mut targets = vec![
        Target {
            name: format!("ephemeral create@{c} / baseline POST@{c}"),
            required: format!(">= {:.0} %", CREATE_VS_BASELINE * 100.0),
            measured: format!("{:.1} %", ratio(create, baseline_post) * 100.0),
            pass: ratio(create, baseline_post) >= CREATE_VS_BASELINE
                && clean(&[create, baseline_post]),
        },
        Target {
            name: format!("GET@{c} / baseline GET@{c}"),
            required: format!(">= {:.0} %", GET_VS_BASELINE * 100.0),
            measured: format!("{:.1} %", ratio(get, baseline_get) * 100.0),
            pass: ratio(get, baseline_get) >= GET_VS_BASELINE && clean(&[get, baseline_get]),
        },
        Target {
            name: format!("durable create@{c}"),
            required: format!(">= {DURABLE_CREATES_PER_SECOND:.0} /s"),
            measured: format!("{:.0} /s", durable.rps),
            pass: durable.rps >= DURABLE_CREATES_PER_SECOND && clean(&[durable]),
        },
    ];
    for report in startup {
        targets.push(Target {
            name: format!("startup {} (median)", report.mode.name()),
            required: format!("<= {STARTUP_MS:.0} ms"),
            measured: format!("{:.2} ms", report.first_ok_ms.median),
            pass: report.first_ok_ms.median <= STARTUP_MS,
        });
    }
    targets
}

/// Writes the report as a table.
pub(crate) fn write_table(out: &mut impl Write, report: &SuiteReport) -> std::io::Result<()> {
    let first = &report.baseline_get;
    writeln!(
        out,
        "kubemock HTTP benchmark: {} connections, {:.0} s measured per row after warm-up; \
         load generator with {} worker thread(s) on the same {}-core machine",
        first.connections, first.duration_s, report.client_threads, report.cores
    )?;
    writeln!(out)?;
    write_load_header(out)?;
    for (label, row) in [
        ("baseline GET /", &report.baseline_get),
        ("baseline POST /", &report.baseline_post),
        ("kubemock ephemeral create", &report.ephemeral_create),
        ("kubemock ephemeral GET", &report.ephemeral_get),
        ("kubemock durable create", &report.durable_create),
    ] {
        write_load_row(out, label, row)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<36} {:>8} {:>8} {:>8} {:>8}   (ready line median)",
        "startup: spawn -> first 200 /readyz", "min ms", "median", "p90", "max"
    )?;
    for row in &report.startup {
        writeln!(
            out,
            "{:<36} {:>8.2} {:>8.2} {:>8.2} {:>8.2}   ({:.2} ms, {} runs)",
            row.mode.name(),
            row.first_ok_ms.min,
            row.first_ok_ms.median,
            row.first_ok_ms.p90,
            row.first_ok_ms.max,
            row.ready_line_ms.median,
            row.runs
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<44} {:>12} {:>12}  result",
        "target", "required", "measured"
    )?;
    for target in &report.targets {
        writeln!(
            out,
            "{:<44} {:>12} {:>12}  {}",
            target.name,
            target.required,
            target.measured,
            if target.pass { "PASS" } else { "FAIL" }
        )?;
    }
    let mut failed = Vec::new();
    for (label, row) in [
        ("baseline GET", &report.baseline_get),
        ("baseline POST", &report.baseline_post),
        ("ephemeral create", &report.ephemeral_create),
        ("ephemeral GET", &report.ephemeral_get),
        ("durable create", &report.durable_create),
    ] {
        if let Some(error) = &row.first_error {
            failed.push(format!("{label}: {} errors, first: {error}", row.errors));
        }
    }
    if !failed.is_empty() {
        writeln!(out)?;
        writeln!(out, "errors:")?;
        for line in failed {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// The header of load rows.
pub(crate) fn write_load_header(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<32} {:>9} {:>7} {:>7} {:>7} {:>7}  {:>10} {:>10}  {:>9} {:>9}",
        "scenario",
        "req/s",
        "errors",
        "p50 ms",
        "p99 ms",
        "max ms",
        "client cpu",
        "server cpu",
        "client us",
        "server us"
    )?;
    writeln!(
        out,
        "{:<32} {:>9} {:>7} {:>7} {:>7} {:>7}  {:>10} {:>10}  {:>9} {:>9}",
        "", "", "", "", "", "", "(cores)", "(cores)", "per req", "per req"
    )
}

/// One load row.
pub(crate) fn write_load_row(
    out: &mut impl Write,
    label: &str,
    row: &LoadReport,
) -> std::io::Result<()> {
    let opt = |v: Option<f64>, precision: usize| {
        v.map_or_else(|| "-".to_owned(), |v| format!("{v:.precision$}"))
    };
    writeln!(
        out,
        "{:<32} {:>9.0} {:>7} {:>7.2} {:>7.2} {:>7.1}  {:>10} {:>10}  {:>9} {:>9}",
        label,
        row.rps,
        row.errors,
        row.latency_ms.p50,
        row.latency_ms.p99,
        row.latency_ms.max,
        opt(row.client_cpu_cores, 2),
        opt(row.server_cpu_cores, 2),
        opt(row.client_cpu_us_per_request, 1),
        opt(row.server_cpu_us_per_request, 1)
    )
}

/// Writes `value` as pretty JSON to `path` (`-` for stdout).
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    if path == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{json}")?;
    } else {
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
