//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac/rbac.go`) and its rule resolver
//! (`pkg/registry/rbac/validation/rule.go`, `DefaultRuleResolver`): a user may do what a rule
//! of a role bound to the user, a group of the user or the user's ServiceAccount allows —
//! ClusterRoleBindings everywhere, RoleBindings (to a Role or a ClusterRole) in their
//! namespace.
//!
//! Upstream resolves from informer caches and walks every binding on every request. Here the
//! roles and bindings live in an in-memory [`Index`] kept from the store: loaded before the
//! server serves, then followed by a watch of the RBAC keys (so that whatever writes them —
//! a request, the server's bootstrap, another server on a shared store — is seen). Bindings
//! are indexed by subject (user name, ServiceAccount user name, group), so a request looks at
//! the bindings that name its user and groups, never at all of them. A write of an RBAC object
//! answers once the index has caught up with it ([`Rbac::synced`]): a request made after the
//! answer is authorized against what it wrote.
//!
//! Upstream's listers return bindings in no fixed order; here they come in name order, one of
//! the orders upstream may take, so that the binding an allow reason names is deterministic.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;

use kubemock_apimachinery::go;
use kubemock_storage::{Kv, Revision};
use parking_lot::RwLock;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use super::rule::PolicyRule;
use super::{Attributes, Decision};
use crate::identity::UserInfo;
use crate::object;
use crate::status::ApiResult;

/// The API group of roles and bindings.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";

/// The storage key prefix of every role and binding (`keys`: `/registry/{group}/...`).
const PREFIX: &str = "/registry/rbac.authorization.k8s.io/";

/// The prefix of a ServiceAccount's user name (`serviceaccount.ServiceAccountUsernamePrefix`).
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// A binding's `roleRef`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RoleRef {
    /// `apiGroup`.
    pub(crate) api_group: String,
    /// `kind`: `Role` or `ClusterRole`.
    pub(crate) kind: String,
    /// `name`.
    pub(crate) name: String,
}

impl RoleRef {
    /// The `roleRef` of a binding object.
    pub(crate) fn of(binding: &Value) -> RoleRef {
        let text = |key: &str| {
            binding
                .get("roleRef")
                .and_then(|r| r.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        RoleRef {
            api_group: text("apiGroup"),
            kind: text("kind"),
            name: text("name"),
        }
    }
}

/// One of a binding's `subjects`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    /// `kind`: `User`, `Group` or `ServiceAccount`.
    kind: String,
    /// `name`.
    name: String,
    /// `namespace` (ServiceAccounts).
    namespace: String,
}

/// A RoleBinding or ClusterRoleBinding, as the authorizer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Binding {
    name: String,
    /// Empty for a ClusterRoleBinding.
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(namespace: &str, name: &str, object: &Value) -> Binding {
        let subjects = object
            .get("subjects")
            .and_then(Value::as_array)
            .map(|subjects| {
                subjects
                    .iter()
                    .map(|s| {
                        let text =
                            |key: &str| s.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
                        Subject {
                            kind: text("kind"),
                            name: text("name"),
                            namespace: text("namespace"),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Binding {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            role_ref: RoleRef::of(object),
            subjects,
        }
    }

    /// The user name a subject names (a User's name, a ServiceAccount's
    /// `system:serviceaccount:NS:NAME`, the namespace defaulting to a RoleBinding's own), or
    /// `None` for a group, an unknown kind, or a ServiceAccount of no namespace.
    fn username_of(&self, subject: &Subject) -> Option<String> {
        match subject.kind.as_str() {
            "User" => Some(subject.name.clone()),
            "ServiceAccount" => {
                let namespace = match subject.namespace.as_str() {
                    "" => self.namespace.as_str(),
                    namespace => namespace,
                };
                (!namespace.is_empty())
                    .then(|| format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{}", subject.name))
            }
            _ => None,
        }
    }

    /// `appliesTo`: the first subject that is `user` (by name, group or ServiceAccount).
    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|subject| match subject.kind.as_str() {
                "Group" => user.groups.contains(&subject.name),
                _ => self
                    .username_of(subject)
                    .is_some_and(|name| name == user.name),
            })
    }
}

/// Where a rule came from, as the allow reason words it (`clusterRoleBindingDescriber`,
/// `roleBindingDescriber`, `describeSubject`).
pub(crate) struct Source<'a> {
    binding: &'a Binding,
    subject: &'a Subject,
}

impl fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let binding = self.binding;
        let subject = match self.subject.kind.as_str() {
            "ServiceAccount" => {
                let namespace = match self.subject.namespace.as_str() {
                    "" => binding.namespace.as_str(),
                    namespace => namespace,
                };
                format!(
                    "ServiceAccount {}",
                    go::quote(&format!("{}/{namespace}", self.subject.name))
                )
            }
            kind => format!("{kind} {}", go::quote(&self.subject.name)),
        };
        let (kind, name) = if binding.namespace.is_empty() {
            ("ClusterRoleBinding", binding.name.clone())
        } else {
            (
                "RoleBinding",
                format!("{}/{}", binding.name, binding.namespace),
            )
        };
        write!(
            f,
            "{kind} {} of {} {} to {subject}",
            go::quote(&name),
            binding.role_ref.kind,
            go::quote(&binding.role_ref.name)
        )
    }
}

/// What the rule resolver met while resolving.
pub(crate) enum Visit<'a> {
    /// A rule that applies, and where it came from.
    Rule(Source<'a>, &'a PolicyRule),
    /// A binding whose role could not be resolved.
    Error(String),
}

