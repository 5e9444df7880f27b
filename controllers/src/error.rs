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
