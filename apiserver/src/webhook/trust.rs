//! How a webhook's serving certificate is trusted from its `caBundle`: as Go's `crypto/x509`
//! trusts it in kube-apiserver, which differs from rustls' WebPKI verifier in one case that
//! real clients rely on.
//!
//! Go's `Certificate.Verify` (`crypto/x509/verify.go`) accepts a certificate that is itself in
//! the root pool, byte for byte, as a chain of its own, whoever issued it: its validity
//! period, its name and its extended key usage are still checked, no issuer is looked for.
//! controller-runtime's envtest depends on it: `WebhookInstallOptions` puts the serving
//! certificate it made, not the CA that signed it, in every `caBundle` (`setupCA` in
//! `pkg/envtest/webhook.go` sets `LocalServingCAData` to the serving certificate). WebPKI
//! looks for the issuer among the roots and answers `UnknownIssuer`; [`BundleVerifier`] then
//! does what Go does.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};
use x509_parser::prelude::{ASN1Time, FromDer, X509Certificate};

/// WebPKI's verification against a `caBundle`, and Go's acceptance of a served certificate
/// that the bundle holds itself.
#[derive(Debug)]
pub(crate) struct BundleVerifier {
    /// The verifier of chains to the bundle's certificates.
    chains: Arc<WebPkiServerVerifier>,
    /// The bundle's certificates, DER.
    bundle: Vec<CertificateDer<'static>>,
}

impl BundleVerifier {
    /// A verifier trusting `bundle` (DER certificates, at least one).
    pub(crate) fn new(bundle: Vec<CertificateDer<'static>>) -> Result<BundleVerifier, String> {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in &bundle {
            roots
                .add(certificate.clone())
                .map_err(|err| format!("unable to load root certificates: {err}"))?;
        }
        let chains =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), crate::tls::provider())
                .build()
                .map_err(|err| format!("unable to load root certificates: {err}"))?;
        Ok(BundleVerifier { chains, bundle })
    }
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.chains.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // No issuer among the roots, or one of the same name that did not sign it.
            Err(Error::InvalidCertificate(
                CertificateError::UnknownIssuer | CertificateError::BadSignature,
            )) if self
                .bundle
                .iter()
                .any(|root| root.as_ref() == end_entity.as_ref()) =>
            {
                verify_itself(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.chains.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.chains.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chains.supported_verify_schemes()
    }
}

/// What Go checks of a certificate trusted as itself: validity period, name, and an extended
/// key usage allowing server authentication (none listed allows any).
fn verify_itself(
    end_entity: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), Error> {
    let bad = |err: CertificateError| Error::InvalidCertificate(err);
    let (_, certificate) = X509Certificate::from_der(end_entity.as_ref())
        .map_err(|_| bad(CertificateError::BadEncoding))?;
    let seconds = i64::try_from(now.as_secs()).map_err(|_| bad(CertificateError::Expired))?;
    let at = ASN1Time::from_timestamp(seconds).map_err(|_| bad(CertificateError::Expired))?;
    let validity = certificate.validity();
    if at < validity.not_before {
        return Err(bad(CertificateError::NotValidYet));
    }
    if at > validity.not_after {
        return Err(bad(CertificateError::Expired));
    }
    rustls::client::verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
    match certificate.extended_key_usage() {
        Ok(None) => Ok(()),
        Ok(Some(usage)) if usage.value.server_auth || usage.value.any => Ok(()),
        Ok(Some(_)) | Err(_) => Err(bad(CertificateError::InvalidPurpose)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name of the CAs of [`issued_as`].
    const CA_NAME: &str = "test CA";

    /// A serving certificate named `subject`, for `names`, for server authentication or
    /// not, signed by a fresh CA.
    fn issued_as(subject: &str, names: &[&str], server_auth: bool) -> CertificateDer<'static> {
        let ca_key = rcgen::KeyPair::generate().expect("a key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, CA_NAME);
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let key = rcgen::KeyPair::generate().expect("a key");
        let names = names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let mut params = rcgen::CertificateParams::new(names).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, subject);
        params.extended_key_usages = vec![if server_auth {
            rcgen::ExtendedKeyUsagePurpose::ServerAuth
        } else {
            rcgen::ExtendedKeyUsagePurpose::ClientAuth
        }];
        params
            .signed_by(&key, &issuer)
            .expect("a certificate")
            .der()
            .clone()
    }

    /// [`issued_as`] `localhost`, as envtest names its serving certificates.
    fn issued(names: &[&str], server_auth: bool) -> CertificateDer<'static> {
        issued_as("localhost", names, server_auth)
    }

    fn verify(
        bundle: &[CertificateDer<'static>],
        served: &CertificateDer<'_>,
        name: &str,
    ) -> Result<(), Error> {
        let verifier = BundleVerifier::new(bundle.to_vec()).expect("a verifier");
        let name = ServerName::try_from(name.to_owned()).expect("a name");
        verifier
            .verify_server_cert(served, &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    #[test]
    fn a_served_certificate_that_is_in_the_bundle_is_trusted_as_itself_like_go() {
        let served = issued(&["127.0.0.1", "localhost"], true);
        let alone = std::slice::from_ref(&served);
        assert_eq!(verify(alone, &served, "127.0.0.1"), Ok(()));
        assert_eq!(verify(alone, &served, "localhost"), Ok(()));
        // Also when it bears its CA's name (WebPKI then takes it for its own issuer, whose
        // signature it does not carry).
        let namesake = issued_as(CA_NAME, &["127.0.0.1"], true);
        assert_eq!(
            verify(std::slice::from_ref(&namesake), &namesake, "127.0.0.1"),
            Ok(())
        );
        // Its name is still checked, and its purpose.
        assert!(matches!(
            verify(alone, &served, "example.com"),
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            ))
        ));
        let client_only = issued(&["127.0.0.1"], false);
        // (WebPKI checks the usage before it looks for an issuer.)
        assert!(matches!(
            verify(
                std::slice::from_ref(&client_only),
                &client_only,
                "127.0.0.1"
            ),
            Err(Error::InvalidCertificate(
                CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. }
            ))
        ));
    }

    #[test]
    fn a_certificate_neither_in_the_bundle_nor_issued_by_it_is_refused() {
        let served = issued(&["127.0.0.1"], true);
        let other = issued(&["127.0.0.1"], true);
        assert_eq!(
            verify(&[other], &served, "127.0.0.1"),
            Err(Error::InvalidCertificate(CertificateError::UnknownIssuer))
        );
        // Of the same name as its CA, and not in the bundle: the signature is wrong.
        let namesake = issued_as(CA_NAME, &["127.0.0.1"], true);
        let stranger = issued_as(CA_NAME, &["127.0.0.1"], true);
        assert_eq!(
            verify(&[stranger], &namesake, "127.0.0.1"),
            Err(Error::InvalidCertificate(CertificateError::BadSignature))
        );
    }
}
