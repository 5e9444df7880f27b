//! `kubemock-loadgen`: the HTTP load generator behind kubemock's performance figures.
//!
//! It is not a general-purpose tool: it speaks just enough HTTP/1.1 (keep-alive, one request in
//! flight per connection) to drive kubemock and the `hello-baseline` server as hard as the
//! machine allows, and reports throughput, every error, latency percentiles and the CPU both
//! sides used, so one can see whether the generator or the server was the limit.
//!
//! Commands:
//! - `suite --kubemock BIN --baseline BIN`: everything the targets need, in one run (see
//!   `suite`); `bench/http.sh` builds the release binaries and runs it.
//! - `load --url URL --scenario S`: one load run against a server that is already running
//!   (`--kubeconfig K` for a secure one).
//! - `startup --kubemock BIN --mode M`: the startup series alone.
//! - `controllers-scale --kubemock BIN --nodes N --deployments D --replicas R`: issue 23's
//!   controller benchmark (`bench/controllers-scale.sh` runs the 10k and 100k shapes).
//! - `watchcheck --kubemock BIN` (or `--url URL`): writers and watchers, then a check that every
//!   watcher saw exactly the acknowledged history (the library's `watchcheck`).
//!
//! # Layout
//! - `http`: the raw keep-alive HTTP/1.1 client connection, plain or TLS.
//! - `workload`: the scenarios' requests and the setup they need.
//! - `load`: a load run: connections, warm-up, measured window, tallies.
//! - `cpu`: process CPU time from `/proc`, for the client-versus-server view.
//! - `server`: a server under test as a child process (ready line, SIGTERM).
//! - `startup`: spawn to first 200 on `/readyz`.
//! - `suite`: the driver, the targets and the table.
//! - `scale`: `controllers-scale`, Deployments to Ready on one kubemock process.
//! - `sidebyside`: `etcd-vs-kubemock`, etcd's gateway and kubemock with the same load.

mod cpu;
mod etcd;
mod fanout;
mod http;
mod load;
mod scale;
mod server;
mod sidebyside;
mod startup;
mod suite;
mod workload;

use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow};
use clap::{Args, Parser, Subcommand};

use crate::load::LoadConfig;
use crate::startup::StartupMode;
use crate::suite::SuiteConfig;
use crate::workload::{Scenario, Workload};

/// HTTP load generator and benchmark driver for kubemock.
#[derive(Debug, Parser)]
#[command(name = "kubemock-loadgen", version, about)]
struct Cli {
    /// Worker threads of the load generator's runtime (1: a single-threaded runtime). Default:
    /// one per core, like the servers' runtimes; on a 2-core machine that drives the baseline as
    /// hard as `wrk -t2` does, where one thread leaves it some 10 % short.
    #[arg(long, global = true)]
    client_threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every benchmark (baseline, kubemock ephemeral and durable, startup) and compare
    /// against the targets.
    Suite(SuiteArgs),
    /// One load run against a server that is already running.
    Load(LoadArgs),
    /// Measure kubemock's startup: spawn to the first 200 on /readyz.
    Startup(StartupArgs),
    /// Writers and reconnecting, relisting watchers against one server, then a check that
    /// every watcher saw exactly the acknowledged history: in order, no gap, no duplicate.
    Watchcheck(WatchcheckArgs),
    /// etcd (HTTP/JSON gateway) and kubemock side by side with the same load: creates, GET,
    /// a page of 500 and a full LIST, with the ratios and issue 23's goals.
    EtcdVsKubemock(EtcdVsKubemockArgs),
    /// One `kubemock serve` (server, controllers, simulated nodes) runs Deployments to Ready:
    /// time to Ready, pods/s and the server's RSS per pod.
    ControllersScale(ControllersScaleArgs),
    /// One `kubemock serve` with W watchers of one resource and paced creates: time from a
    /// create's acknowledgement to its event at the last watcher, and watchers cut off.
    WatchFanOut(WatchFanOutArgs),
}

