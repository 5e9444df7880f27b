//! The secure mode's configuration, as kube-apiserver's flags give it
//! (`staging/src/k8s.io/apiserver/pkg/server/options/serving.go`, `authentication.go`): the
//! serving certificate (`--tls-cert-file`/`--tls-private-key-file`, else `apiserver.crt` and
//! `apiserver.key` of `--cert-dir`, else issued by the cluster CA for the server's names and
//! written there), the client CAs (`--client-ca-file`, and always the cluster CA, which signs
//! the admin's certificate and the approved CertificateSigningRequests of the
//! `kube-apiserver-client` signer: a kubeadm cluster's `--client-ca-file` is that same CA), the
//! static tokens (`--token-auth-file`) and `--anonymous-auth`. [`Security::load`] reads all of
//! it at startup and refuses what it cannot use, naming the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;

use crate::authn::{Authenticator, tokenfile, x509};
use crate::pki::{self, CERTIFICATE_VALIDITY, Identity, Pki, PkiError};

/// The names every generated serving certificate has: loopback, and the names pods use for
/// the API server (the `kubernetes` Service's, as kubeadm's certificate has them).
pub const DEFAULT_SERVING_HOSTS: [&str; 7] = [
    "127.0.0.1",
    "::1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];
/// The files of the serving certificate in `--cert-dir` (kube-apiserver's names).
const SERVING_CERT_FILE: &str = "apiserver.crt";
const SERVING_KEY_FILE: &str = "apiserver.key";
/// The admin user of the kubeconfig the server writes (`--kubeconfig-out`).
pub const ADMIN_USER: &str = "kubemock-admin";
/// The admin's group: every authorizer allows it everything.
pub const ADMIN_GROUP: &str = "system:masters";

/// What the secure mode reads (kube-apiserver's flags of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityOptions {
    /// `--cert-dir`: where the generated serving certificate is written and found again.
    pub cert_dir: Option<PathBuf>,
    /// `--tls-cert-file`: the serving certificate (PEM, its chain after it).
    pub tls_cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`: its key.
    pub tls_private_key_file: Option<PathBuf>,
    /// `--client-ca-file`: authorities whose client certificates authenticate (besides the
    /// cluster CA).
    pub client_ca_file: Option<PathBuf>,
    /// `--token-auth-file`: static bearer tokens (CSV).
    pub token_auth_file: Option<PathBuf>,
    /// `--anonymous-auth`: whether a request without credentials is `system:anonymous` (else
    /// a 401). Default true, as upstream.
    pub anonymous_auth: bool,
    /// More names and addresses for the generated serving certificate (`--bind-address`,
    /// `--advertise-address`, the `kubernetes` Service's IP), besides
    /// [`DEFAULT_SERVING_HOSTS`].
    pub hosts: Vec<String>,
}

impl Default for SecurityOptions {
    fn default() -> Self {
        SecurityOptions {
            cert_dir: None,
            tls_cert_file: None,
            tls_private_key_file: None,
            client_ca_file: None,
            token_auth_file: None,
            anonymous_auth: true,
            hosts: Vec::new(),
        }
    }
}

/// Why the secure mode cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecurityError {
    /// A key or certificate of the cluster's keys.
    #[error(transparent)]
    Pki(#[from] PkiError),
    /// A file of the options cannot be read or used.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Options that do not go together.
    #[error("{0}")]
    Options(String),
}

/// The secure mode, loaded: TLS serving and the authenticators. A cheap-clone handle.
#[derive(Clone)]
pub struct Security {
    inner: Arc<Inner>,
}

struct Inner {
    /// The TLS configuration of the listener.
    tls: Arc<rustls::ServerConfig>,
    /// The authenticators of every request.
    authenticator: Arc<Authenticator>,
    /// The cluster's keys (the same as the server configuration's).
    pki: Arc<Pki>,
    /// What a client trusts to verify the serving certificate (PEM).
    server_ca_pem: String,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security")
            .field("authenticator", &self.inner.authenticator)
            .finish_non_exhaustive()
    }
}

impl Security {
    /// Reads and checks everything `options` name, with the cluster keys `pki` (a serving
    /// certificate it issues when none is given).
    pub fn load(options: &SecurityOptions, pki: Arc<Pki>) -> Result<Security, SecurityError> {
        let cluster_ca = pki.ca_certificate_pem()?;
        let (chain, key, server_ca_pem) =
            match (&options.tls_cert_file, &options.tls_private_key_file) {
                (Some(cert), Some(key)) => {
                    let chain = read(cert)?;
                    let bundle = served_chain_roots(cert, &chain)?;
                    (chain, read(key)?, format!("{cluster_ca}{bundle}"))
                }
                (None, None) => {
                    let identity = serving_identity(options, &pki)?;
                    (
                        identity.certificate_pem.into_bytes(),
                        identity.key_pem.into_bytes(),
                        cluster_ca,
                    )
                }
                _ => {
                    return Err(SecurityError::Options(
                        "--tls-cert-file and --tls-private-key-file go together".to_owned(),
                    ));
                }
            };
        let mut client_cas = rustls::RootCertStore::empty();
        client_cas
            .add(CertificateDer::from(pki.ca_certificate_der()?))
            .map_err(|err| SecurityError::Options(format!("the cluster CA: {err}")))?;
        if let Some(path) = &options.client_ca_file {
            let blocks = pem::parse_many(read(path)?).map_err(|err| file(path, err))?;
            let mut found = false;
            for block in blocks.into_iter().filter(|b| b.tag() == "CERTIFICATE") {
                client_cas
                    .add(CertificateDer::from(block.into_contents()))
                    .map_err(|err| file(path, format!("unusable CA certificate: {err}")))?;
                found = true;
            }
            if !found {
                return Err(file(path, "holds no PEM CERTIFICATE"));
            }
        }
        // What the in-process components are served, for the name they ask for: issued by
        // the cluster CA, which they trust (`serving_with_loopback.go` self-signs one).
        let loopback = pki.issue_serving_certificate(
            &[crate::tls::LOOPBACK_SERVER_NAME.to_owned()],
            CERTIFICATE_VALIDITY,
        )?;
        let tls = crate::tls::server_config(
            &chain,
            &key,
            (
                loopback.certificate_pem.as_bytes(),
                loopback.key_pem.as_bytes(),
            ),
            &client_cas,
        )
        .map_err(|reason| {
            let path = options
                .tls_cert_file
                .clone()
                .unwrap_or_else(|| PathBuf::from("the generated serving certificate"));
            SecurityError::File { path, reason }
        })?;
        let tokens = match &options.token_auth_file {
            Some(path) => {
                let text = String::from_utf8(read(path)?).map_err(|err| file(path, err))?;
                tokenfile::Tokens::parse(path, &text).map_err(|reason| file(path, reason))?
            }
            None => tokenfile::Tokens::default(),
        };
        Ok(Security {
            inner: Arc::new(Inner {
                tls: Arc::new(tls),
                authenticator: Arc::new(Authenticator {
                    client_ca: x509::ClientCa::new(&client_cas),
                    tokens,
                    anonymous: options.anonymous_auth,
                }),
                pki,
                server_ca_pem,
            }),
        })
    }

    /// The certificates a client trusts to verify the server (PEM): the cluster CA, and with
    /// `--tls-cert-file` the certificates after the first of that file (its chain), or the
    /// certificate itself when it is alone (self-signed).
    pub fn server_ca_pem(&self) -> &str {
        &self.inner.server_ca_pem
    }

    /// What an in-process component trusts when it connects asking for
    /// [`LOOPBACK_SERVER_NAME`](crate::LOOPBACK_SERVER_NAME) (PEM): the cluster CA, which
    /// issued the certificate served for that name, whoever issued the serving certificate.
    pub fn loopback_ca_pem(&self) -> Result<String, PkiError> {
        self.inner.pki.ca_certificate_pem()
    }

    /// The cluster's keys.
    pub fn pki(&self) -> &Arc<Pki> {
        &self.inner.pki
    }

    /// A client certificate for `user` in `groups`, from the cluster CA (which the server
    /// trusts), valid one year.
    pub fn issue_client_identity(&self, user: &str, groups: &[&str]) -> Result<Identity, PkiError> {
        self.inner
            .pki
            .issue_client_identity(user, groups, CERTIFICATE_VALIDITY)
    }

    /// A kubeconfig for the server at `url` as the admin (`kubemock-admin` in
    /// `system:masters`): the CA data and an admin client certificate.
    pub fn admin_kubeconfig(&self, url: &str) -> Result<String, PkiError> {
        let admin = self.issue_client_identity(ADMIN_USER, &[ADMIN_GROUP])?;
        Ok(crate::kubeconfig::secure_kubeconfig(
            url,
            self.server_ca_pem(),
            &admin,
        ))
    }

    /// The listener's TLS configuration.
    pub(crate) fn tls(&self) -> &Arc<rustls::ServerConfig> {
        &self.inner.tls
    }

    /// The authenticators.
    pub(crate) fn authenticator(&self) -> &Arc<Authenticator> {
        &self.inner.authenticator
    }
}

/// The generated serving certificate: `apiserver.{crt,key}` of the cert dir when there,
/// else issued for every host (and written there).
fn serving_identity(options: &SecurityOptions, pki: &Pki) -> Result<Identity, SecurityError> {
    let stored = options
        .cert_dir
        .as_ref()
        .map(|dir| (dir.join(SERVING_CERT_FILE), dir.join(SERVING_KEY_FILE)));
    if let Some((cert, key)) = &stored
        && cert.exists()
        && key.exists()
    {
        let text = |path: &Path| String::from_utf8(read(path)?).map_err(|err| file(path, err));
        return Ok(Identity {
            certificate_pem: text(cert)?,
            key_pem: text(key)?,
        });
    }
    let mut hosts: Vec<String> = DEFAULT_SERVING_HOSTS
        .iter()
        .map(|h| (*h).to_owned())
        .collect();
    for host in &options.hosts {
        if !hosts.contains(host) {
            hosts.push(host.clone());
        }
    }
    let identity = pki.issue_serving_certificate(&hosts, CERTIFICATE_VALIDITY)?;
    if let Some((cert, key)) = &stored {
        pki::write_file(key, identity.key_pem.as_bytes(), true)?;
        pki::write_file(cert, identity.certificate_pem.as_bytes(), false)?;
    }
    Ok(identity)
}

/// What verifies a given serving certificate file: the certificates after its first, or the
/// first when it is alone.
fn served_chain_roots(path: &Path, chain: &[u8]) -> Result<String, SecurityError> {
    let certificates: Vec<pem::Pem> = pem::parse_many(chain)
        .map_err(|err| file(path, err))?
        .into_iter()
        .filter(|b| b.tag() == "CERTIFICATE")
        .collect();
    let roots = match certificates.split_first() {
        Some((leaf, [])) => std::slice::from_ref(leaf),
        Some((_, rest)) => rest,
        None => return Err(file(path, "holds no PEM CERTIFICATE")),
    };
    Ok(roots.iter().map(pki::pem_text).collect())
}

fn read(path: &Path) -> Result<Vec<u8>, SecurityError> {
    pki::read_file(path).map_err(SecurityError::from)
}

fn file(path: &Path, reason: impl ToString) -> SecurityError {
    SecurityError::File {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}
