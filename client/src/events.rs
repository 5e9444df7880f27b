//! An event recorder writing core/v1 Events (docs/api-behaviour.md#events) as client-go's
//! `record.EventRecorder` does, with its `EventCorrelator` (client-go
//! `tools/record/events_cache.go`, default settings):
//! - **Repeats:** an identical repeat (same object, type, reason and message) becomes a
//!   strategic-merge PATCH raising `count` and `lastTimestamp`; if that event has vanished
//!   (404) it is created anew.
//! - **Aggregation:** once an object has had 10 different messages for one type and reason
//!   within 10 minutes, further ones go to one event whose message is
//!   `(combined from similar events): <latest message>`, counted like a repeat.
//! - **Spam filter:** a component may record 25 events about one object at once, then one
//!   every 5 minutes; the rest are dropped. A ReplicaSet creating 10,000 pods so records 25
//!   events about itself, as kube-controller-manager does, not 10,000.
//!
//! Failures are logged, never returned to the reconcile that records the event, since
//! events are best effort.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use parking_lot::Mutex;

use crate::api::Api;
use crate::request::{Patch, PatchParams, PostParams};
use crate::resource::{ApiResource, Resource};
use crate::transport::Client;

/// Entries each of the correlator's caches keeps (client-go's LRUs hold 4096).
pub const AGGREGATION_CACHE: usize = 4096;

/// Different messages of one type and reason about one object before the next goes to an
/// aggregate event (client-go `defaultAggregateMaxEvents`).
const AGGREGATE_MAX_EVENTS: usize = 10;

/// Seconds after the last similar event when the next one starts a fresh count
/// (`defaultAggregateIntervalInSeconds`).
const AGGREGATE_INTERVAL_SECONDS: i64 = 600;

/// The aggregate event's message: this, then the latest message
/// (`EventAggregatorByReasonMessageFunc`).
const COMBINED: &str = "(combined from similar events): ";

/// Events about one object recorded at once (`defaultSpamBurst`).
const SPAM_BURST: f64 = 25.0;

/// Seconds per further event about one object once the burst is spent (`defaultSpamQPS`,
/// one every 5 minutes).
const SPAM_REFILL_SECONDS: f64 = 300.0;

/// Names tried after the first for one event whose time-based name is taken (a virtual
/// clock standing still); past them the AlreadyExists error is reported.
const NAME_ATTEMPTS: i64 = 16;

/// Type of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Normal operation.
    Normal,
    /// Something may be wrong.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// A reference to `obj` (of `resource`) for `involvedObject`.
pub fn object_reference<K: Resource>(obj: &K, resource: &ApiResource) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(resource.api_version.clone()),
        kind: Some(resource.kind.clone()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// The object an event is about: what the spam filter counts by (client-go `getSpamKey`;
/// the source is the recorder's own).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Subject {
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    api_version: String,
}

impl Subject {
    fn of(reference: &ObjectReference) -> Self {
        let field = |f: &Option<String>| f.clone().unwrap_or_default();
        Subject {
            kind: field(&reference.kind),
            namespace: field(&reference.namespace),
            name: field(&reference.name),
            uid: field(&reference.uid),
            api_version: field(&reference.api_version),
        }
    }
}

/// Similar events: one object, type and reason (`EventAggregatorByReasonFunc`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    subject: Subject,
    kind_type: &'static str,
    reason: String,
}

/// What identifies a repeat (`getEventKey`): the group, the field path and the message;
/// `None` for the group's aggregate event, whatever its latest message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    group: GroupKey,
    field_path: String,
    message: Option<String>,
}

/// The event written for a key: its name, namespace and count.
#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    namespace: String,
    count: i32,
}

/// The messages seen lately in one group, and when the last came.
#[derive(Debug)]
struct Group {
    messages: HashSet<String>,
    last: Timestamp,
}

/// One object's spam budget: tokens left as of `at`.
#[derive(Debug)]
struct Budget {
    tokens: f64,
    at: Timestamp,
}

