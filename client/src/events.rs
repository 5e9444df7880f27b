//! An event recorder writing core/v1 Events (docs/api-behaviour.md#events) as client-go's `record.EventRecorder`
//! does: a new event is POSTed; an identical repeat (same source, object, type, reason and
//! message) becomes a strategic-merge PATCH raising `count` and `lastTimestamp`; if that
//! event has vanished (404) it is created anew. Failures are logged, never returned to the
//! reconcile that records the event, since events are best effort.

use std::collections::{HashMap, VecDeque};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use parking_lot::Mutex;

use crate::api::Api;
use crate::request::{Patch, PatchParams, PostParams};
use crate::resource::{ApiResource, Resource};
use crate::transport::Client;

/// Distinct events remembered for aggregation (client-go's LRU holds 4096).
pub const AGGREGATION_CACHE: usize = 4096;

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

/// What identifies a repeat.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct AggregateKey {
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    kind_type: &'static str,
    reason: String,
    message: String,
}

/// The event written for a key: its name, namespace and count.
#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    namespace: String,
    count: i32,
}

/// Records events from one component.
pub struct Recorder {
    client: Client,
    source: EventSource,
    /// Events written, by what identifies a repeat; `order` evicts the oldest beyond
    /// [`AGGREGATION_CACHE`]. Locked only between awaits.
    cache: Mutex<(HashMap<AggregateKey, Recorded>, VecDeque<AggregateKey>)>,
    /// Where `firstTimestamp` and `lastTimestamp` come from.
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
            cache: Mutex::new((HashMap::new(), VecDeque::new())),
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

    /// Records an event about `reference` and reports failures.
    pub async fn try_publish(
        &self,
        reference: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> crate::Result<Event> {
        let key = AggregateKey {
            kind: reference.kind.clone().unwrap_or_default(),
            namespace: reference.namespace.clone().unwrap_or_default(),
            name: reference.name.clone().unwrap_or_default(),
            uid: reference.uid.clone().unwrap_or_default(),
            kind_type: kind.as_str(),
            reason: reason.to_owned(),
            message: message.to_owned(),
        };
        let now = Time(self.clock.now());
        let previous = self.cache.lock().0.get(&key).cloned();
        if let Some(previous) = previous {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &previous.namespace);
            let count = previous.count + 1;
            let patch = Patch::Strategic(serde_json::json!({
                "count": count,
                "lastTimestamp": now,
                "message": message,
            }));
            match api
                .patch(&previous.name, &PatchParams::default(), &patch)
                .await
            {
                Ok(event) => {
                    self.remember(key, Recorded { count, ..previous });
                    return Ok(event);
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
        let nanos = i64::try_from(now.0.as_nanosecond()).unwrap_or_default();
        let mut event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", key.name, nanos)),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: reference.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
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
        let created = loop {
            match api.create(&PostParams::default(), &event).await {
                Err(err) if err.is_already_exists() && attempt < NAME_ATTEMPTS => {
                    attempt += 1;
                    let bumped = nanos.saturating_add(attempt);
                    event.metadata.name = Some(format!("{}.{:x}", key.name, bumped));
                }
                result => break result?,
            }
        };
        self.remember(
            key,
            Recorded {
                name: created.metadata.name.clone().unwrap_or_default(),
                namespace,
                count: 1,
            },
        );
        Ok(created)
    }

    fn remember(&self, key: AggregateKey, recorded: Recorded) {
        let mut cache = self.cache.lock();
        let (map, order) = &mut *cache;
        if map.insert(key.clone(), recorded).is_none() {
            order.push_back(key);
            while order.len() > AGGREGATION_CACHE {
                if let Some(oldest) = order.pop_front() {
                    map.remove(&oldest);
                }
            }
        }
    }
}
