//! Audit logging as kube-apiserver's (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/
//! audit.go`, `authn_audit.go`, `pkg/audit/request.go`, `pkg/audit/policy/checker.go`,
//! `plugin/pkg/audit/log/backend.go`): each test starts an in-process server with an audit
//! policy and a log file of its own, makes requests and reads the `audit.k8s.io/v1` events
//! back, found by the `Audit-ID` the responses carry. They run in-process only (an external
//! server's audit log is not readable: they skip, saying so).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kubemock_apiserver::{
    AuditConfig, AuditLog, AuditPolicy, AuthorizationMode, SecurityOptions, ServerConfig,
    TestServer,
};
use kubemock_conformance::{Harness, Reply, configmap, tls_client};
use reqwest::Method;
use serde_json::{Value, json};

/// How long the writer may take to write an event out.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

struct Audited {
    h: Harness,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn audit_config(policy: &str, dir: &Path) -> (AuditConfig, PathBuf) {
    let (policy, warnings) = AuditPolicy::parse(policy.as_bytes()).expect("a valid policy");
    assert!(warnings.is_empty(), "{warnings:?}");
    let log = dir.join("audit").join("audit.log");
    let config = AuditConfig::start(policy, &AuditLog::File(log.clone())).expect("open the log");
    (config, log)
}

/// A server auditing by `policy` (YAML), with `config`'s other settings.
async fn audited(test: &str, policy: &str, config: ServerConfig) -> Option<Audited> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (audit, log) = audit_config(policy, dir.path());
    let h = Harness::start_with(ServerConfig {
        audit: Some(audit),
        ..config
    })
    .await;
    if h.in_process().is_none() {
        eprintln!("{test}: skipped: needs an in-process server (its audit log)");
        return None;
    }
    Some(Audited { h, log, _dir: dir })
}

fn policy(rules: &str) -> String {
    format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{rules}\n")
}

/// Every event in the log so far.
fn read_events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str(line).expect("each line is one JSON event"))
        .collect()
}

/// The events of the request with `audit_id`, once there are `count` of them.
async fn events_of(log: &Path, audit_id: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + WRITE_DEADLINE;
    loop {
        let events: Vec<Value> = read_events(log)
            .into_iter()
            .filter(|e| e["auditID"] == audit_id)
            .collect();
        if events.len() >= count || Instant::now() > deadline {
            assert_eq!(events.len(), count, "events of {audit_id}: {events:#?}");
            return events;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn audit_id(reply: &Reply) -> String {
    reply
        .headers
        .get("audit-id")
        .expect("an Audit-ID header")
        .to_str()
        .expect("ASCII")
        .to_owned()
}

/// `metav1.MicroTime`: RFC 3339 in UTC with six fractional digits.
fn assert_micro_time(value: &Value) {
    let text = value.as_str().expect("a timestamp");
    let bytes = text.as_bytes();
    assert_eq!(bytes.len(), 27, "{text}");
    assert_eq!(
        (bytes[10], bytes[19], bytes[26]),
        (b'T', b'.', b'Z'),
        "{text}"
    );
}

/// Waits until the writer has written something after the request with `marker`: a request
/// whose events are not there, when the marker's are, was not audited.
async fn marker(a: &Audited) {
    let reply = a.h.get("/version").await;
    events_of(&a.log, &audit_id(&reply), 2).await;
}

#[tokio::test]
async fn metadata_events_are_upstreams_for_each_stage() {
    let Some(a) = audited(
        "metadata_events_are_upstreams_for_each_stage",
        &policy("rules:\n- level: Metadata"),
        ServerConfig::default(),
    )
    .await
    else {
        return;
    };
    let ns = a.h.namespace("audit-metadata").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let reply = a.h.post(&path, &configmap("c1", json!({"k": "v"}))).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let id = audit_id(&reply);
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let events = events_of(&a.log, &id, 2).await;
    let stages: Vec<&str> = events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"]);
    let done = &events[1];
    let object_ref = json!({"resource": "configmaps", "namespace": ns, "name": "c1",
        "apiVersion": "v1"});
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["requestURI"], path);
    assert_eq!(done["verb"], "create");
    assert_eq!(
        done["user"],
        json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]})
    );
    assert_eq!(done["sourceIPs"], json!(["127.0.0.1"]));
    // reqwest sends no User-Agent: the member is left out, as Go's omitempty does.
    assert!(done.get("userAgent").is_none(), "{done}");
    assert_eq!(done["objectRef"], object_ref);
    assert_eq!(done["responseStatus"], json!({"metadata": {}, "code": 201}));
    assert_eq!(
        done["annotations"],
        json!({"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""})
    );
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none());
    assert!(done.get("impersonatedUser").is_none());
    assert_micro_time(&done["requestReceivedTimestamp"]);
    assert_micro_time(&done["stageTimestamp"]);
    // RequestReceived is stamped when the request came, and knows no answer yet.
    let received = &events[0];
    assert_eq!(
        received["stageTimestamp"],
        received["requestReceivedTimestamp"]
    );
    assert!(received.get("responseStatus").is_none(), "{received}");
    assert!(received.get("annotations").is_none(), "{received}");

    // A failure carries its Status (without type meta).
    let reply = a.h.get(&format!("{path}/missing")).await;
    assert_eq!(reply.status, 404);
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(
        events[1]["responseStatus"],
        json!({"metadata": {}, "status": "Failure",
            "message": "configmaps \"missing\" not found", "reason": "NotFound",
            "details": {"name": "missing", "kind": "configmaps"}, "code": 404})
    );
    assert_eq!(events[1]["verb"], "get");
    // A non-resource request: its lowercase method for a verb, no objectRef.
    let reply = a.h.get("/version").await;
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(events[1]["verb"], "get");
    assert!(events[1].get("objectRef").is_none());
    // A client's Audit-ID is kept.
    let headers = [("Audit-ID", "mine-1"), ("User-Agent", "audit-test/1.0")];
    let reply =
        a.h.request_with_headers(Method::GET, "/version", None, "", &headers)
            .await;
    assert_eq!(audit_id(&reply), "mine-1");
    let events = events_of(&a.log, "mine-1", 2).await;
    assert_eq!(events[1]["userAgent"], "audit-test/1.0");
}

