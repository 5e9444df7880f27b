//! The keys kube-apiserver reads from files, read as it reads them: PEM files of private keys
//! (PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY`, SEC1 `EC PRIVATE KEY`), public keys
//! (`PUBLIC KEY`, `RSA PUBLIC KEY`) and certificates (`client-go/util/keyutil/key.go`,
//! `PublicKeysFromFile`, `ParsePrivateKeyPEM`), and the service-account token keys made of
//! them: a signer (`RS256` for an RSA key, `ES256`/`ES384` for an ECDSA one, as
//! `pkg/serviceaccount/jwt.go` picks the algorithm from the key) and verifiers, each with the
//! key id upstream derives from the public key.
//!
//! ring reads PKCS#8 keys (and PKCS#1 RSA keys); a SEC1 key is wrapped into PKCS#8 here, which
//! is a few bytes of DER around it. A key in any other form (encrypted, another curve, DSA)
//! is refused with the file's name and what was found, at startup.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    self, ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING, EcdsaKeyPair,
    KeyPair as _, RsaKeyPair, UnparsedPublicKey,
};
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::SubjectPublicKeyInfo;

/// DER contents of the OID `id-ecPublicKey` (1.2.840.10045.2.1).
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// DER contents of the OID `prime256v1` (1.2.840.10045.3.1.7).
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// DER contents of the OID `secp384r1` (1.3.132.0.34).
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
/// DER contents of the OID `rsaEncryption` (1.2.840.113549.1.1.1).
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// DER tags used here and in `certificate`.
pub(super) const SEQUENCE: u8 = 0x30;
pub(super) const INTEGER: u8 = 0x02;
pub(super) const BIT_STRING: u8 = 0x03;
pub(super) const OCTET_STRING: u8 = 0x04;
pub(super) const OID: u8 = 0x06;
/// The DER of ASN.1 `NULL`, the parameters of `rsaEncryption`.
const NULL: [u8; 2] = [0x05, 0x00];
/// `[0]`, the curve parameters of a SEC1 key.
const CONTEXT_0: u8 = 0xa0;

/// A JWS algorithm of service-account tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// ECDSA P-384 with SHA-384.
    Es384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Algorithm {
    /// The JWS `alg` name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Algorithm::Es256 => "ES256",
            Algorithm::Es384 => "ES384",
            Algorithm::Rs256 => "RS256",
        }
    }

    fn verification(self) -> &'static dyn signature::VerificationAlgorithm {
        match self {
            Algorithm::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
            Algorithm::Es384 => &signature::ECDSA_P384_SHA384_FIXED,
            Algorithm::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        }
    }
}

/// A private key that signs tokens.
pub(crate) enum Signer {
    /// An ECDSA key (P-256 or P-384), signing the fixed-length `r || s` form JWS uses.
    Ecdsa(EcdsaKeyPair, Algorithm),
    /// An RSA key, signing PKCS#1 v1.5 with SHA-256.
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Signer").field(&self.algorithm()).finish()
    }
}

