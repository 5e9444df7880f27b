//! An HTTPS webhook server in the test process, as envtest's users run theirs: a fresh CA
//! (rcgen) signs a serving certificate for `127.0.0.1` and the DNS names a test asks for
//! (`NAME.NAMESPACE.svc` for a `service` reference); a handler answers each request's JSON
//! body. Used by the admission and conversion webhook tests.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the server answers a request with.
#[derive(Debug, Clone)]
pub enum Answer {
    /// 200 with this JSON body.
    Json(Value),
    /// This status and raw body.
    Raw(u16, Vec<u8>),
    /// The answer after a pause.
    Delayed(Duration, Box<Answer>),
}

/// A request's path and JSON body (`Value::Null` when not JSON) to an answer.
pub type Handler = Arc<dyn Fn(&str, &Value) -> Answer + Send + Sync>;

/// A running webhook server; stops when dropped.
pub struct WebhookServer {
    /// Its address (`127.0.0.1:PORT`).
    pub address: SocketAddr,
    /// The CA's certificate, PEM, base64 (a `caBundle`).
    pub ca_bundle: String,
    /// The serving certificate itself, PEM, base64: the `caBundle` envtest writes
    /// (controller-runtime's `pkg/envtest/webhook.go`, `setupCA`).
    pub serving_bundle: String,
    calls: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// Starts a server on port 0 whose certificate also names `dns_names`.
    pub async fn start(dns_names: &[&str], handler: Handler) -> WebhookServer {
        let (ca_pem, serving_pem, config) = tls_config(dns_names);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("an address");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let handler = Arc::clone(&handler);
                let counted = Arc::clone(&counted);
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let handler = Arc::clone(&handler);
                            let counted = Arc::clone(&counted);
                            async move {
                                let path = request.uri().path().to_owned();
                                let body = request
                                    .into_body()
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                                counted.fetch_add(1, Ordering::SeqCst);
                                let mut answer = handler(&path, &value);
                                while let Answer::Delayed(pause, next) = answer {
                                    tokio::time::sleep(pause).await;
                                    answer = *next;
                                }
                                let (status, bytes) = match answer {
                                    Answer::Json(value) => (200, value.to_string().into_bytes()),
                                    Answer::Raw(status, bytes) => (status, bytes),
                                    Answer::Delayed(..) => (500, Vec::new()),
                                };
                                let response = hyper::Response::builder()
                                    .status(status)
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(bytes)))
                                    .expect("a response");
                                Ok::<_, Infallible>(response)
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        WebhookServer {
            address,
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_pem),
            serving_bundle: base64::engine::general_purpose::STANDARD.encode(serving_pem),
            calls,
            task,
        }
    }

    /// `https://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }

    /// Requests served so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A fresh CA, and the certificate it signed for `127.0.0.1` and `dns_names` with the server
/// configuration serving it.
fn tls_config(dns_names: &[&str]) -> (String, String, rustls::ServerConfig) {
    let ca_key = rcgen::KeyPair::generate().expect("a key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook test CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).expect("a CA");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let mut names = vec!["127.0.0.1".to_owned()];
    names.extend(dns_names.iter().map(|n| (*n).to_owned()));
    let key = rcgen::KeyPair::generate().expect("a key");
    let params = rcgen::CertificateParams::new(names).expect("params");
    let certificate = params.signed_by(&key, &issuer).expect("a certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![certificate.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .expect("a server configuration");
    (ca.pem(), certificate.pem(), config)
}

/// An AdmissionReview v1 answer to `review` (the request's uid echoed).
pub fn admission_answer(review: &Value, response: Value) -> Value {
    let mut response = response;
    response["uid"] = review["request"]["uid"].clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// A JSON patch as an admission response's `patch` (base64).
pub fn patch(operations: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(operations.to_string())
}
