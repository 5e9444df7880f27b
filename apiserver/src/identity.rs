//! Who a request is made by. kubemock does not authenticate yet (the security issue adds client
//! certificates, tokens and RBAC), so every request is the user the real server's insecure port
//! made of every request (`staging/src/k8s.io/apiserver/pkg/server/deprecated_insecure_serving.go`,
//! `InsecureSuperuser`): `system:unsecured` in `system:masters` and `system:authenticated`. What
//! records or reports the requester (a CertificateSigningRequest's `spec.username`,
//! SelfSubjectReview, the access reviews) asks here, so that authentication changes one place.

use std::sync::Arc;

use axum::http::Extensions;
use serde_json::{Map, Value, json};

/// The user of every request while kubemock does not authenticate.
pub(crate) const UNSECURED_USER: &str = "system:unsecured";
/// The group of cluster administrators (`user.SystemPrivilegedGroup`).
pub(crate) const SYSTEM_MASTERS: &str = "system:masters";
/// The group of every authenticated user (`user.AllAuthenticated`).
pub(crate) const SYSTEM_AUTHENTICATED: &str = "system:authenticated";

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
    /// The requester of every request (see the module documentation).
    pub(crate) fn unsecured() -> UserInfo {
        UserInfo {
            name: UNSECURED_USER.to_owned(),
            uid: String::new(),
            groups: vec![SYSTEM_MASTERS.to_owned(), SYSTEM_AUTHENTICATED.to_owned()],
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
/// when nothing authenticated it (the open mode), [`UserInfo::unsecured`].
pub(crate) fn requester(extensions: &Extensions) -> Arc<UserInfo> {
    match extensions.get::<Requester>() {
        Some(Requester(user)) => Arc::clone(user),
        None => Arc::new(UserInfo::unsecured()),
    }
}
