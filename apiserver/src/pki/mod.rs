//! The cluster's keys, in one place: a certificate authority (what a kubeadm cluster keeps in
//! `/etc/kubernetes/pki/ca.{crt,key}`) that issues the serving certificate, the admin's client
//! certificate and client certificates for approved CertificateSigningRequests, and the
//! service-account signing key (`--service-account-signing-key-file`, with the verifying keys
//! of `--service-account-key-file`) that signs and verifies the tokens of TokenRequest.
//!
//! [`Pki::new`] generates both in memory on first use: a server that never issues anything pays
//! nothing at startup (the startup target is milliseconds). [`Pki::load`] reads them from files
//! (or generates them into `--cert-dir`, reused on the next start), at startup, refusing a file
//! it cannot use with its name. Generated keys are ECDSA P-256: the real server accepts ECDSA
//! keys for both (`pkg/serviceaccount/jwt.go` signs `ES256` with one, and the signer's CA may
//! be an ECDSA key), and generating one takes microseconds where an RSA key takes tenths of a
//! second. Given RSA keys work too (tokens are then `RS256`, as upstream signs them). A server
//! restarted over a durable store without `--cert-dir` has new keys: tokens and certificates
//! issued before the restart no longer verify (as on a cluster whose keys were rotated).
//!
//! The API: [`Pki::ca_certificate_pem`], [`Pki::issue_client_certificate`],
//! [`Pki::issue_client_identity`], [`Pki::issue_serving_certificate`], [`Pki::sign_jwt`] and
//! [`Pki::verify_jwt`].

mod certificate;
mod keys;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, PublicKeyData as _,
    SerialNumber,
};
use ring::rand::SystemRandom;
use serde_json::{Value, json};
use x509_parser::prelude::{FromDer, X509Certificate};

pub(crate) use keys::{Signer, Verifier};

/// The common name of the generated CA (kubeadm's is `kubernetes`).
const CA_COMMON_NAME: &str = "kubemock-ca";
/// The common name of the generated serving certificate (kubeadm's is `kube-apiserver`).
const SERVING_COMMON_NAME: &str = "kube-apiserver";
/// How long the generated CA is valid: ten years, as kubeadm's.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// How long generated serving and admin certificates are valid: one year, as kubeadm's.
pub const CERTIFICATE_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// How far back an issued certificate's validity starts, for clocks a little behind
/// (`pkg/controller/certificates/authority/policies.go`, `backdate`: five minutes).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Serial numbers are 128 random bits, as upstream's signer draws them.
const SERIAL_BYTES: usize = 16;
/// The files of `--cert-dir` (kubeadm's names for the CA and the service-account key).
const CA_CERT_FILE: &str = "ca.crt";
const CA_KEY_FILE: &str = "ca.key";
const SA_KEY_FILE: &str = "sa.key";
const SA_PUBLIC_KEY_FILE: &str = "sa.pub";
/// Private keys are written readable by their owner only.
const PRIVATE_FILE_MODE: u32 = 0o600;

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
    /// A key or certificate file cannot be read or used.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// A key usage of a certificate, as `certificates.k8s.io/v1` spells them.
pub type Usage = str;

/// Where [`Pki::load`] finds the keys (kube-apiserver's flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyFiles {
    /// `--cert-dir`: the CA (`ca.crt`, `ca.key`) and the service-account key (`sa.key`,
    /// `sa.pub`) are read from it when there, else generated and written to it.
    pub cert_dir: Option<PathBuf>,
    /// `--service-account-key-file`: more keys that verify service-account tokens (public or
    /// private keys, or certificates; PEM).
    pub service_account_key_files: Vec<PathBuf>,
    /// `--service-account-signing-key-file`: the private key that signs service-account
    /// tokens (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC); it also verifies them.
    pub service_account_signing_key_file: Option<PathBuf>,
}

/// A certificate and its private key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    /// The certificate.
    pub certificate_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("certificate_pem", &self.certificate_pem)
            .finish_non_exhaustive()
    }
}

/// The cluster's keys, generated on first use or loaded at startup.
#[derive(Default)]
pub struct Pki {
    /// The CA; set at [`Pki::load`], else on first use.
    ca: OnceLock<Result<Ca, PkiError>>,
    /// The service-account keys; set at [`Pki::load`], else on first use.
    service_account: OnceLock<Result<ServiceAccountKeys, PkiError>>,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("ca", &self.ca.get().is_some())
            .field("service_account", &self.service_account.get().is_some())
            .finish()
    }
}

