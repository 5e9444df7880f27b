//! The benchmark suite: every figure the HTTP performance targets name, measured in one run,
//! each server a separate process started here, then one table with the ratios against the
//! targets (pass or fail each) and, if asked, the same as JSON.
//!
//! Order, per round: baseline POST, kubemock ephemeral create, kubemock secure create (TLS, a
//! static token's user that RBAC authorizes through a RoleBinding), baseline GET, kubemock
//! ephemeral GET (of one ConfigMap, in a store that now holds the created ones), kubemock
//! secure GET, each group back to back, then kubemock durable create, then (with `--etcd`)
//! kubemock over a real etcd, create and GET (its rows have no target: they show what the
//! etcd backend costs beside the embedded store; the server CPU column is kubemock's alone,
//! etcd's own is not counted); after the rounds, the startup series (the secure ones too).
//! Targets use the median over rounds.
//! A row with any error fails its target whatever its throughput.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::etcd::EtcdProcess;
use crate::http::Endpoint;
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
/// The same in the secure mode (key generation and a TLS handshake included): the security
/// issue's target.
const SECURE_STARTUP_MS: f64 = 15.0;
/// The secure mode's create and GET must reach this share of the plain mode's (the security
/// issue's target, there with RBAC).
const SECURE_VS_PLAIN: f64 = 0.70;
/// The user the secure rows' requests are made by: a static token (`--token-auth-file`), not
/// in `system:masters`, so RBAC decides every request; a RoleBinding gives it a Role to read
/// and write ConfigMaps in the load's namespace.
const SECURE_USER: &str = "loadgen";
/// The token of [`SECURE_USER`].
const SECURE_TOKEN: &str = "kubemock-loadgen-token";

/// What the suite runs.
#[derive(Debug, Clone)]
pub(crate) struct SuiteConfig {
    /// The `kubemock` binary.
    pub(crate) kubemock: PathBuf,
    /// The `hello-baseline` binary.
    pub(crate) baseline: PathBuf,
    /// Shape of every load run.
    pub(crate) load: LoadConfig,
    /// Rounds of load runs; the targets use the median over rounds.
    pub(crate) rounds: usize,
    /// Timed starts per startup mode.
    pub(crate) startup_runs: usize,
    /// Worker threads of the load generator's runtime (for the report).
    pub(crate) client_threads: usize,
    /// Extra `kubemock serve` arguments (`--no-controllers`).
    pub(crate) serve_args: Vec<String>,
    /// An etcd binary: the "over etcd" rows.
    pub(crate) etcd: Option<PathBuf>,
}

/// Everything the suite measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SuiteReport {
    /// Cores the machine has (the generator and the servers share them).
    pub(crate) cores: usize,
    /// Worker threads of the load generator.
    pub(crate) client_threads: usize,
    /// The load runs, round by round.
    pub(crate) rounds: Vec<Round>,
    /// Startup series, one per mode.
    pub(crate) startup: Vec<StartupReport>,
    /// The targets, evaluated.
    pub(crate) targets: Vec<Target>,
}

/// One round of load runs, in the order they ran.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Round {
    /// Baseline `POST /`.
    pub(crate) baseline_post: LoadReport,
    /// kubemock, ephemeral store: create ConfigMaps.
    pub(crate) ephemeral_create: LoadReport,
    /// kubemock, ephemeral store, secure mode: create ConfigMaps over TLS.
    pub(crate) secure_create: LoadReport,
    /// Baseline `GET /`.
    pub(crate) baseline_get: LoadReport,
    /// kubemock, ephemeral store: GET one ConfigMap.
    pub(crate) ephemeral_get: LoadReport,
    /// kubemock, ephemeral store, secure mode: GET one ConfigMap over TLS.
    pub(crate) secure_get: LoadReport,
    /// kubemock, durable store: create ConfigMaps.
    pub(crate) durable_create: LoadReport,
    /// kubemock over etcd: create ConfigMaps (with `--etcd`).
    pub(crate) etcd_create: Option<LoadReport>,
    /// kubemock over etcd: GET one ConfigMap (with `--etcd`).
    pub(crate) etcd_get: Option<LoadReport>,
}

