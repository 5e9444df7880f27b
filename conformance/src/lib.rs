//! kubemock-conformance: black-box HTTP tests of the Kubernetes API semantics kubemock
//! promises (`shared/spec/API-SEMANTICS.md`), one test file per area, each test named after the
//! section it checks.
//!
//! The [`Harness`] talks to the server at `KUBEMOCK_CONFORMANCE_URL` when it is set (any
//! Kubernetes API server without authentication, kubemock or not), and otherwise starts an
//! in-process kubemock on port 0. Each test owns a fresh namespace. Tests that need to reach
//! into the server (forcing a compaction) run only in-process and say so when skipped.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use kubemock_apiserver::{ServerConfig, TestServer};
use reqwest::Method;
use serde_json::{Value, json};

/// Environment variable naming an external server to test.
pub const URL_VARIABLE: &str = "KUBEMOCK_CONFORMANCE_URL";

/// A server under test and an HTTP client for it.
pub struct Harness {
    url: String,
    server: Option<TestServer>,
    client: reqwest::Client,
}

/// A response: status code, headers and body (JSON, or a string for other bodies).
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body as JSON (`Value::String` of the text when it is not JSON).
    pub body: Value,
}

impl Harness {
    /// Connects to `KUBEMOCK_CONFORMANCE_URL`, or starts an in-process server.
    pub async fn start() -> Self {
        Self::start_with(ServerConfig::default()).await
    }

    /// Like [`Harness::start`], with this configuration for an in-process server.
    pub async fn start_with(config: ServerConfig) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("an HTTP client");
        match std::env::var(URL_VARIABLE) {
            Ok(url) if !url.is_empty() => Harness {
                url: url.trim_end_matches('/').to_owned(),
                server: None,
                client,
            },
            _ => {
                let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
                    .await
                    .expect("start an in-process server");
                Harness {
                    url: server.url().to_owned(),
                    server: Some(server),
                    client,
                }
            }
        }
    }

    /// A harness for the server at `url` (one a test started itself, say on a durable store).
    pub fn connect(url: &str) -> Self {
        Harness {
            url: url.trim_end_matches('/').to_owned(),
            server: None,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("an HTTP client"),
        }
    }

    /// The server's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The in-process server, if the harness started one (else the test should skip what
    /// needs it, saying so).
    pub fn in_process(&self) -> Option<&TestServer> {
        self.server.as_ref()
    }

    /// Sends a request with an optional JSON body and content type.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: &str,
    ) -> Reply {
        self.request_with_headers(method, path, body, content_type, &[])
            .await
    }

    /// Like [`Harness::request`], with extra request headers (`Accept`).
    pub async fn request_with_headers(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut request = self.client.request(method, format!("{}{path}", self.url));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.header("content-type", content_type).body(body);
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("a body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            headers,
            body,
        }
    }

    /// GET.
    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, None, "").await
    }

    /// GET with an `Accept` header (a Table, §10).
    pub async fn get_accepting(&self, path: &str, accept: &str) -> Reply {
        self.request_with_headers(Method::GET, path, None, "", &[("accept", accept)])
            .await
    }

    /// POST a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request(
            Method::POST,
            path,
            Some(body.to_string().into_bytes()),
            "application/json",
        )
        .await
    }

    /// PATCH with a patch document of `content_type` (§5.1).
    pub async fn patch(&self, path: &str, content_type: &str, patch: &Value) -> Reply {
        self.request(
            Method::PATCH,
            path,
            Some(patch.to_string().into_bytes()),
            content_type,
        )
        .await
    }

    /// PUT a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request(
            Method::PUT,
            path,
            Some(body.to_string().into_bytes()),
            "application/json",
        )
        .await
    }

    /// DELETE, with an optional DeleteOptions body.
    pub async fn delete(&self, path: &str, options: Option<&Value>) -> Reply {
        let body = options.map(|o| o.to_string().into_bytes());
        self.request(Method::DELETE, path, body, "application/json")
            .await
    }

    /// Starts a watch (`path` includes the query); returns once the response headers arrived.
    pub async fn watch(&self, path: &str) -> WatchStream {
        self.watch_accepting(path, "*/*").await
    }

    /// Like [`Harness::watch`], with an `Accept` header (Table events, §8.10).
    pub async fn watch_accepting(&self, path: &str, accept: &str) -> WatchStream {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .header("accept", accept)
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .expect("the server answers the watch");
        WatchStream {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: Box::pin(response.bytes_stream()),
            buffer: Vec::new(),
        }
    }

    /// Creates a ConfigMap with `labels` in `namespace` (the test fails unless it is created)
    /// and returns it as the server answered.
    pub async fn create_configmap(&self, namespace: &str, name: &str, labels: Value) -> Value {
        let mut body = configmap(name, json!({}));
        body["metadata"]["labels"] = labels;
        let reply = self
            .post(&format!("/api/v1/namespaces/{namespace}/configmaps"), &body)
            .await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        reply.body
    }

    /// Scrapes `/metrics` (the test fails unless it answers 200 in the text format).
    pub async fn metrics(&self) -> Metrics {
        let reply = self.get("/metrics").await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(
            reply.headers["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let Value::String(text) = reply.body else {
            panic!("/metrics is text, got {:?}", reply.body);
        };
        Metrics::parse(&text)
    }

    /// Creates a namespace with a unique name for one test and returns its name.
    pub async fn namespace(&self, test: &str) -> String {
        let name = format!(
            "{}-{:08x}",
            test.replace('_', "-").chars().take(40).collect::<String>(),
            fastrand_u32()
        );
        let reply = self
            .post("/api/v1/namespaces", &json!({"metadata": {"name": name}}))
            .await;
        assert_eq!(
            reply.status, 201,
            "creating namespace {name}: {:?}",
            reply.body
        );
        name
    }
}