/// What the correlator remembers (client-go's `EventCorrelator`): the events written, the
/// groups of similar events, and each object's budget.
#[derive(Debug, Default)]
struct Correlator {
    written: Lru<EventKey, Recorded>,
    groups: Lru<GroupKey, Group>,
    budgets: Lru<Subject, Budget>,
}

/// Where the correlator sends an event.
#[derive(Debug)]
struct Decision {
    key: EventKey,
    /// The message to write: the event's own, or the aggregate's.
    message: String,
    /// The event already written for `key`, which a repeat patches.
    previous: Option<Recorded>,
}

impl Correlator {
    /// Upstream `EventCorrelate`: aggregates, looks up the written event, then spends the
    /// object's budget; `None` when the budget is spent and the event is dropped.
    fn correlate(
        &mut self,
        group: GroupKey,
        field_path: &str,
        message: &str,
        now: Timestamp,
    ) -> Option<Decision> {
        let (key, message) = self.aggregate(group, field_path, message, now);
        if !self.spend(&key.group.subject, now) {
            // Upstream has already counted the occurrence in its event log: the next write
            // of this event says how often it happened.
            if let Some(recorded) = self.written.get_mut(&key) {
                recorded.count = recorded.count.saturating_add(1);
            }
            return None;
        }
        let previous = self.written.get_mut(&key).cloned();
        Some(Decision {
            key,
            message,
            previous,
        })
    }

    /// Upstream `EventAggregate`: the key and message to write the event under.
    fn aggregate(
        &mut self,
        group: GroupKey,
        field_path: &str,
        message: &str,
        now: Timestamp,
    ) -> (EventKey, String) {
        let seen = self.groups.get_or_insert_with(group.clone(), || Group {
            messages: HashSet::new(),
            last: now,
        });
        if now.duration_since(seen.last) > SignedDuration::from_secs(AGGREGATE_INTERVAL_SECONDS) {
            seen.messages.clear();
        }
        seen.messages.insert(message.to_owned());
        seen.last = now;
        if seen.messages.len() < AGGREGATE_MAX_EVENTS {
            let key = EventKey {
                group,
                field_path: field_path.to_owned(),
                message: Some(message.to_owned()),
            };
            return (key, message.to_owned());
        }
        // Upstream drops any one message, so that the set stays below the threshold: the
        // next new message goes to the aggregate too, a repeat of a remembered one does not.
        if let Some(any) = seen.messages.iter().next().cloned() {
            seen.messages.remove(&any);
        }
        let key = EventKey {
            group,
            field_path: String::new(),
            message: None,
        };
        (key, format!("{COMBINED}{message}"))
    }

    /// Takes one event from `subject`'s budget (a token bucket, full at first); false when
    /// it is spent.
    fn spend(&mut self, subject: &Subject, now: Timestamp) -> bool {
        let budget = self.budgets.get_or_insert_with(subject.clone(), || Budget {
            tokens: SPAM_BURST,
            at: now,
        });
        let elapsed = now.duration_since(budget.at).as_secs_f64().max(0.0);
        budget.tokens = (budget.tokens + elapsed / SPAM_REFILL_SECONDS).min(SPAM_BURST);
        budget.at = budget.at.max(now);
        if budget.tokens < 1.0 {
            return false;
        }
        budget.tokens -= 1.0;
        true
    }
}

/// A map that keeps its [`AGGREGATION_CACHE`] most recently used keys (client-go's caches
/// are LRUs). Each use appends the key with a new stamp to `order`; older appends of a key
/// are stale and skipped when the front is evicted, and dropped when `order` grows past
/// four times the capacity. The map and `order` share each key: an event's key is a handful
/// of strings, and a copy of it per use was the largest part of the recorders' memory (the
/// 10,000-pod benchmark's kubelets kept about 1.4 KB per pod in those copies).
#[derive(Debug)]
struct Lru<K, V> {
    map: HashMap<Arc<K>, (V, u64)>,
    order: VecDeque<(Arc<K>, u64)>,
    stamp: u64,
    capacity: usize,
}

