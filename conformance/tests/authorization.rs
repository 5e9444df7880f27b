//! RBAC authorization as kube-apiserver's (`plugin/pkg/auth/authorizer/rbac`,
//! `pkg/registry/rbac/*/policybased`, `staging/src/k8s.io/apiserver/pkg/endpoints/filters/
//! authorization.go`): what a user may do follows the stored roles and bindings from the
//! request after they were written, refusals are upstream's 403 word for word, nobody grants
//! what they do not hold, and the access reviews answer as the requests they describe.
//!
//! The servers serve the open mode (plain HTTP, every request `system:admin` in
//! `system:masters`) with an RBAC authorizer: requests without impersonation headers are the
//! superuser, who sets things up, and the tests make their requests as other users by
//! impersonating them (`Impersonate-User`, `Impersonate-Group`), which `system:masters` may do.
//! They run in-process only: an external server's authorization mode is not known (they skip,
//! saying so).

use kubemock_apiserver::{AuthorizationMode, ServerConfig};

/// kube-apiserver's impersonation headers (`authentication/v1`'s `ImpersonateUserHeader`,
/// `ImpersonateGroupHeader`).
const IMPERSONATE_USER: &str = "Impersonate-User";
const IMPERSONATE_GROUP: &str = "Impersonate-Group";
use kubemock_conformance::{Harness, Reply, configmap};
use reqwest::Method;
use serde_json::{Value, json};

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// A harness over an in-process open-mode server authorizing with RBAC, or `None` (the test
/// skips) against an external server.
async fn rbac_server(test: &str) -> Option<Harness> {
    rbac_server_with(test, AuthorizationMode::rbac()).await
}

async fn rbac_server_with(test: &str, mode: AuthorizationMode) -> Option<Harness> {
    let h = Harness::start_with(ServerConfig {
        authorization_mode: mode,
        ..ServerConfig::default()
    })
    .await;
    if h.in_process().is_none() {
        eprintln!("{test}: skipped: needs an in-process server (its authorization mode)");
        return None;
    }
    Some(h)
}

/// A request made by `user` in `groups` (plus `system:authenticated`, which impersonation
/// adds), by impersonation.
async fn as_user(
    h: &Harness,
    user: &str,
    groups: &[&str],
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Reply {
    let mut headers = vec![(IMPERSONATE_USER, user)];
    headers.extend(groups.iter().map(|g| (IMPERSONATE_GROUP, *g)));
    let body = body.map(|b| b.to_string().into_bytes());
    h.request_with_headers(method, path, body, "application/json", &headers)
        .await
}

async fn alice(h: &Harness, method: Method, path: &str, body: Option<&Value>) -> Reply {
    as_user(h, "alice", &[], method, path, body).await
}

/// Creates `body` at `path` as the open mode's administrator.
async fn admin_create(h: &Harness, path: &str, body: &Value) -> Value {
    let reply = h.post(path, body).await;
    assert_eq!(reply.status, 201, "POST {path}: {}", reply.body);
    reply.body
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name}, "rules": rules})
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name}, "rules": rules})
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
           "metadata": {"name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": subjects})
}

fn user_subject(name: &str) -> Value {
    json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}])
}

fn group_subject(name: &str) -> Value {
    json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}])
}

fn assert_forbidden(reply: &Reply, message: &str, details: Value) {
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert_eq!(reply.body["kind"], "Status", "{}", reply.body);
    assert_eq!(reply.body["reason"], "Forbidden", "{}", reply.body);
    assert_eq!(reply.body["code"], 403);
    assert_eq!(reply.body["message"], message);
    assert_eq!(reply.body["details"], details, "{}", reply.body);
}

