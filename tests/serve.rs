//! The `kubemock serve` binary, really started: it prints exactly one ready line with its URL,
//! writes a kubeconfig, serves, and exits 0 on SIGTERM and SIGINT (issue 3, deliverable 1).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");
const WAIT: Duration = Duration::from_secs(60);

/// Starts `kubemock serve --port 0 ARGS...` and returns it with its URL.
async fn start(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(BINARY)
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("ready line before the deadline")
        .expect("read stdout")
        .expect("a line");
    let url = line
        .strip_prefix("kubemock: serving on ")
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // Nothing else is printed to stdout while serving.
    child.stdout = Some(lines.into_inner().into_inner());
    (child, url)
}

async fn signal(child: &Child, name: &str) {
    let pid = child.id().expect("running").to_string();
    let status = Command::new("kill")
        .args([name, &pid])
        .status()
        .await
        .expect("kill");
    assert!(status.success());
}

async fn exit_code_after(child: &mut Child, signal_name: &str) -> i32 {
    signal(child, signal_name).await;
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exit before the deadline")
        .expect("wait");
    status.code().expect("exited, not killed")
}

async fn ready(url: &str) {
    let response = reqwest::get(format!("{url}/readyz")).await.expect("readyz");
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn serve_prints_one_ready_line_writes_a_kubeconfig_and_exits_0_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut child, url) = start(&["--kubeconfig-out", kubeconfig.to_str().unwrap()]).await;
    ready(&url).await;
    let written = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(written.contains(&format!("server: {url}")), "{written}");
    // The controllers run: the root CA publisher puts the cluster CA in every namespace.
    let deadline = tokio::time::Instant::now() + WAIT;
    let config_map = format!("{url}/api/v1/namespaces/default/configmaps/kube-root-ca.crt");
    loop {
        let response = reqwest::get(&config_map).await.expect("GET the ConfigMap");
        if response.status() == 200 {
            let body: serde_json::Value = response.json().await.expect("JSON");
            let ca = body["data"]["ca.crt"].as_str().unwrap_or_default();
            assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{body}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no kube-root-ca.crt"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);
    let mut rest = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut rest)
        .await
        .unwrap();
    assert_eq!(rest, "", "stdout holds exactly one line");
}

#[tokio::test]
async fn serve_with_a_data_dir_exits_0_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (mut child, url) = start(&["--data-dir", data.to_str().unwrap(), "--no-controllers"]).await;
    ready(&url).await;
    assert_eq!(exit_code_after(&mut child, "-INT").await, 0);
    assert!(
        data.is_dir(),
        "the durable store lives in the data directory"
    );
}

