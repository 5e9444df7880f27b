//! The Kubernetes version kubemock is, in one place: `/version` answers it, the OpenAPI
//! documents carry it, and the binary's callers (kubectl's dispatcher picks its bundled kubectl
//! by the minor version) depend on it agreeing everywhere.

/// The Kubernetes version kubemock reports: the kubectl on these machines runs its bundled
/// 1.32 when the server's minor version is 32.
pub const KUBERNETES_MINOR: &str = "32";

/// The full version, `v1.32.0`.
pub(crate) fn git_version() -> String {
    format!("v1.{KUBERNETES_MINOR}.0")
}
