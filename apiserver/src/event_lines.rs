//! Watch event lines shared by the watches that send the same event.
//!
//! Why it exists: a change reaches every watch of its resource, and each plain JSON watch
//! (`handlers::watch`, `Feed::plain_line`) turned the same stored bytes into the same line:
//! the resourceVersion spliced in, the event wrapped around it, two allocations and two copies
//! per watcher. With a thousand watchers of one resource that was a seventh of the server's CPU
//! (issue 23's watch fan-out benchmark, `perf`). The store hands every watcher the same
//! `Arc<Event>`, so the first watch to encode an event leaves its line here and the others
//! take a reference to it.
//!
//! A direct-mapped cache: a slot per revision modulo [`SLOTS`] and per kind of line. A slot
//! holds a `Weak` of the event, and a line is taken only for the very same event (the same
//! allocation): the `Weak` keeps the allocation's address from being reused, though not the
//! event's buffers (a strong `Arc` here kept every cached event's object and previous object
//! alive: 2 KiB more RSS per pod in the 10,000-pod benchmark). So a store reset, another
//! backend, or a history replay that builds its own events can only miss, never take another
//! event's line. Collisions overwrite; a miss costs what encoding cost before.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use kubemock_storage::Event;
use parking_lot::Mutex;

/// Revisions the cache spans: a watcher that is this far behind the others encodes for itself.
/// At a few KiB a line at most (a pod's), about a MiB in all.
const SLOTS: usize = 512;

/// What a line says of its event: the object as stored, or its `PartialObjectMetadata` in a
/// `meta.k8s.io` version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    Object,
    Partial(&'static str),
}

struct Slot {
    event: Weak<Event>,
    kind: LineKind,
    line: Bytes,
}

/// The cache of recent events' lines.
pub(crate) struct EventLines {
    /// Objects' lines in the first half, metadata lines in the second.
    slots: Mutex<Vec<Option<Slot>>>,
}

impl Default for EventLines {
    fn default() -> Self {
        EventLines {
            slots: Mutex::new((0..2 * SLOTS).map(|_| None).collect()),
        }
    }
}

impl EventLines {
    /// The line of `event` as `kind`: the one cached for this very event, else `encode`'s,
    /// which is cached. `None` when `encode` gives none (nothing is cached then).
    pub(crate) fn get_or_encode(
        &self,
        event: &Arc<Event>,
        kind: LineKind,
        encode: impl FnOnce() -> Option<Bytes>,
    ) -> Option<Bytes> {
        let half = match kind {
            LineKind::Object => 0,
            LineKind::Partial(_) => SLOTS,
        };
        let index = half + (event.revision() % SLOTS as u64) as usize;
        if let Some(Some(slot)) = self.slots.lock().get(index)
            && slot.kind == kind
            && std::ptr::eq(slot.event.as_ptr(), Arc::as_ptr(event))
        {
            return Some(slot.line.clone());
        }
        // Encoded outside the lock: two watches may both encode one event, and one line wins.
        let line = encode()?;
        if let Some(slot) = self.slots.lock().get_mut(index) {
            *slot = Some(Slot {
                event: Arc::downgrade(event),
                kind,
                line: line.clone(),
            });
        }
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use kubemock_storage::{EventKind, KeyValue};

    use super::*;

    fn event(revision: u64, value: &str) -> Arc<Event> {
        Arc::new(Event {
            kind: EventKind::Put,
            kv: KeyValue {
                key: Bytes::from_static(b"/registry/configmaps/ns/a"),
                value: Bytes::from(value.to_owned()),
                create_revision: revision,
                mod_revision: revision,
                version: 1,
            },
            prev: None,
        })
    }

    #[test]
    fn a_line_is_encoded_once_per_event_and_kind() {
        let lines = EventLines::default();
        let encoded = Cell::new(0);
        let encode = |text: &'static str| {
            let encoded = &encoded;
            move || {
                encoded.set(encoded.get() + 1);
                Some(Bytes::from_static(text.as_bytes()))
            }
        };
        let first = event(7, "x");
        for _ in 0..3 {
            let line = lines.get_or_encode(&first, LineKind::Object, encode("object 7"));
            assert_eq!(line.as_deref(), Some(&b"object 7"[..]));
        }
        assert_eq!(encoded.get(), 1, "one encoding for three watches");
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the cache keeps no event alive"
        );
        // Another kind of line of the same event is its own.
        let partial = lines.get_or_encode(&first, LineKind::Partial("v1"), encode("meta 7"));
        assert_eq!(partial.as_deref(), Some(&b"meta 7"[..]));
        let beta = lines.get_or_encode(&first, LineKind::Partial("v1beta1"), encode("beta 7"));
        assert_eq!(beta.as_deref(), Some(&b"beta 7"[..]));
        assert_eq!(encoded.get(), 3);
        // Another event at the same revision (a reset store, another backend, a replay) never
        // takes the first one's line, nor does one in the same slot SLOTS revisions later.
        let same_revision = event(7, "y");
        let line = lines.get_or_encode(&same_revision, LineKind::Object, encode("other 7"));
        assert_eq!(line.as_deref(), Some(&b"other 7"[..]));
        let later = event(7 + SLOTS as u64, "z");
        let line = lines.get_or_encode(&later, LineKind::Object, encode("later"));
        assert_eq!(line.as_deref(), Some(&b"later"[..]));
        assert_eq!(encoded.get(), 5);
        // Nothing encoded, nothing cached.
        assert_eq!(
            lines
                .get_or_encode(&first, LineKind::Object, || None)
                .as_deref(),
            None
        );
        let again = lines.get_or_encode(&later, LineKind::Object, encode("unused"));
        assert_eq!(again.as_deref(), Some(&b"later"[..]));
    }
}