impl<K, V> Default for Lru<K, V> {
    fn default() -> Self {
        Lru {
            map: HashMap::new(),
            order: VecDeque::new(),
            stamp: 0,
            capacity: AGGREGATION_CACHE,
        }
    }
}

impl<K: Eq + Hash, V> Lru<K, V> {
    /// The value of `key`, now the most recently used.
    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let shared = Arc::clone(self.map.get_key_value(key)?.0);
        let stamp = self.touch(shared);
        let entry = self.map.get_mut(key)?;
        entry.1 = stamp;
        Some(&mut entry.0)
    }

    /// The value of `key`, made by `make` if there is none (evicting the least recently used
    /// key when full), now the most recently used.
    fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.make_room(&key);
        let shared = self.shared(key);
        let stamp = self.touch(Arc::clone(&shared));
        let entry = self.map.entry(shared).or_insert_with(|| (make(), stamp));
        entry.1 = stamp;
        &mut entry.0
    }

    /// Sets the value of `key`, now the most recently used.
    fn insert(&mut self, key: K, value: V) {
        self.make_room(&key);
        let shared = self.shared(key);
        let stamp = self.touch(Arc::clone(&shared));
        self.map.insert(shared, (value, stamp));
    }

    /// The map's own copy of `key` if it has one, else `key` made shareable.
    fn shared(&self, key: K) -> Arc<K> {
        match self.map.get_key_value(&key) {
            Some((shared, _)) => Arc::clone(shared),
            None => Arc::new(key),
        }
    }

    /// Evicts the least recently used key if the map is full and `key` is not in it.
    fn make_room(&mut self, key: &K) {
        if self.map.contains_key(key) || self.map.len() < self.capacity {
            return;
        }
        while let Some((oldest, stamp)) = self.order.pop_front() {
            if self.map.get(&oldest).is_some_and(|(_, s)| *s == stamp) {
                self.map.remove(&oldest);
                return;
            }
        }
    }

    /// Records a use of `key`: its new stamp.
    fn touch(&mut self, key: Arc<K>) -> u64 {
        self.stamp += 1;
        self.order.push_back((key, self.stamp));
        if self.order.len() > 4 * self.capacity.max(1) {
            let map = &self.map;
            self.order
                .retain(|(k, s)| map.get(k).is_some_and(|(_, live)| live == s));
        }
        self.stamp
    }
}

/// Records events from one component.
pub struct Recorder {
    client: Client,
    source: EventSource,
    /// What the correlator remembers. Locked only between awaits.
    correlator: Mutex<Correlator>,
    /// Where `firstTimestamp` and `lastTimestamp` come from, and the time the aggregation
    /// interval and the spam budget count in.
    clock: kubemock_apimachinery::clock::Clock,
}

impl Recorder {
    /// A recorder for `component` (the event's `source.component`).
    pub fn new(client: Client, component: &str) -> Self {
        Recorder {
            client,
            source: EventSource {
                component: Some(component.to_owned()),
                host: None,
            },
            correlator: Mutex::new(Correlator::default()),
            clock: kubemock_apimachinery::clock::Clock::system(),
        }
    }

