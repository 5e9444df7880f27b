//! A watch checker in the style of etcd's robustness tests: writers change ConfigMaps over a
//! small key space while watchers follow them the way client-go's reflector does, and afterwards
//! every watcher's observed events are compared with the history the writers had acknowledged.
//!
//! Why it exists: a watch is the API's hardest promise (every change after a resourceVersion,
//! in order, no gap, no duplicate, across reconnects, compaction and relists), and its failures
//! (one event lost in a reconnect, one replayed twice after a 410) are invisible to tests that
//! look at one stream for a moment.
//!
//! Writers create (POST), update (unconditional PUT) and delete ConfigMaps in one namespace and
//! record every acknowledged answer: creates and updates carry their resourceVersion. A delete
//! reads the object, then deletes it with that resourceVersion as its precondition, so that an
//! acknowledged delete is known to follow exactly the change it read (a DELETE answer carries
//! no resourceVersion: a `Status`, as upstream's for ConfigMaps). Watchers list, then watch from the list's resourceVersion with
//! bookmarks and a short `timeoutSeconds`, resume from the last resourceVersion they saw (event
//! or bookmark) when a stream ends, now and then after a pause (so that compaction overtakes
//! them), and relist on 410 (an HTTP 410 or an in-stream ERROR event with code 410). At the end a
//! last create (the sentinel) marks the end of history, and every watcher is followed to it.
//!
//! The check. The acknowledged writes give each key's timeline: creates and updates at known
//! revisions, each delete right after the change it followed and before the key's next known
//! change. A delete's own revision is learnt from the watchers that saw it: they must agree, and
//! it must fall in that window. Every watcher's events between two relists form a segment that
//! covers `(list revision, last revision it saw]`; its events must be exactly the acknowledged
//! history in that range, in order: no missed event, no duplicate, nothing out of order, nothing
//! unexpected (no change nobody acknowledged, no wrong key, kind or value). A delete no watcher
//! saw counts as missed by every segment that covers its whole window. Each list must equal the
//! acknowledged state at its revision.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

/// Deadline of a single request, and of the wait for the watchers to reach the end of history.
const WAIT: Duration = Duration::from_secs(60);
/// A watch stream silent this long is broken (bookmarks keep a healthy one talking).
const SILENCE: Duration = Duration::from_secs(30);
/// Longest `timeoutSeconds` of a watch: streams end often, so watchers resume often.
const MAX_WATCH_SECONDS: u64 = 5;
/// One reconnect in this many pauses first, so that compaction overtakes the watcher.
const PAUSE_ONE_IN: u8 = 5;
/// Name of the last write, whose revision ends the history.
const SENTINEL: &str = "watchcheck-sentinel";

/// `kubemock serve` flags for a server under this check: no controllers (nothing else writes),
/// history kept for 200 revisions only and compacted every 100 ms (a watcher that pauses for a
/// few hundred milliseconds gets a 410 and relists), a bookmark every second.
pub const SERVE_ARGS: &[&str] = &[
    "--no-controllers",
    "--history-min-revisions",
    "200",
    "--history-min-age",
    "0s",
    "--compaction-interval",
    "100ms",
    "--bookmark-interval",
    "1s",
];

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server's URL, `http://HOST:PORT`.
    pub url: String,
    /// The namespace to write in (created if missing); nothing else may write ConfigMaps in it.
    pub namespace: String,
    /// Concurrent writers.
    pub writers: usize,
    /// Concurrent watchers.
    pub watchers: usize,
    /// ConfigMap names the writers choose from.
    pub keys: usize,
    /// How long the writers write.
    pub duration: Duration,
    /// Longest pause of a watcher before it resumes (see [`PAUSE_ONE_IN`]).
    pub max_pause: Duration,
    /// Seed of every random choice.
    pub seed: u64,
    /// Whether the first watcher, once, waits before it resumes until its resume point is
    /// compacted (a list at it answers 410), so that the run has at least one relist whatever
    /// the timing: for tests.
    pub force_relist: bool,
}

