//! Faults on demand (`testing.kubemock.dev/v1` `faults`): a test makes the next update of a
//! Deployment fail with a 409, drops every watch, or slows a verb down, through the API,
//! and checks that its controller recovers. No real cluster offers that.
//!
//! `Fault` objects live in the store like any object (so they survive a durable restart and
//! a reset takes them away with the rest of a test's objects). This module keeps an
//! in-memory index of them, loaded at startup and followed by a watch of their keys, as
//! `webhook` and `authz::rbac` follow theirs; a write of a Fault answers once the index has
//! caught up with it ([`Faults::synced`]), so the very next request sees it.
//!
//! The request path (`fault_layer`) reads the index as one `Arc` snapshot: with no Fault it costs
//! one atomic load; with Faults it costs a lookup by resource and a few string comparisons
//! per Fault for that resource (Faults for other resources are never looked at). No lock is
//! held across an await: the snapshot is an `Arc`.
//!
//! A Fault's counters (`status.matched`, `status.applied`) are atomics in memory, written to
//! its `status` at most every [`FLUSH_INTERVAL`] by one task (a batch, not one write per
//! request), and read back at startup, so a `count` survives a restart up to the last flush.
//!
//! A fault never makes the server lose an acknowledged write: it answers instead of running
//! the request (nothing was written), delays it, or ends a watch (clients resume). The one
//! exception is `failAfterCommit`, whose whole point is a write that committed and was
//! answered as failed.
//!
//! # Layout
//! - `spec`: a Fault object checked and compiled (selectors, globs, durations, answers).
//! - the pipeline's step that matches requests and acts is `fault_layer` (beside this module,
//!   since it needs the server's state, which holds this index).

pub(crate) mod spec;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kubemock_storage::{Guard, Kv, Revision, UpdateOutcome};
use parking_lot::RwLock;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::status::ApiResult;
use spec::Compiled;

/// The storage key prefix of every Fault.
pub(crate) const PREFIX: &str = "/registry/testing.kubemock.dev/faults/";

/// How often changed counters are written to the Faults' `status`: often enough for a test
/// polling `kubectl get faults`, rare enough that a busy fault costs a few writes a second.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(200);

/// A Fault's counters, shared by the index's successive compilations of the same object
/// (same uid), so that a status write or a spec change does not reset them.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests that matched while the fault was in its time window and not exhausted.
    matched: AtomicU64,
    /// Requests it acted on.
    applied: AtomicU64,
    /// When it last acted, in seconds since the epoch (0: never).
    last_applied: AtomicU64,
    /// Whether the stored status may differ from what the counters say: set when they move
    /// (and when a stored Fault's status does not match), cleared by the flush that writes
    /// it. The flush reads and parses only these Faults, not every Fault every round.
    dirty: AtomicBool,
}

/// One stored Fault, compiled.
#[derive(Debug)]
pub(crate) struct Fault {
    pub(crate) name: String,
    uid: String,
    pub(crate) compiled: Compiled,
    counters: Arc<Counters>,
}

impl Fault {
    /// True when its `count` is used up.
    fn exhausted(&self) -> bool {
        self.compiled
            .schedule
            .count
            .is_some_and(|count| self.counters.applied.load(Ordering::Acquire) >= count)
    }

