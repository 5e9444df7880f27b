//! The cluster's keys, in one place: a certificate authority (what a kubeadm cluster keeps in
//! `/etc/kubernetes/pki/ca.{crt,key}`) that issues client certificates for approved
//! CertificateSigningRequests, and the service-account signing key (`--service-account-key-file`
//! / `--service-account-signing-key-file`) that signs and verifies the tokens of TokenRequest.
//!
//! Both are generated in memory, once, on first use: a server that never issues anything pays
//! nothing at startup (the startup target is milliseconds). They are ECDSA P-256 keys: the real
//! server accepts ECDSA keys for both (`pkg/serviceaccount/jwt.go` signs `ES256` with one, and
//! the signer's CA may be an ECDSA key), and generating one takes microseconds where an RSA key
//! takes tenths of a second. A server restarted over a durable store has new keys: tokens and
//! certificates issued before the restart no longer verify (as on a cluster whose keys were
//! rotated). The security issue adds loading them from files.
//!
//! The API: [`Pki::ca_certificate_pem`], [`Pki::issue_client_certificate`],
//! [`Pki::sign_jwt`] and [`Pki::verify_jwt`].

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use serde_json::{Value, json};

/// The common name of the generated CA (kubeadm's is `kubernetes`).
const CA_COMMON_NAME: &str = "kubemock-ca";
/// How long the generated CA is valid: ten years, as kubeadm's.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// How far back an issued certificate's validity starts, for clocks a little behind
/// (`pkg/controller/certificates/authority/policies.go`, `backdate`: five minutes).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Serial numbers are 128 random bits, as upstream's signer draws them.
const SERIAL_BYTES: usize = 16;
/// The DER prefix of a P-256 `SubjectPublicKeyInfo` before the 65-byte uncompressed point
/// (algorithm `id-ecPublicKey` with curve `prime256v1`).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Why a key operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PkiError {
    /// Generating or using a key failed (the system's random source, an encoding bug).
    #[error("key operation failed: {0}")]
    Key(String),
    /// The certificate request cannot be signed (unreadable, bad signature, an extension the
    /// signer does not copy).
    #[error("{0}")]
    Request(String),
    /// A token is not a JWT signed by this cluster's key.
    #[error("{0}")]
    Token(String),
}

/// A key usage of a certificate, as `certificates.k8s.io/v1` spells them.
pub type Usage = str;

/// The cluster's keys, generated on first use.
#[derive(Default)]
pub struct Pki {
    keys: OnceLock<Result<Keys, PkiError>>,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("generated", &self.keys.get().is_some())
            .finish()
    }
}

struct Keys {
    /// The CA's signing key.
    ca_key: KeyPair,
    /// The CA's certificate parameters (its subject and key identifier are the issuer of what
    /// it signs).
    ca_params: CertificateParams,
    /// The CA certificate, PEM.
    ca_pem: String,
    /// The service-account key.
    sa_key: EcdsaKeyPair,
    /// `kid` of the tokens: the key's identifier as upstream derives it.
    sa_key_id: String,
}

impl Pki {
    /// Keys not generated yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn keys(&self) -> Result<&Keys, PkiError> {
        self.keys
            .get_or_init(Keys::generate)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The cluster CA's certificate (PEM): what clients trust for certificates it issued.
    pub fn ca_certificate_pem(&self) -> Result<String, PkiError> {
        Ok(self.keys()?.ca_pem.clone())
    }

