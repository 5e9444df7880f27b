//! What is in use on each node, kept up to date from the pod informer's events instead of
//! recounted from every cached pod at each decision (issue 23: a decision must cost O(nodes),
//! not O(pods)). It is kube-scheduler's cache (upstream
//! `pkg/scheduler/backend/cache/cache.go`: `AddPod`, `UpdatePod`, `RemovePod`, `AssumePod`,
//! `ForgetPod`) reduced to what [`super::fit`] reads: per node, the summed requests of
//! [`super::fit::pod_requests`], `pods` included.
//!
//! A pod counts on a node when the cache shows it bound there and not finished (phase
//! `Succeeded` or `Failed`), or, while it shows it unbound, when this scheduler assumed it
//! there (a node chosen, the bind under way) or holds it there waiting for its claims;
//! assumed before waiting. A pod the cache shows bound is no longer assumed. A pod that goes
//! from the cache frees its room, and its assumption or wait is dropped. Each pod remembers
//! what it added, so every change subtracts exactly that and adds the new contribution: the
//! totals always equal a full recount (the unit tests check it on random event sequences).
//!
//! The totals are a table with a slot per node name ever counted on, not a map by name, so
//! that a decision scanning hundreds of nodes reads each node's usage at the slot its
//! [`fit::NodeInfo`] carries ([`NodeUsage::slot`]), without hashing names. A slot stays its
//! node's for the life of the scheduler: the table grows with the node names seen, not the pods.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::Pod;
use kubemock_client::{ObjectKey, Resource};

use super::fit;

use fit::Resources;

/// One pod as the cache last showed it, and what it adds to its node now.
#[derive(Debug)]
struct Tracked {
    /// `spec.nodeName`, when set.
    bound: Option<String>,
    /// Phase `Succeeded` or `Failed`.
    finished: bool,
    requests: Resources,
    /// The slot of the node its requests are added to now, if any.
    counted: Option<usize>,
}

impl Tracked {
    fn of(pod: &Pod) -> Self {
        Tracked {
            bound: pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
            finished: matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            ),
            requests: fit::pod_requests(pod),
            counted: None,
        }
    }
}

/// The per-node usage, the assumed pods and the pods waiting for their claims.
#[derive(Debug, Default)]
pub struct NodeUsage {
    pods: HashMap<ObjectKey, Tracked>,
    /// Pods bound (or being bound) by the scheduler that the cache does not show bound yet:
    /// pod -> node.
    assumed: HashMap<ObjectKey, String>,
    /// Pods whose node is chosen and whose claims are being bound there: pod -> node.
    waiting: HashMap<ObjectKey, String>,
    /// Node name -> its slot in `table`.
    slots: HashMap<String, usize>,
    /// Per slot, the summed requests of the pods counted on its node.
    table: Vec<Resources>,
    /// Pods the last decision found no room for (kube-scheduler's unschedulable pods): tried
    /// again when a pod that held room goes away ([`NodeUsage::remove`]).
    unschedulable: HashSet<ObjectKey>,
}

impl NodeUsage {
    /// Nothing in use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Per slot ([`NodeUsage::slot`]), what is in use on its node: what [`fit::choose`] takes.
    pub fn table(&self) -> &[Resources] {
        &self.table
    }

    /// The slot of `node` in [`NodeUsage::table`], given now if it has none (with nothing in
    /// use).
    pub fn slot(&mut self, node: &str) -> usize {
        slot_of(&mut self.slots, &mut self.table, node)
    }

    /// The cache shows `pod` (added or changed). Returns the pods to try again: the
    /// unschedulable ones when the change freed the room the pod held on a node (it finished,
    /// or it is bound elsewhere than it was assumed), as upstream requeues them on an assigned
    /// pod's update; none otherwise.
    pub fn apply(&mut self, pod: &Pod) -> Vec<ObjectKey> {
        let key = pod.key();
        let tracked = Tracked::of(pod);
        if tracked.bound.is_some() {
            self.assumed.remove(&key);
            self.unschedulable.remove(&key);
        }
        // Take back what the old version added; the new one adds its own.
        let mut held = None;
        if let Some(old) = self.pods.insert(key.clone(), tracked)
            && let Some(slot) = old.counted
        {
            add_at(&mut self.table, slot, &old.requests, -1);
            held = Some(slot);
        }
        self.recount(&key);
        let counted = self.pods.get(&key).and_then(|t| t.counted);
        if held.is_some() && held != counted {
            return self.unschedulable.drain().collect();
        }
        Vec::new()
    }