/// Whose words a missing role is reported in: the authorizer reads listers
/// (`role.rbac.authorization.k8s.io "x" not found`), escalation checks read the registry
/// (`roles.rbac.authorization.k8s.io "x" not found`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wording {
    /// The authorizer's informer listers (singular resource).
    Lister,
    /// The API server's own registry (plural resource).
    Registry,
}

/// Why a binding's role has no rules to give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RoleRefError {
    /// The role does not exist; `resource` is `roles` or `clusterroles`.
    NotFound {
        /// `roles` or `clusterroles`.
        resource: &'static str,
    },
    /// The reference is to neither a Role nor a ClusterRole.
    UnsupportedKind,
}

impl RoleRefError {
    /// The error's text, as `wording` says it.
    fn message(&self, role_ref: &RoleRef, wording: Wording) -> String {
        match self {
            RoleRefError::NotFound { resource } => {
                let resource = match wording {
                    Wording::Registry => resource,
                    Wording::Lister => resource.trim_end_matches('s'),
                };
                format!("{resource}.{GROUP} {} not found", go::quote(&role_ref.name))
            }
            RoleRefError::UnsupportedKind => format!(
                "unsupported role reference kind: {}",
                go::quote(&role_ref.kind)
            ),
        }
    }
}

/// Bindings of one scope (the cluster, or one namespace), by name and by subject.
#[derive(Debug, Default)]
struct Bindings {
    /// Every binding of the scope.
    by_name: BTreeMap<String, Arc<Binding>>,
    /// Names of the bindings with a User or ServiceAccount subject of this user name.
    by_username: HashMap<String, BTreeSet<String>>,
    /// Names of the bindings with a Group subject of this name.
    by_group: HashMap<String, BTreeSet<String>>,
}

impl Bindings {
    fn insert(&mut self, binding: Binding) {
        self.remove(&binding.name);
        for subject in &binding.subjects {
            let (map, key) = match (subject.kind.as_str(), binding.username_of(subject)) {
                ("Group", _) => (&mut self.by_group, subject.name.clone()),
                (_, Some(username)) => (&mut self.by_username, username),
                (_, None) => continue,
            };
            map.entry(key).or_default().insert(binding.name.clone());
        }
        self.by_name.insert(binding.name.clone(), Arc::new(binding));
    }

