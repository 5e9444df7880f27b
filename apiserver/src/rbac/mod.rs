//! The bootstrap RBAC policy (issue 16): every ClusterRole, ClusterRoleBinding, Role and
//! RoleBinding kube-apiserver 1.32 creates at startup, created before the server serves and
//! repaired at every start as upstream's `rbac/bootstrap-roles` post-start hook does
//! (`pkg/registry/rbac/rest/storage_rbac.go`, `EnsureRBACPolicy`): a missing object is
//! created; a stored one gets what it lacks (`reconcile`: a union that never removes) unless
//! it is annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`. Before that, the two
//! migrations of that hook run: a customised `admin`, `edit` or `view` from before aggregation
//! is copied to `system:aggregate-to-*`, and the subjects of `system:discovery` to
//! `system:public-info-viewer`, when those are missing.
//!
//! The policy is data: upstream's golden files of v1.32.10 (`data/bootstrap-rbac-1.32/`, with
//! 1.32's default feature gates), which `build.rs` turns into JSON. The rules of the
//! aggregated roles (`admin`, `edit`, `view`: `rules: null` in the policy) are filled by the
//! ClusterRole aggregation controller (`kubemock-controllers`), as upstream's are by
//! kube-controller-manager's.
//!
//! Cost: one range read per kind, then only the writes a reconcile needs, all at once (on a
//! durable store they share group commits). A restart over a complete policy writes nothing.

mod reconcile;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use kubemock_storage::{DeleteOutcome, Guard, KeyValue, RangeRequest, UpdateOutcome};
use serde_json::Value;
use tracing::{debug, error, warn};

use crate::handlers::create::create_system_object;
use crate::keys;
use crate::managedfields::{self, Writer};
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

#[cfg(test)]
use reconcile::AUTOUPDATE;

/// The field manager of the policy's writes (upstream writes them through its loopback
/// client, whose user agent is `kube-apiserver/...`).
const MANAGER: &str = "kube-apiserver";
/// Tries at one object before giving up on it: upstream re-runs a reconcile when the object
/// appeared or vanished under it (at most 3 runs for a role, 4 for a binding, which a
/// roleRef change deletes and creates again).
const ATTEMPTS: usize = 4;
/// `ClusterRolesToAggregate`: roles that became aggregated, and the role that takes their
/// rules (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`).
const CLUSTER_ROLES_TO_AGGREGATE: [(&str, &str); 3] = [
    ("admin", "system:aggregate-to-admin"),
    ("edit", "system:aggregate-to-edit"),
    ("view", "system:aggregate-to-view"),
];
/// `ClusterRoleBindingsToSplit`: a binding whose subjects went to a new one of the policy.
const CLUSTER_ROLE_BINDINGS_TO_SPLIT: [(&str, &str); 1] =
    [("system:discovery", "system:public-info-viewer")];

/// The policy's objects, by kind, each complete but for the server's metadata.
struct Policy {
    cluster_roles: Vec<Object>,
    cluster_role_bindings: Vec<Object>,
    roles: Vec<Object>,
    role_bindings: Vec<Object>,
}