    /// Stamps events with `clock`'s time (the system clock by default).
    #[must_use]
    pub fn with_clock(mut self, clock: kubemock_apimachinery::clock::Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Records an event about `reference`. Best effort: errors are logged.
    pub async fn publish(
        &self,
        reference: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        if let Err(err) = self.try_publish(reference, kind, reason, message).await {
            // The event's message too: it is often the failure being reported (client-go's
            // broadcaster logs a rejected event whole).
            tracing::warn!(error = %err, reason, event_message = %message, "recording an event failed");
        }
    }

    /// Records an event about `reference` and reports failures: the name of the event written
    /// (created or patched), or `None` when the spam filter dropped it. Of the server's answer
    /// to a create only the name is read ([`Api::create_named`]).
    pub async fn try_publish(
        &self,
        reference: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> crate::Result<Option<String>> {
        let group = GroupKey {
            subject: Subject::of(reference),
            kind_type: kind.as_str(),
            reason: reason.to_owned(),
        };
        let at = self.clock.now();
        let field_path = reference.field_path.as_deref().unwrap_or_default();
        let decision = self
            .correlator
            .lock()
            .correlate(group, field_path, message, at);
        let Some(Decision {
            key,
            message,
            previous,
        }) = decision
        else {
            tracing::debug!(reason, object = ?reference.name, "event dropped: the object's event budget is spent");
            return Ok(None);
        };
        let now = Time(at);
        if let Some(previous) = previous {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &previous.namespace);
            let count = previous.count.saturating_add(1);
            let patch = Patch::Strategic(serde_json::json!({
                "count": count,
                "lastTimestamp": now,
                "message": message,
            }));
            match api
                .patch(&previous.name, &PatchParams::default(), &patch)
                .await
            {
                Ok(_) => {
                    let name = previous.name.clone();
                    self.remember(key, Recorded { count, ..previous });
                    return Ok(Some(name));
                }
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err),
            }
        }
        let namespace = reference
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let nanos = i64::try_from(at.as_nanosecond()).unwrap_or_default();
        let object_name = reference.name.clone().unwrap_or_default();
        let mut event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{object_name}.{nanos:x}")),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: reference.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message),
            type_: Some(kind.as_str().to_owned()),
            source: Some(self.source.clone()),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            reporting_component: Some(self.source.component.clone().unwrap_or_default()),
            reporting_instance: Some(String::new()),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        // The name is the object's and the time's, as client-go names events. On a virtual
        // clock that stands still, two events about one object share the time: the later
        // takes the next free nanosecond instead of being refused as AlreadyExists.
        let mut attempt = 0;
        let name = loop {
            match api.create_named(&PostParams::default(), &event).await {
                Err(err) if err.is_already_exists() && attempt < NAME_ATTEMPTS => {
                    attempt += 1;
                    let bumped = nanos.saturating_add(attempt);
                    event.metadata.name = Some(format!("{object_name}.{bumped:x}"));
                }
                result => break result?,
            }
        };
        self.remember(
            key,
            Recorded {
                name: name.clone(),
                namespace,
                count: 1,
            },
        );
        Ok(Some(name))
    }

