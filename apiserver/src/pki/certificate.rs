//! Client certificates written field by field, for what rcgen cannot express: a subject with
//! several organizations (rcgen keeps one value per attribute type, and the x509 authenticator
//! reads every `O` as a group, so a user in two groups needs two). The certificate is what
//! Go's `x509.CreateCertificate` makes of upstream's client template: version 3, a random
//! positive serial, the CA's subject as issuer, the subject `O=...` then `CN=...` (Go's
//! `pkix.Name` order), key usage digital signature and key encipherment (critical), extended
//! key usage client auth, basic constraints CA false (critical), and the CA's key identifier.

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, PKCS_RSA_SHA256};
use rcgen::{PublicKeyData as _, SigningKey as _};

use super::keys::{BIT_STRING, INTEGER, OCTET_STRING, OID, SEQUENCE, der};

/// DER tags used here besides those of `keys`.
const SET: u8 = 0x31;
const UTF8_STRING: u8 = 0x0c;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const BOOLEAN_TRUE: [u8; 3] = [0x01, 0x01, 0xff];
/// `[0] EXPLICIT INTEGER 2`: version 3.
const VERSION_3: [u8; 5] = [0xa0, 0x03, 0x02, 0x01, 0x02];
/// `[3] EXPLICIT`, the extensions; `[0] IMPLICIT`, an authority key identifier's key id.
const CONTEXT_3: u8 = 0xa3;
const CONTEXT_0_PRIMITIVE: u8 = 0x80;
/// Attribute types: `commonName`, `organizationName`.
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
const OID_ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];
/// Extensions: key usage, extended key usage, basic constraints, authority key identifier.
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const OID_EXTENDED_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
const OID_AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
/// `id-kp-clientAuth` (1.3.6.1.5.5.7.3.2).
const OID_CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
/// Key usage bits digitalSignature (0) and keyEncipherment (2): `a0`, five unused bits.
const KEY_USAGE_BITS: [u8; 2] = [0x05, 0xa0];
/// Signature algorithm identifiers (contents): ecdsa-with-SHA256, ecdsa-with-SHA384,
/// sha256WithRSAEncryption (with its NULL parameters).
const ECDSA_SHA256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const ECDSA_SHA384: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];
const RSA_SHA256: &[u8] = &[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00,
];
/// UTCTime covers the years before 2050; GeneralizedTime the rest (RFC 5280, 4.1.2.5).
const UTC_TIME_END_YEAR: i64 = 2050;

/// What the CA puts into every certificate it signs.
pub(super) struct Signing<'a> {
    /// The CA's key.
    pub(super) key: &'a KeyPair,
    /// The CA's subject, DER (the issuer of what it signs).
    pub(super) subject: &'a [u8],
    /// The CA's subject key identifier, if it has one.
    pub(super) key_id: Option<&'a [u8]>,
}