#[tokio::test]
async fn a_role_binding_grants_its_role_in_its_namespace_from_the_next_request_on() {
    let Some(h) = rbac_server("role_binding").await else {
        return;
    };
    let ns = h.namespace("role-binding").await;
    let list = format!("/api/v1/namespaces/{ns}/configmaps");
    assert_forbidden(
        &alice(&h, Method::GET, &list, None).await,
        &format!(
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "{ns}""#
        ),
        json!({"kind": "configmaps"}),
    );
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role(
            "reader",
            json!([rule(&["get", "list"], &[""], &["configmaps"])]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "alice-reads",
            "Role",
            "reader",
            user_subject("alice"),
        ),
    )
    .await;
    // The very next request sees the binding.
    let listed = alice(&h, Method::GET, &list, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_forbidden(
        &alice(&h, Method::POST, &list, Some(&configmap("c", json!({})))).await,
        &format!(
            r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "{ns}""#
        ),
        json!({"kind": "configmaps"}),
    );
    // Another namespace, and the whole cluster, are not the binding's.
    assert_forbidden(
        &alice(
            &h,
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            None,
        )
        .await,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#,
        json!({"kind": "configmaps"}),
    );
    assert_forbidden(
        &alice(&h, Method::GET, "/api/v1/configmaps", None).await,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope"#,
        json!({"kind": "configmaps"}),
    );
    // Watching is another verb.
    assert_forbidden(
        &alice(&h, Method::GET, &format!("{list}?watch=true"), None).await,
        &format!(
            r#"configmaps is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "{ns}""#
        ),
        json!({"kind": "configmaps"}),
    );
    // Deleting the binding takes the access back, from the next request on.
    let deleted = h
        .delete(
            &format!("{RBAC}/namespaces/{ns}/rolebindings/alice-reads"),
            None,
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(alice(&h, Method::GET, &list, None).await.status, 403);
    // Requests without a test user are the open mode's system:masters user: allowed.
    assert_eq!(h.get(&list).await.status, 200);
}

#[tokio::test]
async fn cluster_roles_bind_in_one_namespace_or_everywhere() {
    let Some(h) = rbac_server("cluster_roles").await else {
        return;
    };
    let (ns1, ns2) = (h.namespace("cr-one").await, h.namespace("cr-two").await);
    admin_create(
        &h,
        &format!("{RBAC}/clusterroles"),
        &cluster_role(
            "cm-viewer",
            json!([rule(&["get", "list"], &[""], &["configmaps"])]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns1}/rolebindings"),
        &binding(
            "RoleBinding",
            "viewers",
            "ClusterRole",
            "cm-viewer",
            group_subject("viewers"),
        ),
    )
    .await;
    let list = |ns: &str| format!("/api/v1/namespaces/{ns}/configmaps");
    let bob = |path: String| {
        let h = &h;
        async move {
            as_user(h, "bob", &["viewers"], Method::GET, &path, None)
                .await
                .status
        }
    };
    assert_eq!(bob(list(&ns1)).await, 200);
    assert_eq!(bob(list(&ns2)).await, 403);
    assert_eq!(bob("/api/v1/configmaps".to_owned()).await, 403);
    admin_create(
        &h,
        &format!("{RBAC}/clusterrolebindings"),
        &binding(
            "ClusterRoleBinding",
            "viewers-everywhere",
            "ClusterRole",
            "cm-viewer",
            group_subject("viewers"),
        ),
    )
    .await;
    assert_eq!(bob(list(&ns2)).await, 200);
    assert_eq!(bob("/api/v1/configmaps".to_owned()).await, 200);
    // A role that loses its rule takes the access from every binding.
    let emptied = h
        .put(
            &format!("{RBAC}/clusterroles/cm-viewer"),
            &cluster_role("cm-viewer", json!([])),
        )
        .await;
    assert_eq!(emptied.status, 200, "{}", emptied.body);
    assert_eq!(bob(list(&ns1)).await, 403);
}

#[tokio::test]
async fn resource_names_restrict_a_rule_to_named_objects() {
    let Some(h) = rbac_server("resource_names").await else {
        return;
    };
    let ns = h.namespace("resource-names").await;
    for name in ["a", "b"] {
        h.create_configmap(&ns, name, json!({})).await;
    }
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role(
            "only-a",
            json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""],
                    "resources": ["configmaps"], "resourceNames": ["a"]}]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "alice",
            "Role",
            "only-a",
            user_subject("alice"),
        ),
    )
    .await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    assert_eq!(
        alice(&h, Method::GET, &format!("{base}/a"), None)
            .await
            .status,
        200
    );
    assert_forbidden(
        &alice(&h, Method::GET, &format!("{base}/b"), None).await,
        &format!(
            r#"configmaps "b" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "{ns}""#
        ),
        json!({"name": "b", "kind": "configmaps"}),
    );
    // A list names no object; a field selector on the name names one (kubectl get -w NAME).
    assert_eq!(alice(&h, Method::GET, &base, None).await.status, 403);
    let one = alice(
        &h,
        Method::GET,
        &format!("{base}?fieldSelector=metadata.name%3Da"),
        None,
    )
    .await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.body["items"].as_array().map(Vec::len), Some(1));
    assert_forbidden(
        &alice(
            &h,
            Method::GET,
            &format!("{base}?fieldSelector=metadata.name%3Db"),
            None,
        )
        .await,
        &format!(
            r#"configmaps "b" is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "{ns}""#
        ),
        json!({"name": "b", "kind": "configmaps"}),
    );
}