    /// Decides whether the fault acts on a request that matched it, counting the match:
    /// inside its time window and not exhausted, past its first `after` matches, on the
    /// probability roll of this match, within its `count`.
    pub(crate) fn fires(&self, now_nanos: i128) -> bool {
        let schedule = &self.compiled.schedule;
        if schedule.start.is_some_and(|start| now_nanos < start)
            || schedule.expiry.is_some_and(|expiry| now_nanos >= expiry)
            || self.exhausted()
        {
            return false;
        }
        let number = self.counters.matched.fetch_add(1, Ordering::AcqRel) + 1;
        self.counters.dirty.store(true, Ordering::Release);
        if number <= schedule.after {
            return false;
        }
        if let Some(probability) = schedule.probability
            && roll(schedule.seed, number) >= probability
        {
            return false;
        }
        let applied = match schedule.count {
            Some(count) => self
                .counters
                .applied
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |applied| {
                    (applied < count).then_some(applied + 1)
                })
                .is_ok(),
            None => {
                self.counters.applied.fetch_add(1, Ordering::AcqRel);
                true
            }
        };
        if applied {
            // On the server's clock, as the fault's time window.
            let seconds = u64::try_from(crate::meta::clock().unix_seconds()).unwrap_or(0);
            self.counters.last_applied.store(seconds, Ordering::Release);
        }
        applied
    }

    /// The `status` its counters amount to.
    fn status(&self) -> Value {
        let last = self.counters.last_applied.load(Ordering::Acquire);
        let mut status = json!({
            "matched": self.counters.matched.load(Ordering::Acquire),
            "applied": self.counters.applied.load(Ordering::Acquire),
            "exhausted": self.exhausted(),
            "action": self.compiled.summary(),
        });
        if last > 0 {
            status["lastAppliedTime"] = json!(kubemock_apimachinery::time::rfc3339(
                i64::try_from(last).unwrap_or(i64::MAX)
            ));
        }
        status
    }
}