#[tokio::test]
async fn request_and_request_response_levels_record_the_bodies() {
    let rules = "rules:\n\
        - level: RequestResponse\n  resources: [{group: \"\", resources: [configmaps]}]\n  omitManagedFields: true\n\
        - level: RequestResponse\n  resources: [{group: \"\", resources: [services]}]\n\
        - level: Request\n  resources: [{group: \"\", resources: [secrets]}]";
    let Some(a) = audited(
        "request_and_request_response_levels_record_the_bodies",
        &policy(rules),
        ServerConfig::default(),
    )
    .await
    else {
        return;
    };
    let ns = a.h.namespace("audit-bodies").await;
    // RequestResponse: both bodies, as sent and received (managedFields omitted).
    let body = configmap("c1", json!({"k": "v"}));
    let reply =
        a.h.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
            .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert!(events[0].get("requestObject").is_none(), "{}", events[0]);
    let done = &events[1];
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["requestObject"], body);
    let mut answered = reply.body.clone();
    assert!(answered["metadata"]["managedFields"].is_array());
    answered["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert_eq!(done["responseObject"], answered);
    // A patch is recorded as sent.
    let patch = json!({"data": {"k": "w"}});
    let reply =
        a.h.patch(
            &format!("/api/v1/namespaces/{ns}/configmaps/c1"),
            "application/merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(events[1]["verb"], "patch");
    assert_eq!(events[1]["requestObject"], patch);
    assert_eq!(events[1]["responseObject"]["data"], json!({"k": "w"}));
    // Without omitManagedFields the answer is whole; a list too.
    let reply = a.h.get(&format!("/api/v1/namespaces/{ns}/services")).await;
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(events[1]["verb"], "list");
    assert_eq!(events[1]["responseObject"], reply.body);
    // Request: the request body, not the answer.
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"},
        "stringData": {"a": "b"}});
    let reply =
        a.h.post(&format!("/api/v1/namespaces/{ns}/secrets"), &secret)
            .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(events[1]["level"], "Request");
    assert_eq!(events[1]["requestObject"], secret);
    assert!(events[1].get("responseObject").is_none());
    // An error answered at RequestResponse: the Status is the response object too.
    let reply =
        a.h.get(&format!("/api/v1/namespaces/{ns}/configmaps/nope"))
            .await;
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(events[1]["responseObject"]["kind"], "Status");
    assert_eq!(events[1]["responseStatus"]["reason"], "NotFound");
}

