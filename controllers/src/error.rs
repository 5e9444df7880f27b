//! The controllers' one error type. A failed sync returns it and the worker requeues the key
//! rate-limited; nothing retries inside a sync.

use crate::discovery::DiscoveryError;

/// What failed in a controller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed (a Conflict included: it means "requeue").
    #[error("api request failed")]
    Client(#[from] kubemock_client::Error),
    /// The server's resources could not be discovered.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// Some content of a terminating namespace could not be deleted.
    #[error("deleting the content of namespace {namespace} failed: {}", errors.join(", "))]
    NamespaceContent {
        /// The namespace.
        namespace: String,
        /// One message per failed resource type, sorted.
        errors: Vec<String>,
    },
    /// A Stage could not be applied (its template failed to render, or rendered no YAML;
    /// the object as JSON).
    #[error("{0}")]
    Stage(String),
    /// Creating or deleting a controller's pods failed (the message of the first failure).
    #[error("managing replicas failed: {0}")]
    Manage(String),
    /// A ControllerRevision's data is not the template patch its controller stores.
    #[error("controller revision {name} holds no pod template")]
    InvalidRevision {
        /// The revision.
        name: String,
    },
    /// A ControllerRevision's name is taken by another template (hash collision): the
    /// owner's collision count was raised, and the next sync names the revision anew.
    #[error("controller revision {name} exists with another template")]
    RevisionCollision {
        /// The revision's name.
        name: String,
    },
    /// A ClusterRole's aggregation rule holds a selector that cannot be read (upstream's
    /// `LabelSelectorAsSelector` error; retried like any failed sync, as upstream does).
    #[error("cluster role {role}: invalid aggregation selector: {message}")]
    InvalidSelector {
        /// The aggregated role.
        role: String,
        /// The selector's error.
        message: String,
    },
    /// The caches a decision needs have not synced yet (retried).
    #[error("informer caches not synced yet")]
    NotSynced,
    /// The controller manager was configured wrongly.
    #[error("invalid controller manager configuration: {0}")]
    Config(String),
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the server refused the controller's credentials (401) or a permission (403):
    /// something an operator must grant, not a race that the next sync resolves.
    pub fn is_access_denied(&self) -> bool {
        match self {
            Error::Client(err) => err.is_forbidden() || err.code() == Some(401),
            _ => false,
        }
    }
}

/// The controllers' error policy: a rate-limited retry, as
/// [`kubemock_client::controller::default_error_policy`]; a refused credential or permission
/// is logged at warn first, with the server's message (which names the user and what it
/// cannot do), as upstream's `utilruntime.HandleError` logs every failed sync. Other
/// failures (conflicts above all) stay at the worker's debug.
pub fn error_policy(
    key: &kubemock_client::ObjectKey,
    err: &Error,
    retries: u32,
) -> kubemock_client::Action {
    if let (true, Error::Client(cause)) = (err.is_access_denied(), err) {
        tracing::warn!(%key, error = %cause, retries, "sync refused by the server");
    }
    kubemock_client::Action::Requeue
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_credentials_and_permissions_are_access_denied() {
        let forbidden = Error::Client(kubemock_client::Error::api(403, "Forbidden", "no"));
        let unauthorized = Error::Client(kubemock_client::Error::api(401, "Unauthorized", "no"));
        let conflict = Error::Client(kubemock_client::Error::api(409, "Conflict", "again"));
        assert!(forbidden.is_access_denied());
        assert!(unauthorized.is_access_denied());
        assert!(!conflict.is_access_denied());
        assert!(!Error::NotSynced.is_access_denied());
        let key = kubemock_client::ObjectKey::new(Some("ns"), "a");
        assert_eq!(
            error_policy(&key, &forbidden, 0),
            kubemock_client::Action::Requeue
        );
    }
}
