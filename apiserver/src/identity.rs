//! Who a request is made by. Authentication (`authn`) puts the user of each request in its
//! extensions as a [`Requester`]; whatever records or reports the requester (a
//! CertificateSigningRequest's `spec.username`, SelfSubjectReview, the access reviews, the
//! authorizer) reads it back with [`requester`], so that every part of the server agrees on
//! who asked.
//!
//! In the open mode (no `--secure`) nothing is checked and every request is the cluster
//! administrator a kubeadm cluster's `admin.conf` holds: `system:admin` in `system:masters`
//! (and `system:authenticated`, which upstream's authenticators add to every authenticated
//! user: `staging/src/k8s.io/apiserver/pkg/authentication/group/authenticated_group_adder.go`).

use std::sync::{Arc, LazyLock};

use axum::http::Extensions;
use serde_json::{Map, Value, json};

/// The user of every request in the open mode.
pub(crate) const OPEN_MODE_USER: &str = "system:admin";
/// The user the API server acts as for the objects it makes itself (`user.APIServerUser`).
pub(crate) const APISERVER_USER: &str = "system:apiserver";
/// The group of cluster administrators (`user.SystemPrivilegedGroup`).
pub(crate) const SYSTEM_MASTERS: &str = "system:masters";
/// The group of every authenticated user (`user.AllAuthenticated`).
pub(crate) const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user (`user.AllUnauthenticated`).
pub(crate) const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of a request without credentials (`user.Anonymous`).
pub(crate) const ANONYMOUS_USER: &str = "system:anonymous";

/// The open mode's user, shared by every request (one `Arc` clone each).
static OPEN_MODE: LazyLock<Arc<UserInfo>> = LazyLock::new(|| {
    Arc::new(UserInfo {
        name: OPEN_MODE_USER.to_owned(),
        uid: String::new(),
        groups: vec![SYSTEM_MASTERS.to_owned(), SYSTEM_AUTHENTICATED.to_owned()],
        extra: Map::new(),
    })
});

/// The API server's own user (`system:apiserver`, as upstream's loopback client
/// authenticates: `pkg/server/config.go`, `AuthorizeClientBearerToken`).
static APISERVER: LazyLock<Arc<UserInfo>> = LazyLock::new(|| {
    Arc::new(UserInfo {
        name: APISERVER_USER.to_owned(),
        uid: String::new(),
        groups: vec![SYSTEM_AUTHENTICATED.to_owned(), SYSTEM_MASTERS.to_owned()],
        extra: Map::new(),
    })
});

/// A user as `authentication.k8s.io/v1` `UserInfo` describes one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UserInfo {
    /// `username`.
    pub(crate) name: String,
    /// `uid` (empty when none).
    pub(crate) uid: String,
    /// `groups`.
    pub(crate) groups: Vec<String>,
    /// `extra`.
    pub(crate) extra: Map<String, Value>,
}

impl UserInfo {
    /// The requester of every request in the open mode (see the module documentation).
    pub(crate) fn open_mode() -> Arc<UserInfo> {
        Arc::clone(&OPEN_MODE)
    }

    /// The API server itself, for the objects it makes (startup objects, APIServices).
    pub(crate) fn apiserver() -> &'static UserInfo {
        &APISERVER
    }

    /// The user of a request without credentials (`request/anonymous/anonymous.go`).
    pub(crate) fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS_USER.to_owned(),
            uid: String::new(),
            groups: vec![SYSTEM_UNAUTHENTICATED.to_owned()],
            extra: Map::new(),
        }
    }

    /// As an `authentication.k8s.io/v1` `UserInfo` object (empty fields left out, as Go's
    /// `omitempty` leaves them).
    pub(crate) fn to_json(&self) -> Value {
        let mut user = Map::new();
        user.insert("username".to_owned(), json!(self.name));
        if !self.uid.is_empty() {
            user.insert("uid".to_owned(), json!(self.uid));
        }
        if !self.groups.is_empty() {
            user.insert("groups".to_owned(), json!(self.groups));
        }
        if !self.extra.is_empty() {
            user.insert("extra".to_owned(), Value::Object(self.extra.clone()));
        }
        Value::Object(user)
    }
}

/// The authenticated user of a request, in its extensions: authentication inserts it (after
/// impersonation, the impersonated user); whatever acts for the user reads it with
/// [`requester`].
#[derive(Debug, Clone)]
pub(crate) struct Requester(pub(crate) Arc<UserInfo>);

/// The user a request is made by: the [`Requester`] authentication put in its extensions, or,
/// when nothing authenticated it (a request that did not come through the pipeline, as in
/// unit tests), the open mode's user.
pub(crate) fn requester(extensions: &Extensions) -> Arc<UserInfo> {
    match extensions.get::<Requester>() {
        Some(Requester(user)) => Arc::clone(user),
        None => UserInfo::open_mode(),
    }
}
