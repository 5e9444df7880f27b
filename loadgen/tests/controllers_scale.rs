//! `kubemock-loadgen controllers-scale` end to end with a tiny shape: a real kubemock
//! (`KUBEMOCK_BIN`, else the workspace's `target/debug/kubemock`) with two simulated nodes runs
//! two Deployments of five replicas to Ready, and the report has every figure. Without the
//! kubemock binary the test is skipped loudly, unless `KUBEMOCK_REQUIRE_ETCD=1` (as `.ci/run`
//! sets it, and builds the binary): then it fails.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn a_tiny_scale_run_reports_time_to_ready_and_memory() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let kubemock = std::env::var_os("KUBEMOCK_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target/debug/kubemock"));
    if !kubemock.is_file() {
        let required =
            std::env::var_os("KUBEMOCK_REQUIRE_ETCD").is_some_and(|v| !v.is_empty() && v != "0");
        assert!(!required, "the kubemock binary {kubemock:?} is missing");
        eprintln!("SKIPPED controllers_scale: build kubemock (or set KUBEMOCK_BIN)");
        return;
    }
    let json = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kubemock-loadgen"))
        .arg("controllers-scale")
        .arg("--kubemock")
        .arg(&kubemock)
        .args(["--nodes", "2", "--deployments", "2", "--replicas", "5"])
        .args(["--timeout", "120"])
        .arg("--json")
        .arg(json.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json.path()).unwrap()).unwrap();
    let [report] = reports.as_array().unwrap().as_slice() else {
        panic!("one report expected: {reports}");
    };
    assert_eq!(report["pods"], 10, "{report}");
    assert_eq!(report["nodes"], 2, "{report}");
    let ready = report["ready_seconds"].as_f64().unwrap();
    let created = report["created_seconds"].as_f64().unwrap();
    assert!(ready > 0.0 && created <= ready, "{report}");
    assert!(report["rss_ready_kib"].as_u64().unwrap() > 0, "{report}");
    assert!(
        report["rss_peak_kib"].as_u64().unwrap() >= report["rss_ready_kib"].as_u64().unwrap(),
        "{report}"
    );
    // Both nodes were checked, and stayed Ready.
    assert_eq!(report["nodes_not_ready_max"], 0, "{report}");
    assert!(
        stdout.contains("10 pods (2 Deployments of 5) on 2 nodes"),
        "{stdout}"
    );
}
