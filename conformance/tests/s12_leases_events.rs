//! docs/api-behaviour.md#leases-and-events: Leases as client-go's leader election uses them, and Events as client-go's
//! recorders (core/v1 `tools/record`, events.k8s.io/v1 `tools/events`) write them: the request
//! sequences those clients send, their MicroTime timestamps, and the validation that rejects
//! what they must not write.

use kubemock_conformance::{Harness, causes};
use serde_json::{Value, json};

fn lease(holder: &str, time: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": "my-controller-lock"},
           "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                    "acquireTime": time, "renewTime": time, "leaseTransitions": 0}})
}

#[tokio::test]
async fn s12_1_leader_election_takes_renews_and_hands_over_a_lease() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-lease").await;
    let collection = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
    let path = format!("{collection}/my-controller-lock");
    // A candidate looks, finds nothing, creates.
    assert_eq!(h.get(&path).await.status, 404);
    let acquired = h
        .post(
            &collection,
            &lease("pod-a_1", "2024-05-01T12:00:00.000000Z"),
        )
        .await;
    assert_eq!(acquired.status, 201, "{:?}", acquired.body);
    assert_eq!(
        acquired.body["spec"]["acquireTime"],
        "2024-05-01T12:00:00.000000Z"
    );
    assert!(acquired.body["metadata"].get("generation").is_none());
    // Another candidate racing to create loses with AlreadyExists.
    let racing = h
        .post(
            &collection,
            &lease("pod-b_2", "2024-05-01T12:00:00.500000Z"),
        )
        .await;
    assert_eq!(racing.status, 409);
    assert_eq!(racing.body["reason"], "AlreadyExists");
    // The leader renews with a PUT carrying the version it last saw.
    let mut renewed = acquired.body.clone();
    renewed["spec"]["renewTime"] = json!("2024-05-01T12:00:02.123456Z");
    let reply = h.put(&path, &renewed).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(
        reply.body["spec"]["renewTime"],
        "2024-05-01T12:00:02.123456Z"
    );
    // A candidate whose read is stale loses with a Conflict.
    let mut stale = acquired.body.clone();
    stale["spec"]["holderIdentity"] = json!("pod-b_2");
    let reply = h.put(&path, &stale).await;
    assert_eq!(reply.status, 409, "{:?}", reply.body);
    assert_eq!(reply.body["reason"], "Conflict");
    // Leases forbid unconditional updates.
    let mut unconditional = stale.clone();
    unconditional["metadata"]
        .as_object_mut()
        .expect("metadata")
        .shift_remove("resourceVersion");
    let reply = h.put(&path, &unconditional).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    // After expiry a candidate reads the lease and takes it over with its version.
    let mut current = h.get(&path).await.body;
    current["spec"]["holderIdentity"] = json!("pod-b_2");
    current["spec"]["acquireTime"] = json!("2024-05-01T12:00:30.000001Z");
    current["spec"]["renewTime"] = json!("2024-05-01T12:00:30.000001Z");
    current["spec"]["leaseTransitions"] = json!(1);
    let reply = h.put(&path, &current).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["holderIdentity"], "pod-b_2");
    assert_eq!(reply.body["spec"]["leaseTransitions"], 1);
}

#[tokio::test]
async fn s12_1_lease_times_are_micro_times_and_durations_positive() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-lease-times").await;
    let collection = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
    let seconds = h
        .post(&collection, &lease("a", "2024-05-01T12:00:00Z"))
        .await;
    assert_eq!(seconds.status, 400, "{:?}", seconds.body);
    assert_eq!(
        seconds.body["message"],
        "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"2024-05-01T12:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
    );
    // Offsets are accepted and stored in UTC.
    let offset = h
        .post(&collection, &lease("a", "2024-05-01T14:00:00.250000+02:00"))
        .await;
    assert_eq!(offset.status, 201, "{:?}", offset.body);
    assert_eq!(
        offset.body["spec"]["renewTime"],
        "2024-05-01T12:00:00.250000Z"
    );
    let mut zero = lease("b", "2024-05-01T12:00:00.000000Z");
    zero["metadata"]["name"] = json!("zero");
    zero["spec"]["leaseDurationSeconds"] = json!(0);
    let reply = h.post(&collection, &zero).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Lease.coordination.k8s.io \"zero\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    );
}

