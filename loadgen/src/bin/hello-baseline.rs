//! `hello-baseline`: the axum hello-world server that kubemock's HTTP figures are measured
//! against. It answers `GET /` with a small JSON body and `POST /` (any body, read in full) with
//! 201 and a small JSON body, and prints `hello-baseline: serving on http://HOST:PORT` on stdout
//! when ready, like `kubemock serve`.
//!
//! To keep the comparison fair it runs exactly like `kubemock serve`: the same tokio runtime
//! (`new_multi_thread().enable_all()`, one worker per core), the same axum version and
//! `axum::serve` over a `TcpListener`, spawned as a task. It does nothing kubemock does beyond
//! HTTP (no routing table of its size, no store, no JSON decoding), which is the point: the
//! ratio of kubemock's throughput to this one's is the cost of being an API server.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::get;
use clap::Parser;

/// An axum hello-world server for baseline measurements.
#[derive(Debug, Parser)]
#[command(name = "hello-baseline", about)]
struct Cli {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// The body of every `GET` answer.
const HELLO: &str = r#"{"message":"hello, world"}"#;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The same runtime as kubemock's `main`.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("hello-baseline: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("hello-baseline: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn app() -> Router {
    Router::new().route("/", get(hello).post(accept))
}

async fn hello() -> ([(&'static str, &'static str); 1], &'static str) {
    ([("content-type", "application/json")], HELLO)
}

async fn accept(body: Bytes) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    (
        StatusCode::CREATED,
        [("content-type", "application/json")],
        format!(r#"{{"received":{}}}"#, body.len()),
    )
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(cli.bind, cli.port))
        .await
        .with_context(|| format!("binding {}:{}", cli.bind, cli.port))?;
    let mut addr = listener.local_addr().context("reading the bound address")?;
    if addr.ip().is_unspecified() {
        addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    // Listen for signals before announcing, so a SIGTERM sent right after the ready line
    // shuts down cleanly instead of killing the process.
    let shutdown = shutdown_signal()?;
    let server = tokio::spawn(async move {
        axum::serve(listener, app())
            .with_graceful_shutdown(shutdown)
            .await
    });
    announce(&format!("http://{addr}"));
    server
        .await
        .context("the server task failed")?
        .context("serving")
}

/// Prints the ready line, in the format `kubemock serve` uses.
#[allow(
    clippy::print_stdout,
    reason = "the ready line is the binary's interface"
)]
fn announce(url: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "hello-baseline: serving on {url}");
    let _ = stdout.flush();
}

/// Installs the SIGINT and SIGTERM listeners now; the future completes on either.
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