/// The `number`th roll of the generator seeded `seed`, in [0, 1): splitmix64 of the two, so
/// that the same seed and the same order of requests give the same decisions.
fn roll(seed: u64, number: u64) -> f64 {
    let mut z = seed
        .wrapping_add(number.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The top 53 bits, as a fraction (exact in an f64).
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The Faults in force, as the request path reads them: indexed by the resource, the
/// namespace and the first character of the name they name, so that a request looks only at
/// Faults that could match it (100 Faults for other namespaces or names cost a request a few
/// hash lookups, not 100 checks).
#[derive(Debug, Default)]
pub(crate) struct Current {
    /// Per resource (plural) that some fault names, the faults that may match it: those
    /// naming it and those naming no resource.
    by_resource: HashMap<String, ByNamespace>,
    /// The faults naming no resource.
    any_resource: ByNamespace,
}

/// One resource's candidates, by namespace.
#[derive(Debug, Default)]
struct ByNamespace {
    /// Per namespace that some of them name, those naming it and those naming none.
    by_namespace: HashMap<String, ByName>,
    /// Those naming no namespace (the only ones that can match a request in another
    /// namespace, or a cluster-scoped one).
    any_namespace: ByName,
}

impl ByNamespace {
    /// The index of `faults` (already those of one resource and of any resource).
    fn of(faults: &[&Arc<Fault>]) -> ByNamespace {
        let namespace_of = |fault: &Fault| fault.compiled.matcher.namespace.clone();
        let mut index = ByNamespace {
            any_namespace: ByName::of(faults.iter().copied().filter(|f| namespace_of(f).is_none())),
            ..ByNamespace::default()
        };
        for namespace in faults.iter().filter_map(|f| namespace_of(f)) {
            if index.by_namespace.contains_key(&namespace) {
                continue;
            }
            let list = ByName::of(
                faults
                    .iter()
                    .copied()
                    .filter(|f| namespace_of(f).is_none_or(|ns| ns == namespace)),
            );
            index.by_namespace.insert(namespace, list);
        }
        index
    }

    fn candidates(&self, namespace: Option<&str>, name: Option<&str>) -> &[Arc<Fault>] {
        namespace
            .and_then(|ns| self.by_namespace.get(ns))
            .unwrap_or(&self.any_namespace)
            .candidates(name)
    }
}

/// One resource's and namespace's candidates, by the name a request names: a Fault with a
/// name glob cannot match a request without a name (a create, a list), nor a name that does
/// not start with the glob's first literal character.
#[derive(Debug, Default)]
struct ByName {
    /// For requests without a name: the Faults with no name glob, in name order.
    nameless: Vec<Arc<Fault>>,
    /// Per first literal character of some glob: those globs' Faults, the Faults whose glob
    /// starts with a wildcard, and those with no glob, in name order.
    by_first: HashMap<char, Vec<Arc<Fault>>>,
    /// For other names: the Faults whose glob starts with a wildcard and those with no
    /// glob, in name order.
    other: Vec<Arc<Fault>>,
}

impl ByName {
    fn of<'a>(faults: impl Iterator<Item = &'a Arc<Fault>>) -> ByName {
        let mut sorted: Vec<Arc<Fault>> = faults.cloned().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        // `None`: no glob; `Some(None)`: a glob starting with a wildcard.
        let first = |fault: &Fault| fault.compiled.matcher.name.as_ref().map(|g| g.first_char());
        let mut index = ByName {
            nameless: sorted
                .iter()
                .filter(|f| first(f).is_none())
                .cloned()
                .collect(),
            other: sorted
                .iter()
                .filter(|f| matches!(first(f), None | Some(None)))
                .cloned()
                .collect(),
            ..ByName::default()
        };
        for c in sorted.iter().filter_map(|f| first(f).flatten()) {
            if index.by_first.contains_key(&c) {
                continue;
            }
            let list = sorted
                .iter()
                .filter(|f| matches!(first(f), None | Some(None)) || first(f) == Some(Some(c)))
                .cloned()
                .collect();
            index.by_first.insert(c, list);
        }
        index
    }

    fn candidates(&self, name: Option<&str>) -> &[Arc<Fault>] {
        match name {
            None => &self.nameless,
            Some(name) => name
                .chars()
                .next()
                .and_then(|c| self.by_first.get(&c))
                .unwrap_or(&self.other),
        }
    }
}

impl Current {
    /// The faults that may match a request for `resource` in `namespace` (`None`: a
    /// cluster-scoped request, or a list across namespaces) naming `name`, in name order.
    pub(crate) fn candidates(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> &[Arc<Fault>] {
        self.by_resource
            .get(resource)
            .unwrap_or(&self.any_resource)
            .candidates(namespace, name)
    }

    fn build(stored: &BTreeMap<Vec<u8>, Arc<Fault>>) -> Current {
        let any: Vec<&Arc<Fault>> = stored
            .values()
            .filter(|f| f.compiled.matcher.resource.is_none())
            .collect();
        let mut named: HashMap<&str, Vec<&Arc<Fault>>> = HashMap::new();
        for fault in stored.values() {
            if let Some(resource) = &fault.compiled.matcher.resource {
                named.entry(resource).or_default().push(fault);
            }
        }
        Current {
            by_resource: named
                .into_iter()
                .map(|(resource, mut faults)| {
                    // Each resource's lists also hold the faults for any resource.
                    faults.extend(any.iter().copied());
                    (resource.to_owned(), ByNamespace::of(&faults))
                })
                .collect(),
            any_resource: ByNamespace::of(&any),
        }
    }
}

/// The index of Faults.
#[derive(Debug)]
pub(crate) struct Faults {
    /// Each stored Fault, by storage key: written by [`start`]'s task only, held for one
    /// event's span, never across `.await`.
    stored: RwLock<BTreeMap<Vec<u8>, Arc<Fault>>>,
    /// What `stored` amounts to, rebuilt on each change: a request clones the `Arc`.
    current: RwLock<Arc<Current>>,
    /// Whether any Fault is stored: the request path's first (and, usually, only) check.
    any: AtomicBool,
    /// How far it has caught up with the store (`store_index`).
    progress: crate::store_index::Progress,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            stored: RwLock::new(BTreeMap::new()),
            current: RwLock::new(Arc::new(Current::default())),
            any: AtomicBool::new(false),
            progress: crate::store_index::Progress::default(),
        }
    }
}

impl Faults {
    /// Whether any Fault is stored.
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// The Faults in force now.
    pub(crate) fn current(&self) -> Arc<Current> {
        Arc::clone(&self.current.read())
    }