#[tokio::test]
async fn s12_2_the_core_event_recorder_posts_then_patches_the_count() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-event").await;
    let collection = format!("/api/v1/namespaces/{ns}/events");
    let name = "web-7d9c.17c3a6b2f0e1d2c3";
    let event = json!({
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": "web-7d9c", "uid": "u-1",
                           "apiVersion": "v1", "resourceVersion": "4711"},
        "reason": "Started", "message": "Started container app", "type": "Normal",
        "source": {"component": "my-controller", "host": "node-1"},
        "firstTimestamp": "2024-05-01T12:00:00Z", "lastTimestamp": "2024-05-01T12:00:00Z",
        "count": 1,
    });
    let reply = h.post(&collection, &event).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["eventTime"], Value::Null);
    assert_eq!(reply.body["reportingComponent"], "");
    assert_eq!(reply.body["reportingInstance"], "");
    assert_eq!(reply.body["count"], 1);
    // A repeat within the correlation window: a strategic merge patch of count, time, message.
    let patch = json!({"count": 2, "lastTimestamp": "2024-05-01T12:01:00Z",
                       "message": "Started container app"});
    let reply = h
        .patch(
            &format!("{collection}/{name}"),
            "application/strategic-merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["count"], 2);
    assert_eq!(reply.body["lastTimestamp"], "2024-05-01T12:01:00Z");
    assert_eq!(reply.body["firstTimestamp"], "2024-05-01T12:00:00Z");
    // A patch of an expired event is a 404, after which the recorder posts again.
    let missing = h
        .patch(
            &format!("{collection}/gone.1"),
            "application/strategic-merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(missing.status, 404);
    // Timestamps are metav1.Time: stored at seconds precision.
    let mut precise = event.clone();
    precise["metadata"]["name"] = json!("precise.1");
    precise["firstTimestamp"] = json!("2024-05-01T12:00:00.987Z");
    let reply = h.post(&collection, &precise).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["firstTimestamp"], "2024-05-01T12:00:00Z");
}

#[tokio::test]
async fn s12_2_core_events_live_in_their_objects_namespace() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-event-ns").await;
    let event = json!({"metadata": {"name": "x.1"},
                       "involvedObject": {"kind": "Pod", "namespace": "elsewhere", "name": "x"},
                       "reason": "R", "message": "m", "type": "Normal"});
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/events"), &event)
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Event \"x.1\" is invalid: involvedObject.namespace: Invalid value: \"elsewhere\": does not match event.namespace"
    );
    // With an eventTime, the reporter, action and reason are required.
    let new_style = json!({"metadata": {"name": "y.1"},
                           "involvedObject": {"kind": "Pod", "namespace": ns, "name": "y"},
                           "eventTime": "2024-05-01T12:00:00.000000Z", "type": "Normal"});
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/events"), &new_style)
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        [
            "reportingComponent: Required value",
            "reportingInstance: Required value",
            "action: Required value",
            "reason: Required value",
        ]
    );
}