    /// Issues a certificate for the PEM certificate request `request` (subject, public key and
    /// names taken from it, as `pkg/controller/certificates/authority/authority.go` does), valid
    /// from [`BACKDATE`] ago for `validity`, with the `certificates.k8s.io` `usages` (unknown
    /// ones are refused). Returns the PEM certificate.
    pub fn issue_client_certificate(
        &self,
        request: &str,
        usages: &[&Usage],
        validity: Duration,
    ) -> Result<String, PkiError> {
        let keys = self.keys()?;
        let mut csr = CertificateSigningRequestParams::from_pem(request)
            .map_err(|err| PkiError::Request(format!("unable to parse csr: {err}")))?;
        let params = &mut csr.params;
        let now = SystemTime::now();
        params.not_before = (now - BACKDATE).into();
        params.not_after = (now + validity).into();
        params.is_ca = IsCa::ExplicitNoCa;
        params.serial_number = Some(SerialNumber::from_slice(&random_bytes::<SERIAL_BYTES>()?));
        params.key_usages.clear();
        params.extended_key_usages.clear();
        for usage in usages {
            match *usage {
                "signing" | "digital signature" => {
                    params.key_usages.push(KeyUsagePurpose::DigitalSignature);
                }
                "content commitment" => params.key_usages.push(KeyUsagePurpose::ContentCommitment),
                "key encipherment" => params.key_usages.push(KeyUsagePurpose::KeyEncipherment),
                "key agreement" => params.key_usages.push(KeyUsagePurpose::KeyAgreement),
                "data encipherment" => params.key_usages.push(KeyUsagePurpose::DataEncipherment),
                "cert sign" => params.key_usages.push(KeyUsagePurpose::KeyCertSign),
                "crl sign" => params.key_usages.push(KeyUsagePurpose::CrlSign),
                "encipher only" => params.key_usages.push(KeyUsagePurpose::EncipherOnly),
                "decipher only" => params.key_usages.push(KeyUsagePurpose::DecipherOnly),
                "any" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::Any),
                "server auth" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::ServerAuth),
                "client auth" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::ClientAuth),
                "code signing" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::CodeSigning),
                "email protection" | "s/mime" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::EmailProtection),
                "timestamping" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::TimeStamping),
                "ocsp signing" => params
                    .extended_key_usages
                    .push(ExtendedKeyUsagePurpose::OcspSigning),
                other => {
                    return Err(PkiError::Request(format!("unsupported key usage: {other}")));
                }
            }
        }
        let issuer = Issuer::from_params(&keys.ca_params, &keys.ca_key);
        let certificate = csr
            .signed_by(&issuer)
            .map_err(|err| PkiError::Request(format!("unable to sign the certificate: {err}")))?;
        Ok(certificate.pem())
    }

    /// A JWS compact serialisation of `claims`, signed `ES256` with the service-account key,
    /// with the key's `kid`.
    pub fn sign_jwt(&self, claims: &Value) -> Result<String, PkiError> {
        let keys = self.keys()?;
        let header = json!({"alg": "ES256", "kid": keys.sa_key_id});
        let mut token = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = keys
            .sa_key
            .sign(&SystemRandom::new(), token.as_bytes())
            .map_err(|_| PkiError::Key("signing the token failed".to_owned()))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature.as_ref()));
        Ok(token)
    }

    /// The claims of `token` if it is a JWT this cluster's service-account key signed; the
    /// claims' meaning (expiry, audiences, the objects they name) is the caller's to check.
    pub fn verify_jwt(&self, token: &str) -> Result<Value, PkiError> {
        let keys = self.keys()?;
        let malformed = || {
            PkiError::Token("square/go-jose: compact JWS format must have three parts".to_owned())
        };
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed());
        };
        let decode = |part: &str| {
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| PkiError::Token("illegal base64 data in the token".to_owned()))
        };
        let header: Value = serde_json::from_slice(&decode(header)?)
            .map_err(|_| PkiError::Token("the token's header is not JSON".to_owned()))?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(PkiError::Token(
                "the token is not signed with this cluster's key algorithm".to_owned(),
            ));
        }
        let signed = &token[..token.len() - signature.len() - 1];
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, keys.sa_key.public_key().as_ref())
            .verify(signed.as_bytes(), &decode(signature)?)
            .map_err(|_| PkiError::Token("invalid signature".to_owned()))?;
        serde_json::from_slice(&decode(payload)?)
            .map_err(|_| PkiError::Token("the token's claims are not JSON".to_owned()))
    }
}

