//! What the load generator's end-to-end tests share: finding the binaries they drive (skipped
//! loudly when missing, unless `KUBEMOCK_REQUIRE_ETCD=1`, as `.ci/run` sets it and builds
//! them: then a missing binary fails), and running the load generator to a JSON report.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

/// Whether a missing binary fails the test rather than skipping it.
pub(crate) fn required() -> bool {
    std::env::var_os("KUBEMOCK_REQUIRE_ETCD").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The file `env` names, else `fallback`, if it exists.
pub(crate) fn binary(env: &str, fallback: Option<PathBuf>) -> Option<PathBuf> {
    std::env::var_os(env)
        .map(PathBuf::from)
        .or(fallback)
        .filter(|path| path.is_file())
}

/// The kubemock binary: `KUBEMOCK_BIN`, else the workspace's `target/debug/kubemock`.
pub(crate) fn kubemock() -> Option<PathBuf> {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    binary(
        "KUBEMOCK_BIN",
        Some(workspace.join("target/debug/kubemock")),
    )
}

/// Runs `kubemock-loadgen ARGS... --json FILE`, which must succeed; its stdout and the report
/// it wrote.
pub(crate) fn run_with_report(args: &[&OsStr]) -> (String, serde_json::Value) {
    let json = tempfile::NamedTempFile::new().expect("a temporary file for the report");
    let out = Command::new(env!("CARGO_BIN_EXE_kubemock-loadgen"))
        .args(args)
        .arg("--json")
        .arg(json.path())
        .output()
        .expect("running kubemock-loadgen");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read(json.path()).expect("reading the report");
    let report = serde_json::from_slice(&written).expect("the report is JSON");
    (stdout, report)
}
