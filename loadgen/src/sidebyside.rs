//! `etcd-vs-kubemock`: etcd and kubemock side by side, one client, rows in turn (issue 23's
//! scale acceptance, `docs/benchmarks.md`). etcd is driven through its HTTP/JSON gateway
//! (`/v3/kv/put`, `/v3/kv/range`; the messages are `api/etcdserverpb/rpc.proto`'s), kubemock
//! through its REST API, with the same load generator (`load`) and the same concurrency per
//! pair. It prints each pair's figures, the ratio kubemock/etcd and issue 23's goals.
//!
//! Not built: kubemock has no "durable without fsync" mode (`kubemock serve --help`), so the
//! no-fsync row shows ephemeral create; etcd 3.4 has no `--unsafe-no-fsync`, so with such an
//! etcd that row's etcd figure is reported as not measured.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::etcd::EtcdProcess;
use crate::http::{Connection, Endpoint};
use crate::load::{self, LoadConfig, LoadReport, Percentiles};
use crate::server::{NO_INFLIGHT_LIMITS, ServerProcess, kubemock_args};
use crate::suite::progress;
use crate::workload::{Scenario, Workload, configmap_json, etcd_put_body, write_head};

/// Concurrencies of the create rows.
const CREATE_CONCURRENCY: [usize; 3] = [1, 64, 256];
/// Concurrency of the GET row.
const GET_CONCURRENCY: usize = 64;
/// Objects per page.
const PAGE: usize = 500;
/// Connections that load the big set.
const LOADERS: usize = 64;
/// Full LISTs measured per side.
const FULL_LISTS: usize = 3;
/// The etcd prefix of the big set.
const BIG_PREFIX: &str = "/registry/configmaps/big/";
/// The namespace of kubemock's big set.
const BIG_NAMESPACE: &str = "big";

/// How a side-by-side run is shaped.
#[derive(Debug, Clone)]
pub(crate) struct SideBySideConfig {
    pub(crate) etcd: PathBuf,
    pub(crate) kubemock: PathBuf,
    /// Warm-up and window of every load row (`connections` is set per row).
    pub(crate) load: LoadConfig,
    /// Objects of the page and full-LIST rows; 0 skips them.
    pub(crate) objects: usize,
}

/// One pair: etcd's and kubemock's figure of the same operation.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Pair {
    pub(crate) name: String,
    /// What the figures are (`req/s`, `ms/page`, ...).
    pub(crate) unit: &'static str,
    pub(crate) etcd: Option<f64>,
    pub(crate) kubemock: Option<f64>,
    /// Errors on both sides.
    pub(crate) errors: u64,
    /// Why a side is missing or stands in for another, if so.
    pub(crate) note: Option<String>,
}

impl Pair {
    /// kubemock / etcd, when both were measured and etcd's is not zero.
    pub(crate) fn ratio(&self) -> Option<f64> {
        match (self.kubemock, self.etcd) {
            (Some(k), Some(e)) if e > 0.0 => Some(k / e),
            _ => None,
        }
    }
}

/// A goal of issue 23 and whether it was met.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Goal {
    pub(crate) name: &'static str,
    pub(crate) required: String,
    pub(crate) measured: String,
    /// `None` when a figure it needs was not measured.
    pub(crate) pass: Option<bool>,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SideBySideReport {
    pub(crate) etcd_no_fsync: bool,
    pub(crate) objects: usize,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) runs: Vec<LoadReport>,
    pub(crate) goals: Vec<Goal>,
}

