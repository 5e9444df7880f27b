//! `kill -9` of the real `kubemock serve --data-dir` process under durable HTTP load: every
//! write the API acknowledged must be there after a restart on the same directory.
//!
//! Several concurrent clients each own a set of ConfigMaps in `default` and create them,
//! update them with resourceVersion preconditions (a guarded PUT) and delete them with
//! resourceVersion preconditions, recording every acknowledged (2xx) answer. At a random moment
//! (seeded; the seed is printed, `KUBEMOCK_TEST_SEED=N` replays the schedule) the server gets
//! SIGKILL; it is restarted on the same directory and every key the clients ever wrote is
//! checked: an acknowledged create or update is there with the acknowledged resourceVersion and
//! content, an acknowledged delete is absent. Each client has at most one write in flight at
//! the kill, which may go either way, so at most one of its keys may have moved past its last
//! acknowledged state (to a later resourceVersion, or to gone, or back). The clients then carry
//! on from what the server holds, and the next round kills it again: all rounds share one
//! directory, so the history, and the restart's work, grow from round to round.
//!
//! Values are a few hundred bytes, sometimes over 8 KiB (stored in pieces on disk). The restart
//! times (spawn to ready line) are printed; `KUBEMOCK_KILL9_BINARY=path` runs another build of
//! the binary (a release build, or an older one to compare with).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");
/// Deadline of any single wait: only reached when something is broken.
const WAIT: Duration = Duration::from_secs(60);
/// Concurrent clients, each with its own keys.
const CLIENTS: usize = 6;
/// Keys per client.
const KEYS_PER_CLIENT: usize = 12;
/// A kill comes after this many acknowledged writes at most (the least is 1).
const MAX_ACKS_BEFORE_KILL: usize = 1_500;
/// The ConfigMaps' path.
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// What the server acknowledged last for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    /// Present with this resourceVersion and value.
    Present { rv: String, value: String },
    /// Absent (deleted, or never created).
    Absent,
}

/// One client's view of its keys: the last acknowledged state of each.
type Keys = BTreeMap<String, Known>;

/// Starts the server on `dir`; returns it, its URL and how long it took to be ready.
async fn start(dir: &Path) -> (Child, String, Duration) {
    let binary = std::env::var("KUBEMOCK_KILL9_BINARY").unwrap_or_else(|_| BINARY.to_owned());
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["serve", "--port", "0", "--no-controllers", "--data-dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock");
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::time::timeout(WAIT, BufReader::new(stdout).lines().next_line())
        .await
        .expect("ready line before the deadline")
        .expect("read stdout")
        .expect("a ready line");
    let url = line
        .strip_prefix("kubemock: serving on ")
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
        .to_owned();
    (child, url, started.elapsed())
}

fn configmap(name: &str, value: &str, rv: Option<&str>) -> Value {
    let mut metadata = json!({ "name": name });
    if let Some(rv) = rv {
        metadata["resourceVersion"] = json!(rv);
    }
    json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": { "v": value } })
}

fn rv_of(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_owned()
}

/// A value naming its writer and write, padded to a random length (now and then past 8 KiB).
fn value(rng: &mut fastrand::Rng, client: usize, seq: u64) -> String {
    let pad = if rng.u8(..10) == 0 {
        rng.usize(8 * 1024..24 * 1024)
    } else {
        rng.usize(0..600)
    };
    format!("{client}-{seq}-{}", "x".repeat(pad))
}

/// One client: writes its keys until a request fails (the server was killed) or `stop`.
/// Updates `keys` with every acknowledged answer; counts them in `acks`.
async fn client(
    url: String,
    id: usize,
    seed: u64,
    keys: Arc<Mutex<Keys>>,
    acks: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .expect("http client");
    let mut rng = fastrand::Rng::with_seed(seed);
    let names: Vec<String> = keys.lock().keys().cloned().collect();
    for seq in 0u64.. {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let name = &names[rng.usize(..names.len())];
        let known = keys.lock()[name].clone();
        let (outcome, state) = match known {
            Known::Absent => {
                let value = value(&mut rng, id, seq);
                let sent = http
                    .post(format!("{url}{CONFIGMAPS}"))
                    .json(&configmap(name, &value, None))
                    .send()
                    .await;
                (sent, Some(value))
            }
            Known::Present { rv, .. } if rng.u8(..4) == 0 => {
                let options = json!({
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "preconditions": { "resourceVersion": rv },
                });
                let sent = http
                    .delete(format!("{url}{CONFIGMAPS}/{name}"))
                    .json(&options)
                    .send()
                    .await;
                (sent, None)
            }
            Known::Present { rv, .. } => {
                let value = value(&mut rng, id, seq);
                let sent = http
                    .put(format!("{url}{CONFIGMAPS}/{name}"))
                    .json(&configmap(name, &value, Some(&rv)))
                    .send()
                    .await;
                (sent, Some(value))
            }
        };
        // A failure to send or to read the answer: the server is gone; the write is in flight.
        let Ok(response) = outcome else { return };
        let status = response.status();
        let Ok(body) = response.bytes().await else {
            return;
        };
        assert!(
            status.is_success(),
            "client {id}: {status} for {name} (its own key, guarded by what it last saw): {}",
            String::from_utf8_lossy(&body)
        );
        let next = match state {
            Some(value) => {
                let object: Value = serde_json::from_slice(&body).expect("a JSON object");
                assert_eq!(object["data"]["v"], json!(value), "{name}");
                Known::Present {
                    rv: rv_of(&object),
                    value,
                }
            }
            None => Known::Absent,
        };
        keys.lock().insert(name.clone(), next);
        acks.fetch_add(1, Ordering::AcqRel);
    }
}

