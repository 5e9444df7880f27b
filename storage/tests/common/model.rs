//! The model test of the store trait, for any backend (storage/tests/model.rs runs it on sled,
//! storage-etcd/tests/etcd.rs on etcd): seeded random sequences of creates, updates, deletes
//! (guarded and not), reads and ranges at old revisions, watches from old revisions,
//! compactions and (durable sled) reopens, each checked against a plain in-memory model of the
//! whole history. Every outcome, every counter, every error and every watch event must equal
//! the model's.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kubemock_storage::{
    CreateOutcome, DeleteOutcome, Error, Event, EventKind, Guard, KeyValue, Kv, RangeRequest,
    Revision, UpdateOutcome, WatchStream,
};

const KEYS: [&str; 3] = ["a/", "b/", "ab/"];
const PREFIXES: [&str; 6] = ["", "a/", "b", "ab/", "c/", "a/3"];
const NAMES_PER_PREFIX: u32 = 12;

/// The model: every change ever made, in revision order (revision = base + position + 1; the
/// base is the store's revision when the run starts: 0 for sled, etcd's first revision for
/// etcd, which holds no key).
#[derive(Default)]
pub struct Model {
    base: Revision,
    changes: Vec<(Bytes, Option<Bytes>)>,
    compacted: Revision,
}

impl Model {
    fn current(&self) -> Revision {
        self.base + self.changes.len() as Revision
    }

    /// The change at `revision` (above the base).
    fn change(&self, revision: Revision) -> &(Bytes, Option<Bytes>) {
        &self.changes[(revision - self.base) as usize - 1]
    }

    /// Every live key at `revision` with its full KeyValue.
    fn state_at(&self, revision: Revision) -> BTreeMap<Bytes, KeyValue> {
        let mut state: BTreeMap<Bytes, KeyValue> = BTreeMap::new();
        let upto = revision.saturating_sub(self.base) as usize;
        for (i, (key, value)) in self.changes[..upto].iter().enumerate() {
            let rev = self.base + i as Revision + 1;
            match value {
                Some(value) => {
                    let (create_revision, version) = match state.get(key) {
                        Some(kv) => (kv.create_revision, kv.version + 1),
                        None => (rev, 1),
                    };
                    state.insert(
                        key.clone(),
                        KeyValue {
                            key: key.clone(),
                            value: value.clone(),
                            create_revision,
                            mod_revision: rev,
                            version,
                        },
                    );
                }
                None => {
                    state.remove(key);
                }
            }
        }
        state
    }

    fn latest(&self, key: &Bytes) -> Option<KeyValue> {
        self.state_at(self.current()).remove(key)
    }

    /// The error a read or watch at `revision` must fail with, if any.
    fn check_revision(&self, revision: Revision) -> Option<Error> {
        if revision > self.current() {
            Some(Error::FutureRevision {
                requested: revision,
                current: self.current(),
            })
        } else if revision < self.compacted {
            Some(Error::Compacted {
                requested: revision,
                compacted: self.compacted,
            })
        } else {
            None
        }
    }

    /// The event of the change at `revision`.
    fn event(&self, revision: Revision) -> Event {
        let (key, value) = self.change(revision);
        let prev = self.state_at(revision - 1).remove(key);
        match value {
            Some(_) => Event {
                kind: EventKind::Put,
                kv: self.state_at(revision).remove(key).expect("put is live"),
                prev,
            },
            None => Event {
                kind: EventKind::Delete,
                kv: KeyValue {
                    key: key.clone(),
                    value: Bytes::new(),
                    create_revision: 0,
                    mod_revision: revision,
                    version: 0,
                },
                prev,
            },
        }
    }

    fn events(&self, prefix: &str, after: Revision) -> Vec<Event> {
        (after.max(self.base) + 1..=self.current())
            .filter(|rev| self.change(*rev).0.starts_with(prefix.as_bytes()))
            .map(|rev| self.event(rev))
            .collect()
    }
}

fn same_error(got: &Error, want: &Error) -> bool {
    match (got, want) {
        (
            Error::Compacted {
                requested: a,
                compacted: b,
            },
            Error::Compacted {
                requested: c,
                compacted: d,
            },
        ) => (a, b) == (c, d),
        (
            Error::FutureRevision {
                requested: a,
                current: b,
            },
            Error::FutureRevision {
                requested: c,
                current: d,
            },
        ) => (a, b) == (c, d),
        _ => false,
    }
}

