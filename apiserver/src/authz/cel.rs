//! The server's authorizer as the CEL authorizer library asks it (`authorizer.group(..)
//! .resource(..).check(..)` in webhooks' matchConditions and ValidatingAdmissionPolicies), and
//! the inputs an admission expression's `authorizer` and `authorizer.requestResource` are built
//! from. Upstream hands its own authorizer to the library the same way
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/activation.go`), so a CEL check
//! gets exactly the answer a request would: RBAC here, or the open mode's allow.
//!
//! Field and label selectors reach the library parsed (with their errors), but kubemock's
//! authorizers, like upstream's RBAC, decide without them.

use std::sync::Arc;

use kubemock_cel::admission::AuthzInputs;
use kubemock_cel::authz::{
    Authorize, AuthzDecision, AuthzRequest, AuthzTarget, RequestResource, UserInfo as CelUser,
    Verdict,
};
use serde_json::Value;

use super::{Attributes, Authorizer, Decision};
use crate::identity::UserInfo;

/// The server's authorizer behind the library's hook.
struct CelAuthorizer(Arc<dyn Authorizer>);

impl Authorize for CelAuthorizer {
    fn authorize(&self, request: &AuthzRequest) -> AuthzDecision {
        let mut attributes = Attributes {
            user: server_user(&request.user),
            verb: request.verb.clone(),
            ..Attributes::default()
        };
        match &request.target {
            AuthzTarget::Path(path) => path.clone_into(&mut attributes.path),
            AuthzTarget::Resource(resource) => {
                attributes.resource_request = true;
                // The library asks about every version of the resource.
                "*".clone_into(&mut attributes.api_version);
                resource.group.clone_into(&mut attributes.api_group);
                resource.resource.clone_into(&mut attributes.resource);
                resource.subresource.clone_into(&mut attributes.subresource);
                resource.namespace.clone_into(&mut attributes.namespace);
                resource.name.clone_into(&mut attributes.name);
            }
        }
        let (verdict, reason) = match self.0.authorize(&attributes) {
            Decision::Allow(reason) => (Verdict::Allow, reason),
            Decision::Deny(reason) => (Verdict::Deny, reason),
            Decision::NoOpinion(reason) => (Verdict::NoOpinion, reason),
        };
        AuthzDecision {
            verdict,
            reason,
            error: None,
        }
    }
}

/// The library's user as the server's (`extra` values are lists of strings in both).
fn server_user(user: &CelUser) -> UserInfo {
    UserInfo {
        name: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user
            .extra
            .iter()
            .map(|(key, values)| {
                let values = values.iter().cloned().map(Value::String).collect();
                (key.clone(), Value::Array(values))
            })
            .collect(),
    }
}

/// The server's user as the library's; an `extra` value that is not a list of strings keeps
/// its string items only.
fn cel_user(user: &UserInfo) -> CelUser {
    CelUser {
        name: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user
            .extra
            .iter()
            .map(|(key, values)| {
                let values = match values {
                    Value::Array(items) => items
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect(),
                    Value::String(one) => vec![one.clone()],
                    _ => Vec::new(),
                };
                (key.clone(), values)
            })
            .collect(),
    }
}

/// What an admission expression's `authorizer` and `authorizer.requestResource` are made of:
/// the server's authorizer, the requester, and the resource the request addresses.
pub(crate) fn admission_inputs(
    authorizer: Arc<dyn Authorizer>,
    user: &UserInfo,
    resource: RequestResource,
) -> AuthzInputs {
    AuthzInputs {
        authorizer: Arc::new(CelAuthorizer(authorizer)),
        user: cel_user(user),
        resource,
    }
}
