//! The README's code blocks, run as written against the real `kubemock serve` on port 0:
//! the kubectl session (real kubectl, the kubeconfig the server writes to its default path,
//! with `XDG_RUNTIME_DIR` and `HOME` pointing at fresh directories, so kubectl's discovery
//! cache is fresh too), the curl session (only the server URL on its first line replaced), the
//! Python example (`KUBEMOCK` set to the server's URL) and the Rust example (a test of this
//! file, compared with the README's block). `docs/test-powers.md`'s `Cluster` example is
//! `tests/cluster.rs`'s test, compared the same way.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");
const WAIT: Duration = Duration::from_secs(120);
const README: &str = include_str!("../README.md");

/// The body of the code block of `language` between the README's `name` markers.
fn block(name: &str, language: &str) -> String {
    let start = README
        .find(&format!("<!-- {name}:start -->"))
        .unwrap_or_else(|| panic!("the README has a {name}"));
    let end = README
        .find(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("the {name} ends"));
    README[start..end]
        .split_once(&format!("```{language}\n"))
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body.to_owned())
        .unwrap_or_else(|| panic!("a {language} code block in the {name}"))
}

/// Starts `kubemock serve --port 0 ARGS...` with `env`, and returns it with its URL.
async fn serve(args: &[&str], env: &[(&str, &Path)]) -> (Child, String) {
    let mut command = Command::new(BINARY);
    command
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut server = command.spawn().expect("start kubemock");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let ready = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("ready in time")
        .expect("read stdout")
        .expect("a ready line");
    let url = ready
        .strip_prefix("kubemock: serving on ")
        .expect("the ready line")
        .to_owned();
    (server, url)
}

/// Runs `script` with `bash -euo pipefail` and `env`; its stdout, after asserting success.
async fn bash(script: &str, env: &[(&str, &Path)]) -> String {
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .env_remove("KUBECONFIG")
        .env_remove("XDG_CACHE_HOME");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .expect("the script ends in time")
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{script}\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn the_readme_kubectl_session_works_as_written() {
    let runtime = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = [("XDG_RUNTIME_DIR", runtime.path()), ("HOME", home.path())];
    let (_server, _url) = serve(&[], &env).await;
    let session = block("kubectl-session", "sh");
    assert!(
        session.lines().count() <= 10,
        "the session is at most 10 lines"
    );
    let stdout = bash(&session, &env).await;
    for expected in [
        "namespace/default",
        "deployment.apps/web created",
        "successfully rolled out",
        "deployment.apps/web scaled",
        "configmap/greeting created",
        "hello",
        "deployment.apps \"web\" deleted",
        "service/kubernetes",
    ] {
        // `get namespaces` prints a table: its NAME column holds `default`.
        let found = if expected == "namespace/default" {
            stdout.lines().any(|l| l.starts_with("default "))
        } else {
            stdout.contains(expected)
        };
        assert!(found, "{expected:?} missing from:\n{stdout}");
    }
    // Two ready pods of web, each on a simulated node.
    let ready_pods = stdout
        .lines()
        .filter(|l| l.starts_with("web-") && l.contains(" 1/1 ") && l.contains("Running"))
        .count();
    assert!(ready_pods >= 2, "{stdout}");
}

#[tokio::test]
async fn the_readme_curl_session_works_as_written() {
    let (_server, url) = serve(&["--no-kubeconfig"], &[]).await;
    let script = block("curl-session", "sh");
    let first = script.lines().next().expect("a first line");
    assert_eq!(first, "KUBEMOCK=http://127.0.0.1:6443");
    let script = script.replacen(first, &format!("KUBEMOCK={url}"), 1);
    let stdout = bash(&script, &[]).await;
    // Four answers: the created object, the same object read back, a list, watch events.
    let mut values = serde_json::Deserializer::from_str(&stdout).into_iter::<serde_json::Value>();
    let mut next = || {
        values
            .next()
            .expect("another JSON value")
            .expect("valid JSON")
    };
    let created = next();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["data"]["message"], "hello");
    assert!(created["metadata"]["uid"].is_string());
    let read = next();
    assert_eq!(read, created);
    let list = next();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "greeting");
    let event = next();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "greeting");
}