    /// Applies a stored Fault (a put) or its removal.
    fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        let object = value.and_then(|v| serde_json::from_slice::<Value>(v).ok());
        let mut stored = self.stored.write();
        match object.as_ref().and_then(Value::as_object) {
            Some(object) => match spec::compile(object) {
                Ok(compiled) => {
                    let metadata = object.get("metadata");
                    let text = |field: &str| {
                        metadata
                            .and_then(|m| m.get(field))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    };
                    let (name, uid) = (text("name"), text("uid"));
                    let counters = match stored.get(key) {
                        Some(old) if old.uid == uid => Arc::clone(&old.counters),
                        _ => Arc::new(counters_of(object.get("status"))),
                    };
                    let fault = Fault {
                        name,
                        uid,
                        compiled,
                        counters,
                    };
                    // A new Fault, a changed spec (its action summary), or counters ahead of
                    // what is stored: the flush has a status to write.
                    if object.get("status") != Some(&fault.status()) {
                        fault.counters.dirty.store(true, Ordering::Release);
                    }
                    stored.insert(key.to_vec(), Arc::new(fault));
                }
                Err(errors) => {
                    // Admission refuses such an object: only a store written by another build
                    // can hold one.
                    warn!(key = %String::from_utf8_lossy(key), errors = errors.len(), "a stored Fault does not compile; ignored");
                    stored.remove(key);
                }
            },
            None => {
                stored.remove(key);
            }
        }
        let current = Current::build(&stored);
        self.any.store(!stored.is_empty(), Ordering::Release);
        *self.current.write() = Arc::new(current);
    }

    /// Waits (a bounded time) until the index reflects every change up to `revision`.
    pub(crate) async fn synced(&self, revision: Revision) {
        self.progress
            .synced(revision, <Faults as crate::store_index::StoreIndex>::NAME)
            .await;
    }

    /// The Faults whose stored status may differ from their counters, with their keys.
    fn to_flush(&self) -> Vec<(Vec<u8>, Arc<Fault>)> {
        self.stored
            .read()
            .iter()
            .filter(|(_, fault)| fault.counters.dirty.load(Ordering::Acquire))
            .map(|(key, fault)| (key.clone(), Arc::clone(fault)))
            .collect()
    }
}