    fn remember(&self, key: EventKey, recorded: Recorded) {
        self.correlator.lock().written.insert(key, recorded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("a valid time")
    }

    fn group(name: &str, reason: &str) -> GroupKey {
        GroupKey {
            subject: Subject {
                kind: "ReplicaSet".into(),
                namespace: "default".into(),
                name: name.into(),
                uid: format!("uid-{name}"),
                api_version: "apps/v1".into(),
            },
            kind_type: "Normal",
            reason: reason.into(),
        }
    }

    /// What the correlator decides for each message in turn, at `when`: the message to
    /// write, or `None` when dropped.
    fn decide(
        correlator: &mut Correlator,
        name: &str,
        messages: impl IntoIterator<Item = String>,
        when: Timestamp,
    ) -> Vec<Option<String>> {
        messages
            .into_iter()
            .map(|m| {
                correlator
                    .correlate(group(name, "SuccessfulCreate"), "", &m, when)
                    .map(|d| d.message)
            })
            .collect()
    }

    #[test]
    fn the_tenth_different_message_goes_to_the_aggregate() {
        let mut correlator = Correlator::default();
        let messages = (0..12).map(|i| format!("Created pod: p{i}"));
        let decided = decide(&mut correlator, "rs", messages, at(0));
        for (i, message) in decided.iter().enumerate().take(9) {
            assert_eq!(
                message.as_deref(),
                Some(format!("Created pod: p{i}").as_str())
            );
        }
        assert_eq!(
            decided[9].as_deref(),
            Some("(combined from similar events): Created pod: p9")
        );
        assert_eq!(
            decided[11].as_deref(),
            Some("(combined from similar events): Created pod: p11")
        );
        // Another reason, or another object, is another group.
        let other = correlator.correlate(group("rs", "SuccessfulDelete"), "", "Deleted", at(0));
        assert_eq!(other.map(|d| d.message).as_deref(), Some("Deleted"));
        let other = correlator.correlate(group("rs2", "SuccessfulCreate"), "", "x", at(0));
        assert_eq!(other.map(|d| d.message).as_deref(), Some("x"));
    }

    #[test]
    fn similar_events_count_afresh_after_ten_quiet_minutes() {
        let mut correlator = Correlator::default();
        decide(
            &mut correlator,
            "rs",
            (0..9).map(|i| format!("m{i}")),
            at(0),
        );
        // 601 s later the nine are forgotten: a tenth message stands alone. (The budget has
        // refilled by two meanwhile.)
        let decided = decide(&mut correlator, "rs", ["m9".to_owned()], at(601));
        assert_eq!(decided, vec![Some("m9".to_owned())]);
    }

    #[test]
    fn an_object_gets_25_events_then_one_per_five_minutes() {
        let mut correlator = Correlator::default();
        // One message repeated: no aggregation, only the budget.
        let same = std::iter::repeat_n("Pulled".to_owned(), 30);
        let decided = decide(&mut correlator, "rs", same, at(0));
        assert_eq!(decided.iter().filter(|d| d.is_some()).count(), 25);
        assert!(decided[25..].iter().all(Option::is_none));
        assert_eq!(
            decide(&mut correlator, "rs", ["Pulled".into()], at(299)),
            vec![None]
        );
        assert_eq!(
            decide(&mut correlator, "rs", ["Pulled".into()], at(300)),
            vec![Some("Pulled".to_owned())]
        );
        // Other objects have their own budget.
        assert!(decide(&mut correlator, "other", ["Pulled".into()], at(300))[0].is_some());
    }

    #[test]
    fn a_dropped_repeat_still_counts_toward_the_next_write() {
        let mut correlator = Correlator::default();
        let key = |message: &str| EventKey {
            group: group("rs", "SuccessfulCreate"),
            field_path: String::new(),
            message: Some(message.to_owned()),
        };
        for _ in 0..25 {
            let decision = correlator
                .correlate(group("rs", "SuccessfulCreate"), "", "same", at(0))
                .expect("within the budget");
            let count = decision.previous.map_or(1, |p| p.count + 1);
            // What `Recorder::remember` keeps after the write.
            correlator
                .written
                .get_or_insert_with(key("same"), || Recorded {
                    name: "rs.1".into(),
                    namespace: "default".into(),
                    count: 0,
                })
                .count = count;
        }
        assert!(
            correlator
                .correlate(group("rs", "SuccessfulCreate"), "", "same", at(0))
                .is_none()
        );
        let next = correlator
            .correlate(group("rs", "SuccessfulCreate"), "", "same", at(300))
            .expect("refilled");
        // 25 written, one dropped: the patch will say 27.
        assert_eq!(next.previous.map(|p| p.count + 1), Some(27));
    }

    #[test]
    fn the_cache_forgets_the_least_recently_used_key() {
        let mut lru: Lru<&str, i32> = Lru {
            capacity: 2,
            ..Lru::default()
        };
        *lru.get_or_insert_with("a", || 1) = 1;
        *lru.get_or_insert_with("b", || 2) = 2;
        assert_eq!(lru.get_mut(&"a").copied(), Some(1)); // a is now the most recent
        lru.get_or_insert_with("c", || 3);
        assert!(lru.get_mut(&"b").is_none(), "b was the least recently used");
        assert_eq!(lru.get_mut(&"a").copied(), Some(1));
        assert_eq!(lru.get_mut(&"c").copied(), Some(3));
        // Many uses of the same keys keep the order bounded.
        for _ in 0..100 {
            lru.get_mut(&"a");
        }
        assert!(lru.order.len() <= 8);
        assert_eq!(lru.map.len(), 2);
    }
}
