//! The controller runtime against an in-process kubemock server: a small controller converges
//! its desired state (children created, trimmed and recreated; cleanup behind a finalizer),
//! status updates survive conflicts, and the event recorder aggregates repeats.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubemock_client::controller::{
    self, FinalizerEvent, controller_reference, default_error_policy,
};
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Controller, DeleteParams, InformerFactory, ListParams, ObjectKey,
    Patch, PatchParams, PostParams, Store,
};
use tokio_util::sync::CancellationToken;

use common::{configmap, namespace, server, wait_until};

const FINALIZER: &str = "example.com/children";

/// Children of `parent`: ConfigMaps `parent-N` for N below `data.count`, owned by it.
async fn reconcile(
    key: ObjectKey,
    api: Api<ConfigMap>,
    cache: Store<ConfigMap>,
) -> Result<Action, controller::FinalizerError<kubemock_client::Error>> {
    let Some(parent) = cache.get(&key) else {
        return Ok(Action::await_change());
    };
    if parent
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("role"))
        .map(String::as_str)
        != Some("parent")
    {
        return Ok(Action::await_change());
    }
    let name = key.name.clone();
    let children: Vec<Arc<ConfigMap>> = cache.by_index("owner", &name);
    let writer = api.clone();
    controller::finalizer(&writer, FINALIZER, parent.clone(), |event| async move {
        match event {
            FinalizerEvent::Apply(parent) => {
                let want: usize = parent
                    .data
                    .as_ref()
                    .and_then(|d| d.get("count"))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let wanted: BTreeSet<String> = (0..want).map(|i| format!("{name}-{i}")).collect();
                let have: BTreeSet<String> = children
                    .iter()
                    .filter_map(|c| c.metadata.name.clone())
                    .collect();
                for missing in wanted.difference(&have) {
                    let mut child = configmap(missing, "child");
                    child.metadata.owner_references =
                        controller_reference(parent.as_ref()).map(|r| vec![r]);
                    match api.create(&PostParams::default(), &child).await {
                        Err(err) if !err.is_already_exists() => return Err(err),
                        _ => {}
                    }
                }
                for extra in have.difference(&wanted) {
                    match api.delete(extra, &DeleteParams::default()).await {
                        Err(err) if !err.is_not_found() => return Err(err),
                        _ => {}
                    }
                }
                Ok(Action::await_change())
            }
            FinalizerEvent::Cleanup(_) => {
                for child in &children {
                    let child = child.metadata.name.clone().unwrap_or_default();
                    match api.delete(&child, &DeleteParams::default()).await {
                        Err(err) if !err.is_not_found() => return Err(err),
                        _ => {}
                    }
                }
                Ok(Action::await_change())
            }
        }
    })
    .await
}

async fn children(api: &Api<ConfigMap>, parent: &str) -> BTreeSet<String> {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .filter(|n| n.starts_with(&format!("{parent}-")))
        .collect()
}

