//! The kubeconfig that points kubectl and every client at a kubemock server: one cluster, one
//! context (namespace `default`), one user: without credentials in the open mode (every
//! request is the admin there), with the cluster CA and the admin's client certificate in the
//! secure mode.

/// A kubeconfig (YAML) whose current context is the open-mode server at `url`.
pub fn kubeconfig(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kubemock
  cluster:
    server: {url}
contexts:
- name: kubemock
  context:
    cluster: kubemock
    namespace: default
    user: kubemock
current-context: kubemock
users:
- name: kubemock
  user: {{}}
preferences: {{}}
"
    )
}

/// A kubeconfig (YAML) for the TLS server at `url`: `ca_pem` to verify it, `identity` (a client
/// certificate and its key) to authenticate, all inline as base64 data.
pub fn secure_kubeconfig(url: &str, ca_pem: &str, identity: &crate::pki::Identity) -> String {
    use base64::Engine as _;
    let data = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kubemock
  cluster:
    server: {url}
    certificate-authority-data: {ca}
contexts:
- name: kubemock
  context:
    cluster: kubemock
    namespace: default
    user: kubemock-admin
current-context: kubemock
users:
- name: kubemock-admin
  user:
    client-certificate-data: {certificate}
    client-key-data: {key}
preferences: {{}}
",
        ca = data(ca_pem),
        certificate = data(&identity.certificate_pem),
        key = data(&identity.key_pem),
    )
}
