//! The HTTPS client webhooks are called with (admission webhooks and CRD conversion
//! webhooks): upstream's `ClientManager` (`staging/src/k8s.io/apiserver/pkg/util/webhook/
//! client.go`) in hyper's pooled client over rustls.
//!
//! - A `url` is called as it is; a `service` reference is called at
//!   `https://NAME.NAMESPACE.svc:PORT/PATH` whose connections go to an address of the
//!   Service's Endpoints (pods never run in kubemock: a test points a selector-less Service's
//!   manual Endpoints at its own server), while the serving certificate is checked against
//!   `NAME.NAMESPACE.svc`, as upstream's dialer and `ServerName` do.
//! - The certificate is verified against `caBundle`, or the system roots when there is none
//!   (upstream: an empty `CAData`).
//! - One client, with its pool of kept-alive connections, per distinct client configuration
//!   (upstream caches its REST clients by the JSON of the configuration the same way), so a
//!   call after the first costs its round trip.
//!
//! Failures are worded as Go's `net/http` words them where the cause is recognisable
//! (`Post "URL": dial tcp ADDR: connect: connection refused`, `context deadline exceeded`),
//! since upstream's messages quote them.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use parking_lot::Mutex;

/// The most bytes of a webhook's answer that are read; a longer answer fails the call
/// (upstream's REST client reads any length; a bound keeps a broken webhook from exhausting
/// memory).
pub(crate) const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Clients kept at most; past it the cache starts over (a configuration churn, not a use).
const MAX_CLIENTS: usize = 256;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// The port of a `service` reference without one (upstream's default).
pub(crate) const DEFAULT_SERVICE_PORT: u16 = 443;

/// Where a webhook is: its `clientConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Endpoint {
    /// `url`, or the Service's.
    pub(crate) location: Location,
    /// `caBundle`, decoded (PEM); none: the system roots.
    pub(crate) ca_bundle: Option<Vec<u8>>,
}

/// `clientConfig.url` or `clientConfig.service`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Location {
    /// `url`.
    Url(String),
    /// `service`.
    Service {
        /// `namespace`.
        namespace: String,
        /// `name`.
        name: String,
        /// `path`, empty when none.
        path: String,
        /// `port`.
        port: u16,
    },
}

impl Location {
    /// The URL a call goes to as upstream's REST client prints it (in errors), with the
    /// `timeout` query parameter it adds.
    pub(crate) fn shown(&self, timeout: Option<Duration>) -> String {
        let mut url = match self {
            Location::Url(url) => url.clone(),
            Location::Service {
                namespace,
                name,
                path,
                port,
            } => format!("https://{name}.{namespace}.svc:{port}{path}"),
        };
        if let Some(timeout) = timeout {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&format!("timeout={}s", timeout.as_secs().max(1)));
        }
        url
    }
}

/// Why a call failed, in the words upstream quotes after `failed to call webhook: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError(pub(crate) String);

/// The answer of a webhook: status and body.
#[derive(Debug)]
pub(crate) struct Answer {
    /// HTTP status.
    pub(crate) status: u16,
    /// The body (at most [`MAX_RESPONSE_BYTES`]).
    pub(crate) body: Bytes,
}

/// A resolver that answers a service's host with the addresses of its Endpoints, and
/// anything else as the system does.
#[derive(Clone, Debug)]
enum Resolver {
    /// `getaddrinfo`, for `url`s.
    System,
    /// The Service's endpoint addresses, refreshed before each call.
    Fixed(Arc<Mutex<Vec<SocketAddr>>>),
}

/// What hyper's connector resolves to.
type Addrs = std::vec::IntoIter<SocketAddr>;
/// The resolver's future.
type Resolving = Pin<Box<dyn Future<Output = std::io::Result<Addrs>> + Send>>;

