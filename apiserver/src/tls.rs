//! Secure serving: the TLS side of `kubemock serve --secure`, as kube-apiserver's
//! `staging/src/k8s.io/apiserver/pkg/server/secure_serving.go` serves. A [`TlsListener`]
//! accepts TCP connections, runs each TLS handshake in a task of its own (a slow or silent
//! client never holds up the others, and never waits longer than [`HANDSHAKE_TIMEOUT`]), and
//! hands finished connections to axum's server, which serves them exactly as plain ones.
//!
//! The server asks for a client certificate but does not require one and does not judge it
//! during the handshake: like upstream (`tls.RequestClientCert`), a certificate signed by an
//! unknown authority still connects, and the x509 authenticator (`authn`) turns it into a 401,
//! a Kubernetes `Status` a client can read, instead of a broken handshake. The handshake does
//! prove that the client holds the certificate's key (rustls checks its signature). The CA
//! names are offered as hints, so that a Go client picks the certificate they signed.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::debug;

use crate::identity::UserInfo;

/// How long a client may take over its TLS handshake before the connection is dropped.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at most; past it the listener stops accepting until one ends (the
/// kernel's backlog holds the rest), so that a flood of silent connections has bounded cost.
const MAX_HANDSHAKES: usize = 1024;
/// Finished handshakes waiting for the server to take them.
const ACCEPTED_QUEUE: usize = 64;
/// Pause after a failed `accept` (out of file descriptors and the like), so that the loop
/// does not spin while the condition lasts.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);
/// The protocols offered by ALPN: the server speaks HTTP/1.1 (Go and rustls clients fall back
/// to it when `h2` is not offered).
const ALPN: &[&[u8]] = &[b"http/1.1"];

/// The ring provider: the only crypto the workspace builds.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server name the in-process components (the controller manager, the scheduler, the
/// simulated kubelets) ask for in their TLS handshake, as kube-apiserver's loopback client
/// does (`LoopbackClientServerNameOverride` in
/// `staging/src/k8s.io/apiserver/pkg/server/options/serving_with_loopback.go`): the server
/// answers it with a certificate of its own that they trust, whatever serving certificate
/// the other clients get (envtest's, issued by a CA kubemock never sees).
pub const LOOPBACK_SERVER_NAME: &str = "apiserver-loopback-client";

/// The rustls configuration of the server: `chain` (PEM certificates, the serving one first)
/// with `key` (PEM, PKCS#8, PKCS#1 or SEC1), and `loopback` (a certificate and key of the
/// same forms) for handshakes that ask for [`LOOPBACK_SERVER_NAME`]; client certificates
/// asked for with `client_cas` as hints.
pub(crate) fn server_config(
    chain: &[u8],
    key: &[u8],
    loopback: (&[u8], &[u8]),
    client_cas: &rustls::RootCertStore,
) -> Result<rustls::ServerConfig, String> {
    let provider = provider();
    let serving = certified_key(chain, key, &provider)?;
    let loopback = certified_key(loopback.0, loopback.1, &provider)
        .map_err(|err| format!("the loopback certificate: {err}"))?;
    let verifier = RequestClientCertificate {
        hints: client_cas.subjects(),
        algorithms: provider.signature_verification_algorithms,
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_cert_resolver(Arc::new(ServingCertificates { serving, loopback }));
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// The certificates of a PEM chain, in order (other blocks, a key among them, are left
/// out); an error when it is no PEM or holds no certificate.
pub(crate) fn certificate_chain(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates: Vec<CertificateDer<'static>> = pem::parse_many(pem)
        .map_err(|err| format!("not PEM: {err}"))?
        .into_iter()
        .filter(|block| block.tag() == "CERTIFICATE")
        .map(|block| CertificateDer::from(block.into_contents()))
        .collect();
    if certificates.is_empty() {
        return Err("holds no PEM CERTIFICATE".to_owned());
    }
    Ok(certificates)
}

/// A PEM chain and its key, checked to go together.
fn certified_key(
    chain: &[u8],
    key: &[u8],
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, String> {
    let certificates = certificate_chain(chain)?;
    let key = private_key(key)?;
    CertifiedKey::from_der(certificates, key, provider)
        .map(Arc::new)
        .map_err(|err| format!("the certificate and key do not go together: {err}"))
}

/// The serving certificate, or the loopback one for a handshake asking for
/// [`LOOPBACK_SERVER_NAME`] (upstream adds it as an SNI certificate the same way).
#[derive(Debug)]
struct ServingCertificates {
    /// What every other handshake gets.
    serving: Arc<CertifiedKey>,
    /// What the in-process components get.
    loopback: Arc<CertifiedKey>,
}

impl ResolvesServerCert for ServingCertificates {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            if client_hello.server_name() == Some(LOOPBACK_SERVER_NAME) {
                &self.loopback
            } else {
                &self.serving
            },
        ))
    }
}

