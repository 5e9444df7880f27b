//! A watch whose client reads slower than the writes come, over a real socket
//! (docs/api-behaviour.md#watch-lifetime): it goes on from the store's history, with every event
//! once and in order, instead of ending and making the client watch again.

use std::time::Duration;

use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_storage::Config;
use serde_json::{Value, json};

/// ConfigMaps created while the watch is not read, and the size of each one's data: 12.5 MiB
/// of events, more than the loopback socket's buffers take in.
const COUNT: usize = 400;
const DATA_BYTES: usize = 32 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_read_slower_than_the_writes_catches_up_from_history() {
    // Room for 4 events in the store's live buffer: the watch falls behind as soon as its
    // client stops reading.
    let server =
        TestServer::start_with(ServerConfig::default(), Config::ephemeral().watch_buffer(4))
            .await
            .expect("start");
    let client = reqwest::Client::new();
    let collection = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let list: Value = client
        .get(&collection)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("list body");
    let revision = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list has a resourceVersion")
        .to_owned();
    let mut watch = client
        .get(format!(
            "{collection}?watch=true&resourceVersion={revision}"
        ))
        .send()
        .await
        .expect("watch");
    assert_eq!(watch.status(), 200);

    let data = "x".repeat(DATA_BYTES);
    for i in 0..COUNT {
        let created = client
            .post(&collection)
            .json(&json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}")},
                "data": {"d": data},
            }))
            .send()
            .await
            .expect("create");
        assert_eq!(created.status(), 201);
    }

    // Now read: every ADDED, in order, on the same stream.
    let mut buffer = Vec::new();
    let mut seen = 0;
    while seen < COUNT {
        let chunk = tokio::time::timeout(Duration::from_secs(60), watch.chunk())
            .await
            .expect("the next chunk within 60 s")
            .expect("read");
        let Some(chunk) = chunk else {
            panic!("the watch ended after {seen} of {COUNT} events");
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).expect("an event");
            assert_eq!(event["type"], "ADDED", "{}", event["object"]);
            assert_eq!(event["object"]["metadata"]["name"], format!("cm-{seen}"));
            seen += 1;
        }
    }

    // The watch did fall behind on the way (else this test tested nothing).
    let metrics = client
        .get(format!("{}/metrics", server.url()))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics body");
    let catch_ups: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("kubemock_watch_catch_ups_total "))
        .expect("the catch-up counter")
        .parse()
        .expect("a number");
    assert!(catch_ups >= 1.0, "the watch never fell behind");
    server.stop().await.expect("stop");
}
