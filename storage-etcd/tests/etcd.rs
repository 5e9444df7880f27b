//! The store trait's tests (storage/tests/common: the model, watch, compaction and
//! concurrency tests the sled store runs) against the etcd store over a real etcd process
//! (`kubemock_storage_etcd::testing`), plus what only a networked backend has: a second store
//! over the same etcd, etcd going away and coming back, a lagging watcher.
//!
//! Each test starts its own etcd (about a second), so that revisions start from etcd's first.
//! Without an etcd binary the tests print a loud SKIPPED and pass, unless `CI` or
//! `KUBEMOCK_REQUIRE_ETCD` is set (`.ci/run` sets it): then they fail.

#[path = "../../storage/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::model::{self, Backend};
use kubemock_storage::{CreateOutcome, Error, Guard, Kv, RangeRequest, WatchItem};
use kubemock_storage_etcd::testing::EtcdServer;
use kubemock_storage_etcd::{EtcdConfig, EtcdStore};

/// The etcd store under the model (etcd cannot be reopened like a sled data directory: it is
/// a server; the restart test covers that).
struct Etcd(EtcdStore);

impl Backend for Etcd {
    fn store(&self) -> &dyn Kv {
        &self.0
    }

    fn watch_cache(&self) -> bool {
        true
    }
}

/// A test etcd, or `None` (skipped) when there is none and none is required.
async fn etcd(test: &str) -> Option<EtcdServer> {
    EtcdServer::start(test).await
}

/// A store with a watch buffer large enough for the bursts of these tests.
async fn store(server: &EtcdServer) -> EtcdStore {
    EtcdStore::connect(server.config().watch_buffer(1 << 16))
        .await
        .expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_store_matches_the_model() {
    let Some(server) = etcd("etcd_store_matches_the_model").await else {
        return;
    };
    let seed = common::seed("model/etcd");
    // One seed, fewer steps than sled's 16 x 1,800: every step is a round trip to etcd.
    model::run(Etcd(store(&server).await), seed, 700).await;
}

/// The model again with the watch caches on the model's own prefixes (`a/`, `ab/`, `c/`; a
/// cache is cut after the first `/`), and a window of 16 events, so that watches are served
/// from caches, replayed from their windows, or sent to etcd when older than the window, and
/// `resourceVersion=0` reads come from the caches' objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_store_with_watch_caches_matches_the_model() {
    let Some(server) = etcd("etcd_store_with_watch_caches_matches_the_model").await else {
        return;
    };
    let seed = common::seed("model/etcd-cached");
    let store = EtcdStore::connect(
        server
            .config()
            .watch_buffer(1 << 16)
            .watch_cache_depth(Some(1))
            .watch_cache_events(16),
    )
    .await
    .expect("connect");
    let backend = model::run(Etcd(store), seed, 700).await;
    assert!(backend.0.watch_counts().caches >= 1, "no cache was used");
}

/// The shared watch and progress tests with every watch of a prefix such as `/burst/` served
/// by a cache (cut after the second `/`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cached_watchers_mid_burst_and_progress() {
    let Some(server) = etcd("etcd_cached_watchers_mid_burst_and_progress").await else {
        return;
    };
    let store = EtcdStore::connect(
        server
            .config()
            .watch_buffer(1 << 16)
            .watch_cache_depth(Some(2)),
    )
    .await
    .expect("connect");
    common::suite::progress_reports_the_revision_everything_was_delivered_up_to(&store).await;
    let shared: Arc<dyn Kv> = Arc::new(store.clone());
    common::suite::watcher_created_mid_burst_sees_every_later_event_once(
        Arc::clone(&shared),
        4,
        150,
    )
    .await;
    common::suite::a_read_after_an_event_sees_at_least_that_revision(shared, 200, 8).await;
    assert!(
        store.watch_counts().caches >= 2,
        "{:?}",
        store.watch_counts()
    );
}

