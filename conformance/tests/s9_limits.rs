//! docs/api-behaviour.md#errors: the server under load. A full in-flight limit answers 429 with `Retry-After: 1` and
//! the real server's plain-text body; watches hold no slot; the health checks and `/metrics`
//! are never turned away; an oversized body is 413. The server answers normally after either.

use std::time::{Duration, Instant};

use kubemock_apiserver::ServerConfig;
use kubemock_conformance::{Harness, configmap};
use serde_json::json;

/// A server that lets one read-only request in flight at a time.
async fn one_read_at_a_time() -> Harness {
    Harness::start_with(ServerConfig {
        max_requests_inflight: 1,
        ..ServerConfig::default()
    })
    .await
}

/// Waits until the server reports `n` read-only requests in flight.
async fn wait_for_reads_in_flight(h: &Harness, n: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = h.metrics().await;
        let reads = metrics.value(
            "apiserver_current_inflight_requests",
            &[("request_kind", "readOnly")],
        );
        if reads == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{reads} reads in flight, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn s9_2_a_full_in_flight_limit_is_429_with_retry_after_and_the_server_recovers() {
    let h = one_read_at_a_time().await;
    let Some(server) = h.in_process() else {
        eprintln!("skipped: needs an in-process server with an in-flight limit of 1");
        return;
    };
    let ns = h.namespace("s9-2-inflight").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    // A GET at a resourceVersion the store has not reached waits for it (docs/api-behaviour.md#resourceversion-on-reads): it holds the
    // only read-only slot until the test writes that revision.
    let next = server.store().revision() + 1;
    let held_path = format!("{path}/held?resourceVersion={next}");
    let held = h.get(&held_path);
    let meanwhile = async {
        wait_for_reads_in_flight(&h, 1.0).await;
        for turned_away in [
            format!("{path}/other"),
            path.clone(),
            "/api".to_owned(),
            "/version".to_owned(),
        ] {
            let reply = h.get(&turned_away).await;
            assert_eq!(reply.status, 429, "{turned_away}");
            assert_eq!(reply.headers["retry-after"], "1");
            assert_eq!(reply.headers["content-type"], "text/plain; charset=utf-8");
            assert_eq!(
                reply.body,
                json!("Too many requests, please try again later.\n")
            );
        }
        for exempt in ["/healthz", "/livez", "/readyz", "/readyz/ping", "/metrics"] {
            assert_eq!(h.get(exempt).await.status, 200, "{exempt}");
        }
        let watch = h.watch(&format!("{path}?watch=true")).await;
        assert_eq!(watch.status, 200, "watches hold no slot");
        drop(watch);
        // Mutating requests have their own slots; this write releases the held read.
        let reply = h.post(&path, &configmap("held", json!({}))).await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
    };
    let (held, ()) = tokio::join!(held, meanwhile);
    assert_eq!(held.status, 200, "{:?}", held.body);
    assert_eq!(held.body["metadata"]["name"], "held");

    wait_for_reads_in_flight(&h, 0.0).await;
    assert_eq!(h.get(&format!("{path}/held")).await.status, 200);
    assert_eq!(h.get(&path).await.status, 200);
    assert_eq!(h.get("/readyz").await.status, 200);
    let metrics = h.metrics().await;
    let rejected = [
        ("verb", "GET"),
        ("resource", "configmaps"),
        ("scope", "resource"),
        ("code", "429"),
    ];
    assert_eq!(metrics.value("apiserver_request_total", &rejected), 1.0);
    assert_eq!(
        metrics.value(
            "apiserver_request_total",
            &[
                ("verb", "GET"),
                ("resource", ""),
                ("subresource", ""),
                ("code", "429")
            ]
        ),
        1.0,
        "a turned-away /version is counted under its verb alone"
    );
}

#[tokio::test]
async fn s9_2_open_watches_do_not_count_against_the_in_flight_limit() {
    let h = one_read_at_a_time().await;
    if h.in_process().is_none() {
        eprintln!("skipped: needs an in-process server with an in-flight limit of 1");
        return;
    }
    let ns = h.namespace("s9-2-watches").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut watches = Vec::new();
    for _ in 0..3 {
        let watch = h.watch(&format!("{path}?watch=true")).await;
        assert_eq!(watch.status, 200);
        watches.push(watch);
    }
    wait_for_reads_in_flight(&h, 0.0).await;
    h.create_configmap(&ns, "c", json!({})).await;
    for watch in &mut watches {
        let event = watch.next_event().await.expect("an event");
        assert_eq!(event["object"]["metadata"]["name"], "c");
    }
    assert_eq!(h.get(&format!("{path}/c")).await.status, 200);
    assert_eq!(h.get(&path).await.status, 200);
}

#[tokio::test]
async fn s9_2_an_oversized_body_is_413_and_the_next_requests_are_served() {
    let h = Harness::start().await;
    let ns = h.namespace("s9-2-too-large").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let existing = h.create_configmap(&ns, "c", json!({})).await;
    let big = json!({"k": "x".repeat(kubemock_apiserver::MAX_BODY_BYTES)});

    let reply = h.post(&path, &configmap("big", big.clone())).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.body["reason"], "RequestEntityTooLarge");
    assert_eq!(
        reply.body["message"],
        format!(
            "Request entity too large: limit is {}",
            kubemock_apiserver::MAX_BODY_BYTES
        )
    );
    let mut too_big = existing.clone();
    too_big["data"] = big;
    let reply = h.put(&format!("{path}/c"), &too_big).await;
    assert_eq!(reply.status, 413);

    // Normal service afterwards: writes, reads, health.
    h.create_configmap(&ns, "after", json!({"k": "v"})).await;
    let reply = h.get(&format!("{path}/c")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body["metadata"]["resourceVersion"], existing["metadata"]["resourceVersion"],
        "the refused update changed nothing"
    );
    assert_eq!(h.get("/readyz").await.status, 200);
    let metrics = h.metrics().await;
    assert!(
        metrics.value(
            "apiserver_request_total",
            &[
                ("verb", "POST"),
                ("resource", "configmaps"),
                ("code", "413")
            ]
        ) >= 1.0
    );
}