/// Runs every row.
pub(crate) async fn run(config: &SideBySideConfig) -> anyhow::Result<SideBySideReport> {
    let no_fsync = EtcdProcess::supports_no_fsync(&config.etcd).await;
    let data_dir = tempfile::tempdir().context("creating a data directory")?;
    let etcd = EtcdProcess::start(&config.etcd).await?;
    let etcd_fast = match no_fsync {
        true => Some(EtcdProcess::start_with(&config.etcd, &["--unsafe-no-fsync"]).await?),
        false => {
            progress("this etcd has no --unsafe-no-fsync (etcd 3.4): that row is not measured");
            None
        }
    };
    // etcd has no in-flight limit; kubemock's, as kube-apiserver's, answers 429 past 200
    // mutating requests at once, which the c=256 rows would hit whenever the server falls
    // behind. Off, so that both sides are measured on the same load.
    let quiet: Vec<String> = ["--no-controllers"]
        .iter()
        .chain(NO_INFLIGHT_LIMITS.iter())
        .map(|arg| (*arg).to_owned())
        .collect();
    let mut durable = ServerProcess::start(
        &config.kubemock,
        &kubemock_args(Some(data_dir.path()), &quiet),
    )
    .await?;
    let mut ephemeral =
        ServerProcess::start(&config.kubemock, &kubemock_args(None, &quiet)).await?;

    let mut pairs = Vec::new();
    let mut runs = Vec::new();
    for connections in CREATE_CONCURRENCY {
        let shape = LoadConfig {
            connections,
            ..config.load
        };
        let put = etcd_run(&etcd, Scenario::EtcdPut, shape).await?;
        let fast = match &etcd_fast {
            Some(fast) => Some(etcd_run(fast, Scenario::EtcdPut, shape).await?),
            None => None,
        };
        let km_durable = server_run(&mut durable, Scenario::Create, shape).await?;
        let km_ephemeral = server_run(&mut ephemeral, Scenario::Create, shape).await?;
        pairs.push(load_pair(
            format!("create c={connections} durable (etcd fsync)"),
            Some(&put),
            &km_durable,
            None,
        ));
        let mut note = "kubemock has no durable-without-fsync mode: ephemeral shown".to_owned();
        if fast.is_none() {
            note.push_str("; this etcd has no --unsafe-no-fsync");
        }
        pairs.push(load_pair(
            format!("create c={connections} no-fsync/ephemeral"),
            fast.as_ref(),
            &km_ephemeral,
            Some(note),
        ));
        runs.extend([put, km_durable, km_ephemeral]);
        runs.extend(fast);
    }
    let shape = LoadConfig {
        connections: GET_CONCURRENCY,
        ..config.load
    };
    let range = etcd_run(&etcd, Scenario::EtcdRange, shape).await?;
    let get = server_run(&mut durable, Scenario::Get, shape).await?;
    pairs.push(load_pair(
        format!("GET one object c={GET_CONCURRENCY}"),
        Some(&range),
        &get,
        None,
    ));
    runs.extend([range, get]);

    if config.objects > 0 {
        let etcd_addr = etcd.addr()?;
        let etcd_endpoint = Endpoint::plain(etcd_addr);
        let km_endpoint = durable.endpoint().clone();
        let km_addr = durable.addr();
        progress(&format!("loading {} objects into each", config.objects));
        load_big_set(&etcd_endpoint, etcd_addr, config.objects, Side::Etcd).await?;
        load_big_set(&km_endpoint, km_addr, config.objects, Side::Kubemock).await?;
        let window = config.load.duration;
        progress("pages");
        let etcd_page = time_requests(
            &etcd_endpoint,
            &list_request(Side::Etcd, etcd_addr, PAGE),
            window,
            1,
        )
        .await?;
        let km_page = time_requests(
            &km_endpoint,
            &list_request(Side::Kubemock, km_addr, PAGE),
            window,
            1,
        )
        .await?;
        let at = config.objects;
        pairs.push(time_pair(
            format!("page of {PAGE} at {at} (p50)"),
            "ms/page",
            etcd_page.p50,
            km_page.p50,
        ));
        pairs.push(time_pair(
            format!("page of {PAGE} at {at} (p99)"),
            "ms/page",
            etcd_page.p99,
            km_page.p99,
        ));
        progress("full lists");
        let etcd_list = time_requests(
            &etcd_endpoint,
            &list_request(Side::Etcd, etcd_addr, 0),
            Duration::ZERO,
            FULL_LISTS,
        )
        .await?;
        let km_list = time_requests(
            &km_endpoint,
            &list_request(Side::Kubemock, km_addr, 0),
            Duration::ZERO,
            FULL_LISTS,
        )
        .await?;
        let per_object = |ms: f64| ms * 1000.0 / at as f64;
        pairs.push(time_pair(
            format!("full LIST of {at} (median)"),
            "us/object",
            per_object(etcd_list.p50),
            per_object(km_list.p50),
        ));
    }

    durable
        .stop()
        .await
        .context("stopping kubemock (durable)")?;
    ephemeral
        .stop()
        .await
        .context("stopping kubemock (ephemeral)")?;
    etcd.stop().await?;
    if let Some(fast) = etcd_fast {
        fast.stop().await?;
    }
    let goals = evaluate(&pairs);
    Ok(SideBySideReport {
        etcd_no_fsync: no_fsync,
        objects: config.objects,
        pairs,
        runs,
        goals,
    })
}