/// What a run found. It passed if [`Report::failures`] is empty.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Acknowledged creates (the sentinel included), updates and deletes.
    pub creates: u64,
    /// See `creates`.
    pub updates: u64,
    /// See `creates`.
    pub deletes: u64,
    /// Deletes whose revision some watcher saw.
    pub deletes_resolved: u64,
    /// Events the watchers received and that were checked.
    pub events: u64,
    /// Segments checked (a watcher's events between two lists).
    pub segments: u64,
    /// Relists after a 410.
    pub relists: u64,
    /// Events of the acknowledged history a segment covers but did not deliver.
    pub missed: u64,
    /// Events delivered twice.
    pub duplicated: u64,
    /// Events delivered after a later one.
    pub out_of_order: u64,
    /// Events no acknowledged write explains (or with the wrong key, kind or value).
    pub unexpected: u64,
    /// Lists that differ from the acknowledged state at their revision.
    pub list_mismatches: u64,
    /// The first few problems, described.
    pub failures: Vec<String>,
}

/// At most this many problems are described in a report.
const DESCRIBED: usize = 20;

impl Report {
    fn fail(&mut self, message: String) {
        if self.failures.len() < DESCRIBED {
            self.failures.push(message);
        }
    }

    /// True if no watcher missed, repeated, reordered or invented anything and every list
    /// matched.
    pub fn passed(&self) -> bool {
        self.missed == 0
            && self.duplicated == 0
            && self.out_of_order == 0
            && self.unexpected == 0
            && self.list_mismatches == 0
            && self.failures.is_empty()
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "acknowledged writes {} ({} creates, {} updates, {} deletes, {} of their revisions \
             seen), events checked {}, segments {}, relists after 410 {}; missed {}, duplicated \
             {}, out of order {}, unexpected {}, list mismatches {}",
            self.creates + self.updates + self.deletes,
            self.creates,
            self.updates,
            self.deletes,
            self.deletes_resolved,
            self.events,
            self.segments,
            self.relists,
            self.missed,
            self.duplicated,
            self.out_of_order,
            self.unexpected,
            self.list_mismatches,
        )
    }
}

/// What a change did, as a watch event names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Added,
    Modified,
    Deleted,
}

/// An acknowledged write.
#[derive(Debug, Clone)]
enum Ack {
    /// A create or update at `rv`, leaving `value`.
    Put { kind: Kind, rv: u64, value: String },
    /// A delete of the state at `after` (the revision it followed), which held `value`.
    Delete { after: u64, value: String },
}

/// An event a watcher received.
#[derive(Debug, Clone)]
struct Observed {
    kind: Kind,
    rv: u64,
    name: String,
    value: String,
}

/// A watcher's events between two lists.
#[derive(Debug, Default)]
struct Segment {
    /// The list's revision and what it held: name to (resourceVersion, value).
    listed_at: u64,
    listed: BTreeMap<String, (u64, String)>,
    events: Vec<Observed>,
    /// Every change up to this revision was promised (the last event or bookmark).
    covered: u64,
}