/// The point of the watch cache: many watchers of one resource (whole, by namespace, one
/// object) hold one etcd watch between them; each sees exactly its events, in order; a
/// `resourceVersion=0` read is the cache's snapshot; a watcher from before the window gets an
/// etcd watch of its own; the cache stays when its watchers go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_of_a_resource_share_one_etcd_watch() {
    let Some(server) = etcd("many_watchers_of_a_resource_share_one_etcd_watch").await else {
        return;
    };
    let store = EtcdStore::connect(server.config().watch_cache_events(64))
        .await
        .expect("connect");
    const PODS: &str = "/registry/core/pods/";
    let base = store.current_revision().await.expect("revision");
    let filters = [
        PODS.to_owned(),
        format!("{PODS}ns0/"),
        format!("{PODS}ns1/"),
        format!("{PODS}ns2/p3"),
    ];
    let mut watchers = Vec::new();
    for i in 0..20 {
        let filter = filters[i % filters.len()].clone();
        let watch = store
            .watch(Bytes::from(filter.clone()), base)
            .await
            .expect("watch");
        watchers.push((filter, watch));
    }
    assert_eq!(
        store.watch_counts(),
        kubemock_storage_etcd::WatchCounts {
            etcd_watches: 1,
            caches: 1
        }
    );
    // 60 creates over three namespaces, some updates and deletes, and writes elsewhere.
    let mut written = Vec::new();
    for i in 0..60 {
        let key = format!("{PODS}ns{}/p{}", i % 3, i / 3);
        let CreateOutcome::Created(kv) = store
            .create(Bytes::from(key), Bytes::from(format!("{{\"i\":{i}}}")))
            .await
            .expect("create")
        else {
            panic!("created");
        };
        written.push(kv.mod_revision);
        store
            .create(
                Bytes::from(format!("/registry/core/configmaps/ns/c{i}")),
                Bytes::from_static(b"{}"),
            )
            .await
            .expect("create elsewhere");
    }
    for i in 0..10 {
        let key = Bytes::from(format!("{PODS}ns{}/p{}", i % 3, i / 3));
        store
            .delete(key, Guard::Unconditional)
            .await
            .expect("delete");
    }
    let last = store.current_revision().await.expect("revision");
    // Every watcher: its events, each once, in revision order, as a direct read of history
    // says.
    let direct = EtcdStore::connect(server.config().watch_cache_depth(None))
        .await
        .expect("connect without cache");
    for (filter, watch) in &mut watchers {
        let got = common::events_until(watch, last).await;
        let mut want_watch = direct
            .watch(Bytes::from(filter.clone()), base)
            .await
            .expect("direct watch");
        let want = common::events_until(&mut want_watch, last).await;
        assert!(!want.is_empty(), "{filter}");
        assert_eq!(got, want, "{filter}");
        assert!(got.windows(2).all(|w| w[0].revision() < w[1].revision()));
    }
    // Progress through the cache: after every event it covers.
    let (filter, watch) = &mut watchers[1];
    watch.request_progress();
    match common::next_item(watch).await {
        Some(Ok(WatchItem::Progress(at))) => assert!(at >= last, "{filter}: {at} < {last}"),
        other => panic!("{filter}: expected progress, got {other:?}"),
    }
    // resourceVersion=0: the cache's snapshot, the same as a read at its revision.
    let cached = store
        .range_any(RangeRequest::prefix(format!("{PODS}ns1/")))
        .await
        .expect("range_any");
    let read = direct
        .range(RangeRequest::prefix(format!("{PODS}ns1/")).at_revision(cached.revision))
        .await
        .expect("range");
    assert_eq!(cached.items, read.items);
    assert_eq!(cached.items.len(), 20 - 3);
    // A watch from before the window (64 events): an etcd watch of its own, still exact.
    let mut old = store
        .watch(Bytes::from_static(PODS.as_bytes()), base)
        .await
        .expect("old watch");
    assert_eq!(store.watch_counts().etcd_watches, 2);
    let replayed = common::events_until(&mut old, last).await;
    assert_eq!(replayed.len(), 70);
    drop(old);
    drop(watchers);
    assert_eq!(
        store.watch_counts(),
        kubemock_storage_etcd::WatchCounts {
            etcd_watches: 1,
            caches: 1
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_watch_compaction_and_progress() {
    let Some(server) = etcd("etcd_watch_compaction_and_progress").await else {
        return;
    };
    let store = store(&server).await;
    common::suite::replay_from_an_old_revision_equals_the_live_history(&store, 300).await;
    common::suite::progress_reports_the_revision_everything_was_delivered_up_to(&store).await;
    common::suite::watch_below_the_compaction_point_fails_compacted(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_watchers_mid_burst_and_reads_after_events() {
    let Some(server) = etcd("etcd_watchers_mid_burst_and_reads_after_events").await else {
        return;
    };
    let shared: Arc<dyn Kv> = Arc::new(store(&server).await);
    common::suite::watcher_created_mid_burst_sees_every_later_event_once(
        Arc::clone(&shared),
        4,
        150,
    )
    .await;
    common::suite::a_read_after_an_event_sees_at_least_that_revision(Arc::clone(&shared), 200, 8)
        .await;
    common::suite::counter_equals_successful_updates(shared, 8, 10).await;
}

/// Two stores over one etcd (two API servers): one's writes are the other's reads and
/// watch events, at the same revisions; a compaction by one is the other's `Compacted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_over_one_etcd_are_one_store() {
    let Some(server) = etcd("two_stores_over_one_etcd_are_one_store").await else {
        return;
    };
    let (a, b) = (store(&server).await, store(&server).await);
    let start = b.current_revision().await.expect("revision");
    let mut watch = b
        .watch(Bytes::from_static(b"/x/"), start)
        .await
        .expect("watch");
    let CreateOutcome::Created(created) = a
        .create(Bytes::from_static(b"/x/1"), Bytes::from_static(b"{}"))
        .await
        .expect("create")
    else {
        panic!("created");
    };
    let read = b.get(b"/x/1", None).await.expect("get");
    assert_eq!(read.kv.as_ref(), Some(&created));
    let events = common::events_until(&mut watch, created.mod_revision).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kv, created);
    // A guarded write on one with the other's revision.
    let outcome = b
        .update(
            Bytes::from_static(b"/x/1"),
            Bytes::from_static(b"{\"a\":1}"),
            Guard::ModRevision(created.mod_revision),
        )
        .await
        .expect("update");
    assert!(matches!(
        outcome,
        kubemock_storage::UpdateOutcome::Updated { .. }
    ));
    let stale = a
        .update(
            Bytes::from_static(b"/x/1"),
            Bytes::from_static(b"{}"),
            Guard::ModRevision(created.mod_revision),
        )
        .await
        .expect("update");
    assert!(matches!(
        stale,
        kubemock_storage::UpdateOutcome::Conflict(_)
    ));
    // One compacts; the other learns it from etcd.
    let now = a.current_revision().await.expect("revision");
    a.compact(now).await.expect("compact");
    assert_eq!(b.compacted_revision().await.expect("compacted"), now);
    match b
        .range(RangeRequest::prefix("/x/").at_revision(now - 1))
        .await
    {
        Err(Error::Compacted {
            requested,
            compacted,
        }) => assert_eq!((requested, compacted), (now - 1, now)),
        other => panic!("expected Compacted, got {other:?}"),
    }
    match b.watch(Bytes::new(), start).await.map(|_| ()) {
        Err(Error::Compacted { compacted, .. }) => assert_eq!(compacted, now),
        other => panic!("expected Compacted, got {other:?}"),
    }
}

/// A quiet watch (its last event long before) over history this store compacts: its progress
/// is still answered, at once and past the compaction point. The compaction proved from
/// history, before dropping it, that nothing under the watch changed
/// (`storage-etcd/src/watch.rs`, `freshen`); etcd 3.4.23's own answer could not be believed
/// without that proof (etcd-io/etcd#15220). Cached and direct watches alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_watches_answer_progress_past_this_stores_compaction() {
    let Some(server) = etcd("quiet_watches_answer_progress_past_this_stores_compaction").await
    else {
        return;
    };
    let config = server.config().watch_buffer(1 << 16);
    for (cache_depth, key) in [(None, "quiet/direct"), (Some(1), "quiet/cached")] {
        let store = EtcdStore::connect(config.clone().watch_cache_depth(cache_depth))
            .await
            .expect("connect");
        let base = store.current_revision().await.expect("revision");
        let mut watch = store
            .watch(Bytes::from_static(b"quiet/"), base)
            .await
            .expect("watch");
        let created = store
            .create(Bytes::from_static(key.as_bytes()), Bytes::new())
            .await
            .expect("create");
        assert!(matches!(created, CreateOutcome::Created(_)));
        common::create_keys(&store, &format!("busy/{key}/"), 250).await;
        let now = store.current_revision().await.expect("revision");
        assert_eq!(store.compact(now).await.expect("compact"), now);
        let events = common::events_until(&mut watch, now).await;
        assert_eq!(events.len(), 1, "{cache_depth:?}");
        assert_eq!(events[0].revision(), base + 1, "{cache_depth:?}");
    }
}

/// The same quiet watch over history another server compacted. An etcd before the fix of
/// etcd-io/etcd#15220 may answer a progress request before events still in flight, and
/// nothing is left to prove its answer with, so the watch ends `Compacted` (its consumer lists
/// again), as etcd ends a watcher behind compaction. An etcd with the fix answers only after
/// its events: its answer stands (`EtcdStore::progress_is_ordered`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_behind_another_servers_compaction_ends_compacted() {
    let Some(server) = etcd("a_watch_behind_another_servers_compaction_ends_compacted").await
    else {
        return;
    };
    let (a, b) = (store(&server).await, store(&server).await);
    let base = b.current_revision().await.expect("revision");
    let mut watch = b
        .watch(Bytes::from_static(b"quiet/"), base)
        .await
        .expect("watch");
    common::create_keys(&a, "busy/", 5).await;
    let now = a.current_revision().await.expect("revision");
    a.compact(now).await.expect("compact");
    match common::try_events_until(&mut watch, now).await {
        Err(Error::Compacted { requested, .. }) if !b.progress_is_ordered() => {
            assert_eq!(requested, base);
        }
        Ok(events) if b.progress_is_ordered() => assert!(events.is_empty()),
        other => panic!(
            "ordered progress {}: got {other:?}",
            b.progress_is_ordered()
        ),
    }
}