async fn etcd_run(
    etcd: &EtcdProcess,
    scenario: Scenario,
    shape: LoadConfig,
) -> anyhow::Result<LoadReport> {
    let addr = etcd.addr()?;
    progress(&format!("etcd {} @{}", scenario.name(), shape.connections));
    let report = load::run(
        Endpoint::plain(addr),
        Workload::new(scenario, addr),
        shape,
        etcd.pid(),
    )
    .await
    .with_context(|| format!("etcd {}", scenario.name()))?;
    progress(&format!(
        "  {:.0} req/s, {} errors",
        report.rps, report.errors
    ));
    Ok(report)
}

async fn server_run(
    server: &mut ServerProcess,
    scenario: Scenario,
    shape: LoadConfig,
) -> anyhow::Result<LoadReport> {
    progress(&format!(
        "kubemock {} @{}",
        scenario.name(),
        shape.connections
    ));
    let report = load::run(
        server.endpoint().clone(),
        Workload::new(scenario, server.addr()),
        shape,
        server.pid(),
    )
    .await;
    let report = match report {
        Ok(report) => report,
        Err(err) => return Err(err.context(format!("kubemock: {}", server.diagnose()))),
    };
    progress(&format!(
        "  {:.0} req/s, {} errors",
        report.rps, report.errors
    ));
    Ok(report)
}

fn load_pair(
    name: String,
    etcd: Option<&LoadReport>,
    kubemock: &LoadReport,
    note: Option<String>,
) -> Pair {
    Pair {
        name,
        unit: "req/s",
        etcd: etcd.map(|r| r.rps),
        kubemock: Some(kubemock.rps),
        errors: kubemock.errors + etcd.map_or(0, |r| r.errors),
        note,
    }
}

fn time_pair(name: String, unit: &'static str, etcd: f64, kubemock: f64) -> Pair {
    Pair {
        name,
        unit,
        etcd: Some(etcd),
        kubemock: Some(kubemock),
        errors: 0,
        note: None,
    }
}

/// Which API a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Etcd,
    Kubemock,
}

/// Base64 of `bytes` (etcd's gateway JSON carries keys as base64).
fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The key just after every key that starts with `prefix` (etcd's `range_end` of a prefix).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The body of an etcd range over [`BIG_PREFIX`], `limit` keys at most (0: all); etcd's answer
/// carries the count of all keys in range, as a paged list's `remainingItemCount` needs.
fn etcd_prefix_range_body(limit: usize) -> String {
    format!(
        r#"{{"key":"{}","range_end":"{}","limit":{limit}}}"#,
        b64(BIG_PREFIX.as_bytes()),
        b64(&prefix_end(BIG_PREFIX))
    )
}

/// The first `limit` objects of the big set (0: all of it).
fn list_request(side: Side, addr: SocketAddr, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let host = addr.to_string();
    match side {
        Side::Etcd => {
            let body = etcd_prefix_range_body(limit);
            write_head(&mut out, "POST", "/v3/kv/range", &host, Some(body.len()));
            out.extend_from_slice(body.as_bytes());
        }
        Side::Kubemock => {
            let mut path = format!("/api/v1/namespaces/{BIG_NAMESPACE}/configmaps");
            if limit > 0 {
                path.push_str(&format!("?limit={limit}"));
            }
            write_head(&mut out, "GET", &path, &host, None);
        }
    }
    out
}

/// The request that stores object `i` of the big set.
fn big_set_create(side: Side, host: &str, i: usize, out: &mut Vec<u8>) {
    out.clear();
    let name = format!("obj-{i:07}");
    match side {
        Side::Etcd => {
            let key = format!("{BIG_PREFIX}{name}");
            let body = etcd_put_body(&key, &configmap_json(&key));
            write_head(out, "POST", "/v3/kv/put", host, Some(body.len()));
            out.extend_from_slice(body.as_bytes());
        }
        Side::Kubemock => {
            let body = format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"key":"value"}}}}"#
            );
            let path = format!("/api/v1/namespaces/{BIG_NAMESPACE}/configmaps");
            write_head(out, "POST", &path, host, Some(body.len()));
            out.extend_from_slice(body.as_bytes());
        }
    }
}