    /// The cache no longer has the pod `key`: its room is free, its assumption or wait gone.
    /// Returns the pods to try again: the unschedulable ones, when `key` held room on a node
    /// (upstream moves them on an assigned pod's deletion); none otherwise, so that deleting
    /// pending pods costs nothing per pending pod.
    pub fn remove(&mut self, key: &ObjectKey) -> Vec<ObjectKey> {
        self.assumed.remove(key);
        self.waiting.remove(key);
        self.unschedulable.remove(key);
        let Some(old) = self.pods.remove(key) else {
            return Vec::new();
        };
        let Some(slot) = old.counted else {
            return Vec::new();
        };
        add_at(&mut self.table, slot, &old.requests, -1);
        self.unschedulable.drain().collect()
    }

    /// The last decision found no room for `key`: [`NodeUsage::remove`] of a pod that held
    /// room hands it back. Marked in the same section as the decision, under the one lock, so
    /// a deletion either comes first (the decision saw the room) or hands it back.
    pub fn unschedulable(&mut self, key: ObjectKey) {
        self.unschedulable.insert(key);
    }

    /// Whether `key` is assumed on a node.
    pub fn is_assumed(&self, key: &ObjectKey) -> bool {
        self.assumed.contains_key(key)
    }

    /// The node `key` waits on for its claims, if any.
    pub fn waiting_on(&self, key: &ObjectKey) -> Option<&str> {
        self.waiting.get(key).map(String::as_str)
    }

    /// `pod` is assumed on `node` (chosen; its bind under way). `pod` is the state the
    /// decision read: it stands for the pod until the cache's own event for it arrives.
    pub fn assume(&mut self, pod: &Pod, node: String) {
        let key = self.track(pod);
        self.unschedulable.remove(&key);
        self.assumed.insert(key.clone(), node);
        self.recount(&key);
    }

    /// The bind of `key` failed: it is no longer assumed.
    pub fn forget(&mut self, key: &ObjectKey) {
        if self.assumed.remove(key).is_some() {
            self.recount(key);
        }
    }

    /// `pod` waits on `node` for its claims.
    pub fn wait(&mut self, pod: &Pod, node: String) {
        let key = self.track(pod);
        self.unschedulable.remove(&key);
        self.waiting.insert(key.clone(), node);
        self.recount(&key);
    }

    /// `key` no longer waits for its claims.
    pub fn stop_waiting(&mut self, key: &ObjectKey) {
        if self.waiting.remove(key).is_some() {
            self.recount(key);
        }
    }

    /// The assumed and waiting pods: what a sweep checks ([`NodeUsage::sweep`]).
    pub fn decided(&self) -> Vec<ObjectKey> {
        self.assumed
            .keys()
            .chain(self.waiting.keys())
            .cloned()
            .collect()
    }

    /// Drops, of `candidates` (from [`NodeUsage::decided`]), the assumed and waiting pods that
    /// `exists` says are gone (a pod created and deleted while its events were coalesced never
    /// shows as deleted here). Returns the pods to try again ([`NodeUsage::remove`]).
    pub fn sweep(
        &mut self,
        candidates: impl IntoIterator<Item = ObjectKey>,
        exists: impl Fn(&ObjectKey) -> bool,
    ) -> Vec<ObjectKey> {
        let mut retry = Vec::new();
        for key in candidates {
            let decided = self.assumed.contains_key(&key) || self.waiting.contains_key(&key);
            if decided && !exists(&key) {
                retry.extend(self.remove(&key));
            }
        }
        retry
    }

    /// Tracks `pod` from the state a decision read when the cache's event has not come yet.
    fn track(&mut self, pod: &Pod) -> ObjectKey {
        let key = pod.key();
        self.pods
            .entry(key.clone())
            .or_insert_with(|| Tracked::of(pod));
        key
    }

