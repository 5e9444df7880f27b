//! docs/api-behaviour.md#list: list shape, resourceVersion semantics, pagination as one snapshot, selectors.

use kubemock_conformance::Harness;
use kubemock_storage::Kv;
use serde_json::{Value, json};

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items is an array")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[tokio::test]
async fn s7_1_lists_have_the_real_shape() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s7-1").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let empty = h.get(&path).await;
        assert_eq!(empty.status, 200);
        assert_eq!(empty.body["kind"], "ConfigMapList");
        assert_eq!(empty.body["apiVersion"], "v1");
        assert_eq!(empty.body["items"], json!([]), "[] never null");
        h.create_configmap(&ns, "b", json!({})).await;
        h.create_configmap(&ns, "a", json!({})).await;
        let list = h.get(&path).await.body;
        assert_eq!(names(&list), ["a", "b"], "storage-key order");
        let item = &list["items"][0];
        assert!(
            item.get("kind").is_none() && item.get("apiVersion").is_none(),
            "built-in items carry no type"
        );
        let list_rv: u64 = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let item_rv: u64 = list["items"][1]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(list_rv >= item_rv);
        // Across all namespaces.
        let all = h.get("/api/v1/configmaps").await.body;
        assert!(names(&all).contains(&"a".to_owned()));
    }
}

#[tokio::test]
async fn s7_3_pages_come_from_the_first_page_snapshot() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s7-3").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        for name in ["c1", "c2", "c3", "c4", "c5"] {
            h.create_configmap(&ns, name, json!({})).await;
        }
        let first = h.get(&format!("{path}?limit=2")).await.body;
        assert_eq!(names(&first), ["c1", "c2"]);
        assert_eq!(first["metadata"]["remainingItemCount"], 3);
        let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
        let snapshot = first["metadata"]["resourceVersion"].clone();
        // Changes after the first page are not seen by the following pages.
        h.create_configmap(&ns, "c0", json!({})).await;
        h.create_configmap(&ns, "c9", json!({})).await;
        let second = h
            .get(&format!("{path}?limit=2&continue={token}"))
            .await
            .body;
        assert_eq!(names(&second), ["c3", "c4"]);
        assert_eq!(second["metadata"]["resourceVersion"], snapshot);
        let token = second["metadata"]["continue"].as_str().unwrap().to_owned();
        let third = h
            .get(&format!("{path}?limit=2&continue={token}"))
            .await
            .body;
        assert_eq!(names(&third), ["c5"]);
        assert!(third["metadata"].get("continue").is_none());
        assert!(third["metadata"].get("remainingItemCount").is_none());

        let reply = h.get(&format!("{path}?continue=garbage")).await;
        assert_eq!(reply.status, 400);
        assert!(
            reply.body["message"]
                .as_str()
                .unwrap()
                .starts_with("invalid continue token")
        );
        let reply = h
            .get(&format!("{path}?continue={token}&resourceVersion=5"))
            .await;
        assert_eq!(reply.status, 400);
        assert_eq!(
            reply.body["message"],
            "specifying resource version is not allowed when using continue"
        );
    }
}

#[tokio::test]
async fn s7_3_a_compacted_snapshot_is_410_expired() {
    for h in Harness::each_encoding().await {
        let Some(server) = h.in_process() else {
            eprintln!("skipped: needs an in-process server to force a compaction");
            return;
        };
        let ns = h.namespace("s7-3-gone").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        for name in ["a", "b", "c"] {
            h.create_configmap(&ns, name, json!({})).await;
        }
        let first = h.get(&format!("{path}?limit=1")).await.body;
        let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
        let rv = first["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        h.create_configmap(&ns, "d", json!({})).await;
        let store = server.store();
        store.compact(store.revision()).await.unwrap();
        let reply = h.get(&format!("{path}?limit=1&continue={token}")).await;
        assert_eq!(reply.status, 410);
        assert_eq!(reply.body["reason"], "Expired");
        assert_eq!(
            reply.body["message"],
            "The provided continue parameter is too old to display a consistent list result. You can \
         start a new list without the continue parameter, or use the continue token in this \
         response to retrieve the remainder of the results. Continuing with the provided token \
         results in an inconsistent list - objects that were created, modified, or deleted \
         between the time the first chunk was returned and now may show up in the list."
        );
        // The offered token resumes after "a" over the latest state, "d" included.
        let fresh = reply.body["metadata"]["continue"]
            .as_str()
            .expect("a fresh continue token")
            .to_owned();
        let rest = h.get(&format!("{path}?continue={fresh}")).await;
        assert_eq!(rest.status, 200, "{:?}", rest.body);
        let names: Vec<&str> = rest.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["b", "c", "d"]);
        let latest = rest.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .parse::<u64>()
            .expect("a number");
        assert!(latest > rv.parse::<u64>().expect("a number"));
        let reply = h
            .get(&format!(
                "{path}?resourceVersion={rv}&resourceVersionMatch=Exact"
            ))
            .await;
        assert_eq!(reply.status, 410);
        assert_eq!(
            reply.body["message"],
            "The resourceVersion for the provided list is too old."
        );
    }
}

