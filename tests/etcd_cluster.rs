//! Several `kubemock serve` over one real etcd behave as one cluster (issue 24,
//! docs/etcd.md): writers and watchers on every server agree on every event and its
//! resourceVersion, no two Services get one cluster IP or node port, `--leader-elect` runs the
//! controllers in exactly one server, and killing a server (the leader) under load loses no
//! acknowledged write, fails no client of the others, and hands the controllers to another.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{BINARY, WAIT, ready_url};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// Lease timings of the failover test: short, so that a takeover comes within seconds.
const SHORT_LEASE: [&str; 6] = [
    "--leader-elect-lease-duration",
    "4s",
    "--leader-elect-renew-deadline",
    "3s",
    "--leader-elect-retry-period",
    "500ms",
];
/// A service range small enough that servers allocating each from their own view would
/// collide (45 Services in 254 addresses, 45 node ports in 100).
const IP_RANGE: &str = "10.0.0.0/24";
const PORT_RANGE: &str = "30000-30099";

/// One `kubemock serve` over the test's etcd, its log in `dir`.
struct Server {
    child: Child,
    url: String,
    identity: String,
}

async fn start(etcd: &str, identity: &str, dir: &std::path::Path, extra: &[&str]) -> Server {
    let log = std::fs::File::create(dir.join(format!("{identity}.log"))).expect("a log file");
    let mut child = Command::new(BINARY)
        .args([
            "serve",
            "--port",
            "0",
            "--no-kubeconfig",
            "--etcd-servers",
            etcd,
        ])
        .args(["--service-cluster-ip-range", IP_RANGE])
        .args(["--service-node-port-range", PORT_RANGE])
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock");
    let url = ready_url(&mut child).await;
    Server {
        child,
        url,
        identity: identity.to_owned(),
    }
}

/// Three servers with `--leader-elect` (and `lease`'s timings), started one after the other.
async fn three_electing(etcd: &str, dir: &std::path::Path, lease: &[&str]) -> Vec<Server> {
    let mut servers = Vec::new();
    for identity in ["server-0", "server-1", "server-2"] {
        let mut args = vec!["--leader-elect", "--leader-elect-identity", identity];
        args.extend(lease);
        servers.push(start(etcd, identity, dir, &args).await);
    }
    servers
}

/// POST `body` to `url + path`: the status and the answer.
async fn post(http: &reqwest::Client, url: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = http
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(http: &reqwest::Client, url: &str, path: &str) -> Value {
    let response = http.get(format!("{url}{path}")).send().await.expect("GET");
    assert_eq!(response.status(), 200, "GET {url}{path}");
    response.json().await.expect("JSON")
}

fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
}

fn name(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A watch of one server: its events, one JSON object a line.
struct Watcher {
    stream: futures_util::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: Vec<u8>,
}

impl Watcher {
    async fn open(http: &reqwest::Client, url: &str, path: &str, from: u64) -> Watcher {
        let response = http
            .get(format!("{url}{path}?watch=true&resourceVersion={from}"))
            .send()
            .await
            .expect("watch");
        assert_eq!(response.status(), 200);
        Watcher {
            stream: response
                .bytes_stream()
                .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
                .boxed(),
            buffer: Vec::new(),
        }
    }

    async fn next(&mut self) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.buffer.drain(..=end).collect();
                    return serde_json::from_slice(&line).expect("an event");
                }
                let chunk = self
                    .stream
                    .next()
                    .await
                    .expect("the watch ended")
                    .expect("a chunk");
                self.buffer.extend_from_slice(&chunk);
            }
        })
        .await
        .expect("a watch event before the deadline")
    }

    /// Events until every name of `expected` was ADDED: each exactly once, with the
    /// resourceVersion its create answered, every event in increasing resourceVersion order.
    /// Returns the (name, resourceVersion) sequence seen.
    async fn expect_added(&mut self, expected: &HashMap<String, u64>) -> Vec<(String, u64)> {
        let mut seen: Vec<(String, u64)> = Vec::new();
        let mut names = HashSet::new();
        let mut last = 0;
        while names.len() < expected.len() {
            let event = self.next().await;
            let object = &event["object"];
            let version = rv(object);
            assert!(
                version > last,
                "out of order: {version} after {last}: {event}"
            );
            last = version;
            let name = name(object);
            let Some(created) = expected.get(&name) else {
                // The controllers' own objects (kube-root-ca.crt) come too.
                continue;
            };
            assert_eq!(event["type"], "ADDED", "{event}");
            assert_eq!(version, *created, "{name}: the create answered {created}");
            assert!(names.insert(name.clone()), "{name} twice");
            seen.push((name, version));
        }
        seen
    }
}

