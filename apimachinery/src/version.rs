//! The Kubernetes release kubemock is (`k8s.io/apimachinery/pkg/version`'s `Info`), in one
//! place: the server's `/version` and OpenAPI documents report it, and the client's user agent
//! (`kubemock_client::default_user_agent`, as client-go's) carries it, so that what the
//! components say they are never disagrees. kubectl's dispatcher on these machines picks its
//! bundled kubectl by the minor version.

/// The major version.
pub const KUBERNETES_MAJOR: &str = "1";

/// The minor version: the kubectl on these machines runs its bundled 1.32 when the server's
/// minor version is 32.
pub const KUBERNETES_MINOR: &str = "32";

/// The commit `/version` reports: kubemock is no build of Kubernetes, so none.
pub const GIT_COMMIT: &str = "0000000000000000000000000000000000000000";

/// The platform `/version` and user agents report, in Go's `GOOS/GOARCH` words.
pub const PLATFORM: &str = "linux/amd64";

/// The full version, `v1.32.0`.
pub fn git_version() -> String {
    format!("v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0")
}

/// The user agent of a Kubernetes component named `command`, as client-go's
/// `rest.DefaultKubernetesUserAgent` writes it (`staging/src/k8s.io/client-go/rest/config.go`):
/// `COMMAND/VERSION (OS/ARCH) kubernetes/COMMIT7`.
pub fn user_agent(command: &str) -> String {
    /// client-go's `adjustCommit` keeps 7 characters of the commit.
    const COMMIT_LENGTH: usize = 7;
    let commit = GIT_COMMIT.get(..COMMIT_LENGTH).unwrap_or(GIT_COMMIT);
    format!(
        "{command}/{} ({PLATFORM}) kubernetes/{commit}",
        git_version()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_version_is_the_major_and_minor_with_patch_zero() {
        assert_eq!(git_version(), "v1.32.0");
    }
}
