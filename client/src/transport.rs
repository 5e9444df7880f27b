//! The only place that does network I/O: sends a [`Request`] to the API server over reqwest
//! (rustls), turns error answers into `Error::Api(Status)`, retries what is safe to retry
//! (429 with its Retry-After for every verb, connection failures for idempotent verbs), and
//! splits watch responses into events.
//!
//! A client may instead hand its requests to a server in the same process
//! ([`LocalServer`]): the same requests, headers and answers, without a socket. The kubemock
//! binary's own controllers reach their server so (issue 23: the loopback socket's HTTP
//! framing and system calls were about an eighth of the process's CPU at 10,000 pods).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use parking_lot::Mutex;
use serde::Deserialize;
use tokio::time::Instant;

use crate::config::{Auth, Config, TOKEN_FILE_REFRESH};
use crate::error::{Error, Result};
use crate::request::Request;

/// Retries of a request answered 429 or failing to connect (client-go retries up to 10 times).
pub const MAX_RETRIES: u32 = 10;
/// First wait before retrying a connection failure; doubled each time up to
/// [`RETRY_BACKOFF_CAP`].
pub const RETRY_BACKOFF_BASE: Duration = Duration::from_millis(100);
/// Longest wait between retries, also the cap on a server's Retry-After.
pub const RETRY_BACKOFF_CAP: Duration = Duration::from_secs(10);
/// TCP keep-alive probes (client-go's dialer uses 30 s): a watch on a connection whose peer
/// vanished without a reset ends instead of hanging.
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// A watch event larger than this is refused (a runaway stream must not exhaust memory);
/// the server's own request body limit is far lower.
pub const MAX_WATCH_LINE: usize = 64 * 1024 * 1024;

/// A server in this process that takes a client's requests without a socket.
pub trait LocalServer: Send + Sync + 'static {
    /// Answers `request`: its URI is absolute (the configuration's URL and the request's
    /// path), its headers are those the client would send, its body is whole. The answer's body
    /// may stream (a watch).
    fn call(
        &self,
        request: http::Request<Bytes>,
    ) -> futures_util::future::BoxFuture<'static, http::Response<reqwest::Body>>;
}

/// A shared [`LocalServer`], as a [`Config`] holds it.
#[derive(Clone)]
pub struct Local(pub Arc<dyn LocalServer>);

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Local(..)")
    }
}

/// A handle to one API server: cheap to clone, shared by every `Api`.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// A `User-Agent` of this handle's own, sent instead of the configuration's
    /// ([`Client::with_user_agent`]).
    user_agent: Option<reqwest::header::HeaderValue>,
}

struct Inner {
    /// The HTTP client (connection pool, TLS).
    http: reqwest::Client,
    /// Base URL without trailing slash.
    base: String,
    /// Credentials.
    auth: Auth,
    /// The token read from a token file and when it was read; written by whichever request
    /// finds it stale.
    file_token: Mutex<Option<(Instant, String)>>,
    /// Timeout of non-watch requests.
    timeout: Duration,
    /// The default namespace of the configuration.
    default_namespace: String,
    /// The server in this process that requests go to, if any, instead of `http`.
    local: Option<Local>,
    /// The configuration's `User-Agent`: the HTTP client adds it to what it sends; a request
    /// to `local` is given it here.
    user_agent: reqwest::header::HeaderValue,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.inner.base)
            .finish()
    }
}

impl Client {
    /// A client for `config`.
    pub fn new(config: Config) -> Result<Self> {
        let user_agent = reqwest::header::HeaderValue::from_str(&config.user_agent)
            .map_err(|err| Error::Config(format!("invalid user agent: {err}")))?;
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .user_agent(config.user_agent.clone())
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .tcp_keepalive(TCP_KEEPALIVE)
            .pool_idle_timeout(Duration::from_secs(90));
        if let Some(pem) = &config.root_certificates {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|err| Error::Config(format!("invalid certificate authority: {err}")))?;
            builder = builder.tls_built_in_root_certs(false);
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let Some(pem) = &config.client_identity {
            let identity = reqwest::Identity::from_pem(pem)
                .map_err(|err| Error::Config(format!("invalid client certificate: {err}")))?;
            builder = builder.identity(identity);
        }
        if let Some((host, addr)) = &config.resolve {
            builder = builder.resolve(host, *addr);
        }
        if config.accept_invalid_certs {
            builder = builder.danger_accept_invalid_certs(true);
        }
        let http = builder
            .build()
            .map_err(|err| Error::Config(format!("building the HTTP client: {err}")))?;
        Ok(Client {
            user_agent: None,
            inner: Arc::new(Inner {
                http,
                base: config.cluster_url,
                auth: config.auth,
                file_token: Mutex::new(None),
                timeout: config.timeout,
                default_namespace: config.default_namespace,
                local: config.local,
                user_agent,
            }),
        })
    }

