//! The cache an informer keeps: objects by key as `Arc<K>`, with a namespace index built in and
//! custom indexes. Many cheap-clone readers ([`Store`]), one writer (the reflector, through
//! [`crate::reflector::Writer`]). A read lock is held only to clone `Arc`s, never across an
//! `.await`; writes are short.
//!
//! Invariant: every index holds exactly the keys of the objects whose index function yields
//! that value; `objects` and every index change under the same write lock.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::sync::watch;

use crate::resource::{ObjectKey, Resource};
use crate::selector::Selector;

/// Name of the built-in namespace index (client-go's `cache.NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function: the index values of an object (several, or none).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// A change of the cache, as handlers see it.
#[derive(Debug, Clone)]
pub enum Change<K> {
    /// A new object.
    Added(Arc<K>),
    /// A changed object: old and new state.
    Updated(Arc<K>, Arc<K>),
    /// A removed object, in its last known state (for a deletion only seen through a relist,
    /// the state before the relist).
    Deleted(Arc<K>),
}

impl<K: Resource> Change<K> {
    /// The key of the changed object.
    pub fn key(&self) -> ObjectKey {
        match self {
            Change::Added(obj) | Change::Updated(_, obj) | Change::Deleted(obj) => obj.key(),
        }
    }
}

struct Index<K> {
    func: IndexFn<K>,
    /// Index value -> the objects with that value, by key. The objects themselves, not only
    /// their keys: a read by index then takes no second lookup per object in the cache
    /// (a ReplicaSet's sync reads its thousand pods this way on every change of one).
    values: HashMap<String, HashMap<ObjectKey, Arc<K>>>,
}

impl<K> Index<K> {
    fn insert(&mut self, key: &ObjectKey, obj: &Arc<K>) {
        for value in (self.func)(obj) {
            self.values
                .entry(value)
                .or_default()
                .insert(key.clone(), obj.clone());
        }
    }
    fn remove(&mut self, key: &ObjectKey, obj: &K) {
        for value in (self.func)(obj) {
            if let Some(keys) = self.values.get_mut(&value) {
                keys.remove(key);
                if keys.is_empty() {
                    self.values.remove(&value);
                }
            }
        }
    }
}

struct State<K> {
    /// Every cached object by key.
    objects: HashMap<ObjectKey, Arc<K>>,
    /// Indexes by name.
    indexes: HashMap<String, Index<K>>,
    /// Changes applied so far (inserts and removals): see [`Store::generation`].
    generation: u64,
}

impl<K: Resource> State<K> {
    fn insert(&mut self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        self.generation += 1;
        let old = self.objects.insert(key.clone(), obj.clone());
        for index in self.indexes.values_mut() {
            if let Some(old) = &old {
                index.remove(&key, old);
            }
            index.insert(&key, &obj);
        }
        old
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = self.objects.remove(key)?;
        self.generation += 1;
        for index in self.indexes.values_mut() {
            index.remove(key, &old);
        }
        Some(old)
    }
}

struct Shared<K> {
    /// The cache; written only by the reflector's writer.
    state: RwLock<State<K>>,
    /// `true` once the first complete list has been applied.
    synced: watch::Sender<bool>,
}

/// A read handle on the cache: get, list, by namespace, by label selector, by index.
pub struct Store<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            shared: self.shared.clone(),
        }
    }
}

impl<K: Resource> Default for Store<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource> Store<K> {
    /// An empty store with the namespace index.
    pub fn new() -> Self {
        let mut indexes = HashMap::new();
        let namespace: IndexFn<K> =
            Arc::new(|obj: &K| obj.meta().namespace.iter().cloned().collect());
        indexes.insert(
            NAMESPACE_INDEX.to_owned(),
            Index {
                func: namespace,
                values: HashMap::new(),
            },
        );
        Store {
            shared: Arc::new(Shared {
                state: RwLock::new(State {
                    objects: HashMap::new(),
                    indexes,
                    generation: 0,
                }),
                synced: watch::channel(false).0,
            }),
        }
    }