/// Writes `count` objects, from [`LOADERS`] connections in parallel.
async fn load_big_set(
    endpoint: &Endpoint,
    addr: SocketAddr,
    count: usize,
    side: Side,
) -> anyhow::Result<()> {
    let host = addr.to_string();
    if side == Side::Kubemock {
        let mut connection = Connection::connect(endpoint).await?;
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{BIG_NAMESPACE}"}}}}"#
        );
        let mut request = Vec::new();
        write_head(
            &mut request,
            "POST",
            "/api/v1/namespaces",
            &host,
            Some(body.len()),
        );
        request.extend_from_slice(body.as_bytes());
        let response = connection.round_trip(&request).await?;
        if !matches!(response.status, 200..=299 | 409) {
            bail!("creating namespace {BIG_NAMESPACE}: {}", response.status);
        }
    }
    let mut tasks = JoinSet::new();
    for loader in 0..LOADERS.min(count) {
        let (endpoint, host) = (endpoint.clone(), host.clone());
        tasks.spawn(async move {
            let mut connection = Connection::connect(&endpoint).await?;
            let mut request = Vec::new();
            for i in (loader..count).step_by(LOADERS) {
                big_set_create(side, &host, i, &mut request);
                let response = connection.round_trip(&request).await?;
                if !(200..300).contains(&response.status) {
                    let body = &response.body[..response.body.len().min(300)];
                    bail!(
                        "loading object {i}: {} {}",
                        response.status,
                        String::from_utf8_lossy(body)
                    );
                }
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// Sends `request` back to back on one connection for `window` and at least `min` times; the
/// latency percentiles in ms.
async fn time_requests(
    endpoint: &Endpoint,
    request: &[u8],
    window: Duration,
    min: usize,
) -> anyhow::Result<Percentiles> {
    let mut connection = Connection::connect(endpoint).await?;
    let mut samples = Vec::new();
    let end = Instant::now() + window;
    while Instant::now() < end || samples.len() < min {
        let sent = Instant::now();
        let response = connection.round_trip(request).await?;
        if !(200..300).contains(&response.status) {
            bail!("{endpoint} answered {}", response.status);
        }
        samples.push(sent.elapsed());
    }
    Ok(Percentiles::of(&mut samples, |d| d.as_secs_f64() * 1000.0))
}

/// Issue 23's goals over `pairs` (found by name).
pub(crate) fn evaluate(pairs: &[Pair]) -> Vec<Goal> {
    let find = |prefix: &str| pairs.iter().find(|p| p.name.starts_with(prefix));
    let not_measured = || "not measured".to_owned();
    let ratio_goal = |name: &'static str, pair: Option<&Pair>, at_least: f64| {
        let ratio = pair.and_then(Pair::ratio);
        Goal {
            name,
            required: format!(">= {at_least}x etcd"),
            measured: ratio.map_or_else(not_measured, |r| format!("{r:.2}x")),
            pass: ratio.map(|r| r >= at_least),
        }
    };
    let mut goals = vec![
        ratio_goal(
            "durable create c=64 vs etcd put (fsync)",
            find("create c=64 durable"),
            3.0,
        ),
        ratio_goal(
            "durable create c=1 vs etcd put (fsync)",
            find("create c=1 durable"),
            2.0,
        ),
    ];
    let durable = find("create c=64 durable").and_then(|p| p.kubemock);
    let ephemeral = find("create c=64 no-fsync").and_then(|p| p.kubemock);
    let share = durable
        .zip(ephemeral)
        .filter(|(_, e)| *e > 0.0)
        .map(|(d, e)| d / e);
    goals.push(Goal {
        name: "durable create c=64 vs ephemeral",
        required: ">= 70 %".to_owned(),
        measured: share.map_or_else(not_measured, |s| format!("{:.0} %", s * 100.0)),
        pass: share.map(|s| s >= 0.7),
    });
    let list = find("full LIST").and_then(Pair::ratio);
    goals.push(Goal {
        name: "full LIST per object vs etcd's gateway",
        required: "<= 0.5x etcd".to_owned(),
        measured: list.map_or_else(not_measured, |r| format!("{r:.2}x")),
        pass: list.map(|r| r <= 0.5),
    });
    let page = find("page of").and_then(|p| p.kubemock);
    goals.push(Goal {
        name: "page of 500 (kubemock p50)",
        required: "<= 2 ms".to_owned(),
        measured: page.map_or_else(not_measured, |ms| format!("{ms:.2} ms")),
        pass: page.map(|ms| ms <= 2.0),
    });
    goals
}

/// The table: pairs, ratios, goals.
pub(crate) fn write_table(out: &mut impl Write, report: &SideBySideReport) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<40} {:>10} {:>12} {:>12} {:>8} {:>7}",
        "row", "unit", "etcd", "kubemock", "km/etcd", "errors"
    )?;
    let figure = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for pair in &report.pairs {
        writeln!(
            out,
            "{:<40} {:>10} {:>12} {:>12} {:>8} {:>7}",
            pair.name,
            pair.unit,
            figure(pair.etcd),
            figure(pair.kubemock),
            pair.ratio()
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}")),
            pair.errors
        )?;
        if let Some(note) = &pair.note {
            writeln!(out, "    note: {note}")?;
        }
    }
    writeln!(out)?;
    for goal in &report.goals {
        let verdict = match goal.pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "n/a",
        };
        writeln!(
            out,
            "{verdict:<5} {:<40} required {:<14} measured {}",
            goal.name, goal.required, goal.measured
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str, etcd: Option<f64>, kubemock: Option<f64>) -> Pair {
        Pair {
            name: name.to_owned(),
            unit: "req/s",
            etcd,
            kubemock,
            errors: 0,
            note: None,
        }
    }

    #[test]
    fn ratios_and_goals() {
        let pairs = vec![
            pair("create c=1 durable (etcd fsync)", Some(100.0), Some(150.0)),
            pair(
                "create c=64 durable (etcd fsync)",
                Some(1000.0),
                Some(3500.0),
            ),
            pair("create c=64 no-fsync/ephemeral", None, Some(4000.0)),
            pair("page of 500 at 100000 (p50)", Some(5.0), Some(1.5)),
            pair("full LIST of 100000 (median)", Some(10.0), Some(6.0)),
        ];
        assert_eq!(pairs[0].ratio(), Some(1.5));
        assert_eq!(pairs[2].ratio(), None);
        let pass: Vec<_> = evaluate(&pairs).iter().map(|g| g.pass).collect();
        // c=64 3.5x passes; c=1 1.5x fails; 87.5 % passes; LIST 0.6x fails; page 1.5 ms passes.
        assert_eq!(
            pass,
            [Some(true), Some(false), Some(true), Some(false), Some(true)]
        );
        assert!(evaluate(&[]).iter().all(|g| g.pass.is_none()));
        let report = SideBySideReport {
            etcd_no_fsync: false,
            objects: 0,
            pairs,
            runs: Vec::new(),
            goals: evaluate(&[]),
        };
        let mut table = Vec::new();
        write_table(&mut table, &report).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains("3.50"), "{table}");
        assert!(table.contains("n/a"), "{table}");
    }

    #[test]
    fn list_requests_range_over_the_prefix_or_page() {
        assert_eq!(prefix_end("/a/"), b"/a0");
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let etcd = String::from_utf8(list_request(Side::Etcd, addr, PAGE)).unwrap();
        let (head, body) = etcd.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /v3/kv/range "));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["limit"], 500);
        assert_eq!(body["key"], b64(BIG_PREFIX.as_bytes()));
        assert_eq!(body["range_end"], b64(b"/registry/configmaps/big0"));
        let km = String::from_utf8(list_request(Side::Kubemock, addr, PAGE)).unwrap();
        assert!(km.starts_with("GET /api/v1/namespaces/big/configmaps?limit=500 "));
        let all = String::from_utf8(list_request(Side::Kubemock, addr, 0)).unwrap();
        assert!(all.starts_with("GET /api/v1/namespaces/big/configmaps "));
    }
}
