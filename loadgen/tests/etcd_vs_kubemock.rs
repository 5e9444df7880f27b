//! `kubemock-loadgen etcd-vs-kubemock` end to end with tiny sizes: a real etcd
//! (`KUBEMOCK_ETCD_BIN`) and a real kubemock (`KUBEMOCK_BIN`, else the workspace's
//! `target/debug/kubemock`), every row with non-zero figures and no errors. Without etcd or
//! kubemock the test is skipped loudly, unless `KUBEMOCK_REQUIRE_ETCD=1` (as `.ci/run` sets,
//! see `storage-etcd/src/testing.rs`): then it fails.

mod common;

use std::ffi::OsStr;

#[test]
fn every_row_of_a_tiny_side_by_side_run_has_figures_and_no_errors() {
    let etcd = common::binary("KUBEMOCK_ETCD_BIN", None);
    let (Some(etcd), Some(kubemock)) = (etcd, common::kubemock()) else {
        assert!(
            !common::required(),
            "KUBEMOCK_REQUIRE_ETCD is set but KUBEMOCK_ETCD_BIN or the kubemock binary is missing"
        );
        eprintln!(
            "SKIPPED etcd_vs_kubemock: set KUBEMOCK_ETCD_BIN (scripts/install-etcd.sh) and build kubemock (or set KUBEMOCK_BIN)"
        );
        return;
    };
    let mut command = vec![
        OsStr::new("etcd-vs-kubemock"),
        OsStr::new("--etcd"),
        etcd.as_os_str(),
        OsStr::new("--kubemock"),
        kubemock.as_os_str(),
    ];
    let sizes = ["--duration", "1", "--warmup", "0.2", "--objects", "1000"];
    command.extend(sizes.iter().map(OsStr::new));
    let (stdout, report) = common::run_with_report(&command);
    let pairs = report["pairs"].as_array().unwrap();
    // 3 concurrencies x 2 create rows, GET, page p50 and p99, full LIST.
    assert_eq!(pairs.len(), 10, "{stdout}");
    let no_fsync = report["etcd_no_fsync"].as_bool().unwrap();
    for pair in pairs {
        assert_eq!(pair["errors"], 0, "{pair}");
        assert!(pair["kubemock"].as_f64().unwrap() > 0.0, "{pair}");
        let etcd_missing_allowed = !no_fsync && pair["name"].as_str().unwrap().contains("no-fsync");
        if !etcd_missing_allowed {
            assert!(pair["etcd"].as_f64().unwrap() > 0.0, "{pair}");
        }
    }
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(run["errors"], 0, "{run}");
        assert!(run["requests"].as_u64().unwrap() > 0, "{run}");
    }
    assert_eq!(report["goals"].as_array().unwrap().len(), 5);
    assert!(stdout.contains("km/etcd"), "{stdout}");
}