/// The policy, read once from the JSON `build.rs` made of the golden files.
static POLICY: LazyLock<Policy> = LazyLock::new(|| {
    let text = include_str!(concat!(env!("OUT_DIR"), "/bootstrap-rbac.json"));
    let mut policy: serde_json::Map<String, Value> =
        serde_json::from_str(text).expect("build.rs writes the policy as a JSON object");
    let mut list = |name: &str| -> Vec<Object> {
        match policy.remove(name) {
            Some(Value::Array(items)) => items
                .into_iter()
                .filter_map(|item| match item {
                    Value::Object(object) => Some(object),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut cluster_roles = list("clusterRoles");
    cluster_roles.push(aggregated_metrics_reader());
    Policy {
        cluster_roles,
        cluster_role_bindings: list("clusterRoleBindings"),
        roles: list("roles"),
        role_bindings: list("roleBindings"),
    }
});

/// metrics-server's `system:aggregated-metrics-reader` (`manifests/base/rbac.yaml`), which
/// kubemock serves `metrics.k8s.io` with: read access to the metrics, aggregated into `view`,
/// `edit` and `admin` (so whoever may read pods may `kubectl top` them).
fn aggregated_metrics_reader() -> Object {
    let role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": "system:aggregated-metrics-reader",
            "labels": {
                "rbac.authorization.k8s.io/aggregate-to-view": "true",
                "rbac.authorization.k8s.io/aggregate-to-edit": "true",
                "rbac.authorization.k8s.io/aggregate-to-admin": "true",
            },
        },
        "rules": [{
            "apiGroups": [crate::registry::resource_metrics::GROUP],
            "resources": ["pods", "nodes"],
            "verbs": ["get", "list", "watch"],
        }],
    });
    match role {
        Value::Object(role) => role,
        _ => Object::new(),
    }
}

/// The four RBAC resources.
struct Kinds {
    cluster_roles: Arc<Resource>,
    cluster_role_bindings: Arc<Resource>,
    roles: Arc<Resource>,
    role_bindings: Arc<Resource>,
}

impl Kinds {
    fn of(state: &AppState) -> ApiResult<Kinds> {
        let lookup = |plural: &str| {
            state
                .registry()
                .lookup("rbac.authorization.k8s.io", "v1", plural)
                .ok_or_else(|| ApiError::internal(format!("{plural} are not registered")))
        };
        Ok(Kinds {
            cluster_roles: lookup("clusterroles")?,
            cluster_role_bindings: lookup("clusterrolebindings")?,
            roles: lookup("roles")?,
            role_bindings: lookup("rolebindings")?,
        })
    }
}

/// A stored object: its key-value (whose revision guards a write), its parsed form, and
/// whether that is the whole object (else only what reconciling reads: [`Reconciled`]).
type Stored = (KeyValue, Object, bool);
/// Stored objects of one kind by (namespace, name); the namespace is empty for cluster-scoped
/// ones.
type StoredKind = BTreeMap<(String, String), Stored>;

/// Whether an object is a role (rules) or a binding (subjects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Role,
    Binding,
}

/// What reconciling one object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Created,
    Updated,
    Recreated,
    Kept,
    Protected,
}

/// Creates or repairs every object of the policy (see the module doc). A store that fails to
/// answer the reads fails the start; an object that cannot be written is logged and the
/// others are still written, as upstream does.
pub(crate) async fn ensure(state: &AppState) -> ApiResult<()> {
    let kinds = Kinds::of(state)?;
    // The policy is parsed on a blocking thread (the first time) while the store is read.
    let policy = async {
        tokio::task::spawn_blocking(|| &*POLICY)
            .await
            .map_err(ApiError::internal)
    };
    let (policy, mut cluster_roles, mut cluster_role_bindings, roles, role_bindings) = futures_util::try_join!(
        policy,
        read_stored(state, &kinds.cluster_roles),
        read_stored(state, &kinds.cluster_role_bindings),
        read_stored(state, &kinds.roles),
        read_stored(state, &kinds.role_bindings),
    )?;
    prime_aggregated_cluster_roles(state, &kinds.cluster_roles, &mut cluster_roles).await?;
    prime_split_bindings(
        state,
        &kinds.cluster_role_bindings,
        &policy.cluster_role_bindings,
        &mut cluster_role_bindings,
    )
    .await?;
    let sets = [
        (
            &kinds.cluster_roles,
            Shape::Role,
            &policy.cluster_roles,
            &cluster_roles,
        ),
        (
            &kinds.cluster_role_bindings,
            Shape::Binding,
            &policy.cluster_role_bindings,
            &cluster_role_bindings,
        ),
        (&kinds.roles, Shape::Role, &policy.roles, &roles),
        (
            &kinds.role_bindings,
            Shape::Binding,
            &policy.role_bindings,
            &role_bindings,
        ),
    ];
    // All at once: a durable store flushes the writes of a round in one group commit.
    let reconciles = sets.iter().flat_map(|(resource, shape, expected, stored)| {
        expected.iter().map(move |object| async move {
            let namespace = object::meta_str(object, "namespace").unwrap_or("");
            let name = object::name_of(object);
            let found = stored.get(&(namespace.to_owned(), name.to_owned()));
            let result = reconcile_object(state, resource, *shape, object, found.cloned()).await;
            if let Err(err) = &result {
                error!(resource = %resource.plural, namespace, name, error = %err.message,
                       "unable to reconcile a bootstrap RBAC object");
            }
            result
        })
    });
    let outcomes = futures_util::future::join_all(reconciles).await;
    let count = |wanted: Outcome| {
        outcomes
            .iter()
            .filter(|o| o.as_ref().is_ok_and(|o| *o == wanted))
            .count()
    };
    debug!(
        created = count(Outcome::Created),
        updated = count(Outcome::Updated) + count(Outcome::Recreated),
        protected = count(Outcome::Protected),
        kept = count(Outcome::Kept),
        "bootstrap RBAC policy reconciled"
    );
    Ok(())
}