#[tokio::test]
async fn serve_reports_a_taken_port_and_exits_non_zero() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let status = Command::new(BINARY)
        .args(["serve", "--port", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(!status.success());
}

#[tokio::test]
async fn serve_takes_in_flight_limits_from_its_flags_and_serves_metrics() {
    let (mut child, url) = start(&[
        "--max-requests-inflight",
        "1",
        "--max-mutating-requests-inflight",
        "0",
        // Nothing else writes, so the revision the held GET waits for is the test's own write.
        "--no-controllers",
    ])
    .await;
    ready(&url).await;
    let client = reqwest::Client::new();
    let configmaps = format!("{url}/api/v1/namespaces/default/configmaps");
    let list: serde_json::Value = client
        .get(&configmaps)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let revision: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // A GET at the next revision waits for it, holding the one read-only slot until the POST
    // below writes that revision.
    let held = client
        .get(format!(
            "{configmaps}/flags?resourceVersion={}",
            revision + 1
        ))
        .send();
    let meanwhile = async {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let text = client
                .get(format!("{url}/metrics"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if text.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1\n") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{text}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let refused = client.get(&configmaps).send().await.unwrap();
        assert_eq!(refused.status(), 429);
        assert_eq!(refused.headers()["retry-after"], "1");
        let created = client
            .post(&configmaps)
            .json(&serde_json::json!({"metadata": {"name": "flags"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
    };
    let (held, ()) = tokio::join!(held, meanwhile);
    assert_eq!(held.unwrap().status(), 200);
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);
}

#[tokio::test]
async fn serve_sends_bookmarks_at_the_bookmark_interval_flag() {
    let (mut child, url) = start(&["--bookmark-interval", "200ms"]).await;
    ready(&url).await;
    let response = reqwest::Client::new()
        .get(format!(
            "{url}/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=1"
        ))
        .send()
        .await
        .expect("watch");
    let mut stream = response.bytes_stream();
    let bookmark = tokio::time::timeout(WAIT, async {
        let mut buffer = Vec::new();
        while let Some(chunk) = futures_util::StreamExt::next(&mut stream).await {
            buffer.extend_from_slice(&chunk.expect("a chunk"));
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let event: serde_json::Value = serde_json::from_slice(&line).expect("an event");
                if event["type"] == "BOOKMARK" {
                    return event;
                }
            }
        }
        panic!("the watch ended without a bookmark");
    })
    .await
    .expect("a bookmark well before the default minute");
    assert!(bookmark["object"]["metadata"]["resourceVersion"].is_string());
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);
}

/// The next watch event of a chunked watch response (one JSON object a line).
async fn next_event<B: AsRef<[u8]>>(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<B>> + Unpin),
    buffer: &mut Vec<u8>,
) -> serde_json::Value {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                return serde_json::from_slice(&line).expect("an event");
            }
            let chunk = futures_util::StreamExt::next(stream)
                .await
                .expect("the watch ended")
                .expect("a chunk");
            buffer.extend_from_slice(chunk.as_ref());
        }
    })
    .await
    .expect("a watch event before the deadline")
}