/// A watch from an old revision, compacted past right after it opens: it still gets its
/// events, then progress past the compaction point. etcd 3.4.23 replays history to a new
/// watcher on its next sync (every 100 ms) but answers a progress request at once
/// (etcd-io/etcd#15220); the compaction waits for the replay (`freshen`), where the store used
/// to believe etcd's answer once the history to check it against was gone. The model test's
/// seed 17407514642963076829 lost a delete that way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaying_watch_gets_its_events_before_progress_past_a_compaction() {
    let Some(server) =
        etcd("a_replaying_watch_gets_its_events_before_progress_past_a_compaction").await
    else {
        return;
    };
    let config = server.config().watch_buffer(1 << 16);
    for (cache_depth, prefix) in [(None, "replay/direct/"), (Some(2), "replay/cached/")] {
        let store = EtcdStore::connect(config.clone().watch_cache_depth(cache_depth))
            .await
            .expect("connect");
        let base = store.current_revision().await.expect("revision");
        let key = Bytes::from(format!("{prefix}k"));
        store
            .create(key.clone(), Bytes::new())
            .await
            .expect("create");
        store
            .delete(key, Guard::Unconditional)
            .await
            .expect("delete");
        common::create_keys(&store, &format!("busy/{prefix}"), 5).await;
        let mut watch = store.watch(Bytes::from(prefix), base).await.expect("watch");
        let now = store.current_revision().await.expect("revision");
        store.compact(now).await.expect("compact");
        let events = common::events_until(&mut watch, now).await;
        let revisions: Vec<_> = events.iter().map(|event| event.revision()).collect();
        assert_eq!(revisions, vec![base + 1, base + 2], "{cache_depth:?}");
    }
}