/// What reconciling reads of a stored RBAC object. A restart reads every object of the
/// policy, and most need nothing: parsing only these fields (skipping `managedFields`, about
/// half of each) keeps that cheap; an object that needs a write is parsed whole.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reconciled {
    metadata: ReconciledMetadata,
    #[serde(default)]
    rules: Value,
    #[serde(default)]
    aggregation_rule: Value,
    #[serde(default)]
    subjects: Value,
    #[serde(default)]
    role_ref: Value,
}

/// The metadata of a [`Reconciled`].
#[derive(serde::Deserialize)]
struct ReconciledMetadata {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    labels: Value,
    #[serde(default)]
    annotations: Value,
}

impl Reconciled {
    /// The fields as an object (null ones left out).
    fn into_object(self) -> Object {
        let mut object = Object::new();
        let mut metadata = serde_json::Map::new();
        metadata.insert("name".to_owned(), Value::String(self.metadata.name));
        if !self.metadata.namespace.is_empty() {
            metadata.insert(
                "namespace".to_owned(),
                Value::String(self.metadata.namespace),
            );
        }
        for (field, value) in [
            ("labels", self.metadata.labels),
            ("annotations", self.metadata.annotations),
        ] {
            if !value.is_null() {
                metadata.insert(field.to_owned(), value);
            }
        }
        object.insert("metadata".to_owned(), Value::Object(metadata));
        for (field, value) in [
            ("rules", self.rules),
            ("aggregationRule", self.aggregation_rule),
            ("subjects", self.subjects),
            ("roleRef", self.role_ref),
        ] {
            if !value.is_null() {
                object.insert(field.to_owned(), value);
            }
        }
        object
    }
}

/// Every stored object of `resource`, parsed for reconciling (not whole).
async fn read_stored(state: &AppState, resource: &Resource) -> ApiResult<StoredKind> {
    let listed = state
        .store()
        .range(RangeRequest::prefix(keys::resource_prefix(resource)))
        .await
        .map_err(ApiError::from_storage)?;
    let mut stored = BTreeMap::new();
    for kv in listed.items {
        let read: Reconciled = serde_json::from_slice(&kv.value)
            .map_err(|err| ApiError::internal(format!("stored value is not an object: {err}")))?;
        let object = read.into_object();
        let namespace = object::meta_str(&object, "namespace")
            .unwrap_or("")
            .to_owned();
        let name = object::name_of(&object).to_owned();
        stored.insert((namespace, name), (kv, object, false));
    }
    Ok(stored)
}

/// The stored object at `key`, parsed whole.
async fn read_one(state: &AppState, key: &str) -> ApiResult<Option<Stored>> {
    let Some(kv) = state.fetch(key).await? else {
        return Ok(None);
    };
    let object = object::parse_stored(&kv.value)?;
    Ok(Some((kv, object, true)))
}