/// Runs the writers and watchers against `config.url`, then checks; an error means the run
/// itself failed (a request the checker cannot interpret), not that the check found problems.
pub async fn run(config: &Config) -> anyhow::Result<Report> {
    let client = reqwest::Client::builder()
        .connect_timeout(WAIT)
        .build()
        .context("building the HTTP client")?;
    let base = format!(
        "{}/api/v1/namespaces/{}/configmaps",
        config.url.trim_end_matches('/'),
        config.namespace
    );
    create_namespace(&client, &config.url, &config.namespace).await?;

    let (end_sender, end) = watch::channel(None);
    let mut watchers = tokio::task::JoinSet::new();
    for id in 0..config.watchers {
        watchers.spawn(watcher(
            client.clone(),
            base.clone(),
            config.max_pause,
            config.seed ^ (0x5741_5443_4845_5200 + id as u64),
            end.clone(),
            config.force_relist && id == 0,
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = tokio::task::JoinSet::new();
    for id in 0..config.writers {
        writers.spawn(writer(
            client.clone(),
            base.clone(),
            id,
            config.keys.max(1),
            config.seed ^ (0x5752_4954_4552_0000 + id as u64),
            Arc::clone(&stop),
        ));
    }
    tokio::time::sleep(config.duration).await;
    stop.store(true, Ordering::Release);
    let mut acks: HashMap<String, Vec<Ack>> = HashMap::new();
    while let Some(result) = writers.join_next().await {
        for (name, ack) in result.context("a writer panicked")?? {
            acks.entry(name).or_default().push(ack);
        }
    }
    // The end of history: every write so far is below the sentinel's revision.
    let Some((kind, rv, value)) = put(&client, &base, SENTINEL, "end", None).await? else {
        bail!("{SENTINEL} exists already: run in a fresh namespace");
    };
    acks.entry(SENTINEL.to_owned())
        .or_default()
        .push(Ack::Put { kind, rv, value });
    end_sender.send_replace(Some(rv));
    let mut logs = Vec::new();
    let deadline = Instant::now() + WAIT;
    while let Some(result) = tokio::time::timeout_at(deadline.into(), watchers.join_next())
        .await
        .map_err(|_| anyhow!("the watchers did not reach the end of history within {WAIT:?}"))?
    {
        logs.push(result.context("a watcher panicked")??);
    }
    Ok(check(acks, &logs))
}

async fn create_namespace(
    client: &reqwest::Client,
    url: &str,
    namespace: &str,
) -> anyhow::Result<()> {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    let response = client
        .post(format!("{}/api/v1/namespaces", url.trim_end_matches('/')))
        .timeout(WAIT)
        .json(&body)
        .send()
        .await
        .context("creating the namespace")?;
    match response.status().as_u16() {
        201 | 409 => Ok(()),
        status => bail!("creating the namespace: {status}"),
    }
}

fn resource_version(object: &Value) -> anyhow::Result<u64> {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .ok_or_else(|| anyhow!("no numeric resourceVersion in {object}"))
}

fn value_of(object: &Value) -> String {
    object["data"]["v"].as_str().unwrap_or_default().to_owned()
}

/// Creates (no `update`) or replaces `name` with `value`: what the change was (201: a create,
/// 200: an update), its resourceVersion and value. A create of an existing name, or an update
/// of a missing one, changed nothing: `None`.
async fn put(
    client: &reqwest::Client,
    base: &str,
    name: &str,
    value: &str,
    update: Option<()>,
) -> anyhow::Result<Option<(Kind, u64, String)>> {
    let body = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": value},
    });
    let request = match update {
        None => client.post(base),
        Some(()) => client.put(format!("{base}/{name}")),
    };
    let response = request
        .timeout(WAIT)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("writing {name}"))?;
    let status = response.status().as_u16();
    let object: Value = response
        .json()
        .await
        .with_context(|| format!("reading the answer to the write of {name}"))?;
    let kind = match status {
        201 => Kind::Added,
        200 => Kind::Modified,
        404 | 409 => return Ok(None),
        _ => bail!("writing {name}: {status}: {object}"),
    };
    Ok(Some((kind, resource_version(&object)?, value_of(&object))))
}

/// One writer: random creates, updates and deletes until `stop`; returns its acknowledged
/// writes in the order it made them.
async fn writer(
    client: reqwest::Client,
    base: String,
    id: usize,
    keys: usize,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Vec<(String, Ack)>> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut acks = Vec::new();
    for seq in 0u64.. {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let name = format!("cm-{:04}", rng.usize(..keys));
        let value = format!("w{id}-{seq}");
        match rng.u8(..10) {
            op @ 0..=7 => {
                let update = (op >= 4).then_some(());
                if let Some((kind, rv, value)) = put(&client, &base, &name, &value, update).await? {
                    acks.push((name, Ack::Put { kind, rv, value }));
                }
            }
            _ => {
                if let Some(ack) = delete(&client, &base, &name).await? {
                    acks.push((name, ack));
                }
            }
        }
    }
    Ok(acks)
}