fn names(parent: &str, count: usize) -> BTreeSet<String> {
    (0..count).map(|i| format!("{parent}-{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_converges_its_desired_state() {
    let (_server, client) = server().await;
    namespace(&client, "ctl").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "ctl");
    let factory = InformerFactory::namespaced(client.clone(), "ctl");
    let configmaps = factory.informer::<ConfigMap>();
    configmaps.store().add_index("owner", |cm: &ConfigMap| {
        controller::controller_of(&cm.metadata)
            .map(|o| o.name.clone())
            .into_iter()
            .collect()
    });
    let token = CancellationToken::new();
    factory.start(&token);

    let cache = configmaps.store();
    let controller = Controller::new("children", configmaps.clone())
        .owns(&configmaps, &ApiResource::of::<ConfigMap>())
        .workers(3);
    let run = tokio::spawn({
        let api = api.clone();
        let token = token.clone();
        async move {
            controller
                .run(
                    move |key| reconcile(key, api.clone(), cache.clone()),
                    default_error_policy,
                    token,
                )
                .await;
        }
    });

    let mut parent = configmap("p", "x");
    parent.metadata.labels = Some([("role".to_owned(), "parent".to_owned())].into());
    parent.data = Some([("count".to_owned(), "3".to_owned())].into());
    api.create(&PostParams::default(), &parent)
        .await
        .expect("create parent");
    wait_until(Duration::from_secs(20), "3 children", || async {
        children(&api, "p").await == names("p", 3)
    })
    .await;
    let stored = api.get("p").await.expect("parent");
    assert_eq!(stored.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));

    let scale = |n: &str| Patch::Merge(serde_json::json!({"data": {"count": n}}));
    api.patch("p", &PatchParams::default(), &scale("1"))
        .await
        .expect("scale down");
    wait_until(Duration::from_secs(20), "1 child", || async {
        children(&api, "p").await == names("p", 1)
    })
    .await;

    api.patch("p", &PatchParams::default(), &scale("4"))
        .await
        .expect("scale up");
    wait_until(Duration::from_secs(20), "4 children", || async {
        children(&api, "p").await == names("p", 4)
    })
    .await;

    // A child deleted behind the controller's back is recreated (owned objects map to the
    // owner's key).
    api.delete("p-2", &DeleteParams::default())
        .await
        .expect("delete child");
    wait_until(Duration::from_secs(20), "the child recreated", || async {
        api.get_opt("p-2")
            .await
            .expect("get")
            .is_some_and(|c| c.metadata.deletion_timestamp.is_none())
    })
    .await;

    // Deleting the parent runs the cleanup behind the finalizer, then the parent goes.
    api.delete("p", &DeleteParams::default())
        .await
        .expect("delete parent");
    wait_until(
        Duration::from_secs(20),
        "parent and children gone",
        || async {
            api.get_opt("p").await.expect("get").is_none() && children(&api, "p").await.is_empty()
        },
    )
    .await;

    token.cancel();
    run.await.expect("controller stops");
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_reconciles_again_and_cancellation_stops_the_workers() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("tick", "0"))
        .await
        .expect("create");
    let factory = InformerFactory::namespaced(client, "default");
    let informer = factory.informer::<ConfigMap>();
    let token = CancellationToken::new();
    factory.start(&token);
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let run = tokio::spawn({
        let token = token.clone();
        let count = count.clone();
        async move {
            Controller::new("ticker", informer)
                .run(
                    move |key: ObjectKey| {
                        let count = count.clone();
                        async move {
                            if key.name != "tick" {
                                return Ok(Action::await_change());
                            }
                            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            if n % 2 == 0 {
                                Err("transient")
                            } else {
                                Ok(Action::requeue_after(Duration::from_millis(50)))
                            }
                        }
                    },
                    default_error_policy,
                    token,
                )
                .await;
        }
    });
    wait_until(Duration::from_secs(20), "reconciles repeating", || async {
        count.load(std::sync::atomic::Ordering::SeqCst) >= 8
    })
    .await;
    token.cancel();
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("stops promptly")
        .expect("joins");
    factory.shutdown().await;
}