/// The first private key of the PEM `text`, in whichever form rustls reads.
fn private_key(text: &[u8]) -> Result<PrivateKeyDer<'static>, String> {
    let blocks = pem::parse_many(text).map_err(|err| format!("not PEM: {err}"))?;
    let mut labels = Vec::new();
    for block in blocks {
        let key = match block.tag() {
            "PRIVATE KEY" => PrivateKeyDer::Pkcs8(block.into_contents().into()),
            "RSA PRIVATE KEY" => PrivateKeyDer::Pkcs1(block.into_contents().into()),
            "EC PRIVATE KEY" => PrivateKeyDer::Sec1(block.into_contents().into()),
            other => {
                labels.push(other.to_owned());
                continue;
            }
        };
        return Ok(key);
    }
    Err(format!(
        "no private key found (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY); found: [{}]",
        labels.join(", ")
    ))
}

/// Asks for a client certificate, takes any (the authenticator judges it), checks that the
/// client holds its key.
#[derive(Debug)]
struct RequestClientCertificate {
    /// The client CAs' subjects, sent as hints.
    hints: Vec<DistinguishedName>,
    /// The signature algorithms of the handshake.
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for RequestClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A TLS connection's client certificates, in each of its requests' extensions (as
/// `ConnectInfo<TlsConnection>`), with what authenticating them gave: the x509 authenticator
/// verifies a connection's certificate once, not on every request.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsConnection {
    /// The certificates the client sent (its own first), if any.
    pub(crate) peer: Option<Arc<PeerCertificates>>,
    /// The client's address (the audit log's `sourceIPs`).
    pub(crate) remote: Option<SocketAddr>,
}

/// What a client presented, and the verdict on it once reached.
#[derive(Debug)]
pub(crate) struct PeerCertificates {
    /// The chain, the client's certificate first.
    pub(crate) chain: Vec<CertificateDer<'static>>,
    /// The successful verification, kept for the connection's later requests (each checks the
    /// certificate's expiry again). Failures are not kept.
    pub(crate) verified: OnceLock<VerifiedCertificate>,
}

/// A successful verification, kept per connection (by `authn::x509`).
#[derive(Debug, Clone)]
pub(crate) struct VerifiedCertificate {
    /// The user the certificate names.
    pub(crate) user: Arc<UserInfo>,
    /// When the certificate expires (Unix seconds): past it, verifying again fails.
    pub(crate) not_after: u64,
}

impl Connected<IncomingStream<'_, TlsListener>> for TlsConnection {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        let (_, session) = stream.io().get_ref();
        let peer = session
            .peer_certificates()
            .filter(|chain| !chain.is_empty())
            .map(|chain| {
                Arc::new(PeerCertificates {
                    chain: chain.iter().map(|c| c.clone().into_owned()).collect(),
                    verified: OnceLock::new(),
                })
            });
        TlsConnection {
            peer,
            remote: Some(*stream.remote_addr()),
        }
    }
}

/// Accepts TLS connections (see the module documentation); axum's server takes them from it.
pub(crate) struct TlsListener {
    /// Connections whose handshake finished.
    accepted: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    /// The bound address.
    local_addr: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `listener` with `config`; the accepting task and the handshakes run
    /// in `tasks` and end when `shutdown` is cancelled or the listener is dropped.
    pub(crate) fn start(
        listener: TcpListener,
        config: Arc<rustls::ServerConfig>,
        tasks: &TaskTracker,
        shutdown: CancellationToken,
    ) -> std::io::Result<TlsListener> {
        let local_addr = listener.local_addr()?;
        let (sender, accepted) = mpsc::channel(ACCEPTED_QUEUE);
        let acceptor = TlsAcceptor::from(config);
        let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        let tracker = tasks.clone();
        tasks.spawn(async move {
            loop {
                let permit = tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = sender.closed() => break,
                    permit = Arc::clone(&handshakes).acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                };
                let (stream, remote) = tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = sender.closed() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(err) => {
                            debug!(%err, "accepting a connection failed");
                            tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                            continue;
                        }
                    },
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, sender, shutdown) =
                    (acceptor.clone(), sender.clone(), shutdown.clone());
                tracker.spawn(async move {
                    let handshake =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                    let result = tokio::select! {
                        () = shutdown.cancelled() => return,
                        result = handshake => result,
                    };
                    drop(permit);
                    match result {
                        Ok(Ok(stream)) => {
                            // The server stops taking connections at shutdown: do not wait
                            // for it then.
                            tokio::select! {
                                () = shutdown.cancelled() => {}
                                _ = sender.send((stream, remote)) => {}
                            }
                        }
                        Ok(Err(err)) => debug!(%remote, %err, "TLS handshake failed"),
                        Err(_) => debug!(%remote, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            accepted,
            local_addr,
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(connection) => connection,
            // The accepting task ended (shutdown): accept nothing more; the server's graceful
            // shutdown, cancelled by the same token, stops waiting on this.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}