fn decide(shape: Shape, existing: &Object, expected: &Object) -> reconcile::Decision {
    match shape {
        Shape::Role => reconcile::role(existing, expected),
        Shape::Binding => reconcile::binding(existing, expected),
    }
}

/// Reconciles one object of the policy with its stored copy (`stored`, as read at the
/// start), as upstream's `ReconcileRoleOptions.Run` / `ReconcileRoleBindingOptions.Run` with
/// `Confirm` and without removals: when a write finds the object changed, created or gone
/// under it, it is read again and reconciled again.
async fn reconcile_object(
    state: &AppState,
    resource: &Resource,
    shape: Shape,
    expected: &Object,
    stored: Option<Stored>,
) -> ApiResult<Outcome> {
    let namespace = object::meta_str(expected, "namespace").filter(|_| resource.namespaced);
    let name = object::name_of(expected);
    let key = keys::object_key(resource, namespace, name);
    let writer = Writer::server(MANAGER, resource);
    let mut current = stored;
    let mut recreating = false;
    for _ in 0..ATTEMPTS {
        let Some((kv, existing, whole)) = &current else {
            if create_system_object(state, resource, namespace, expected.clone(), &writer).await? {
                return Ok(if recreating {
                    Outcome::Recreated
                } else {
                    Outcome::Created
                });
            }
            current = read_one(state, &key).await?;
            continue;
        };
        let mut decision = decide(shape, existing, expected);
        let whole_object;
        let existing = match decision {
            reconcile::Decision::Update(_) | reconcile::Decision::Recreate(_) if !whole => {
                // A write keeps everything else of the object: decide on all of it.
                whole_object = object::parse_stored(&kv.value)?;
                decision = decide(shape, &whole_object, expected);
                &whole_object
            }
            _ => existing,
        };
        match decision {
            reconcile::Decision::Keep => return Ok(Outcome::Kept),
            reconcile::Decision::Protected => {
                warn!(resource = %resource.plural, namespace, name,
                      "skipped a reconcile-protected bootstrap RBAC object that lacks part of the policy");
                return Ok(Outcome::Protected);
            }
            reconcile::Decision::Update(mut updated) => {
                managedfields::record_update(resource, &writer, Some(existing), &mut updated);
                let bytes = object::to_stored(&updated)?;
                let outcome = state
                    .store()
                    .update(
                        key.clone().into(),
                        bytes,
                        Guard::ModRevision(kv.mod_revision),
                    )
                    .await
                    .map_err(ApiError::from_storage)?;
                if let UpdateOutcome::Updated { .. } = outcome {
                    return Ok(Outcome::Updated);
                }
            }
            reconcile::Decision::Recreate(_) => {
                let outcome = state
                    .store()
                    .delete(key.clone().into(), Guard::ModRevision(kv.mod_revision))
                    .await
                    .map_err(ApiError::from_storage)?;
                if !matches!(outcome, DeleteOutcome::Conflict(_)) {
                    recreating = true;
                    current = None;
                    continue;
                }
            }
        }
        current = read_one(state, &key).await?;
    }
    Err(ApiError::internal("exceeded maximum attempts"))
}