#[tokio::test]
async fn s12_3_events_k8s_io_events_need_an_event_time_and_change_only_their_series() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-events-v1").await;
    let collection = format!("/apis/events.k8s.io/v1/namespaces/{ns}/events");
    let incomplete = json!({"metadata": {"name": "w1.1"}, "type": "Sometimes",
                            "regarding": {"kind": "Widget", "namespace": ns, "name": "w1"}});
    let reply = h.post(&collection, &incomplete).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(reply.body["details"]["group"], "events.k8s.io");
    assert_eq!(
        causes(&reply.body),
        [
            "eventTime: Required value",
            "type: Invalid value: \"\": has invalid value: Sometimes",
        ]
    );
    let event = json!({
        "metadata": {"name": "w1.2"},
        "eventTime": "2024-05-01T12:00:00.000000Z",
        "reportingController": "example.com/my-controller", "reportingInstance": "my-controller-6f1c",
        "action": "Reconcile", "reason": "Created", "type": "Normal", "note": "created config map",
        "regarding": {"kind": "Widget", "namespace": ns, "name": "w1", "apiVersion": "example.com/v1"},
    });
    let reply = h.post(&collection, &event).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert_eq!(reply.body["eventTime"], "2024-05-01T12:00:00.000000Z");
    let path = format!("{collection}/w1.2");
    // tools/events: a repeat patches the series.
    let series = json!({"series": {"count": 2, "lastObservedTime": "2024-05-01T12:01:00.000000Z"}});
    let reply = h
        .patch(&path, "application/strategic-merge-patch+json", &series)
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["series"]["count"], 2);
    let bad_series =
        json!({"series": {"count": 1, "lastObservedTime": "2024-05-01T12:02:00.000000Z"}});
    let reply = h
        .patch(&path, "application/merge-patch+json", &bad_series)
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        ["series.count: Invalid value: \"\": should be at least 2"]
    );
    let note = h
        .patch(
            &path,
            "application/merge-patch+json",
            &json!({"note": "rewritten"}),
        )
        .await;
    assert_eq!(note.status, 422, "{:?}", note.body);
    assert_eq!(
        causes(&note.body),
        ["message: Invalid value: \"rewritten\": field is immutable"]
    );
    let deprecated = json!({"metadata": {"name": "w1.3"}, "eventTime": "2024-05-01T12:00:00.000000Z",
        "reportingController": "c", "reportingInstance": "i", "action": "a", "reason": "r",
        "type": "Warning", "deprecatedCount": 3,
        "regarding": {"kind": "Widget", "namespace": ns, "name": "w1"}});
    let reply = h.post(&collection, &deprecated).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        causes(&reply.body),
        ["deprecatedCount: Invalid value: \"\": needs to be unset"]
    );
}