#[tokio::test]
async fn s7_2_resource_version_parameters_are_validated_and_honoured() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s7-2").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        h.create_configmap(&ns, "a", json!({})).await;
        let reply = h.get(&format!("{path}?resourceVersionMatch=Exact")).await;
        assert_eq!(reply.status, 422);
        assert_eq!(
            reply.body["message"],
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let reply = h
            .get(&format!(
                "{path}?resourceVersion=0&resourceVersionMatch=Exact"
            ))
            .await;
        assert_eq!(reply.status, 422);
        let reply = h.get(&format!("{path}?resourceVersion=abc")).await;
        assert_eq!(reply.status, 400);
        // An exact read of an older snapshot does not see later objects.
        let before = h.get(&path).await.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        h.create_configmap(&ns, "b", json!({})).await;
        let old = h
            .get(&format!(
                "{path}?resourceVersion={before}&resourceVersionMatch=Exact"
            ))
            .await
            .body;
        assert_eq!(names(&old), ["a"]);
        let old = h
            .get(&format!("{path}?resourceVersion={before}&limit=10"))
            .await
            .body;
        assert_eq!(names(&old), ["a"], "limit + resourceVersion means Exact");
        let now = h
            .get(&format!("{path}?resourceVersion={before}"))
            .await
            .body;
        assert_eq!(names(&now), ["a", "b"], "NotOlderThan");
        // resourceVersion=0 ignores limit.
        let all = h
            .get(&format!("{path}?resourceVersion=0&limit=1"))
            .await
            .body;
        assert_eq!(names(&all), ["a", "b"]);
        assert!(all["metadata"].get("continue").is_none());
    }
}

#[tokio::test]
async fn s7_2_a_resource_version_the_server_has_not_reached_is_504() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s7-2-future").await;
        let reply = h
            .get(&format!(
                "/api/v1/namespaces/{ns}/configmaps?resourceVersion=999999999"
            ))
            .await;
        assert_eq!(reply.status, 504);
        assert_eq!(reply.body["reason"], "Timeout");
        assert_eq!(
            reply.body["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
        assert_eq!(reply.headers["retry-after"], "1");
    }
}

#[tokio::test]
async fn s7_4_label_selectors_filter_lists() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s7-4").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        h.create_configmap(&ns, "a", json!({"env": "prod", "tier": "web"}))
            .await;
        h.create_configmap(&ns, "b", json!({"env": "dev", "tier": "web"}))
            .await;
        h.create_configmap(&ns, "c", json!({"env": "prod"})).await;
        let cases = [
            ("env%3Dprod", vec!["a", "c"]),
            ("env!%3Dprod", vec!["b"]),
            ("env+in+(dev,prod),tier", vec!["a", "b"]),
            ("!tier", vec!["c"]),
            ("", vec!["a", "b", "c"]),
        ];
        for (selector, expected) in cases {
            let list = h.get(&format!("{path}?labelSelector={selector}")).await;
            assert_eq!(list.status, 200, "{selector}: {:?}", list.body);
            assert_eq!(names(&list.body), expected, "{selector}");
        }
        let reply = h.get(&format!("{path}?labelSelector=env+in+prod")).await;
        assert_eq!(reply.status, 400);
    }
}

#[tokio::test]
async fn s7_5_field_selectors_filter_lists_and_unknown_fields_are_400() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s7-5").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        h.create_configmap(&ns, "a", json!({})).await;
        h.create_configmap(&ns, "b", json!({})).await;
        let list = h
            .get(&format!("{path}?fieldSelector=metadata.name%3Db"))
            .await
            .body;
        assert_eq!(names(&list), ["b"]);
        let list = h
            .get(&format!("{path}?fieldSelector=metadata.name!%3Db"))
            .await
            .body;
        assert_eq!(names(&list), ["a"]);
        // A term whose field and value are both empty is dropped as the selector is parsed
        // (`fields.ParseSelector` of k8s.io/apimachinery), before field names are checked.
        let list = h
            .get(&format!("{path}?fieldSelector=%3D%2Cmetadata.name%3Da"))
            .await
            .body;
        assert_eq!(names(&list), ["a"]);
        let reply = h
            .get(&format!("{path}?fieldSelector=metadata.name%3Da%2Cb"))
            .await;
        assert_eq!(reply.status, 400);
        assert_eq!(
            reply.body["message"],
            "invalid selector: 'metadata.name=a,b'; can't understand 'b'"
        );
        let reply = h.get(&format!("{path}?fieldSelector=spec.foo%3Dx")).await;
        assert_eq!(reply.status, 400);
        assert_eq!(
            reply.body["message"],
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
    }
}