/// `primeAggregatedClusterRoles`: a stored `admin`, `edit` or `view` without an aggregation
/// rule (customised before the roles were aggregated) is copied to its `system:aggregate-to-*`
/// role when that is missing, so aggregation keeps its rules. As upstream, the first of them
/// found already aggregated ends the migration (upstream's order is a Go map's; this is the
/// table's).
async fn prime_aggregated_cluster_roles(
    state: &AppState,
    resource: &Resource,
    stored: &mut StoredKind,
) -> ApiResult<()> {
    for (old, new) in CLUSTER_ROLES_TO_AGGREGATE {
        let new_key = (String::new(), new.to_owned());
        if stored.contains_key(&new_key) {
            continue;
        }
        let Some((kv, existing, _)) = stored.get(&(String::new(), old.to_owned())) else {
            continue;
        };
        if existing
            .get("aggregationRule")
            .is_some_and(|rule| !rule.is_null())
        {
            return Ok(());
        }
        let mut copy = object::parse_stored(&kv.value)?;
        object::metadata_mut(&mut copy).insert("name".to_owned(), Value::String(new.to_owned()));
        debug!(from = old, to = new, "migrating a customised cluster role");
        let writer = Writer::server(MANAGER, resource);
        create_system_object(state, resource, None, copy, &writer).await?;
        let key = keys::object_key(resource, None, new);
        if let Some(created) = read_one(state, &key).await? {
            stored.insert(new_key, created);
        }
    }
    Ok(())
}

/// `primeSplitClusterRoleBindings`: when a binding of [`CLUSTER_ROLE_BINDINGS_TO_SPLIT`] is
/// stored and its successor is not, the successor is created from the policy's with the old
/// binding's subjects, labels and annotations.
async fn prime_split_bindings(
    state: &AppState,
    resource: &Resource,
    policy: &[Object],
    stored: &mut StoredKind,
) -> ApiResult<()> {
    for (old, new) in CLUSTER_ROLE_BINDINGS_TO_SPLIT {
        let new_key = (String::new(), new.to_owned());
        let Some((_, existing, _)) = stored.get(&(String::new(), old.to_owned())) else {
            continue;
        };
        if stored.contains_key(&new_key) {
            continue;
        }
        let Some(template) = policy.iter().find(|b| object::name_of(b) == new) else {
            continue;
        };
        let mut binding = template.clone();
        match existing.get("subjects") {
            Some(subjects) => binding.insert("subjects".to_owned(), subjects.clone()),
            None => binding.shift_remove("subjects"),
        };
        for field in ["labels", "annotations"] {
            let copied = existing.get("metadata").and_then(|m| m.get(field)).cloned();
            let metadata = object::metadata_mut(&mut binding);
            match copied {
                Some(value) => metadata.insert(field.to_owned(), value),
                None => metadata.shift_remove(field),
            };
        }
        debug!(from = old, to = new, "splitting a cluster role binding");
        let writer = Writer::server(MANAGER, resource);
        create_system_object(state, resource, None, binding, &writer).await?;
        let key = keys::object_key(resource, None, new);
        if let Some(created) = read_one(state, &key).await? {
            stored.insert(new_key, created);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_1_32s() {
        let policy = &*POLICY;
        // 31 cluster roles and 33 controller roles, and metrics-server's reader; 12 and 33
        // bindings; 7 and 7 in namespaces.
        assert_eq!(policy.cluster_roles.len(), 65);
        assert_eq!(policy.cluster_role_bindings.len(), 45);
        assert_eq!(policy.roles.len(), 7);
        assert_eq!(policy.role_bindings.len(), 7);
        let names: Vec<&str> = policy.cluster_roles.iter().map(object::name_of).collect();
        for name in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:basic-user",
            "system:discovery",
            "system:public-info-viewer",
            "system:controller:clusterrole-aggregation-controller",
        ] {
            assert!(names.contains(&name), "{name}");
        }
        let upstream = policy
            .cluster_roles
            .iter()
            .filter(|r| object::name_of(r) != "system:aggregated-metrics-reader");
        for object in upstream.chain(&policy.role_bindings) {
            let metadata = &object["metadata"];
            assert_eq!(
                metadata["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(metadata["annotations"][AUTOUPDATE], "true");
            assert!(metadata.get("creationTimestamp").is_none());
        }
        // Go's field order, not the golden files' sorted one.
        let admin = policy
            .cluster_roles
            .iter()
            .find(|r| object::name_of(r) == "admin")
            .expect("admin");
        let fields: Vec<&str> = admin.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            ["kind", "apiVersion", "metadata", "rules", "aggregationRule"]
        );
        assert!(admin["rules"].is_null());
    }
}