#[tokio::test]
async fn rules_match_users_verbs_resources_namespaces_and_urls_first_match_wins() {
    let rules = "rules:\n\
        - level: None\n  nonResourceURLs: [/healthz*]\n\
        - level: Request\n  nonResourceURLs: [/version]\n\
        - level: None\n  users: [someone-else]\n\
        - level: RequestResponse\n  userGroups: [nobody]\n\
        - level: Request\n  verbs: [list]\n  resources: [{group: \"\", resources: [configmaps]}]\n\
        - level: Metadata\n  resources: [{group: \"\", resources: [configmaps], resourceNames: [named]}]\n\
        - level: Request\n  namespaces: [kube-public]\n\
        - level: Metadata\n  users: [system:admin]\n  resources: [{group: \"\", resources: [\"pods/*\"]}]\n\
        - level: None";
    let Some(a) = audited(
        "rules_match_users_verbs_resources_namespaces_and_urls_first_match_wins",
        &policy(rules),
        ServerConfig::default(),
    )
    .await
    else {
        return;
    };
    let level = |events: &[Value]| events.last().map(|e| e["level"].clone());
    let cases = [
        ("/healthz", None),
        ("/healthz/ping", None),
        ("/version", Some("Request")),
        ("/api/v1/namespaces/default/configmaps", Some("Request")),
        (
            "/api/v1/namespaces/default/configmaps/named",
            Some("Metadata"),
        ),
        ("/api/v1/namespaces/default/configmaps/other", None),
        (
            "/api/v1/namespaces/kube-public/configmaps/x",
            Some("Request"),
        ),
        ("/api/v1/namespaces/default/pods/p/log", Some("Metadata")),
        // `pods/*` is every subresource of pods and pods themselves (`checker.go`).
        ("/api/v1/namespaces/default/pods/p", Some("Metadata")),
        ("/api/v1/namespaces/default/services/s", None),
    ];
    for (path, expected) in cases {
        let reply = a.h.get(path).await;
        let id = audit_id(&reply);
        marker(&a).await;
        let events: Vec<Value> = read_events(&a.log)
            .into_iter()
            .filter(|e| e["auditID"] == id)
            .collect();
        assert_eq!(
            level(&events),
            expected.map(Value::from),
            "{path}: {events:#?}"
        );
    }
    let metrics = a.h.metrics().await;
    assert!(metrics.value("apiserver_audit_level_total", &[("level", "None")]) >= 4.0);
    assert!(metrics.value("apiserver_audit_event_total", &[]) >= 10.0);
    assert_eq!(
        metrics.value("apiserver_audit_error_total", &[("plugin", "log")]),
        0.0
    );
}

#[tokio::test]
async fn omitted_stages_are_not_written() {
    let rules = "omitStages: [RequestReceived]\nrules:\n\
        - level: Metadata\n  nonResourceURLs: [/version]\n  omitStages: [ResponseComplete]\n\
        - level: Metadata";
    let Some(a) = audited(
        "omitted_stages_are_not_written",
        &policy(rules),
        ServerConfig::default(),
    )
    .await
    else {
        return;
    };
    let reply = a.h.get("/api/v1/namespaces").await;
    let events = events_of(&a.log, &audit_id(&reply), 1).await;
    assert_eq!(events[0]["stage"], "ResponseComplete");
    // The rule's stages and the policy's: nothing at all for /version.
    let version = audit_id(&a.h.get("/version").await);
    let reply = a.h.get("/api").await;
    events_of(&a.log, &audit_id(&reply), 1).await;
    assert!(read_events(&a.log).iter().all(|e| e["auditID"] != version));
}