#[tokio::test]
async fn s12_3_both_event_apis_read_and_watch_the_same_events() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-events-shared").await;
    let core = format!("/api/v1/namespaces/{ns}/events");
    let v1 = format!("/apis/events.k8s.io/v1/namespaces/{ns}/events");
    let mut core_watch = h.watch(&format!("{core}?watch=true")).await;
    let mut v1_watch = h.watch(&format!("{v1}?watch=true")).await;
    // Written through events.k8s.io, read through core/v1 with the core field names.
    let event = json!({
        "metadata": {"name": "w1.1"},
        "eventTime": "2024-05-01T12:00:00.000000Z",
        "reportingController": "example.com/my-controller", "reportingInstance": "i-1",
        "action": "Reconcile", "reason": "Created", "type": "Normal", "note": "made it",
        "regarding": {"kind": "Widget", "namespace": ns, "name": "w1"},
    });
    let created = h.post(&v1, &event).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let as_core = h.get(&format!("{core}/w1.1")).await;
    assert_eq!(as_core.status, 200, "{:?}", as_core.body);
    assert_eq!(as_core.body["apiVersion"], "v1");
    assert_eq!(as_core.body["message"], "made it");
    assert_eq!(as_core.body["involvedObject"]["name"], "w1");
    assert_eq!(
        as_core.body["reportingComponent"],
        "example.com/my-controller"
    );
    assert_eq!(
        as_core.body["metadata"]["resourceVersion"],
        created.body["metadata"]["resourceVersion"]
    );
    // Written through core/v1, read through events.k8s.io with its field names.
    let legacy = json!({"metadata": {"name": "p.1"},
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": "p"},
        "reason": "Started", "message": "started", "type": "Normal", "count": 3,
        "source": {"component": "kubelet"},
        "firstTimestamp": "2024-05-01T12:00:00Z", "lastTimestamp": "2024-05-01T12:05:00Z"});
    assert_eq!(h.post(&core, &legacy).await.status, 201);
    let as_v1 = h.get(&format!("{v1}/p.1")).await.body;
    assert_eq!(as_v1["apiVersion"], "events.k8s.io/v1");
    assert_eq!(as_v1["note"], "started");
    assert_eq!(as_v1["regarding"]["name"], "p");
    assert_eq!(as_v1["deprecatedCount"], 3);
    assert_eq!(as_v1["deprecatedSource"], json!({"component": "kubelet"}));
    assert_eq!(as_v1["deprecatedLastTimestamp"], "2024-05-01T12:05:00Z");
    assert_eq!(as_v1["eventTime"], Value::Null);
    assert!(as_v1.get("message").is_none());
    // Both lists hold both, each in its own form.
    let core_list = h.get(&core).await.body;
    let v1_list = h.get(&v1).await.body;
    let names = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(names(&core_list), ["p.1", "w1.1"]);
    assert_eq!(names(&v1_list), ["p.1", "w1.1"]);
    assert_eq!(v1_list["items"][1]["note"], "made it");
    // Both watches see both writes, each in its own form.
    for (watch, field) in [(&mut core_watch, "message"), (&mut v1_watch, "note")] {
        let first = watch.next_event().await.expect("an event");
        assert_eq!(first["type"], "ADDED");
        assert_eq!(first["object"][field], "made it", "{first}");
        let second = watch.next_event().await.expect("an event");
        assert_eq!(second["object"][field], "started", "{second}");
    }
    // An update through one API keeps the other's fields.
    let series = json!({"series": {"count": 2, "lastObservedTime": "2024-05-01T12:01:00.000000Z"}});
    let patched = h
        .patch(
            &format!("{v1}/w1.1"),
            "application/strategic-merge-patch+json",
            &series,
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    let as_core = h.get(&format!("{core}/w1.1")).await.body;
    assert_eq!(as_core["series"]["count"], 2);
    assert_eq!(as_core["message"], "made it");
    assert_eq!(h.delete(&format!("{core}/w1.1"), None).await.status, 200);
    assert_eq!(h.get(&format!("{v1}/w1.1")).await.status, 404);
}

/// The initial events of a watch (from resourceVersion unset, and a streaming list) are in
/// the watched API's form too: an events.k8s.io watch sends events.k8s.io Events, never the
/// core/v1 Events they are stored as (upstream converts every watch event to the version
/// watched, `pkg/endpoints/handlers/watch.go`). client-go's WatchListClient refuses the
/// list otherwise ("received object type = v1.Event ..., doesn't match the list item type").
#[tokio::test]
async fn s12_3_initial_watch_events_are_in_the_watched_apis_form() {
    let h = Harness::start().await;
    let ns = h.namespace("s12-events-initial").await;
    let legacy = json!({"metadata": {"name": "p.1"},
        "involvedObject": {"kind": "Pod", "namespace": ns, "name": "p"},
        "reason": "Started", "message": "started", "type": "Normal"});
    assert_eq!(
        h.post(&format!("/api/v1/namespaces/{ns}/events"), &legacy)
            .await
            .status,
        201
    );
    let v1 = format!("/apis/events.k8s.io/v1/namespaces/{ns}/events");
    for query in [
        "watch=true",
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    ] {
        let mut watch = h.watch(&format!("{v1}?{query}")).await;
        let added = watch.next_event().await.expect("an event");
        assert_eq!(added["type"], "ADDED");
        assert_eq!(
            added["object"]["apiVersion"], "events.k8s.io/v1",
            "{query}: {added}"
        );
        assert_eq!(added["object"]["note"], "started", "{query}: {added}");
        assert_eq!(
            added["object"]["regarding"]["name"], "p",
            "{query}: {added}"
        );
    }
}