#[tokio::test]
async fn subresources_are_their_own_resources_in_rules() {
    let Some(h) = rbac_server("subresources").await else {
        return;
    };
    let ns = h.namespace("subresources").await;
    admin_create(
        &h,
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &kubemock_conformance::deployment("web", 1, "nginx"),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role(
            "scaler",
            json!([rule(&["get", "update"], &["apps"], &["deployments/scale"])]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role("any-scale", json!([rule(&["get"], &["*"], &["*/scale"])])),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "alice",
            "Role",
            "scaler",
            user_subject("alice"),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "carol",
            "Role",
            "any-scale",
            user_subject("carol"),
        ),
    )
    .await;
    let deployment = format!("/apis/apps/v1/namespaces/{ns}/deployments/web");
    let scale = format!("{deployment}/scale");
    assert_eq!(alice(&h, Method::GET, &scale, None).await.status, 200);
    assert_forbidden(
        &alice(&h, Method::GET, &deployment, None).await,
        &format!(
            r#"deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "{ns}""#
        ),
        json!({"name": "web", "group": "apps", "kind": "deployments"}),
    );
    assert_forbidden(
        &as_user(&h, "dave", &[], Method::GET, &scale, None).await,
        &format!(
            r#"deployments.apps "web" is forbidden: User "dave" cannot get resource "deployments/scale" in API group "apps" in the namespace "{ns}""#
        ),
        json!({"name": "web", "group": "apps", "kind": "deployments"}),
    );
    assert_eq!(
        as_user(&h, "carol", &[], Method::GET, &scale, None)
            .await
            .status,
        200
    );
    assert_eq!(
        as_user(
            &h,
            "carol",
            &[],
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/replicationcontrollers/x/scale"),
            None
        )
        .await
        .status,
        404,
        "allowed, and then not found"
    );
    assert_eq!(
        as_user(&h, "carol", &[], Method::GET, &deployment, None)
            .await
            .status,
        403
    );
}

#[tokio::test]
async fn discovery_and_health_are_readable_as_the_bootstrap_roles_allow() {
    let Some(h) = rbac_server("bootstrap_roles").await else {
        return;
    };
    // `system:discovery` and `system:public-info-viewer` to every authenticated user.
    for path in [
        "/healthz",
        "/livez",
        "/readyz",
        "/version",
        "/apis",
        "/api",
        "/api/v1",
        "/apis/apps/v1",
        "/openapi/v3",
    ] {
        let reply = alice(&h, Method::GET, path, None).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    }
    assert_forbidden(
        &alice(&h, Method::GET, "/metrics", None).await,
        r#"forbidden: User "alice" cannot get path "/metrics""#,
        json!({}),
    );
    // The wildcard of `/apis/*` is a prefix of what follows `/apis/`, not of `/apis`.
    assert_eq!(alice(&h, Method::GET, "/apisx", None).await.status, 403);
    // Verbs of non-resource requests are the lowercased method.
    assert_forbidden(
        &alice(&h, Method::POST, "/version", Some(&json!({}))).await,
        r#"forbidden: User "alice" cannot post path "/version""#,
        json!({}),
    );
    // An anonymous user has what `system:public-info-viewer` gives `system:unauthenticated`.
    let anonymous = |path: &'static str| {
        let h = &h;
        async move {
            as_user(
                h,
                "system:anonymous",
                &["system:unauthenticated"],
                Method::GET,
                path,
                None,
            )
            .await
        }
    };
    assert_eq!(anonymous("/version").await.status, 200);
    assert_eq!(anonymous("/readyz").await.status, 200);
    assert_forbidden(
        &anonymous("/apis").await,
        r#"forbidden: User "system:anonymous" cannot get path "/apis""#,
        json!({}),
    );
}

