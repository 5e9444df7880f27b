//! The watch checker (`kubemock-loadgen watchcheck`, `loadgen/src/watchcheck.rs`) against the
//! real `kubemock serve` binary, briefly: writers, watchers that resume and relist on 410, and
//! the check that each watcher saw exactly the acknowledged history, in order, with no gap and
//! no duplicate. History is kept short, so watchers get 410s; one is made to, at least once.
//! The long run (60 s, 20 watchers) is `kubemock-loadgen watchcheck --kubemock BIN`.

use std::process::Stdio;
use std::time::Duration;

use kubemock_loadgen::watchcheck::{self, Config, SERVE_ARGS};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");

async fn check(durable: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(BINARY);
    command.args(["serve", "--port", "0"]).args(SERVE_ARGS);
    if durable {
        command.arg("--data-dir").arg(dir.path());
    }
    let mut server = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock");
    let stdout = server.stdout.take().expect("stdout");
    let line = tokio::time::timeout(
        Duration::from_secs(60),
        BufReader::new(stdout).lines().next_line(),
    )
    .await
    .expect("ready line before the deadline")
    .expect("read stdout")
    .expect("a ready line");
    let url = line
        .strip_prefix("kubemock: serving on ")
        .expect("the ready line")
        .to_owned();
    let seed = std::env::var("KUBEMOCK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("watchcheck: seed {seed} (replay with KUBEMOCK_TEST_SEED={seed})");
    let config = Config {
        url,
        namespace: "watchcheck".to_owned(),
        writers: 2,
        watchers: 4,
        keys: 30,
        duration: Duration::from_secs(3),
        max_pause: Duration::from_millis(500),
        seed,
        force_relist: true,
    };
    let report = watchcheck::run(&config).await.expect("the run completes");
    server.start_kill().expect("stop the server");
    eprintln!("watchcheck: {report}");
    assert!(report.passed(), "{report}\n{:#?}", report.failures);
    assert!(
        report.relists >= 1,
        "a watcher was made to relist: {report}"
    );
    assert!(report.events > 0 && report.deletes > 0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_see_exactly_the_acknowledged_history_across_resumes_and_relists_ephemeral() {
    check(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_see_exactly_the_acknowledged_history_across_resumes_and_relists_durable() {
    check(true).await;
}
