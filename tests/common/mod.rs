//! What the binary's tests share: starting `kubemock serve` (the real binary) until its ready
//! line, and running the real kubectl against it with a kubeconfig and a fresh `--cache-dir`
//! (kubectl caches discovery per host:port).
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The binary under test.
pub const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");
/// Deadline of any single wait: generous, because CI machines are slow, and only ever reached
/// when something is broken.
pub const WAIT: Duration = Duration::from_secs(60);
/// What the ready line says before the URL.
const READY: &str = "kubemock: serving on ";

/// Reads `child`'s ready line (its stdout, which must be piped) and returns the URL it serves.
pub async fn ready_url(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("a piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("ready before the deadline")
        .expect("read stdout")
        .expect("a ready line");
    line.strip_prefix(READY)
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
        .to_owned()
}

/// `kubectl --kubeconfig KUBECONFIG --cache-dir CACHE ARGS`: (success, stdout, stderr).
pub async fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let output = tokio::time::timeout(
        WAIT,
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .args(args)
            .output(),
    )
    .await
    .expect("kubectl finished before the deadline")
    .expect("run kubectl (it is preinstalled on the project's machines)");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
