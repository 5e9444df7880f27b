//! `kubemock`: the composition root. Parses the command line, installs the tracing subscriber,
//! and starts the subsystems in order. The API server arrives with its own issue; until then
//! `serve` says so plainly instead of pretending to serve.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A Kubernetes-compatible API server that starts in milliseconds.
#[derive(Debug, Parser)]
#[command(name = "kubemock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API server (and, later, the in-process controllers).
    Serve,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve => {
            eprintln!(
                "kubemock serve: not yet — the API server is not implemented in this build \
                 (only the revisioned store, kubemock-storage, has landed; see README.md)"
            );
            ExitCode::from(2)
        }
    }
}