/// The holder of the controllers' Lease, read through `url`.
async fn lease_holder(http: &reqwest::Client, url: &str) -> Option<String> {
    let response = http
        .get(format!(
            "{url}/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
        ))
        .send()
        .await
        .ok()?;
    if response.status() != 200 {
        return None;
    }
    let lease: Value = response.json().await.ok()?;
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
}

/// Waits until the Lease is held by one of `candidates` (other than `not`): its holder.
async fn wait_for_leader(
    http: &reqwest::Client,
    url: &str,
    candidates: &[&str],
    not: Option<&str>,
) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(holder) = lease_holder(http, url).await
            && candidates.contains(&holder.as_str())
            && Some(holder.as_str()) != not
        {
            return holder;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no leader among {candidates:?} (other than {not:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Requests the in-process controllers' shared informers sent to `url` (its request log):
/// non-zero exactly when that server runs the controllers.
async fn informer_requests(http: &reqwest::Client, url: &str) -> usize {
    let log = get(http, url, "/apis/testing.kubemock.dev/v1/requests").await;
    log["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|entry| {
            entry["userAgent"]
                .as_str()
                .is_some_and(|agent| agent.ends_with("/shared-informers"))
        })
        .count()
}

/// Waits until `url`'s ReplicaSets in `namespace` owned by the Deployment `deployment` exist,
/// then checks there is exactly one.
async fn replica_sets_of(
    http: &reqwest::Client,
    url: &str,
    namespace: &str,
    deployment: &str,
) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = get(
            http,
            url,
            &format!("/apis/apps/v1/namespaces/{namespace}/replicasets"),
        )
        .await;
        let owned: Vec<Value> = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|rs| {
                rs["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|owners| owners.iter().any(|o| o["name"] == deployment))
            })
            .cloned()
            .collect();
        if !owned.is_empty() {
            return owned;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no ReplicaSet for {deployment}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    })
}

/// Every Service's cluster IP and node ports, listed through `url`: none twice.
async fn assert_unique_allocations(http: &reqwest::Client, url: &str) -> usize {
    let list = get(http, url, "/api/v1/services").await;
    let mut ips = HashMap::new();
    let mut ports = HashMap::new();
    let items = list["items"].as_array().expect("items");
    for service in items {
        let who = format!(
            "{}/{}",
            service["metadata"]["namespace"].as_str().unwrap_or(""),
            name(service)
        );
        if let Some(ip) = service["spec"]["clusterIP"]
            .as_str()
            .filter(|ip| *ip != "None")
            && let Some(other) = ips.insert(ip.to_owned(), who.clone())
        {
            panic!("{ip} held by {other} and {who}");
        }
        for port in service["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(node_port) = port["nodePort"].as_u64()
                && let Some(other) = ports.insert(node_port, who.clone())
            {
                panic!("node port {node_port} held by {other} and {who}");
            }
        }
    }
    items.len()
}