fn assert_err<T: std::fmt::Debug>(got: Result<T, Error>, want: &Error, what: &str) {
    match got {
        Err(err) if same_error(&err, want) => {}
        other => panic!("{what}: expected {want:?}, got {other:?}"),
    }
}

fn strip(events: &[Arc<Event>]) -> Vec<Event> {
    events.iter().map(|e| Event::clone(e)).collect()
}

/// A store under test, and what only some backends can do.
#[async_trait::async_trait]
pub trait Backend: Send {
    /// The store.
    fn store(&self) -> &dyn Kv;
    /// The compaction point as the store holds it without asking (the sled store's
    /// `compaction_point`), compared with the model after each compaction; `None`: ask
    /// [`Kv::compacted_revision`] instead.
    fn compaction_point(&self) -> Option<Revision> {
        None
    }
    /// Whether [`Backend::reopen`] is supported (a durable sled store).
    fn reopens(&self) -> bool {
        false
    }
    /// Whether a watch from below the compaction point may be served anyway, from a watch
    /// cache's window of events (the etcd store's, as upstream's watch cache does); the
    /// events must then be exactly the model's.
    fn watch_cache(&self) -> bool {
        false
    }
    /// Closes the store (its watches then end with `Closed`).
    fn close(&mut self) {}
    /// Opens the store again on the same data; returns its revision and compaction point.
    async fn reopen(&mut self, _rng: &mut fastrand::Rng) -> (Revision, Revision) {
        unreachable!("this backend does not reopen")
    }
}

struct Run<B> {
    rng: fastrand::Rng,
    model: Model,
    backend: B,
    /// A watcher of everything since the start, read at the end (and at each reopen).
    follower: WatchStream,
    followed: Vec<Arc<Event>>,
}

impl<B: Backend> Run<B> {
    fn store(&self) -> &dyn Kv {
        self.backend.store()
    }

    fn key(&mut self) -> Bytes {
        let prefix = KEYS[self.rng.usize(..KEYS.len())];
        Bytes::from(format!("{prefix}{}", self.rng.u32(..NAMES_PER_PREFIX)))
    }

    fn value(&mut self) -> Bytes {
        // Now and then one that the sled backend stores in pieces (over 8 KiB).
        let len = if self.rng.u8(..25) == 0 {
            self.rng.usize(8 * 1024..24 * 1024)
        } else {
            self.rng.usize(0..64)
        };
        Bytes::from(
            (0..len)
                .map(|_| self.rng.alphanumeric() as u8)
                .collect::<Vec<_>>(),
        )
    }

    /// A revision around the readable window: sometimes compacted, sometimes future.
    fn revision(&mut self) -> Revision {
        let low = self.model.compacted.saturating_sub(2);
        self.rng.u64(low..=self.model.current() + 2)
    }

    fn guard(&mut self, current: Option<&KeyValue>) -> Guard {
        match (self.rng.u8(..3), current) {
            (0, _) => Guard::Unconditional,
            (1, Some(kv)) => Guard::ModRevision(kv.mod_revision),
            (_, Some(kv)) => Guard::ModRevision(kv.mod_revision + 1 + self.rng.u64(..3)),
            (_, None) => Guard::ModRevision(self.rng.u64(..5)),
        }
    }

    async fn step(&mut self) {
        let durable = self.backend.reopens();
        // Write-heavy, so that runs build several replay chunks (256 revisions) of history
        // and compaction stays well behind the head.
        match self.rng.u8(..100) {
            0..=29 => self.create().await,
            30..=56 => self.update().await,
            57..=68 => self.delete().await,
            69..=78 => self.get().await,
            79..=85 => self.range().await,
            86..=88 => self.range_any().await,
            89..=96 => self.watch().await,
            97 => self.compact().await,
            _ if durable => self.reopen().await,
            _ => self.compact().await,
        }
    }

