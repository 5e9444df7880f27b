//! Where the API server is and how to authenticate to it: kubeconfig files (as kubectl reads
//! them: `KUBECONFIG` with several files merged, `~/.kube/config`, or an explicit path) turned
//! into one [`Config`] the transport can use. Relative file paths in a kubeconfig are resolved
//! against that file's directory, as client-go does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use parking_lot::RwLock;
use serde::Deserialize;

use crate::error::{Error, Result};

/// Default timeout of a non-watch request: client-go sets none, kubectl 0 (none); one minute
/// keeps a hung connection from stalling a controller forever while allowing large lists.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time to establish a connection (client-go's dialer uses 30 s).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a token read from a token file is reused before it is read again (client-go
/// re-reads `tokenFile` about once a minute, so rotated projected tokens are picked up).
pub const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);

/// How requests authenticate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Auth {
    /// No credentials (or a client certificate only).
    #[default]
    None,
    /// A bearer token.
    Bearer(String),
    /// A bearer token read from a file, re-read every [`TOKEN_FILE_REFRESH`].
    BearerFile(PathBuf),
    /// A bearer token its owner replaces while clients use it (a TokenRequest token renewed
    /// before it expires, as client-go's `transport.NewCachedTokenSource` serves one).
    Shared(SharedToken),
}

/// A bearer token shared by its owner, who renews it, and the clients that send it: each
/// request sends the token current when it is sent.
///
/// ```
/// use kubemock_client::config::{Auth, SharedToken};
///
/// let token = SharedToken::new("first");
/// let auth = Auth::Shared(token.clone());
/// token.set("renewed");
/// assert!(matches!(&auth, Auth::Shared(t) if t.get() == "renewed"));
/// ```
#[derive(Clone)]
pub struct SharedToken {
    /// The current token; written by the owner's renewals, read by every request.
    current: Arc<RwLock<String>>,
}

impl SharedToken {
    /// A shared token, `token` for now.
    pub fn new(token: impl Into<String>) -> Self {
        SharedToken {
            current: Arc::new(RwLock::new(token.into())),
        }
    }

    /// The current token.
    pub fn get(&self) -> String {
        self.current.read().clone()
    }

    /// Replaces the token: requests sent from now on carry `token`.
    pub fn set(&self, token: impl Into<String>) {
        *self.current.write() = token.into();
    }
}

impl PartialEq for SharedToken {
    /// The same shared token (not merely an equal value).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.current, &other.current)
    }
}

impl Eq for SharedToken {}

impl std::fmt::Debug for SharedToken {
    /// Never the token itself.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedToken(..)")
    }
}

/// Everything needed to reach one API server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Base URL of the server (`https://host:6443`), without a trailing slash.
    pub cluster_url: String,
    /// Namespace of the current context (`default` when none is set).
    pub default_namespace: String,
    /// Credentials.
    pub auth: Auth,
    /// PEM of the certificate authorities to trust; when set, only they are trusted.
    pub root_certificates: Option<Vec<u8>>,
    /// PEM of a client certificate followed by its private key.
    pub client_identity: Option<Vec<u8>>,
    /// Skip verification of the server's certificate.
    pub accept_invalid_certs: bool,
    /// Timeout of a non-watch request ([`DEFAULT_REQUEST_TIMEOUT`]).
    pub timeout: Duration,
    /// Timeout of establishing a connection ([`DEFAULT_CONNECT_TIMEOUT`]).
    pub connect_timeout: Duration,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Connect to this address for this host name instead of resolving it (as curl's
    /// `--resolve`): a URL can then name the server by the name its certificate has, when
    /// that name is in no DNS, e.g. the name an API server's in-process clients ask for
    /// (kube-apiserver's loopback client sets `ServerName` for the same purpose).
    pub resolve: Option<(String, std::net::SocketAddr)>,
    /// A server in this process to send every request to instead of connecting to
    /// `cluster_url` ([`crate::transport::LocalServer`]): `cluster_url` then only names it.
    pub local: Option<crate::transport::Local>,
}

impl Config {
    /// A configuration for `url` without credentials.
    ///
    /// ```
    /// let config = kubemock_client::Config::new("http://127.0.0.1:6443/");
    /// assert_eq!(config.cluster_url, "http://127.0.0.1:6443");
    /// assert_eq!(config.default_namespace, "default");
    /// ```
    pub fn new(url: &str) -> Self {
        Config {
            cluster_url: url.trim_end_matches('/').to_owned(),
            default_namespace: "default".to_owned(),
            auth: Auth::None,
            root_certificates: None,
            client_identity: None,
            accept_invalid_certs: false,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            user_agent: format!("kubemock-client/{}", env!("CARGO_PKG_VERSION")),
            resolve: None,
            local: None,
        }
    }