struct Ca {
    /// The CA's signing key with the subject and key identifier of what it signs.
    issuer: Issuer<'static, KeyPair>,
    /// The CA's subject (DER), for [`certificate`].
    subject: Vec<u8>,
    /// The CA's subject key identifier, if it has one.
    key_id: Option<Vec<u8>>,
    /// The CA certificate, PEM.
    pem: String,
    /// The CA certificate, DER.
    der: Vec<u8>,
}

struct ServiceAccountKeys {
    /// The key that signs tokens.
    signer: Signer,
    /// `kid` of the tokens: the signing key's identifier as upstream derives it.
    key_id: String,
    /// The keys that verify tokens: the signer's, then those of the key files.
    verifiers: Vec<Verifier>,
}

impl Pki {
    /// Keys not generated yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys `files` name, read now (generated into `--cert-dir` when it has none yet).
    pub fn load(files: &KeyFiles) -> Result<Pki, PkiError> {
        let ca = match &files.cert_dir {
            Some(dir) => Ca::in_dir(dir)?,
            None => Ca::generate()?.0,
        };
        let service_account = ServiceAccountKeys::load(files)?;
        let pki = Pki::new();
        let _ = pki.ca.set(Ok(ca));
        let _ = pki.service_account.set(Ok(service_account));
        Ok(pki)
    }