/// etcd killed: every call fails `Unavailable` (never a panic, never a wrong answer), a
/// watch ends with it; etcd restarted on its data: the same store answers again, with the
/// data and revisions it had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_down_is_unavailable_and_the_store_recovers() {
    let Some(mut server) = etcd("etcd_down_is_unavailable_and_the_store_recovers").await else {
        return;
    };
    let store = EtcdStore::connect(
        server
            .config()
            .request_timeout(Duration::from_secs(2))
            .watch_buffer(1 << 10),
    )
    .await
    .expect("connect");
    let CreateOutcome::Created(created) = store
        .create(Bytes::from_static(b"/d/1"), Bytes::from_static(b"1"))
        .await
        .expect("create")
    else {
        panic!("created");
    };
    let mut watch = store
        .watch(Bytes::from_static(b"/d/"), created.mod_revision)
        .await
        .expect("watch");
    server.kill();
    for result in [
        store.get(b"/d/1", None).await.map(|_| ()),
        store.range(RangeRequest::prefix("/d/")).await.map(|_| ()),
        store
            .create(Bytes::from_static(b"/d/2"), Bytes::new())
            .await
            .map(|_| ()),
        store.current_revision().await.map(|_| ()),
        store.watch(Bytes::from_static(b"/d/"), 0).await.map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(Error::Unavailable { .. })),
            "expected Unavailable, got {result:?}"
        );
    }
    // The open watch ends with Unavailable (the stream breaks, or the keepalive gives up).
    loop {
        match common::next_item(&mut watch).await {
            Some(Ok(WatchItem::Progress(_))) => {}
            Some(Err(Error::Unavailable { .. })) => break,
            other => panic!("expected the watch to end Unavailable, got {other:?}"),
        }
    }
    server
        .restart("etcd_down_is_unavailable_and_the_store_recovers")
        .await;
    let read = store.get(b"/d/1", None).await.expect("get after restart");
    assert_eq!(read.kv, Some(created.clone()));
    let CreateOutcome::Created(next) = store
        .create(Bytes::from_static(b"/d/2"), Bytes::new())
        .await
        .expect("create after restart")
    else {
        panic!("created");
    };
    assert!(next.mod_revision > created.mod_revision);
}