/// One HTTP/1.1 exchange on a kept-alive socket: the status line of the answer.
fn exchange(stream: &mut std::net::TcpStream, head: &str, body: &[u8]) -> String {
    use std::io::{Read, Write};
    let request = format!(
        "{head}\r\nHost: kubemock\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .expect("write the head");
    stream
        .write_all(body)
        .expect("write the body: the server hung up");
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).expect("read the answer");
        assert!(
            n > 0,
            "the server closed the connection instead of answering"
        );
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .expect("a content-length")
        .trim()
        .parse()
        .expect("a number");
    while data.len() < end + length {
        let n = stream.read(&mut buf).expect("read the body");
        assert!(n > 0, "the server closed the connection mid-answer");
        data.extend_from_slice(&buf[..n]);
    }
    head.lines().next().unwrap_or("").to_owned()
}

/// Found by `kubemock-httpfuzz` (seed 100, requests 28725 and 28728): answers given before
/// the request body was read (404 for a resource that does not exist, 406 for an Accept
/// nothing matches, the router's 404 and 405) left the body unread, and the server closed the
/// kept-alive connection under the client, which saw its body write break or its next request
/// fail ("connection closed before message completed"). The body is read first now (Go's
/// server likewise discards an unread body to keep the connection; upstream answers these
/// after `http.Server` did so).
#[tokio::test]
async fn s9_2_an_answer_before_the_body_is_read_keeps_the_connection() {
    let h = Harness::start().await;
    let addr = h
        .url()
        .strip_prefix("http://")
        .expect("an http URL")
        .to_owned();
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        let body = format!("{{\"k\": \"{}\"}}", "x".repeat(200 * 1024)).into_bytes();
        for (head, status) in [
            ("POST /apis/nope.example.com/v1/namespaces/default/things HTTP/1.1\r\nContent-Type: application/json", "404"),
            ("DELETE /api/v1/namespaces/default/configmaps/x HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;as=Bogus;v=v1;g=meta.k8s.io", "406"),
            ("POST /nowhere HTTP/1.1\r\nContent-Type: application/json", "404"),
            ("PUT /version HTTP/1.1\r\nContent-Type: application/json", "405"),
        ] {
            let answer = exchange(&mut stream, head, &body);
            assert!(answer.contains(status), "{head}: {answer}");
            let answer = exchange(&mut stream, "GET /readyz HTTP/1.1", b"");
            assert!(answer.contains("200"), "after {head}: {answer}");
        }
    })
    .await
    .expect("the exchanges");
}

/// Found by `kubemock-httpfuzz` (seed 101, requests 29542 and 29543): a body over the limit
/// is answered (413, or the router's 404 and 405) without being read to its end, so the
/// connection cannot carry another request; the server closed it without saying so, and the
/// client's next request on it failed ("connection closed before message completed"). The
/// answer now says `Connection: close`, as Go's server does when it leaves a body unread.
#[tokio::test]
async fn s9_2_an_oversized_body_is_answered_with_connection_close() {
    let h = Harness::start().await;
    let big = vec![b'x'; kubemock_apiserver::MAX_BODY_BYTES + 1024 * 1024];
    let client = reqwest::Client::new();
    let mut answered = 0;
    for (method, path, status) in [
        (
            reqwest::Method::POST,
            "/api/v1/namespaces/default/configmaps",
            413,
        ),
        (
            reqwest::Method::OPTIONS,
            "/apis/batch/v1/namespaces/default/jobs/j",
            413,
        ),
        (reqwest::Method::POST, "/nowhere", 404),
        (reqwest::Method::PUT, "/version", 405),
    ] {
        let response = client
            .request(method.clone(), format!("{}{path}", h.url()))
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await;
        // The server may stop reading before the client has written it all: then the client
        // sees a broken write instead of the answer, and nothing is reused either.
        let Ok(response) = response else { continue };
        answered += 1;
        assert_eq!(response.status().as_u16(), status, "{method} {path}");
        assert_eq!(
            response
                .headers()
                .get("connection")
                .and_then(|v| v.to_str().ok()),
            Some("close"),
            "{method} {path}"
        );
        // The next request (on a new connection) is served.
        let next = client.get(format!("{}/readyz", h.url())).send().await;
        assert_eq!(next.expect("served").status().as_u16(), 200);
    }
    assert!(answered > 0, "no answer reached the client");
}