    fn ca(&self) -> Result<&Ca, PkiError> {
        self.ca
            .get_or_init(|| Ca::generate().map(|(ca, _)| ca))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn service_account(&self) -> Result<&ServiceAccountKeys, PkiError> {
        self.service_account
            .get_or_init(|| ServiceAccountKeys::load(&KeyFiles::default()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The cluster CA's certificate (PEM): what clients trust for certificates it issued.
    pub fn ca_certificate_pem(&self) -> Result<String, PkiError> {
        Ok(self.ca()?.pem.clone())
    }

    /// The cluster CA's certificate (DER).
    pub(crate) fn ca_certificate_der(&self) -> Result<Vec<u8>, PkiError> {
        Ok(self.ca()?.der.clone())
    }

    /// A new key and a certificate for it from the cluster CA, for a client: subject one `O`
    /// per organization and `CN=common_name` (the groups and the user the x509 authenticator
    /// reads), usage client auth, valid from [`BACKDATE`] ago for `validity`.
    pub fn issue_client_identity(
        &self,
        common_name: &str,
        organizations: &[&str],
        validity: Duration,
    ) -> Result<Identity, PkiError> {
        let ca = self.ca()?;
        let key = KeyPair::generate().map_err(|err| PkiError::Key(err.to_string()))?;
        let now = tokens_now();
        let signing = certificate::Signing {
            key: ca.issuer.key(),
            subject: &ca.subject,
            key_id: ca.key_id.as_deref(),
        };
        let validity = i64::try_from(validity.as_secs()).unwrap_or(i64::MAX);
        let der = certificate::client_certificate(
            &signing,
            &key,
            common_name,
            organizations,
            &random_bytes::<SERIAL_BYTES>()?,
            (
                now.saturating_sub(BACKDATE.as_secs() as i64),
                now.saturating_add(validity),
            ),
        )
        .map_err(PkiError::Key)?;
        Ok(Identity {
            certificate_pem: pem_text(&pem::Pem::new("CERTIFICATE", der)),
            key_pem: key.serialize_pem(),
        })
    }

    /// A new key and a certificate for it from the cluster CA, for serving `hosts` (IP
    /// addresses and DNS names), valid from [`BACKDATE`] ago for `validity`.
    pub fn issue_serving_certificate(
        &self,
        hosts: &[String],
        validity: Duration,
    ) -> Result<Identity, PkiError> {
        let mut params = CertificateParams::new(hosts.to_vec())
            .map_err(|err| PkiError::Key(format!("the serving certificate's names: {err}")))?;
        params
            .distinguished_name
            .push(DnType::CommonName, SERVING_COMMON_NAME);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params, validity)
    }

    fn issue(
        &self,
        mut params: CertificateParams,
        validity: Duration,
    ) -> Result<Identity, PkiError> {
        let ca = self.ca()?;
        let key = KeyPair::generate().map_err(|err| PkiError::Key(err.to_string()))?;
        let now = SystemTime::now();
        params.not_before = (now - BACKDATE).into();
        params.not_after = (now + validity).into();
        params.is_ca = IsCa::ExplicitNoCa;
        params.serial_number = Some(SerialNumber::from_slice(&random_bytes::<SERIAL_BYTES>()?));
        let certificate = params
            .signed_by(&key, &ca.issuer)
            .map_err(|err| PkiError::Key(format!("signing the certificate: {err}")))?;
        Ok(Identity {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
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
        let ca = self.ca()?;
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
        let certificate = csr
            .signed_by(&ca.issuer)
            .map_err(|err| PkiError::Request(format!("unable to sign the certificate: {err}")))?;
        Ok(certificate.pem())
    }

    /// A JWS compact serialisation of `claims`, signed with the service-account key (`ES256`
    /// for a generated key), with the key's `kid`.
    pub fn sign_jwt(&self, claims: &Value) -> Result<String, PkiError> {
        let keys = self.service_account()?;
        let header = json!({"alg": keys.signer.algorithm().name(), "kid": keys.key_id});
        let mut token = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = keys
            .signer
            .sign(token.as_bytes())
            .map_err(|err| PkiError::Key(format!("signing the token: {err}")))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature));
        Ok(token)
    }

    /// The claims of `token` if it is a JWT one of this cluster's service-account keys signed;
    /// the claims' meaning (expiry, audiences, the objects they name) is the caller's to check.
    pub fn verify_jwt(&self, token: &str) -> Result<Value, PkiError> {
        let keys = self.service_account()?;
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
        let algorithm = header.get("alg").and_then(Value::as_str).unwrap_or("");
        let signed = &token[..token.len() - signature.len() - 1];
        let signature = decode(signature)?;
        let candidates: Vec<&Verifier> = keys
            .verifiers
            .iter()
            .filter(|key| key.algorithm.name() == algorithm)
            .collect();
        if candidates.is_empty() {
            return Err(PkiError::Token(
                "the token is not signed with this cluster's key algorithm".to_owned(),
            ));
        }
        if !candidates
            .iter()
            .any(|key| key.verify(signed.as_bytes(), &signature))
        {
            return Err(PkiError::Token("invalid signature".to_owned()));
        }
        serde_json::from_slice(&decode(payload)?)
            .map_err(|_| PkiError::Token("the token's claims are not JSON".to_owned()))
    }
}

impl Ca {
    /// A new CA, with its key's PEM.
    fn generate() -> Result<(Ca, String), PkiError> {
        let key = KeyPair::generate().map_err(|err| PkiError::Key(err.to_string()))?;
        let mut params = CertificateParams::default();
        let mut subject = DistinguishedName::new();
        subject.push(DnType::CommonName, CA_COMMON_NAME);
        params.distinguished_name = subject;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::KeyCertSign,
        ];
        let now = SystemTime::now();
        params.not_before = now.into();
        params.not_after = (now + CA_VALIDITY).into();
        params.serial_number = Some(SerialNumber::from_slice(&random_bytes::<SERIAL_BYTES>()?));
        let certificate = params
            .self_signed(&key)
            .map_err(|err| PkiError::Key(err.to_string()))?;
        let key_pem = key.serialize_pem();
        let der = certificate.der().to_vec();
        let (subject, key_id) = subject_and_key_id(&der)?;
        Ok((
            Ca {
                pem: certificate.pem(),
                der,
                subject,
                key_id,
                issuer: Issuer::new(params, key),
            },
            key_pem,
        ))
    }

    /// The CA of `dir` (`ca.crt`, `ca.key`), generated into it when it holds neither.
    fn in_dir(dir: &Path) -> Result<Ca, PkiError> {
        let (cert_path, key_path) = (dir.join(CA_CERT_FILE), dir.join(CA_KEY_FILE));
        match (cert_path.exists(), key_path.exists()) {
            (true, true) => Ca::from_files(&cert_path, &key_path),
            (false, false) => {
                let (ca, key_pem) = Ca::generate()?;
                write_file(&key_path, key_pem.as_bytes(), true)?;
                write_file(&cert_path, ca.pem.as_bytes(), false)?;
                Ok(ca)
            }
            (true, false) => Err(file_error(
                &key_path,
                format!(
                    "missing beside {}: give both or neither",
                    cert_path.display()
                ),
            )),
            (false, true) => Err(file_error(
                &cert_path,
                format!(
                    "missing beside {}: give both or neither",
                    key_path.display()
                ),
            )),
        }
    }

    /// The CA of a certificate file and its key file.
    fn from_files(cert_path: &Path, key_path: &Path) -> Result<Ca, PkiError> {
        let text = read_file(cert_path)?;
        let certificate = pem::parse_many(&text)
            .ok()
            .and_then(|blocks| blocks.into_iter().find(|b| b.tag() == "CERTIFICATE"))
            .ok_or_else(|| file_error(cert_path, "holds no PEM CERTIFICATE"))?;
        let der = certificate.contents().to_vec();
        let (_, parsed) = X509Certificate::from_der(&der)
            .map_err(|err| file_error(cert_path, format!("unreadable certificate: {err}")))?;
        let pkcs8 = keys::private_key_to_pkcs8(&read_file(key_path)?)
            .map_err(|reason| file_error(key_path, reason))?;
        let key = KeyPair::try_from(pkcs8.as_slice())
            .map_err(|err| file_error(key_path, format!("unusable private key: {err}")))?;
        if key.subject_public_key_info() != parsed.public_key().raw {
            return Err(file_error(
                key_path,
                format!("is not the key of {}", cert_path.display()),
            ));
        }
        let issuer = Issuer::from_ca_cert_der(&der.clone().into(), key)
            .map_err(|err| file_error(cert_path, format!("unusable CA certificate: {err}")))?;
        let (subject, key_id) =
            subject_and_key_id(&der).map_err(|err| file_error(cert_path, err.to_string()))?;
        Ok(Ca {
            issuer,
            pem: pem_text(&certificate),
            der,
            subject,
            key_id,
        })
    }
}

impl ServiceAccountKeys {
    /// The signing key (the file, else `sa.key` of the cert dir, else generated, and then
    /// written there) and the verifying keys.
    fn load(files: &KeyFiles) -> Result<ServiceAccountKeys, PkiError> {
        let signer = match (&files.service_account_signing_key_file, &files.cert_dir) {
            (Some(path), _) => {
                Signer::from_pem(&read_file(path)?).map_err(|reason| file_error(path, reason))?
            }
            (None, Some(dir)) if dir.join(SA_KEY_FILE).exists() => {
                let path = dir.join(SA_KEY_FILE);
                Signer::from_pem(&read_file(&path)?).map_err(|reason| file_error(&path, reason))?
            }
            (None, dir) => {
                let (signer, pkcs8) = Signer::generate().map_err(PkiError::Key)?;
                if let Some(dir) = dir {
                    let private = pem_text(&pem::Pem::new("PRIVATE KEY", pkcs8));
                    write_file(&dir.join(SA_KEY_FILE), private.as_bytes(), true)?;
                    let public = pem_text(&pem::Pem::new("PUBLIC KEY", signer.public_key_der()));
                    write_file(&dir.join(SA_PUBLIC_KEY_FILE), public.as_bytes(), false)?;
                }
                signer
            }
        };
        let mut verifiers = vec![signer.verifier()];
        for path in &files.service_account_key_files {
            let keys = keys::public_keys_from_pem(&read_file(path)?)
                .map_err(|reason| file_error(path, reason))?;
            for key in keys {
                if !verifiers.contains(&key) {
                    verifiers.push(key);
                }
            }
        }
        Ok(ServiceAccountKeys {
            key_id: signer.verifier().key_id,
            signer,
            verifiers,
        })
    }
}

/// A certificate's subject (DER) and subject key identifier.
fn subject_and_key_id(der: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>), PkiError> {
    use x509_parser::extensions::ParsedExtension;
    let (_, certificate) = X509Certificate::from_der(der)
        .map_err(|err| PkiError::Key(format!("unreadable CA certificate: {err}")))?;
    let key_id =
        certificate
            .iter_extensions()
            .find_map(|extension| match extension.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0.to_vec()),
                _ => None,
            });
    Ok((certificate.subject().as_raw().to_vec(), key_id))
}

