//! `kubemock-loadgen controllers-scale` end to end with a tiny shape: a real kubemock
//! (`KUBEMOCK_BIN`, else the workspace's `target/debug/kubemock`) with two simulated nodes runs
//! two Deployments of five replicas to Ready, and the report has every figure. Without the
//! kubemock binary the test is skipped loudly, unless `KUBEMOCK_REQUIRE_ETCD=1` (as `.ci/run`
//! sets it, and builds the binary): then it fails.

mod common;

use std::ffi::OsStr;

#[test]
fn a_tiny_scale_run_reports_time_to_ready_and_memory() {
    let Some(kubemock) = common::kubemock() else {
        assert!(!common::required(), "the kubemock binary is missing");
        eprintln!("SKIPPED controllers_scale: build kubemock (or set KUBEMOCK_BIN)");
        return;
    };
    let (stdout, reports) = common::run_with_report(&[
        OsStr::new("controllers-scale"),
        OsStr::new("--kubemock"),
        kubemock.as_os_str(),
        OsStr::new("--nodes"),
        OsStr::new("2"),
        OsStr::new("--deployments"),
        OsStr::new("2"),
        OsStr::new("--replicas"),
        OsStr::new("5"),
        OsStr::new("--timeout"),
        OsStr::new("120"),
    ]);
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
