//! The ownerReference graph: every object the garbage collector's informers see, by uid,
//! with the uids of its owners, and the reverse index (owner uid -> dependent uids). Owners
//! need not be known: a reference to an unseen uid is kept, and resolved (and found dangling
//! or not) when the dependent is processed. Maintained by the informers' handlers, read by
//! the workers; no I/O.
//!
//! Worked example (the tests use it): a Deployment `d` (uid D) owns ReplicaSet `r` (uid R,
//! blockOwnerDeletion) which owns pods `p1`, `p2` (uids P1, P2). `dependents(D)` = [r
//! (blocking)], `dependents(R)` = [p1, p2]; when `r` changes owner to X, D has no
//! dependents; removing `r` leaves `dependents(R)` (the pods still point at R) until they
//! change.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubemock_client::{ApiResource, ObjectKey};

/// Where an object is: its resource and key. The garbage collector's work item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Its resource (the served, preferred version).
    pub resource: ApiResourceKey,
    /// Namespace and name.
    pub key: ObjectKey,
}

/// An [`ApiResource`] that can be ordered (for sorted output).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiResourceKey {
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural.
    pub plural: String,
    /// Kind.
    pub kind: String,
    /// Namespaced.
    pub namespaced: bool,
}

impl ApiResourceKey {
    /// The key of `resource`.
    pub fn of(resource: &ApiResource) -> Self {
        ApiResourceKey {
            group: resource.group.clone(),
            version: resource.version.clone(),
            plural: resource.plural.clone(),
            kind: resource.kind.clone(),
            namespaced: resource.namespaced,
        }
    }

    /// Back to an [`ApiResource`].
    pub fn to_resource(&self) -> ApiResource {
        ApiResource::new(
            &self.group,
            &self.version,
            &self.kind,
            &self.plural,
            self.namespaced,
        )
    }
}

/// One ownerReference as the graph keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerLink {
    /// The owner's uid.
    pub uid: String,
    /// Whether the owner's foreground deletion waits for this dependent.
    pub block_owner_deletion: bool,
}

impl OwnerLink {
    /// The links of an object's ownerReferences.
    pub fn of(references: &[OwnerReference]) -> Vec<OwnerLink> {
        references
            .iter()
            .map(|r| OwnerLink {
                uid: r.uid.clone(),
                block_owner_deletion: r.block_owner_deletion == Some(true),
            })
            .collect()
    }
}

#[derive(Debug, Clone)]
struct Node {
    object: ObjectRef,
    owners: Vec<OwnerLink>,
}

/// The graph. Guarded by the garbage collector's mutex; handlers write, workers read.
#[derive(Debug, Default)]
pub struct Graph {
    /// Every observed object by uid.
    nodes: HashMap<String, Node>,
    /// Owner uid -> uids of the observed objects referencing it.
    dependents: HashMap<String, BTreeSet<String>>,
}

impl Graph {
    /// Records (or updates) the object `uid` at `object` with `owners`; returns the owner
    /// links it had before (empty when new).
    pub fn upsert(
        &mut self,
        uid: &str,
        object: ObjectRef,
        owners: Vec<OwnerLink>,
    ) -> Vec<OwnerLink> {
        let previous = self.nodes.remove(uid).map(|n| n.owners).unwrap_or_default();
        for link in &previous {
            self.unlink(&link.uid, uid);
        }
        for link in &owners {
            self.dependents
                .entry(link.uid.clone())
                .or_default()
                .insert(uid.to_owned());
        }
        self.nodes.insert(uid.to_owned(), Node { object, owners });
        previous
    }

    /// Forgets the object `uid`; returns its owner links. Its dependents keep pointing at
    /// it (they still reference its uid).
    pub fn remove(&mut self, uid: &str) -> Vec<OwnerLink> {
        let Some(node) = self.nodes.remove(uid) else {
            return Vec::new();
        };
        for link in &node.owners {
            self.unlink(&link.uid, uid);
        }
        node.owners
    }

    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// Where the object `uid` is, if observed.
    pub fn object(&self, uid: &str) -> Option<&ObjectRef> {
        self.nodes.get(uid).map(|n| &n.object)
    }

    /// The observed dependents of `owner`, each with whether it blocks the owner's
    /// foreground deletion; sorted.
    pub fn dependents(&self, owner: &str) -> Vec<(ObjectRef, bool)> {
        let mut out: Vec<(ObjectRef, bool)> = self
            .dependents
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|uid| self.nodes.get(uid))
            .map(|node| {
                let blocking = node
                    .owners
                    .iter()
                    .any(|l| l.uid == owner && l.block_owner_deletion);
                (node.object.clone(), blocking)
            })
            .collect();
        out.sort();
        out
    }

    /// Whether `owner` has observed dependents.
    pub fn has_dependents(&self, owner: &str) -> bool {
        self.dependents.get(owner).is_some_and(|s| !s.is_empty())
    }

    /// The objects observed (for tests and metrics).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing is observed.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            resource: ApiResourceKey {
                group: "apps".into(),
                version: "v1".into(),
                plural: format!("{}s", kind.to_lowercase()),
                kind: kind.into(),
                namespaced: true,
            },
            key: ObjectKey::new(Some("ns"), name),
        }
    }

    fn link(uid: &str, block: bool) -> Vec<OwnerLink> {
        vec![OwnerLink {
            uid: uid.into(),
            block_owner_deletion: block,
        }]
    }

    #[test]
    fn the_worked_example_tracks_dependents_through_changes_and_removals() {
        let mut graph = Graph::default();
        graph.upsert("D", at("Deployment", "d"), Vec::new());
        graph.upsert("R", at("ReplicaSet", "r"), link("D", true));
        graph.upsert("P1", at("Pod", "p1"), link("R", false));
        graph.upsert("P2", at("Pod", "p2"), link("R", false));
        assert_eq!(graph.dependents("D"), vec![(at("ReplicaSet", "r"), true)]);
        assert_eq!(
            graph.dependents("R"),
            vec![(at("Pod", "p1"), false), (at("Pod", "p2"), false)]
        );
        // r changes owner: D loses its dependent.
        let before = graph.upsert("R", at("ReplicaSet", "r"), link("X", false));
        assert_eq!(before, link("D", true));
        assert!(!graph.has_dependents("D"));
        assert_eq!(graph.dependents("X"), vec![(at("ReplicaSet", "r"), false)]);
        // r removed: the pods still point at R.
        assert_eq!(graph.remove("R"), link("X", false));
        assert!(graph.object("R").is_none());
        assert!(!graph.has_dependents("X"));
        assert_eq!(graph.dependents("R").len(), 2);
        graph.remove("P1");
        graph.remove("P2");
        assert!(!graph.has_dependents("R"));
        assert_eq!(graph.len(), 1);
    }
}