impl tower::Service<Name> for Resolver {
    type Response = Addrs;
    type Error = std::io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        match self {
            Resolver::Fixed(slot) => {
                let addrs = slot.lock().clone();
                Box::pin(async move { Ok(addrs.into_iter()) })
            }
            Resolver::System => Box::pin(async move {
                let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
                Ok(found.collect::<Vec<_>>().into_iter())
            }),
        }
    }
}

/// The pooled HTTPS client of one configuration.
type Https = Client<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>, Full<Bytes>>;

/// A client and, for a service, the slot its resolver reads.
#[derive(Clone)]
struct Pooled {
    client: Https,
    addresses: Option<Arc<Mutex<Vec<SocketAddr>>>>,
}

/// The clients of every webhook configuration in use.
#[derive(Default)]
pub(crate) struct Clients {
    /// By configuration; held for a lookup or an insert, never across an `.await`.
    clients: Mutex<HashMap<Endpoint, Pooled>>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("clients", &self.clients.lock().len())
            .finish()
    }
}

impl Clients {
    /// POSTs `body` (JSON) to `endpoint` (for a service, at one of `addresses`), within
    /// `timeout`, and reads the answer.
    pub(crate) async fn post(
        &self,
        endpoint: &Endpoint,
        addresses: Vec<SocketAddr>,
        timeout: Duration,
        body: Vec<u8>,
    ) -> Result<Answer, CallError> {
        let shown = endpoint.location.shown(Some(timeout));
        let failed = |why: String| CallError(format!("Post \"{shown}\": {why}"));
        let pooled = self.client(endpoint).map_err(failed)?;
        if let Some(slot) = &pooled.addresses {
            *slot.lock() = addresses;
        }
        let uri = request_uri(&endpoint.location, timeout).map_err(failed)?;
        let request = hyper::Request::post(uri)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, */*")
            .body(Full::new(Bytes::from(body)))
            .map_err(|err| failed(err.to_string()))?;
        let call = async {
            let response = pooled
                .client
                .request(request)
                .await
                .map_err(|err| failed(describe(&err, endpoint)))?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|err| {
                    if err.is::<http_body_util::LengthLimitError>() {
                        failed(format!(
                            "the response is longer than {MAX_RESPONSE_BYTES} bytes"
                        ))
                    } else {
                        failed(err.to_string())
                    }
                })?
                .to_bytes();
            Ok(Answer { status, body })
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(answer) => answer,
            Err(_) => Err(failed("context deadline exceeded".to_owned())),
        }
    }

    /// The client of `endpoint`, built on first use.
    fn client(&self, endpoint: &Endpoint) -> Result<Pooled, String> {
        if let Some(pooled) = self.clients.lock().get(endpoint) {
            return Ok(pooled.clone());
        }
        let tls = tls_config(endpoint.ca_bundle.as_deref())?;
        let (resolver, addresses) = match endpoint.location {
            Location::Url(_) => (Resolver::System, None),
            Location::Service { .. } => {
                let slot = Arc::new(Mutex::new(Vec::new()));
                (Resolver::Fixed(Arc::clone(&slot)), Some(slot))
            }
        };
        let mut http = HttpConnector::new_with_resolver(resolver);
        http.enforce_http(false);
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(https);
        let pooled = Pooled { client, addresses };
        let mut clients = self.clients.lock();
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(endpoint.clone(), pooled.clone());
        Ok(pooled)
    }
}

/// The URI hyper is given: the URL with upstream's `timeout` parameter; for a service, its
/// DNS name without a port, so that the connector keeps the endpoint's port from the resolver
/// (the name is what the certificate is checked against).
fn request_uri(location: &Location, timeout: Duration) -> Result<hyper::Uri, String> {
    let text = match location {
        Location::Url(url) => {
            let mut url = url.clone();
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&format!("timeout={}s", timeout.as_secs().max(1)));
            url
        }
        Location::Service {
            namespace,
            name,
            path,
            ..
        } => format!(
            "https://{name}.{namespace}.svc{path}?timeout={}s",
            timeout.as_secs().max(1)
        ),
    };
    text.parse::<hyper::Uri>().map_err(|err| err.to_string())
}

/// The rustls configuration verifying against `ca_bundle` (PEM, as Go trusts it: `trust`), or
/// the system roots.
fn tls_config(ca_bundle: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    let builder = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?;
    let config = match ca_bundle {
        Some(bundle) => {
            let blocks = pem::parse_many(bundle)
                .map_err(|err| format!("unable to load root certificates: {err}"))?;
            let certificates: Vec<_> = blocks
                .iter()
                .filter(|b| b.tag() == "CERTIFICATE")
                .map(|block| rustls::pki_types::CertificateDer::from(block.contents().to_vec()))
                .collect();
            if certificates.is_empty() {
                return Err(
                    "unable to load root certificates: no certificates found in caBundle"
                        .to_owned(),
                );
            }
            let verifier = super::trust::BundleVerifier::new(certificates)?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        }
        None => {
            use hyper_rustls::ConfigBuilderExt;
            builder
                .with_native_roots()
                .map_err(|err| err.to_string())?
                .with_no_client_auth()
        }
    };
    Ok(config)
}

/// A hyper client error in Go's words where recognisable.
fn describe(err: &hyper_util::client::legacy::Error, endpoint: &Endpoint) -> String {
    use std::error::Error as _;
    // An `io::Error`'s `source` skips the error it wraps: look inside it instead.
    fn next<'a>(
        cause: &'a (dyn std::error::Error + 'static),
    ) -> Option<&'a (dyn std::error::Error + 'static)> {
        match cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner),
            None => cause.source(),
        }
    }
    let mut cause = err.source();
    while let Some(current) = cause {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return format!("dial tcp {}: connect: connection refused", dialed(endpoint));
        }
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return tls_words(tls);
        }
        cause = next(current);
    }
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(current) = cause {
        text.push_str(": ");
        text.push_str(&current.to_string());
        cause = next(current);
    }
    text
}

/// What Go dials for `endpoint`, as its errors show it.
fn dialed(endpoint: &Endpoint) -> String {
    match &endpoint.location {
        Location::Url(url) => url
            .parse::<hyper::Uri>()
            .ok()
            .and_then(|uri| {
                let host = uri.host()?.to_owned();
                Some(format!("{host}:{}", uri.port_u16().unwrap_or(443)))
            })
            .unwrap_or_default(),
        Location::Service {
            namespace,
            name,
            port,
            ..
        } => format!("{name}.{namespace}.svc:{port}"),
    }
}

/// A TLS failure as Go's `crypto/tls` and `crypto/x509` word the common ones.
fn tls_words(err: &rustls::Error) -> String {
    match err {
        // A CA of the same name that did not sign it is, for Go, an unknown authority too.
        rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature,
        ) => "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_owned(),
        rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
        ) => format!("tls: failed to verify certificate: x509: {err}"),
        other => format!("tls: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_shown_as_upstream_and_called_by_its_name_without_the_port() {
        let location = Location::Service {
            namespace: "system".to_owned(),
            name: "hooks".to_owned(),
            path: "/validate".to_owned(),
            port: 8443,
        };
        assert_eq!(
            location.shown(Some(Duration::from_secs(10))),
            "https://hooks.system.svc:8443/validate?timeout=10s"
        );
        let uri = request_uri(&location, Duration::from_secs(3)).expect("a valid URI");
        assert_eq!(
            uri.to_string(),
            "https://hooks.system.svc/validate?timeout=3s"
        );
        let url = Location::Url("https://127.0.0.1:9443/v?x=1".to_owned());
        assert_eq!(
            url.shown(Some(Duration::from_secs(1))),
            "https://127.0.0.1:9443/v?x=1&timeout=1s"
        );
    }

    #[test]
    fn a_ca_bundle_without_certificates_is_refused() {
        let err = tls_config(Some(b"not pem")).err().unwrap_or_default();
        assert!(err.starts_with("unable to load root certificates"), "{err}");
    }
}