    /// This client, sending `agent` as its `User-Agent`; it shares this client's connections
    /// and credentials. As client-go's `rest.AddUserAgent` on a copied configuration: a
    /// controller manager names each controller's requests, and the server their writes.
    pub fn with_user_agent(&self, agent: &str) -> Result<Self> {
        let agent = reqwest::header::HeaderValue::from_str(agent)
            .map_err(|err| Error::Config(format!("invalid user agent {agent:?}: {err}")))?;
        Ok(Client {
            inner: Arc::clone(&self.inner),
            user_agent: Some(agent),
        })
    }

    /// A client from the default kubeconfig (`KUBECONFIG`, else `~/.kube/config`).
    pub fn try_default() -> Result<Self> {
        Self::new(Config::infer()?)
    }

    /// The namespace of the configuration's context.
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    fn token(&self) -> Result<Option<String>> {
        match &self.inner.auth {
            Auth::None => Ok(None),
            Auth::Bearer(token) => Ok(Some(token.clone())),
            Auth::Shared(token) => Ok(Some(token.get())),
            Auth::BearerFile(path) => {
                let mut cached = self.inner.file_token.lock();
                if let Some((read, token)) = cached.as_ref() {
                    if read.elapsed() < TOKEN_FILE_REFRESH {
                        return Ok(Some(token.clone()));
                    }
                }
                let token = std::fs::read_to_string(path)
                    .map_err(|err| Error::Config(format!("reading {}: {err}", path.display())))?
                    .trim()
                    .to_owned();
                *cached = Some((Instant::now(), token.clone()));
                Ok(Some(token))
            }
        }
    }

    /// Sends once; `None` timeout for watches.
    async fn send_once(
        &self,
        request: &Request,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response> {
        let url = format!("{}{}", self.inner.base, request.path);
        let mut builder = self.inner.http.request(request.method.clone(), url).header(
            reqwest::header::ACCEPT,
            request.accept.unwrap_or(crate::request::JSON),
        );
        if let Some(agent) = &self.user_agent {
            builder = builder.header(reqwest::header::USER_AGENT, agent.clone());
        }
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        if let Some(token) = self.token()? {
            builder = builder.bearer_auth(token);
        }
        if let Some((_, content_type)) = &request.body {
            builder = builder.header(reqwest::header::CONTENT_TYPE, *content_type);
        }
        match &self.inner.local {
            None => {
                if let Some((body, _)) = &request.body {
                    builder = builder.body(body.clone());
                }
                builder.send().await.map_err(Error::Transport)
            }
            Some(local) => self.send_local(local, builder, request).await,
        }
    }

    /// Sends the request `builder` holds (all but its body, which is `request`'s, copied once)
    /// to the server in this process: what the HTTP client would send, the configuration's
    /// `User-Agent` included, and as it would, fails when no answer comes within the request's
    /// timeout.
    async fn send_local(
        &self,
        local: &Local,
        builder: reqwest::RequestBuilder,
        request: &Request,
    ) -> Result<reqwest::Response> {
        let built = builder.build().map_err(Error::Transport)?;
        let timeout = built.timeout().copied();
        let (mut parts, _) = http::Request::try_from(built)
            .map_err(Error::Transport)?
            .into_parts();
        parts
            .headers
            .entry(reqwest::header::USER_AGENT)
            .or_insert_with(|| self.inner.user_agent.clone());
        let body = request
            .body
            .as_ref()
            .map(|(body, _)| Bytes::from(body.clone()))
            .unwrap_or_default();
        let answer = local.0.call(http::Request::from_parts(parts, body));
        let response = match timeout {
            Some(timeout) => tokio::time::timeout(timeout, answer)
                .await
                .map_err(|_| Error::Timeout(timeout))?,
            None => answer.await,
        };
        Ok(reqwest::Response::from(response))
    }

    /// Sends with retries and returns the successful response (2xx).
    async fn send(
        &self,
        request: &Request,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response> {
        let mut attempt = 0;
        loop {
            let wait = match self.send_once(request, timeout).await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let retry_after = retry_after(&response);
                    let status = response.status();
                    let err = error_from_response(response).await;
                    // As client-go's `checkWait` (`rest/request.go`): only an answer with a
                    // Retry-After is retried. A 429 says the server did not process the
                    // request, so retrying it is safe for every verb; a 5xx with Retry-After
                    // (504 "too large resource version") only for reads. A 429 without one
                    // (an eviction its disruption budget refuses) is the caller's to handle.
                    let retryable = retry_after.is_some()
                        && (status.as_u16() == 429
                            || (status.is_server_error()
                                && request.method == reqwest::Method::GET));
                    if !retryable || attempt >= MAX_RETRIES {
                        return Err(err);
                    }
                    retry_after
                        .unwrap_or(Duration::from_secs(1))
                        .min(RETRY_BACKOFF_CAP)
                }
                Err(err) => {
                    if !(err.is_connection_error() && request.is_idempotent())
                        || attempt >= MAX_RETRIES
                    {
                        return Err(err);
                    }
                    backoff(attempt)
                }
            };
            attempt += 1;
            tracing::debug!(method = %request.method, path = %request.path, attempt, ?wait, "retrying request");
            tokio::time::sleep(wait).await;
        }
    }