    /// Adds (or replaces) an index named `name`; existing objects are indexed at once.
    pub fn add_index(&self, name: &str, func: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) {
        let mut index = Index {
            func: Arc::new(func) as IndexFn<K>,
            values: HashMap::new(),
        };
        let mut state = self.shared.state.write();
        for (key, obj) in &state.objects {
            index.insert(key, obj);
        }
        state.indexes.insert(name.to_owned(), index);
    }

    /// The object with `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.shared.state.read().objects.get(key).cloned()
    }

    /// The object `name` in `namespace` (`None` for cluster-scoped).
    pub fn get_by(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        self.get(&ObjectKey::new(namespace, name))
    }

    /// Every cached object.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.shared.state.read().objects.values().cloned().collect()
    }

    /// Every cached object, and the [`generation`](Self::generation) they are of.
    pub fn list_with_generation(&self) -> (Vec<Arc<K>>, u64) {
        let state = self.shared.state.read();
        (state.objects.values().cloned().collect(), state.generation)
    }

    /// A number that changes whenever the cache does (an object added, changed or removed),
    /// and only then: what a reader that keeps something made from the whole cache (the
    /// scheduler's sorted nodes) compares to know it is stale. It moves with the cache itself,
    /// before any handler hears of the change.
    pub fn generation(&self) -> u64 {
        self.shared.state.read().generation
    }

    /// The number of cached objects.
    pub fn len(&self) -> usize {
        self.shared.state.read().objects.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects in `namespace`.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.by_index(NAMESPACE_INDEX, namespace)
    }

    /// The objects whose labels match `selector`, in `namespace` when given.
    pub fn list_selector(&self, namespace: Option<&str>, selector: &Selector) -> Vec<Arc<K>> {
        let candidates = match namespace {
            Some(ns) => self.list_namespace(ns),
            None => self.list(),
        };
        let empty = std::collections::BTreeMap::new();
        candidates
            .into_iter()
            .filter(|obj| selector.matches(obj.meta().labels.as_ref().unwrap_or(&empty)))
            .collect()
    }

    /// The objects whose index `index` yields `value` (empty for an unknown index).
    pub fn by_index(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        let state = self.shared.state.read();
        let Some(keys) = state.indexes.get(index).and_then(|i| i.values.get(value)) else {
            return Vec::new();
        };
        keys.values().cloned().collect()
    }

    /// The keys whose index `index` yields `value`.
    pub fn index_keys(&self, index: &str, value: &str) -> Vec<ObjectKey> {
        let state = self.shared.state.read();
        state
            .indexes
            .get(index)
            .and_then(|i| i.values.get(value))
            .map(|keys| keys.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether the first complete list has been applied.
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits until the first complete list has been applied.
    pub async fn wait_for_sync(&self) {
        let mut rx = self.shared.synced.subscribe();
        // The sender lives as long as this store, so the wait ends only by syncing.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    // The writer's operations (crate-internal: one writer, the reflector).

    /// Applies an added or changed object; the change, or `None` when the cache already held
    /// this resourceVersion.
    pub(crate) fn apply(&self, obj: K) -> Option<Change<K>> {
        let key = obj.key();
        let obj = Arc::new(obj);
        let mut state = self.shared.state.write();
        match state.objects.get(&key) {
            Some(old) if old.resource_version() == obj.resource_version() => None,
            _ => Some(match state.insert(key, obj.clone()) {
                Some(old) => Change::Updated(old, obj),
                None => Change::Added(obj),
            }),
        }
    }

    /// Removes an object; the change carries the deleted state as the server reported it.
    pub(crate) fn delete(&self, obj: K) -> Option<Change<K>> {
        let key = obj.key();
        let removed = self.shared.state.write().remove(&key);
        removed.map(|_| Change::Deleted(Arc::new(obj)))
    }

    /// Replaces the whole content at once with a relist's objects; the changes: additions,
    /// updates (resourceVersion changed) and deletions of vanished objects in their last
    /// known state. Marks the store synced.
    pub(crate) fn replace(&self, objects: Vec<K>) -> Vec<Change<K>> {
        let mut changes = Vec::new();
        {
            let mut state = self.shared.state.write();
            let mut seen: HashSet<ObjectKey> = HashSet::with_capacity(objects.len());
            for obj in objects {
                let key = obj.key();
                seen.insert(key.clone());
                match state.objects.get(&key) {
                    Some(old) if old.resource_version() == obj.resource_version() => {}
                    _ => {
                        let obj = Arc::new(obj);
                        changes.push(match state.insert(key, obj.clone()) {
                            Some(old) => Change::Updated(old, obj),
                            None => Change::Added(obj),
                        });
                    }
                }
            }
            let vanished: Vec<ObjectKey> = state
                .objects
                .keys()
                .filter(|key| !seen.contains(*key))
                .cloned()
                .collect();
            for key in vanished {
                if let Some(old) = state.remove(&key) {
                    changes.push(Change::Deleted(old));
                }
            }
        }
        self.shared.synced.send_replace(true);
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cm(ns: &str, name: &str, rv: &str, app: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                labels: Some([("app".to_owned(), app.to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn names(objs: Vec<Arc<ConfigMap>>) -> Vec<String> {
        let mut names: Vec<String> = objs.iter().map(|o| o.key().to_string()).collect();
        names.sort();
        names
    }

    #[test]
    fn indexes_follow_every_write() {
        let store = Store::new();
        store.add_index("app", |cm: &ConfigMap| {
            cm.metadata
                .labels
                .iter()
                .flatten()
                .filter(|(k, _)| *k == "app")
                .map(|(_, v)| v.clone())
                .collect()
        });
        assert!(matches!(
            store.apply(cm("a", "x", "1", "web")),
            Some(Change::Added(_))
        ));
        assert!(
            store.apply(cm("a", "x", "1", "web")).is_none(),
            "same resourceVersion"
        );
        store.apply(cm("b", "y", "2", "web"));
        assert!(matches!(
            store.apply(cm("a", "x", "3", "db")),
            Some(Change::Updated(..))
        ));
        assert_eq!(names(store.by_index("app", "web")), vec!["b/y"]);
        assert_eq!(names(store.by_index("app", "db")), vec!["a/x"]);
        assert_eq!(names(store.list_namespace("a")), vec!["a/x"]);
        let selector: Selector = "app=db".parse().expect("parses");
        assert_eq!(names(store.list_selector(None, &selector)), vec!["a/x"]);
        assert!(matches!(
            store.delete(cm("a", "x", "4", "db")),
            Some(Change::Deleted(_))
        ));
        assert!(store.by_index("app", "db").is_empty());
        assert!(store.index_keys(NAMESPACE_INDEX, "a").is_empty());
    }

    #[test]
    fn replace_reports_vanished_objects_in_their_last_known_state() {
        let store = Store::new();
        store.apply(cm("a", "keep", "1", "x"));
        store.apply(cm("a", "change", "2", "x"));
        store.apply(cm("a", "gone", "3", "last"));
        assert!(!store.has_synced());
        let changes = store.replace(vec![
            cm("a", "keep", "1", "x"),
            cm("a", "change", "5", "x"),
            cm("a", "new", "6", "x"),
        ]);
        assert!(store.has_synced());
        let mut summary: Vec<String> = changes
            .iter()
            .map(|c| match c {
                Change::Added(o) => format!("add {}", o.key()),
                Change::Updated(o, n) => format!(
                    "update {} {}->{}",
                    n.key(),
                    o.resource_version(),
                    n.resource_version()
                ),
                Change::Deleted(o) => format!(
                    "delete {} {}",
                    o.key(),
                    o.metadata.labels.as_ref().expect("labels")["app"]
                ),
            })
            .collect();
        summary.sort();
        assert_eq!(
            summary,
            vec!["add a/new", "delete a/gone last", "update a/change 2->5"]
        );
        assert_eq!(store.len(), 3);
    }
}
