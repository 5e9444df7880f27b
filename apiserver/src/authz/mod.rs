//! Authorization: whether a user may do what a request asks, as kube-apiserver's authorizers
//! decide it (`staging/src/k8s.io/apiserver/pkg/authorization/authorizer/interfaces.go`). The
//! request path, impersonation, escalation prevention and the access reviews all ask one
//! [`Authorizer`], so that a review answers exactly as the request it describes would be
//! answered.
//!
//! The authorizer is the chain `--authorization-mode` names ([`AuthorizationMode`]), behind
//! kube-apiserver's own first link: members of `system:masters` may do anything
//! (`authorizerfactory.NewPrivilegedGroups`, `pkg/kubeapiserver/authorizer/config.go`).
//! `AlwaysAllow` (the default, and the open mode) allows everything; `RBAC` is upstream's RBAC
//! authorizer over the stored roles and bindings.
//!
//! # Layout
//! - `rule`: policy rules: matching a request, covering other rules, compacting them.
//! - `rbac`: the RBAC authorizer and rule resolver over an index of the stored roles and
//!   bindings, kept from the store.
//! - `request`: a request's attributes (upstream's `RequestInfoFactory`) and the 403 of a
//!   refusal.
//!
//! None of it reads the store or knows a request handler: the pipeline's authorization step
//! is `crate::authorize`, and escalation prevention on writes of roles and bindings is
//! `handlers::escalation`.

pub(crate) mod cel;
pub(crate) mod rbac;
pub(crate) mod request;
pub(crate) mod rule;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use tracing::warn;

use crate::identity::{SYSTEM_MASTERS, UserInfo};
use rbac::{Rbac, Wording};
use rule::PolicyRule;

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
    /// Explicitly denied, with the reason. No authorizer kubemock has denies explicitly
    /// (RBAC only allows or has no opinion); the access reviews report it as upstream does.
    #[allow(
        dead_code,
        reason = "no authorizer kubemock serves denies explicitly (upstream's webhooks do)"
    )]
    Deny(String),
    /// Neither: the next authorizer decides, and at the end of the chain it is a denial.
    NoOpinion(String),
}

impl Decision {
    /// Whether the request may go on.
    pub(crate) fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason given with the decision (empty for none).
    pub(crate) fn reason(&self) -> &str {
        let (Decision::Allow(reason) | Decision::Deny(reason) | Decision::NoOpinion(reason)) = self;
        reason
    }
}

/// The rules a user has in a namespace, as a rule resolver lists them
/// (`authorizer.RuleResolver.RulesFor`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RulesInfo {
    /// Rules on resources (those with resources).
    pub(crate) resource_rules: Vec<PolicyRule>,
    /// Rules on non-resource URLs.
    pub(crate) non_resource_rules: Vec<PolicyRule>,
    /// Some authorizer cannot list all it would allow.
    pub(crate) incomplete: bool,
    /// What went wrong while listing (empty for nothing).
    pub(crate) evaluation_error: String,
}

impl RulesInfo {
    /// Adds policy rules, each where it belongs (a rule with both resources and URLs in both),
    /// as `RBACAuthorizer.RulesFor` sorts them.
    fn add_policy_rules(&mut self, rules: Vec<PolicyRule>) {
        for rule in rules {
            if !rule.non_resource_urls.is_empty() {
                self.non_resource_rules.push(rule.clone());
            }
            if !rule.resources.is_empty() {
                self.resource_rules.push(rule);
            }
        }
    }
}

/// Decides [`Attributes`] (`authorizer.Authorizer`) and lists what a user may do
/// (`authorizer.RuleResolver`).
pub(crate) trait Authorizer: Send + Sync {
    /// The decision for `attributes`.
    fn authorize(&self, attributes: &Attributes) -> Decision;

    /// Whether the decision for `attributes` is to allow, when its reason is not wanted (the
    /// authorization step of every request: wording an RBAC allow costs as much as finding
    /// it).
    fn allows(&self, attributes: &Attributes) -> bool {
        self.authorize(attributes).allowed()
    }

    /// The rules `user` has in `namespace`.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo;
}