#[tokio::test]
async fn non_resource_urls_are_granted_by_path_with_trailing_wildcards() {
    let Some(h) = rbac_server("non_resource").await else {
        return;
    };
    admin_create(
        &h,
        &format!("{RBAC}/clusterroles"),
        &cluster_role(
            "metrics-reader",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/metric*", "/debug/*"]}]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/clusterrolebindings"),
        &binding(
            "ClusterRoleBinding",
            "metrics-readers",
            "ClusterRole",
            "metrics-reader",
            group_subject("monitoring"),
        ),
    )
    .await;
    let get = |path: &'static str| {
        let h = &h;
        async move {
            as_user(h, "mona", &["monitoring"], Method::GET, path, None)
                .await
                .status
        }
    };
    assert_eq!(get("/metrics").await, 200);
    // Allowed, and then not served.
    assert_eq!(get("/debug/pprof").await, 404);
    assert_eq!(get("/debug").await, 403);
    assert_eq!(
        alice(&h, Method::GET, "/metrics", None).await.status,
        403,
        "not in the group"
    );
}

#[tokio::test]
async fn an_aggregated_cluster_role_grants_the_rules_it_holds() {
    let Some(h) = rbac_server("aggregation").await else {
        return;
    };
    let ns = h.namespace("aggregation").await;
    // The rules the aggregation controller gathered from the selected roles are the role's.
    admin_create(
        &h,
        &format!("{RBAC}/clusterroles"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "monitoring"},
                "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]},
                "rules": [rule(&["get", "list"], &[""], &["configmaps"])]}),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "monitoring",
            "ClusterRole",
            "monitoring",
            user_subject("alice"),
        ),
    )
    .await;
    let list = format!("/api/v1/namespaces/{ns}/configmaps");
    assert_eq!(alice(&h, Method::GET, &list, None).await.status, 200);
    assert_eq!(
        alice(
            &h,
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/secrets"),
            None
        )
        .await
        .status,
        403
    );
}

/// alice may manage RBAC objects in `ns` (and read ConfigMaps there), nothing more.
async fn rbac_manager(h: &Harness, ns: &str) {
    admin_create(
        h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role(
            "rbac-manager",
            json!([
                rule(
                    &["create", "update", "patch", "get"],
                    &["rbac.authorization.k8s.io"],
                    &["roles", "rolebindings"]
                ),
                rule(&["get", "list"], &[""], &["configmaps"]),
            ]),
        ),
    )
    .await;
    admin_create(
        h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "rbac-manager",
            "Role",
            "rbac-manager",
            user_subject("alice"),
        ),
    )
    .await;
}

#[tokio::test]
async fn nobody_grants_in_a_role_what_they_do_not_hold_unless_they_may_escalate() {
    let Some(h) = rbac_server("escalate").await else {
        return;
    };
    let ns = h.namespace("escalate").await;
    rbac_manager(&h, &ns).await;
    let roles = format!("{RBAC}/namespaces/{ns}/roles");
    let held = role("reader", json!([rule(&["get"], &[""], &["configmaps"])]));
    let created = alice(&h, Method::POST, &roles, Some(&held)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let more = role(
        "deleter",
        json!([rule(&["get", "delete"], &[""], &["configmaps", "secrets"]),
               {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics"]}]),
    );
    assert_forbidden(
        &alice(&h, Method::POST, &roles, Some(&more)).await,
        "roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}\n\
         {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}",
        json!({"name": "deleter", "group": "rbac.authorization.k8s.io", "kind": "roles"}),
    );
    // An update is checked the same way (a patch too).
    let mut grown = created.body.clone();
    grown["rules"] = json!([rule(&["get", "list", "delete"], &[""], &["configmaps"])]);
    let updated = alice(&h, Method::PUT, &format!("{roles}/reader"), Some(&grown)).await;
    assert_eq!(updated.status, 403, "{}", updated.body);
    let patch = json!({"rules": [rule(&["get", "delete"], &[""], &["configmaps"])]});
    let patched = h
        .request_with_headers(
            Method::PATCH,
            &format!("{roles}/reader"),
            Some(patch.to_string().into_bytes()),
            "application/merge-patch+json",
            &[(IMPERSONATE_USER, "alice")],
        )
        .await;
    assert_eq!(patched.status, 403, "{}", patched.body);
    assert!(
        patched.body["message"].as_str().is_some_and(
            |m| m.ends_with(r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}"#)
        ),
        "{}",
        patched.body
    );
    // A role with less than she holds is fine to write.
    grown["rules"] = json!([rule(&["get", "list"], &[""], &["configmaps"])]);
    let updated = alice(&h, Method::PUT, &format!("{roles}/reader"), Some(&grown)).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    // Allowed to escalate roles in the namespace, she may.
    admin_create(
        &h,
        &roles,
        &role(
            "escalator",
            json!([rule(
                &["escalate"],
                &["rbac.authorization.k8s.io"],
                &["roles"]
            )]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "escalator",
            "Role",
            "escalator",
            user_subject("alice"),
        ),
    )
    .await;
    // Past the escalation check, the role is validated: a Role's rules cannot name
    // non-resource URLs (`ValidatePolicyRule`), which upstream checks after escalation too.
    let invalid = alice(&h, Method::POST, &roles, Some(&more)).await;
    assert_eq!(invalid.status, 422, "{}", invalid.body);
    let valid = role(
        "deleter",
        json!([rule(&["get", "delete"], &[""], &["configmaps", "secrets"])]),
    );
    let created = alice(&h, Method::POST, &roles, Some(&valid)).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test]
async fn nobody_binds_a_role_they_do_not_hold_unless_they_may_bind_it() {
    let Some(h) = rbac_server("bind").await else {
        return;
    };
    let ns = h.namespace("bind").await;
    rbac_manager(&h, &ns).await;
    let roles = format!("{RBAC}/namespaces/{ns}/roles");
    let bindings = format!("{RBAC}/namespaces/{ns}/rolebindings");
    admin_create(
        &h,
        &roles,
        &role("secrets", json!([rule(&["get"], &[""], &["secrets"])])),
    )
    .await;
    admin_create(
        &h,
        &roles,
        &role(
            "cm-reader",
            json!([rule(&["list"], &[""], &["configmaps"])]),
        ),
    )
    .await;
    let to_secrets = binding(
        "RoleBinding",
        "bob-secrets",
        "Role",
        "secrets",
        user_subject("bob"),
    );
    assert_forbidden(
        &alice(&h, Method::POST, &bindings, Some(&to_secrets)).await,
        "rolebindings.rbac.authorization.k8s.io \"bob-secrets\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}",
        json!({"name": "bob-secrets", "group": "rbac.authorization.k8s.io",
               "kind": "rolebindings"}),
    );
    // A role whose rules she holds she may bind.
    let to_reader = binding(
        "RoleBinding",
        "bob-reads",
        "Role",
        "cm-reader",
        user_subject("bob"),
    );
    let created = alice(&h, Method::POST, &bindings, Some(&to_reader)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // A role that does not exist is not found (as the registry says it).
    let to_missing = binding(
        "RoleBinding",
        "bob-missing",
        "Role",
        "missing",
        user_subject("bob"),
    );
    let missing = alice(&h, Method::POST, &bindings, Some(&to_missing)).await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(
        missing.body["message"],
        r#"roles.rbac.authorization.k8s.io "missing" not found"#
    );
    // Allowed to bind that one role, she may, without holding it.
    admin_create(
        &h,
        &roles,
        &role(
            "binder",
            json!([{"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["roles"], "resourceNames": ["secrets"]}]),
        ),
    )
    .await;
    admin_create(
        &h,
        &bindings,
        &binding(
            "RoleBinding",
            "binder",
            "Role",
            "binder",
            user_subject("alice"),
        ),
    )
    .await;
    let created = alice(&h, Method::POST, &bindings, Some(&to_secrets)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // ... and bob now reads secrets there.
    assert_eq!(
        as_user(
            &h,
            "bob",
            &[],
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/secrets/x"),
            None
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn an_aggregation_rule_needs_every_permission() {
    let Some(h) = rbac_server("aggregation_rule").await else {
        return;
    };
    admin_create(
        &h,
        &format!("{RBAC}/clusterroles"),
        &cluster_role(
            "role-writer",
            json!([
                rule(
                    &["create", "update", "get"],
                    &["rbac.authorization.k8s.io"],
                    &["clusterroles"]
                ),
                rule(&["get"], &[""], &["configmaps"])
            ]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/clusterrolebindings"),
        &binding(
            "ClusterRoleBinding",
            "role-writer",
            "ClusterRole",
            "role-writer",
            user_subject("alice"),
        ),
    )
    .await;
    let aggregated = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "gathered"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]},
        "rules": [rule(&["get"], &[""], &["configmaps"])]});
    assert_forbidden(
        &alice(
            &h,
            Method::POST,
            &format!("{RBAC}/clusterroles"),
            Some(&aggregated),
        )
        .await,
        r#"clusterroles.rbac.authorization.k8s.io "gathered" is forbidden: must have cluster-admin privileges to use the aggregationRule"#,
        json!({"name": "gathered", "group": "rbac.authorization.k8s.io", "kind": "clusterroles"}),
    );
    let mut plain = aggregated.clone();
    if let Some(fields) = plain.as_object_mut() {
        fields.remove("aggregationRule");
    }
    let created = alice(
        &h,
        Method::POST,
        &format!("{RBAC}/clusterroles"),
        Some(&plain),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test]
async fn access_reviews_answer_as_the_requests_they_describe() {
    let Some(h) = rbac_server("access_reviews").await else {
        return;
    };
    let ns = h.namespace("access-reviews").await;
    let review = |user: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": user, "groups": ["system:authenticated"],
                        "resourceAttributes": {"namespace": ns, "verb": "list",
                                               "resource": "configmaps"}}})
    };
    let sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let denied = h.post(sar, &review("alice")).await;
    assert_eq!(denied.status, 201, "{}", denied.body);
    assert_eq!(denied.body["status"], json!({"allowed": false}));
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role("reader", json!([rule(&["list"], &[""], &["configmaps"])])),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "alice",
            "Role",
            "reader",
            user_subject("alice"),
        ),
    )
    .await;
    let allowed = h.post(sar, &review("alice")).await;
    assert_eq!(
        allowed.body["status"],
        json!({"allowed": true,
               "reason": format!(r#"RBAC: allowed by RoleBinding "alice/{ns}" of Role "reader" to User "alice""#)})
    );
    // A binding to a role that does not exist is the reason of a denial.
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "dangling",
            "Role",
            "gone",
            user_subject("erin"),
        ),
    )
    .await;
    let dangling = h.post(sar, &review("erin")).await;
    assert_eq!(
        dangling.body["status"],
        json!({"allowed": false,
               "reason": r#"RBAC: role.rbac.authorization.k8s.io "gone" not found"#})
    );
    // A local review, and a review of a non-resource path.
    let local = h
        .post(
            &format!("/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews"),
            &json!({"spec": {"user": "alice", "resourceAttributes": {
                "namespace": ns, "verb": "create", "resource": "configmaps"}}}),
        )
        .await;
    assert_eq!(local.status, 201, "{}", local.body);
    assert_eq!(local.body["status"], json!({"allowed": false}));
    let path = h
        .post(
            sar,
            &json!({"spec": {"user": "alice",
                             "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}),
        )
        .await;
    assert_eq!(path.body["status"], json!({"allowed": false}));
    // alice may not review others' access; her own she may (`system:basic-user`).
    assert_eq!(
        alice(&h, Method::POST, sar, Some(&review("bob")))
            .await
            .status,
        403
    );
    let can_i = |verb: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "spec": {"resourceAttributes": {"namespace": ns, "verb": verb,
                                               "resource": "configmaps"}}})
    };
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let yes = alice(&h, Method::POST, ssar, Some(&can_i("list"))).await;
    assert_eq!(yes.status, 201, "{}", yes.body);
    assert_eq!(yes.body["status"]["allowed"], true);
    assert_eq!(
        yes.body["spec"],
        json!({"resourceAttributes": {"namespace": ns, "verb": "list", "resource": "configmaps"}}),
        "the spec is echoed as sent"
    );
    let no = alice(&h, Method::POST, ssar, Some(&can_i("delete"))).await;
    assert_eq!(no.body["status"], json!({"allowed": false}));
}

#[tokio::test]
async fn self_subject_rules_reviews_list_the_requesters_rules() {
    let Some(h) = rbac_server("rules_review").await else {
        return;
    };
    let ns = h.namespace("rules-review").await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role(
            "reader",
            json!([{"verbs": ["get", "watch"], "apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": ["a"]}]),
        ),
    )
    .await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "alice",
            "Role",
            "reader",
            user_subject("alice"),
        ),
    )
    .await;
    let ssrr = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    let ask = |namespace: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
               "spec": {"namespace": namespace}})
    };
    let rules = alice(&h, Method::POST, ssrr, Some(&ask(&ns))).await;
    assert_eq!(rules.status, 201, "{}", rules.body);
    assert_eq!(
        rules.body,
        json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
               "metadata": {"creationTimestamp": null}, "spec": {},
               "status": {
                   // The bootstrap `system:basic-user`, `system:discovery` and
                   // `system:public-info-viewer` (bound to system:authenticated, in binding
                   // name order), then the namespace's.
                   "resourceRules": [
                       {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                       {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                        "resources": ["selfsubjectreviews"]},
                       {"verbs": ["get", "watch"], "apiGroups": [""],
                        "resources": ["configmaps"], "resourceNames": ["a"]}],
                   "nonResourceRules": [
                       {"verbs": ["get"], "nonResourceURLs": [
                           "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                           "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]},
                       {"verbs": ["get"], "nonResourceURLs": [
                           "/healthz", "/livez", "/readyz", "/version", "/version/"]}],
                   "incomplete": false}})
    );
    // Elsewhere only the cluster-wide rules.
    let default = alice(&h, Method::POST, ssrr, Some(&ask("default"))).await;
    assert_eq!(
        default.body["status"]["resourceRules"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // A binding to a missing role is the evaluation error.
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "dangling",
            "ClusterRole",
            "gone",
            user_subject("alice"),
        ),
    )
    .await;
    let dangling = alice(&h, Method::POST, ssrr, Some(&ask(&ns))).await;
    assert_eq!(
        dangling.body["status"]["evaluationError"],
        r#"clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );
}

#[tokio::test]
async fn a_refusal_is_answered_in_the_encoding_the_client_accepts() {
    let Some(h) = rbac_server("encoding").await else {
        return;
    };
    let reply = h
        .request_with_headers(
            Method::GET,
            "/api/v1/namespaces/default/pods",
            None,
            "",
            &[
                (IMPERSONATE_USER, "alice"),
                (
                    "accept",
                    "application/vnd.kubernetes.protobuf, application/json",
                ),
            ],
        )
        .await;
    assert_eq!(reply.status, 403);
    assert_eq!(
        reply.headers.get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/vnd.kubernetes.protobuf"[..])
    );
    assert_eq!(
        reply.body["message"],
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    assert_eq!(
        reply
            .headers
            .get("x-content-type-options")
            .map(|v| v.as_bytes()),
        Some(&b"nosniff"[..])
    );
    // A refused write with a body leaves the connection usable: the next request on it works.
    for _ in 0..3 {
        let refused = alice(
            &h,
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            Some(&configmap("c", json!({"k": "v".repeat(100_000)}))),
        )
        .await;
        assert_eq!(refused.status, 403);
    }
}

#[tokio::test]
async fn service_accounts_are_bound_by_namespace_and_name() {
    let Some(h) = rbac_server("service_accounts").await else {
        return;
    };
    let ns = h.namespace("service-accounts").await;
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/roles"),
        &role("reader", json!([rule(&["list"], &[""], &["configmaps"])])),
    )
    .await;
    // No namespace: the binding's own.
    admin_create(
        &h,
        &format!("{RBAC}/namespaces/{ns}/rolebindings"),
        &binding(
            "RoleBinding",
            "robot",
            "Role",
            "reader",
            json!([{"kind": "ServiceAccount", "name": "robot"}]),
        ),
    )
    .await;
    let list = format!("/api/v1/namespaces/{ns}/configmaps");
    let robot = format!("system:serviceaccount:{ns}:robot");
    let as_sa = |name: String| {
        let (h, list) = (&h, list.clone());
        async move {
            as_user(
                h,
                &name,
                &["system:serviceaccounts"],
                Method::GET,
                &list,
                None,
            )
            .await
            .status
        }
    };
    assert_eq!(as_sa(robot).await, 200);
    assert_eq!(
        as_sa(format!("system:serviceaccount:{ns}:other")).await,
        403
    );
    assert_eq!(
        as_sa("system:serviceaccount:default:robot".to_owned()).await,
        403
    );
}

#[tokio::test]
async fn node_rbac_is_rbac_and_always_allow_allows_everyone() {
    let Some(h) = rbac_server_with(
        "node_rbac",
        AuthorizationMode::parse("Node,RBAC").expect("a mode"),
    )
    .await
    else {
        return;
    };
    assert_eq!(
        alice(&h, Method::GET, "/api/v1/namespaces/default/pods", None)
            .await
            .status,
        403
    );
    let Some(open) = rbac_server_with("always_allow", AuthorizationMode::always_allow()).await
    else {
        return;
    };
    assert_eq!(
        alice(&open, Method::GET, "/api/v1/namespaces/default/pods", None)
            .await
            .status,
        200
    );
    // With AlwaysAllow, everyone may escalate and bind: nothing is refused.
    let cr = alice(
        &open,
        Method::POST,
        &format!("{RBAC}/clusterroles"),
        Some(&cluster_role(
            "everything",
            json!([rule(&["*"], &["*"], &["*"])]),
        )),
    )
    .await;
    assert_eq!(cr.status, 201, "{}", cr.body);
    let rules = alice(
        &open,
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(&json!({"spec": {"namespace": "default"}})),
    )
    .await;
    assert_eq!(
        rules.body["status"],
        json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
               "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
               "incomplete": false})
    );
}

/// Roles and bindings are defaulted and validated as upstream's `pkg/apis/rbac/v1/defaults.go`
/// and `pkg/apis/rbac/validation/validation.go` do, whatever the authorization mode: a 422
/// for a rule without verbs or a binding to a role of another kind, the RBAC group filled in,
/// and a binding's `roleRef` fixed once written.
#[tokio::test]
async fn roles_and_bindings_are_defaulted_and_validated_as_upstream() {
    let h = Harness::start().await;
    let ns = h.namespace("rbac-validation").await;
    let roles = format!("{RBAC}/namespaces/{ns}/roles");
    let bindings = format!("{RBAC}/namespaces/{ns}/rolebindings");

    let no_verbs = h
        .post(
            &roles,
            &role(
                "no-verbs",
                json!([{"apiGroups": [""], "resources": ["pods"]}]),
            ),
        )
        .await;
    assert_eq!(no_verbs.status, 422, "{}", no_verbs.body);
    assert_eq!(
        no_verbs.body["message"],
        "Role.rbac.authorization.k8s.io \"no-verbs\" is invalid: rules[0].verbs: Required value: \
         verbs must contain at least one value"
    );
    let urls = h
        .post(
            &roles,
            &role(
                "urls",
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]),
            ),
        )
        .await;
    assert_eq!(urls.status, 422, "{}", urls.body);
    assert_eq!(
        urls.body["details"]["causes"][0]["message"],
        "Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs"
    );

    admin_create(
        &h,
        &roles,
        &role("reader", json!([rule(&["get"], &[""], &["pods"])])),
    )
    .await;
    let mut defaulted = binding(
        "RoleBinding",
        "readers",
        "Role",
        "reader",
        json!([
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "default"}
        ]),
    );
    defaulted["roleRef"] = json!({"kind": "Role", "name": "reader"});
    let created = admin_create(&h, &bindings, &defaulted).await;
    assert_eq!(
        created["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"})
    );
    assert_eq!(
        created["subjects"],
        json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
               {"kind": "ServiceAccount", "name": "default"}])
    );

    let mut changed = created.clone();
    changed["roleRef"]["name"] = json!("writer");
    let refused = h.put(&format!("{bindings}/readers"), &changed).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["details"]["causes"][0]["message"],
        "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", \
         Name:\"writer\"}: cannot change roleRef"
    );

    let cluster_wide = h
        .post(
            &format!("{RBAC}/clusterrolebindings"),
            &binding(
                "ClusterRoleBinding",
                "to-a-role",
                "Role",
                "reader",
                json!([
                    {"kind": "ServiceAccount", "name": "default"}
                ]),
            ),
        )
        .await;
    assert_eq!(cluster_wide.status, 422, "{}", cluster_wide.body);
    let causes: Vec<&str> = cluster_wide.body["details"]["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(causes, ["roleRef.kind", "subjects[0].namespace"]);
}
