//! Issue 16's bootstrap RBAC policy: the ClusterRoles, ClusterRoleBindings, Roles and
//! RoleBindings kube-apiserver 1.32 creates at startup, compared with upstream's golden files
//! (`apiserver/data/bootstrap-rbac-1.32/`, kubernetes/kubernetes v1.32.10
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/*.yaml`); their repair at a
//! restart as upstream's `rbac/bootstrap-roles` hook repairs them
//! (`pkg/registry/rbac/rest/storage_rbac.go`, `component-helpers/auth/rbac/reconciliation`:
//! union, never removal, `autoupdate: "false"` respected); and the ClusterRole aggregation
//! controller (`pkg/controller/clusterroleaggregation`) filling `admin`, `edit` and `view`.
//!
//! The in-process server runs no controllers; the aggregation test starts kubemock's
//! controller manager against it as a second fixture (against `KUBEMOCK_CONFORMANCE_URL` the
//! server's own controllers are expected to run, as on a cluster).

use std::time::Duration;

use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_conformance::Harness;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long the aggregation controller may take to act.
const DEADLINE: Duration = Duration::from_secs(30);
/// How often a condition is looked at again.
const POLL: Duration = Duration::from_millis(20);
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// metrics-server's ClusterRole (its manifests' `system:aggregated-metrics-reader`), which
/// kubemock creates beside kube-apiserver's policy because it serves `metrics.k8s.io` itself
/// (docs/metrics.md); labelled to aggregate to view, edit and admin, as on a cluster running
/// metrics-server.
const METRICS_READER: &str = "system:aggregated-metrics-reader";

/// Upstream's golden files: (file, the collection its items live in).
const GOLDEN: [(&str, &str, &str); 6] = [
    (
        "cluster-roles",
        "clusterroles",
        include_str!("../../apiserver/data/bootstrap-rbac-1.32/cluster-roles.yaml"),
    ),
    (
        "controller-roles",
        "clusterroles",
        include_str!("../../apiserver/data/bootstrap-rbac-1.32/controller-roles.yaml"),
    ),
    (
        "cluster-role-bindings",
        "clusterrolebindings",
        include_str!("../../apiserver/data/bootstrap-rbac-1.32/cluster-role-bindings.yaml"),
    ),
    (
        "controller-role-bindings",
        "clusterrolebindings",
        include_str!("../../apiserver/data/bootstrap-rbac-1.32/controller-role-bindings.yaml"),
    ),
    (
        "namespace-roles",
        "roles",
        include_str!("../../apiserver/data/bootstrap-rbac-1.32/namespace-roles.yaml"),
    ),
    (
        "namespace-role-bindings",
        "rolebindings",
        include_str!("../../apiserver/data/bootstrap-rbac-1.32/namespace-role-bindings.yaml"),
    ),
];

/// Every golden object with the collection it belongs to.
fn golden() -> Vec<(&'static str, Value)> {
    let mut objects = Vec::new();
    for (file, collection, text) in GOLDEN {
        let list: Value = serde_yaml_ng::from_str(text).expect("golden YAML");
        let items = list["items"].as_array().expect("a List").clone();
        assert!(!items.is_empty(), "{file}");
        objects.extend(items.into_iter().map(|item| (collection, item)));
    }
    objects
}

fn golden_object(name: &str) -> Value {
    golden()
        .into_iter()
        .map(|(_, object)| object)
        .find(|o| o["metadata"]["name"] == name && o["kind"] == "ClusterRole")
        .unwrap_or_else(|| panic!("{name} is in the golden files"))
}

/// The object's path on the server.
fn path_of(collection: &str, object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().expect("a name");
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{RBAC}/namespaces/{ns}/{collection}/{name}"),
        None => format!("{RBAC}/{collection}/{name}"),
    }
}

/// `object` without what the server adds to every object (and the golden files' zero time).
fn comparable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            metadata.remove(field);
        }
    }
    object
}

#[tokio::test]
async fn s16_bootstrap_rbac_objects_are_upstream_1_32s() {
    let h = Harness::start().await;
    let in_process = h.in_process().is_some();
    let golden = golden();
    // 31 + 33 ClusterRoles, 12 + 33 ClusterRoleBindings, 7 Roles, 7 RoleBindings.
    assert_eq!(golden.len(), 123);
    for (collection, expected) in &golden {
        let path = path_of(collection, expected);
        let reply = h.get(&path).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        let mut served = comparable(&reply.body);
        let mut expected = comparable(expected);
        // The aggregated roles' rules are the aggregation controller's (none runs in-process:
        // they stay `null` there, as in the golden file).
        if expected.get("aggregationRule").is_some() && !in_process {
            for object in [&mut served, &mut expected] {
                if let Some(object) = object.as_object_mut() {
                    object.remove("rules");
                }
            }
        }
        assert_eq!(served, expected, "{path}");
        let uid = reply.body["metadata"]["uid"].as_str().unwrap_or("");
        assert!(!uid.is_empty(), "{path} has a uid");
    }
    if !in_process {
        return;
    }
    // Nothing else: a fresh server holds exactly the policy.
    for (collection, all) in [
        ("clusterroles", format!("{RBAC}/clusterroles")),
        ("clusterrolebindings", format!("{RBAC}/clusterrolebindings")),
        ("roles", format!("{RBAC}/roles")),
        ("rolebindings", format!("{RBAC}/rolebindings")),
    ] {
        let listed = h.get(&all).await;
        assert_eq!(listed.status, 200, "{all}");
        let mut served: Vec<String> = listed.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|o| path_of(collection, o))
            .collect();
        let mut expected: Vec<String> = golden
            .iter()
            .filter(|(c, _)| *c == collection)
            .map(|(c, o)| path_of(c, o))
            .collect();
        if collection == "clusterroles" {
            expected.push(format!("{RBAC}/clusterroles/{METRICS_READER}"));
        }
        served.sort();
        expected.sort();
        assert_eq!(served, expected, "{collection}");
    }
}

#[tokio::test]
async fn s16_bootstrap_rbac_health_checks_list_the_bootstrap_roles_hook() {
    let h = Harness::start().await;
    for endpoint in ["/healthz", "/livez", "/readyz"] {
        let verbose = h.get(&format!("{endpoint}?verbose")).await;
        assert_eq!(verbose.status, 200);
        let text = verbose.body.as_str().expect("text");
        assert!(
            text.contains("[+]poststarthook/rbac/bootstrap-roles ok\n"),
            "{endpoint}: {text}"
        );
        let single = h
            .get(&format!("{endpoint}/poststarthook/rbac/bootstrap-roles"))
            .await;
        assert_eq!(single.status, 200, "{endpoint}");
        assert_eq!(single.body, "ok");
    }
}

/// The rules of the served ClusterRole `name`.
async fn rules_of(h: &Harness, name: &str) -> Value {
    let reply = h.get(&format!("{RBAC}/clusterroles/{name}")).await;
    assert_eq!(reply.status, 200, "{name}: {}", reply.body);
    reply.body["rules"].clone()
}

/// Polls the rules of `name` until `done` holds for them.
async fn until_rules(h: &Harness, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let rules = rules_of(h, name).await;
        if done(&rules) {
            return rules;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never got the awaited rules; last: {rules}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Upstream's aggregation of lists of rules, in order: each rule once.
fn union(lists: &[&Value]) -> Value {
    let mut rules: Vec<Value> = Vec::new();
    for list in lists {
        for rule in list.as_array().into_iter().flatten() {
            if !rules.contains(rule) {
                rules.push(rule.clone());
            }
        }
    }
    Value::Array(rules)
}

fn has_rule(rules: &Value, rule: &Value) -> bool {
    rules.as_array().is_some_and(|r| r.contains(rule))
}

/// The controller manager with only the aggregation controller, against an in-process
/// harness's server (nothing against an external one: its own controllers run there).
fn aggregation_controller(h: &Harness) -> Option<CancellationToken> {
    h.in_process()?;
    let token = CancellationToken::new();
    let client =
        kubemock_client::Client::new(kubemock_client::Config::new(h.url())).expect("a client");
    let config = kubemock_controllers::ManagerConfig::from_list("clusterrole-aggregation")
        .expect("a known controller");
    tokio::spawn(kubemock_controllers::run(client, config, token.clone()));
    Some(token)
}

#[tokio::test]
async fn s16_bootstrap_rbac_admin_edit_and_view_aggregate_as_upstream_chains_them() {
    let h = Harness::start().await;
    let manager = aggregation_controller(&h);
    let aggregate_to =
        |role: &str| golden_object(&format!("system:aggregate-to-{role}"))["rules"].clone();
    let metrics = rules_of(&h, METRICS_READER).await;
    // The roles each aggregates, by name: view: system:aggregate-to-view, then the metrics
    // reader. edit: system:aggregate-to-edit, the metrics reader, then view. admin: edit,
    // system:aggregate-to-admin, then the metrics reader.
    let view = union(&[&aggregate_to("view"), &metrics]);
    let edit = union(&[&aggregate_to("edit"), &metrics, &view]);
    let admin = union(&[&edit, &aggregate_to("admin"), &metrics]);
    until_rules(&h, "view", |r| *r == view).await;
    until_rules(&h, "edit", |r| *r == edit).await;
    until_rules(&h, "admin", |r| *r == admin).await;
    let managers =
        h.get(&format!("{RBAC}/clusterroles/admin")).await.body["metadata"]["managedFields"]
            .as_array()
            .expect("managedFields")
            .iter()
            .map(|e| e["manager"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>();
    assert!(
        managers.contains(&"clusterrole-aggregation-controller".to_owned()),
        "{managers:?}"
    );

    // A role labelled to aggregate to edit shows up in edit, and through edit in admin.
    let widgets = json!({"verbs": ["get", "list"], "apiGroups": ["example.com"],
                         "resources": ["widgets"]});
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "s16-widget-editor",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
        "rules": [widgets]});
    let created = h.post(&format!("{RBAC}/clusterroles"), &role).await;
    assert_eq!(created.status, 201, "{}", created.body);
    until_rules(&h, "edit", |r| has_rule(r, &widgets)).await;
    until_rules(&h, "admin", |r| has_rule(r, &widgets)).await;
    assert!(!has_rule(&rules_of(&h, "view").await, &widgets));

    // A rule a user removes from view comes back; so does what edit and admin lost with it.
    let mut trimmed = h.get(&format!("{RBAC}/clusterroles/view")).await.body;
    let removed = trimmed["rules"].as_array_mut().expect("rules").remove(0);
    let put = h.put(&format!("{RBAC}/clusterroles/view"), &trimmed).await;
    assert_eq!(put.status, 200, "{}", put.body);
    until_rules(&h, "view", |r| *r == view).await;
    until_rules(&h, "admin", |r| has_rule(r, &removed)).await;

    // Without the label the role no longer adds to edit, nor to admin.
    let unlabel =
        json!({"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-edit": null}}});
    let patched = h
        .patch(
            &format!("{RBAC}/clusterroles/s16-widget-editor"),
            "application/merge-patch+json",
            &unlabel,
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    until_rules(&h, "edit", |r| *r == edit).await;
    until_rules(&h, "admin", |r| *r == admin).await;
    let deleted = h
        .delete(&format!("{RBAC}/clusterroles/s16-widget-editor"), None)
        .await;
    assert_eq!(deleted.status, 200);
    if let Some(token) = manager {
        token.cancel();
    }
}

#[tokio::test]
async fn s16_bootstrap_rbac_a_restart_repairs_the_policy_and_respects_autoupdate_false() {
    if std::env::var(kubemock_conformance::URL_VARIABLE).is_ok_and(|u| !u.is_empty()) {
        eprintln!("skipped: restarts its own durable server");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let start = || async {
        TestServer::start_with(
            ServerConfig::default(),
            kubemock_storage::Config::durable(dir.path()),
        )
        .await
        .expect("start a durable server")
    };
    let server = start().await;
    let h = Harness::connect(server.url());
    let role_path = |name: &str| format!("{RBAC}/clusterroles/{name}");
    let binding_path = |name: &str| format!("{RBAC}/clusterrolebindings/{name}");
    let untouched = h.get(&role_path("cluster-admin")).await.body;
    let count = h.get(&format!("{RBAC}/clusterroles")).await.body["items"]
        .as_array()
        .map(Vec::len);
    // Upstream's 64 and metrics-server's reader.
    assert_eq!(count, Some(65));

    // A user removes a rule from system:basic-user, adds one and a label to system:discovery,
    // replaces the subjects of the system:basic-user binding, deletes system:heapster, and
    // opts system:kube-dns out before emptying it.
    let mut basic = h.get(&role_path("system:basic-user")).await.body;
    let kept_rule = basic["rules"][1].clone();
    basic["rules"] = json!([kept_rule]);
    assert_eq!(
        h.put(&role_path("system:basic-user"), &basic).await.status,
        200
    );
    let extra = json!({"verbs": ["get"], "nonResourceURLs": ["/extra"]});
    let mut discovery = h.get(&role_path("system:discovery")).await.body;
    discovery["rules"]
        .as_array_mut()
        .expect("rules")
        .push(extra.clone());
    discovery["metadata"]["labels"]["team"] = json!("platform");
    assert_eq!(
        h.put(&role_path("system:discovery"), &discovery)
            .await
            .status,
        200
    );
    let alice = json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"});
    let mut binding = h.get(&binding_path("system:basic-user")).await.body;
    binding["subjects"] = json!([alice]);
    assert_eq!(
        h.put(&binding_path("system:basic-user"), &binding)
            .await
            .status,
        200
    );
    assert_eq!(
        h.delete(&role_path("system:heapster"), None).await.status,
        200
    );
    let mut dns = h.get(&role_path("system:kube-dns")).await.body;
    dns["metadata"]["annotations"][AUTOUPDATE] = json!("false");
    dns["rules"] = json!([]);
    let dns = h.put(&role_path("system:kube-dns"), &dns).await.body;
    server.stop().await.expect("a clean stop");

    let server = start().await;
    let h = Harness::connect(server.url());
    // The missing rule is back, broken down into one verb and one resource per rule.
    let golden_basic = golden_object("system:basic-user");
    assert_eq!(
        golden_basic["rules"][0],
        json!({"apiGroups": ["authorization.k8s.io"],
               "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
               "verbs": ["create"]})
    );
    assert_eq!(
        h.get(&role_path("system:basic-user")).await.body["rules"],
        json!([kept_rule,
               {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews"]},
               {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectrulesreviews"]}])
    );
    // What the user added stays.
    let discovery = h.get(&role_path("system:discovery")).await.body;
    assert!(has_rule(&discovery["rules"], &extra), "{discovery}");
    assert_eq!(discovery["metadata"]["labels"]["team"], "platform");
    assert_eq!(
        discovery["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    // The binding's subject is back, the user's stays.
    assert_eq!(
        h.get(&binding_path("system:basic-user")).await.body["subjects"],
        json!([alice, {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                       "name": "system:authenticated"}])
    );
    // The deleted role is recreated as the policy has it.
    let heapster = h.get(&role_path("system:heapster")).await;
    assert_eq!(heapster.status, 200);
    assert_eq!(
        comparable(&heapster.body),
        comparable(&golden_object("system:heapster"))
    );
    // The opted-out role is left alone: not even written.
    let dns_after = h.get(&role_path("system:kube-dns")).await.body;
    assert_eq!(dns_after["rules"], json!([]));
    assert_eq!(
        dns_after["metadata"]["resourceVersion"],
        dns["metadata"]["resourceVersion"]
    );
    // No duplicate, and an untouched role was not rewritten.
    let listed = h.get(&format!("{RBAC}/clusterroles")).await.body;
    assert_eq!(listed["items"].as_array().map(Vec::len), count);
    let cluster_admin = h.get(&role_path("cluster-admin")).await.body;
    assert_eq!(
        cluster_admin["metadata"]["resourceVersion"],
        untouched["metadata"]["resourceVersion"]
    );
    assert_eq!(
        cluster_admin["metadata"]["uid"],
        untouched["metadata"]["uid"]
    );
    server.stop().await.expect("a clean stop");
}
