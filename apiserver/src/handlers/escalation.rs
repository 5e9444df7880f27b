//! Escalation prevention: nobody grants through RBAC what they do not hold. Upstream wraps the
//! storage of the four RBAC resources (`pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}/policybased/storage.go`, `pkg/registry/rbac/escalation_check.go`,
//! `ConfirmNoEscalation` in `pkg/registry/rbac/validation/rule.go`):
//!
//! - a Role or ClusterRole is written only with rules its writer holds in the request's
//!   namespace, unless the writer may `escalate` roles (or clusterroles);
//! - setting or changing a ClusterRole's `aggregationRule` needs `*` on everything;
//! - a RoleBinding or ClusterRoleBinding is written only to a role whose rules its writer
//!   holds, unless the writer may `bind` that role;
//! - `system:masters` passes, and an update that only changes what the garbage collector
//!   changes (owner references, finalizers) is not checked.
//!
//! The write handlers call [`check`] with the object about to be stored (and the stored one,
//! on an update), after decoding and before validation, where upstream's storage checks; the
//! rules come from the authorizer's RBAC rule resolver (`authz::rbac`).

use serde_json::Value;

use super::resource::Call;
use crate::authz::rbac::{self, GROUP, RoleRef, RoleRefError, Wording};
use crate::authz::rule::{self, PolicyRule};
use crate::authz::{Attributes, is_privileged};
use crate::identity::UserInfo;
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult};

/// The message of a refused aggregation rule.
const AGGREGATION_REFUSED: &str = "must have cluster-admin privileges to use the aggregationRule";

/// The metadata an update may change without an escalation check
/// (`rbacregistry.IsOnlyMutatingGCFields`: owner references, finalizers, selfLink), with what
/// the server itself writes on every update (resourceVersion, managedFields).
const GC_FIELDS: [&str; 5] = [
    "ownerReferences",
    "finalizers",
    "selfLink",
    "resourceVersion",
    "managedFields",
];

/// Checks a write of `object` (over `existing`, on an update) by the call's user, when the
/// call writes one of the four RBAC resources.
pub(crate) fn check(call: &Call, existing: Option<&Object>, object: &Object) -> ApiResult<()> {
    let resource = &call.target.resource;
    if resource.group != GROUP || is_privileged(&call.user) {
        return Ok(());
    }
    let plural = resource.plural.as_str();
    let name = object::name_of(object);
    let namespace = call.target.namespace.as_deref().unwrap_or("");
    let forbidden = |why: &str| ApiError::forbidden_with(GROUP, plural, name, why);
    match plural {
        "roles" | "clusterroles" => {
            if role_escalation_authorized(call)
                || existing.is_some_and(|old| only_gc_fields_change(object, old))
            {
                return Ok(());
            }
            let rules = PolicyRule::list_from(object.get("rules"));
            confirm_no_escalation(call, namespace, &rules).map_err(|why| forbidden(&why))?;
            let aggregates =
                has_aggregation_rule(object) || existing.is_some_and(has_aggregation_rule);
            if plural == "clusterroles" && aggregates {
                confirm_no_escalation(call, namespace, &full_authority())
                    .map_err(|_| forbidden(AGGREGATION_REFUSED))?;
            }
            Ok(())
        }
        "rolebindings" | "clusterrolebindings" => {
            if existing.is_some_and(|old| only_gc_fields_change(object, old)) {
                return Ok(());
            }
            let binding_namespace = if plural == "rolebindings" {
                namespace
            } else {
                ""
            };
            let role_ref = RoleRef::of(&Value::Object(object.clone()));
            if binding_authorized(call, &role_ref, binding_namespace) {
                return Ok(());
            }
            let Some(rbac) = call.state.rbac() else {
                return Ok(());
            };
            let rules = match rbac.role_reference_rules(&role_ref, binding_namespace) {
                Ok(rules) => rules,
                Err(RoleRefError::NotFound { resource }) => {
                    return Err(role_not_found(call, resource, &role_ref.name));
                }
                // Neither a Role nor a ClusterRole: it grants nothing, so nothing escalates;
                // what a valid reference is, is validation's to say.
                Err(RoleRefError::UnsupportedKind) => return Ok(()),
            };
            confirm_no_escalation(call, namespace, &rules).map_err(|why| forbidden(&why))
        }
        _ => Ok(()),
    }
}

/// `RoleEscalationAuthorized`: the user may `escalate` the role the request writes.
fn role_escalation_authorized(call: &Call) -> bool {
    let target = &call.target;
    let attributes = Attributes {
        user: UserInfo::clone(&call.user),
        verb: "escalate".to_owned(),
        resource_request: true,
        namespace: target.namespace.clone().unwrap_or_default(),
        api_group: target.resource.group.clone(),
        api_version: "*".to_owned(),
        resource: target.resource.plural.clone(),
        name: target.name.clone().unwrap_or_default(),
        ..Attributes::default()
    };
    call.state.authorizer().authorize(&attributes).allowed()
}

