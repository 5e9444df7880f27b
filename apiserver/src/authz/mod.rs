//! Authorization: whether a user may do what a request asks, as kube-apiserver's authorizers
//! decide it (`staging/src/k8s.io/apiserver/pkg/authorization/authorizer/interfaces.go`). The
//! request path, impersonation and the access reviews all ask one [`Authorizer`], so that a
//! review answers exactly as the request it describes would be answered.
//!
//! Today the only authorizer is [`AlwaysAllow`] (the open mode); the RBAC authorizer of the
//! security issue implements the same trait.

use crate::identity::UserInfo;

/// What a request asks to do, as upstream's `authorizer.AttributesRecord`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// Who asks.
    pub(crate) user: UserInfo,
    /// The verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, or `impersonate`, `escalate`, `bind`, `use`, `approve`, `sign`...;
    /// for a non-resource request the lowercased HTTP method.
    pub(crate) verb: String,
    /// True for a request to a resource, false for a non-resource path (`/healthz`).
    pub(crate) resource_request: bool,
    /// The namespace, empty for a cluster-scoped resource or a request across namespaces.
    pub(crate) namespace: String,
    /// The API group (`""` for the core group).
    pub(crate) api_group: String,
    /// The API version.
    pub(crate) api_version: String,
    /// The resource (plural), e.g. `pods`; for impersonation `users`, `groups`,
    /// `serviceaccounts`, `uids`, `userextras`.
    pub(crate) resource: String,
    /// The subresource, e.g. `log` or `status`; empty for none.
    pub(crate) subresource: String,
    /// The object's name, empty when the request names none (a list, a create by POST).
    pub(crate) name: String,
    /// The request path, for a non-resource request.
    pub(crate) path: String,
}

/// An authorizer's answer (`authorizer.Decision` with its reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the reason (upstream's RBAC gives the binding that allowed it).
    Allow(String),
    /// Explicitly denied, with the reason.
    #[allow(
        dead_code,
        reason = "made by the RBAC authorizer the security issue adds"
    )]
    Deny(String),
    /// Neither: the next authorizer decides, and at the end of the chain it is a denial.
    #[allow(
        dead_code,
        reason = "made by the RBAC authorizer the security issue adds"
    )]
    NoOpinion(String),
}

impl Decision {
    /// Whether the request may go on.
    pub(crate) fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// Decides [`Attributes`] (`authorizer.Authorizer`).
pub(crate) trait Authorizer: Send + Sync {
    /// The decision for `attributes`.
    fn authorize(&self, attributes: &Attributes) -> Decision;
}

/// Allows everything (`--authorization-mode AlwaysAllow`, and the open mode).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow(String::new())
    }
}