    /// Sends a request and returns the body of its successful answer.
    pub async fn request_bytes(&self, request: &Request) -> Result<Bytes> {
        let response = self.send(request, Some(self.inner.timeout)).await?;
        response.bytes().await.map_err(Error::Transport)
    }

    /// Sends a request and decodes its successful answer.
    pub async fn request<T: serde::de::DeserializeOwned>(&self, request: &Request) -> Result<T> {
        let bytes = self.request_bytes(request).await?;
        serde_json::from_slice(&bytes).map_err(Error::Decode)
    }

    /// Sends a watch request and returns its lines as a stream of decoded events. An HTTP
    /// error answer is returned as an error before any event.
    pub async fn request_events<K: serde::de::DeserializeOwned>(
        &self,
        request: &Request,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>>> + Send + use<K>> {
        let response = self.send(request, None).await?;
        Ok(decode_lines(response.bytes_stream()))
    }
}

/// Exponential backoff for the `attempt`th retry (0-based), capped.
fn backoff(attempt: u32) -> Duration {
    RETRY_BACKOFF_BASE
        .saturating_mul(1u32 << attempt.min(16))
        .min(RETRY_BACKOFF_CAP)
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The `Status` of an error answer; a body that is no Status becomes one with the code.
async fn error_from_response(response: reqwest::Response) -> Error {
    let code = response.status();
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(err) => return Error::Transport(err),
    };
    match serde_json::from_slice::<Status>(&body) {
        Ok(status) if status.code.is_some() || status.reason.is_some() => {
            Error::Api(Box::new(status))
        }
        _ => Error::api(
            code.as_u16(),
            code.canonical_reason().unwrap_or("Unknown"),
            String::from_utf8_lossy(&body).into_owned(),
        ),
    }
}

/// One event of a watch stream (docs/api-behaviour.md#watch-stream).
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// An object was added (or entered the selection, or is part of the initial events).
    Added(K),
    /// An object changed.
    Modified(K),
    /// An object was deleted (or left the selection); its last state.
    Deleted(K),
    /// Everything up to this resourceVersion has been delivered (docs/api-behaviour.md#bookmarks).
    Bookmark(Bookmark),
    /// The server ended the watch with this Status (410 Expired: relist, docs/api-behaviour.md#expired-watches).
    Error(Box<Status>),
}

