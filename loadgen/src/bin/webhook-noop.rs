//! `webhook-noop`: a validating admission webhook that allows everything, over HTTPS with a
//! certificate for `127.0.0.1` signed by a CA it makes at startup. It prints
//! `webhook-noop: serving on https://127.0.0.1:PORT` and `webhook-noop: caBundle BASE64` when
//! ready. `bench/webhook.sh` registers it for ConfigMap creates and measures what a webhook
//! adds to a create with `kubemock-loadgen load`: its round trip and little more, if the API
//! server's client pools its connections.

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("webhook-noop: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("webhook-noop: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The answer to an AdmissionReview: allowed, its uid echoed.
fn allow(body: &[u8]) -> Vec<u8> {
    let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "response": {"uid": review["request"]["uid"], "allowed": true}})
    .to_string()
    .into_bytes()
}

async fn serve() -> anyhow::Result<()> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook-noop CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate()?;
    let certificate =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &issuer)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![certificate.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("bind")?;
    let address = listener.local_addr()?;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca.pem());
    #[allow(clippy::print_stdout)]
    {
        println!("webhook-noop: serving on https://{address}");
        println!("webhook-noop: caBundle {bundle}");
    }
    loop {
        let (stream, _) = listener.accept().await?;
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(stream).await else {
                return;
            };
            let service = service_fn(
                |request: hyper::Request<hyper::body::Incoming>| async move {
                    let body = request
                        .into_body()
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let answer = hyper::Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(allow(&body))))
                        .unwrap_or_default();
                    Ok::<_, Infallible>(answer)
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