/// Reads `name`, then deletes it if it is still what was read: the acknowledged delete, or
/// `None` if it was absent or changed in between.
async fn delete(client: &reqwest::Client, base: &str, name: &str) -> anyhow::Result<Option<Ack>> {
    let url = format!("{base}/{name}");
    let response = client
        .get(&url)
        .timeout(WAIT)
        .send()
        .await
        .with_context(|| format!("reading {name}"))?;
    let status = response.status().as_u16();
    let object: Value = response
        .json()
        .await
        .with_context(|| format!("reading {name}"))?;
    match status {
        200 => {}
        404 => return Ok(None),
        _ => bail!("reading {name}: {status}: {object}"),
    }
    let after = resource_version(&object)?;
    let options = json!({
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"resourceVersion": after.to_string()},
    });
    let response = client
        .delete(&url)
        .timeout(WAIT)
        .json(&options)
        .send()
        .await
        .with_context(|| format!("deleting {name}"))?;
    let status = response.status().as_u16();
    let answer = response
        .text()
        .await
        .with_context(|| format!("reading the answer to the delete of {name}"))?;
    match status {
        200 => Ok(Some(Ack::Delete {
            after,
            value: value_of(&object),
        })),
        404 | 409 => Ok(None),
        _ => bail!("deleting {name}: {status}: {answer}"),
    }
}

/// Lists the namespace's ConfigMaps: the list's revision and name to (rv, value).
async fn list(
    client: &reqwest::Client,
    base: &str,
) -> anyhow::Result<(u64, BTreeMap<String, (u64, String)>)> {
    let response = client
        .get(base)
        .timeout(WAIT)
        .send()
        .await
        .context("listing")?;
    let status = response.status();
    let body: Value = response.json().await.context("reading a list")?;
    if !status.is_success() {
        bail!("listing: {status}: {body}");
    }
    let mut items = BTreeMap::new();
    for item in body["items"].as_array().into_iter().flatten() {
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        items.insert(name.to_owned(), (resource_version(item)?, value_of(item)));
    }
    Ok((resource_version(&body)?, items))
}

/// How a watch stream ended.
enum StreamEnd {
    /// Timed out or closed: resume from the last revision seen.
    Resume,
    /// 410: relist.
    Gone,
    /// The end of history was reached.
    Done,
}

/// One watcher: list, watch, resume, relist on 410, until it has seen the end of history.
async fn watcher(
    client: reqwest::Client,
    base: String,
    max_pause: Duration,
    seed: u64,
    mut end: watch::Receiver<Option<u64>>,
    mut force_relist: bool,
) -> anyhow::Result<Vec<Segment>> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut segments: Vec<Segment> = Vec::new();
    'relist: loop {
        let (listed_at, listed) = list(&client, &base).await?;
        segments.push(Segment {
            listed_at,
            listed,
            events: Vec::new(),
            covered: listed_at,
        });
        let segment = segments.last_mut().expect("just pushed");
        loop {
            if end.borrow().is_some_and(|end| segment.covered >= end) {
                return Ok(segments);
            }
            if force_relist && segment.covered > segment.listed_at {
                force_relist = false;
                wait_until_compacted(&client, &base, segment.covered).await?;
            } else if !max_pause.is_zero() && rng.u8(..PAUSE_ONE_IN) == 0 {
                let pause = rng.u64(..=max_pause.as_millis() as u64);
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            // Until it has been made to relist, the forced watcher resumes every second.
            let timeout_seconds = match force_relist {
                true => 1,
                false => rng.u64(1..=MAX_WATCH_SECONDS),
            };
            match follow(&client, &base, segment, timeout_seconds, &mut end).await? {
                StreamEnd::Resume => {}
                StreamEnd::Gone => continue 'relist,
                StreamEnd::Done => return Ok(segments),
            }
        }
    }
}

