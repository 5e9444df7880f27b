//! Model tests: seeded random sequences of creates, updates, deletes (guarded and not), reads
//! and ranges at old revisions, watches from old revisions, compactions and (durable) reopens,
//! each checked against a plain in-memory model of the whole history. Every outcome, every
//! counter, every error and every watch event must equal the model's.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kubemock_storage::{
    Config, CreateOutcome, DeleteOutcome, Error, Event, EventKind, Guard, KeyValue, Kv,
    RangeRequest, Revision, SledStore, UpdateOutcome, WatchStream,
};

const KEYS: [&str; 3] = ["a/", "b/", "ab/"];
const PREFIXES: [&str; 6] = ["", "a/", "b", "ab/", "c/", "a/3"];
const NAMES_PER_PREFIX: u32 = 12;

/// The model: every change ever made, in revision order (revision = position + 1).
#[derive(Default)]
struct Model {
    changes: Vec<(Bytes, Option<Bytes>)>,
    compacted: Revision,
}

impl Model {
    fn current(&self) -> Revision {
        self.changes.len() as Revision
    }

    /// Every live key at `revision` with its full KeyValue.
    fn state_at(&self, revision: Revision) -> BTreeMap<Bytes, KeyValue> {
        let mut state: BTreeMap<Bytes, KeyValue> = BTreeMap::new();
        for (i, (key, value)) in self.changes[..revision as usize].iter().enumerate() {
            let rev = i as Revision + 1;
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
        let (key, value) = &self.changes[revision as usize - 1];
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
        (after + 1..=self.current())
            .filter(|rev| {
                self.changes[*rev as usize - 1]
                    .0
                    .starts_with(prefix.as_bytes())
            })
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

struct Run {
    rng: fastrand::Rng,
    model: Model,
    /// `None` only while reopening: the old handle must be dropped to release sled's lock.
    store: Option<SledStore>,
    dir: Option<tempfile::TempDir>,
    /// A watcher of everything since revision 0, read at the end (and at each reopen).
    follower: WatchStream,
    followed: Vec<Arc<Event>>,
}

impl Run {
    fn config(dir: Option<&tempfile::TempDir>, rng: &mut fastrand::Rng) -> Config {
        let config = match dir {
            Some(dir) => Config::durable(dir.path()),
            None => Config::ephemeral(),
        };
        config
            .compaction_interval(None)
            .watch_buffer(100_000)
            // Index checkpoints never, every few dozen or every few hundred revisions, and half
            // of the reopens as after a crash (no checkpoint at close): open then reads a
            // checkpoint older than the log's end, with compactions before and after it.
            .checkpoint_every(match rng.u8(..3) {
                0 => 0,
                1 => rng.u64(1..=60),
                _ => rng.u64(200..=600),
            })
            .checkpoint_at_close(rng.bool())
    }

    fn store(&self) -> &SledStore {
        self.store.as_ref().expect("store is open")
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

    async fn step(&mut self, durable: bool) {
        // Write-heavy, so that runs build several replay chunks (256 revisions) of history
        // and compaction stays well behind the head.
        match self.rng.u8(..100) {
            0..=29 => self.create().await,
            30..=56 => self.update().await,
            57..=68 => self.delete().await,
            69..=78 => self.get().await,
            79..=88 => self.range().await,
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

    async fn watch(&mut self) {
        let prefix = PREFIXES[self.rng.usize(..PREFIXES.len())];
        let after = self.revision();
        let got = self.store().watch(Bytes::from(prefix), after).await;
        if let Some(want) = self.model.check_revision(after) {
            return assert_err(got.map(|_| ()), &want, "watch");
        }
        let mut watch = got.expect("watch");
        let events = common::events_until(&mut watch, self.model.current()).await;
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
        assert_eq!(self.store().compaction_point(), self.model.compacted);
    }

    async fn drain_follower(&mut self) {
        let current = self.model.current();
        let events = common::events_until(&mut self.follower, current).await;
        self.followed.extend(events);
    }

    async fn reopen(&mut self) {
        self.drain_follower().await;
        self.store.take().expect("store is open").close();
        // The follower ends with Closed once the store is closed.
        assert!(matches!(
            common::next_item(&mut self.follower).await,
            Some(Err(Error::Closed))
        ));
        let config = Self::config(self.dir.as_ref(), &mut self.rng);
        self.store = Some(SledStore::open(config).expect("reopen"));
        assert_eq!(
            self.store().revision(),
            self.model.current(),
            "revision after reopen"
        );
        assert_eq!(
            self.store().compaction_point(),
            self.model.compacted,
            "compaction point after reopen"
        );
        self.follower = self
            .store()
            .watch(Bytes::new(), self.model.current())
            .await
            .expect("follow again");
    }
}

async fn run(seed: u64, steps: usize, durable: bool) {
    let dir = durable.then(|| tempfile::tempdir().expect("tempdir"));
    let mut rng = fastrand::Rng::with_seed(seed);
    let store = SledStore::open(Run::config(dir.as_ref(), &mut rng)).expect("open");
    let follower = store.watch(Bytes::new(), 0).await.expect("follow");
    let mut run = Run {
        rng,
        model: Model::default(),
        store: Some(store),
        dir,
        follower,
        followed: Vec::new(),
    };
    for _ in 0..steps {
        run.step(durable).await;
    }
    run.drain_follower().await;
    eprintln!(
        "seed {seed}: {steps} steps, {} revisions, compacted at {}",
        run.model.current(),
        run.model.compacted
    );
    // The follower saw every change exactly once, in order.
    assert_eq!(
        strip(&run.followed),
        run.model.events("", 0),
        "seed {seed}: follower"
    );
    run.store().close();
}

#[tokio::test]
async fn ephemeral_store_matches_the_model() {
    let seed = common::seed("model/ephemeral");
    for i in 0..16 {
        run(seed.wrapping_add(i), 1_800, false).await;
    }
}

#[tokio::test]
async fn durable_store_matches_the_model_across_reopens() {
    let seed = common::seed("model/durable");
    for i in 0..5 {
        run(seed.wrapping_add(i), 1_200, true).await;
    }
}
