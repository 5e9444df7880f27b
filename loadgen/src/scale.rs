//! `controllers-scale`: issue 23's controller benchmarks. One `kubemock serve` process (API
//! server, controllers and simulated nodes together, as a user runs it) is started with N
//! nodes; D Deployments of R replicas are created at once; the run ends when every Deployment
//! reports all its replicas updated and Ready. It prints the time until every pod existed, the
//! time until every pod was Ready, pods per second, and the server's resident memory: before
//! the Deployments, at Ready, its peak, and the growth per pod. A server built with the
//! `heap-count` feature also reports the bytes its allocations hold (`/metrics`'
//! `kubemock_heap_in_use_bytes`); the run prints that at Ready too, and the rest of the RSS,
//! which is what the allocator keeps around them. And it prints what the store holds at Ready
//! (`kubemock_store_live_bytes`, `kubemock_store_history_bytes`): the records of the current
//! objects, and history.
//!
//! Progress is read from the Deployments' own status (what `kubectl rollout status` reads), so
//! the observer costs a few small requests per poll, not a list of every pod.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::cpu::{cpu_between, process_cpu};
use crate::server::{NO_INFLIGHT_LIMITS, ServerProcess};

/// How often the Deployments' status is read.
const POLL: Duration = Duration::from_millis(200);
/// How often, during a run, the nodes are checked to be still Ready.
const NODE_CHECK: Duration = Duration::from_secs(5);
/// The namespace the Deployments are created in.
const NAMESPACE: &str = "default";