/// A watcher that does not read is cut off as lagging, and resumes from what it had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_slow_watcher_ends_lagged_and_resumes() {
    const BUFFER: usize = 8;
    let Some(server) = etcd("etcd_slow_watcher_ends_lagged_and_resumes").await else {
        return;
    };
    let store = EtcdStore::connect(server.config().watch_buffer(BUFFER))
        .await
        .expect("connect");
    let base = store.current_revision().await.expect("revision");
    let mut slow = store.watch(Bytes::new(), base).await.expect("watch");
    common::create_keys(&store, "/s/", 40).await;
    let last = base + 40;
    let mut delivered = Vec::new();
    let error = loop {
        match common::next_item(&mut slow).await {
            Some(Ok(WatchItem::Event(event))) => delivered.push(event),
            Some(Err(err)) => break err,
            other => panic!("slow watcher: {other:?}"),
        }
    };
    assert_eq!(delivered.len(), BUFFER);
    common::assert_contiguous(&delivered, base + 1, base + BUFFER as u64);
    let Error::WatcherLagged { delivered: at } = error else {
        panic!("expected WatcherLagged, got {error:?}");
    };
    assert_eq!(at, base + BUFFER as u64);
    let mut resumed = EtcdStore::connect(server.config().watch_buffer(1 << 10))
        .await
        .expect("connect")
        .watch(Bytes::new(), at)
        .await
        .expect("resume");
    let rest = common::events_until(&mut resumed, last).await;
    common::assert_contiguous(&rest, at + 1, last);
}

/// The configuration is checked before anything is dialled.
#[tokio::test]
async fn bad_endpoints_are_refused() {
    for endpoints in [
        vec![],
        vec!["ftp://x:1".to_owned()],
        vec!["https://127.0.0.1:1".to_owned()],
    ] {
        let result = EtcdStore::connect(EtcdConfig::new(endpoints.clone())).await;
        assert!(
            matches!(result, Err(Error::Backend { .. })),
            "{endpoints:?}: {:?}",
            result.map(|_| ())
        );
    }
    // Nothing listening: Unavailable, within the timeout.
    let result = EtcdStore::connect(
        EtcdConfig::new(vec!["http://127.0.0.1:1".to_owned()])
            .request_timeout(Duration::from_secs(2)),
    )
    .await;
    assert!(
        matches!(result, Err(Error::Unavailable { .. })),
        "{:?}",
        result.map(|_| ())
    );
}

/// A CA (self-signed) and an issuer to sign with.
fn ca(name: &str) -> (rcgen::Certificate, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let certificate = params.self_signed(&key).expect("CA certificate");
    (certificate, rcgen::Issuer::new(params, key))
}

/// `https://` with a CA of its own and client certificates (`--etcd-cafile`,
/// `--etcd-certfile`, `--etcd-keyfile`): the store works with the right files, and without a
/// client certificate etcd refuses it (Unavailable, not a wrong answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_over_tls_with_client_certificates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    };
    let (server_ca, server_issuer) = ca("etcd-server-ca");
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let serving = params.signed_by(&key, &server_issuer).expect("serving");
    let (client_ca, client_issuer) = ca("etcd-client-ca");
    let client_key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kubemock");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client = params
        .signed_by(&client_key, &client_issuer)
        .expect("client");
    let files = kubemock_storage_etcd::testing::ServerTls {
        cert: write("server.crt", &serving.pem()),
        key: write("server.key", &key.serialize_pem()),
        client_ca: write("client-ca.crt", &client_ca.pem()),
    };
    let tls = kubemock_storage_etcd::Tls {
        ca: Some(server_ca.pem().into_bytes()),
        identity: Some((
            client.pem().into_bytes(),
            client_key.serialize_pem().into_bytes(),
        )),
    };
    let Some(server) =
        EtcdServer::start_tls("etcd_over_tls_with_client_certificates", files, tls.clone()).await
    else {
        return;
    };
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let store = server.store().await;
    let CreateOutcome::Created(created) = store
        .create(Bytes::from_static(b"/tls/1"), Bytes::from_static(b"{}"))
        .await
        .expect("create over TLS")
    else {
        panic!("created");
    };
    assert_eq!(
        store.get(b"/tls/1", None).await.expect("get").kv,
        Some(created)
    );
    // Without a client certificate: refused by etcd, reported as Unavailable.
    let anonymous = EtcdStore::connect(
        server
            .config()
            .tls(kubemock_storage_etcd::Tls {
                ca: tls.ca.clone(),
                identity: None,
            })
            .request_timeout(Duration::from_secs(2)),
    )
    .await;
    assert!(
        matches!(anonymous, Err(Error::Unavailable { .. })),
        "{:?}",
        anonymous.map(|_| ())
    );
}