/// A bookmark's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bookmark {
    /// The resourceVersion to resume from.
    pub resource_version: String,
    /// Whether it marks the end of a streaming list's initial events (docs/api-behaviour.md#streaming-lists).
    pub initial_events_end: bool,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Box<serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: String,
    #[serde(default)]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl<K: serde::de::DeserializeOwned> WatchEvent<K> {
    /// Decodes one line of a watch stream.
    pub fn from_json(line: &[u8]) -> Result<Self> {
        let raw: RawEvent = serde_json::from_slice(line).map_err(Error::Decode)?;
        let object = raw.object.get();
        let decode = || serde_json::from_str::<K>(object).map_err(Error::Decode);
        Ok(match raw.kind.as_str() {
            "ADDED" => WatchEvent::Added(decode()?),
            "MODIFIED" => WatchEvent::Modified(decode()?),
            "DELETED" => WatchEvent::Deleted(decode()?),
            "BOOKMARK" => {
                let bookmark: BookmarkObject =
                    serde_json::from_str(object).map_err(Error::Decode)?;
                WatchEvent::Bookmark(Bookmark {
                    resource_version: bookmark.metadata.resource_version,
                    initial_events_end: bookmark
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("k8s.io/initial-events-end"))
                        .is_some_and(|v| v == "true"),
                })
            }
            "ERROR" => WatchEvent::Error(Box::new(
                serde_json::from_str(object).map_err(Error::Decode)?,
            )),
            other => return Err(Error::Stream(format!("unknown watch event type {other:?}"))),
        })
    }
}

/// Splits a byte stream into newline-terminated JSON events.
fn decode_lines<K, S>(bytes: S) -> impl Stream<Item = Result<WatchEvent<K>>> + Send + use<K, S>
where
    K: serde::de::DeserializeOwned,
    S: Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
{
    struct LineState<S> {
        bytes: std::pin::Pin<Box<S>>,
        buffer: Vec<u8>,
        done: bool,
    }
    let state = LineState {
        bytes: Box::pin(bytes),
        buffer: Vec::new(),
        done: false,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(end) = state.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = state.buffer.drain(..=end).collect();
                let line = line.trim_ascii();
                if line.is_empty() {
                    continue;
                }
                return Some((WatchEvent::from_json(line), state));
            }
            if state.done {
                let rest = std::mem::take(&mut state.buffer);
                let rest = rest.trim_ascii();
                if rest.is_empty() {
                    return None;
                }
                return Some((WatchEvent::from_json(rest), state));
            }
            match state.bytes.next().await {
                Some(Ok(chunk)) => {
                    state.buffer.extend_from_slice(&chunk);
                    if state.buffer.len() > MAX_WATCH_LINE {
                        state.done = true;
                        state.buffer.clear();
                        return Some((Err(Error::Stream("watch event too large".into())), state));
                    }
                }
                Some(Err(err)) => {
                    state.done = true;
                    state.buffer.clear();
                    return Some((Err(Error::Transport(err)), state));
                }
                None => state.done = true,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn watch_lines_decode_to_events() {
        let added = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"3"}}}"#;
        match WatchEvent::<ConfigMap>::from_json(added).expect("decodes") {
            WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("a")),
            other => panic!("unexpected {other:?}"),
        }
        let bookmark = br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        assert_eq!(
            WatchEvent::<ConfigMap>::from_json(bookmark).expect("decodes"),
            WatchEvent::Bookmark(Bookmark {
                resource_version: "12".into(),
                initial_events_end: true
            })
        );
        let error = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#;
        assert!(matches!(
            WatchEvent::<ConfigMap>::from_json(error).expect("decodes"),
            WatchEvent::Error(s) if s.code == Some(410)
        ));
        assert!(WatchEvent::<ConfigMap>::from_json(b"{\"type\":\"NOPE\",\"object\":{}}").is_err());
    }

    #[tokio::test]
    async fn a_byte_stream_splits_into_events_across_chunk_boundaries() {
        let text = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}\n\n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"2\"}}}";
        let chunks: Vec<reqwest::Result<Bytes>> = text
            .as_bytes()
            .chunks(7)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let events: Vec<_> = decode_lines::<ConfigMap, _>(futures_util::stream::iter(chunks))
            .collect()
            .await;
        let versions: Vec<String> = events
            .into_iter()
            .map(|e| match e.expect("decodes") {
                WatchEvent::Bookmark(b) => b.resource_version,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(versions, vec!["1", "2"]);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff(0), Duration::from_millis(100));
        assert_eq!(backoff(3), Duration::from_millis(800));
        assert_eq!(backoff(20), RETRY_BACKOFF_CAP);
    }
}