    async fn create(&mut self) {
        let (key, value) = (self.key(), self.value());
        let got = self
            .store()
            .create(key.clone(), value.clone())
            .await
            .expect("create");
        match self.model.latest(&key) {
            Some(current) => assert_eq!(got, CreateOutcome::AlreadyExists(current)),
            None => {
                self.model.changes.push((key.clone(), Some(value)));
                let kv = self.model.latest(&key).expect("created");
                assert_eq!(got, CreateOutcome::Created(kv));
            }
        }
    }

    async fn update(&mut self) {
        let (key, value) = (self.key(), self.value());
        let current = self.model.latest(&key);
        let guard = self.guard(current.as_ref());
        let got = self
            .store()
            .update(key.clone(), value.clone(), guard)
            .await
            .expect("update");
        let want = match current {
            None => UpdateOutcome::NotFound,
            Some(current) => match guard {
                Guard::ModRevision(r) if r != current.mod_revision => {
                    UpdateOutcome::Conflict(current)
                }
                _ => {
                    self.model.changes.push((key.clone(), Some(value)));
                    let kv = self.model.latest(&key).expect("updated");
                    UpdateOutcome::Updated { kv, prev: current }
                }
            },
        };
        assert_eq!(got, want);
    }

    async fn delete(&mut self) {
        let key = self.key();
        let current = self.model.latest(&key);
        let guard = self.guard(current.as_ref());
        let got = self
            .store()
            .delete(key.clone(), guard)
            .await
            .expect("delete");
        let want = match current {
            None => DeleteOutcome::NotFound,
            Some(current) => match guard {
                Guard::ModRevision(r) if r != current.mod_revision => {
                    DeleteOutcome::Conflict(current)
                }
                _ => {
                    self.model.changes.push((key, None));
                    DeleteOutcome::Deleted {
                        revision: self.model.current(),
                        prev: current,
                    }
                }
            },
        };
        assert_eq!(got, want);
    }

    async fn get(&mut self) {
        let key = self.key();
        let at = self.rng.bool().then(|| self.revision());
        let got = self.store().get(&key, at).await;
        if let Some(want) = at.and_then(|r| self.model.check_revision(r)) {
            return assert_err(got, &want, "get");
        }
        let revision = at.unwrap_or(self.model.current());
        let got = got.expect("get");
        assert_eq!(got.revision, revision);
        assert_eq!(
            got.kv,
            self.model.state_at(revision).remove(&key),
            "get {key:?} at {revision}"
        );
        let latest = self.model.state_at(self.model.current()).remove(&key);
        assert_eq!(
            self.store().mod_revision(&key).await.expect("mod_revision"),
            latest.map(|kv| kv.mod_revision),
            "mod_revision of {key:?}"
        );
    }

    async fn range(&mut self) {
        let prefix = PREFIXES[self.rng.usize(..PREFIXES.len())];
        let mut request = RangeRequest::prefix(prefix);
        if self.rng.bool() {
            request = request.start_after(self.key());
        }
        if self.rng.bool() {
            request = request.limit(self.rng.usize(0..8));
        }
        if self.rng.bool() {
            request = request.at_revision(self.revision());
        }
        let got = self.store().range(request.clone()).await;
        if let Some(want) = request.revision.and_then(|r| self.model.check_revision(r)) {
            return assert_err(got, &want, "range");
        }
        let revision = request.revision.unwrap_or(self.model.current());
        let matching: Vec<KeyValue> = self
            .model
            .state_at(revision)
            .into_values()
            .filter(|kv| kv.key.starts_with(prefix.as_bytes()))
            .filter(|kv| {
                request
                    .start_after
                    .as_ref()
                    .is_none_or(|after| kv.key > after)
            })
            .collect();
        let limit = request.limit.unwrap_or(usize::MAX);
        let got = got.expect("range");
        assert_eq!(got.revision, revision);
        assert_eq!(
            got.items,
            matching.iter().take(limit).cloned().collect::<Vec<_>>(),
            "{request:?}"
        );
        assert_eq!(
            got.remaining,
            matching.len().saturating_sub(limit) as u64,
            "{request:?}"
        );
    }