/// Allows everything (`--authorization-mode AlwaysAllow`, and the open mode).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow(String::new())
    }

    /// `alwaysAllowAuthorizer.RulesFor`: `*` on everything.
    fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
        let all = || vec!["*".to_owned()];
        RulesInfo {
            resource_rules: vec![PolicyRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                ..PolicyRule::default()
            }],
            non_resource_rules: vec![PolicyRule {
                verbs: all(),
                non_resource_urls: all(),
                ..PolicyRule::default()
            }],
            incomplete: false,
            evaluation_error: String::new(),
        }
    }
}

/// One authorizer `--authorization-mode` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizerKind {
    /// `AlwaysAllow`: everything is allowed.
    AlwaysAllow,
    /// `AlwaysDeny`: no opinion on anything, with the reason "Everything is forbidden."
    /// (`authorizerfactory.alwaysDenyAuthorizer`), so only an authorizer before it allows.
    AlwaysDeny,
    /// `RBAC`: roles and bindings decide.
    Rbac,
    /// `Node`: accepted so that `Node,RBAC` (kubeadm's, kind's) starts, and not enforced: the
    /// node authorizer only ever allows kubelets (`system:node:*` in `system:nodes`) more, so
    /// without it they have what RBAC gives them and nobody has more than with it.
    Node,
}

impl AuthorizerKind {
    /// The flag's spelling.
    fn name(self) -> &'static str {
        match self {
            AuthorizerKind::AlwaysAllow => "AlwaysAllow",
            AuthorizerKind::AlwaysDeny => "AlwaysDeny",
            AuthorizerKind::Rbac => "RBAC",
            AuthorizerKind::Node => "Node",
        }
    }
}

/// `--authorization-mode`: the authorizers asked in order, after `system:masters`. Default
/// `AlwaysAllow`, as kube-apiserver's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationMode {
    kinds: Vec<AuthorizerKind>,
}

impl Default for AuthorizationMode {
    fn default() -> Self {
        AuthorizationMode::always_allow()
    }
}

impl AuthorizationMode {
    /// `AlwaysAllow`.
    pub fn always_allow() -> Self {
        AuthorizationMode {
            kinds: vec![AuthorizerKind::AlwaysAllow],
        }
    }

    /// `RBAC`.
    pub fn rbac() -> Self {
        AuthorizationMode {
            kinds: vec![AuthorizerKind::Rbac],
        }
    }

    /// The authorizers, in order.
    pub fn kinds(&self) -> &[AuthorizerKind] {
        &self.kinds
    }

    /// Whether RBAC is one of them.
    pub fn uses_rbac(&self) -> bool {
        self.kinds.contains(&AuthorizerKind::Rbac)
    }

    /// Parses the flag's comma-separated list with kube-apiserver's checks
    /// (`pkg/kubeapiserver/options/authorization.go`, `Validate`): known modes, each once.
    /// `ABAC` and `Webhook` are modes kubemock does not serve: refused.
    pub fn parse(flag: &str) -> Result<Self, String> {
        let names: Vec<&str> = flag
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() {
            return Err("at least one authorization-mode must be passed".to_owned());
        }
        let mut kinds = Vec::with_capacity(names.len());
        for name in &names {
            kinds.push(match *name {
                "AlwaysAllow" => AuthorizerKind::AlwaysAllow,
                "AlwaysDeny" => AuthorizerKind::AlwaysDeny,
                "RBAC" => AuthorizerKind::Rbac,
                "Node" => AuthorizerKind::Node,
                "ABAC" | "Webhook" => {
                    return Err(format!(
                        "authorization-mode {} is not served by kubemock (it serves AlwaysAllow, \
                         AlwaysDeny, RBAC and Node)",
                        kubemock_apimachinery::go::quote(name)
                    ));
                }
                other => {
                    return Err(format!(
                        "authorization-mode {} is not a valid mode",
                        kubemock_apimachinery::go::quote(other)
                    ));
                }
            });
        }
        let mut unique = kinds.clone();
        unique.sort_by_key(|k| k.name());
        unique.dedup();
        if unique.len() != kinds.len() {
            return Err(format!(
                "authorization-mode {} has mode specified more than once",
                rule::go_quoted_list(&names)
            ));
        }
        Ok(AuthorizationMode { kinds })
    }
}

