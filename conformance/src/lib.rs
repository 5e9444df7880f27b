//! kubemock-conformance: black-box HTTP tests of the Kubernetes API semantics kubemock
//! promises (`docs/api-behaviour.md`), one test file per area, each test named after the
//! behaviour it checks.
//!
//! The [`Harness`] talks to the server at `KUBEMOCK_CONFORMANCE_URL` when it is set (any
//! Kubernetes API server without authentication, kubemock or not), and otherwise starts an
//! in-process kubemock on port 0. The authentication tests start secure servers of their own
//! and talk to them through [`tls_client`]s with their own credentials. Each test owns a fresh namespace. Tests that need to reach
//! into the server (forcing a compaction) run only in-process and say so when skipped.
//!
//! A harness speaks one [`Encoding`]. In [`Encoding::Protobuf`] it behaves as client-go's
//! typed clients do (docs/api-behaviour.md#content-types): it asks for protobuf first, sends bodies of built-in kinds as
//! protobuf, and reads protobuf answers and watch frames back into JSON (with the server's
//! own codec, which the golden tests hold to upstream's fixtures), so that the same test body
//! checks both wire formats: `for h in Harness::each_encoding().await { ... }`.

pub mod webhook_server;

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use kubemock_apiserver::{ServerConfig, TestServer, protobuf};
use reqwest::Method;
use serde_json::{Value, json};

/// Environment variable naming an external server to test.
pub const URL_VARIABLE: &str = "KUBEMOCK_CONFORMANCE_URL";

/// The wire format of a harness's requests and of the answers it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// JSON everywhere (kubectl, kube-rs, the Python client, client-go set to JSON).
    Json,
    /// Protobuf for built-in kinds' bodies and answers, JSON otherwise (client-go's typed
    /// clients).
    Protobuf,
}

