//! docs/api-behaviour.md#discovery against a real 1.32 cluster: the server's discovery (legacy `/api`, `/apis/{g}/{v}`,
//! aggregated `apidiscovery.k8s.io/v2`) and its OpenAPI v3 index, diffed against
//! `data/discovery-1.32.json`, the checked-in list of what kube-apiserver 1.32 serves by default
//! (group, version, resource, kind, scope, verbs, short names, categories, subresources). The
//! only differences allowed are the file's `differences`, each with its reason. kubemock's own
//! group, `testing.kubemock.dev` (tested in `testing_requests`), and kwok's `kwok.x-k8s.io`
//! (its Stages, tested in `controllers/tests/lifecycle/stages.rs`), are no Kubernetes API and
//! are left out of the comparison, and so is `metrics.k8s.io`, which metrics-server (not
//! kube-apiserver) serves on a real cluster (docs/metrics.md).

use std::collections::BTreeSet;

use kubemock_conformance::Harness;
use serde_json::Value;

/// Groups served after the built-in ones that are not part of Kubernetes 1.32's
/// kube-apiserver: kubemock's own, kwok's, and metrics-server's.
const KUBEMOCK_GROUPS: [&str; 3] = ["testing.kubemock.dev/", "kwok.x-k8s.io/", "metrics.k8s.io/"];

