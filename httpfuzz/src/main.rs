//! `kubemock-httpfuzz`: the HTTP fuzzer's command line (see the library's documentation).
//! Exits 0 when every finding matched a known signature in force, 1 otherwise, 2 when the run
//! could not be made. `--show INDEX` prints a request of a seed's sequence.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kubemock_httpfuzz::{Config, Server, known};

/// How much of a body `--show` prints.
const SHOWN_BODY_CHARS: usize = 2000;

/// HTTP-level fuzzer for kubemock: mutated valid requests; no 5xx, no panic, /readyz fast,
/// every stored object readable and deletable afterwards.
#[derive(Debug, Parser)]
#[command(name = "kubemock-httpfuzz", version, about)]
struct Cli {
    /// The kubemock binary to start (`serve --port 0 --no-controllers`).
    #[arg(long, conflicts_with = "url")]
    kubemock: Option<PathBuf>,
    /// A server that is already running (`http://HOST:PORT`), instead of --kubemock.
    #[arg(long)]
    url: Option<String>,
    /// An extra argument for `kubemock serve` (repeatable).
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
    /// Seed of the request sequence (default: from the clock; printed either way).
    #[arg(long)]
    seed: Option<u64>,
    /// Requests to send.
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    /// Check /readyz, the process and its log after every this many requests.
    #[arg(long, default_value_t = 500)]
    check_every: u64,
    /// Known bug signatures to count apart: `all`, `none`, or names separated by commas
    /// (`--list-known` shows them).
    #[arg(long, default_value = "all")]
    known: String,
    /// List the known signatures and exit.
    #[arg(long)]
    list_known: bool,
    /// Print request INDEX of the seed's sequence (as generated before any answer is known)
    /// and exit (repeatable).
    #[arg(long, value_name = "INDEX")]
    show: Vec<u64>,
    /// Where to write findings, one JSON line each (default: httpfuzz-SEED.jsonl).
    #[arg(long)]
    repro: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.list_known {
        return finish(list_known(&mut std::io::stdout().lock()));
    }
    let known = match known::parse(&cli.known) {
        Ok(known) => known,
        Err(err) => {
            eprintln!("kubemock-httpfuzz: --known: {err}");
            return ExitCode::from(2);
        }
    };
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    if !cli.show.is_empty() {
        return finish(show(&mut std::io::stdout().lock(), seed, &cli.show));
    }
    let server = match (cli.kubemock, cli.url) {
        (Some(binary), _) => Server::Spawn {
            binary,
            args: cli.serve_args,
        },
        (None, Some(url)) => Server::Url(url),
        (None, None) => {
            eprintln!("kubemock-httpfuzz: --kubemock or --url is required");
            return ExitCode::from(2);
        }
    };
    let config = Config {
        server,
        seed,
        requests: cli.requests,
        check_every: cli.check_every,
        known,
        repro: Some(
            cli.repro
                .unwrap_or_else(|| PathBuf::from(format!("httpfuzz-{seed}.jsonl"))),
        ),
        progress: true,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("kubemock-httpfuzz: cannot start the runtime: {err}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(kubemock_httpfuzz::run(&config)) {
        Ok(report) => {
            let mut stdout = std::io::stdout().lock();
            if let Err(err) = report.write(&mut stdout) {
                eprintln!("kubemock-httpfuzz: {err}");
                return ExitCode::from(2);
            }
            if report.unexplained() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            eprintln!("kubemock-httpfuzz: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Success, or the error and exit code 2.
fn finish(result: std::io::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kubemock-httpfuzz: {err}");
            ExitCode::from(2)
        }
    }
}

fn list_known(out: &mut impl Write) -> std::io::Result<()> {
    for k in known::KNOWN {
        writeln!(out, "{:<28} {}", k.name, k.description)?;
    }
    Ok(())
}

/// Prints requests of `seed`'s sequence, as generated before any answer is known.
fn show(out: &mut impl Write, seed: u64, indices: &[u64]) -> std::io::Result<()> {
    let memory = kubemock_httpfuzz::generate::Memory::default();
    for &index in indices {
        let request = kubemock_httpfuzz::generate::generate(seed, index, &memory);
        writeln!(
            out,
            "#{index} {:?} {} {}",
            request.op, request.method, request.path_and_query
        )?;
        for (name, value) in &request.headers {
            writeln!(out, "{name}: {value}")?;
        }
        if let Some(body) = &request.body {
            let text = String::from_utf8_lossy(body);
            let shown: String = text.chars().take(SHOWN_BODY_CHARS).collect();
            writeln!(out, "({} bytes) {shown}", body.len())?;
        }
        writeln!(out)?;
    }
    Ok(())
}