/// The `Accept` of client-go's typed clients.
const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// A server under test and an HTTP client for it.
pub struct Harness {
    url: String,
    server: Option<TestServer>,
    client: reqwest::Client,
    encoding: Encoding,
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
        Self::start_in(Encoding::Json, config).await
    }

    /// One harness per encoding, JSON first, each with its own server: a test body run for
    /// each checks both wire formats.
    pub async fn each_encoding() -> Vec<Self> {
        Self::each_encoding_with(ServerConfig::default()).await
    }

    /// Like [`Harness::each_encoding`], with this configuration for in-process servers.
    pub async fn each_encoding_with(config: ServerConfig) -> Vec<Self> {
        vec![
            Self::start_in(Encoding::Json, config.clone()).await,
            Self::start_in(Encoding::Protobuf, config).await,
        ]
    }

    /// A harness speaking `encoding` (its name goes to stderr, so a failure says which).
    pub async fn start_in(encoding: Encoding, config: ServerConfig) -> Self {
        eprintln!("conformance harness: {encoding:?}");
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("an HTTP client");
        match std::env::var(URL_VARIABLE) {
            Ok(url) if !url.is_empty() => Harness {
                url: url.trim_end_matches('/').to_owned(),
                server: None,
                client,
                encoding,
            },
            _ => {
                let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
                    .await
                    .expect("start an in-process server");
                Harness {
                    url: server.url().to_owned(),
                    server: Some(server),
                    client,
                    encoding,
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
            encoding: Encoding::Json,
        }
    }

    /// A harness for the server at `url` through `client` (a client with TLS settings and
    /// credentials of its own: [`tls_client`]), speaking JSON.
    pub fn connect_with(url: &str, client: reqwest::Client) -> Self {
        Harness {
            url: url.trim_end_matches('/').to_owned(),
            server: None,
            client,
            encoding: Encoding::Json,
        }
    }

    /// The server's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The encoding this harness speaks.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The `Content-Type` of answers about built-in kinds in this harness's encoding.
    pub fn media_type(&self) -> &'static str {
        match self.encoding {
            Encoding::Json => "application/json",
            Encoding::Protobuf => protobuf::MEDIA_TYPE,
        }
    }

    /// The `Content-Type` of watch streams of built-in kinds in this harness's encoding.
    pub fn watch_media_type(&self) -> &'static str {
        match self.encoding {
            Encoding::Json => "application/json",
            Encoding::Protobuf => protobuf::WATCH_MEDIA_TYPE,
        }
    }

    /// A JSON body as this harness sends it: protobuf, in protobuf, when it is a built-in
    /// object (`kind` and `apiVersion` set, a protobuf form); else JSON.
    fn body(&self, body: &Value) -> (Vec<u8>, &'static str) {
        if self.encoding == Encoding::Protobuf
            && body.get("kind").is_some_and(Value::is_string)
            && body.get("apiVersion").is_some_and(Value::is_string)
            && let Ok(bytes) = protobuf::encode(body)
        {
            return (bytes, protobuf::MEDIA_TYPE);
        }
        (body.to_string().into_bytes(), "application/json")
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
        let accepts = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("accept"));
        if self.encoding == Encoding::Protobuf && !accepts {
            request = request.header("accept", PROTOBUF_ACCEPT);
        }
        if let Some(body) = body {
            request = request.header("content-type", content_type).body(body);
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("a body");
        let body = if headers
            .get("content-type")
            .is_some_and(|t| t == protobuf::MEDIA_TYPE)
        {
            protobuf::decode(&bytes).expect("a protobuf answer decodes")
        } else {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
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

    /// GET with an `Accept` header (a Table, docs/api-behaviour.md#tables).
    pub async fn get_accepting(&self, path: &str, accept: &str) -> Reply {
        self.request_with_headers(Method::GET, path, None, "", &[("accept", accept)])
            .await
    }

    /// POST a body (in protobuf when the harness speaks it and the body is a built-in object).
    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        let (bytes, content_type) = self.body(body);
        self.request(Method::POST, path, Some(bytes), content_type)
            .await
    }

    /// PATCH with a patch document of `content_type` (docs/api-behaviour.md#patch-types).
    pub async fn patch(&self, path: &str, content_type: &str, patch: &Value) -> Reply {
        self.request(
            Method::PATCH,
            path,
            Some(patch.to_string().into_bytes()),
            content_type,
        )
        .await
    }

    /// PUT a body (as [`Harness::post`] sends it).
    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        let (bytes, content_type) = self.body(body);
        self.request(Method::PUT, path, Some(bytes), content_type)
            .await
    }

    /// DELETE, with an optional DeleteOptions body (in protobuf, typed as client-go types it).
    pub async fn delete(&self, path: &str, options: Option<&Value>) -> Reply {
        let Some(options) = options else {
            return self.request(Method::DELETE, path, None, "").await;
        };
        let mut options = options.clone();
        if let Some(fields) = options.as_object_mut()
            && self.encoding == Encoding::Protobuf
        {
            fields
                .entry("kind")
                .or_insert_with(|| json!("DeleteOptions"));
            fields
                .entry("apiVersion")
                .or_insert_with(|| json!("meta.k8s.io/v1"));
        }
        let (bytes, content_type) = self.body(&options);
        self.request(Method::DELETE, path, Some(bytes), content_type)
            .await
    }

    /// Starts a watch (`path` includes the query); returns once the response headers arrived.
    pub async fn watch(&self, path: &str) -> WatchStream {
        let accept = match self.encoding {
            Encoding::Json => "*/*",
            Encoding::Protobuf => PROTOBUF_ACCEPT,
        };
        self.watch_accepting(path, accept).await
    }

    /// Like [`Harness::watch`], with an `Accept` header (Table events, docs/api-behaviour.md#tables).
    pub async fn watch_accepting(&self, path: &str, accept: &str) -> WatchStream {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .header("accept", accept)
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .expect("the server answers the watch");
        let frames = response
            .headers()
            .get("content-type")
            .is_some_and(|t| t == protobuf::WATCH_MEDIA_TYPE);
        WatchStream {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: Box::pin(response.bytes_stream()),
            buffer: Vec::new(),
            frames,
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

/// The causes of a 422 Status as `field: message`, in order.
pub fn causes(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
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

/// A watch response read event by event: JSON lines, or protobuf frames (a 4-byte length and
/// a `WatchEvent`) when the server answered in protobuf.
pub struct WatchStream {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: Vec<u8>,
    /// Protobuf frames rather than JSON lines.
    frames: bool,
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
            if self.frames {
                if let Some(prefix) = self.buffer.get(..4) {
                    let mut len = [0u8; 4];
                    len.copy_from_slice(prefix);
                    let end = 4 + u32::from_be_bytes(len) as usize;
                    if self.buffer.len() >= end {
                        let frame: Vec<u8> = self.buffer.drain(..end).skip(4).collect();
                        return Some(
                            protobuf::decode_watch_event(&frame).expect("each frame is one event"),
                        );
                    }
                }
            } else if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
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

/// An HTTPS client that trusts only `ca_pem` and authenticates with `identity` (a PEM client
/// certificate followed by its key) or `token` (a bearer token), or with nothing.
pub fn tls_client(ca_pem: &str, identity: Option<&str>, token: Option<&str>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .timeout(Duration::from_secs(60));
    for certificate in
        reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).expect("the CA is PEM")
    {
        builder = builder.add_root_certificate(certificate);
    }
    if let Some(identity) = identity {
        builder = builder
            .identity(reqwest::Identity::from_pem(identity.as_bytes()).expect("a PEM identity"));
    }
    if let Some(token) = token {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {token}")
                .parse()
                .expect("a token fits a header"),
        );
        builder = builder.default_headers(headers);
    }
    builder.build().expect("an HTTPS client")
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
