//! Model tests of the sled store (the model itself, shared with the etcd backend's tests, is
//! `common/model.rs`): ephemeral, and durable with reopens between steps.

mod common;

use common::model::{self, Backend};
use kubemock_storage::{Config, Kv, Revision, SledStore};

/// The sled store under the model, with its data directory when durable.
struct Sled {
    /// `None` only while reopening: the old handle must be dropped to release sled's lock.
    store: Option<SledStore>,
    dir: Option<tempfile::TempDir>,
}

impl Sled {
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

    fn open(durable: bool, rng: &mut fastrand::Rng) -> Self {
        let dir = durable.then(|| tempfile::tempdir().expect("tempdir"));
        let store = SledStore::open(Self::config(dir.as_ref(), rng)).expect("open");
        Sled {
            store: Some(store),
            dir,
        }
    }

    fn sled(&self) -> &SledStore {
        self.store.as_ref().expect("store is open")
    }
}

#[async_trait::async_trait]
impl Backend for Sled {
    fn store(&self) -> &dyn Kv {
        self.sled()
    }

    fn compaction_point(&self) -> Option<Revision> {
        Some(self.sled().compaction_point())
    }

    fn reopens(&self) -> bool {
        self.dir.is_some()
    }

    fn close(&mut self) {
        self.store.take().expect("store is open").close();
    }

    async fn reopen(&mut self, rng: &mut fastrand::Rng) -> (Revision, Revision) {
        let config = Self::config(self.dir.as_ref(), rng);
        let store = SledStore::open(config).expect("reopen");
        let opened = (store.revision(), store.compaction_point());
        self.store = Some(store);
        opened
    }
}

async fn run(seed: u64, steps: usize, durable: bool) {
    // The store's config draws from its own generator: the steps' sequence stays the seed's.
    let mut config_rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    let backend = Sled::open(durable, &mut config_rng);
    let backend = model::run(backend, seed, steps).await;
    backend.sled().close();
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