/// Three servers over one etcd, each with writers and watchers: every watcher sees every
/// event once, in resourceVersion order, with the resourceVersion its create answered, on
/// all three alike; Services created concurrently through all three never share a cluster
/// IP or a node port; with `--leader-elect` exactly one server holds the Lease and runs the
/// controllers (a Deployment gets one ReplicaSet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_over_one_etcd_are_one_cluster() {
    let test = "three_servers_over_one_etcd_are_one_cluster";
    let Some(etcd) = kubemock_storage_etcd::testing::EtcdServer::start(test).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let servers = three_electing(&etcd.url, dir.path(), &[]).await;
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let http = reqwest::Client::new();
    let (status, _) = post(
        &http,
        &urls[0],
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "load"}}),
    )
    .await;
    assert_eq!(status, 201);
    let configmaps = "/api/v1/namespaces/load/configmaps";
    let services = "/api/v1/namespaces/load/services";
    let from = rv(&get(&http, &urls[1], configmaps).await);

    // Two watches (ConfigMaps, Services) on each server, from one resourceVersion.
    let mut watchers = Vec::new();
    for url in &urls {
        watchers.push((
            Watcher::open(&http, url, configmaps, from).await,
            Watcher::open(&http, url, services, from).await,
        ));
    }

    // Writers: through each server, 20 ConfigMaps and 15 NodePort Services (7 and 8 by its
    // two writers at once).
    let mut writers = Vec::new();
    for (s, url) in urls.iter().enumerate() {
        for w in 0..2 {
            let (http, url) = (http.clone(), url.clone());
            writers.push(tokio::spawn(async move {
                let mut made = Vec::new();
                let service_count = 7 + w;
                for i in 0..10 {
                    let cm = format!("cm-{s}-{w}-{i}");
                    let (status, body) = post(
                        &http,
                        &url,
                        configmaps,
                        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": cm}, "data": {"i": i.to_string()}}),
                    )
                    .await;
                    assert_eq!(status, 201, "{body}");
                    made.push((false, cm, rv(&body)));
                    if i >= service_count {
                        continue;
                    }
                    let svc = format!("svc-{s}-{w}-{i}");
                    let (status, body) = post(
                        &http,
                        &url,
                        services,
                        &json!({"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": svc},
                            "spec": {"type": "NodePort", "selector": {"app": "x"},
                                "ports": [{"port": 80}]}}),
                    )
                    .await;
                    assert_eq!(status, 201, "{body}");
                    made.push((true, svc, rv(&body)));
                }
                made
            }));
        }
    }
    let mut created_configmaps = HashMap::new();
    let mut created_services = HashMap::new();
    for writer in writers {
        for (is_service, name, version) in writer.await.expect("a writer") {
            if is_service {
                created_services.insert(name, version);
            } else {
                created_configmaps.insert(name, version);
            }
        }
    }
    assert_eq!(created_configmaps.len(), 60);
    assert_eq!(created_services.len(), 45);
    // resourceVersions are etcd's revisions: one per write, none shared.
    let all: HashSet<u64> = created_configmaps
        .values()
        .chain(created_services.values())
        .copied()
        .collect();
    assert_eq!(all.len(), 105);

    // Every watcher: every event once, in order, as created; the same sequence on all.
    let mut sequences = Vec::new();
    for (cms, svcs) in &mut watchers {
        let seen = (
            cms.expect_added(&created_configmaps).await,
            svcs.expect_added(&created_services).await,
        );
        sequences.push(seen);
    }
    assert!(sequences.iter().all(|s| *s == sequences[0]));

    // No two Services share an address or port, as every server lists them.
    for url in &urls {
        assert_eq!(assert_unique_allocations(&http, url).await, 46);
    }

    // Exactly one server holds the Lease and runs the controllers.
    let identities: Vec<&str> = servers.iter().map(|s| s.identity.as_str()).collect();
    let leader = wait_for_leader(&http, &urls[2], &identities, None).await;
    let (status, _) = post(
        &http,
        &urls[1],
        "/apis/apps/v1/namespaces/load/deployments",
        &deployment("web"),
    )
    .await;
    assert_eq!(status, 201);
    let sets = replica_sets_of(&http, &urls[2], "load", "web").await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(
        lease_holder(&http, &urls[0]).await.as_deref(),
        Some(leader.as_str())
    );
    for server in &servers {
        let requests = informer_requests(&http, &server.url).await;
        if server.identity == leader {
            assert!(requests > 0, "the leader {leader} runs no informers");
        } else {
            assert_eq!(requests, 0, "{} runs controllers too", server.identity);
        }
    }
    // One ReplicaSet still (three managers would race to make more).
    let sets = replica_sets_of(&http, &urls[0], "load", "web").await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    drop(servers);
}