    /// The configuration kubectl would use: the files in `KUBECONFIG` (merged), else
    /// `~/.kube/config`, at their current context.
    pub fn infer() -> Result<Self> {
        Kubeconfig::load_default()?.to_config(None)
    }

    /// The configuration of the kubeconfig at `path`, at its current context.
    pub fn from_kubeconfig_file(path: impl AsRef<Path>) -> Result<Self> {
        Kubeconfig::load(path)?.to_config(None)
    }

    /// Sets the request timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the user agent.
    #[must_use]
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }
}

/// The user agent of a Kubernetes component named `command`, as client-go's
/// `rest.DefaultKubernetesUserAgent` writes it (`staging/src/k8s.io/client-go/rest/config.go`):
/// `COMMAND/VERSION (OS/ARCH) kubernetes/COMMIT7`, with the release kubemock reports
/// (`kubemock_apimachinery::version`). The server names a writer without `fieldManager` by the
/// agent up to its first `/`, so `kube-controller-manager`'s writes are managed by
/// `kube-controller-manager`, as in a real cluster. A component's part is added as client-go's
/// `rest.AddUserAgent` adds it: `format!("{}/{part}", default_user_agent(command))`.
///
/// ```
/// assert_eq!(
///     kubemock_client::config::default_user_agent("kubelet"),
///     "kubelet/v1.32.0 (linux/amd64) kubernetes/0000000"
/// );
/// ```
pub fn default_user_agent(command: &str) -> String {
    kubemock_apimachinery::version::user_agent(command)
}

/// A parsed kubeconfig, possibly merged from several files.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    /// Named clusters.
    #[serde(default, deserialize_with = "null_as_default")]
    pub clusters: Vec<NamedCluster>,
    /// Named users (credentials).
    #[serde(default, deserialize_with = "null_as_default")]
    pub users: Vec<NamedUser>,
    /// Named contexts (cluster + user + namespace).
    #[serde(default, deserialize_with = "null_as_default")]
    pub contexts: Vec<NamedContext>,
    /// The context used when none is named.
    #[serde(default)]
    pub current_context: Option<String>,
}

fn null_as_default<'de, D, T>(deserializer: D) -> std::result::Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A cluster entry.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedCluster {
    /// Its name.
    pub name: String,
    /// Its settings.
    #[serde(default)]
    pub cluster: Cluster,
}

/// How to reach a cluster.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// The server URL.
    #[serde(default)]
    pub server: String,
    /// File of trusted CA certificates (PEM).
    #[serde(default)]
    pub certificate_authority: Option<PathBuf>,
    /// Base64 of trusted CA certificates (PEM).
    #[serde(default)]
    pub certificate_authority_data: Option<String>,
    /// Skip server certificate verification.
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
}

/// A user entry.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedUser {
    /// Its name.
    pub name: String,
    /// Its credentials.
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: User,
}

/// Credentials.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct User {
    /// A bearer token.
    #[serde(default)]
    pub token: Option<String>,
    /// A file holding a bearer token.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// File of the client certificate (PEM).
    #[serde(default)]
    pub client_certificate: Option<PathBuf>,
    /// Base64 of the client certificate (PEM).
    #[serde(default)]
    pub client_certificate_data: Option<String>,
    /// File of the client key (PEM).
    #[serde(default)]
    pub client_key: Option<PathBuf>,
    /// Base64 of the client key (PEM).
    #[serde(default)]
    pub client_key_data: Option<String>,
}

/// A context entry.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedContext {
    /// Its name.
    pub name: String,
    /// Its settings.
    #[serde(default)]
    pub context: Context,
}

/// A cluster, a user and a default namespace.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Context {
    /// Name of the cluster entry.
    #[serde(default)]
    pub cluster: String,
    /// Name of the user entry.
    #[serde(default)]
    pub user: String,
    /// Default namespace.
    #[serde(default)]
    pub namespace: Option<String>,
}