    fn remove(&mut self, name: &str) {
        let Some(old) = self.by_name.remove(name) else {
            return;
        };
        for subject in &old.subjects {
            let (map, key) = match (subject.kind.as_str(), old.username_of(subject)) {
                ("Group", _) => (&mut self.by_group, subject.name.clone()),
                (_, Some(username)) => (&mut self.by_username, username),
                (_, None) => continue,
            };
            if let Some(names) = map.get_mut(&key) {
                names.remove(name);
                if names.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }

    /// The bindings that may name `user`, in name order.
    fn candidates(&self, user: &UserInfo) -> Vec<&Arc<Binding>> {
        let mut names: Vec<&String> = self
            .by_username
            .get(&user.name)
            .into_iter()
            .flatten()
            .collect();
        for group in &user.groups {
            names.extend(self.by_group.get(group).into_iter().flatten());
        }
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| self.by_name.get(name))
            .collect()
    }
}

/// The roles and bindings as stored.
#[derive(Debug, Default)]
struct Index {
    /// Roles by namespace, then name: their rules.
    roles: HashMap<String, HashMap<String, Arc<[PolicyRule]>>>,
    /// ClusterRoles by name: their rules (for an aggregated ClusterRole, the rules the
    /// aggregation controller gathered into it).
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    /// ClusterRoleBindings.
    cluster_role_bindings: Bindings,
    /// RoleBindings by namespace.
    role_bindings: HashMap<String, Bindings>,
}

/// What a storage key under [`PREFIX`] names.
enum Key<'a> {
    Role(&'a str, &'a str),
    RoleBinding(&'a str, &'a str),
    ClusterRole(&'a str),
    ClusterRoleBinding(&'a str),
}

impl<'a> Key<'a> {
    fn parse(key: &'a [u8]) -> Option<Key<'a>> {
        let rest = std::str::from_utf8(key).ok()?.strip_prefix(PREFIX)?;
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            ["roles", namespace, name] => Some(Key::Role(namespace, name)),
            ["rolebindings", namespace, name] => Some(Key::RoleBinding(namespace, name)),
            ["clusterroles", name] => Some(Key::ClusterRole(name)),
            ["clusterrolebindings", name] => Some(Key::ClusterRoleBinding(name)),
            _ => None,
        }
    }
}

impl Index {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        let Some(parsed) = Key::parse(key) else {
            return;
        };
        let object = match object::parse_stored(value) {
            Ok(object) => Value::Object(object),
            Err(err) => {
                warn!(key = %String::from_utf8_lossy(key), error = %err, "unreadable RBAC object ignored");
                self.delete(key);
                return;
            }
        };
        match parsed {
            Key::Role(namespace, name) => {
                self.roles.entry(namespace.to_owned()).or_default().insert(
                    name.to_owned(),
                    PolicyRule::list_from(object.get("rules")).into(),
                );
            }
            Key::ClusterRole(name) => {
                self.cluster_roles.insert(
                    name.to_owned(),
                    PolicyRule::list_from(object.get("rules")).into(),
                );
            }
            Key::RoleBinding(namespace, name) => self
                .role_bindings
                .entry(namespace.to_owned())
                .or_default()
                .insert(Binding::from_json(namespace, name, &object)),
            Key::ClusterRoleBinding(name) => self
                .cluster_role_bindings
                .insert(Binding::from_json("", name, &object)),
        }
    }

    fn delete(&mut self, key: &[u8]) {
        match Key::parse(key) {
            Some(Key::Role(namespace, name)) => {
                if let Some(roles) = self.roles.get_mut(namespace) {
                    roles.remove(name);
                    if roles.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
            }
            Some(Key::ClusterRole(name)) => {
                self.cluster_roles.remove(name);
            }
            Some(Key::RoleBinding(namespace, name)) => {
                if let Some(bindings) = self.role_bindings.get_mut(namespace) {
                    bindings.remove(name);
                    if bindings.by_name.is_empty() {
                        self.role_bindings.remove(namespace);
                    }
                }
            }
            Some(Key::ClusterRoleBinding(name)) => self.cluster_role_bindings.remove(name),
            None => {}
        }
    }

    /// `GetRoleReferenceRules`: the rules of the role `role_ref` names, for a binding in
    /// `namespace` (empty for a ClusterRoleBinding).
    fn role_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<&Arc<[PolicyRule]>, RoleRefError> {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(namespace)
                .and_then(|roles| roles.get(&role_ref.name))
                .ok_or(RoleRefError::NotFound { resource: "roles" }),
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .ok_or(RoleRefError::NotFound {
                    resource: "clusterroles",
                }),
            _ => Err(RoleRefError::UnsupportedKind),
        }
    }

    /// `VisitRulesFor`: every rule that applies to `user` in `namespace` (ClusterRoleBindings
    /// first, then the namespace's RoleBindings), and every role that could not be resolved,
    /// until `visit` breaks.
    fn visit_rules_for<'a>(
        &'a self,
        user: &UserInfo,
        namespace: &str,
        wording: Wording,
        mut visit: impl FnMut(Visit<'a>) -> ControlFlow<()>,
    ) {
        let namespaced = (!namespace.is_empty())
            .then(|| self.role_bindings.get(namespace))
            .flatten();
        let scopes = [Some(&self.cluster_role_bindings), namespaced];
        for bindings in scopes.into_iter().flatten() {
            for binding in bindings.candidates(user) {
                let Some(subject) = binding.subject_for(user) else {
                    continue;
                };
                match self.role_rules(&binding.role_ref, &binding.namespace) {
                    Ok(rules) => {
                        for rule in rules.iter() {
                            let source = Source { binding, subject };
                            if visit(Visit::Rule(source, rule)).is_break() {
                                return;
                            }
                        }
                    }
                    Err(err) => {
                        let message = err.message(&binding.role_ref, wording);
                        if visit(Visit::Error(message)).is_break() {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as it is, several (duplicates
/// dropped) as `[a, b]`.
pub(crate) fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for error in errors {
        if !seen.contains(&error.as_str()) {
            seen.push(error);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The RBAC authorizer over the index of stored roles and bindings.
#[derive(Debug)]
pub(crate) struct Rbac {
    /// The roles and bindings, written by [`start`]'s load and watch task only, read by every
    /// authorization. Held only for the synchronous span of one lookup or one event, never
    /// across an `.await`.
    index: RwLock<Index>,
    /// How far it has caught up with the store (`store_index`; [`Rbac::synced`] waits on it).
    progress: crate::store_index::Progress,
}

impl Default for Rbac {
    fn default() -> Self {
        Rbac {
            index: RwLock::new(Index::default()),
            progress: crate::store_index::Progress::default(),
        }
    }
}

impl Rbac {
    /// `RBACAuthorizer.Authorize`: allowed, with the binding that allows it, or no opinion,
    /// with the roles that could not be resolved (`RBAC: ...`).
    pub(crate) fn authorize(&self, attributes: &Attributes) -> Decision {
        let mut errors = Vec::new();
        let mut allowed = None;
        self.index.read().visit_rules_for(
            &attributes.user,
            &attributes.namespace,
            Wording::Lister,
            |visit| match visit {
                Visit::Rule(source, rule) if rule.allows(attributes) => {
                    allowed = Some(format!("RBAC: allowed by {source}"));
                    ControlFlow::Break(())
                }
                Visit::Rule(..) => ControlFlow::Continue(()),
                Visit::Error(error) => {
                    errors.push(error);
                    ControlFlow::Continue(())
                }
            },
        );
        match allowed {
            Some(reason) => Decision::Allow(reason),
            None if errors.is_empty() => Decision::NoOpinion(String::new()),
            None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
        }
    }

    /// Whether [`Rbac::authorize`] would allow, without wording why (the authorization step
    /// asks this of every request; wording the binding costs more than finding it).
    pub(crate) fn allows(&self, attributes: &Attributes) -> bool {
        let mut allowed = false;
        self.index.read().visit_rules_for(
            &attributes.user,
            &attributes.namespace,
            Wording::Lister,
            |visit| match visit {
                Visit::Rule(_, rule) if rule.allows(attributes) => {
                    allowed = true;
                    ControlFlow::Break(())
                }
                Visit::Rule(..) | Visit::Error(_) => ControlFlow::Continue(()),
            },
        );
        allowed
    }

    /// `RulesFor`: every rule that applies to `user` in `namespace`, and the roles that
    /// could not be resolved, in `wording`.
    pub(crate) fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        wording: Wording,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.index
            .read()
            .visit_rules_for(user, namespace, wording, |visit| {
                match visit {
                    Visit::Rule(_, rule) => rules.push(rule.clone()),
                    Visit::Error(error) => errors.push(error),
                }
                ControlFlow::Continue(())
            });
        (rules, errors)
    }

    /// `GetRoleReferenceRules` for a binding in `namespace` (empty: a ClusterRoleBinding).
    pub(crate) fn role_reference_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, RoleRefError> {
        self.index
            .read()
            .role_rules(role_ref, namespace)
            .map(|rules| rules.to_vec())
    }

    /// Applies one stored object (a put) or its removal, under its storage key.
    pub(super) fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        let mut index = self.index.write();
        match value {
            Some(value) => index.put(key, value),
            None => index.delete(key),
        }
    }

    /// Waits (a bounded time) until the index reflects every RBAC change up to `revision`.
    pub(crate) async fn synced(&self, revision: Revision) {
        self.progress
            .synced(revision, <Rbac as crate::store_index::StoreIndex>::NAME)
            .await;
    }
}

/// Loads the index from the store, then follows it on a task of `tasks` until `shutdown`
/// (`store_index`).
pub(crate) async fn start(
    rbac: &Arc<Rbac>,
    store: &Arc<dyn Kv>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> ApiResult<()> {
    crate::store_index::start(rbac, store, shutdown, tasks).await
}

impl crate::store_index::StoreIndex for Rbac {
    const NAME: &'static str = "RBAC index";
    const PREFIX: &'static str = PREFIX;

    fn replace(&self, items: &[kubemock_storage::KeyValue]) {
        let mut index = Index::default();
        for kv in items {
            index.put(&kv.key, &kv.value);
        }
        *self.index.write() = index;
    }

    fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        Rbac::apply(self, key, value);
    }

    fn progress(&self) -> &crate::store_index::Progress {
        &self.progress
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// An index over `objects` (each an RBAC object with `kind` and `metadata`), as the store
    /// would hold them.
    pub(crate) fn rbac_of(objects: &[Value]) -> Rbac {
        let rbac = Rbac::default();
        fill(&rbac, objects);
        rbac
    }

    /// Stores `objects` in `rbac`'s index.
    pub(crate) fn fill(rbac: &Rbac, objects: &[Value]) {
        for object in objects {
            let kind = object["kind"].as_str().unwrap_or("");
            let name = object["metadata"]["name"].as_str().unwrap_or("");
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or("");
            let key = match kind {
                "Role" => format!("{PREFIX}roles/{namespace}/{name}"),
                "RoleBinding" => format!("{PREFIX}rolebindings/{namespace}/{name}"),
                "ClusterRole" => format!("{PREFIX}clusterroles/{name}"),
                "ClusterRoleBinding" => format!("{PREFIX}clusterrolebindings/{name}"),
                _ => panic!("not an RBAC kind: {kind}"),
            };
            rbac.apply(key.as_bytes(), Some(object.to_string().as_bytes()));
        }
    }

    /// `newRule` of `rbac_test.go`: comma-separated lists (an empty list is `[""]`, as Go's
    /// `strings.Split` makes it).
    pub(crate) fn new_rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> Value {
        fn split(s: &str) -> Vec<&str> {
            s.split(',').collect()
        }
        json!({"verbs": split(verbs), "apiGroups": split(groups),
               "resources": split(resources), "nonResourceURLs": split(urls)})
    }

    pub(crate) fn cluster_role(name: &str, rules: &[Value]) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
    }

    pub(crate) fn role(namespace: &str, name: &str, rules: &[Value]) -> Value {
        json!({"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
    }

    /// Subjects as `Kind:name` (`ServiceAccount:ns:name` or `ServiceAccount:name`).
    fn subjects(list: &[&str]) -> Vec<Value> {
        list.iter()
            .map(|s| {
                let (kind, rest) = s.split_once(':').unwrap();
                match (kind, rest.split_once(':')) {
                    ("ServiceAccount", Some((ns, name))) => {
                        json!({"kind": kind, "namespace": ns, "name": name})
                    }
                    ("ServiceAccount", None) => json!({"kind": kind, "name": rest}),
                    _ => json!({"kind": kind, "apiGroup": GROUP, "name": rest}),
                }
            })
            .collect()
    }

    pub(crate) fn cluster_role_binding(name: &str, role: &str, list: &[&str]) -> Value {
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
               "subjects": subjects(list)})
    }

    pub(crate) fn role_binding(
        namespace: &str,
        name: &str,
        role_kind: &str,
        role: &str,
        list: &[&str],
    ) -> Value {
        json!({"kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
               "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role},
               "subjects": subjects(list)})
    }

    pub(crate) fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        }
    }

    /// `user|groups verb resource[/sub] namespace [group]` or `user|groups verb /path`.
    fn attributes(spec: &str) -> Attributes {
        let fields: Vec<&str> = spec.split(' ').collect();
        let (name, groups) = fields[0].split_once('|').unwrap_or((fields[0], ""));
        let groups: Vec<&str> = groups.split(',').filter(|g| !g.is_empty()).collect();
        let user = user(name, &groups);
        if fields[2].starts_with('/') {
            return Attributes {
                user,
                verb: fields[1].to_owned(),
                path: fields[2].to_owned(),
                ..Attributes::default()
            };
        }
        let (resource, sub) = fields[2].split_once('/').unwrap_or((fields[2], ""));
        Attributes {
            user,
            verb: fields[1].to_owned(),
            resource_request: true,
            resource: resource.to_owned(),
            subresource: sub.to_owned(),
            namespace: fields.get(3).copied().unwrap_or("").to_owned(),
            api_group: fields.get(4).copied().unwrap_or("").to_owned(),
            ..Attributes::default()
        }
    }

    /// `rbac_test.go`, `TestAuthorizer`: the objects, then requests that must pass and
    /// requests that must not. (Upstream's bindings have no name; here each has one.)
    #[test]
    fn the_authorizer_passes_and_fails_as_upstreams_table_says() {
        let cases: Vec<(Vec<Value>, &[&str], &[&str])> = vec![
            (
                vec![
                    cluster_role("admin", &[new_rule("*", "*", "*", "*")]),
                    role_binding(
                        "ns1",
                        "b",
                        "ClusterRole",
                        "admin",
                        &["User:admin", "Group:admins"],
                    ),
                ],
                &[
                    "admin get Pods ns1",
                    "admin watch Pods ns1",
                    "admin|group1 watch Foobar ns1",
                    "joe|admins watch Foobar ns1",
                    "joe|group1,admins watch Foobar ns1",
                ],
                &[
                    "admin GET Pods ns2",
                    "admin GET Nodes",
                    "admin|admins GET Pods ns2",
                    "admin|admins GET Nodes",
                ],
            ),
            (
                vec![
                    cluster_role(
                        "non-resource-url-getter",
                        &[new_rule("get", "", "", "/apis")],
                    ),
                    cluster_role("non-resource-url", &[new_rule("*", "", "", "/apis")]),
                    cluster_role(
                        "non-resource-url-prefix",
                        &[new_rule("get", "", "", "/apis/*")],
                    ),
                    cluster_role_binding(
                        "b1",
                        "non-resource-url-getter",
                        &["User:foo", "Group:bar"],
                    ),
                    cluster_role_binding("b2", "non-resource-url", &["User:admin", "Group:admin"]),
                    cluster_role_binding(
                        "b3",
                        "non-resource-url-prefix",
                        &["User:prefixed", "Group:prefixed"],
                    ),
                ],
                &[
                    "foo get /apis",
                    "|bar get /apis",
                    "admin get /apis",
                    "|admin get /apis",
                    "admin watch /apis",
                    "|admin watch /apis",
                    "prefixed get /apis/v1",
                    "|prefixed get /apis/v1",
                    "prefixed get /apis/v1/foobar",
                    "|prefixed get /apis/v1/foorbar",
                ],
                &[
                    "foo watch /apis",
                    "|bar watch /apis",
                    "foo get /api/v1",
                    "|bar get /api/v1",
                    "admin get /api/v1",
                    "|admin get /api/v1",
                    "prefixed get /api/v1",
                    "|prefixed get /api/v1",
                ],
            ),
            (
                vec![
                    cluster_role("admin", &[new_rule("*", "*", "pods", "*")]),
                    role_binding(
                        "ns1",
                        "b",
                        "ClusterRole",
                        "admin",
                        &["User:admin", "Group:admins"],
                    ),
                ],
                &["admin get pods ns1"],
                &["admin get pods/status ns1"],
            ),
            (
                vec![
                    cluster_role(
                        "admin",
                        &[
                            new_rule("*", "*", "pods/status", "*"),
                            new_rule("*", "*", "*/scale", "*"),
                        ],
                    ),
                    role_binding(
                        "ns1",
                        "b",
                        "ClusterRole",
                        "admin",
                        &["User:admin", "Group:admins"],
                    ),
                ],
                &[
                    "admin get pods/status ns1",
                    "admin get pods/scale ns1",
                    "admin get deployments/scale ns1",
                    "admin get anything/scale ns1",
                ],
                &["admin get pods ns1"],
            ),
        ];
        for (i, (objects, pass, fail)) in cases.into_iter().enumerate() {
            let rbac = rbac_of(&objects);
            for spec in pass {
                let decision = rbac.authorize(&attributes(spec));
                assert!(
                    decision.allowed(),
                    "case {i}: restricted {spec}: {decision:?}"
                );
                assert!(rbac.allows(&attributes(spec)), "case {i}: {spec}");
            }
            for spec in fail {
                let decision = rbac.authorize(&attributes(spec));
                assert!(!decision.allowed(), "case {i}: passed {spec}");
                assert!(!rbac.allows(&attributes(spec)), "case {i}: {spec}");
            }
        }
    }

    fn applies(subjects_list: &[&str], user: &UserInfo, namespace: &str) -> Option<usize> {
        let binding = Binding::from_json(
            namespace,
            "b",
            &json!({"subjects": subjects(subjects_list)}),
        );
        binding
            .subject_for(user)
            .and_then(|found| binding.subjects.iter().position(|s| s == found))
    }

    /// `rule_test.go`, `TestAppliesTo`: whether, and by which subject, a binding names a user.
    #[test]
    fn bindings_apply_to_users_as_upstreams_table_says() {
        let auth = "system:authenticated";
        let unauth = "system:unauthenticated";
        let everyone = ["Group:system:authenticated", "Group:system:unauthenticated"];
        let cases: Vec<(&[&str], UserInfo, &str, Option<usize>)> = vec![
            (&["User:foobar"], user("foobar", &[]), "", Some(0)),
            (
                &["User:barfoo", "User:foobar"],
                user("foobar", &[]),
                "",
                Some(1),
            ),
            (
                &["User:barfoo", "User:foobar"],
                user("zimzam", &[]),
                "",
                None,
            ),
            (
                &["User:barfoo", "Group:foobar"],
                user("zimzam", &["foobar"]),
                "",
                Some(1),
            ),
            (
                &["User:barfoo", "Group:foobar"],
                user("zimzam", &["foobar"]),
                "namespace1",
                Some(1),
            ),
            (
                &[
                    "User:barfoo",
                    "Group:foobar",
                    "ServiceAccount:kube-system:default",
                ],
                user("system:serviceaccount:kube-system:default", &[]),
                "default",
                Some(2),
            ),
            (&["User:*"], user("foobar", &[]), "default", None),
            (&everyone, user("foobar", &[auth]), "default", Some(0)),
            (
                &everyone,
                user("system:anonymous", &[unauth]),
                "default",
                Some(1),
            ),
            // A ServiceAccount subject without a namespace is the binding's namespace's ...
            (
                &["ServiceAccount:default"],
                user("system:serviceaccount:ns1:default", &[]),
                "ns1",
                Some(0),
            ),
            // ... and nobody's in a ClusterRoleBinding.
            (
                &["ServiceAccount:default"],
                user("system:serviceaccount::default", &[]),
                "",
                None,
            ),
        ];
        for (subjects_list, user, namespace, want) in cases {
            assert_eq!(
                applies(subjects_list, &user, namespace),
                want,
                "{subjects_list:?} {user:?} {namespace}"
            );
        }
    }

    /// `rule_test.go`, `TestDefaultRuleResolver`.
    #[test]
    fn rules_for_a_user_are_those_of_the_bindings_that_name_them() {
        let read_pods =
            json!({"verbs": ["GET", "WATCH"], "apiGroups": ["v1"], "resources": ["pods"]});
        let read_services =
            json!({"verbs": ["GET", "WATCH"], "apiGroups": ["v1"], "resources": ["services"]});
        let write_nodes = json!({"verbs": ["PUT", "CREATE", "UPDATE"], "apiGroups": ["v1"], "resources": ["nodes"]});
        let admin = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
        let rbac = rbac_of(&[
            role(
                "namespace1",
                "readthings",
                &[read_pods.clone(), read_services.clone()],
            ),
            cluster_role("cluster-admin", std::slice::from_ref(&admin)),
            cluster_role("write-nodes", &[write_nodes]),
            role_binding(
                "namespace1",
                "b",
                "Role",
                "readthings",
                &["User:foobar", "Group:group1"],
            ),
            cluster_role_binding("c", "cluster-admin", &["User:admin", "Group:admin"]),
        ]);
        let rules = |user: &UserInfo, namespace: &str| {
            let (rules, errors) = rbac.rules_for(user, namespace, Wording::Lister);
            assert!(errors.is_empty());
            rules
        };
        let parse = |v: &Value| PolicyRule::from_json(v);
        assert_eq!(
            rules(&user("foobar", &[]), "namespace1"),
            vec![parse(&read_pods), parse(&read_services)]
        );
        assert!(rules(&user("foobar", &[]), "namespace2").is_empty());
        assert_eq!(rules(&user("foobar", &["admin"]), ""), vec![parse(&admin)]);
        assert!(rules(&user("", &[]), "").is_empty());
    }

    #[test]
    fn allow_reasons_and_resolution_errors_are_worded_as_upstream() {
        let rbac = rbac_of(&[
            cluster_role("view", &[new_rule("get,list", "", "configmaps", "")]),
            cluster_role_binding("viewers", "view", &["Group:viewers"]),
            role_binding("ns", "rb", "ClusterRole", "view", &["ServiceAccount:sa"]),
            role_binding("ns", "dangling", "Role", "missing", &["User:alice"]),
            role_binding("ns", "dangling2", "ClusterRole", "gone", &["User:alice"]),
        ]);
        let mut list = attributes("bob|viewers list configmaps ns");
        assert_eq!(
            rbac.authorize(&list),
            Decision::Allow(
                r#"RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to Group "viewers""#
                    .to_owned()
            )
        );
        list.user = user("system:serviceaccount:ns:sa", &[]);
        assert_eq!(
            rbac.authorize(&list),
            Decision::Allow(
                r#"RBAC: allowed by RoleBinding "rb/ns" of ClusterRole "view" to ServiceAccount "sa/ns""#
                    .to_owned()
            )
        );
        list.user = user("alice", &[]);
        assert_eq!(
            rbac.authorize(&list),
            Decision::NoOpinion(
                r#"RBAC: [role.rbac.authorization.k8s.io "missing" not found, clusterrole.rbac.authorization.k8s.io "gone" not found]"#
                    .to_owned()
            )
        );
        let (_, errors) = rbac.rules_for(&list.user, "ns", Wording::Registry);
        assert_eq!(
            aggregate(&errors),
            r#"[roles.rbac.authorization.k8s.io "missing" not found, clusterroles.rbac.authorization.k8s.io "gone" not found]"#
        );
        list.user = user("carol", &[]);
        assert_eq!(rbac.authorize(&list), Decision::NoOpinion(String::new()));
    }

    #[test]
    fn the_index_follows_updates_and_deletes() {
        let rbac = rbac_of(&[
            cluster_role("view", &[new_rule("get", "", "pods", "")]),
            role_binding("ns", "rb", "ClusterRole", "view", &["User:alice"]),
        ]);
        let get = attributes("alice get pods ns");
        assert!(rbac.authorize(&get).allowed());
        // The binding now names bob instead.
        let moved = role_binding("ns", "rb", "ClusterRole", "view", &["User:bob"]);
        let key = format!("{PREFIX}rolebindings/ns/rb");
        rbac.apply(key.as_bytes(), Some(moved.to_string().as_bytes()));
        assert!(!rbac.authorize(&get).allowed());
        let bob = attributes("bob get pods ns");
        assert!(rbac.authorize(&bob).allowed());
        // The role loses its rule.
        let emptied = cluster_role("view", &[]);
        let role_key = format!("{PREFIX}clusterroles/view");
        rbac.apply(role_key.as_bytes(), Some(emptied.to_string().as_bytes()));
        assert!(!rbac.authorize(&bob).allowed());
        rbac.apply(
            role_key.as_bytes(),
            Some(
                cluster_role("view", &[new_rule("get", "", "pods", "")])
                    .to_string()
                    .as_bytes(),
            ),
        );
        assert!(rbac.authorize(&bob).allowed());
        rbac.apply(key.as_bytes(), None);
        assert!(!rbac.authorize(&bob).allowed());
        let index = rbac.index.read();
        assert!(index.role_bindings.is_empty(), "{:?}", index.role_bindings);
    }

    #[test]
    fn a_request_looks_only_at_the_bindings_that_name_its_user() {
        let mut objects = vec![cluster_role("view", &[new_rule("get", "", "pods", "")])];
        for i in 0..1000 {
            objects.push(role_binding(
                "ns",
                &format!("rb{i}"),
                "ClusterRole",
                "view",
                &[&format!("User:user{i}")],
            ));
        }
        let rbac = rbac_of(&objects);
        let index = rbac.index.read();
        let bindings = &index.role_bindings["ns"];
        assert_eq!(bindings.candidates(&user("user7", &["g"])).len(), 1);
        assert!(bindings.candidates(&user("nobody", &[])).is_empty());
    }
}
