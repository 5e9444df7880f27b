//! The x509 client-certificate authenticator
//! (`staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go`): a certificate
//! that chains to a client CA (`--client-ca-file`, and the cluster CA that signs the admin's
//! and approved CertificateSigningRequests' certificates) for client authentication is the user
//! of its subject's common name, in the groups of its organizations
//! (`CommonNameUserConversion`), with the certificate's SHA-256 as credential id. A
//! certificate that does not verify is an error (a 401 unless a token authenticates the
//! request); one without a common name is no opinion.

use std::sync::Arc;

use rustls::pki_types::{TrustAnchor, UnixTime};
use serde_json::{Map, json};
use webpki::{EndEntityCert, KeyUsage};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::identity::{SYSTEM_AUTHENTICATED, UserInfo};
use crate::tls::{PeerCertificates, VerifiedCertificate};

/// The `extra` key of the credential id (`user.CredentialIDKey`).
pub(crate) const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// The authorities client certificates must chain to.
#[derive(Debug, Clone)]
pub(crate) struct ClientCa {
    anchors: Vec<TrustAnchor<'static>>,
}

impl ClientCa {
    /// The authorities of `store`.
    pub(crate) fn new(store: &rustls::RootCertStore) -> Self {
        ClientCa {
            anchors: store.roots.clone(),
        }
    }

    /// The user of the client certificate of `peer` at `now`: `Ok(None)` when it names none
    /// (no common name), `Err` with why when it does not verify.
    pub(crate) fn authenticate(
        &self,
        peer: &PeerCertificates,
        now: UnixTime,
    ) -> Result<Option<Arc<UserInfo>>, String> {
        if let Some(verified) = peer.verified.get()
            && now.as_secs() <= verified.not_after
        {
            return Ok(Some(Arc::clone(&verified.user)));
        }
        let Some((leaf, intermediates)) = peer.chain.split_first() else {
            return Ok(None);
        };
        let certificate = EndEntityCert::try_from(leaf)
            .map_err(|err| format!("unreadable certificate: {err}"))?;
        certificate
            .verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &self.anchors,
                intermediates,
                now,
                KeyUsage::client_auth(),
                None,
                None,
            )
            .map_err(|err| format!("verifying certificate failed: {err}"))?;
        let (_, parsed) = X509Certificate::from_der(leaf.as_ref())
            .map_err(|err| format!("unreadable certificate: {err}"))?;
        let subject = parsed.subject();
        // Go's `pkix.Name`: the last common name, every organization in order.
        let name = match subject.iter_common_name().last() {
            Some(attribute) => attribute
                .as_str()
                .map_err(|err| format!("unreadable common name: {err}"))?
                .to_owned(),
            None => String::new(),
        };
        if name.is_empty() {
            return Ok(None);
        }
        let mut groups = subject
            .iter_organization()
            .map(|attribute| attribute.as_str().map(str::to_owned))
            .collect::<Result<Vec<String>, _>>()
            .map_err(|err| format!("unreadable organization: {err}"))?;
        // `group.AuthenticatedGroupAdder`.
        if !groups.iter().any(|g| g == SYSTEM_AUTHENTICATED) {
            groups.push(SYSTEM_AUTHENTICATED.to_owned());
        }
        let fingerprint = ring::digest::digest(&ring::digest::SHA256, leaf.as_ref());
        let mut extra = Map::new();
        extra.insert(
            CREDENTIAL_ID_KEY.to_owned(),
            json!([format!("X509SHA256={}", hex(fingerprint.as_ref()))]),
        );
        let user = Arc::new(UserInfo {
            name,
            uid: String::new(),
            groups,
            extra,
        });
        let not_after = u64::try_from(parsed.validity().not_after.timestamp()).unwrap_or(0);
        let _ = peer.verified.set(VerifiedCertificate {
            user: Arc::clone(&user),
            not_after,
        });
        Ok(Some(user))
    }
}

/// Lowercase hex, as Go's `hex.EncodeToString`.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;
    use std::time::Duration;

    use rustls::pki_types::CertificateDer;

    use super::*;
    use crate::pki::Pki;

    fn peer(pem: &str) -> PeerCertificates {
        let der = pem::parse(pem).unwrap().into_contents();
        PeerCertificates {
            chain: vec![CertificateDer::from(der)],
            verified: OnceLock::new(),
        }
    }

    fn client_ca(pki: &Pki) -> ClientCa {
        let mut store = rustls::RootCertStore::empty();
        store
            .add(CertificateDer::from(pki.ca_certificate_der().unwrap()))
            .unwrap();
        ClientCa::new(&store)
    }

    #[test]
    fn a_certificate_of_the_client_ca_is_its_common_name_in_its_organizations() {
        let pki = Pki::new();
        let identity = pki
            .issue_client_identity("alice", &["dev", "ops"], Duration::from_secs(3600))
            .unwrap();
        let peer = peer(&identity.certificate_pem);
        let user = client_ca(&pki)
            .authenticate(&peer, UnixTime::now())
            .unwrap()
            .unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", "ops", "system:authenticated"]);
        let id = user.extra[CREDENTIAL_ID_KEY][0].as_str().unwrap();
        assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");
        assert!(peer.verified.get().is_some(), "kept for the connection");
    }

    #[test]
    fn certificates_of_another_ca_or_expired_do_not_authenticate() {
        let (pki, other) = (Pki::new(), Pki::new());
        let foreign = other
            .issue_client_identity("mallory", &["system:masters"], Duration::from_secs(3600))
            .unwrap();
        let err = client_ca(&pki)
            .authenticate(&peer(&foreign.certificate_pem), UnixTime::now())
            .unwrap_err();
        // Every kubemock CA is `CN=kubemock-ca`: the chain is tried and its signature fails.
        assert!(err.starts_with("verifying certificate failed"), "{err}");
        let mine = pki
            .issue_client_identity("alice", &[], Duration::from_secs(60))
            .unwrap();
        let peer = peer(&mine.certificate_pem);
        let ca = client_ca(&pki);
        assert!(ca.authenticate(&peer, UnixTime::now()).unwrap().is_some());
        // An hour later the kept verification is stale and verifying again fails.
        let later =
            UnixTime::since_unix_epoch(Duration::from_secs(UnixTime::now().as_secs() + 3600));
        let err = ca.authenticate(&peer, later).unwrap_err();
        assert!(err.contains("CertExpired"), "{err}");
    }

    #[test]
    fn a_serving_certificate_is_not_a_client_certificate() {
        let pki = Pki::new();
        let serving = pki
            .issue_serving_certificate(&["localhost".to_owned()], Duration::from_secs(60))
            .unwrap();
        let err = client_ca(&pki)
            .authenticate(&peer(&serving.certificate_pem), UnixTime::now())
            .unwrap_err();
        assert!(err.contains("RequiredEkuNotFound"), "{err}");
    }
}