/// `batch_updates`: an update the window function batches (here, a label change, given an
/// hour) waits; one it gives `None` (a change of data, as a ReplicaSet's spec) syncs at
/// once, even with the batched one still pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_updates_wait_and_unbatched_ones_sync_at_once() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("b", "0"))
        .await
        .expect("create");
    let factory = InformerFactory::namespaced(client, "default");
    let informer = factory.informer::<ConfigMap>();
    let store = informer.store();
    let token = CancellationToken::new();
    factory.start(&token);
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let run = tokio::spawn({
        let token = token.clone();
        let seen = seen.clone();
        async move {
            Controller::new("batched", informer)
                .batch_updates(|old: &ConfigMap, new: &ConfigMap| {
                    (old.data == new.data).then_some(Duration::from_secs(3600))
                })
                .run(
                    move |key: ObjectKey| {
                        let entry = store.get(&key).map(|cm| {
                            let data = cm.data.clone().unwrap_or_default();
                            let labels = cm.metadata.labels.clone().unwrap_or_default();
                            (
                                data.get("value").cloned().unwrap_or_default(),
                                labels.get("l").cloned().unwrap_or_default(),
                            )
                        });
                        if let Some(entry) = entry {
                            seen.lock().expect("lock").push(entry);
                        }
                        async { Ok::<_, String>(Action::await_change()) }
                    },
                    default_error_policy,
                    token,
                )
                .await;
        }
    });
    let saw = |count: &'static str, label: &'static str| {
        let seen = seen.clone();
        move || {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .expect("lock")
                    .iter()
                    .any(|(c, l)| c == count && l == label)
            }
        }
    };
    wait_until(Duration::from_secs(20), "the addition synced", saw("0", "")).await;
    let label = serde_json::json!({"metadata": {"labels": {"l": "x"}}});
    api.patch("b", &PatchParams::default(), &Patch::Merge(label))
        .await
        .expect("label");
    let data = serde_json::json!({"data": {"value": "1"}});
    api.patch("b", &PatchParams::default(), &Patch::Merge(data))
        .await
        .expect("data");
    wait_until(
        Duration::from_secs(20),
        "the data change synced at once",
        saw("1", "x"),
    )
    .await;
    let synced = seen.lock().expect("lock").clone();
    assert!(
        !synced.iter().any(|(c, l)| c == "0" && l == "x"),
        "the label-only update waits for its hour: {synced:?}"
    );
    token.cancel();
    run.await.expect("controller stops");
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_updates_retry_on_conflict() {
    let (_server, client) = server().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("d".into()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            selector: LabelSelector {
                match_labels: Some([("a".to_owned(), "b".to_owned())].into()),
                ..LabelSelector::default()
            },
            template: k8s_openapi::api::core::v1::PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("a".to_owned(), "b".to_owned())].into()),
                    ..ObjectMeta::default()
                }),
                spec: Some(k8s_openapi::api::core::v1::PodSpec {
                    containers: vec![k8s_openapi::api::core::v1::Container {
                        name: "c".into(),
                        image: Some("i".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    api.create(&PostParams::default(), &deployment)
        .await
        .expect("create");
    let mut updaters = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let api = api.clone();
        updaters.spawn(async move {
            controller::update_status(&api, "d", |d: &mut Deployment| {
                let status = d.status.get_or_insert_with(Default::default);
                status.ready_replicas = Some(status.ready_replicas.unwrap_or(0) + 1);
            })
            .await
            .expect("status update")
        });
    }
    while let Some(done) = updaters.join_next().await {
        done.expect("updater");
    }
    let status = api.get("d").await.expect("get").status.expect("status");
    assert_eq!(
        status.ready_replicas,
        Some(4),
        "no increment lost to a conflict"
    );
}

#[tokio::test]
async fn the_event_recorder_aggregates_repeats() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = api
        .create(&PostParams::default(), &configmap("subject", "1"))
        .await
        .expect("create");
    let recorder = Recorder::new(client.clone(), "tester");
    let reference = object_reference(&cm, &ApiResource::of::<ConfigMap>());
    let mut synced_names = Vec::new();
    for _ in 0..3 {
        synced_names.push(
            recorder
                .try_publish(&reference, EventType::Normal, "Synced", "all good")
                .await
                .expect("publish"),
        );
    }
    let failed_name = recorder
        .try_publish(&reference, EventType::Warning, "Failed", "oops")
        .await
        .expect("publish");
    let events: Api<Event> = Api::namespaced(client, "default");
    let mut list = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items;
    list.sort_by_key(|e| e.reason.clone());
    assert_eq!(list.len(), 2);
    let failed = &list[0];
    let synced = &list[1];
    assert_eq!(synced.count, Some(3));
    assert_eq!(synced.type_.as_deref(), Some("Normal"));
    assert_eq!(synced.involved_object.name.as_deref(), Some("subject"));
    assert_eq!(
        synced.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("tester")
    );
    assert!(synced.last_timestamp >= synced.first_timestamp);
    assert_eq!(failed.count, Some(1));
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    // The names reported are the events' (the repeats patched the first one).
    assert_eq!(synced_names, vec![synced.metadata.name.clone(); 3]);
    assert_eq!(failed_name, failed.metadata.name);
}

/// client-go's correlator (`tools/record/events_cache.go`): ten different messages of one
/// reason about one object, then one combined event; 25 events about an object, then none.
#[tokio::test]
async fn the_event_recorder_combines_similar_events_and_drops_spam() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = api
        .create(&PostParams::default(), &configmap("busy", "1"))
        .await
        .expect("create");
    let recorder = Recorder::new(client.clone(), "tester");
    let reference = object_reference(&cm, &ApiResource::of::<ConfigMap>());
    let mut written = 0;
    for i in 0..30 {
        let event = recorder
            .try_publish(
                &reference,
                EventType::Normal,
                "Created",
                &format!("item {i}"),
            )
            .await
            .expect("publish");
        written += usize::from(event.is_some());
    }
    assert_eq!(written, 25, "the object's burst of 25, then nothing");
    let events: Api<Event> = Api::namespaced(client, "default");
    let list = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items;
    let list: Vec<&Event> = list
        .iter()
        .filter(|e| e.involved_object.name.as_deref() == Some("busy"))
        .collect();
    assert_eq!(list.len(), 10, "nine events and the combined one: {list:?}");
    let combined: Vec<&&Event> = list
        .iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.starts_with("(combined"))
        })
        .collect();
    assert_eq!(combined.len(), 1);
    // The 10th to the 25th: the last written message.
    assert_eq!(combined[0].count, Some(16));
    assert_eq!(
        combined[0].message.as_deref(),
        Some("(combined from similar events): item 24")
    );
    assert!(list.iter().all(|e| e.reason.as_deref() == Some("Created")));
}
