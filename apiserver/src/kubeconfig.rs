//! The kubeconfig that points kubectl and every client at a kubemock server: one cluster, one
//! context (namespace `default`), one user without credentials (kubemock does not authenticate
//! yet).

/// A kubeconfig (YAML) whose current context is the server at `url`.
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