/// One run's shape.
#[derive(Debug, Clone)]
pub(crate) struct ScaleConfig {
    /// The kubemock binary.
    pub(crate) kubemock: PathBuf,
    /// Simulated nodes.
    pub(crate) nodes: usize,
    /// Deployments created.
    pub(crate) deployments: usize,
    /// Replicas of each.
    pub(crate) replicas: usize,
    /// How long the pods may take to become Ready before the run fails.
    pub(crate) timeout: Duration,
    /// Extra arguments for `kubemock serve`.
    pub(crate) serve_args: Vec<String>,
    /// Where to keep the server's log (its stderr) of the run, if anywhere.
    pub(crate) server_log: Option<PathBuf>,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScaleReport {
    pub(crate) nodes: usize,
    pub(crate) deployments: usize,
    pub(crate) replicas: usize,
    pub(crate) pods: usize,
    /// Seconds from the first create until the Deployments counted every pod created.
    pub(crate) created_seconds: f64,
    /// Seconds from the first create until every pod was Ready.
    pub(crate) ready_seconds: f64,
    /// Pods made Ready per second over the whole run.
    pub(crate) pods_per_second: f64,
    /// The server's resident set before the Deployments were created, in KiB.
    pub(crate) rss_before_kib: u64,
    /// Its resident set when every pod was Ready, in KiB.
    pub(crate) rss_ready_kib: u64,
    /// Its peak resident set (`VmHWM`) over the whole run, in KiB.
    pub(crate) rss_peak_kib: u64,
    /// Resident set at Ready divided by the pods, in KiB (what issue 23's goal measures).
    pub(crate) rss_per_pod_kib: f64,
    /// Growth of the resident set from before the Deployments to Ready, per pod, in KiB.
    pub(crate) rss_growth_per_pod_kib: f64,
    /// The bytes the server's allocations held at Ready, in KiB, when it counts them (a build
    /// with the `heap-count` feature).
    pub(crate) heap_ready_kib: Option<u64>,
    /// The store's records of the current objects at Ready, in KiB (its `/metrics`).
    pub(crate) store_live_ready_kib: Option<u64>,
    /// The store's history at Ready, in KiB (its `/metrics`).
    pub(crate) store_history_ready_kib: Option<u64>,
    /// CPU seconds the server used from the first create until Ready.
    pub(crate) server_cpu_seconds: Option<f64>,
    /// The most nodes found not Ready at one look during the run (every [`NODE_CHECK`]; the
    /// simulated nodes must stay Ready under any load).
    pub(crate) nodes_not_ready_max: usize,
    /// How many times the node lifecycle controller marked a node Unknown (its log line
    /// [`MARKED_UNKNOWN`]): every silence, also one shorter than [`NODE_CHECK`].
    pub(crate) nodes_marked_unknown: usize,
}

/// What the node lifecycle controller logs when a node's kubelet went silent
/// (`controllers/src/nodelifecycle/mod.rs`).
const MARKED_UNKNOWN: &str = "node stopped posting status; marked Unknown";

/// Issue 23's two shapes, each on a fresh server: 10,000 pods (one Deployment on 100 nodes),
/// then 100,000 pods (100 Deployments of 1,000 on 1,000 nodes).
pub(crate) async fn run_issue23(config: &ScaleConfig) -> anyhow::Result<Vec<ScaleReport>> {
    let mut reports = Vec::new();
    for (nodes, deployments, replicas) in [(100, 1, 10_000), (1_000, 100, 1_000)] {
        let shape = ScaleConfig {
            nodes,
            deployments,
            replicas,
            // One log per shape: `PATH.10000` and `PATH.100000`.
            server_log: config.server_log.as_ref().map(|path| {
                let mut path = path.clone().into_os_string();
                path.push(format!(".{}", deployments * replicas));
                PathBuf::from(path)
            }),
            ..config.clone()
        };
        eprintln!("controllers-scale: {deployments} x {replicas} pods on {nodes} nodes ...");
        reports.push(run(&shape).await?);
    }
    Ok(reports)
}

/// Issue 23's goals for the two shapes of [`run_issue23`], each PASS or FAIL.
pub(crate) fn write_goals(
    out: &mut impl std::io::Write,
    reports: &[ScaleReport],
) -> std::io::Result<()> {
    let [small, large] = reports else {
        return writeln!(out, "goals: need the two shapes' reports");
    };
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    let ratio = large.ready_seconds / small.ready_seconds.max(f64::EPSILON);
    writeln!(out, "goals (issue 23):")?;
    writeln!(
        out,
        "  {} 10k pods Ready in <= 10 s: {:.2} s",
        verdict(small.ready_seconds <= 10.0),
        small.ready_seconds
    )?;
    writeln!(
        out,
        "  {} 100k pods Ready in <= 120 s: {:.2} s",
        verdict(large.ready_seconds <= 120.0),
        large.ready_seconds
    )?;
    writeln!(
        out,
        "  {} 100k run <= 12x the 10k run: {ratio:.1}x",
        verdict(ratio <= 12.0)
    )?;
    writeln!(
        out,
        "  {} RSS <= 25 KiB per pod at 100k: {:.1} KiB",
        verdict(large.rss_per_pod_kib <= 25.0),
        large.rss_per_pod_kib
    )?;
    let not_ready = small.nodes_not_ready_max.max(large.nodes_not_ready_max);
    let marked = small.nodes_marked_unknown + large.nodes_marked_unknown;
    writeln!(
        out,
        "  {} every simulated node stayed Ready: {not_ready} seen not Ready, {marked} marked \
         Unknown",
        verdict(not_ready == 0 && marked == 0)
    )
}

/// Starts a server, runs the Deployments to Ready, stops the server.
pub(crate) async fn run(config: &ScaleConfig) -> anyhow::Result<ScaleReport> {
    if config.nodes == 0 || config.deployments == 0 || config.replicas == 0 {
        bail!("--nodes, --deployments and --replicas must be at least 1");
    }
    let nodes = config.nodes.to_string();
    // The creates come all at once, as from a controller's burst.
    let mut args: Vec<OsString> = ["serve", "--port", "0", "--nodes", &nodes]
        .iter()
        .chain(NO_INFLIGHT_LIMITS.iter())
        .map(OsString::from)
        .collect();
    args.extend(config.serve_args.iter().map(OsString::from));
    ServerProcess::measured(&config.kubemock, &args, async |server| {
        measure(config, server).await
    })
    .await
}

async fn measure(config: &ScaleConfig, server: &ServerProcess) -> anyhow::Result<ScaleReport> {
    let pid = server
        .pid()
        .ok_or_else(|| anyhow!("the server has no process id"))?;
    let base = format!("http://{}", server.addr());
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .build()
        .context("building the HTTP client")?;
    wait_for_nodes(&client, &base, config.nodes, config.timeout).await?;
    let rss_before_kib = memory(pid)?.rss_kib;
    let cpu_before = process_cpu(Some(pid));

    let pods = config.deployments * config.replicas;
    let deployments_url = format!("{base}/apis/apps/v1/namespaces/{NAMESPACE}/deployments");
    let start = Instant::now();
    for index in 0..config.deployments {
        let body = deployment(index, config.replicas);
        let response = client
            .post(&deployments_url)
            .json(&body)
            .send()
            .await
            .context("creating a Deployment")?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            bail!("creating Deployment {index}: {status}: {text}");
        }
    }
    let deadline = start + config.timeout;
    let mut created_at = None;
    let mut nodes_not_ready_max = 0;
    let mut next_node_check = start;
    let ready_at = loop {
        if Instant::now() >= next_node_check {
            let ready = ready_nodes(&client, &base).await?;
            nodes_not_ready_max = nodes_not_ready_max.max(config.nodes.saturating_sub(ready));
            next_node_check = Instant::now() + NODE_CHECK;
        }
        let (created, ready) = progress(&client, &deployments_url).await?;
        if created_at.is_none() && created >= pods {
            created_at = Some(start.elapsed());
        }
        if ready >= pods {
            break start.elapsed();
        }
        if Instant::now() >= deadline {
            bail!(
                "after {:?}: {created} of {pods} pods created, {ready} Ready",
                config.timeout
            );
        }
        tokio::time::sleep(POLL).await;
    };
    let cpu_after = process_cpu(Some(pid));
    let memory = memory(pid)?;
    let metrics = metrics_text(&client, &base).await?;
    let kib = |name: &str| gauge(&metrics, name).map(|bytes| bytes / 1024);
    let ready = ready_nodes(&client, &base).await?;
    nodes_not_ready_max = nodes_not_ready_max.max(config.nodes.saturating_sub(ready));
    let log = std::fs::read_to_string(server.log_path()).context("reading the server's log")?;
    let nodes_marked_unknown = log.matches(MARKED_UNKNOWN).count();
    if let Some(path) = &config.server_log {
        std::fs::write(path, &log)
            .with_context(|| format!("writing the server's log to {}", path.display()))?;
    }
    let ready_seconds = ready_at.as_secs_f64();
    let pods_f = pods as f64;
    Ok(ScaleReport {
        nodes: config.nodes,
        deployments: config.deployments,
        replicas: config.replicas,
        pods,
        created_seconds: created_at.unwrap_or(ready_at).as_secs_f64(),
        ready_seconds,
        pods_per_second: pods_f / ready_seconds.max(f64::EPSILON),
        rss_before_kib,
        rss_ready_kib: memory.rss_kib,
        rss_peak_kib: memory.peak_kib,
        rss_per_pod_kib: memory.rss_kib as f64 / pods_f,
        rss_growth_per_pod_kib: memory.rss_kib.saturating_sub(rss_before_kib) as f64 / pods_f,
        heap_ready_kib: kib("kubemock_heap_in_use_bytes"),
        store_live_ready_kib: kib("kubemock_store_live_bytes"),
        store_history_ready_kib: kib("kubemock_store_history_bytes"),
        server_cpu_seconds: cpu_between(cpu_before, cpu_after),
        nodes_not_ready_max,
        nodes_marked_unknown,
    })
}