impl Kubeconfig {
    /// Parses a kubeconfig document; relative paths in it are resolved against `base`.
    pub fn from_yaml(text: &str, base: Option<&Path>) -> Result<Self> {
        let mut config: Kubeconfig = serde_yaml_ng::from_str(text)
            .map_err(|err| Error::Config(format!("invalid kubeconfig: {err}")))?;
        if let Some(base) = base {
            config.resolve_paths(base);
        }
        Ok(config)
    }

    /// Reads one kubeconfig file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|err| Error::Config(format!("reading {}: {err}", path.display())))?;
        Self::from_yaml(&text, path.parent())
    }

    /// The files of `KUBECONFIG` (path-list separated, missing files skipped, merged first
    /// wins), else `~/.kube/config`.
    pub fn load_default() -> Result<Self> {
        if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            let mut merged: Option<Kubeconfig> = None;
            for path in std::env::split_paths(&list).filter(|p| p.exists()) {
                let next = Self::load(&path)?;
                merged = Some(match merged {
                    Some(config) => config.merge(next),
                    None => next,
                });
            }
            return merged.ok_or_else(|| Error::Config("no file of KUBECONFIG exists".into()));
        }
        let home = std::env::var_os("HOME")
            .ok_or_else(|| Error::Config("neither KUBECONFIG nor HOME is set".into()))?;
        Self::load(PathBuf::from(home).join(".kube").join("config"))
    }

    /// Merges `other` into this one as client-go merges `KUBECONFIG` files: the first file
    /// that names a cluster, user or context, or sets the current context, wins.
    #[must_use]
    pub fn merge(mut self, other: Kubeconfig) -> Self {
        for cluster in other.clusters {
            if !self.clusters.iter().any(|c| c.name == cluster.name) {
                self.clusters.push(cluster);
            }
        }
        for user in other.users {
            if !self.users.iter().any(|u| u.name == user.name) {
                self.users.push(user);
            }
        }
        for context in other.contexts {
            if !self.contexts.iter().any(|c| c.name == context.name) {
                self.contexts.push(context);
            }
        }
        if self.current_context.as_deref().unwrap_or("").is_empty() {
            self.current_context = other.current_context;
        }
        self
    }

    fn resolve_paths(&mut self, base: &Path) {
        let resolve = |path: &mut Option<PathBuf>| {
            if let Some(p) = path.as_mut().filter(|p| p.is_relative()) {
                *p = base.join(&*p);
            }
        };
        for cluster in &mut self.clusters {
            resolve(&mut cluster.cluster.certificate_authority);
        }
        for user in &mut self.users {
            resolve(&mut user.user.token_file);
            resolve(&mut user.user.client_certificate);
            resolve(&mut user.user.client_key);
        }
    }

    /// The [`Config`] of `context` (default: the current context).
    pub fn to_config(&self, context: Option<&str>) -> Result<Config> {
        let name = context
            .or(self.current_context.as_deref())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::Config("no context given and no current-context".into()))?;
        let context = &self
            .contexts
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::Config(format!("context {name:?} not found")))?
            .context;
        let cluster = &self
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .ok_or_else(|| Error::Config(format!("cluster {:?} not found", context.cluster)))?
            .cluster;
        let user = self
            .users
            .iter()
            .find(|u| u.name == context.user)
            .map(|u| u.user.clone())
            .unwrap_or_default();
        if cluster.server.is_empty() {
            return Err(Error::Config(format!(
                "cluster {:?} has no server",
                context.cluster
            )));
        }
        let mut config = Config::new(&cluster.server);
        if let Some(ns) = context.namespace.as_ref().filter(|ns| !ns.is_empty()) {
            config.default_namespace = ns.clone();
        }
        config.accept_invalid_certs = cluster.insecure_skip_tls_verify;
        config.root_certificates = data_or_file(
            cluster.certificate_authority_data.as_deref(),
            cluster.certificate_authority.as_deref(),
        )?;
        config.auth = match (&user.token, &user.token_file) {
            (Some(token), _) if !token.is_empty() => Auth::Bearer(token.clone()),
            (_, Some(file)) => Auth::BearerFile(file.clone()),
            _ => Auth::None,
        };
        let cert = data_or_file(
            user.client_certificate_data.as_deref(),
            user.client_certificate.as_deref(),
        )?;
        let key = data_or_file(user.client_key_data.as_deref(), user.client_key.as_deref())?;
        config.client_identity = match (cert, key) {
            (Some(mut cert), Some(key)) => {
                cert.push(b'\n');
                cert.extend_from_slice(&key);
                Some(cert)
            }
            (None, None) => None,
            _ => {
                return Err(Error::Config(
                    "a client certificate needs both a certificate and a key".into(),
                ));
            }
        };
        Ok(config)
    }
}