/// The Python example needs `python3` with `requests`. In CI (`CI` set) a missing one fails
/// the test; elsewhere the test says SKIPPED on stderr, past the harness's capture.
#[tokio::test]
async fn the_readme_python_example_works_as_written() {
    let probe = Command::new("python3")
        .args(["-c", "import requests"])
        .output()
        .await;
    if !probe.is_ok_and(|o| o.status.success()) {
        let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
        assert!(!in_ci, "CI is set but python3 with requests is missing");
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED the_readme_python_example_works_as_written: no python3 with `requests` \
             (pip install requests); nothing was checked"
        );
        return;
    }
    let (_server, url) = serve(&["--no-kubeconfig", "--no-controllers"], &[]).await;
    let example = block("python-example", "python");
    let output = tokio::time::timeout(
        WAIT,
        Command::new("python3")
            .args(["-c", &example])
            .env("KUBEMOCK", &url)
            .output(),
    )
    .await
    .expect("the example ends in time")
    .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.trim(), "{'a': '1'}");
}

/// The README's Rust example, as the test it shows (the lines between the markers, less this
/// module's indentation, are the README's block).
mod rust_example {
    // readme:rust:start
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};
    use kubemock::testing::Cluster;

    #[tokio::test]
    async fn a_config_map_round_trips() -> anyhow::Result<()> {
        let cluster = Cluster::start().await?;
        let config_maps: Api<ConfigMap> = Api::default_namespaced(cluster.kube_client());
        let greeting = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "greeting"}, "data": {"message": "hello"}}))?;
        config_maps
            .create(&PostParams::default(), &greeting)
            .await?;
        let read = config_maps.get("greeting").await?;
        assert_eq!(read.data.unwrap_or_default()["message"], "hello");
        Ok(())
    }
    // readme:rust:end
}

/// The README's `TestServer` example, as the test it shows.
mod rust_testserver {
    // readme:testserver:start
    use kubemock_apiserver::TestServer;

    #[tokio::test]
    async fn the_api_server_alone_answers() -> anyhow::Result<()> {
        let server = TestServer::start().await?;
        let namespace = reqwest::get(format!("{}/api/v1/namespaces/default", server.url())).await?;
        assert_eq!(namespace.status(), 200);
        server.stop().await?;
        Ok(())
    }
    // readme:testserver:end
}

/// The text between `start` and `end` in `source`, each line less `indent` leading spaces.
fn excerpt(source: &str, start: &str, end: &str, indent: usize) -> String {
    let from = source.find(start).expect("the example starts") + start.len();
    let to = source.find(end).expect("the example ends");
    let text = &source[from..to];
    let text = text.rsplit_once('\n').map_or(text, |(body, _)| body);
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.get(indent..).unwrap_or(line.trim_start()));
        out.push('\n');
    }
    out
}

#[test]
fn the_readme_rust_example_is_the_test_that_runs() {
    let example = excerpt(
        include_str!("readme.rs"),
        "// readme:rust:start\n",
        "// readme:rust:end",
        4,
    );
    assert_eq!(block("rust-example", "rust"), example);
}

#[test]
fn the_readme_testserver_example_is_the_test_that_runs() {
    let example = excerpt(
        include_str!("readme.rs"),
        "// readme:testserver:start\n",
        "// readme:testserver:end",
        4,
    );
    assert_eq!(block("rust-testserver", "rust"), example);
}

/// `docs/test-powers.md`'s `kubemock::testing::Cluster` example is `tests/cluster.rs`'s test,
/// as run.
#[test]
fn the_cluster_example_in_the_docs_is_the_test_that_runs() {
    let test = include_str!("cluster.rs");
    let start = test.find("// readme:start\n").expect("the example starts") + 16;
    let end = test.find("// readme:end").expect("the example ends");
    let example = &test[start..end];
    assert!(
        example.lines().count() < 30,
        "the example is under 30 lines"
    );
    let docs = include_str!("../docs/test-powers.md");
    assert!(
        docs.contains(&format!("```rust\n{example}```")),
        "docs/test-powers.md's example differs from tests/cluster.rs:\n{example}"
    );
}