/// Deployment `scale-N`: one container with a small request, so that 110 pods fit a node as
/// the simulated nodes' pod capacity allows.
fn deployment(index: usize, replicas: usize) -> Value {
    let name = format!("scale-{index}");
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
            }
        }
    })
}

/// Waits until `nodes` Nodes exist and say Ready.
async fn wait_for_nodes(
    client: &reqwest::Client,
    base: &str,
    nodes: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let ready = ready_nodes(client, base).await?;
        if ready >= nodes {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("only {ready} of {nodes} nodes Ready after {timeout:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The number of Nodes that say Ready.
async fn ready_nodes(client: &reqwest::Client, base: &str) -> anyhow::Result<usize> {
    let list = list(client, &format!("{base}/api/v1/nodes"), "nodes").await?;
    Ok(list["items"]
        .as_array()
        .map_or(0, |items| items.iter().filter(|n| node_ready(n)).count()))
}

fn node_ready(node: &Value) -> bool {
    node["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Pods created and pods Ready (updated and Ready), summed over the Deployments' status.
async fn progress(client: &reqwest::Client, url: &str) -> anyhow::Result<(usize, usize)> {
    let list = list(client, url, "Deployments").await?;
    let items = list["items"].as_array().map_or(&[][..], Vec::as_slice);
    Ok(tally(items))
}

/// The list at `url` (of `what`, for the errors), as JSON.
async fn list(client: &reqwest::Client, url: &str, what: &str) -> anyhow::Result<Value> {
    client
        .get(url)
        .send()
        .await
        .with_context(|| format!("listing {what}"))?
        .error_for_status()
        .with_context(|| format!("listing {what}"))?
        .json()
        .await
        .with_context(|| format!("decoding the list of {what}"))
}

/// Pods created and pods Ready in a list of Deployments: a pod counts as Ready only when it is
/// also of the latest template (`min(readyReplicas, updatedReplicas)`).
fn tally(deployments: &[Value]) -> (usize, usize) {
    let count = |status: &Value, field: &str| {
        status[field]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    };
    let mut created = 0;
    let mut ready = 0;
    for item in deployments {
        let status = &item["status"];
        created += count(status, "replicas");
        ready += count(status, "readyReplicas").min(count(status, "updatedReplicas"));
    }
    (created, ready)
}

/// The server's `/metrics`, as text.
async fn metrics_text(client: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .context("reading /metrics")?
        .error_for_status()
        .context("reading /metrics")?
        .text()
        .await
        .context("reading /metrics")
}

/// The value of the unlabelled gauge `name` in a Prometheus text exposition, if it is there.
fn gauge(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        // The server writes whole numbers; a float is read as one too.
        value.trim().parse::<f64>().ok().map(|bytes| bytes as u64)
    })
}

/// A process's resident set now and at its peak, in KiB.
struct Memory {
    rss_kib: u64,
    peak_kib: u64,
}

fn memory(pid: u32) -> anyhow::Result<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    parse_memory(&status).ok_or_else(|| anyhow!("no VmRSS/VmHWM in /proc/{pid}/status"))
}

/// `VmRSS` and `VmHWM` from the contents of `/proc/PID/status` (`VmRSS:\t  1234 kB`).
fn parse_memory(status: &str) -> Option<Memory> {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            rest.split_ascii_whitespace().next()?.parse::<u64>().ok()
        })
    };
    Some(Memory {
        rss_kib: field("VmRSS")?,
        peak_kib: field("VmHWM")?,
    })
}