#[tokio::test]
async fn a_watch_is_written_when_it_starts_and_when_it_ends() {
    let Some(a) = audited(
        "a_watch_is_written_when_it_starts_and_when_it_ends",
        &policy("rules:\n- level: RequestResponse"),
        ServerConfig::default(),
    )
    .await
    else {
        return;
    };
    let ns = a.h.namespace("audit-watch").await;
    let mut watch =
        a.h.watch(&format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=1&timeoutSeconds=1"
        ))
        .await;
    assert_eq!(watch.status, 200);
    let id = watch.headers["audit-id"].to_str().unwrap().to_owned();
    let events = events_of(&a.log, &id, 2).await;
    assert_eq!(events[1]["stage"], "ResponseStarted");
    assert_eq!(events[1]["verb"], "watch");
    assert_eq!(
        events[1]["responseStatus"],
        json!({"metadata": {}, "code": 200})
    );
    // The server ends the watch after timeoutSeconds.
    while watch.next_event().await.is_some() {}
    let events = events_of(&a.log, &id, 3).await;
    assert_eq!(events[2]["stage"], "ResponseComplete");
    assert!(events[2].get("responseObject").is_none(), "{}", events[2]);
}

#[tokio::test]
async fn forbidden_and_impersonated_requests_carry_the_decision() {
    let Some(a) = audited(
        "forbidden_and_impersonated_requests_carry_the_decision",
        &policy("rules:\n- level: Metadata"),
        ServerConfig {
            authorization_mode: AuthorizationMode::rbac(),
            ..ServerConfig::default()
        },
    )
    .await
    else {
        return;
    };
    let reply =
        a.h.request_with_headers(
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            None,
            "",
            &[("Impersonate-User", "alice"), ("Impersonate-Group", "devs")],
        )
        .await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    let done = &events[1];
    // The policy and `user` see who authenticated; `impersonatedUser` whom they act as.
    assert_eq!(done["user"]["username"], "system:admin");
    assert_eq!(
        done["impersonatedUser"],
        json!({"username": "alice", "groups": ["devs", "system:authenticated"]})
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(done["annotations"]["authorization.k8s.io/reason"], "");
    assert_eq!(done["responseStatus"]["reason"], "Forbidden");
    assert_eq!(done["responseStatus"]["code"], 403);
    assert_eq!(done["responseStatus"]["message"], reply.body["message"]);
    // Allowed through RBAC: the reason names the binding.
    let reply =
        a.h.request_with_headers(
            Method::GET,
            "/api",
            None,
            "",
            &[("Impersonate-User", "alice")],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let events = events_of(&a.log, &audit_id(&reply), 2).await;
    assert_eq!(
        events[1]["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    let reason = events[1]["annotations"]["authorization.k8s.io/reason"]
        .as_str()
        .unwrap();
    assert!(
        reason.starts_with("RBAC: allowed by ClusterRoleBinding"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_failed_authentication_is_one_response_started_event() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (audit, log) = audit_config(&policy("rules:\n- level: Metadata"), dir.path());
    let options = SecurityOptions {
        anonymous_auth: false,
        ..SecurityOptions::default()
    };
    let config = ServerConfig {
        audit: Some(audit),
        ..ServerConfig::secure(&options).expect("a secure configuration")
    };
    let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
        .await
        .expect("start a secure server");
    let ca = server
        .security()
        .expect("secure")
        .server_ca_pem()
        .to_owned();
    let h = Harness::connect_with(server.url(), tls_client(&ca, None, Some("not-a-token")));
    let reply = h.get("/api/v1/namespaces/default/pods?limit=1").await;
    assert_eq!(reply.status, 401);
    let events = events_of(&log, &audit_id(&reply), 1).await;
    let event = &events[0];
    assert_eq!(event["stage"], "ResponseStarted");
    assert_eq!(event["user"], json!({}));
    assert_eq!(event["verb"], "list");
    assert_eq!(
        event["requestURI"],
        "/api/v1/namespaces/default/pods?limit=1"
    );
    assert_eq!(
        event["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "Unauthorized",
            "reason": "Unauthorized", "code": 401})
    );
    assert_eq!(event["sourceIPs"], json!(["127.0.0.1"]));
    server.stop().await.expect("stop");
}