/// PEM bytes from inline base64 data (preferred, as in client-go) or a file.
fn data_or_file(data: Option<&str>, file: Option<&Path>) -> Result<Option<Vec<u8>>> {
    if let Some(data) = data.filter(|d| !d.is_empty()) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|err| Error::Config(format!("invalid base64 data: {err}")))?;
        return Ok(Some(bytes));
    }
    match file {
        Some(path) => std::fs::read(path)
            .map(Some)
            .map_err(|err| Error::Config(format!("reading {}: {err}", path.display()))),
        None => Ok(None),
    }
}

/// Named contexts by name, for listing (`kubectl config get-contexts`).
impl Kubeconfig {
    /// The names of the contexts, sorted.
    pub fn context_names(&self) -> Vec<String> {
        let names: BTreeMap<&str, ()> = self
            .contexts
            .iter()
            .map(|c| (c.name.as_str(), ()))
            .collect();
        names.keys().map(|n| (*n).to_owned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: &str = "
apiVersion: v1
kind: Config
current-context: a
clusters:
- name: one
  cluster:
    server: https://one.example:6443/
    certificate-authority: ca.pem
contexts:
- name: a
  context: {cluster: one, user: alice, namespace: team-a}
users:
- name: alice
  user:
    token: secret
";

    const SECOND: &str = "
current-context: b
clusters:
- name: one
  cluster: {server: https://ignored.example}
- name: two
  cluster:
    server: http://two.example
    insecure-skip-tls-verify: true
    certificate-authority-data: aGVsbG8=
contexts:
- name: b
  context: {cluster: two, user: bob}
users:
- name: bob
  user: {token-file: /var/run/token}
";

    #[test]
    fn merged_kubeconfigs_keep_the_first_definition_of_each_name() {
        let first = Kubeconfig::from_yaml(FIRST, Some(Path::new("/etc/kube"))).expect("first");
        let second = Kubeconfig::from_yaml(SECOND, None).expect("second");
        let merged = first.merge(second);
        assert_eq!(merged.current_context.as_deref(), Some("a"));
        assert_eq!(merged.context_names(), vec!["a", "b"]);
        assert_eq!(merged.clusters.len(), 2);
        assert_eq!(
            merged.clusters[0].cluster.server,
            "https://one.example:6443/"
        );
        assert_eq!(
            merged.clusters[0].cluster.certificate_authority.as_deref(),
            Some(Path::new("/etc/kube/ca.pem"))
        );

        let b = merged.to_config(Some("b")).expect("context b");
        assert_eq!(b.cluster_url, "http://two.example");
        assert_eq!(b.default_namespace, "default");
        assert!(b.accept_invalid_certs);
        assert_eq!(b.root_certificates.as_deref(), Some(&b"hello"[..]));
        assert_eq!(b.auth, Auth::BearerFile("/var/run/token".into()));
    }

    #[test]
    fn the_current_context_gives_server_namespace_and_token() {
        let config = Kubeconfig::from_yaml(FIRST, None).expect("parses");
        // The CA file does not exist: an unreadable file is a configuration error.
        assert!(matches!(config.to_config(None), Err(Error::Config(_))));
        let mut config = config;
        config.clusters[0].cluster.certificate_authority = None;
        let resolved = config.to_config(None).expect("resolves");
        assert_eq!(resolved.cluster_url, "https://one.example:6443");
        assert_eq!(resolved.default_namespace, "team-a");
        assert_eq!(resolved.auth, Auth::Bearer("secret".into()));
        assert!(matches!(
            config.to_config(Some("zz")),
            Err(Error::Config(_))
        ));
    }

    #[test]
    fn the_kubeconfig_kubemock_writes_is_understood() {
        let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: kubemock\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: kubemock\n  context:\n    cluster: kubemock\n    namespace: default\n    user: kubemock\ncurrent-context: kubemock\nusers:\n- name: kubemock\n  user: {}\npreferences: {}\n";
        let config = Kubeconfig::from_yaml(text, None)
            .and_then(|k| k.to_config(None))
            .expect("resolves");
        assert_eq!(config.cluster_url, "http://127.0.0.1:1");
        assert_eq!(config.auth, Auth::None);
    }
}