impl FromStr for AuthorizationMode {
    type Err = String;

    fn from_str(flag: &str) -> Result<Self, Self::Err> {
        AuthorizationMode::parse(flag)
    }
}

impl fmt::Display for AuthorizationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// Whether `user` is in `system:masters`, which every authorizer chain allows first and
/// escalation prevention lets through (`rbacregistry.EscalationAllowed`).
pub(crate) fn is_privileged(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == SYSTEM_MASTERS)
}

/// `AlwaysDeny`'s reason (`authorizerfactory.alwaysDenyAuthorizer`).
const ALWAYS_DENY_REASON: &str = "Everything is forbidden.";

/// The authorizer chain of a mode other than plain `AlwaysAllow`: `system:masters`, then each
/// authorizer in order; the first to allow decides, and the reasons of those without an
/// opinion are joined by newlines (`union.unionAuthzHandler`).
struct Chain {
    kinds: Vec<AuthorizerKind>,
    /// The RBAC authorizer, when the chain has it.
    rbac: Option<Arc<Rbac>>,
}

impl Authorizer for Chain {
    fn authorize(&self, attributes: &Attributes) -> Decision {
        if is_privileged(&attributes.user) {
            return Decision::Allow(String::new());
        }
        let mut reasons = Vec::new();
        for kind in &self.kinds {
            let decision = match (kind, &self.rbac) {
                (AuthorizerKind::AlwaysAllow, _) => Decision::Allow(String::new()),
                (AuthorizerKind::AlwaysDeny, _) => {
                    Decision::NoOpinion(ALWAYS_DENY_REASON.to_owned())
                }
                (AuthorizerKind::Rbac, Some(rbac)) => rbac.authorize(attributes),
                (AuthorizerKind::Rbac | AuthorizerKind::Node, _) => {
                    Decision::NoOpinion(String::new())
                }
            };
            match decision {
                Decision::NoOpinion(reason) => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    fn allows(&self, attributes: &Attributes) -> bool {
        is_privileged(&attributes.user)
            || self.kinds.iter().any(|kind| match (kind, &self.rbac) {
                (AuthorizerKind::AlwaysAllow, _) => true,
                (AuthorizerKind::Rbac, Some(rbac)) => rbac.allows(attributes),
                (AuthorizerKind::AlwaysDeny | AuthorizerKind::Rbac | AuthorizerKind::Node, _) => {
                    false
                }
            })
    }

    /// The rule resolvers of the chain, their rules together (`unionAuthzRulesHandler`).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo {
        let mut info = RulesInfo::default();
        let mut errors = Vec::new();
        for kind in &self.kinds {
            match (kind, &self.rbac) {
                (AuthorizerKind::AlwaysAllow, _) => {
                    let all = AlwaysAllow.rules_for(user, namespace);
                    info.resource_rules.extend(all.resource_rules);
                    info.non_resource_rules.extend(all.non_resource_rules);
                }
                (AuthorizerKind::Rbac, Some(rbac)) => {
                    let (rules, rbac_errors) = rbac.rules_for(user, namespace, Wording::Lister);
                    info.add_policy_rules(rules);
                    if !rbac_errors.is_empty() {
                        errors.push(rbac::aggregate(&rbac_errors));
                    }
                }
                (AuthorizerKind::AlwaysDeny | AuthorizerKind::Rbac | AuthorizerKind::Node, _) => {}
            }
        }
        info.evaluation_error = rbac::aggregate(&errors);
        info
    }
}

/// The authorizer of `mode`, and its RBAC authorizer (whose index the server loads and
/// follows, and whose rule resolver escalation prevention asks) when it has one.
pub(crate) fn build(mode: &AuthorizationMode) -> (Arc<dyn Authorizer>, Option<Arc<Rbac>>) {
    if mode.kinds() == [AuthorizerKind::AlwaysAllow] {
        return (Arc::new(AlwaysAllow), None);
    }
    if mode.kinds().contains(&AuthorizerKind::Node) {
        warn!(
            "authorization mode Node is not enforced by kubemock: kubelets get what RBAC grants them"
        );
    }
    let rbac = mode.uses_rbac().then(|| Arc::new(Rbac::default()));
    let chain = Chain {
        kinds: mode.kinds().to_vec(),
        rbac: rbac.clone(),
    };
    (Arc::new(chain), rbac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_kube_apiserver_checks_them() {
        assert_eq!(
            AuthorizationMode::parse("Node,RBAC").map(|m| m.to_string()),
            Ok("Node,RBAC".to_owned())
        );
        assert_eq!(
            AuthorizationMode::parse("RBAC"),
            Ok(AuthorizationMode::rbac())
        );
        assert_eq!(
            AuthorizationMode::parse("AlwaysAllow"),
            Ok(AuthorizationMode::always_allow())
        );
        assert!(AuthorizationMode::parse("RBAC,AlwaysAllow").is_ok_and(|m| m.uses_rbac()));
        assert_eq!(
            AuthorizationMode::parse("rbac"),
            Err(r#"authorization-mode "rbac" is not a valid mode"#.to_owned())
        );
        assert_eq!(
            AuthorizationMode::parse("RBAC,Node,RBAC"),
            Err(
                r#"authorization-mode ["RBAC" "Node" "RBAC"] has mode specified more than once"#
                    .to_owned()
            )
        );
        assert_eq!(
            AuthorizationMode::parse(""),
            Err("at least one authorization-mode must be passed".to_owned())
        );
        assert!(
            AuthorizationMode::parse("Webhook")
                .is_err_and(|e| e.contains("is not served by kubemock"))
        );
    }

    #[test]
    fn always_deny_has_no_opinion_and_lets_an_earlier_authorizer_allow() {
        let user = UserInfo {
            name: "alice".to_owned(),
            groups: vec!["system:authenticated".to_owned()],
            ..UserInfo::default()
        };
        let (deny, _) = build(&AuthorizationMode::parse("AlwaysDeny").expect("a mode"));
        assert_eq!(
            deny.authorize(&attributes(user.clone())),
            Decision::NoOpinion("Everything is forbidden.".to_owned())
        );
        assert!(!deny.allows(&attributes(user.clone())));
        let admin = UserInfo {
            name: "admin".to_owned(),
            groups: vec![SYSTEM_MASTERS.to_owned()],
            ..UserInfo::default()
        };
        assert!(
            deny.allows(&attributes(admin)),
            "system:masters comes first"
        );
        let (allow_first, _) =
            build(&AuthorizationMode::parse("AlwaysAllow,AlwaysDeny").expect("a mode"));
        assert!(allow_first.allows(&attributes(user)));
    }

    fn attributes(user: UserInfo) -> Attributes {
        Attributes {
            user,
            verb: "get".to_owned(),
            resource_request: true,
            namespace: "ns".to_owned(),
            resource: "pods".to_owned(),
            ..Attributes::default()
        }
    }

    #[test]
    fn the_chain_lets_masters_through_first_and_then_asks_in_order() {
        let (rbac_only, _) = build(&AuthorizationMode::rbac());
        let alice = UserInfo {
            name: "alice".to_owned(),
            ..UserInfo::default()
        };
        assert_eq!(
            rbac_only.authorize(&attributes(alice.clone())),
            Decision::NoOpinion(String::new())
        );
        assert!(
            rbac_only
                .authorize(&attributes((*UserInfo::open_mode()).clone()))
                .allowed()
        );
        let (then_allow, _) =
            build(&AuthorizationMode::parse("Node,RBAC,AlwaysAllow").expect("mode"));
        assert!(then_allow.authorize(&attributes(alice.clone())).allowed());
        assert!(then_allow.allows(&attributes(alice.clone())));
        assert!(!rbac_only.allows(&attributes(alice.clone())));
        assert!(rbac_only.allows(&attributes((*UserInfo::open_mode()).clone())));
        let rules = then_allow.rules_for(&alice, "ns");
        assert_eq!(rules.resource_rules.len(), 1);
        assert_eq!(rules.non_resource_rules.len(), 1);
        assert!(rbac_only.rules_for(&alice, "ns").resource_rules.is_empty());
    }
}