/// The report as a few lines of text.
pub(crate) fn write_report(
    out: &mut impl std::io::Write,
    report: &ScaleReport,
) -> std::io::Result<()> {
    let mib = |kib: u64| kib as f64 / 1024.0;
    writeln!(
        out,
        "{} pods ({} Deployments of {}) on {} nodes:",
        report.pods, report.deployments, report.replicas, report.nodes
    )?;
    writeln!(
        out,
        "  all created in {:.2} s, all Ready in {:.2} s: {:.0} pods/s",
        report.created_seconds, report.ready_seconds, report.pods_per_second
    )?;
    writeln!(
        out,
        "  server RSS: {:.0} MiB before, {:.0} MiB at Ready ({:.1} KiB per pod; growth {:.1} KiB \
         per pod), peak {:.0} MiB",
        mib(report.rss_before_kib),
        mib(report.rss_ready_kib),
        report.rss_per_pod_kib,
        report.rss_growth_per_pod_kib,
        mib(report.rss_peak_kib)
    )?;
    let per_pod = |kib: u64| kib as f64 / report.pods.max(1) as f64;
    if let Some(heap_kib) = report.heap_ready_kib {
        let beyond_kib = report.rss_ready_kib.saturating_sub(heap_kib);
        writeln!(
            out,
            "  heap in use at Ready: {:.0} MiB ({:.1} KiB per pod); the RSS beyond it (kept by \
             the allocator): {:.0} MiB ({:.1} KiB per pod)",
            mib(heap_kib),
            per_pod(heap_kib),
            mib(beyond_kib),
            per_pod(beyond_kib)
        )?;
    }
    if let (Some(live_kib), Some(history_kib)) =
        (report.store_live_ready_kib, report.store_history_ready_kib)
    {
        writeln!(
            out,
            "  store at Ready: records of the current objects {:.0} MiB ({:.1} KiB per pod), \
             history {:.0} MiB ({:.1} KiB per pod)",
            mib(live_kib),
            per_pod(live_kib),
            mib(history_kib),
            per_pod(history_kib)
        )?;
    }
    if let Some(cpu) = report.server_cpu_seconds {
        writeln!(out, "  server CPU until Ready: {cpu:.1} s")?;
    }
    writeln!(
        out,
        "  nodes not Ready (the most at one check, every {}s and at the end): {}",
        NODE_CHECK.as_secs(),
        report.nodes_not_ready_max
    )?;
    writeln!(
        out,
        "  nodes marked Unknown by the node lifecycle controller (its log): {}",
        report.nodes_marked_unknown
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_read_from_proc_status() {
        let status =
            "Name:\tkubemock\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        let memory = parse_memory(status).expect("both fields");
        assert_eq!((memory.rss_kib, memory.peak_kib), (1024, 2048));
        assert!(parse_memory("Name:\tx\nVmRSS:\t 1 kB\n").is_none());
    }

    #[test]
    fn gauges_are_read_by_name_when_the_server_has_them() {
        let text = "# HELP kubemock_watch_catch_ups_total w\nkubemock_watch_catch_ups_total 4\n\
             # TYPE kubemock_heap_in_use_bytes gauge\nkubemock_heap_in_use_bytes 3221225472\n\
             kubemock_store_live_bytes_other 1\nkubemock_store_live_bytes 2048\n";
        assert_eq!(gauge(text, "kubemock_heap_in_use_bytes"), Some(3 << 30));
        assert_eq!(gauge(text, "kubemock_store_live_bytes"), Some(2048));
        assert_eq!(gauge(text, "kubemock_store_history_bytes"), None);
    }

    #[test]
    fn the_report_sets_the_heap_and_the_store_beside_the_rss_when_there_are_some() {
        let mut report = ScaleReport {
            nodes: 1,
            deployments: 1,
            replicas: 1024,
            pods: 1024,
            created_seconds: 1.0,
            ready_seconds: 2.0,
            pods_per_second: 512.0,
            rss_before_kib: 1024,
            rss_ready_kib: 40 * 1024,
            rss_peak_kib: 50 * 1024,
            rss_per_pod_kib: 40.0,
            rss_growth_per_pod_kib: 39.0,
            heap_ready_kib: None,
            store_live_ready_kib: None,
            store_history_ready_kib: None,
            server_cpu_seconds: None,
            nodes_not_ready_max: 0,
            nodes_marked_unknown: 3,
        };
        let mut text = Vec::new();
        write_report(&mut text, &report).expect("written");
        let text = String::from_utf8_lossy(&text);
        assert!(!text.contains("heap") && !text.contains("store"), "{text}");
        assert!(
            text.contains("nodes marked Unknown by the node lifecycle controller (its log): 3"),
            "{text}"
        );
        report.heap_ready_kib = Some(30 * 1024);
        report.store_live_ready_kib = Some(8 * 1024);
        report.store_history_ready_kib = Some(2 * 1024);
        let mut text = Vec::new();
        write_report(&mut text, &report).expect("written");
        let text = String::from_utf8_lossy(&text);
        assert!(
            text.contains(
                "heap in use at Ready: 30 MiB (30.0 KiB per pod); the RSS beyond it (kept by the \
                 allocator): 10 MiB (10.0 KiB per pod)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "store at Ready: records of the current objects 8 MiB (8.0 KiB per pod), history 2 \
                 MiB (2.0 KiB per pod)"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_marked_unknown_line_is_the_node_lifecycle_controllers() {
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../controllers/src/nodelifecycle/mod.rs");
        let source = std::fs::read_to_string(&source).expect("the controller's source");
        assert!(source.contains(MARKED_UNKNOWN));
    }

    #[test]
    fn progress_counts_only_updated_ready_replicas() {
        let deployments = [
            json!({"status": {"replicas": 10, "readyReplicas": 10, "updatedReplicas": 4}}),
            json!({"status": {"replicas": 5, "readyReplicas": 2, "updatedReplicas": 5}}),
            json!({"metadata": {"name": "no-status-yet"}}),
        ];
        assert_eq!(tally(&deployments), (15, 6));
    }

    #[test]
    fn a_node_is_ready_by_its_condition() {
        let node = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(node_ready(&node));
        assert!(!node_ready(&json!({"status": {}})));
    }
}
