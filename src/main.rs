//! `kubemock`: the composition root. Parses the command line, installs the tracing subscriber,
//! opens the store, serves the API, and shuts down in order on SIGINT/SIGTERM: stop accepting,
//! end watches, then flush and close the store.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use kubemock_apiserver::{NodePortRange, ServerConfig, ServiceCidr};
use kubemock_storage::{Config, SledStore};
use tokio_util::sync::CancellationToken;
use tracing::info;

/// A Kubernetes-compatible API server that starts in milliseconds.
#[derive(Debug, Parser)]
#[command(name = "kubemock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API server.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Data directory for a durable store; without it the store is ephemeral.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Write a kubeconfig whose current context points at the server to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Do not run the in-process controllers (there are none yet; accepted for scripts).
    #[arg(long)]
    no_controllers: bool,
    /// Read-only requests in flight at most (watches not counted); more are answered 429.
    /// 0 is unlimited.
    #[arg(long, default_value_t = kubemock_apiserver::DEFAULT_MAX_REQUESTS_INFLIGHT)]
    max_requests_inflight: usize,
    /// Mutating requests in flight at most; more are answered 429. 0 is unlimited.
    #[arg(long, default_value_t = kubemock_apiserver::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    max_mutating_requests_inflight: usize,
    /// Interval between BOOKMARK events on watches that allow them (`60s`, `500ms`, or plain
    /// seconds); about a minute like the real server unless tests want them sooner.
    #[arg(long, default_value = "60s", value_parser = parse_interval)]
    bookmark_interval: Duration,
    /// The IPv4 range Services get their cluster IPs from; the `kubernetes` Service has its
    /// first address.
    #[arg(long, default_value = kubemock_apiserver::DEFAULT_SERVICE_CLUSTER_IP_RANGE)]
    service_cluster_ip_range: ServiceCidr,
    /// The ports NodePort and LoadBalancer Services get their node ports from.
    #[arg(long, default_value = kubemock_apiserver::DEFAULT_SERVICE_NODE_PORT_RANGE)]
    service_node_port_range: NodePortRange,
}

/// `500ms`, `2s`, `1m`, or a number of seconds; never zero.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale_ms) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60_000)
    } else {
        (text, 1_000)
    };
    let value: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 500ms, 2s or 1m"))?;
    match value.checked_mul(scale_ms) {
        Some(0) => Err("the interval must be more than zero".to_owned()),
        Some(ms) => Ok(Duration::from_millis(ms)),
        None => Err(format!("{text:?} is too long")),
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("kubemock: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kubemock: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = match &args.data_dir {
        Some(dir) => Config::durable(dir),
        None => Config::ephemeral(),
    };
    let store = tokio::task::spawn_blocking(move || SledStore::open(config))
        .await
        .context("opening the store")?
        .context("opening the store")?;
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let mut addr = listener.local_addr().context("reading the bound address")?;
    // Clients cannot connect to the unspecified address: advertise loopback instead.
    if addr.ip().is_unspecified() {
        addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let url = format!("http://{addr}");
    if let Some(path) = &args.kubeconfig_out {
        std::fs::write(path, kubemock_apiserver::kubeconfig(&url))
            .with_context(|| format!("writing the kubeconfig to {}", path.display()))?;
    }

    let shutdown = CancellationToken::new();
    let server = tokio::spawn(kubemock_apiserver::serve(
        listener,
        Arc::new(store.clone()),
        ServerConfig {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            bookmark_interval: args.bookmark_interval,
            service_cluster_ip_range: args.service_cluster_ip_range,
            service_node_port_range: args.service_node_port_range,
        },
        shutdown.clone(),
    ));
    // Listen before announcing: a signal sent right after the ready line must shut down
    // cleanly, not kill the process with the default action.
    let signalled = shutdown_signal()?;
    announce(&url);
    info!(%url, durable = store.is_durable(), no_controllers = args.no_controllers, "serving");

    signalled.await;
    info!("shutting down");
    shutdown.cancel();
    server
        .await
        .context("the server task failed")?
        .context("serving")?;
    store.close();
    info!("stopped");
    Ok(())
}

/// Prints the one line that scripts and tests wait for.
#[allow(
    clippy::print_stdout,
    reason = "the ready line is the binary's interface"
)]
fn announce(url: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "kubemock: serving on {url}");
    let _ = stdout.flush();
}

/// Installs the SIGINT and SIGTERM listeners now; the returned future completes on either.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_with_units() {
        assert_eq!(parse_interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_interval("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_interval("3"), Ok(Duration::from_secs(3)));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("soon").is_err());
    }
}
