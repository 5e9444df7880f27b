//! The API served to callers in this process without a socket: the binary's own controllers,
//! scheduler and simulated kubelets (issue 23). Over the loopback socket, each of their
//! requests was encoded to HTTP/1, written through the kernel, parsed again and its answer
//! back the same way; at 10,000 pods that was about an eighth of the process's CPU.
//!
//! A [`LocalApi`] call goes through the whole request pipeline of [`crate::serve`] (panics,
//! classification, metrics, authentication, audit, impersonation, the request log, the
//! in-flight limits, authorization, faults, routing): only the socket and HTTP's framing are
//! left out. What a connection would tell the pipeline, it is told here: the caller's
//! client certificate chain in the secure mode (checked by the x509 authenticator as a TLS
//! client's would be, and its verdict kept as a connection keeps it), and a loopback address
//! as the client's (the audit log's `sourceIPs`). A bearer token travels in its header as
//! over the socket.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use bytes::Bytes;
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use crate::tls::{PeerCertificates, TlsConnection};

/// The address a local caller is seen from: loopback, with no port.
const LOCAL_ADDRESS: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// Where [`crate::serve`] puts its [`LocalApi`] once it accepts requests
/// ([`crate::ServerConfig::local`]), and takes it back when it stops: the API holds the
/// server's state, whose configuration holds this slot, so a slot that kept it would keep the
/// state alive after the server. Cheap to clone: clones share the slot.
#[derive(Clone, Default)]
pub struct LocalSlot(Arc<Mutex<Option<LocalApi>>>);

impl std::fmt::Debug for LocalSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LocalSlot").field(&*self.0.lock()).finish()
    }
}

impl LocalSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// The server's API while it serves.
    pub fn get(&self) -> Option<LocalApi> {
        self.0.lock().clone()
    }

    /// Puts `api` in the slot.
    pub(crate) fn fill(&self, api: LocalApi) {
        *self.0.lock() = Some(api);
    }

    /// Empties the slot.
    pub(crate) fn clear(&self) {
        self.0.lock().take();
    }
}

/// The server's request pipeline, for callers in this process ([module docs](self)). Cheap to
/// clone; a clone with [`LocalApi::presenting`] stands for one client's connection.
#[derive(Clone)]
pub struct LocalApi {
    service: BoxCloneSyncService<axum::extract::Request, Response, Infallible>,
    /// What a TLS connection of this caller would carry: `Some` in the secure mode.
    connection: Option<TlsConnection>,
}

impl std::fmt::Debug for LocalApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalApi")
            .field(
                "client_certificate",
                &self.connection.as_ref().is_some_and(|c| c.peer.is_some()),
            )
            .finish()
    }
}

impl LocalApi {
    /// The pipeline `service`; `secure` when the server serves TLS, so that its requests
    /// carry a connection as a TLS client's do.
    pub(crate) fn new(
        service: BoxCloneSyncService<axum::extract::Request, Response, Infallible>,
        secure: bool,
    ) -> Self {
        LocalApi {
            service,
            connection: secure.then(|| TlsConnection {
                peer: None,
                remote: Some(LOCAL_ADDRESS),
            }),
        }
    }

    /// This API as a client presenting the certificate chain in `pem` (its own certificate
    /// first; a key in it is ignored) sees it: the server authenticates the chain as it would
    /// a TLS client's. Without security, the server reads no certificate, and this is the API
    /// unchanged.
    pub fn presenting(&self, pem: &[u8]) -> Result<LocalApi, String> {
        let Some(connection) = &self.connection else {
            return Ok(self.clone());
        };
        let chain = crate::tls::certificate_chain(pem)
            .map_err(|err| format!("the client certificate: {err}"))?;
        Ok(LocalApi {
            service: self.service.clone(),
            connection: Some(TlsConnection {
                peer: Some(Arc::new(PeerCertificates {
                    chain,
                    verified: OnceLock::new(),
                })),
                remote: connection.remote,
            }),
        })
    }

    /// Answers `request` as the server answers one that came over its socket. Its URI may be
    /// absolute: only its path and query are kept, as an HTTP/1 request line has them. A body
    /// without `Content-Length` is given one, as the client's HTTP stack would, so that the
    /// in-flight limits count its bytes and not the most a body may have.
    pub async fn call(&self, request: axum::http::Request<Bytes>) -> Response {
        let (mut parts, body) = request.into_parts();
        if parts.uri.scheme().is_some()
            && let Some(path) = parts.uri.path_and_query()
            && let Ok(uri) = axum::http::Uri::builder()
                .path_and_query(path.clone())
                .build()
        {
            parts.uri = uri;
        }
        if !body.is_empty()
            && !parts
                .headers
                .contains_key(axum::http::header::CONTENT_LENGTH)
        {
            parts.headers.insert(
                axum::http::header::CONTENT_LENGTH,
                axum::http::HeaderValue::from(body.len()),
            );
        }
        match &self.connection {
            Some(connection) => {
                parts.extensions.insert(ConnectInfo(connection.clone()));
            }
            None => {
                parts.extensions.insert(ConnectInfo(LOCAL_ADDRESS));
            }
        }
        let request = axum::extract::Request::from_parts(parts, Body::from(body));
        match self.service.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}