impl Round {
    fn rows(&self) -> Vec<(&'static str, &LoadReport)> {
        let mut rows = vec![
            ("baseline POST /", &self.baseline_post),
            ("kubemock ephemeral create", &self.ephemeral_create),
            ("kubemock secure create (TLS)", &self.secure_create),
            ("baseline GET /", &self.baseline_get),
            ("kubemock ephemeral GET", &self.ephemeral_get),
            ("kubemock secure GET (TLS)", &self.secure_get),
            ("kubemock durable create", &self.durable_create),
        ];
        if let Some(create) = &self.etcd_create {
            rows.push(("kubemock over etcd create", create));
        }
        if let Some(get) = &self.etcd_get {
            rows.push(("kubemock over etcd GET", get));
        }
        rows
    }
}

/// One performance target, evaluated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Target {
    /// What is measured.
    pub(crate) name: String,
    /// The requirement, for people.
    pub(crate) required: String,
    /// The measured figure (median over rounds), for people.
    pub(crate) measured: String,
    /// For throughput ratios: the same ratio computed from the servers' CPU time per request
    /// instead of their throughput, i.e. what the ratio would be if the load generator cost
    /// nothing and each server had the machine to itself.
    pub(crate) cpu_normalised: Option<String>,
    /// Met, and measured without errors.
    pub(crate) pass: bool,
}

/// Runs the suite.
pub(crate) async fn run(config: &SuiteConfig) -> anyhow::Result<SuiteReport> {
    // All servers run side by side (an idle one costs next to nothing) so that each kubemock
    // row directly follows the baseline row it is compared with: on a shared machine, load
    // from elsewhere then skews both alike, and rounds show how much it moved.
    let data_dir = tempfile::tempdir().context("creating a data directory")?;
    let mut baseline = ServerProcess::start(&config.baseline, &[]).await?;
    let mut ephemeral =
        ServerProcess::start(&config.kubemock, &kubemock_args(None, &config.serve_args)).await?;
    let mut durable = ServerProcess::start(
        &config.kubemock,
        &kubemock_args(Some(data_dir.path()), &config.serve_args),
    )
    .await?;
    let mut secure_args = config.serve_args.clone();
    let secure_kubeconfig = data_dir.path().join("secure.kubeconfig");
    let tokens = data_dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("{SECURE_TOKEN},{SECURE_USER},{SECURE_USER}-uid,\"loadgen-users\"\n"),
    )
    .context("writing the token file")?;
    secure_args.push("--secure".to_owned());
    secure_args.push(format!("--kubeconfig-out={}", secure_kubeconfig.display()));
    secure_args.push(format!("--token-auth-file={}", tokens.display()));
    let mut secure =
        ServerProcess::start(&config.kubemock, &kubemock_args(None, &secure_args)).await?;
    // The secure rows are a user RBAC authorizes (the admin's certificate is in
    // `system:masters`, which skips authorization), over TLS without a client certificate.
    let secure_user = SecureUser {
        endpoint: Endpoint::tls_without_client_certificate(secure.addr(), &secure_kubeconfig)?,
    };
    Workload::new(Scenario::Get, secure.addr())
        .setup_for_user(secure.endpoint(), SECURE_USER)
        .await
        .context("preparing the secure server's user")?;
    let mut over_etcd = match &config.etcd {
        Some(binary) => {
            let etcd = EtcdProcess::start(binary).await?;
            let mut args = config.serve_args.clone();
            args.push(format!("--etcd-servers={}", etcd.url));
            let server = ServerProcess::start(&config.kubemock, &kubemock_args(None, &args))
                .await
                .context("starting kubemock over etcd")?;
            Some((etcd, server))
        }
        None => None,
    };
    let mut rounds = Vec::with_capacity(config.rounds);
    for round in 1..=config.rounds {
        progress(&format!("round {round} of {}", config.rounds));
        let (etcd_create, etcd_get) = match &mut over_etcd {
            Some((_, server)) => (
                Some(load_run(server, Scenario::Create, config.load).await?),
                Some(load_run(server, Scenario::Get, config.load).await?),
            ),
            None => (None, None),
        };
        rounds.push(Round {
            etcd_create,
            etcd_get,
            baseline_post: load_run(&mut baseline, Scenario::BaselinePost, config.load).await?,
            ephemeral_create: load_run(&mut ephemeral, Scenario::Create, config.load).await?,
            secure_create: user_load_run(&mut secure, &secure_user, Scenario::Create, config.load)
                .await?,
            baseline_get: load_run(&mut baseline, Scenario::BaselineGet, config.load).await?,
            ephemeral_get: load_run(&mut ephemeral, Scenario::Get, config.load).await?,
            secure_get: user_load_run(&mut secure, &secure_user, Scenario::Get, config.load)
                .await?,
            durable_create: load_run(&mut durable, Scenario::Create, config.load).await?,
        });
    }
    baseline.stop().await.context("stopping the baseline")?;
    ephemeral
        .stop()
        .await
        .context("stopping kubemock (ephemeral)")?;
    durable
        .stop()
        .await
        .context("stopping kubemock (durable)")?;
    secure.stop().await.context("stopping kubemock (secure)")?;
    if let Some((etcd, server)) = over_etcd {
        server
            .stop()
            .await
            .context("stopping kubemock (over etcd)")?;
        etcd.stop().await?;
    }
    drop(data_dir);

    let mut startup = Vec::new();
    for mode in [
        StartupMode::Ephemeral,
        StartupMode::DurableFresh,
        StartupMode::DurableReopen,
        StartupMode::Secure,
        StartupMode::SecureCertDir,
    ] {
        progress(&format!("startup {} x{}", mode.name(), config.startup_runs));
        startup.push(
            startup::measure_isolated(
                &config.kubemock,
                mode,
                config.startup_runs,
                &config.serve_args,
            )
            .await?,
        );
    }

    let targets = evaluate(&rounds, &startup);
    Ok(SuiteReport {
        cores: std::thread::available_parallelism().map_or(0, usize::from),
        client_threads: config.client_threads,
        rounds,
        startup,
        targets,
    })
}