/// Waits until a list at `revision` answers 410: compaction has passed it.
async fn wait_until_compacted(
    client: &reqwest::Client,
    base: &str,
    revision: u64,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let status = client
            .get(format!(
                "{base}?resourceVersion={revision}&resourceVersionMatch=Exact&limit=1"
            ))
            .timeout(WAIT)
            .send()
            .await
            .context("listing at an old revision")?
            .status();
        match status.as_u16() {
            410 => return Ok(()),
            200 if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            200 => bail!("revision {revision} was not compacted within {WAIT:?}"),
            _ => bail!("listing at revision {revision}: {status}"),
        }
    }
}

/// One watch stream from `segment.covered`: appends what it delivers to `segment`.
async fn follow(
    client: &reqwest::Client,
    base: &str,
    segment: &mut Segment,
    timeout_seconds: u64,
    end: &mut watch::Receiver<Option<u64>>,
) -> anyhow::Result<StreamEnd> {
    let url = format!(
        "{base}?watch=true&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={timeout_seconds}",
        segment.covered
    );
    let response = client.get(&url).send().await.context("starting a watch")?;
    match response.status().as_u16() {
        200 => {}
        410 => return Ok(StreamEnd::Gone),
        status => bail!(
            "watch: {status}: {}",
            response.text().await.unwrap_or_default()
        ),
    }
    let mut body = response.bytes_stream();
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let chunk = tokio::select! {
            chunk = tokio::time::timeout(SILENCE, body.next()) => chunk
                .map_err(|_| anyhow!("a watch stream was silent for {SILENCE:?}"))?,
            // The end of history became known: it may be reached already.
            changed = end.changed(), if end.borrow().is_none() => {
                if changed.is_ok() && end.borrow().is_some_and(|end| segment.covered >= end) {
                    return Ok(StreamEnd::Done);
                }
                continue;
            }
        };
        let Some(chunk) = chunk else {
            return Ok(StreamEnd::Resume);
        };
        let Ok(chunk) = chunk else {
            // A connection cut mid-stream: resume, as a client does.
            return Ok(StreamEnd::Resume);
        };
        pending.extend_from_slice(&chunk);
        while let Some(at) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=at).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let event: Value = serde_json::from_slice(&line).context("a watch event")?;
            let object = &event["object"];
            let kind = match event["type"].as_str() {
                Some("ADDED") => Kind::Added,
                Some("MODIFIED") => Kind::Modified,
                Some("DELETED") => Kind::Deleted,
                Some("BOOKMARK") => {
                    segment.covered = segment.covered.max(resource_version(object)?);
                    if end.borrow().is_some_and(|end| segment.covered >= end) {
                        return Ok(StreamEnd::Done);
                    }
                    continue;
                }
                Some("ERROR") if object["code"] == json!(410) => return Ok(StreamEnd::Gone),
                _ => bail!("unexpected watch event {event}"),
            };
            let rv = resource_version(object)?;
            segment.events.push(Observed {
                kind,
                rv,
                name: object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                value: value_of(object),
            });
            segment.covered = segment.covered.max(rv);
            if end.borrow().is_some_and(|end| segment.covered >= end) {
                return Ok(StreamEnd::Done);
            }
        }
    }
}

/// One change of the acknowledged history.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    kind: Kind,
    name: String,
    value: String,
}

/// A delete whose revision no watcher saw: it lies in `(after, before)`.
struct Unresolved {
    name: String,
    after: u64,
    before: u64,
}

