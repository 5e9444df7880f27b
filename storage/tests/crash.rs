//! Durability under SIGKILL (docs/store.md#guarantees, 1, 8 and 9): a child process runs
//! several concurrent durable writers on a real sled directory and prints every acknowledged
//! write; it is killed at a random moment; the store is reopened and every acknowledged write
//! must be there with its revision, revisions must be contiguous, and the next write must get
//! the next revision. Each directory is killed twice, so recovery of a recovered store is
//! covered too. The child checkpoints its index every few dozen revisions, so kills land
//! around checkpoints; in the `compaction` rounds it also compacts continuously, and what an
//! acknowledged write left must survive even where its revision was compacted away: its key's
//! latest state is that write's or a later one's.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use kubemock_storage::{Config, CreateOutcome, Kv, Revision, SledStore};

const CHILD: &str = env!("CARGO_BIN_EXE_kubemock-storage-crashwriter");
/// Writers in the child: enough to make group commit batch.
const WRITERS: u64 = 6;
/// Kills per data directory.
const KILLS_PER_DIR: usize = 2;

#[derive(Debug)]
enum Ack {
    Create {
        key: String,
        revision: Revision,
        value: String,
    },
    Update {
        key: String,
        revision: Revision,
        value: String,
    },
    Delete {
        key: String,
        revision: Revision,
    },
}

fn parse(line: &str) -> Ack {
    let fields: Vec<&str> = line.split(' ').collect();
    let revision = |s: &str| s.parse::<Revision>().expect("revision");
    match fields.as_slice() {
        ["create", key, rev, value] => Ack::Create {
            key: key.to_string(),
            revision: revision(rev),
            value: value.to_string(),
        },
        ["update", key, rev, value] => Ack::Update {
            key: key.to_string(),
            revision: revision(rev),
            value: value.to_string(),
        },
        ["delete", key, rev] => Ack::Delete {
            key: key.to_string(),
            revision: revision(rev),
        },
        _ => panic!("unexpected line from the child: {line:?}"),
    }
}

/// Reads complete lines (a line cut by the kill has no newline and is dropped).
fn read_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line.last() != Some(&b'\n') => return,
                Ok(_) => {
                    line.pop();
                    let line = String::from_utf8(line).expect("utf-8 line");
                    if sender.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    receiver
}

/// Runs the child until it has acknowledged `acks_before_kill` writes, waits a random few
/// milliseconds more, kills it, and returns every acknowledgement it printed.
fn run_and_kill(
    dir: &Path,
    cycle: usize,
    rng: &mut fastrand::Rng,
    compaction: bool,
) -> (Revision, Vec<Ack>) {
    let mut command = Command::new(CHILD);
    command
        .arg(dir)
        .arg(cycle.to_string())
        .arg(WRITERS.to_string())
        .arg(rng.u64(..).to_string());
    if compaction {
        command.arg("compact");
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the crash writer");
    let lines = read_lines(&mut child);
    let ready = lines.recv_timeout(common::WAIT).expect("child ready");
    let start: Revision = ready
        .strip_prefix("ready ")
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("bad ready line {ready:?}"));
    let acks_before_kill = rng.usize(0..600);
    let mut acks = Vec::new();
    while acks.len() < acks_before_kill {
        let line = lines
            .recv_timeout(common::WAIT)
            .expect("child acknowledges writes");
        acks.push(parse(&line));
    }
    // Not a synchronisation: a random extra moment, so kills land mid-flush, mid-write, ...
    std::thread::sleep(Duration::from_micros(rng.u64(0..3_000)));
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    acks.extend(lines.iter().map(|line| parse(&line)));
    (start, acks)
}

impl Ack {
    fn key(&self) -> &str {
        match self {
            Ack::Create { key, .. } | Ack::Update { key, .. } | Ack::Delete { key, .. } => key,
        }
    }

    fn revision(&self) -> Revision {
        match self {
            Ack::Create { revision, .. }
            | Ack::Update { revision, .. }
            | Ack::Delete { revision, .. } => *revision,
        }
    }
}

/// The writer a key belongs to: `c/{cycle}/{writer}` or `k/{cycle}/{writer}/{n}`.
fn writer_of(key: &str) -> &str {
    key.split('/').nth(2).unwrap_or(key)
}