/// How the secure rows reach their server: as [`SECURE_USER`].
struct SecureUser {
    /// TLS with the server's CA, no client certificate.
    endpoint: Endpoint,
}

async fn load_run(
    server: &mut ServerProcess,
    scenario: Scenario,
    config: LoadConfig,
) -> anyhow::Result<LoadReport> {
    let (endpoint, workload) = (
        server.endpoint().clone(),
        Workload::new(scenario, server.addr()),
    );
    run_against(server, endpoint, workload, config).await
}

/// A run as [`SECURE_USER`] (the server prepared by `setup_for_user`).
async fn user_load_run(
    server: &mut ServerProcess,
    user: &SecureUser,
    scenario: Scenario,
    config: LoadConfig,
) -> anyhow::Result<LoadReport> {
    let workload = Workload::new(scenario, server.addr()).with_token(SECURE_TOKEN);
    run_against(server, user.endpoint.clone(), workload, config).await
}

async fn run_against(
    server: &mut ServerProcess,
    endpoint: Endpoint,
    workload: Workload,
    config: LoadConfig,
) -> anyhow::Result<LoadReport> {
    let scenario = workload.scenario();
    progress(&format!(
        "{} @{} against {endpoint} ({:?} warm-up, {:?} measured)",
        scenario.name(),
        config.connections,
        config.warmup,
        config.duration
    ));
    let report = load::run(endpoint, workload, config, server.pid()).await;
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

pub(crate) fn progress(message: &str) {
    eprintln!("kubemock-loadgen: {message}");
}

/// The median of `values` (the upper one of an even count; 0 when empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn evaluate(rounds: &[Round], startup: &[StartupReport]) -> Vec<Target> {
    // Whether the rows a target uses had no error in any round.
    let clean = |pick: fn(&Round) -> [&LoadReport; 2]| {
        rounds
            .iter()
            .all(|round| pick(round).iter().all(|row| row.errors == 0))
    };
    let c = rounds
        .first()
        .map_or(0, |round| round.baseline_get.connections);
    // kubemock's share of the baseline, from throughput and from server CPU per request.
    let ratios = |pick: fn(&Round) -> (&LoadReport, &LoadReport)| {
        let throughput = median(
            rounds
                .iter()
                .map(|round| {
                    let (ours, base) = pick(round);
                    if base.rps > 0.0 {
                        ours.rps / base.rps
                    } else {
                        0.0
                    }
                })
                .collect(),
        );
        let cpu: Option<Vec<f64>> = rounds
            .iter()
            .map(|round| {
                let (ours, base) = pick(round);
                Some(base.server_cpu_us_per_request? / ours.server_cpu_us_per_request?)
            })
            .collect();
        (throughput, cpu.map(median))
    };
    let percent = |v: f64| format!("{:.1} %", v * 100.0);
    let (create, create_cpu) = ratios(|r| (&r.ephemeral_create, &r.baseline_post));
    let (get, get_cpu) = ratios(|r| (&r.ephemeral_get, &r.baseline_get));
    let (secure_create, secure_create_cpu) = ratios(|r| (&r.secure_create, &r.ephemeral_create));
    let (secure_get, secure_get_cpu) = ratios(|r| (&r.secure_get, &r.ephemeral_get));
    let durable = median(rounds.iter().map(|r| r.durable_create.rps).collect());
    let mut targets = vec![
        Target {
            name: format!("ephemeral create@{c} / baseline POST@{c}"),
            required: format!(">= {:.0} %", CREATE_VS_BASELINE * 100.0),
            measured: percent(create),
            cpu_normalised: create_cpu.map(percent),
            pass: create >= CREATE_VS_BASELINE
                && clean(|r| [&r.ephemeral_create, &r.baseline_post]),
        },
        Target {
            name: format!("GET@{c} / baseline GET@{c}"),
            required: format!(">= {:.0} %", GET_VS_BASELINE * 100.0),
            measured: percent(get),
            cpu_normalised: get_cpu.map(percent),
            pass: get >= GET_VS_BASELINE && clean(|r| [&r.ephemeral_get, &r.baseline_get]),
        },
        Target {
            name: format!("durable create@{c}"),
            required: format!(">= {DURABLE_CREATES_PER_SECOND:.0} /s"),
            measured: format!("{durable:.0} /s"),
            cpu_normalised: None,
            pass: durable >= DURABLE_CREATES_PER_SECOND
                && clean(|r| [&r.durable_create, &r.durable_create]),
        },
        Target {
            name: format!("secure create@{c} / ephemeral create@{c}"),
            required: format!(">= {:.0} %", SECURE_VS_PLAIN * 100.0),
            measured: percent(secure_create),
            cpu_normalised: secure_create_cpu.map(percent),
            pass: secure_create >= SECURE_VS_PLAIN
                && clean(|r| [&r.secure_create, &r.ephemeral_create]),
        },
        Target {
            name: format!("secure GET@{c} / ephemeral GET@{c}"),
            required: format!(">= {:.0} %", SECURE_VS_PLAIN * 100.0),
            measured: percent(secure_get),
            cpu_normalised: secure_get_cpu.map(percent),
            pass: secure_get >= SECURE_VS_PLAIN && clean(|r| [&r.secure_get, &r.ephemeral_get]),
        },
    ];
    for report in startup {
        let limit = match report.mode {
            StartupMode::Secure | StartupMode::SecureCertDir => SECURE_STARTUP_MS,
            _ => STARTUP_MS,
        };
        targets.push(Target {
            name: format!("startup {} (median)", report.mode.name()),
            required: format!("<= {limit:.0} ms"),
            measured: format!("{:.2} ms", report.first_ok_ms.median),
            cpu_normalised: None,
            pass: report.first_ok_ms.median <= limit,
        });
    }
    targets
}