#[derive(Debug, Args)]
struct WatchFanOutArgs {
    /// The kubemock binary (a release build, for meaningful figures).
    #[arg(long)]
    kubemock: PathBuf,
    /// Watchers of the ConfigMaps in one namespace.
    #[arg(long, default_value_t = 1_000)]
    watchers: usize,
    /// Creates per second.
    #[arg(long, default_value_t = 5_000.0)]
    rate: f64,
    /// Seconds of creates measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of creates before them, left out of the figures.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Connections the creates go out on, one request in flight on each.
    #[arg(long, default_value_t = 32)]
    writers: usize,
    /// An extra argument for `kubemock serve` (repeatable).
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
    /// Also write the report as JSON to this file (`-` for stdout, after the text).
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ControllersScaleArgs {
    /// The kubemock binary (a release build, for meaningful figures).
    #[arg(long)]
    kubemock: PathBuf,
    /// Simulated nodes (each takes up to 110 pods).
    #[arg(long, default_value_t = 100)]
    nodes: usize,
    /// Deployments created.
    #[arg(long, default_value_t = 1)]
    deployments: usize,
    /// Replicas of each Deployment.
    #[arg(long, default_value_t = 10_000)]
    replicas: usize,
    /// Run issue 23's two shapes instead (10,000 pods: 1 Deployment on 100 nodes; 100,000
    /// pods: 100 Deployments of 1,000 on 1,000 nodes) and check its goals.
    #[arg(long, conflicts_with_all = ["nodes", "deployments", "replicas"])]
    issue23: bool,
    /// Seconds the pods may take to become Ready before the run fails.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// An extra argument for `kubemock serve` (repeatable).
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
    /// Keep the server's log (its stderr) of the run in this file (with `--issue23`, one per
    /// shape: `PATH.10000`, `PATH.100000`), to explain a slow run.
    #[arg(long)]
    server_log: Option<PathBuf>,
    /// Also write the report as JSON to this file (`-` for stdout, after the text).
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct EtcdVsKubemockArgs {
    /// The etcd binary (`scripts/install-etcd.sh` installs one).
    #[arg(long)]
    etcd: PathBuf,
    /// The kubemock binary (a release build, for meaningful figures).
    #[arg(long)]
    kubemock: PathBuf,
    /// Seconds measured per load row.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Seconds of warm-up per load row.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Objects loaded for the page and full-LIST rows.
    #[arg(long, default_value_t = 100_000)]
    objects: usize,
    /// Skip the page and full-LIST rows (a quick run).
    #[arg(long)]
    skip_100k: bool,
    /// Also write the report as JSON to this file (`-` for stdout, after the table).
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct WatchcheckArgs {
    /// A running server to check (nothing else may write ConfigMaps in the namespace; for
    /// 410s, start it with short history, see `--kubemock`).
    #[arg(
        long,
        conflicts_with = "kubemock",
        required_unless_present = "kubemock"
    )]
    url: Option<String>,
    /// A kubemock binary to start for the check, with the flags of
    /// `kubemock_loadgen::watchcheck::SERVE_ARGS` (no controllers, 200 revisions of history,
    /// compaction every 100 ms, bookmarks every second).
    #[arg(long)]
    kubemock: Option<PathBuf>,
    /// With `--kubemock`: a durable store (in a temporary data directory).
    #[arg(long, requires = "kubemock")]
    durable: bool,
    /// An extra argument for `kubemock serve` (repeatable; after the defaults, so it wins).
    #[arg(long = "serve-arg", allow_hyphen_values = true, requires = "kubemock")]
    serve_args: Vec<String>,
    /// Concurrent writers.
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Concurrent watchers.
    #[arg(long, default_value_t = 20)]
    watchers: usize,
    /// ConfigMap names the writers choose from.
    #[arg(long, default_value_t = 100)]
    keys: usize,
    /// Seconds of writing.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Longest pause, in milliseconds, of a watcher before it resumes (one resume in five).
    #[arg(long, default_value_t = 1000)]
    max_pause_ms: u64,
    /// Seed of every random choice (default: random, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Namespace to write in (default: `watchcheck-SEED`).
    #[arg(long)]
    namespace: Option<String>,
}

#[derive(Debug, Args)]
struct Shape {
    /// Concurrent keep-alive connections, one request in flight on each.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Seconds of warm-up before the measured window.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
}

impl Shape {
    fn to_config(&self) -> anyhow::Result<LoadConfig> {
        let seconds = |s: f64, what: &str| {
            Duration::try_from_secs_f64(s).map_err(|_| anyhow!("--{what} must be >= 0 seconds"))
        };
        let duration = seconds(self.duration, "duration")?;
        if duration.is_zero() || self.connections == 0 {
            return Err(anyhow!("--duration and --connections must be positive"));
        }
        Ok(LoadConfig {
            connections: self.connections,
            warmup: seconds(self.warmup, "warmup")?,
            duration,
        })
    }
}

#[derive(Debug, Args)]
struct SuiteArgs {
    /// The kubemock binary (a release build, for meaningful figures).
    #[arg(long)]
    kubemock: PathBuf,
    /// The hello-baseline binary, built like kubemock.
    #[arg(long)]
    baseline: PathBuf,
    #[command(flatten)]
    shape: Shape,
    /// Rounds of load runs (on a shared machine, more rounds steady the medians).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Timed starts per startup mode.
    #[arg(long, default_value_t = 20)]
    startup_runs: usize,
    /// Also write the report as JSON to this file (`-` for stdout, after the table).
    #[arg(long)]
    json: Option<PathBuf>,
    /// An extra argument for every `kubemock serve` (repeatable), e.g. `--serve-arg=--no-controllers`
    /// to measure the API server alone.
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
    /// An etcd binary: adds the rows of a `kubemock serve --etcd-servers` over a real etcd
    /// started here (`scripts/install-etcd.sh` installs one; `bench/http.sh` passes it).
    #[arg(long)]
    etcd: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// The server's URL, `http://HOST:PORT` (`https://` with `--kubeconfig`).
    #[arg(long)]
    url: String,
    /// For an `https://` URL: the kubeconfig `kubemock serve --secure --kubeconfig-out`
    /// wrote (its CA and client certificate).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// What to send.
    #[arg(long, value_enum)]
    scenario: Scenario,
    #[command(flatten)]
    shape: Shape,
    /// The server's process id, to report its CPU use.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Also write the report as JSON to this file (`-` for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct StartupArgs {
    /// The kubemock binary.
    #[arg(long)]
    kubemock: PathBuf,
    /// Where the store lives.
    #[arg(long, value_enum, default_value_t = StartupMode::Ephemeral)]
    mode: StartupMode,
    /// Timed starts (after one untimed start).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// An extra argument for `kubemock serve` (repeatable).
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
    /// Also write the report as JSON to this file (`-` for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let client_threads = cli
        .client_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    let runtime = if client_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(client_threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("kubemock-loadgen: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command, client_threads)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kubemock-loadgen: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, client_threads: usize) -> anyhow::Result<()> {
    use std::io::Write;
    match command {
        Command::Suite(args) => {
            let config = SuiteConfig {
                kubemock: args.kubemock,
                baseline: args.baseline,
                load: args.shape.to_config()?,
                rounds: args.rounds.max(1),
                startup_runs: args.startup_runs,
                client_threads,
                serve_args: args.serve_args,
                etcd: args.etcd,
            };
            let report = suite::run(&config).await?;
            let mut stdout = std::io::stdout().lock();
            suite::write_table(&mut stdout, &report)?;
            drop(stdout);
            if let Some(path) = args.json {
                suite::write_json(&path, &report)?;
            }
        }
        Command::EtcdVsKubemock(args) => {
            let shape = Shape {
                connections: 1,
                warmup: args.warmup,
                duration: args.duration,
            };
            let config = sidebyside::SideBySideConfig {
                etcd: args.etcd,
                kubemock: args.kubemock,
                load: shape.to_config()?,
                objects: if args.skip_100k { 0 } else { args.objects },
            };
            let report = sidebyside::run(&config).await?;
            let mut stdout = std::io::stdout().lock();
            sidebyside::write_table(&mut stdout, &report)?;
            drop(stdout);
            if let Some(path) = args.json {
                suite::write_json(&path, &report)?;
            }
        }
        Command::ControllersScale(args) => {
            let config = scale::ScaleConfig {
                kubemock: args.kubemock,
                nodes: args.nodes,
                deployments: args.deployments,
                replicas: args.replicas,
                timeout: Duration::from_secs(args.timeout),
                serve_args: args.serve_args,
                server_log: args.server_log,
            };
            let reports = if args.issue23 {
                scale::run_issue23(&config).await?
            } else {
                vec![scale::run(&config).await?]
            };
            let mut stdout = std::io::stdout().lock();
            for report in &reports {
                scale::write_report(&mut stdout, report)?;
            }
            if args.issue23 {
                scale::write_goals(&mut stdout, &reports)?;
            }
            drop(stdout);
            if let Some(path) = args.json {
                suite::write_json(&path, &reports)?;
            }
        }
        Command::WatchFanOut(args) => {
            let seconds = |value: f64, what: &str| {
                Duration::try_from_secs_f64(value)
                    .map_err(|_| anyhow!("--{what} must be >= 0 seconds"))
            };
            let config = fanout::FanOutConfig {
                kubemock: args.kubemock,
                watchers: args.watchers,
                rate: args.rate,
                duration: seconds(args.duration, "duration")?,
                warmup: seconds(args.warmup, "warmup")?,
                writers: args.writers,
                serve_args: args.serve_args,
            };
            let report = fanout::run(&config).await?;
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "watch fan-out: {report}")?;
            report.write_goal(&mut stdout)?;
            drop(stdout);
            if let Some(path) = args.json {
                suite::write_json(&path, &report)?;
            }
        }
        Command::Load(args) => {
            let (secure, authority) = match (
                args.url.strip_prefix("http://"),
                args.url.strip_prefix("https://"),
            ) {
                (Some(authority), _) => (false, authority),
                (None, Some(authority)) => (true, authority),
                (None, None) => return Err(anyhow!("--url must be http(s)://HOST:PORT")),
            };
            let authority = authority.trim_end_matches('/');
            let addr = authority
                .to_socket_addrs()
                .with_context(|| format!("resolving {authority}"))?
                .next()
                .ok_or_else(|| anyhow!("{authority} resolves to nothing"))?;
            let endpoint = match (secure, &args.kubeconfig) {
                (false, _) => http::Endpoint::plain(addr),
                (true, Some(path)) => http::Endpoint::tls_from_kubeconfig(addr, path)?,
                (true, None) => {
                    return Err(anyhow!("an https:// --url needs --kubeconfig"));
                }
            };
            let report = load::run(
                endpoint,
                Workload::new(args.scenario, addr),
                args.shape.to_config()?,
                args.server_pid,
            )
            .await?;
            let mut stdout = std::io::stdout().lock();
            suite::write_load_header(&mut stdout)?;
            let label = format!("{}@{}", args.scenario.name(), report.connections);
            suite::write_load_row(&mut stdout, &label, &report)?;
            if let Some(error) = &report.first_error {
                writeln!(stdout, "{} errors, first: {error}", report.errors)?;
            }
            drop(stdout);
            if let Some(path) = args.json {
                suite::write_json(&path, &report)?;
            }
        }
        Command::Watchcheck(args) => {
            let seed = args.seed.unwrap_or_else(|| fastrand::u64(..));
            let duration = Duration::try_from_secs_f64(args.duration)
                .map_err(|_| anyhow!("--duration must be >= 0 seconds"))?;
            let data_dir = match args.durable {
                true => Some(tempfile::tempdir().context("creating a data directory")?),
                false => None,
            };
            let server = match &args.kubemock {
                Some(binary) => {
                    let mut extra: Vec<String> = kubemock_loadgen::watchcheck::SERVE_ARGS
                        .iter()
                        .map(|arg| (*arg).to_owned())
                        .collect();
                    extra.extend(args.serve_args.iter().cloned());
                    let serve = server::kubemock_args(data_dir.as_ref().map(|d| d.path()), &extra);
                    Some(server::ServerProcess::start(binary, &serve).await?)
                }
                None => None,
            };
            let url = match (&server, args.url) {
                (Some(server), _) => format!("http://{}", server.addr()),
                (None, Some(url)) => url,
                (None, None) => return Err(anyhow!("--url or --kubemock is required")),
            };
            let config = kubemock_loadgen::watchcheck::Config {
                url,
                namespace: args
                    .namespace
                    .unwrap_or_else(|| format!("watchcheck-{:x}", seed & 0xffff_ffff)),
                writers: args.writers.max(1),
                watchers: args.watchers,
                keys: args.keys.max(1),
                duration,
                max_pause: Duration::from_millis(args.max_pause_ms),
                seed,
                force_relist: false,
            };
            eprintln!(
                "watchcheck: seed {seed}, {} writers, {} watchers, {} keys, {:?}",
                config.writers, config.watchers, config.keys, config.duration
            );
            let report = kubemock_loadgen::watchcheck::run(&config).await;
            if let Some(server) = server {
                server.stop().await?;
            }
            let report = report?;
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "watchcheck (seed {seed}): {report}")?;
            for failure in &report.failures {
                writeln!(stdout, "  {failure}")?;
            }
            if !report.passed() {
                return Err(anyhow!(
                    "the watchers did not see exactly the acknowledged history"
                ));
            }
        }
        Command::Startup(args) => {
            let report =
                startup::measure_isolated(&args.kubemock, args.mode, args.runs, &args.serve_args)
                    .await?;
            let mut stdout = std::io::stdout().lock();
            writeln!(
                stdout,
                "startup {} ({} runs): spawn -> first 200 /readyz min {:.2} ms, median {:.2} ms, \
                 p90 {:.2} ms, max {:.2} ms; ready line median {:.2} ms",
                report.mode.name(),
                report.runs,
                report.first_ok_ms.min,
                report.first_ok_ms.median,
                report.first_ok_ms.p90,
                report.first_ok_ms.max,
                report.ready_line_ms.median
            )?;
            drop(stdout);
            if let Some(path) = args.json {
                suite::write_json(&path, &report)?;
            }
        }
    }
    Ok(())
}
