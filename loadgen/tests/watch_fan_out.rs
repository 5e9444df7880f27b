//! `kubemock-loadgen watch-fan-out` end to end with a tiny shape: a real kubemock
//! (`KUBEMOCK_BIN`, else the workspace's `target/debug/kubemock`) with five watchers of its
//! ConfigMaps and 50 creates a second for two seconds; every create reaches every watcher,
//! none is cut off, and the report has every figure. Without the kubemock binary the test is
//! skipped loudly, unless `KUBEMOCK_REQUIRE_ETCD=1` (as `.ci/run` sets it, and builds the
//! binary): then it fails.

mod common;

use std::ffi::OsStr;

#[test]
fn a_tiny_fan_out_run_delivers_every_create_to_every_watcher() {
    let Some(kubemock) = common::kubemock() else {
        assert!(!common::required(), "the kubemock binary is missing");
        eprintln!("SKIPPED watch_fan_out: build kubemock (or set KUBEMOCK_BIN)");
        return;
    };
    let args = [
        "--watchers",
        "5",
        "--rate",
        "50",
        "--duration",
        "2",
        "--warmup",
        "0.2",
    ];
    let mut command = vec![
        OsStr::new("watch-fan-out"),
        OsStr::new("--kubemock"),
        kubemock.as_os_str(),
        OsStr::new("--writers"),
        OsStr::new("4"),
    ];
    command.extend(args.iter().map(OsStr::new));
    let (stdout, report) = common::run_with_report(&command);
    assert_eq!(report["watchers"], 5, "{report}");
    assert_eq!(report["creates"], 100, "{report}");
    assert_eq!(report["watchers_cut_off"], 0, "{report}");
    assert_eq!(report["creates_not_delivered"], 0, "{report}");
    let (p50, p99, max) = (
        report["p50_ms"].as_f64().unwrap(),
        report["p99_ms"].as_f64().unwrap(),
        report["max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{report}");
    assert!(report["achieved_rate"].as_f64().unwrap() > 0.0, "{report}");
    assert!(stdout.contains("watch fan-out: 5 watchers"), "{stdout}");
    assert!(stdout.contains("goal (issue 23"), "{stdout}");
}