/// `serve --etcd-servers` (docs/etcd.md): two servers over one real etcd are one cluster for
/// clients: a ConfigMap created through one is read, listed and watched through the other
/// with the same resourceVersion; an update with a stale resourceVersion conflicts across
/// them; etcd down is a 503 Status (never a wrong answer), and they recover when it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_over_one_etcd_are_one_cluster() {
    let test = "two_servers_over_one_etcd_are_one_cluster";
    let Some(mut etcd) = kubemock_storage_etcd::testing::EtcdServer::start(test).await else {
        return;
    };
    // Controllers in the first only (with --leader-elect on all: tests/etcd_cluster.rs).
    let (mut first, a) = start(&["--etcd-servers", &etcd.url]).await;
    let (mut second, b) = start(&["--etcd-servers", &etcd.url, "--no-controllers"]).await;
    ready(&a).await;
    ready(&b).await;
    let http = reqwest::Client::new();
    let configmaps = "/api/v1/namespaces/default/configmaps";

    // A watch on the second, from its list's resourceVersion.
    let list: serde_json::Value = http
        .get(format!("{b}{configmaps}"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("JSON");
    let from = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("list RV")
        .to_owned();
    let watch = http
        .get(format!("{b}{configmaps}?watch=true&resourceVersion={from}"))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), 200);
    let mut events = watch.bytes_stream();
    let mut buffer = Vec::new();

    // Created through the first.
    let created = http
        .post(format!("{a}{configmaps}"))
        .json(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "shared"}, "data": {"k": "1"}
        }))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);
    let created: serde_json::Value = created.json().await.expect("JSON");
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("RV")
        .to_owned();

    // Read and listed through the second, at the same resourceVersion.
    let got: serde_json::Value = http
        .get(format!("{b}{configmaps}/shared"))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("JSON");
    assert_eq!(got["metadata"]["resourceVersion"], rv.as_str());
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(got["data"]["k"], "1");
    let listed: serde_json::Value = http
        .get(format!("{b}{configmaps}"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("JSON");
    let items = listed["items"].as_array().expect("items");
    assert!(
        items.iter().any(|item| item["metadata"]["name"] == "shared"
            && item["metadata"]["resourceVersion"] == rv.as_str()),
        "{listed}"
    );
    // Watched through the second (after the first's controllers' kube-root-ca.crt, maybe).
    let added = loop {
        let event = next_event(&mut events, &mut buffer).await;
        if event["object"]["metadata"]["name"] == "shared" {
            break event;
        }
        assert_eq!(
            event["object"]["metadata"]["name"], "kube-root-ca.crt",
            "{event}"
        );
    };
    assert_eq!(added["type"], "ADDED", "{added}");
    assert_eq!(added["object"]["metadata"]["resourceVersion"], rv.as_str());

    // Updated through the second; the first's stale resourceVersion then conflicts.
    let mut update = got.clone();
    update["data"]["k"] = "2".into();
    let updated = http
        .put(format!("{b}{configmaps}/shared"))
        .json(&update)
        .send()
        .await
        .expect("update");
    assert_eq!(updated.status(), 200);
    let stale = http
        .put(format!("{a}{configmaps}/shared"))
        .json(&got)
        .send()
        .await
        .expect("stale update");
    assert_eq!(stale.status(), 409);

    // etcd down: 503 with a Status, from both; back: both answer again, with the data.
    etcd.kill();
    for url in [&a, &b] {
        let down = http
            .get(format!("{url}{configmaps}/shared"))
            .send()
            .await
            .expect("get while etcd is down");
        assert_eq!(down.status(), 503, "{url}");
        let status: serde_json::Value = down.json().await.expect("a Status");
        assert_eq!(status["kind"], "Status", "{status}");
        assert!(
            status["message"]
                .as_str()
                .unwrap_or("")
                .contains("storage is unavailable"),
            "{status}"
        );
    }
    etcd.restart(test).await;
    for url in [&a, &b] {
        let back: serde_json::Value = http
            .get(format!("{url}{configmaps}/shared"))
            .send()
            .await
            .expect("get after etcd is back")
            .json()
            .await
            .expect("JSON");
        assert_eq!(back["data"]["k"], "2", "{url}: {back}");
    }
    assert_eq!(exit_code_after(&mut second, "-TERM").await, 0);
    assert_eq!(exit_code_after(&mut first, "-TERM").await, 0);
}

/// Starts `kubemock serve --port 0 ARGS...` with `env` set (and `XDG_RUNTIME_DIR`,
/// `XDG_CACHE_HOME` and `HOME` removed unless `env` sets them), and returns it with its URL
/// and the stderr lines up to the kubectl hint's last line (`kubectl ...`).
async fn start_with_hint(
    args: &[&str],
    env: &[(&str, &std::path::Path)],
) -> (Child, String, Vec<String>) {
    let mut command = Command::new(BINARY);
    command
        .args(["serve", "--port", "0", "--no-controllers"])
        .args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("start kubemock");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(WAIT, stdout.next_line())
        .await
        .expect("ready line before the deadline")
        .expect("read stdout")
        .expect("a line");
    let url = line
        .strip_prefix("kubemock: serving on ")
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
        .to_owned();
    child.stdout = Some(stdout.into_inner().into_inner());
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut hint = Vec::new();
    loop {
        let line = tokio::time::timeout(WAIT, stderr.next_line())
            .await
            .expect("the hint before the deadline")
            .expect("read stderr")
            .expect("the hint on stderr");
        let last = line.trim_start().starts_with("kubectl ") || line.contains("--kubeconfig-out");
        hint.push(line);
        if last {
            break;
        }
    }
    (child, url, hint)
}

/// Without `--kubeconfig-out`, `kubemock serve` writes its kubeconfig under
/// `$XDG_RUNTIME_DIR/kubemock/`, says so on stderr with the `export KUBECONFIG=` line to
/// paste, and real kubectl (fresh `--cache-dir`) reaches the server with it; stdout keeps its
/// one line.
#[tokio::test]
async fn serve_writes_a_default_kubeconfig_and_tells_how_to_use_it() {
    let runtime = tempfile::tempdir().unwrap();
    let (mut child, url, hint) = start_with_hint(&[], &[("XDG_RUNTIME_DIR", runtime.path())]).await;
    let path = runtime.path().join("kubemock").join("kubeconfig");
    let export = format!("  export KUBECONFIG={}", path.display());
    assert!(hint.contains(&export), "{hint:#?}");
    assert!(hint.iter().any(|l| l.contains(&url)), "{hint:#?}");
    let written = std::fs::read_to_string(&path).expect("the default kubeconfig");
    assert!(written.contains(&format!("server: {url}")), "{written}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "readable by its owner only");
    let cache = tempfile::tempdir().unwrap();
    let output = Command::new("kubectl")
        .arg("--cache-dir")
        .arg(cache.path())
        .args(["get", "namespaces", "-o", "name"])
        .env("KUBECONFIG", &path)
        .output()
        .await
        .expect("run kubectl");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.lines().any(|l| l == "namespace/default"), "{stdout}");
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);
    let mut rest = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut rest)
        .await
        .unwrap();
    assert_eq!(rest, "", "stdout holds exactly one line");
}

