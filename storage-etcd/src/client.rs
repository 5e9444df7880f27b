//! The gRPC connection to etcd: tonic's generic client with the hand-written messages of
//! `proto.rs` (no generated stubs), each unary call bounded by the request timeout, and
//! etcd's answers mapped to the store's [`Error`]s: unreachable or slow etcd becomes
//! [`Error::Unavailable`], a compacted or future revision the matching error.

use std::time::Duration;

use http::uri::PathAndQuery;
use kubemock_storage::{BackendError, Error, Result};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_prost::ProstCodec;

use crate::proto;

/// `etcdserverpb.KV/Range` and the other methods this store calls (rpc.proto, services `KV`,
/// `Watch`, `Maintenance`).
pub(crate) const RANGE: &str = "/etcdserverpb.KV/Range";
pub(crate) const TXN: &str = "/etcdserverpb.KV/Txn";
pub(crate) const COMPACT: &str = "/etcdserverpb.KV/Compact";
pub(crate) const WATCH: &str = "/etcdserverpb.Watch/Watch";
pub(crate) const STATUS: &str = "/etcdserverpb.Maintenance/Status";

/// How long a connection attempt to one endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// HTTP/2 pings on idle connections, so that a watch over a connection to a dead etcd ends
/// (with [`Error::Unavailable`]) instead of waiting forever.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// How long a ping may go unanswered before the connection is declared dead.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// etcd's error for a read below the compaction point (`mvcc.ErrCompacted`, as
/// `rpctypes.ErrGRPCCompacted` words it: code OutOfRange).
const COMPACTED_MESSAGE: &str = "required revision has been compacted";
/// etcd's error for a read above the current revision (`mvcc.ErrFutureRev`).
const FUTURE_MESSAGE: &str = "required revision is a future revision";

/// TLS material for `https://` endpoints (PEM).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// The CA that signed etcd's serving certificate (`--etcd-cafile`).
    pub ca: Option<Vec<u8>>,
    /// The client certificate and key (`--etcd-certfile`, `--etcd-keyfile`).
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// The channel to etcd's endpoints (balanced over all of them) and the request timeout.
#[derive(Clone)]
pub(crate) struct Client {
    channel: Channel,
    timeout: Duration,
}

/// What etcd's answer to a failed call means for the store.
pub(crate) enum Failure {
    /// Below the compaction point.
    Compacted,
    /// Above the current revision.
    Future,
    /// Anything else, as the store's error.
    Other(Error),
}