impl Signer {
    /// A new ECDSA P-256 key, with its PKCS#8 DER (to be written to a file).
    pub(crate) fn generate() -> Result<(Signer, Vec<u8>), String> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "generating the key failed".to_owned())?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|err| format!("reading the generated key failed: {err}"))?;
        Ok((
            Signer::Ecdsa(key, Algorithm::Es256),
            pkcs8.as_ref().to_vec(),
        ))
    }

    /// The first private key of the PEM `text`.
    pub(crate) fn from_pem(text: &[u8]) -> Result<Signer, String> {
        let blocks = pem::parse_many(text).map_err(|err| format!("not PEM: {err}"))?;
        let mut labels = Vec::new();
        for block in &blocks {
            let key = match block.tag() {
                "PRIVATE KEY" => Signer::from_pkcs8(block.contents()),
                "RSA PRIVATE KEY" => RsaKeyPair::from_der(block.contents())
                    .map(Signer::Rsa)
                    .map_err(|err| format!("the RSA PRIVATE KEY is not usable: {err}")),
                "EC PRIVATE KEY" => Signer::from_pkcs8(&sec1_to_pkcs8(block.contents())?),
                other => {
                    labels.push(other.to_owned());
                    continue;
                }
            };
            return key;
        }
        Err(format!(
            "no private key found (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY){}",
            found(&labels)
        ))
    }

    fn from_pkcs8(der: &[u8]) -> Result<Signer, String> {
        let rng = SystemRandom::new();
        if let Ok(key) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng) {
            return Ok(Signer::Ecdsa(key, Algorithm::Es256));
        }
        if let Ok(key) = EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, der, &rng) {
            return Ok(Signer::Ecdsa(key, Algorithm::Es384));
        }
        RsaKeyPair::from_pkcs8(der).map(Signer::Rsa).map_err(|err| {
            format!(
                "the PRIVATE KEY is neither an ECDSA P-256 or P-384 key nor a usable RSA key: {err}"
            )
        })
    }

    /// The JWS algorithm of the key.
    pub(crate) fn algorithm(&self) -> Algorithm {
        match self {
            Signer::Ecdsa(_, algorithm) => *algorithm,
            Signer::Rsa(_) => Algorithm::Rs256,
        }
    }

    /// The public key as a PKIX `SubjectPublicKeyInfo` (DER).
    pub(crate) fn public_key_der(&self) -> Vec<u8> {
        match self {
            Signer::Ecdsa(key, Algorithm::Es384) => ec_spki(OID_P384, key.public_key().as_ref()),
            Signer::Ecdsa(key, _) => ec_spki(OID_P256, key.public_key().as_ref()),
            Signer::Rsa(key) => rsa_spki(key.public_key().as_ref()),
        }
    }

    /// The verifier of what this key signs.
    pub(crate) fn verifier(&self) -> Verifier {
        let public_key = match self {
            Signer::Ecdsa(key, _) => key.public_key().as_ref().to_vec(),
            Signer::Rsa(key) => key.public_key().as_ref().to_vec(),
        };
        Verifier {
            algorithm: self.algorithm(),
            key_id: key_id(&self.public_key_der()),
            public_key,
        }
    }

    /// Signs `message` with the key's algorithm.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        match self {
            Signer::Ecdsa(key, _) => key
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "signing failed".to_owned()),
            Signer::Rsa(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut signature)
                    .map_err(|_| "signing failed".to_owned())?;
                Ok(signature)
            }
        }
    }
}

/// A public key that verifies tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verifier {
    /// The algorithm the key verifies.
    pub(crate) algorithm: Algorithm,
    /// The key in ring's form: an uncompressed point, or a PKCS#1 `RSAPublicKey`.
    public_key: Vec<u8>,
    /// Upstream's `keyIDFromPublicKey`.
    pub(crate) key_id: String,
}

impl Verifier {
    /// Whether `signature` is this key's signature of `message`.
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(self.algorithm.verification(), &self.public_key)
            .verify(message, signature)
            .is_ok()
    }

    /// The verifier of a PKIX `SubjectPublicKeyInfo` (DER).
    fn from_spki(der: &[u8]) -> Result<Verifier, String> {
        let (_, spki) = SubjectPublicKeyInfo::from_der(der)
            .map_err(|err| format!("unreadable public key: {err}"))?;
        let algorithm = spki.algorithm.algorithm.as_bytes();
        let parameters = spki.algorithm.parameters.as_ref().map(|p| p.as_bytes());
        let algorithm = match (algorithm, parameters) {
            (OID_RSA, _) => Algorithm::Rs256,
            (OID_EC_PUBLIC_KEY, Some(OID_P256)) => Algorithm::Es256,
            (OID_EC_PUBLIC_KEY, Some(OID_P384)) => Algorithm::Es384,
            _ => {
                return Err("the public key is neither RSA nor ECDSA on P-256 or P-384".to_owned());
            }
        };
        Ok(Verifier {
            algorithm,
            public_key: spki.subject_public_key.data.to_vec(),
            key_id: key_id(der),
        })
    }
}

