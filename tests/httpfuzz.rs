//! The HTTP fuzzer's short deterministic run against the real `kubemock serve` binary: a few
//! thousand mutated requests (every verb, patch type, wire format and subresource, wrong
//! types, deep nesting, garbage bodies), then every stored object read as JSON, protobuf and
//! a Table and deleted. It fails on any finding that no known-bug signature explains: a 5xx,
//! a panic, a dead server, a slow `/readyz`, an object that cannot be read or deleted. The long
//! run is `kubemock-httpfuzz --kubemock target/debug/kubemock` (docs/development.md#kubemock-httpfuzz).

use kubemock_httpfuzz::{Config, Server, known};

/// Seed of the CI run: fixed, so a failure here reproduces with
/// `kubemock-httpfuzz --seed 20261126 --requests 3000`.
const SEED: u64 = 20_261_126;
/// Requests of the CI run: a few seconds on a debug build.
const REQUESTS: u64 = 3000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fuzz_run_finds_nothing_unexplained() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        server: Server::Spawn {
            binary: env!("CARGO_BIN_EXE_kubemock").into(),
            args: Vec::new(),
        },
        seed: SEED,
        requests: REQUESTS,
        check_every: 250,
        known: known::KNOWN.to_vec(),
        repro: Some(dir.path().join("findings.jsonl")),
        progress: false,
    };
    let report = kubemock_httpfuzz::run(&config).await.unwrap();
    let mut text = Vec::new();
    report.write(&mut text).unwrap();
    let text = String::from_utf8_lossy(&text);
    println!("{text}");
    assert_eq!(report.requests, REQUESTS, "{text}");
    assert_eq!(report.unexplained(), 0, "{text}");
    // The run got past validation as well as into it, and the sweep had work to do.
    let count = |status: &str| report.statuses.get(status).copied().unwrap_or(0);
    assert!(count("201") > 50 && count("200") > 150, "{text}");
    assert!(count("400") > 100 && count("422") > 100, "{text}");
    assert!(report.sweep.deleted > 50, "{text}");
    assert!(report.readyz_checks >= REQUESTS / 250, "{text}");
}