/// Compares the watchers' segments with the acknowledged writes.
fn check(acks: HashMap<String, Vec<Ack>>, logs: &[Vec<Segment>]) -> Report {
    let mut report = Report::default();
    // The deletes' revisions, as watchers saw them: (name, revision it followed) -> revisions.
    let mut seen_deletes: HashMap<(String, u64), Vec<u64>> = HashMap::new();
    // Known revisions, to tell which change a DELETED event followed.
    let mut history: BTreeMap<u64, Change> = BTreeMap::new();
    let mut timelines: HashMap<String, Vec<(u64, Ack)>> = HashMap::new();
    for (name, mut writes) in acks {
        // A key's puts in revision order; each delete goes right after the change it followed.
        writes.sort_by_key(|ack| match ack {
            Ack::Put { rv, .. } => (*rv, 0),
            Ack::Delete { after, .. } => (*after, 1),
        });
        let mut timeline = Vec::new();
        for ack in writes {
            match &ack {
                Ack::Put { kind, rv, value } => {
                    *match kind {
                        Kind::Added => &mut report.creates,
                        _ => &mut report.updates,
                    } += 1;
                    history.insert(
                        *rv,
                        Change {
                            kind: *kind,
                            name: name.clone(),
                            value: value.clone(),
                        },
                    );
                    timeline.push((*rv, ack));
                }
                Ack::Delete { after, .. } => {
                    report.deletes += 1;
                    timeline.push((*after, ack));
                }
            }
        }
        timelines.insert(name, timeline);
    }
    for segment in logs.iter().flatten() {
        for event in segment.events.iter().filter(|e| e.kind == Kind::Deleted) {
            // The change it followed: the key's last known put below it.
            let after = timelines.get(&event.name).and_then(|timeline| {
                timeline
                    .iter()
                    .filter_map(|(rv, ack)| match ack {
                        Ack::Put { .. } if *rv < event.rv => Some(*rv),
                        _ => None,
                    })
                    .next_back()
            });
            if let Some(after) = after {
                seen_deletes
                    .entry((event.name.clone(), after))
                    .or_default()
                    .push(event.rv);
            }
        }
    }
    // Place every delete: at the revision the watchers agree on, inside its window.
    let mut unresolved = Vec::new();
    for (name, timeline) in &timelines {
        for (i, (after, ack)) in timeline.iter().enumerate() {
            let Ack::Delete { value, .. } = ack else {
                continue;
            };
            let before = timeline[i + 1..]
                .iter()
                .find_map(|(rv, ack)| matches!(ack, Ack::Put { .. }).then_some(*rv))
                .unwrap_or(u64::MAX);
            let mut seen = seen_deletes
                .remove(&(name.clone(), *after))
                .unwrap_or_default();
            seen.sort_unstable();
            seen.dedup();
            match seen.as_slice() {
                [] => unresolved.push(Unresolved {
                    name: name.clone(),
                    after: *after,
                    before,
                }),
                [rv] if *rv > *after && *rv < before && !history.contains_key(rv) => {
                    report.deletes_resolved += 1;
                    history.insert(
                        *rv,
                        Change {
                            kind: Kind::Deleted,
                            name: name.clone(),
                            value: value.clone(),
                        },
                    );
                }
                revisions => {
                    report.unexpected += 1;
                    report.fail(format!(
                        "the delete of {name} after {after} was seen at {revisions:?}, expected \
                         one revision in ({after}, {before}) that no other change has"
                    ));
                }
            }
        }
    }
    // DELETED events that follow no acknowledged delete.
    for ((name, after), revisions) in seen_deletes {
        report.unexpected += revisions.len() as u64;
        report.fail(format!(
            "DELETED {name} at {revisions:?}: no acknowledged delete followed its change {after}"
        ));
    }

    let states = states(&history);
    for (watcher, segments) in logs.iter().enumerate() {
        report.relists += segments.len().saturating_sub(1) as u64;
        for segment in segments {
            report.segments += 1;
            check_list(&mut report, watcher, segment, &states, &unresolved);
            check_segment(&mut report, watcher, segment, &history, &unresolved);
        }
    }
    report
}

/// Every key's known changes in revision order: (revision, value after it, `None` if deleted).
type States = HashMap<String, Vec<(u64, Option<String>)>>;

fn states(history: &BTreeMap<u64, Change>) -> States {
    let mut states: States = HashMap::new();
    for (rv, change) in history {
        let value = (change.kind != Kind::Deleted).then(|| change.value.clone());
        states
            .entry(change.name.clone())
            .or_default()
            .push((*rv, value));
    }
    states
}