/// Every public key of the PEM `text`: public keys, certificates' keys, and the public halves
/// of private keys (`keyutil.ParsePublicKeysPEM`). None is an error, as upstream's "data does
/// not contain any valid RSA or ECDSA public keys".
pub(crate) fn public_keys_from_pem(text: &[u8]) -> Result<Vec<Verifier>, String> {
    let blocks = pem::parse_many(text).map_err(|err| format!("not PEM: {err}"))?;
    let mut keys = Vec::new();
    let mut labels = Vec::new();
    for block in &blocks {
        let key = match block.tag() {
            "PUBLIC KEY" => Verifier::from_spki(block.contents())?,
            "RSA PUBLIC KEY" => Verifier::from_spki(&rsa_spki(block.contents()))?,
            "CERTIFICATE" => {
                let (_, certificate) = X509Certificate::from_der(block.contents())
                    .map_err(|err| format!("unreadable certificate: {err}"))?;
                Verifier::from_spki(certificate.public_key().raw)?
            }
            "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => {
                Signer::from_pem(super::pem_text(block).as_bytes())?.verifier()
            }
            other => {
                labels.push(other.to_owned());
                continue;
            }
        };
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(format!(
            "data does not contain any valid RSA or ECDSA public keys{}",
            found(&labels)
        ));
    }
    Ok(keys)
}

/// A private key of any form rustls and upstream read, as PKCS#8 DER (what rcgen and ring
/// take): PKCS#8 as it is, PKCS#1 RSA and SEC1 EC wrapped.
pub(crate) fn private_key_to_pkcs8(text: &[u8]) -> Result<Vec<u8>, String> {
    let blocks = pem::parse_many(text).map_err(|err| format!("not PEM: {err}"))?;
    let mut labels = Vec::new();
    for block in &blocks {
        match block.tag() {
            "PRIVATE KEY" => return Ok(block.contents().to_vec()),
            "RSA PRIVATE KEY" => {
                let mut algorithm = der(OID, OID_RSA);
                algorithm.extend_from_slice(&NULL);
                return Ok(pkcs8(&algorithm, block.contents()));
            }
            "EC PRIVATE KEY" => return sec1_to_pkcs8(block.contents()),
            other => labels.push(other.to_owned()),
        }
    }
    Err(format!(
        "no private key found (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY){}",
        found(&labels)
    ))
}

/// `; found: A, B` when `labels` is not empty.
fn found(labels: &[String]) -> String {
    if labels.is_empty() {
        "; the file holds no PEM block".to_owned()
    } else {
        format!("; found: {}", labels.join(", "))
    }
}

/// Upstream's `keyIDFromPublicKey` (`pkg/serviceaccount/jwt.go`): the SHA-256 of the public
/// key's PKIX DER, base64url without padding.
pub(crate) fn key_id(spki: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, spki);
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// A SEC1 `ECPrivateKey` as PKCS#8, with the curve its parameters name (P-256 when it names
/// none and the key fits it).
fn sec1_to_pkcs8(sec1: &[u8]) -> Result<Vec<u8>, String> {
    let curve = sec1_curve(sec1)
        .ok_or_else(|| "the EC PRIVATE KEY is not a readable SEC1 key".to_owned())?;
    let curve = match curve {
        Some(OID_P384) => OID_P384,
        Some(OID_P256) | None => OID_P256,
        Some(_) => return Err("the EC PRIVATE KEY is on a curve other than P-256 or P-384".into()),
    };
    let mut algorithm = der(OID, OID_EC_PUBLIC_KEY);
    algorithm.extend(der(OID, curve));
    Ok(pkcs8(&algorithm, sec1))
}

/// The curve OID of a SEC1 key's `[0]` parameters: `None` inside when it has none, `None`
/// outside when the DER does not read.
fn sec1_curve(sec1: &[u8]) -> Option<Option<&[u8]>> {
    let (tag, body, rest) = read_tlv(sec1)?;
    if tag != SEQUENCE || !rest.is_empty() {
        return None;
    }
    let mut input = body;
    while !input.is_empty() {
        let (tag, value, rest) = read_tlv(input)?;
        if tag == CONTEXT_0 {
            let (inner, oid, _) = read_tlv(value)?;
            return (inner == OID).then_some(Some(oid));
        }
        input = rest;
    }
    Some(None)
}

/// PKCS#8 `PrivateKeyInfo` of `key` with the `AlgorithmIdentifier` contents `algorithm`.
fn pkcs8(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    let mut body = der(INTEGER, &[0]);
    body.extend(der(SEQUENCE, algorithm));
    body.extend(der(OCTET_STRING, key));
    der(SEQUENCE, &body)
}

/// The `SubjectPublicKeyInfo` of an EC point on `curve`.
fn ec_spki(curve: &[u8], point: &[u8]) -> Vec<u8> {
    let mut algorithm = der(OID, OID_EC_PUBLIC_KEY);
    algorithm.extend(der(OID, curve));
    spki(&algorithm, point)
}

