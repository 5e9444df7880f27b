//! Reset and snapshots (`testing.kubemock.dev/v1` `resets` and `snapshots`): per-test
//! isolation without a restart, and a cluster's whole state saved to a file and started
//! from again.
//!
//! The startup state (after the bootstrap objects, `--restore` and `--load`) is kept in
//! memory as every key's stored bytes ([`Baseline`]). A reset compares the store with it and
//! writes the difference as ordinary store writes: keys added since are deleted, keys
//! changed are written back, keys deleted are created again. So the store's guarantees hold
//! across a reset: resourceVersions only move forward (a restored object has its startup
//! uid, timestamps and content, and a new resourceVersion), and every watcher sees the
//! reset as the DELETED, MODIFIED and ADDED events it amounts to, in order, with no gap
//! (or a 410 if it was too far behind, as after any burst of writes). Caches fed by
//! watches (informers, the server's own indexes of roles, webhooks, CRDs and Faults)
//! therefore follow. The writes go straight to the store: no admission, no finalizers, no
//! cascading deletion (the reset restores every key, so there is nothing to cascade to).
//!
//! A snapshot is every key's object (or bytes) at one revision, as JSON. `--restore`
//! writes them into an empty store before the bootstrap: uids, creation timestamps,
//! generations and managed fields are preserved, resourceVersions are not (the store
//! numbers its writes from 1; each item records the resourceVersion it had).

use std::collections::HashMap;
use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use kubemock_storage::{
    CreateOutcome, DeleteOutcome, Guard, Kv, RangeRequest, Revision, UpdateOutcome,
};
use serde_json::{Map, Value, json};

use crate::registry::testing::{GROUP, VERSION};
use crate::status::{ApiError, ApiResult};

/// Every key the API server writes starts with this.
const ROOT: &str = "/registry/";

/// Keys read per page when the whole store is read.
const PAGE: usize = 5000;

/// Rounds of a reset: a controller writing while the reset runs may leave a difference
/// behind, which the next round takes back; past this many rounds the reset answers with
/// what it did (and the keys still differing).
const MAX_ROUNDS: usize = 5;

/// The store as it was at startup: each key's stored bytes.
#[derive(Debug, Default)]
pub(crate) struct Baseline {
    values: HashMap<Bytes, Bytes>,
    /// The revision it was read at.
    revision: Revision,
}

/// Every key under [`ROOT`] at one revision, read page by page.
async fn read_all(store: &dyn Kv) -> ApiResult<(Vec<kubemock_storage::KeyValue>, Revision)> {
    let mut items = Vec::new();
    let mut revision = None;
    let mut after: Option<Bytes> = None;
    loop {
        let mut request = RangeRequest::prefix(ROOT).limit(PAGE);
        if let Some(key) = &after {
            request = request.start_after(key.clone());
        }
        if let Some(revision) = revision {
            request = request.at_revision(revision);
        }
        let page = store.range(request).await.map_err(ApiError::from_storage)?;
        revision = Some(page.revision);
        let more = page.more();
        after = page.items.last().map(|kv| kv.key.clone());
        items.extend(page.items);
        if !more {
            return Ok((items, revision.unwrap_or(0)));
        }
    }
}

/// Reads the startup state.
pub(crate) async fn capture(store: &dyn Kv) -> ApiResult<Baseline> {
    let (items, revision) = read_all(store).await?;
    Ok(Baseline {
        values: items.into_iter().map(|kv| (kv.key, kv.value)).collect(),
        revision,
    })
}

/// What a reset did.
#[derive(Debug, Default)]
pub(crate) struct Report {
    deleted: u64,
    created: u64,
    updated: u64,
    rounds: usize,
    /// Keys still differing after the last round (writes racing the reset).
    remaining: usize,
    revision: Revision,
    micros: u64,
}

/// Brings the store back to `baseline` (see the module documentation). The caller reloads
/// what the server keeps in memory over stored objects (the Service address allocator).
pub(crate) async fn reset(store: &dyn Kv, baseline: &Baseline) -> ApiResult<Report> {
    let started = Instant::now();
    let mut report = Report::default();
    for round in 1..=MAX_ROUNDS {
        report.rounds = round;
        let (items, _) = read_all(store).await?;
        let mut differing = 0usize;
        let mut present: HashMap<&Bytes, ()> = HashMap::with_capacity(items.len());
        // Added since: deleted.
        for kv in &items {
            present.insert(&kv.key, ());
            match baseline.values.get(&kv.key) {
                None => {
                    differing += 1;
                    match store
                        .delete(kv.key.clone(), Guard::ModRevision(kv.mod_revision))
                        .await
                        .map_err(ApiError::from_storage)?
                    {
                        DeleteOutcome::Deleted { .. } => report.deleted += 1,
                        _ => continue,
                    }
                }
                Some(value) if *value != kv.value => {
                    differing += 1;
                    if let UpdateOutcome::Updated { .. } = store
                        .update(
                            kv.key.clone(),
                            value.clone(),
                            Guard::ModRevision(kv.mod_revision),
                        )
                        .await
                        .map_err(ApiError::from_storage)?
                    {
                        report.updated += 1;
                    }
                }
                Some(_) => {}
            }
        }
        // Deleted since: created again.
        for (key, value) in &baseline.values {
            if present.contains_key(key) {
                continue;
            }
            differing += 1;
            if let CreateOutcome::Created(_) = store
                .create(key.clone(), value.clone())
                .await
                .map_err(ApiError::from_storage)?
            {
                report.created += 1;
            }
        }
        report.remaining = differing;
        if differing == 0 {
            break;
        }
    }
    report.revision = store
        .current_revision()
        .await
        .map_err(ApiError::from_storage)?;
    report.micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    Ok(report)
}