    /// Moves the requests of `key` to where they count now.
    fn recount(&mut self, key: &ObjectKey) {
        let Some(tracked) = self.pods.get_mut(key) else {
            return;
        };
        let node = match &tracked.bound {
            Some(node) => (!tracked.finished).then_some(node),
            None => self.assumed.get(key).or_else(|| self.waiting.get(key)),
        };
        let now = node.map(|node| slot_of(&mut self.slots, &mut self.table, node));
        if now == tracked.counted {
            return;
        }
        if let Some(slot) = tracked.counted {
            add_at(&mut self.table, slot, &tracked.requests, -1);
        }
        if let Some(slot) = now {
            add_at(&mut self.table, slot, &tracked.requests, 1);
        }
        tracked.counted = now;
    }

    /// Per node, what is in use, leaving out nodes with nothing: the table by node name.
    #[cfg(test)]
    fn used(&self) -> HashMap<String, Requests> {
        self.slots
            .iter()
            .filter_map(|(node, &slot)| Some((node.clone(), self.table.get(slot)?)))
            .map(|(node, used)| (node, used.iter().map(|(r, v)| (r.to_owned(), v)).collect()))
            .filter(|(_, r): &(String, Requests)| !r.is_empty())
            .collect()
    }
}

/// The slot of `node` in `table`, given now if it has none: [`NodeUsage::slot`], on the
/// fields it reads, so that a caller may hold other fields meanwhile.
fn slot_of(slots: &mut HashMap<String, usize>, table: &mut Vec<Resources>, node: &str) -> usize {
    if let Some(&slot) = slots.get(node) {
        return slot;
    }
    let slot = table.len();
    table.push(Resources::default());
    slots.insert(node.to_owned(), slot);
    slot
}

/// Adds `requests` times `sign` at `slot` of `table` (every slot given is in the table).
fn add_at(table: &mut [Resources], slot: usize, requests: &Resources, sign: i128) {
    if let Some(used) = table.get_mut(slot) {
        used.add_all(requests, sign);
    }
}