/// Checks the reopened store against the acknowledgements; returns how many of them were
/// below the compaction point (checked through their key's latest state only).
async fn verify(dir: &Path, start: Revision, acks: &[Ack], cycle: usize) -> usize {
    let store = SledStore::open(Config::durable(dir).compaction_interval(None))
        .expect("reopen after SIGKILL");
    let current = store.revision();
    let compacted = store.compaction_point();
    assert!(
        current >= start,
        "revision went backwards: {current} < {start}"
    );

    // Every acknowledged write whose revision is still readable: exactly there.
    let mut acked_revisions = HashMap::new();
    for ack in acks {
        let revision = ack.revision();
        match ack {
            Ack::Create { key, value, .. } | Ack::Update { key, value, .. }
                if revision >= compacted =>
            {
                let got = store
                    .get(key.as_bytes(), Some(revision))
                    .await
                    .expect("get");
                let kv = got
                    .kv
                    .unwrap_or_else(|| panic!("acknowledged {ack:?} is missing"));
                assert_eq!(kv.mod_revision, revision, "{ack:?}");
                assert_eq!(kv.value, value.as_bytes(), "{ack:?}");
                if matches!(ack, Ack::Create { .. }) {
                    assert_eq!((kv.create_revision, kv.version), (revision, 1), "{ack:?}");
                }
            }
            Ack::Delete { key, .. } if revision > compacted => {
                let at = store
                    .get(key.as_bytes(), Some(revision))
                    .await
                    .expect("get");
                assert_eq!(at.kv, None, "acknowledged {ack:?} is not deleted");
                let before = store
                    .get(key.as_bytes(), Some(revision - 1))
                    .await
                    .expect("get");
                assert!(before.kv.is_some(), "{ack:?}: no value before the delete");
            }
            _ => {}
        }
        assert!(
            revision > start && revision <= current,
            "{ack:?} outside {start}..={current}"
        );
        assert!(
            acked_revisions.insert(revision, ()).is_none(),
            "revision {revision} acknowledged twice"
        );
    }

    // Every key's latest state is its last acknowledged write's, or a later write's: each
    // writer has at most one write in flight when killed (an update of its counter, or a
    // delete of one of its keys), so at most one of its keys may have moved on.
    let mut last_ack: HashMap<&str, &Ack> = HashMap::new();
    for ack in acks {
        last_ack.insert(ack.key(), ack);
    }
    let mut moved_on: HashMap<&str, &str> = HashMap::new();
    for (key, ack) in &last_ack {
        let latest = store.get(key.as_bytes(), None).await.expect("get").kv;
        let exact = match (ack, &latest) {
            (Ack::Delete { .. }, None) => true,
            (
                Ack::Create {
                    revision, value, ..
                }
                | Ack::Update {
                    revision, value, ..
                },
                Some(kv),
            ) if kv.mod_revision == *revision => {
                assert_eq!(kv.value, value.as_bytes(), "{ack:?}");
                true
            }
            _ => false,
        };
        if !exact {
            assert!(
                latest
                    .as_ref()
                    .is_none_or(|kv| kv.mod_revision > ack.revision()),
                "acknowledged {ack:?} lost: now {latest:?}"
            );
            if let Some(other) = moved_on.insert(writer_of(key), key) {
                panic!(
                    "two keys of one writer moved past their acknowledged state: {other}, {key}"
                );
            }
        }
    }

    // The retained history replays as revisions compacted+1..=current, no gap.
    let mut watch = store
        .watch(Bytes::new(), compacted)
        .await
        .expect("watch from the compaction point");
    let events = common::events_until(&mut watch, current).await;
    common::assert_contiguous(&events, compacted + 1, current);
    drop(watch);

    // The next write takes the next revision.
    let probe = format!("probe/{cycle}");
    match store
        .create(probe.into(), "p".into())
        .await
        .expect("create")
    {
        CreateOutcome::Created(kv) => assert_eq!(kv.mod_revision, current + 1),
        other => panic!("{other:?}"),
    }
    store.close();
    acks.iter().filter(|ack| ack.revision() < compacted).count()
}

fn crash_rounds(rounds: usize, compaction: bool) {
    let seed = common::seed("crash");
    let mut rng = fastrand::Rng::with_seed(seed);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut total_acks = 0;
    let mut compacted_acks = 0;
    let mut round = 0;
    while round < rounds {
        let dir = tempfile::tempdir().expect("tempdir");
        for _ in 0..KILLS_PER_DIR.min(rounds - round) {
            let (start, acks) = run_and_kill(dir.path(), round, &mut rng, compaction);
            total_acks += acks.len();
            compacted_acks += runtime.block_on(verify(dir.path(), start, &acks, round));
            round += 1;
        }
    }
    eprintln!(
        "crash: {rounds} kills, {total_acks} acknowledged writes verified, {compacted_acks} of \
         them compacted away"
    );
    assert!(
        total_acks > rounds * 50,
        "too few acknowledged writes to mean anything"
    );
    assert!(
        !compaction || compacted_acks > 0,
        "nothing was compacted: the compaction rounds did not test what they claim"
    );
}

#[test]
fn acknowledged_writes_survive_sigkill_20_rounds() {
    crash_rounds(20, false);
}

#[test]
fn acknowledged_writes_survive_sigkill_during_compaction_10_rounds() {
    crash_rounds(10, true);
}

#[test]
#[ignore = "long: 200 kill rounds; run with --ignored"]
fn acknowledged_writes_survive_sigkill_200_rounds() {
    crash_rounds(200, false);
}

#[test]
#[ignore = "long: 200 kill rounds; run with --ignored"]
fn acknowledged_writes_survive_sigkill_during_compaction_200_rounds() {
    crash_rounds(200, true);
}