/// `order` and `lines` without kubemock's own group.
fn upstream_only(
    (order, lines): (Vec<String>, BTreeSet<String>),
) -> (Vec<String>, BTreeSet<String>) {
    (
        order
            .into_iter()
            .filter(|gv| !KUBEMOCK_GROUPS.iter().any(|g| gv.starts_with(g)))
            .collect(),
        lines
            .into_iter()
            .filter(|line| !KUBEMOCK_GROUPS.iter().any(|g| line.starts_with(g)))
            .collect(),
    )
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The checked-in list.
fn expected_document() -> Value {
    let text = include_str!("../data/discovery-1.32.json");
    serde_json::from_str(text).expect("the data file is JSON")
}

/// `group/version`, `version` for core.
fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

fn strings(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// One line per resource and per subresource, every attribute the comparison covers in it.
fn resource_line(gv: &str, resource: &Value) -> String {
    format!(
        "{gv} {} kind={} singular={} namespaced={} verbs={:?} short={:?} categories={:?}",
        resource["resource"].as_str().unwrap_or(""),
        resource["kind"].as_str().unwrap_or(""),
        resource["singularName"].as_str().unwrap_or(""),
        resource["namespaced"],
        strings(&resource["verbs"]),
        strings(&resource["shortNames"]),
        strings(&resource["categories"]),
    )
}

fn subresource_line(gv: &str, resource: &str, sub: &Value, parent_gv: &str) -> String {
    let group = sub["group"].as_str();
    let response_gv = match group {
        Some(group) => group_version(group, sub["version"].as_str().unwrap_or("")),
        None => parent_gv.to_owned(),
    };
    format!(
        "{gv} {resource}/{} kind={response_gv}.{} verbs={:?}",
        sub["subresource"].as_str().unwrap_or(""),
        sub["kind"].as_str().unwrap_or(""),
        strings(&sub["verbs"]),
    )
}

/// What the data file says the server should serve: every line, less the differences.
fn expected_lines() -> (Vec<String>, BTreeSet<String>) {
    let document = expected_document();
    let differences: BTreeSet<String> = document["differences"]
        .as_array()
        .expect("differences")
        .iter()
        .map(|d| {
            assert!(
                d["reason"].as_str().is_some_and(|r| r.len() > 10),
                "every difference has its reason: {d}"
            );
            format!(
                "{} {}/{}",
                d["groupVersion"].as_str().unwrap_or(""),
                d["resource"].as_str().unwrap_or(""),
                d["subresource"].as_str().unwrap_or("")
            )
        })
        .collect();
    let mut order = Vec::new();
    let mut lines = BTreeSet::new();
    for group in document["groups"].as_array().expect("groups") {
        let name = group["group"].as_str().unwrap_or("");
        for version in group["versions"].as_array().expect("versions") {
            let version = version.clone();
            let v = version["version"].as_str().unwrap_or("");
            let gv = group_version(name, v);
            order.push(gv.clone());
            for resource in version["resources"].as_array().expect("resources") {
                lines.insert(resource_line(&gv, resource));
                let plural = resource["resource"].as_str().unwrap_or("");
                for sub in resource["subresources"].as_array().expect("subresources") {
                    let key = format!(
                        "{gv} {plural}/{}",
                        sub["subresource"].as_str().unwrap_or("")
                    );
                    if !differences.contains(&key) {
                        lines.insert(subresource_line(&gv, plural, sub, &gv));
                    }
                }
            }
        }
    }
    (order, lines)
}

/// The legacy documents, as lines.
async fn legacy_lines(h: &Harness) -> (Vec<String>, BTreeSet<String>) {
    let mut order = vec!["v1".to_owned()];
    let apis = h.get("/apis").await;
    assert_eq!(apis.status, 200);
    for group in apis.body["groups"].as_array().expect("groups") {
        for version in group["versions"].as_array().expect("versions") {
            order.push(version["groupVersion"].as_str().unwrap_or("").to_owned());
        }
    }
    let mut lines = BTreeSet::new();
    for gv in &order {
        let path = if gv == "v1" {
            "/api/v1".to_owned()
        } else {
            format!("/apis/{gv}")
        };
        let list = h.get(&path).await;
        assert_eq!(list.status, 200, "{path}");
        for entry in list.body["resources"].as_array().expect("resources") {
            let name = entry["name"].as_str().unwrap_or("");
            match name.split_once('/') {
                None => {
                    let resource = serde_json::json!({
                        "resource": name, "kind": entry["kind"],
                        "singularName": entry["singularName"], "namespaced": entry["namespaced"],
                        "verbs": entry["verbs"], "shortNames": entry["shortNames"],
                        "categories": entry["categories"],
                    });
                    lines.insert(resource_line(gv, &resource));
                }
                Some((parent, sub)) => {
                    let resource = serde_json::json!({
                        "subresource": sub, "kind": entry["kind"], "verbs": entry["verbs"],
                        "group": entry["group"], "version": entry["version"],
                    });
                    let resource = if entry.get("group").is_none() {
                        let mut r = resource;
                        r.as_object_mut().map(|o| {
                            o.remove("group");
                            o.remove("version")
                        });
                        r
                    } else {
                        resource
                    };
                    lines.insert(subresource_line(gv, parent, &resource, gv));
                }
            }
        }
    }
    (order, lines)
}

/// The aggregated documents, as lines.
async fn aggregated_lines(h: &Harness) -> (Vec<String>, BTreeSet<String>) {
    let mut order = Vec::new();
    let mut lines = BTreeSet::new();
    for root in ["/api", "/apis"] {
        let reply = h.get_accepting(root, AGGREGATED).await;
        assert_eq!(reply.status, 200, "{root}");
        assert_eq!(reply.body["kind"], "APIGroupDiscoveryList");
        for group in reply.body["items"].as_array().expect("items") {
            let name = group["metadata"]["name"].as_str().unwrap_or("");
            for version in group["versions"].as_array().expect("versions") {
                let gv = group_version(name, version["version"].as_str().unwrap_or(""));
                order.push(gv.clone());
                for resource in version["resources"].as_array().expect("resources") {
                    let plural = resource["resource"].as_str().unwrap_or("");
                    let flat = serde_json::json!({
                        "resource": plural, "kind": resource["responseKind"]["kind"],
                        "singularName": resource["singularResource"],
                        "namespaced": resource["scope"] == "Namespaced",
                        "verbs": resource["verbs"], "shortNames": resource["shortNames"],
                        "categories": resource["categories"],
                    });
                    lines.insert(resource_line(&gv, &flat));
                    for sub in resource["subresources"].as_array().into_iter().flatten() {
                        let kind = &sub["responseKind"];
                        let mut flat = serde_json::json!({
                            "subresource": sub["subresource"], "kind": kind["kind"],
                            "verbs": sub["verbs"],
                        });
                        if kind["group"] != resource["responseKind"]["group"]
                            || kind["version"] != resource["responseKind"]["version"]
                        {
                            flat["group"] = kind["group"].clone();
                            flat["version"] = kind["version"].clone();
                        }
                        lines.insert(subresource_line(&gv, plural, &flat, &gv));
                    }
                }
            }
        }
    }
    (order, lines)
}

fn report(what: &str, expected: &BTreeSet<String>, served: &BTreeSet<String>) {
    let missing: Vec<&String> = expected.difference(served).collect();
    let extra: Vec<&String> = served.difference(expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what} differs from 1.32 (data/discovery-1.32.json):\nmissing:\n  {}\nnot in 1.32:\n  {}",
        missing
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        extra
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[tokio::test]
async fn s2_discovery_legacy_aggregated_and_openapi_match_kubernetes_1_32() {
    let h = Harness::start().await;
    let (order, expected) = expected_lines();
    let (legacy_order, legacy) = upstream_only(legacy_lines(&h).await);
    assert_eq!(
        legacy_order, order,
        "group-versions in the real server's order"
    );
    report("legacy discovery", &expected, &legacy);
    let (aggregated_order, aggregated) = upstream_only(aggregated_lines(&h).await);
    assert_eq!(
        aggregated_order, order,
        "aggregated group-versions in order"
    );
    report("aggregated discovery", &expected, &aggregated);
    let openapi = h.get("/openapi/v3").await;
    assert_eq!(openapi.status, 200);
    let documents: BTreeSet<String> = openapi.body["paths"]
        .as_object()
        .expect("paths")
        .keys()
        .cloned()
        .collect();
    let wanted: BTreeSet<String> = order
        .iter()
        .map(|gv| {
            if gv == "v1" {
                "api/v1".to_owned()
            } else {
                format!("apis/{gv}")
            }
        })
        .collect();
    // Upstream's index also lists the discovery roots and version-less group paths.
    let served: BTreeSet<String> = documents
        .into_iter()
        .filter(|path| path.matches('/').count() >= 1 && path != ".well-known/openid-configuration")
        .collect();
    let missing: Vec<&String> = wanted.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "OpenAPI v3 documents missing: {missing:?}"
    );
}