/// Writes the report as a table.
pub(crate) fn write_table(out: &mut impl Write, report: &SuiteReport) -> std::io::Result<()> {
    if let Some(first) = report.rounds.first().map(|round| &round.baseline_get) {
        writeln!(
            out,
            "kubemock HTTP benchmark: {} connections, {} s measured per row after warm-up, \
             {} round(s); load generator with {} worker thread(s) on the same {}-core machine",
            first.connections,
            first.duration_s,
            report.rounds.len(),
            report.client_threads,
            report.cores
        )?;
    }
    writeln!(out)?;
    write_load_header(out)?;
    let many = report.rounds.len() > 1;
    for (index, round) in report.rounds.iter().enumerate() {
        for (label, row) in round.rows() {
            let label = if many {
                format!("{label} (round {})", index + 1)
            } else {
                label.to_owned()
            };
            write_load_row(out, &label, row)?;
        }
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
        "{:<44} {:>12} {:>12}  {:<6}  cpu-normalised",
        "target (median over rounds)", "required", "measured", "result"
    )?;
    for target in &report.targets {
        writeln!(
            out,
            "{:<44} {:>12} {:>12}  {:<6}  {}",
            target.name,
            target.required,
            target.measured,
            if target.pass { "PASS" } else { "FAIL" },
            target.cpu_normalised.as_deref().unwrap_or("")
        )?;
    }
    writeln!(
        out,
        "cpu-normalised: baseline server CPU per request / kubemock server CPU per request, i.e. \
         the ratio if the generator cost nothing"
    )?;
    let mut failed = Vec::new();
    for round in &report.rounds {
        for (label, row) in round.rows() {
            if let Some(error) = &row.first_error {
                failed.push(format!("{label}: {} errors, first: {error}", row.errors));
            }
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
        "{:<36} {:>9} {:>7} {:>7} {:>7} {:>7}  {:>10} {:>10}  {:>9} {:>9}",
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
        "{:<36} {:>9} {:>7} {:>7} {:>7} {:>7}  {:>10} {:>10}  {:>9} {:>9}",
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
        "{:<36} {:>9.0} {:>7} {:>7.2} {:>7.2} {:>7.1}  {:>10} {:>10}  {:>9} {:>9}",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Percentiles;

    fn report(rps: f64, server_us: f64, errors: u64) -> LoadReport {
        LoadReport {
            scenario: "x",
            connections: 64,
            duration_s: 10.0,
            requests: (rps * 10.0) as u64,
            rps,
            errors,
            error_statuses: Default::default(),
            io_errors: errors,
            first_error: None,
            latency_ms: Percentiles::default(),
            client_cpu_cores: None,
            server_cpu_cores: None,
            client_cpu_us_per_request: None,
            server_cpu_us_per_request: Some(server_us),
        }
    }

    fn round(create_rps: f64, errors: u64) -> Round {
        Round {
            baseline_post: report(40_000.0, 10.0, 0),
            ephemeral_create: report(create_rps, 40.0, errors),
            secure_create: report(create_rps * 0.8, 50.0, 0),
            baseline_get: report(60_000.0, 10.0, 0),
            ephemeral_get: report(36_000.0, 20.0, 0),
            secure_get: report(18_000.0, 40.0, 0),
            durable_create: report(12_000.0, 60.0, 0),
            etcd_create: None,
            etcd_get: None,
        }
    }

    #[test]
    fn median_takes_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn targets_use_the_median_round_and_report_the_cpu_normalised_ratio() {
        let rounds = [round(4_000.0, 0), round(12_000.0, 0), round(30_000.0, 0)];
        let targets = evaluate(&rounds, &[]);
        assert_eq!(targets[0].measured, "30.0 %");
        assert_eq!(targets[0].cpu_normalised.as_deref(), Some("25.0 %"));
        assert!(targets[0].pass);
        assert_eq!(targets[1].measured, "60.0 %");
        assert_eq!(targets[1].cpu_normalised.as_deref(), Some("50.0 %"));
        assert!(targets[2].pass);
        assert_eq!(targets[3].measured, "80.0 %");
        assert!(targets[3].pass);
        assert_eq!(
            targets[4].measured, "50.0 %",
            "secure GET at half the plain one"
        );
        assert_eq!(targets[4].cpu_normalised.as_deref(), Some("50.0 %"));
        assert!(!targets[4].pass);
    }

    #[test]
    fn an_error_fails_the_target_of_its_row_whatever_the_throughput() {
        let targets = evaluate(&[round(30_000.0, 1)], &[]);
        assert!(!targets[0].pass, "create had an error");
        assert!(
            targets[1].pass && targets[2].pass,
            "GET and durable had none"
        );
    }
}