/// What the server holds for `name`.
async fn fetch(http: &reqwest::Client, url: &str, name: &str) -> Known {
    let response = http
        .get(format!("{url}{CONFIGMAPS}/{name}"))
        .send()
        .await
        .expect("get after restart");
    match response.status().as_u16() {
        404 => Known::Absent,
        200 => {
            let object: Value = response.json().await.expect("a JSON object");
            Known::Present {
                rv: rv_of(&object),
                value: object["data"]["v"].as_str().expect("a value").to_owned(),
            }
        }
        other => panic!("GET {name} after restart: {other}"),
    }
}

/// Checks every client's keys against the restarted server; adopts what the server holds as
/// the clients' new view (so an in-flight write that went through is known from now on).
/// Returns how many keys had moved past their acknowledged state.
async fn verify(url: &str, clients: &[Arc<Mutex<Keys>>]) -> usize {
    let http = reqwest::Client::new();
    let mut moved_on = 0;
    for (id, keys) in clients.iter().enumerate() {
        let names: Vec<String> = keys.lock().keys().cloned().collect();
        let mut moved: Option<String> = None;
        for name in names {
            let acknowledged = keys.lock()[&name].clone();
            let held = fetch(&http, url, &name).await;
            if held == acknowledged {
                continue;
            }
            // Not what was acknowledged: only the client's one in-flight write may explain it,
            // and an acknowledged value is only ever replaced by a later one.
            if let (Known::Present { rv: acked, .. }, Known::Present { rv: now, .. }) =
                (&acknowledged, &held)
            {
                let acked: u64 = acked.parse().expect("numeric resourceVersion");
                let now: u64 = now.parse().expect("numeric resourceVersion");
                assert!(
                    now > acked,
                    "client {id}: {name} went back from acknowledged resourceVersion {acked} to {now}"
                );
            }
            if let Some(other) = moved.replace(name.clone()) {
                panic!(
                    "client {id}: acknowledged writes lost: {other} and {name} both differ \
                     (acknowledged {acknowledged:?}, held {held:?})"
                );
            }
            moved_on += 1;
            keys.lock().insert(name, held);
        }
    }
    moved_on
}

async fn kill_rounds(rounds: usize) {
    let seed = std::env::var("KUBEMOCK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("kill9: seed {seed} (replay with KUBEMOCK_TEST_SEED={seed})");
    let mut rng = fastrand::Rng::with_seed(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let clients: Vec<Arc<Mutex<Keys>>> = (0..CLIENTS)
        .map(|id| {
            let keys = (0..KEYS_PER_CLIENT)
                .map(|n| (format!("kill9-c{id}-k{n:02}"), Known::Absent))
                .collect();
            Arc::new(Mutex::new(keys))
        })
        .collect();
    let (mut server, mut url, _) = start(dir.path()).await;
    let mut total_acks = 0;
    let mut moved_on = 0;
    let mut restarts = Vec::new();
    for round in 0..rounds {
        let acks = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = tokio::task::JoinSet::new();
        for (id, keys) in clients.iter().enumerate() {
            tasks.spawn(client(
                url.clone(),
                id,
                rng.u64(..),
                Arc::clone(keys),
                Arc::clone(&acks),
                Arc::clone(&stop),
            ));
        }
        // Kill after a random number of acknowledged writes, then a random moment more.
        let kill_after = rng.usize(1..=MAX_ACKS_BEFORE_KILL);
        let deadline = Instant::now() + WAIT;
        while acks.load(Ordering::Acquire) < kill_after {
            assert!(
                Instant::now() < deadline,
                "round {round}: the clients stalled"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_micros(rng.u64(0..3_000))).await;
        server.start_kill().expect("SIGKILL the server");
        server.wait().await.expect("reap the server");
        stop.store(true, Ordering::Release);
        while let Some(result) = tasks.join_next().await {
            result.expect("client task");
        }
        total_acks += acks.load(Ordering::Acquire);

        let (restarted, restarted_url, took) = start(dir.path()).await;
        (server, url) = (restarted, restarted_url);
        restarts.push(took);
        moved_on += verify(&url, &clients).await;
    }
    server.start_kill().expect("stop the server");
    let _ = server.wait().await;
    // Restart times, early and late: the history grows from round to round.
    let median = |times: &[Duration]| {
        let mut times = times.to_vec();
        times.sort_unstable();
        times[times.len() / 2]
    };
    let tenth = restarts.len().div_ceil(10).max(1);
    eprintln!(
        "kill9: {rounds} rounds, {total_acks} acknowledged writes, 0 lost; {moved_on} in-flight \
         writes went through; restart (spawn to ready) median {:?}, first {tenth} rounds {:?}, \
         last {tenth} rounds {:?}, max {:?}",
        median(&restarts),
        median(&restarts[..tenth]),
        median(&restarts[restarts.len() - tenth..]),
        restarts.iter().max().copied().unwrap_or_default(),
    );
    assert!(
        total_acks >= rounds,
        "too few acknowledged writes to mean anything"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9_of_the_server_3_rounds() {
    kill_rounds(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 50 kill rounds; run with --ignored"]
async fn acknowledged_writes_survive_kill_9_of_the_server_50_rounds() {
    kill_rounds(50).await;
}