/// The acknowledged state at the list's revision, compared with the list.
fn check_list(
    report: &mut Report,
    watcher: usize,
    segment: &Segment,
    states: &States,
    unresolved: &[Unresolved],
) {
    let at = segment.listed_at;
    for (name, changes) in states {
        // The key's last known change at or below the list's revision.
        let upto = changes.partition_point(|(rv, _)| *rv <= at);
        let expected = upto.checked_sub(1).and_then(|i| {
            changes[i]
                .1
                .as_ref()
                .map(|value| (changes[i].0, value.as_str()))
        });
        // A delete no watcher saw, in a window around the list: either state is possible.
        let either = unresolved
            .iter()
            .any(|u| u.name == *name && u.after <= at && at < u.before);
        let listed = segment
            .listed
            .get(name)
            .map(|(rv, value)| (*rv, value.as_str()));
        if listed != expected && !(either && listed.is_none()) {
            report.list_mismatches += 1;
            report.fail(format!(
                "watcher {watcher}: list at {at} has {name} as {listed:?}, acknowledged {expected:?}"
            ));
        }
    }
    for name in segment.listed.keys() {
        if !states.contains_key(name) {
            report.list_mismatches += 1;
            report.fail(format!(
                "watcher {watcher}: list at {at} has {name}, which nobody wrote"
            ));
        }
    }
}