    /// `resourceVersion=0`: any snapshot no later than the current revision, exactly as the
    /// model has it at the revision the answer names.
    async fn range_any(&mut self) {
        let prefix = PREFIXES[self.rng.usize(..PREFIXES.len())];
        let got = self
            .store()
            .range_any(RangeRequest::prefix(prefix))
            .await
            .expect("range_any");
        assert!(
            got.revision <= self.model.current(),
            "range_any {prefix:?} at {} after {}",
            got.revision,
            self.model.current()
        );
        let want: Vec<KeyValue> = self
            .model
            .state_at(got.revision)
            .into_values()
            .filter(|kv| kv.key.starts_with(prefix.as_bytes()))
            .collect();
        assert_eq!(got.items, want, "range_any {prefix:?} at {}", got.revision);
        assert_eq!(got.remaining, 0);
    }

    async fn watch(&mut self) {
        let prefix = PREFIXES[self.rng.usize(..PREFIXES.len())];
        let after = self.revision();
        let got = self.store().watch(Bytes::from(prefix), after).await;
        let cached = self.backend.watch_cache() && after >= self.model.base;
        match self.model.check_revision(after) {
            Some(Error::Compacted { .. }) if cached && got.is_ok() => {}
            Some(want) => return assert_err(got.map(|_| ()), &want, "watch"),
            None => {}
        }
        let mut watch = got.expect("watch");
        let events = super::events_until(&mut watch, self.model.current()).await;
        assert_eq!(
            strip(&events),
            self.model.events(prefix, after),
            "watch {prefix:?} after {after}"
        );
    }

    async fn compact(&mut self) {
        // Mostly small steps, so that history stays interesting; now and then a long one (past
        // the last index checkpoint, typically).
        let window = self.model.current() + 1 - self.model.compacted;
        let step = if self.rng.u8(..5) == 0 {
            window
        } else {
            window.min(12)
        };
        let target = self.model.compacted + self.rng.u64(0..=step);
        let got = self.store().compact(target).await;
        if target > self.model.current() {
            return assert_err(
                got,
                &Error::FutureRevision {
                    requested: target,
                    current: self.model.current(),
                },
                "compact",
            );
        }
        self.model.compacted = self.model.compacted.max(target);
        assert_eq!(got.expect("compact"), self.model.compacted);
        let point = match self.backend.compaction_point() {
            Some(point) => point,
            None => self
                .store()
                .compacted_revision()
                .await
                .expect("compacted_revision"),
        };
        assert_eq!(point, self.model.compacted);
    }

    async fn drain_follower(&mut self) {
        let current = self.model.current();
        let events = super::events_until(&mut self.follower, current).await;
        self.followed.extend(events);
    }

    async fn reopen(&mut self) {
        self.drain_follower().await;
        self.backend.close();
        // The follower ends with Closed once the store is closed.
        assert!(matches!(
            super::next_item(&mut self.follower).await,
            Some(Err(Error::Closed))
        ));
        let (revision, compacted) = self.backend.reopen(&mut self.rng).await;
        assert_eq!(revision, self.model.current(), "revision after reopen");
        assert_eq!(
            compacted, self.model.compacted,
            "compaction point after reopen"
        );
        self.follower = self
            .store()
            .watch(Bytes::new(), self.model.current())
            .await
            .expect("follow again");
    }
}

/// One seeded run of `steps` random operations against `backend`'s store (fresh: nothing
/// written yet), each checked against the model; then the follower's events against the
/// whole history. Returns the backend.
pub async fn run<B: Backend>(backend: B, seed: u64, steps: usize) -> B {
    let store = backend.store();
    let base = store.current_revision().await.expect("current revision");
    let compacted = store
        .compacted_revision()
        .await
        .expect("compacted revision");
    let follower = store.watch(Bytes::new(), base).await.expect("follow");
    let mut run = Run {
        rng: fastrand::Rng::with_seed(seed),
        model: Model {
            base,
            changes: Vec::new(),
            compacted,
        },
        backend,
        follower,
        followed: Vec::new(),
    };
    for _ in 0..steps {
        run.step().await;
    }
    run.drain_follower().await;
    eprintln!(
        "seed {seed}: {steps} steps, revisions {}..={}, compacted at {}",
        run.model.base + 1,
        run.model.current(),
        run.model.compacted
    );
    // The follower saw every change exactly once, in order.
    assert_eq!(
        strip(&run.followed),
        run.model.events("", run.model.base),
        "seed {seed}: follower"
    );
    run.backend
}