/// Without `XDG_RUNTIME_DIR` the default is the user's cache directory (`XDG_CACHE_HOME`,
/// else `~/.cache`); `--no-kubeconfig` writes none and says how to reach the server instead.
#[tokio::test]
async fn serve_falls_back_to_the_cache_directory_and_writes_none_when_told() {
    let home = tempfile::tempdir().unwrap();
    let (mut child, url, hint) = start_with_hint(&[], &[("HOME", home.path())]).await;
    let path = home
        .path()
        .join(".cache")
        .join("kubemock")
        .join("kubeconfig");
    assert!(
        hint.contains(&format!("  export KUBECONFIG={}", path.display())),
        "{hint:#?}"
    );
    let written = std::fs::read_to_string(&path).expect("the default kubeconfig");
    assert!(written.contains(&format!("server: {url}")), "{written}");
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);

    let cache = tempfile::tempdir().unwrap();
    let (mut child, url, hint) = start_with_hint(
        &[],
        &[("XDG_CACHE_HOME", cache.path()), ("HOME", home.path())],
    )
    .await;
    let path = cache.path().join("kubemock").join("kubeconfig");
    assert!(
        hint.contains(&format!("  export KUBECONFIG={}", path.display())),
        "{hint:#?}"
    );
    assert!(std::fs::read_to_string(&path).unwrap().contains(&url));
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);

    let none = tempfile::tempdir().unwrap();
    let (mut child, url, hint) =
        start_with_hint(&["--no-kubeconfig"], &[("HOME", none.path())]).await;
    assert!(
        hint.contains(&format!("  kubectl --server {url} get namespaces")),
        "{hint:#?}"
    );
    assert!(
        std::fs::read_dir(none.path()).unwrap().next().is_none(),
        "nothing written under HOME"
    );
    assert_eq!(exit_code_after(&mut child, "-TERM").await, 0);
}

/// The value of the unlabelled gauge `name` in a `/metrics` text.
fn gauge(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.parse::<f64>().ok())
        .map_or_else(|| panic!("no {name} in /metrics"), |value| value as u64)
}

