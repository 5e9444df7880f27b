//! `kubemock`: the composition root. Parses the command line, installs the tracing subscriber,
//! opens the store, serves the API, and shuts down in order on SIGINT/SIGTERM: stop accepting,
//! end watches, then flush and close the store.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use kubemock_apiserver::ServerConfig;
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
        ServerConfig::default(),
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
