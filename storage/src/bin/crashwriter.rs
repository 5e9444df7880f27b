//! The crash test's child process (`storage/tests/crash.rs`): opens a durable store and runs
//! several concurrent writers until it is killed, printing one line per *acknowledged* write
//! so that the parent knows exactly what the store promised before the SIGKILL.
//!
//! Usage: `kubemock-storage-crashwriter DATA_DIR CYCLE WRITERS SEED [compact]`
//!
//! The index is checkpointed every [`CHECKPOINT_EVERY`] revisions, so kills land before, during
//! and after checkpoints. With `compact`, history is also compacted continuously (by a tiny
//! retention and a tiny byte budget), so kills land during compactions too.
//!
//! Output, one line each, flushed at once:
//! - `ready REVISION` once the store is open;
//! - `create KEY REVISION VALUE`, `update KEY REVISION VALUE`, `delete KEY REVISION`.
//!
//! Keys and values never contain spaces. A writer deletes its own keys only: those it created,
//! and those it left on the same directory in the previous cycle. The process exits when its
//! standard input closes, so that it never outlives a parent that died without killing it.

use std::io::{Read, Write};
use std::process::ExitCode;

use std::time::Duration;

use bytes::Bytes;
use kubemock_storage::{
    Config, CreateOutcome, DeleteOutcome, Guard, Kv, RangeRequest, Retention, Revision, SledStore,
    UpdateOutcome,
};

/// Revisions between index checkpoints: a few per round.
const CHECKPOINT_EVERY: u64 = 64;
/// With `compact`: revisions between the periodic checkpoints, more than the retention keeps,
/// so that compaction regularly passes the last one (and must checkpoint itself first).
const COMPACT_CHECKPOINT_EVERY: u64 = 1_000;
/// With `compact`: revisions of history kept by the retention...
const COMPACT_KEEP_REVISIONS: u64 = 100;
/// ... and bytes by the budget (some 500 writes' worth of values).
const COMPACT_BUDGET: u64 = 256 * 1024;
/// With `compact`: how often the retention is applied.
const COMPACT_EVERY: Duration = Duration::from_millis(10);

/// Prints one acknowledgement line and flushes it, so the parent has it before any kill.
fn ack(line: &str) {
    let mut out = std::io::stdout().lock();
    // A parent that stopped reading is about to kill us; nothing to do about a failed write.
    let _ = out.write_all(line.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

fn value_for(key: &str, n: u64, rng: &mut u64) -> String {
    // xorshift: the padding length varies the record sizes (up to 1 KiB).
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    let pad = (*rng % 1024) as usize;
    format!("{key}|{n}|{}", "x".repeat(pad))
}

async fn writer(store: SledStore, cycle: u64, id: u64, seed: u64) -> Result<(), String> {
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (id + 1);
    let counter = format!("c/{cycle}/{id}");
    let mut counter_revision: Option<Revision> = None;
    // The keys this writer left in the previous cycle on this directory are its to delete too:
    // keys that the index checkpoint of the restart names, deleted after it.
    let mut live: Vec<String> = match cycle.checked_sub(1) {
        None => Vec::new(),
        Some(previous) => store
            .range(RangeRequest::prefix(format!("k/{previous}/{id}/")))
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .map(|kv| String::from_utf8_lossy(&kv.key).into_owned())
            .collect(),
    };
    for n in 0u64.. {
        let choice = value_for("", n, &mut rng).len() % 20;
        if choice < 3 && !live.is_empty() {
            let key = live.swap_remove(n as usize % live.len());
            match store
                .delete(Bytes::from(key.clone()), Guard::Unconditional)
                .await
                .map_err(|e| e.to_string())?
            {
                DeleteOutcome::Deleted { revision, .. } => ack(&format!("delete {key} {revision}")),
                other => return Err(format!("delete of a key this writer owns: {other:?}")),
            }
        } else if choice < 8 {
            let value = value_for(&counter, n, &mut rng);
            let revision = match counter_revision {
                None => match store
                    .create(counter.clone().into(), value.clone().into())
                    .await
                    .map_err(|e| e.to_string())?
                {
                    CreateOutcome::Created(kv) => kv.mod_revision,
                    other => return Err(format!("create of this writer's counter: {other:?}")),
                },
                Some(expected) => {
                    let guard = Guard::ModRevision(expected);
                    match store
                        .update(counter.clone().into(), value.clone().into(), guard)
                        .await
                        .map_err(|e| e.to_string())?
                    {
                        UpdateOutcome::Updated { kv, .. } => kv.mod_revision,
                        other => {
                            return Err(format!("guarded update of the counter: {other:?}"));
                        }
                    }
                }
            };
            let verb = if counter_revision.is_some() {
                "update"
            } else {
                "create"
            };
            counter_revision = Some(revision);
            ack(&format!("{verb} {counter} {revision} {value}"));
        } else {
            let key = format!("k/{cycle}/{id}/{n}");
            let value = value_for(&key, n, &mut rng);
            match store
                .create(key.clone().into(), value.clone().into())
                .await
                .map_err(|e| e.to_string())?
            {
                CreateOutcome::Created(kv) => {
                    ack(&format!("create {key} {} {value}", kv.mod_revision));
                    live.push(key);
                }
                other => return Err(format!("create of a fresh key: {other:?}")),
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (dir, cycle, writers, seed, compact) = match args.as_slice() {
        [_, dir, cycle, writers, seed] => (dir, cycle, writers, seed, false),
        [_, dir, cycle, writers, seed, mode] if mode == "compact" => {
            (dir, cycle, writers, seed, true)
        }
        _ => {
            eprintln!("usage: kubemock-storage-crashwriter DATA_DIR CYCLE WRITERS SEED [compact]");
            return ExitCode::from(2);
        }
    };
    let (Ok(cycle), Ok(writers), Ok(seed)) = (cycle.parse(), writers.parse::<u64>(), seed.parse())
    else {
        eprintln!("CYCLE, WRITERS and SEED must be integers");
        return ExitCode::from(2);
    };
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(3);
    });
    let config = Config::durable(dir)
        .compaction_interval(None)
        .cache_capacity(16 << 20)
        .checkpoint_every(CHECKPOINT_EVERY);
    let config = if compact {
        config
            .compaction_interval(Some(COMPACT_EVERY))
            .retention(Retention {
                min_revisions: COMPACT_KEEP_REVISIONS,
                min_age: Duration::ZERO,
            })
            .history_budget(COMPACT_BUDGET)
            .checkpoint_every(COMPACT_CHECKPOINT_EVERY)
    } else {
        config
    };
    let store = match SledStore::open(config) {
        Ok(store) => store,
        Err(err) => {
            eprintln!("open failed: {err}");
            return ExitCode::from(1);
        }
    };
    ack(&format!("ready {}", store.revision()));
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for id in 0..writers {
            tasks.spawn(writer(store.clone(), cycle, id, seed));
        }
        tasks.join_next().await
    });
    eprintln!("a writer stopped: {result:?}");
    ExitCode::from(1)
}