/// A random u32 (namespaces of concurrent tests must differ).
fn fastrand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    hasher.finish() as u32
}

/// A ConfigMap body.
pub fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// A Deployment body with `replicas` and an image.
pub fn deployment(name: &str, replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]}
            }
        }
    })
}

/// How long a test waits for one watch event before failing.
pub const EVENT_WAIT: Duration = Duration::from_secs(30);

/// A watch response read line by line.
pub struct WatchStream {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: Vec<u8>,
}

impl WatchStream {
    /// The next event, `None` when the stream ended. Fails the test after [`EVENT_WAIT`].
    pub async fn next_event(&mut self) -> Option<Value> {
        tokio::time::timeout(EVENT_WAIT, self.next_line())
            .await
            .expect("a watch event before the deadline")
    }

    /// The next event within `wait`, `Some(None)` if the stream ended, `None` on timeout.
    pub async fn next_event_within(&mut self, wait: Duration) -> Option<Option<Value>> {
        tokio::time::timeout(wait, self.next_line()).await.ok()
    }

    async fn next_line(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return Some(serde_json::from_slice(&line).expect("each line is one JSON event"));
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(_)) | None => return None,
            }
        }
    }
}

/// One scrape of `/metrics`, parsed from the Prometheus text format.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// Every sample: metric name, labels, value.
    pub samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Metrics {
    /// Parses the text exposition format (comments skipped, label values unescaped).
    pub fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| parse_sample(line).unwrap_or_else(|| panic!("bad sample {line:?}")))
            .collect();
        Metrics { samples }
    }

    /// The sum of the samples of `name` whose labels include every pair in `labels` (0 if
    /// there are none).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, value)| value)
            .sum()
    }

    /// True if there is any sample of `name`.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|(n, _, _)| n == name)
    }
}

/// `name{label="value",...} value [timestamp]`.
fn parse_sample(line: &str) -> Option<(String, BTreeMap<String, String>, f64)> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_owned();
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(after) = rest.strip_prefix('{') {
        let mut chars = after.char_indices();
        loop {
            let (start, c) = chars.next()?;
            if c == '}' {
                rest = &after[start + 1..];
                break;
            }
            if c == ',' {
                continue;
            }
            let eq = start + after[start..].find('=')?;
            let key = after[start..eq].to_owned();
            while chars.next()?.0 < eq + 1 {}
            let mut value = String::new();
            loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    other => value.push(other),
                }
            }
            labels.insert(key, value);
        }
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse().ok()?,
    };
    Some((name, labels, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_parse_with_escaped_labels_and_special_values() {
        let metrics = Metrics::parse(
            "# HELP m h\n# TYPE m counter\nm{a=\"x\",b=\"q\\\"\\\\\\n,}\"} 3\nm{a=\"y\"} +Inf\nn 1.5 1700000000\n",
        );
        assert_eq!(metrics.samples.len(), 3);
        assert_eq!(metrics.samples[0].1["b"], "q\"\\\n,}");
        assert_eq!(metrics.value("m", &[("a", "x")]), 3.0);
        assert_eq!(metrics.value("m", &[("a", "y")]), f64::INFINITY);
        assert_eq!(metrics.value("n", &[]), 1.5);
        assert_eq!(metrics.value("m", &[("a", "z")]), 0.0);
        assert!(metrics.has("n") && !metrics.has("o"));
    }
}