impl Keys {
    fn generate() -> Result<Keys, PkiError> {
        let ca_key = KeyPair::generate().map_err(|err| PkiError::Key(err.to_string()))?;
        let mut ca_params = CertificateParams::default();
        let mut subject = DistinguishedName::new();
        subject.push(DnType::CommonName, CA_COMMON_NAME);
        ca_params.distinguished_name = subject;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyCertSign,
        ];
        let now = SystemTime::now();
        ca_params.not_before = now.into();
        ca_params.not_after = (now + CA_VALIDITY).into();
        ca_params.serial_number = Some(SerialNumber::from_slice(&random_bytes::<SERIAL_BYTES>()?));
        let ca_pem = ca_params
            .self_signed(&ca_key)
            .map_err(|err| PkiError::Key(err.to_string()))?
            .pem();
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| PkiError::Key("generating the service-account key failed".to_owned()))?;
        let sa_key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .map_err(|_| PkiError::Key("reading the service-account key failed".to_owned()))?;
        let sa_key_id = key_id(sa_key.public_key().as_ref());
        Ok(Keys {
            ca_key,
            ca_params,
            ca_pem,
            sa_key,
            sa_key_id,
        })
    }
}

/// Upstream's `keyIDFromPublicKey` (`pkg/serviceaccount/jwt.go`): the SHA-256 of the public
/// key's PKIX DER, base64url without padding.
fn key_id(uncompressed_point: &[u8]) -> String {
    let mut der = P256_SPKI_PREFIX.to_vec();
    der.extend_from_slice(uncompressed_point);
    let digest = ring::digest::digest(&ring::digest::SHA256, &der);
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

fn random_bytes<const N: usize>() -> Result<[u8; N], PkiError> {
    let mut bytes = [0u8; N];
    ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut bytes)
        .map_err(|_| PkiError::Key("the system's random source failed".to_owned()))?;
    // A positive serial number: the top bit clear.
    bytes[0] &= 0x7f;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::pem::parse_x509_pem;
    use x509_parser::prelude::{FromDer, X509Certificate};

    #[test]
    fn tokens_verify_with_the_key_that_signed_them_only() {
        let pki = Pki::new();
        let claims = json!({"sub": "system:serviceaccount:default:builder", "exp": 1});
        let token = pki.sign_jwt(&claims).unwrap();
        assert_eq!(pki.verify_jwt(&token).unwrap(), claims);
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(
            header["kid"].as_str().unwrap().len(),
            43,
            "base64url of 32 bytes"
        );
        let other = Pki::new();
        assert!(other.verify_jwt(&token).is_err(), "another cluster's key");
        let mut tampered: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(json!({"sub": "system:admin"}).to_string());
        tampered[1] = &forged;
        assert!(pki.verify_jwt(&tampered.join(".")).is_err());
        assert!(pki.verify_jwt("not-a-jwt").is_err());
    }

    #[test]
    fn client_certificates_carry_the_request_subject_and_the_usages_asked_for() {
        let pki = Pki::new();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "developers");
        let request = params.serialize_request(&key).unwrap().pem().unwrap();
        let pem = pki
            .issue_client_certificate(
                &request,
                &["digital signature", "key encipherment", "client auth"],
                Duration::from_secs(3600),
            )
            .unwrap();
        let (_, der) = parse_x509_pem(pem.as_bytes()).unwrap();
        let (_, certificate) = X509Certificate::from_der(&der.contents).unwrap();
        assert_eq!(certificate.subject().to_string(), "CN=alice, O=developers");
        assert_eq!(certificate.issuer().to_string(), "CN=kubemock-ca");
        let eku = certificate.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        let validity = certificate.validity();
        let seconds = validity.not_after.timestamp() - validity.not_before.timestamp();
        assert_eq!(seconds, 3600 + 300, "one hour, backdated five minutes");
        let ca_pem = pki.ca_certificate_pem().unwrap();
        let (_, ca) = parse_x509_pem(ca_pem.as_bytes()).unwrap();
        let (_, ca) = X509Certificate::from_der(&ca.contents).unwrap();
        certificate
            .verify_signature(Some(ca.public_key()))
            .expect("signed by the cluster CA");
        assert!(
            pki.issue_client_certificate("garbage", &["client auth"], Duration::from_secs(1))
                .is_err()
        );
    }
}
