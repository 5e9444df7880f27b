//! The README's curl session, run exactly as written (only the server URL on its first line is
//! replaced) against `kubemock serve` on port 0.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");
const WAIT: Duration = Duration::from_secs(60);

/// The shell lines between the README's curl-session markers.
fn session() -> String {
    let readme = include_str!("../README.md");
    let start = readme
        .find("<!-- curl-session:start -->")
        .expect("the README has a curl session");
    let end = readme
        .find("<!-- curl-session:end -->")
        .expect("the session ends");
    let block = &readme[start..end];
    let body = block
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(body, _)| body)
        .expect("a sh code block");
    body.to_owned()
}

#[tokio::test]
async fn the_readme_curl_session_works_as_written() {
    let mut server = Command::new(BINARY)
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock");
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
    let script = session();
    let first = script.lines().next().expect("a first line");
    assert_eq!(first, "KUBEMOCK=http://127.0.0.1:6443");
    let script = script.replacen(first, &format!("KUBEMOCK={url}"), 1);
    let output = tokio::time::timeout(
        WAIT,
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .output(),
    )
    .await
    .expect("the session ends (its watch has timeoutSeconds)")
    .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
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

/// The README's `kubemock::testing::Cluster` example is `tests/cluster.rs`'s test, as run.
#[test]
fn the_readme_cluster_example_is_the_test_that_runs() {
    let test = include_str!("cluster.rs");
    let start = test.find("// readme:start\n").expect("the example starts") + 16;
    let end = test.find("// readme:end").expect("the example ends");
    let example = &test[start..end];
    assert!(
        example.lines().count() < 30,
        "the example is under 30 lines"
    );
    let readme = include_str!("../README.md");
    assert!(
        readme.contains(&format!("```rust\n{example}```")),
        "the README's example differs from tests/cluster.rs:\n{example}"
    );
}