/// A segment's events against the history in `(listed_at, covered]`.
fn check_segment(
    report: &mut Report,
    watcher: usize,
    segment: &Segment,
    history: &BTreeMap<u64, Change>,
    unresolved: &[Unresolved],
) {
    let (from, to) = (segment.listed_at, segment.covered);
    report.events += segment.events.len() as u64;
    let mut delivered: HashMap<u64, usize> = HashMap::new();
    let mut last = from;
    for event in &segment.events {
        *delivered.entry(event.rv).or_default() += 1;
        if event.rv <= last {
            if delivered[&event.rv] > 1 {
                report.duplicated += 1;
                report.fail(format!("watcher {watcher}: {event:?} delivered twice"));
            } else {
                report.out_of_order += 1;
                report.fail(format!(
                    "watcher {watcher}: {event:?} after revision {last} (segment from {from})"
                ));
            }
        }
        last = last.max(event.rv);
        let explained = history.get(&event.rv).is_some_and(|change| {
            change.kind == event.kind && change.name == event.name && change.value == event.value
        });
        if !explained {
            report.unexpected += 1;
            report.fail(format!(
                "watcher {watcher}: {event:?} is not the acknowledged change at that revision \
                 ({:?})",
                history.get(&event.rv)
            ));
        }
    }
    for (rv, change) in history
        .range(from..=to.max(from))
        .filter(|(rv, _)| **rv > from)
    {
        if !delivered.contains_key(rv) {
            report.missed += 1;
            report.fail(format!(
                "watcher {watcher}: missed {change:?} at {rv} (segment ({from}, {to}])"
            ));
        }
    }
    for delete in unresolved {
        if delete.after >= from && delete.before <= to {
            report.missed += 1;
            report.fail(format!(
                "watcher {watcher}: missed the delete of {} in ({}, {}) (segment ({from}, {to}])",
                delete.name, delete.after, delete.before
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(kind: Kind, rv: u64, value: &str) -> Ack {
        Ack::Put {
            kind,
            rv,
            value: value.to_owned(),
        }
    }

    fn event(kind: Kind, rv: u64, name: &str, value: &str) -> Observed {
        Observed {
            kind,
            rv,
            name: name.to_owned(),
            value: value.to_owned(),
        }
    }

    /// `a` created at 1, `b` at 2, `a` updated at 3, `a` deleted at 4 (after 3), `b` updated at
    /// 5, `a` created again at 6.
    fn acks() -> HashMap<String, Vec<Ack>> {
        HashMap::from([
            (
                "a".to_owned(),
                vec![
                    put(Kind::Added, 1, "a1"),
                    put(Kind::Modified, 3, "a3"),
                    Ack::Delete {
                        after: 3,
                        value: "a3".to_owned(),
                    },
                    put(Kind::Added, 6, "a6"),
                ],
            ),
            (
                "b".to_owned(),
                vec![put(Kind::Added, 2, "b2"), put(Kind::Modified, 5, "b5")],
            ),
        ])
    }

    /// The whole history as one watcher sees it from revision 0.
    fn all_events() -> Vec<Observed> {
        vec![
            event(Kind::Added, 1, "a", "a1"),
            event(Kind::Added, 2, "b", "b2"),
            event(Kind::Modified, 3, "a", "a3"),
            event(Kind::Deleted, 4, "a", "a3"),
            event(Kind::Modified, 5, "b", "b5"),
            event(Kind::Added, 6, "a", "a6"),
        ]
    }

    fn segment(listed_at: u64, listed: &[(&str, u64, &str)], events: Vec<Observed>) -> Segment {
        let covered = events.iter().map(|e| e.rv).max().unwrap_or(listed_at);
        Segment {
            listed_at,
            listed: listed
                .iter()
                .map(|(name, rv, value)| ((*name).to_owned(), (*rv, (*value).to_owned())))
                .collect(),
            events,
            covered,
        }
    }

    #[test]
    fn the_exact_history_passes_and_the_delete_is_placed() {
        let report = check(acks(), &[vec![segment(0, &[], all_events())]]);
        assert!(report.passed(), "{report:?}");
        assert_eq!((report.events, report.deletes_resolved), (6, 1));
    }

    #[test]
    fn a_relist_after_a_gap_is_consistent_with_its_list() {
        // Saw 1..=2, got a 410, listed at 4 (a deleted, b at 2), then saw 5 and 6.
        let first = segment(0, &[], all_events()[..2].to_vec());
        let second = segment(4, &[("b", 2, "b2")], all_events()[4..].to_vec());
        // The delete at 4 is learnt from another watcher.
        let other = segment(0, &[], all_events());
        let report = check(acks(), &[vec![first, second], vec![other]]);
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.relists, 1);
    }

    #[test]
    fn missed_duplicated_reordered_and_invented_events_are_counted() {
        let mut events = all_events();
        events.remove(2); // missed: a at 3
        let report = check(acks(), &[vec![segment(0, &[], events)]]);
        assert_eq!(report.missed, 1, "{report:?}");

        let mut events = all_events();
        events.insert(3, events[2].clone());
        let report = check(acks(), &[vec![segment(0, &[], events)]]);
        assert_eq!(report.duplicated, 1, "{report:?}");

        let mut events = all_events();
        events.swap(4, 5);
        let report = check(acks(), &[vec![segment(0, &[], events)]]);
        assert_eq!(report.out_of_order, 1, "{report:?}");

        let mut events = all_events();
        events[4].value = "not what was written".to_owned();
        let report = check(acks(), &[vec![segment(0, &[], events)]]);
        assert_eq!(report.unexpected, 1, "{report:?}");
    }

    #[test]
    fn a_delete_nobody_saw_is_missed_by_whoever_covered_it() {
        let mut events = all_events();
        events.remove(3);
        let report = check(acks(), &[vec![segment(0, &[], events)]]);
        assert_eq!(
            (report.missed, report.deletes_resolved),
            (1, 0),
            "{report:?}"
        );
        // A segment that ends inside the delete's window (3, 6) cannot tell.
        let report = check(acks(), &[vec![segment(0, &[], all_events()[..3].to_vec())]]);
        assert!(report.passed(), "{report:?}");
    }

    #[test]
    fn a_list_that_differs_from_the_acknowledged_state_is_a_mismatch() {
        let events = all_events();
        let stale = segment(4, &[("a", 3, "a3"), ("b", 2, "b2")], events[4..].to_vec());
        let report = check(acks(), &[vec![stale], vec![segment(0, &[], events)]]);
        assert_eq!(report.list_mismatches, 1, "{report:?}");
    }
}