/// `BindingAuthorized`: the user may `bind` the role `role_ref` names, in the binding's
/// namespace (empty for a ClusterRoleBinding).
fn binding_authorized(call: &Call, role_ref: &RoleRef, namespace: &str) -> bool {
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => return false,
    };
    let attributes = Attributes {
        user: UserInfo::clone(&call.user),
        verb: "bind".to_owned(),
        resource_request: true,
        namespace: namespace.to_owned(),
        api_group: role_ref.api_group.clone(),
        api_version: "*".to_owned(),
        resource: resource.to_owned(),
        name: role_ref.name.clone(),
        ..Attributes::default()
    };
    call.state.authorizer().authorize(&attributes).allowed()
}

/// `ConfirmNoEscalation`: the user's rules in `namespace` cover `rules`; else the refusal
/// listing what is missing, compacted and sorted, then what could not be resolved.
fn confirm_no_escalation(call: &Call, namespace: &str, rules: &[PolicyRule]) -> Result<(), String> {
    let user = &call.user;
    let (owner, errors) = match call.state.rbac() {
        Some(rbac) => rbac.rules_for(user, namespace, Wording::Registry),
        None => (Vec::new(), Vec::new()),
    };
    let (covered, missing) = rule::covers(&owner, rules);
    if covered {
        return Ok(());
    }
    Err(escalation_message(user, &missing, &errors))
}

/// The refusal's words: `user "x" (groups=["g"]) is attempting to grant RBAC permissions not
/// currently held:` and one compact rule per line.
fn escalation_message(user: &UserInfo, missing: &[PolicyRule], errors: &[String]) -> String {
    let mut descriptions: Vec<String> = rule::compact(missing.to_vec())
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    descriptions.sort();
    descriptions.dedup();
    let mut message = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        kubemock_apimachinery::go::quote(&user.name),
        rule::go_quoted_list(&user.groups),
        descriptions.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!(
            "; resolution errors: [{}]",
            rbac::aggregate(errors)
        ));
    }
    message
}

/// `hasAggregationRule`: an `aggregationRule` with at least one selector.
fn has_aggregation_rule(role: &Object) -> bool {
    role.get("aggregationRule")
        .and_then(|rule| rule.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
        .is_some_and(|selectors| !selectors.is_empty())
}

/// `fullAuthority`: `*` on every resource and every URL.
fn full_authority() -> Vec<PolicyRule> {
    let all = || vec!["*".to_owned()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// `IsOnlyMutatingGCFields`: the objects differ in [`GC_FIELDS`] only.
fn only_gc_fields_change(object: &Object, existing: &Object) -> bool {
    let strip = |object: &Object| {
        let mut copy = object.clone();
        if let Some(Value::Object(metadata)) = copy.get_mut("metadata") {
            for field in GC_FIELDS {
                metadata.shift_remove(field);
            }
        }
        copy
    };
    strip(object) == strip(existing)
}

/// The 404 of a binding to a role that does not exist, as the registry answers it.
fn role_not_found(call: &Call, resource: &str, name: &str) -> ApiError {
    match call.state.registry().lookup(GROUP, "v1", resource) {
        Some(resource) => ApiError::not_found(&resource, name),
        None => ApiError::internal(format!("{resource}.{GROUP} is not served")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn refusals_list_the_missing_rules_compacted_and_sorted() {
        let missing = rule::covers(
            &[],
            &[
                PolicyRule {
                    verbs: vec!["get".into(), "list".into()],
                    api_groups: vec!["".into()],
                    resources: vec!["pods".into(), "configmaps".into()],
                    ..PolicyRule::default()
                },
                PolicyRule {
                    verbs: vec!["get".into()],
                    non_resource_urls: vec!["/healthz".into()],
                    ..PolicyRule::default()
                },
            ],
        )
        .1;
        assert_eq!(
            escalation_message(&user("alice", &["system:authenticated"]), &missing, &[]),
            "user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\" \"list\"]}\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}\n\
             {NonResourceURLs:[\"/healthz\"], Verbs:[\"get\"]}"
        );
        assert!(
            escalation_message(&user("bob", &[]), &missing, &["x".to_owned()])
                .starts_with("user \"bob\" (groups=[]) is attempting")
        );
        assert!(
            escalation_message(&user("bob", &[]), &missing, &["x".to_owned()])
                .ends_with("; resolution errors: [x]")
        );
    }

    #[test]
    fn only_what_the_garbage_collector_changes_is_exempt() {
        let parse = |v: serde_json::Value| match v {
            Value::Object(o) => o,
            _ => unreachable!(),
        };
        let old = parse(serde_json::json!({"metadata": {"name": "r", "uid": "u"}, "rules": []}));
        let gc = parse(serde_json::json!({"metadata": {"name": "r", "uid": "u",
            "finalizers": ["f"], "ownerReferences": [{"uid": "o"}], "resourceVersion": "5"},
            "rules": []}));
        assert!(only_gc_fields_change(&gc, &old));
        let more = parse(serde_json::json!({"metadata": {"name": "r", "uid": "u"},
            "rules": [{"verbs": ["*"]}]}));
        assert!(!only_gc_fields_change(&more, &old));
        let labelled = parse(serde_json::json!({"metadata": {"name": "r", "uid": "u",
            "labels": {"a": "b"}}, "rules": []}));
        assert!(!only_gc_fields_change(&labelled, &old));
    }
}