impl Client {
    /// A client of `endpoints` (`http://host:port` or `https://host:port`). Connects lazily:
    /// nothing is dialled until the first call.
    pub(crate) fn new(endpoints: &[String], tls: &Tls, timeout: Duration) -> Result<Self> {
        let mut list = Vec::with_capacity(endpoints.len());
        for url in endpoints {
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|err| backend(format!("etcd endpoint {url:?}: {err}")))?
                .connect_timeout(CONNECT_TIMEOUT)
                .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
                .keep_alive_timeout(KEEPALIVE_TIMEOUT)
                .keep_alive_while_idle(true);
            if url.starts_with("https://") {
                let Some(ca) = &tls.ca else {
                    return Err(backend(format!(
                        "etcd endpoint {url}: https needs the CA of etcd's certificate (--etcd-cafile)"
                    )));
                };
                let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
                if let Some((cert, key)) = &tls.identity {
                    config = config.identity(Identity::from_pem(cert, key));
                }
                endpoint = endpoint
                    .tls_config(config)
                    .map_err(|err| backend(format!("etcd endpoint {url}: TLS: {err}")))?;
            } else if !url.starts_with("http://") {
                return Err(backend(format!(
                    "etcd endpoint {url:?}: expected an http:// or https:// URL"
                )));
            }
            list.push(endpoint);
        }
        let channel = match list.len() {
            0 => return Err(backend("no etcd endpoint given".to_owned())),
            1 => list.remove(0).connect_lazy(),
            _ => Channel::balance_list(list.into_iter()),
        };
        Ok(Client { channel, timeout })
    }

    /// A gRPC client over the shared channel, ready to send.
    async fn grpc(&self) -> Result<tonic::client::Grpc<Channel>, Failure> {
        let mut grpc = tonic::client::Grpc::new(self.channel.clone());
        grpc.ready()
            .await
            .map_err(|err| Failure::Other(unavailable(format!("connecting: {err}"))))?;
        Ok(grpc)
    }

    /// One unary call, within the request timeout.
    async fn unary<Q, A>(&self, path: &'static str, request: Q) -> Result<A, Failure>
    where
        Q: prost::Message + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
        let call = async {
            let mut grpc = self.grpc().await?;
            let codec: ProstCodec<Q, A> = ProstCodec::default();
            grpc.unary(
                tonic::Request::new(request),
                PathAndQuery::from_static(path),
                codec,
            )
            .await
            .map(tonic::Response::into_inner)
            .map_err(failure)
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(answer) => answer,
            Err(_) => Err(Failure::Other(unavailable(format!(
                "etcd did not answer {path} within {:?}",
                self.timeout
            )))),
        }
    }

    pub(crate) async fn range(
        &self,
        request: proto::RangeRequest,
    ) -> Result<proto::RangeResponse, Failure> {
        self.unary(RANGE, request).await
    }

    pub(crate) async fn txn(&self, request: proto::TxnRequest) -> Result<proto::TxnResponse> {
        self.unary(TXN, request).await.map_err(Failure::into_error)
    }

    /// A transaction whose reads may be below the compaction point.
    pub(crate) async fn txn_failure(
        &self,
        request: proto::TxnRequest,
    ) -> Result<proto::TxnResponse, Failure> {
        self.unary(TXN, request).await
    }

    pub(crate) async fn compact(
        &self,
        request: proto::CompactionRequest,
    ) -> Result<proto::CompactionResponse, Failure> {
        self.unary(COMPACT, request).await
    }

    pub(crate) async fn status(&self) -> Result<proto::StatusResponse> {
        self.unary(STATUS, proto::StatusRequest {})
            .await
            .map_err(Failure::into_error)
    }

    /// Opens a bidirectional watch stream: `requests` is what the store sends on it (create,
    /// progress), the answer the stream of etcd's responses. The stream's headers must come
    /// within the request timeout; the stream itself lives as long as the watch.
    pub(crate) async fn watch<S>(
        &self,
        requests: S,
    ) -> Result<tonic::Streaming<proto::WatchResponse>, Failure>
    where
        S: futures_core::Stream<Item = proto::WatchRequest> + Send + 'static,
    {
        let call = async {
            let mut grpc = self.grpc().await?;
            let codec: ProstCodec<proto::WatchRequest, proto::WatchResponse> =
                ProstCodec::default();
            grpc.streaming(
                tonic::Request::new(requests),
                PathAndQuery::from_static(WATCH),
                codec,
            )
            .await
            .map(tonic::Response::into_inner)
            .map_err(failure)
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(answer) => answer,
            Err(_) => Err(Failure::Other(unavailable(format!(
                "etcd did not open a watch within {:?}",
                self.timeout
            )))),
        }
    }

    /// The request timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Failure {
    /// The store's error, for calls where a compacted or future revision cannot happen (or
    /// has no better answer than the message).
    pub(crate) fn into_error(self) -> Error {
        match self {
            Failure::Compacted => backend(format!("etcd: {COMPACTED_MESSAGE}")),
            Failure::Future => backend(format!("etcd: {FUTURE_MESSAGE}")),
            Failure::Other(err) => err,
        }
    }
}

/// Maps a gRPC status from etcd (or from the transport) to what it means for the store.
pub(crate) fn failure(status: tonic::Status) -> Failure {
    let message = status.message();
    match status.code() {
        tonic::Code::OutOfRange if message.contains(COMPACTED_MESSAGE) => Failure::Compacted,
        tonic::Code::OutOfRange if message.contains(FUTURE_MESSAGE) => Failure::Future,
        // Transport failures (connection refused, reset), etcd's own "no leader", "request
        // timed out", "too many requests": retrying may succeed.
        tonic::Code::Unavailable
        | tonic::Code::DeadlineExceeded
        | tonic::Code::Cancelled
        | tonic::Code::Aborted
        | tonic::Code::ResourceExhausted
        | tonic::Code::Unknown => Failure::Other(unavailable(format!(
            "etcd: {} ({:?})",
            if message.is_empty() {
                "no answer"
            } else {
                message
            },
            status.code()
        ))),
        code => Failure::Other(backend(format!("etcd answered {code:?}: {message}"))),
    }
}

/// [`Error::Unavailable`] with `reason`.
pub(crate) fn unavailable(reason: String) -> Error {
    Error::Unavailable { reason }
}

/// An unexpected answer (or a configuration error) as [`Error::Backend`].
pub(crate) fn backend(message: String) -> Error {
    Error::Backend {
        op: "talk to etcd",
        source: BackendError::new(Message(message)),
    }
}

/// A plain message as an error.
#[derive(Debug)]
struct Message(String);

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}