/// Writers on all three servers; the leader is killed (SIGKILL) in the middle: the clients
/// of the other two see no error, every acknowledged write (the dead server's included) is
/// readable afterwards through the survivors, and another server takes the Lease and runs
/// the controllers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_under_load_loses_no_acknowledged_write() {
    let test = "a_server_killed_under_load_loses_no_acknowledged_write";
    let Some(etcd) = kubemock_storage_etcd::testing::EtcdServer::start(test).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut servers = three_electing(&etcd.url, dir.path(), &SHORT_LEASE).await;
    let http = reqwest::Client::new();
    let identities: Vec<String> = servers.iter().map(|s| s.identity.clone()).collect();
    let candidates: Vec<&str> = identities.iter().map(String::as_str).collect();
    let leader = wait_for_leader(&http, &servers[0].url, &candidates, None).await;
    let victim = servers
        .iter()
        .position(|s| s.identity == leader)
        .expect("the leader is one of them");
    let configmaps = "/api/v1/namespaces/default/configmaps";

    // Writers until told to stop; the victim's writer stops at its first failure.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for (s, server) in servers.iter().enumerate() {
        let (http, url, stop) = (http.clone(), server.url.clone(), stop.clone());
        let is_victim = s == victim;
        writers.push(tokio::spawn(async move {
            let mut acknowledged = BTreeMap::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("load-{s}-{i}");
                i += 1;
                let sent = http
                    .post(format!("{url}{configmaps}"))
                    .json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name}, "data": {"i": i.to_string()}}))
                    .send()
                    .await;
                match sent {
                    Ok(response) if response.status() == 201 => {
                        let body: Value = response.json().await.expect("JSON");
                        acknowledged.insert(name, rv(&body));
                    }
                    Ok(response) => panic!("{url}: {} for {name}", response.status()),
                    // Killed: what was not answered was not acknowledged.
                    Err(_) if is_victim => break,
                    Err(err) => panic!("{url}: {err} for {name}"),
                }
            }
            acknowledged
        }));
    }
    // Kill the leader once every writer has written some.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = get(&http, &servers[(victim + 1) % 3].url, configmaps).await;
        let mut per_writer = [0usize; 3];
        for item in list["items"].as_array().expect("items") {
            if let Some(rest) = name(item).strip_prefix("load-")
                && let Some(s) = rest.split('-').next().and_then(|s| s.parse::<usize>().ok())
                && s < 3
            {
                per_writer[s] += 1;
            }
        }
        if per_writer.iter().all(|n| *n >= 20) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "writers too slow: {per_writer:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    servers[victim]
        .child
        .start_kill()
        .expect("SIGKILL the leader");
    servers[victim].child.wait().await.expect("the leader died");
    // The survivors keep taking writes; another takes the Lease.
    let survivor = &servers[(victim + 1) % 3].url;
    let new_leader = wait_for_leader(&http, survivor, &candidates, Some(&leader)).await;
    let new_leader_url = servers
        .iter()
        .find(|s| s.identity == new_leader)
        .map(|s| s.url.clone())
        .expect("a survivor");
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = BTreeMap::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("a writer (no error on the survivors)"));
    }
    // Every acknowledged write is there, through both survivors, as acknowledged.
    for server in servers.iter().filter(|s| s.identity != leader) {
        let list = get(&http, &server.url, configmaps).await;
        let stored: HashMap<String, u64> = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| (name(item), rv(item)))
            .collect();
        for (name, version) in &acknowledged {
            assert_eq!(
                stored.get(name),
                Some(version),
                "{name} through {}",
                server.url
            );
        }
    }
    // The new leader runs the controllers: a Deployment gets its ReplicaSet, once.
    let (status, _) = post(
        &http,
        survivor,
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment("after"),
    )
    .await;
    assert_eq!(status, 201);
    let sets = replica_sets_of(&http, &new_leader_url, "default", "after").await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert!(informer_requests(&http, &new_leader_url).await > 0);
}