/// The `SubjectPublicKeyInfo` of a PKCS#1 `RSAPublicKey`.
fn rsa_spki(public_key: &[u8]) -> Vec<u8> {
    let mut algorithm = der(OID, OID_RSA);
    algorithm.extend_from_slice(&NULL);
    spki(&algorithm, public_key)
}

fn spki(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    let mut bits = vec![0];
    bits.extend_from_slice(key);
    let mut body = der(SEQUENCE, algorithm);
    body.extend(der(BIT_STRING, &bits));
    der(SEQUENCE, &body)
}

/// One DER element: `tag`, the length, `content`.
pub(super) fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// Reads one DER element: (tag, contents, what follows).
fn read_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > std::mem::size_of::<usize>() || rest.len() < count {
            return None;
        }
        let (bytes, rest) = rest.split_at(count);
        let len = bytes.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b));
        (len, rest)
    };
    if rest.len() < len {
        return None;
    }
    let (value, rest) = rest.split_at(len);
    Some((tag, value, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RSA 2048 key in PKCS#1 (`openssl genrsa -traditional 2048`), as kubeadm's `sa.key`.
    const RSA_PKCS1: &str = include_str!("testdata/rsa-pkcs1.key");
    /// A P-256 key in SEC1 (`openssl ecparam -name prime256v1 -genkey`).
    const EC_SEC1: &str = include_str!("testdata/ec-sec1.key");
    /// Its public key (`openssl ec -pubout`).
    const EC_PUBLIC: &str = include_str!("testdata/ec-sec1.pub");

    #[test]
    fn rsa_pkcs1_keys_sign_rs256_that_their_public_half_verifies() {
        let signer = Signer::from_pem(RSA_PKCS1.as_bytes()).unwrap();
        assert_eq!(signer.algorithm(), Algorithm::Rs256);
        let signature = signer.sign(b"header.claims").unwrap();
        assert_eq!(signature.len(), 256);
        let verifiers = public_keys_from_pem(RSA_PKCS1.as_bytes()).unwrap();
        assert!(verifiers[0].verify(b"header.claims", &signature));
        assert!(!verifiers[0].verify(b"header.other", &signature));
        assert_eq!(verifiers[0], signer.verifier());
        // Wrapped into PKCS#8, the same key.
        let pkcs8 = private_key_to_pkcs8(RSA_PKCS1.as_bytes()).unwrap();
        assert_eq!(
            Signer::from_pkcs8(&pkcs8).unwrap().verifier(),
            signer.verifier()
        );
    }

    #[test]
    fn sec1_keys_are_read_and_their_public_file_has_the_same_key_id() {
        let signer = Signer::from_pem(EC_SEC1.as_bytes()).unwrap();
        assert_eq!(signer.algorithm(), Algorithm::Es256);
        let public = public_keys_from_pem(EC_PUBLIC.as_bytes()).unwrap();
        assert_eq!(public, vec![signer.verifier()], "same key, same kid");
        let signature = signer.sign(b"payload").unwrap();
        assert!(public[0].verify(b"payload", &signature));
    }

    #[test]
    fn unusable_files_are_refused_with_what_they_hold() {
        let err = Signer::from_pem(EC_PUBLIC.as_bytes()).unwrap_err();
        assert!(err.contains("found: PUBLIC KEY"), "{err}");
        let err = public_keys_from_pem(b"hello").unwrap_err();
        assert!(err.contains("data does not contain any valid"), "{err}");
        let encrypted =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let err = Signer::from_pem(encrypted.as_bytes()).unwrap_err();
        assert!(err.contains("found: ENCRYPTED PRIVATE KEY"), "{err}");
        assert!(sec1_curve(&[0x30, 0x05, 0x02]).is_none(), "truncated DER");
    }

    #[test]
    fn generated_keys_have_upstreams_key_id_shape() {
        let (signer, pkcs8) = Signer::generate().unwrap();
        assert_eq!(signer.verifier().key_id.len(), 43, "base64url of 32 bytes");
        assert_eq!(
            Signer::from_pkcs8(&pkcs8).unwrap().verifier(),
            signer.verifier()
        );
        let spki = signer.public_key_der();
        assert_eq!(Verifier::from_spki(&spki).unwrap(), signer.verifier());
    }
}