impl Report {
    /// The `Reset` object answered.
    pub(crate) fn to_object(&self, baseline: &Baseline) -> Value {
        json!({
            "kind": "Reset",
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "metadata": {"name": format!("reset-{}", self.revision)},
            "status": {
                "deleted": self.deleted,
                "created": self.created,
                "updated": self.updated,
                "rounds": self.rounds,
                "differing": self.remaining,
                "resourceVersion": self.revision.to_string(),
                "startupResourceVersion": baseline.revision.to_string(),
                "durationMicroseconds": self.micros,
            },
        })
    }
}

/// The whole store as a `Snapshot` object.
pub(crate) async fn snapshot(store: &dyn Kv) -> ApiResult<Value> {
    let (items, revision) = read_all(store).await?;
    let items: Vec<Value> = items
        .iter()
        .map(|kv| {
            let key = String::from_utf8_lossy(&kv.key).into_owned();
            let mut item = Map::new();
            item.insert("key".to_owned(), json!(key));
            item.insert(
                "resourceVersion".to_owned(),
                json!(kv.mod_revision.to_string()),
            );
            match serde_json::from_slice::<Value>(&kv.value) {
                Ok(object) => item.insert("object".to_owned(), object),
                Err(_) => item.insert("value".to_owned(), json!(BASE64.encode(&kv.value))),
            };
            Value::Object(item)
        })
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    Ok(json!({
        "kind": "Snapshot",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {"name": format!("snapshot-{revision}"),
            "creationTimestamp": kubemock_apimachinery::time::rfc3339(now)},
        "status": {"resourceVersion": revision.to_string(), "keys": items.len()},
        "items": items,
    }))
}

/// Why a snapshot cannot be restored.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The file is not a snapshot.
    #[error("not a snapshot: {0}")]
    Format(String),
    /// The store already holds objects.
    #[error("the store is not empty (a snapshot is restored into a new store only)")]
    NotEmpty,
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(#[from] kubemock_storage::Error),
}

/// Writes `snapshot` (a `Snapshot` object, as [`snapshot`] makes) into `store`, which must
/// hold no key under `/registry/`. Returns how many keys were written.
pub async fn restore(store: &dyn Kv, snapshot: &Value) -> Result<usize, RestoreError> {
    if snapshot.get("kind").and_then(Value::as_str) != Some("Snapshot") {
        return Err(RestoreError::Format(
            "kind is not Snapshot (write one with `kubemock snapshot save`)".to_owned(),
        ));
    }
    let items = snapshot
        .get("items")
        .and_then(Value::as_array)
        .ok_or_else(|| RestoreError::Format("no items".to_owned()))?;
    let existing = store.range(RangeRequest::prefix(ROOT).limit(1)).await?;
    if !existing.items.is_empty() {
        return Err(RestoreError::NotEmpty);
    }
    let mut written = 0;
    for (index, item) in items.iter().enumerate() {
        let key = item
            .get("key")
            .and_then(Value::as_str)
            .filter(|key| key.starts_with(ROOT))
            .ok_or_else(|| RestoreError::Format(format!("item {index}: no key under {ROOT}")))?;
        let value = match (item.get("object"), item.get("value")) {
            (Some(object), _) => serde_json::to_vec(object)
                .map_err(|err| RestoreError::Format(format!("item {index}: {err}")))?,
            (None, Some(Value::String(encoded))) => BASE64
                .decode(encoded)
                .map_err(|err| RestoreError::Format(format!("item {index}: {err}")))?,
            _ => {
                return Err(RestoreError::Format(format!(
                    "item {index}: neither object nor value"
                )));
            }
        };
        if let CreateOutcome::Created(_) = store
            .create(Bytes::from(key.to_owned()), Bytes::from(value))
            .await?
        {
            written += 1;
        }
    }
    Ok(written)
}