/// PEM with Unix line endings (the `pem` crate writes CRLF by default).
pub(crate) fn pem_text(block: &pem::Pem) -> String {
    pem::encode_config(
        block,
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// Now, in Unix seconds.
fn tokens_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A [`PkiError::File`].
fn file_error(path: &Path, reason: impl Into<String>) -> PkiError {
    PkiError::File {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// The bytes of `path`, or a [`PkiError::File`] naming it.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, PkiError> {
    std::fs::read(path).map_err(|err| file_error(path, err.to_string()))
}

/// Writes `bytes` to `path`, readable by the owner only when `private`.
pub(crate) fn write_file(path: &Path, bytes: &[u8], private: bool) -> Result<(), PkiError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    if private {
        options.mode(PRIVATE_FILE_MODE);
    }
    options
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|err| file_error(path, format!("cannot write: {err}")))
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
    fn a_cert_dir_is_filled_once_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let files = KeyFiles {
            cert_dir: Some(dir.path().to_owned()),
            ..KeyFiles::default()
        };
        let first = Pki::load(&files).unwrap();
        for name in ["ca.crt", "ca.key", "sa.key", "sa.pub"] {
            assert!(dir.path().join(name).exists(), "{name} written");
        }
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("ca.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "private keys readable by their owner only"
        );
        let token = first.sign_jwt(&json!({"sub": "x"})).unwrap();
        let second = Pki::load(&files).unwrap();
        assert_eq!(
            second.ca_certificate_pem().unwrap(),
            first.ca_certificate_pem().unwrap()
        );
        assert_eq!(second.verify_jwt(&token).unwrap(), json!({"sub": "x"}));
        // What the reloaded CA issues verifies against the CA written the first time.
        let issued = second
            .issue_client_identity("alice", &["dev"], Duration::from_secs(60))
            .unwrap();
        let (_, der) = parse_x509_pem(issued.certificate_pem.as_bytes()).unwrap();
        let (_, certificate) = X509Certificate::from_der(&der.contents).unwrap();
        let ca_pem = first.ca_certificate_pem().unwrap();
        let (_, ca) = parse_x509_pem(ca_pem.as_bytes()).unwrap();
        let (_, ca) = X509Certificate::from_der(&ca.contents).unwrap();
        certificate.verify_signature(Some(ca.public_key())).unwrap();
        assert_eq!(certificate.subject().to_string(), "O=dev, CN=alice");

        std::fs::remove_file(dir.path().join("ca.key")).unwrap();
        let err = Pki::load(&files).unwrap_err().to_string();
        assert!(err.contains("ca.key: missing beside"), "{err}");
    }

    #[test]
    fn a_given_rsa_signing_key_signs_rs256_and_extra_key_files_verify() {
        let dir = tempfile::tempdir().unwrap();
        let rsa = dir.path().join("sa.key");
        std::fs::write(&rsa, include_str!("testdata/rsa-pkcs1.key")).unwrap();
        let other = dir.path().join("other.pub");
        std::fs::write(&other, include_str!("testdata/ec-sec1.pub")).unwrap();
        let pki = Pki::load(&KeyFiles {
            service_account_signing_key_file: Some(rsa.clone()),
            service_account_key_files: vec![other],
            ..KeyFiles::default()
        })
        .unwrap();
        let token = pki.sign_jwt(&json!({"sub": "x"})).unwrap();
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "RS256");
        assert_eq!(pki.verify_jwt(&token).unwrap(), json!({"sub": "x"}));
        // A token of the other key (ES256) verifies too.
        let ec = Signer::from_pem(include_bytes!("testdata/ec-sec1.key")).unwrap();
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"sub":"y"}"#)
        );
        let signature = URL_SAFE_NO_PAD.encode(ec.sign(signed.as_bytes()).unwrap());
        assert_eq!(
            pki.verify_jwt(&format!("{signed}.{signature}")).unwrap(),
            json!({"sub": "y"})
        );
        let garbage = dir.path().join("garbage.key");
        std::fs::write(&garbage, "not a key").unwrap();
        let err = Pki::load(&KeyFiles {
            service_account_signing_key_file: Some(garbage),
            ..KeyFiles::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("garbage.key: no private key found"), "{err}");
    }

    #[test]
    fn serving_certificates_name_every_host() {
        let pki = Pki::new();
        let identity = pki
            .issue_serving_certificate(
                &[
                    "127.0.0.1".to_owned(),
                    "::1".to_owned(),
                    "localhost".to_owned(),
                ],
                CERTIFICATE_VALIDITY,
            )
            .unwrap();
        let (_, der) = parse_x509_pem(identity.certificate_pem.as_bytes()).unwrap();
        let (_, certificate) = X509Certificate::from_der(&der.contents).unwrap();
        let names = format!(
            "{:?}",
            certificate
                .subject_alternative_name()
                .unwrap()
                .unwrap()
                .value
        );
        assert!(
            names.contains("IPAddress([127, 0, 0, 1])") && names.contains("DNSName(\"localhost\")"),
            "{names}"
        );
        let eku = certificate.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.server_auth && !eku.client_auth);
        assert!(identity.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
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