/// Counters as a stored status left them (after a restart).
fn counters_of(status: Option<&Value>) -> Counters {
    let number = |field: &str| {
        status
            .and_then(|s| s.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let last = status
        .and_then(|s| s.get("lastAppliedTime"))
        .and_then(Value::as_str)
        .and_then(kubemock_apimachinery::time::parse_rfc3339)
        .map_or(0, |nanos| {
            u64::try_from(nanos / kubemock_apimachinery::time::NANOS_PER_SECOND).unwrap_or(0)
        });
    Counters {
        matched: AtomicU64::new(number("matched")),
        applied: AtomicU64::new(number("applied")),
        last_applied: AtomicU64::new(last),
        dirty: AtomicBool::new(false),
    }
}

/// Loads the index from the store, then follows it on a task of `tasks` until `shutdown`
/// (`store_index`), and flushes the Faults' status counters on another.
pub(crate) async fn start(
    faults: &Arc<Faults>,
    store: &Arc<dyn Kv>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> ApiResult<()> {
    crate::store_index::start(faults, store, shutdown, tasks).await?;
    tasks.spawn(flush_loop(
        Arc::clone(store),
        shutdown.clone(),
        Arc::clone(faults),
    ));
    Ok(())
}

impl crate::store_index::StoreIndex for Faults {
    const NAME: &'static str = "fault index";
    const PREFIX: &'static str = PREFIX;

    fn replace(&self, items: &[kubemock_storage::KeyValue]) {
        // Counters of Faults still stored are kept (same key and uid); the others go.
        let keys: Vec<Vec<u8>> = self.stored.read().keys().cloned().collect();
        for key in keys {
            if !items.iter().any(|kv| kv.key.as_ref() == key.as_slice()) {
                Faults::apply(self, &key, None);
            }
        }
        for kv in items {
            Faults::apply(self, &kv.key, Some(&kv.value));
        }
    }

    fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        Faults::apply(self, key, value);
    }

    fn progress(&self) -> &crate::store_index::Progress {
        &self.progress
    }
}

/// Every [`FLUSH_INTERVAL`], writes the status of each Fault whose counters moved; at
/// shutdown, once more.
async fn flush_loop(store: Arc<dyn Kv>, shutdown: CancellationToken, faults: Arc<Faults>) {
    let mut ticker = tokio::time::interval(FLUSH_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => {
                flush(store.as_ref(), &faults).await;
                return;
            }
            _ = ticker.tick() => flush(store.as_ref(), &faults).await,
        }
    }
}

/// Writes the status of each Fault whose stored status may not be what its counters say
/// (marked dirty). A write that loses to a concurrent one is tried again at the next round.
pub(crate) async fn flush(store: &dyn Kv, faults: &Faults) {
    for (key, fault) in faults.to_flush() {
        // Cleared before the status is read, so that a move of the counters from now on
        // marks it again; set again below when the write does not happen.
        let dirty = &fault.counters.dirty;
        dirty.store(false, Ordering::Release);
        let Ok(found) = store.get(&key, None).await else {
            dirty.store(true, Ordering::Release);
            return;
        };
        let Some(kv) = found.kv else { continue };
        let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(&kv.value) else {
            continue;
        };
        let uid = object
            .get("metadata")
            .and_then(|m| m.get("uid"))
            .and_then(Value::as_str);
        if uid != Some(fault.uid.as_str()) {
            continue;
        }
        let status = fault.status();
        if object.get("status") == Some(&status) {
            continue;
        }
        object.insert("status".to_owned(), status);
        let Ok(bytes) = crate::object::to_stored(&object) else {
            continue;
        };
        match store
            .update(kv.key.clone(), bytes, Guard::ModRevision(kv.mod_revision))
            .await
        {
            Ok(UpdateOutcome::Updated { .. }) => {}
            Ok(_) => {
                dirty.store(true, Ordering::Release);
                debug!(fault = %fault.name, "fault status write lost a race; next round");
            }
            Err(err) => {
                dirty.store(true, Ordering::Release);
                debug!(error = %err, "fault status write failed");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolls_are_reproducible_and_spread() {
        let first: Vec<f64> = (1..=1000).map(|n| roll(42, n)).collect();
        let again: Vec<f64> = (1..=1000).map(|n| roll(42, n)).collect();
        assert_eq!(first, again);
        assert!(first.iter().all(|r| (0.0..1.0).contains(r)));
        let below_half = first.iter().filter(|r| **r < 0.5).count();
        assert!((400..600).contains(&below_half), "{below_half}");
        assert_ne!(first, (1..=1000).map(|n| roll(43, n)).collect::<Vec<_>>());
    }

    fn fault(spec: Value) -> Fault {
        let object = json!({"metadata": {"name": "f", "uid": "u"}, "spec": spec});
        Fault {
            name: "f".to_owned(),
            uid: "u".to_owned(),
            compiled: spec::compile(object.as_object().unwrap()).unwrap(),
            counters: Arc::default(),
        }
    }

    #[test]
    fn a_fault_skips_its_first_matches_then_acts_count_times() {
        let f = fault(json!({"action": {"compact": true}, "after": 2, "count": 3}));
        let fired: Vec<bool> = (0..7).map(|_| f.fires(0)).collect();
        assert_eq!(fired, [false, false, true, true, true, false, false]);
        assert!(f.exhausted());
        // An exhausted fault no longer counts matches.
        assert_eq!(f.status()["matched"], 5);
        assert_eq!(f.status()["applied"], 3);
        assert_eq!(f.status()["exhausted"], true);
    }

    #[test]
    fn a_fault_acts_only_inside_its_time_window() {
        let f = fault(json!({"action": {"compact": true},
            "startTime": "2030-01-01T00:00:00Z", "expiryTime": "2030-01-02T00:00:00Z"}));
        let at = |text: &str| kubemock_apimachinery::time::parse_rfc3339(text).unwrap();
        assert!(!f.fires(at("2029-12-31T23:59:59Z")));
        assert!(f.fires(at("2030-01-01T12:00:00Z")));
        assert!(!f.fires(at("2030-01-02T00:00:00Z")));
        assert_eq!(f.status()["matched"], 1);
    }

    #[test]
    fn a_seeded_probability_gives_the_same_decisions_every_time() {
        let decisions = || {
            let f = fault(json!({"action": {"compact": true}, "probability": 0.3, "seed": 9}));
            (0..200).map(|_| f.fires(0)).collect::<Vec<bool>>()
        };
        let first = decisions();
        assert_eq!(first, decisions());
        let fired = first.iter().filter(|d| **d).count();
        assert!((30..90).contains(&fired), "{fired}");
    }

    #[test]
    fn candidates_are_the_faults_for_the_resource_and_namespace_or_any_in_name_order() {
        let index = Faults::default();
        let put = |name: &str, spec: Value| {
            let object = json!({"metadata": {"name": name, "uid": name}, "spec": spec});
            index.apply(
                format!("{PREFIX}{name}").as_bytes(),
                Some(&serde_json::to_vec(&object).unwrap()),
            );
        };
        put(
            "b",
            json!({"match": {"resource": "pods"}, "action": {"compact": true}}),
        );
        put("a", json!({"action": {"compact": true}}));
        put(
            "c",
            json!({"match": {"resource": "configmaps"}, "action": {"compact": true}}),
        );
        let current = index.current();
        let names = |resource: &str| -> Vec<String> {
            current
                .candidates(resource, Some("default"), None)
                .iter()
                .map(|f| f.name.clone())
                .collect()
        };
        assert_eq!(names("pods"), ["a", "b"]);
        assert_eq!(names("configmaps"), ["a", "c"]);
        assert_eq!(names("secrets"), ["a"]);
        assert!(index.any());
        // By namespace: a fault naming one is a candidate there only; the others everywhere.
        put(
            "d",
            json!({"match": {"resource": "pods", "namespace": "team"}, "action": {"compact": true}}),
        );
        put(
            "e",
            json!({"match": {"namespace": "team"}, "action": {"compact": true}}),
        );
        let current = index.current();
        let names_in = |resource: &str, namespace: Option<&str>| -> Vec<String> {
            current
                .candidates(resource, namespace, None)
                .iter()
                .map(|f| f.name.clone())
                .collect()
        };
        assert_eq!(names_in("pods", Some("team")), ["a", "b", "d", "e"]);
        assert_eq!(names_in("pods", Some("default")), ["a", "b"]);
        assert_eq!(names_in("pods", None), ["a", "b"]);
        assert_eq!(names_in("secrets", Some("team")), ["a", "e"]);
        assert_eq!(names_in("configmaps", Some("team")), ["a", "c", "e"]);
        // By name: a glob's Fault only for names starting with its first literal character,
        // a glob starting with a wildcard for every name; none for a request without a name.
        put(
            "f",
            json!({"match": {"resource": "pods", "name": "web-*"}, "action": {"compact": true}}),
        );
        put(
            "g",
            json!({"match": {"resource": "pods", "name": "*-db"}, "action": {"compact": true}}),
        );
        let current = index.current();
        let named = |name: Option<&str>| -> Vec<String> {
            current
                .candidates("pods", Some("default"), name)
                .iter()
                .map(|f| f.name.clone())
                .collect()
        };
        assert_eq!(named(Some("web-1")), ["a", "b", "f", "g"]);
        assert_eq!(named(Some("api-db")), ["a", "b", "g"]);
        assert_eq!(named(Some("")), ["a", "b", "g"]);
        assert_eq!(named(None), ["a", "b"]);
        for name in ["d", "e", "f", "g"] {
            index.apply(format!("{PREFIX}{name}").as_bytes(), None);
        }
        // Counters survive a recompilation of the same object.
        current.candidates("pods", None, None)[1].fires(0);
        put(
            "b",
            json!({"match": {"resource": "pods"}, "action": {"compact": true}, "count": 5}),
        );
        assert_eq!(
            index.current().candidates("pods", None, None)[1].status()["matched"],
            1
        );
        for name in ["a", "b", "c"] {
            index.apply(format!("{PREFIX}{name}").as_bytes(), None);
        }
        assert!(!index.any());
    }
}