/// Amounts by resource name, none of them 0: how the tests compare usage.
#[cfg(test)]
type Requests = std::collections::BTreeMap<String, i128>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The recount the scheduler made at every decision before this cache (kept here as
    /// the reference): every cached pod bound and not finished on its node, every unbound
    /// one on its assumed, else waiting, node; assumed pods shown bound are dropped first.
    fn recount(
        pods: &HashMap<ObjectKey, Pod>,
        assumed: &mut HashMap<ObjectKey, String>,
        waiting: &HashMap<ObjectKey, String>,
    ) -> HashMap<String, Requests> {
        let mut used: HashMap<String, Requests> = HashMap::new();
        let mut add = |node: &str, pod: &Pod| {
            let entry = used.entry(node.to_owned()).or_default();
            for (resource, value) in fit::pod_requests(pod).iter() {
                *entry.entry(resource.to_owned()).or_default() += value;
            }
        };
        for (key, pod) in pods {
            let t = Tracked::of(pod);
            match &t.bound {
                Some(node) => {
                    assumed.remove(key);
                    if !t.finished {
                        add(node, pod);
                    }
                }
                None => {
                    if let Some(node) = assumed.get(key).or_else(|| waiting.get(key)) {
                        add(node, pod);
                    }
                }
            }
        }
        assumed.retain(|key, _| pods.contains_key(key));
        normalize(used)
    }

    fn normalize(used: HashMap<String, Requests>) -> HashMap<String, Requests> {
        used.into_iter()
            .map(|(node, r)| (node, r.into_iter().filter(|(_, v)| *v != 0).collect()))
            .filter(|(_, r): &(String, Requests)| !r.is_empty())
            .collect()
    }

    fn pod(name: &str, node: Option<&str>, phase: &str, cpu: &str, init_cpu: Option<&str>) -> Pod {
        let mut spec = json!({"containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]});
        if let Some(node) = node {
            spec["nodeName"] = json!(node);
        }
        if let Some(init) = init_cpu {
            spec["initContainers"] =
                json!([{"name": "i", "image": "x", "resources": {"requests": {"cpu": init}}}]);
        }
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": spec, "status": {"phase": phase}}))
        .expect("a pod")
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("default"), name)
    }

    #[test]
    fn bound_pods_count_until_finished_or_deleted() {
        let mut usage = NodeUsage::new();
        usage.apply(&pod("a", Some("n1"), "Running", "100m", None));
        usage.apply(&pod("b", Some("n1"), "Running", "250m", Some("500m")));
        assert_eq!(usage.used()["n1"]["cpu"], 600);
        assert_eq!(usage.used()["n1"]["pods"], 2);
        usage.apply(&pod("b", Some("n1"), "Succeeded", "250m", Some("500m")));
        assert_eq!(usage.used()["n1"]["cpu"], 100);
        usage.remove(&key("a"));
        assert!(usage.used().is_empty(), "{:?}", usage.used());
    }

    #[test]
    fn an_assumed_pod_counts_on_its_node_until_bound_and_moves_with_the_bind() {
        let mut usage = NodeUsage::new();
        let p = pod("a", None, "Pending", "100m", None);
        // Assumed before the cache's event for the pod arrived.
        usage.assume(&p, "n1".into());
        assert_eq!(usage.used()["n1"]["pods"], 1);
        usage.apply(&p);
        assert_eq!(usage.used()["n1"]["pods"], 1);
        assert!(usage.is_assumed(&key("a")));
        // Bound elsewhere (another scheduler won): counted there, no longer assumed.
        usage.apply(&pod("a", Some("n2"), "Pending", "100m", None));
        assert!(!usage.is_assumed(&key("a")));
        assert!(!usage.used().contains_key("n1"));
        assert_eq!(usage.used()["n2"]["cpu"], 100);
    }

    #[test]
    fn a_failed_bind_and_a_deleted_pod_free_the_room() {
        let mut usage = NodeUsage::new();
        let p = pod("a", None, "Pending", "100m", None);
        usage.apply(&p);
        usage.assume(&p, "n1".into());
        usage.forget(&key("a"));
        assert!(usage.used().is_empty());
        usage.wait(&p, "n2".into());
        assert_eq!(usage.waiting_on(&key("a")), Some("n2"));
        assert_eq!(usage.used()["n2"]["pods"], 1);
        usage.remove(&key("a"));
        assert_eq!(usage.waiting_on(&key("a")), None);
        assert!(usage.used().is_empty());
        // Assumed, then gone from the cache without an event here: the sweep drops it.
        usage.assume(&p, "n1".into());
        usage.sweep(usage.decided(), |_| false);
        assert!(!usage.is_assumed(&key("a")));
        assert!(usage.used().is_empty());
    }

    #[test]
    fn unschedulable_pods_come_back_when_a_pod_holding_room_goes() {
        let mut usage = NodeUsage::new();
        let bound = pod("a", Some("n1"), "Running", "100m", None);
        let pending = pod("p", None, "Pending", "100m", None);
        let waiting = pod("q", None, "Pending", "100m", None);
        for p in [&bound, &pending, &waiting] {
            usage.apply(p);
        }
        usage.unschedulable(key("p"));
        usage.unschedulable(key("q"));
        // A pending pod held no room: its deletion frees nothing, and hands nothing back.
        assert!(usage.remove(&key("q")).is_empty());
        // A bound pod held room: the unschedulable pods are handed back, once.
        assert_eq!(usage.remove(&key("a")), vec![key("p")]);
        assert!(usage.remove(&key("p")).is_empty());
        // Assumed (the decision found room) is no longer unschedulable; nor is a pod that
        // the cache shows bound.
        let b = pod("b", None, "Pending", "100m", None);
        let c = pod("c", None, "Pending", "100m", None);
        usage.apply(&b);
        usage.apply(&c);
        usage.unschedulable(key("b"));
        usage.assume(&b, "n1".into());
        usage.unschedulable(key("c"));
        usage.apply(&pod("c", Some("n2"), "Pending", "100m", None));
        // b is assumed on n1 and goes from the cache unseen: the sweep frees its room and
        // hands back what is unschedulable (nothing now).
        assert!(usage.sweep(usage.decided(), |_| false).is_empty());
        assert!(!usage.used().contains_key("n1"));
        usage.unschedulable(key("d"));
        assert_eq!(usage.remove(&key("c")), vec![key("d")]);
    }

    #[test]
    fn unschedulable_pods_come_back_when_a_pod_finishes_or_moves() {
        let mut usage = NodeUsage::new();
        assert!(
            usage
                .apply(&pod("a", Some("n1"), "Running", "1", None))
                .is_empty()
        );
        usage.unschedulable(key("p"));
        // Still running there: nothing freed.
        assert!(
            usage
                .apply(&pod("a", Some("n1"), "Running", "1", None))
                .is_empty()
        );
        // Finished: its room is free, the unschedulable pods come back.
        assert_eq!(
            usage.apply(&pod("a", Some("n1"), "Succeeded", "1", None)),
            vec![key("p")]
        );
        assert!(usage.used().is_empty());
        // Assumed on n1, then shown bound to n2: n1's room is free.
        let b = pod("b", None, "Pending", "1", None);
        usage.apply(&b);
        usage.assume(&b, "n1".into());
        usage.unschedulable(key("q"));
        assert_eq!(
            usage.apply(&pod("b", Some("n2"), "Pending", "1", None)),
            vec![key("q")]
        );
        // Assumed on n1 and shown bound there: nothing freed.
        let c = pod("c", None, "Pending", "1", None);
        usage.apply(&c);
        usage.assume(&c, "n1".into());
        usage.unschedulable(key("r"));
        assert!(
            usage
                .apply(&pod("c", Some("n1"), "Pending", "1", None))
                .is_empty()
        );
    }

    #[test]
    fn random_event_sequences_equal_a_full_recount() {
        let nodes = ["n1", "n2", "n3"];
        let phases = ["Pending", "Running", "Succeeded", "Failed"];
        let cpus = ["0", "100m", "250m", "1"];
        for seed in 0..200u64 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut usage = NodeUsage::new();
            let mut pods: HashMap<ObjectKey, Pod> = HashMap::new();
            let mut assumed: HashMap<ObjectKey, String> = HashMap::new();
            let mut waiting: HashMap<ObjectKey, String> = HashMap::new();
            for step in 0..120 {
                let name = format!("p{}", rng.usize(..12));
                let k = key(&name);
                let node = nodes[rng.usize(..nodes.len())];
                match rng.u8(..8) {
                    // The cache shows a new version of the pod.
                    0..=2 => {
                        let bound = rng.bool().then_some(node);
                        let init = rng.bool().then(|| cpus[rng.usize(..cpus.len())]);
                        let p = pod(
                            &name,
                            bound,
                            phases[rng.usize(..phases.len())],
                            cpus[rng.usize(..cpus.len())],
                            init,
                        );
                        usage.apply(&p);
                        if bound.is_some() {
                            assumed.remove(&k);
                        }
                        pods.insert(k.clone(), p);
                    }
                    // The pod is deleted.
                    3 => {
                        usage.remove(&k);
                        pods.remove(&k);
                        assumed.remove(&k);
                        waiting.remove(&k);
                    }
                    // A decision assumes a pending pod the cache has (or its event is late).
                    4 => {
                        let p = pods
                            .get(&k)
                            .cloned()
                            .unwrap_or_else(|| pod(&name, None, "Pending", "100m", None));
                        if Tracked::of(&p).bound.is_none() {
                            usage.assume(&p, node.into());
                            assumed.insert(k.clone(), node.into());
                            if !pods.contains_key(&k) {
                                // The late event, as the informer delivers it.
                                usage.apply(&p);
                                pods.insert(k.clone(), p);
                            }
                        }
                    }
                    5 => {
                        usage.forget(&k);
                        assumed.remove(&k);
                    }
                    6 => {
                        if let Some(p) = pods.get(&k) {
                            usage.wait(p, node.into());
                            waiting.insert(k.clone(), node.into());
                        }
                    }
                    _ => {
                        usage.stop_waiting(&k);
                        waiting.remove(&k);
                    }
                }
                let expected = recount(&pods, &mut assumed, &waiting);
                assert_eq!(
                    usage.used(),
                    expected,
                    "seed {seed}, step {step}: incremental usage differs from a recount"
                );
                for k in pods.keys() {
                    assert_eq!(usage.is_assumed(k), assumed.contains_key(k), "seed {seed}");
                }
            }
        }
    }
}