/// `serve --etcd-servers` keeps one etcd watch per watched resource (the watch cache,
/// docs/etcd.md): ten client watches of ConfigMaps in three namespaces add no etcd watch of
/// their own; each gets its events; a `resourceVersion=0` list is answered from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_watches_of_one_resource_share_one_etcd_watch() {
    let test = "client_watches_of_one_resource_share_one_etcd_watch";
    let Some(etcd) = kubemock_storage_etcd::testing::EtcdServer::start(test).await else {
        return;
    };
    // No controllers: only this test's watches come and go.
    let (mut server, url) = start(&["--etcd-servers", &etcd.url, "--no-controllers"]).await;
    ready(&url).await;
    let http = reqwest::Client::new();
    let metrics = || async {
        http.get(format!("{url}/metrics"))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics text")
    };
    // Watches of etcd that no cache holds: the server's own indexes of a whole API group
    // (`store_index.rs`: webhooks, RBAC) watch prefixes no cache covers. The two gauges are
    // separate counters, so their difference can briefly count a watch whose cache is starting
    // or stopping; in one run of the suite it was one more before than after. The check is that
    // the client watches add none, not that the figure never moves.
    let direct = |metrics: &str| {
        gauge(metrics, "kubemock_etcd_watches") as i64
            - gauge(metrics, "kubemock_etcd_watch_caches") as i64
    };
    let before = metrics().await;
    let direct_before = direct(&before);
    for namespace in ["a", "b"] {
        let created = http
            .post(format!("{url}/api/v1/namespaces"))
            .json(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": namespace}}))
            .send()
            .await
            .expect("namespace");
        assert_eq!(created.status(), 201);
    }
    let list: serde_json::Value = http
        .get(format!("{url}/api/v1/configmaps"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("JSON");
    let from = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("list RV")
        .to_owned();
    let paths = [
        "/api/v1/configmaps".to_owned(),
        "/api/v1/namespaces/a/configmaps".to_owned(),
        "/api/v1/namespaces/b/configmaps".to_owned(),
        "/api/v1/namespaces/default/configmaps".to_owned(),
    ];
    let mut watches = Vec::new();
    for i in 0..10 {
        let path = &paths[i % paths.len()];
        let watch = http
            .get(format!("{url}{path}?watch=true&resourceVersion={from}"))
            .send()
            .await
            .expect("watch");
        assert_eq!(watch.status(), 200);
        watches.push((path.clone(), watch.bytes_stream(), Vec::new()));
    }
    for namespace in ["a", "b", "default"] {
        let created = http
            .post(format!("{url}/api/v1/namespaces/{namespace}/configmaps"))
            .json(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cached"}}))
            .send()
            .await
            .expect("create");
        assert_eq!(created.status(), 201);
    }
    // Each watch sees its namespaces' `cached` ConfigMaps.
    for (path, events, buffer) in &mut watches {
        let want = if path == "/api/v1/configmaps" { 3 } else { 1 };
        let mut seen = Vec::new();
        while seen.len() < want {
            let event = next_event(events, buffer).await;
            if event["object"]["metadata"]["name"] == "cached" {
                assert_eq!(event["type"], "ADDED", "{path}: {event}");
                seen.push(event["object"]["metadata"]["namespace"].clone());
            }
        }
        if want == 1 {
            assert!(path.contains(&format!("/{}/", seen[0].as_str().unwrap_or("?"))));
        }
    }
    let after = metrics().await;
    // Ten client watches of their own would make this at least `direct_before` + 9.
    let direct_after = direct(&after);
    assert!(
        direct_after <= direct_before,
        "{direct_after} direct etcd watches after, {direct_before} before: {after}"
    );
    assert!(gauge(&after, "kubemock_etcd_watch_caches") >= 1);
    // resourceVersion=0: from the cache, which has seen the creates (the watches got them).
    let any: serde_json::Value = http
        .get(format!("{url}/api/v1/configmaps?resourceVersion=0"))
        .send()
        .await
        .expect("list rv=0")
        .json()
        .await
        .expect("JSON");
    let names = any["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|item| item["metadata"]["name"] == "cached")
        .count();
    assert_eq!(names, 3, "{any}");
    drop(watches);
    assert_eq!(exit_code_after(&mut server, "-TERM").await, 0);
}