/// A client certificate for `public_key` (a `SubjectPublicKeyInfo`), subject `organizations`
/// and `common_name`, valid between the Unix times `not_before` and `not_after`, signed by
/// `ca`. DER.
pub(super) fn client_certificate(
    ca: &Signing<'_>,
    public_key: &KeyPair,
    common_name: &str,
    organizations: &[&str],
    serial: &[u8],
    (not_before, not_after): (i64, i64),
) -> Result<Vec<u8>, String> {
    let algorithm = if ca.key.algorithm() == &PKCS_ECDSA_P256_SHA256 {
        ECDSA_SHA256
    } else if ca.key.algorithm() == &PKCS_ECDSA_P384_SHA384 {
        ECDSA_SHA384
    } else if ca.key.algorithm() == &PKCS_RSA_SHA256 {
        RSA_SHA256
    } else {
        return Err("the CA's key is neither ECDSA P-256/P-384 nor RSA".to_owned());
    };
    let mut subject = Vec::new();
    for organization in organizations {
        subject.extend(attribute(OID_ORGANIZATION, organization));
    }
    subject.extend(attribute(OID_COMMON_NAME, common_name));
    let mut extensions = extension(OID_KEY_USAGE, true, &der(BIT_STRING, &KEY_USAGE_BITS));
    extensions.extend(extension(
        OID_EXTENDED_KEY_USAGE,
        false,
        &der(SEQUENCE, &der(OID, OID_CLIENT_AUTH)),
    ));
    extensions.extend(extension(OID_BASIC_CONSTRAINTS, true, &der(SEQUENCE, &[])));
    if let Some(key_id) = ca.key_id {
        extensions.extend(extension(
            OID_AUTHORITY_KEY_ID,
            false,
            &der(SEQUENCE, &der(CONTEXT_0_PRIMITIVE, key_id)),
        ));
    }
    let mut tbs = VERSION_3.to_vec();
    tbs.extend(der(INTEGER, &positive_integer(serial)));
    tbs.extend(der(SEQUENCE, algorithm));
    tbs.extend_from_slice(ca.subject);
    let mut validity = time(not_before)?;
    validity.extend(time(not_after)?);
    tbs.extend(der(SEQUENCE, &validity));
    tbs.extend(der(SEQUENCE, &subject));
    tbs.extend(public_key.subject_public_key_info());
    tbs.extend(der(CONTEXT_3, &der(SEQUENCE, &extensions)));
    let tbs = der(SEQUENCE, &tbs);
    let signature = ca
        .key
        .sign(&tbs)
        .map_err(|err| format!("signing the certificate: {err}"))?;
    let mut bits = vec![0];
    bits.extend(signature);
    let mut certificate = tbs;
    certificate.extend(der(SEQUENCE, algorithm));
    certificate.extend(der(BIT_STRING, &bits));
    Ok(der(SEQUENCE, &certificate))
}

/// One relative distinguished name holding one attribute.
fn attribute(oid: &[u8], value: &str) -> Vec<u8> {
    let mut pair = der(OID, oid);
    pair.extend(der(UTF8_STRING, value.as_bytes()));
    der(SET, &der(SEQUENCE, &pair))
}

fn extension(oid: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
    let mut body = der(OID, oid);
    if critical {
        body.extend_from_slice(&BOOLEAN_TRUE);
    }
    body.extend(der(OCTET_STRING, value));
    der(SEQUENCE, &body)
}

/// The minimal DER contents of the non-negative big-endian integer `bytes`.
fn positive_integer(bytes: &[u8]) -> Vec<u8> {
    let start = bytes
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(bytes.len().saturating_sub(1));
    let mut out = Vec::with_capacity(bytes.len() + 1);
    if bytes.get(start).is_some_and(|b| b & 0x80 != 0) {
        out.push(0);
    }
    out.extend_from_slice(&bytes[start..]);
    if out.is_empty() {
        out.push(0);
    }
    out
}

/// A certificate time: UTCTime `YYMMDDHHMMSSZ` before 2050, else GeneralizedTime.
fn time(unix: i64) -> Result<Vec<u8>, String> {
    let days = unix.div_euclid(86_400);
    let seconds = unix.rem_euclid(86_400);
    let (year, month, day) = kubemock_apimachinery::time::civil_from_days(days);
    if !(1950..=9999).contains(&year) {
        return Err(format!(
            "the time {unix} is outside the years a certificate can hold"
        ));
    }
    let clock = format!(
        "{month:02}{day:02}{:02}{:02}{:02}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    Ok(if year < UTC_TIME_END_YEAR {
        der(UTC_TIME, format!("{:02}{clock}", year % 100).as_bytes())
    } else {
        der(GENERALIZED_TIME, format!("{year:04}{clock}").as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_before_2050_and_generalized_after() {
        assert_eq!(time(0).unwrap()[2..], *b"700101000000Z");
        assert_eq!(time(1_700_000_000).unwrap()[2..], *b"231114221320Z");
        assert_eq!(time(1_700_000_000).unwrap()[0], UTC_TIME);
        let later = time(2_556_144_000).unwrap(); // 2051-01-01
        assert_eq!(later[0], GENERALIZED_TIME);
        assert_eq!(later[2..], *b"20510101000000Z");
    }

    #[test]
    fn integers_are_minimal_and_positive() {
        assert_eq!(positive_integer(&[0, 0, 0x12]), [0x12]);
        assert_eq!(positive_integer(&[0, 0x80]), [0, 0x80]);
        assert_eq!(positive_integer(&[0, 0]), [0]);
        assert_eq!(positive_integer(&[0x7f, 1]), [0x7f, 1]);
    }
}
