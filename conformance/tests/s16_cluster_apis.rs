//! Issue 16: the groups and subresources every 1.32 cluster serves beyond the workload kinds:
//! APIServices (local ones per served group-version and per custom resource version),
//! CertificateSigningRequests with `/approval` and the `kube-apiserver-client` signer,
//! TokenRequest and TokenReview, SelfSubjectReview, the access reviews (answered as an
//! AlwaysAllow server answers), `componentstatuses`, `bindings` and `pods/eviction`.

use std::time::{Duration, Instant};

use kubemock_apiserver::{ComponentHealth, ServerConfig};
use kubemock_conformance::{Harness, Reply, causes};
use serde_json::{Value, json};

/// How long a controller inside the server may take to act.
const SETTLE: Duration = Duration::from_secs(10);
/// Poll interval while waiting.
const POLL: Duration = Duration::from_millis(20);

/// GETs `path` until `done` holds for the answer (or panics after [`SETTLE`]).
async fn wait_for(h: &Harness, path: &str, done: impl Fn(&Reply) -> bool) -> Reply {
    let deadline = Instant::now() + SETTLE;
    loop {
        let reply = h.get(path).await;
        if done(&reply) {
            return reply;
        }
        assert!(
            Instant::now() < deadline,
            "{path} did not get there: {} {}",
            reply.status,
            reply.body
        );
        tokio::time::sleep(POLL).await;
    }
}

fn available(reply: &Reply) -> bool {
    reply.status == 200
        && reply.body["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Available"))
}

#[tokio::test]
async fn s16_apiservices_list_every_served_group_version_and_each_crd_version() {
    let h = Harness::start().await;
    let apps = wait_for(
        &h,
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps",
        available,
    )
    .await;
    assert_eq!(
        apps.body["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
               "versionPriority": 15})
    );
    assert_eq!(
        apps.body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let condition = &apps.body["status"]["conditions"][0];
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "Local");
    assert_eq!(
        condition["message"],
        "Local APIServices are always available"
    );
    wait_for(
        &h,
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.",
        available,
    )
    .await;
    let list = h.get("/apis/apiregistration.k8s.io/v1/apiservices").await;
    let names: Vec<&str> = list.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|s| s["metadata"]["name"].as_str())
        .collect();
    for name in [
        "v1.",
        "v2.autoscaling",
        "v1.autoscaling",
        "v1.certificates.k8s.io",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }

    // A definition's versions get theirs; a version taken away loses it.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.s16.example.com"},
        "spec": {"group": "s16.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object"}}},
                {"name": "v2", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let created = h
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let v2 = wait_for(
        &h,
        "/apis/apiregistration.k8s.io/v1/apiservices/v2.s16.example.com",
        available,
    )
    .await;
    assert_eq!(v2.body["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(v2.body["spec"]["versionPriority"], 100);
    assert_eq!(
        v2.body["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    let patch = json!([{"op": "replace", "path": "/spec/versions/1/served", "value": false}]);
    let patched = h
        .patch(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.s16.example.com",
            "application/json-patch+json",
            &patch,
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    wait_for(
        &h,
        "/apis/apiregistration.k8s.io/v1/apiservices/v2.s16.example.com",
        |r| r.status == 404,
    )
    .await;
    let v1 = h
        .get("/apis/apiregistration.k8s.io/v1/apiservices/v1.s16.example.com")
        .await;
    assert_eq!(v1.status, 200);
}

#[tokio::test]
async fn s16_apiservices_are_validated_and_remote_ones_are_not_available() {
    let h = Harness::start().await;
    let bad = h
        .post(
            "/apis/apiregistration.k8s.io/v1/apiservices",
            &json!({"metadata": {"name": "v1.wrong.example.com"},
                    "spec": {"group": "metrics.example.com", "version": "v1",
                             "groupPriorityMinimum": 100, "versionPriority": 10}}),
        )
        .await;
    assert_eq!(bad.status, 422);
    assert_eq!(
        causes(&bad.body),
        [
            "metadata.name: Invalid value: \"v1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.metrics.example.com\""
        ]
    );
    let remote = h
        .post(
            "/apis/apiregistration.k8s.io/v1/apiservices",
            &json!({"metadata": {"name": "v1beta1.metrics.example.com"},
                    "spec": {"group": "metrics.example.com", "version": "v1beta1",
                             "groupPriorityMinimum": 100, "versionPriority": 10,
                             "service": {"namespace": "kube-system", "name": "metrics"}}}),
        )
        .await;
    assert_eq!(remote.status, 201, "{}", remote.body);
    assert_eq!(remote.body["status"], json!({}), "no status on create");
    assert_eq!(remote.body["spec"]["service"]["port"], 443, "defaulted");
    let unavailable = wait_for(
        &h,
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.example.com",
        available,
    )
    .await;
    let condition = &unavailable.body["status"]["conditions"][0];
    assert_eq!(condition["status"], "False");
    assert_eq!(condition["reason"], "ServiceNotFound");
    assert_eq!(
        condition["message"],
        "service/metrics in \"kube-system\" is not present"
    );
    let table = h
        .get_accepting(
            "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.example.com",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    let cells = &table.body["rows"][0]["cells"];
    assert_eq!(cells[1], "kube-system/metrics");
    assert_eq!(cells[2], "False (ServiceNotFound)");
}

/// A PEM certificate request for `common_name` in `organization`.
fn certificate_request(common_name: &str, organization: &str) -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, organization);
    params
        .serialize_request(&key)
        .expect("a request")
        .pem()
        .expect("PEM")
}

fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn csr(name: &str, usages: &[&str]) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64(&certificate_request("alice", "developers")),
                 "signerName": "kubernetes.io/kube-apiserver-client",
                 "expirationSeconds": 86400, "usages": usages,
                 "username": "mallory", "groups": ["system:masters"]},
        "status": {"conditions": [{"type": "Approved", "status": "True"}]},
    })
}

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

#[tokio::test]
async fn s16_certificate_signing_request_approved_then_issued_by_the_cluster_ca() {
    let h = Harness::start().await;
    let created = h
        .post(CSRS, &csr("alice", &["digital signature", "client auth"]))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // The requester replaces what the body claimed; nobody creates a pre-approved request.
    assert_eq!(created.body["spec"]["username"], "system:admin");
    assert_eq!(
        created.body["spec"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(created.body["status"], json!({}));
    let table = h
        .get_accepting(
            &format!("{CSRS}/alice"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    let cells = &table.body["rows"][0]["cells"];
    assert_eq!(cells[2], "kubernetes.io/kube-apiserver-client");
    assert_eq!(cells[3], "system:admin");
    assert_eq!(cells[4], "24h");
    assert_eq!(cells[5], "Pending");

    // `kubectl certificate approve`: the Approved condition through /approval.
    let mut approved = created.body.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True",
        "reason": "KubectlApprove", "message": "This CSR was approved by kubectl certificate approve."}]});
    let put = h.put(&format!("{CSRS}/alice/approval"), &approved).await;
    assert_eq!(put.status, 200, "{}", put.body);
    let condition = &put.body["status"]["conditions"][0];
    assert!(condition["lastUpdateTime"].is_string());
    assert!(condition["lastTransitionTime"].is_string());

    let issued = wait_for(&h, &format!("{CSRS}/alice"), |r| {
        r.body["status"]["certificate"].is_string()
    })
    .await;
    let pem = issued.body["status"]["certificate"]
        .as_str()
        .expect("certificate");
    assert!(!pem.is_empty());
    let table = h
        .get_accepting(
            &format!("{CSRS}/alice"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    assert_eq!(table.body["rows"][0]["cells"][5], "Approved,Issued");
}

#[tokio::test]
async fn s16_certificate_signing_requests_the_signer_cannot_serve_fail() {
    let h = Harness::start().await;
    let created = h
        .post(CSRS, &csr("server", &["client auth", "server auth"]))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let mut approved = created.body.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    assert_eq!(
        h.put(&format!("{CSRS}/server/approval"), &approved)
            .await
            .status,
        200
    );
    let failed = wait_for(&h, &format!("{CSRS}/server"), |r| {
        r.body["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Failed"))
    })
    .await;
    let condition = failed.body["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Failed"))
        .expect("Failed");
    assert_eq!(condition["reason"], "SignerValidationFailure");
    assert_eq!(
        condition["message"],
        "invalid usage for client certificate: server auth"
    );
    assert!(failed.body["status"].get("certificate").is_none());
}

#[tokio::test]
async fn s16_certificate_signing_requests_are_validated_as_upstream_validates_them() {
    let h = Harness::start().await;
    let mut bad = csr("bad", &["client auth", "bogus"]);
    bad["spec"]["request"] = json!(base64("not a request"));
    bad["spec"]["signerName"] = json!("example");
    let reply = h.post(CSRS, &bad).await;
    assert_eq!(reply.status, 422);
    let texts = causes(&reply.body);
    assert!(
        texts[0].starts_with("spec.request: Invalid value: []byte{0x6e, 0x6f")
            && texts[0].ends_with(": PEM block type must be CERTIFICATE REQUEST"),
        "{texts:?}"
    );
    assert!(texts[1].starts_with("spec.usages[1]: Unsupported value: \"bogus\""));
    assert_eq!(
        texts[2],
        "spec.signerName: Invalid value: \"example\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
    );

    let created = h.post(CSRS, &csr("ok", &["client auth"])).await;
    assert_eq!(created.status, 201);
    // The status path may not approve; the approval path may not have Approved and Denied.
    let mut approved = created.body.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    let through_status = h.put(&format!("{CSRS}/ok/status"), &approved).await;
    assert_eq!(through_status.status, 200, "{}", through_status.body);
    assert!(
        through_status.body["status"].get("conditions").is_none(),
        "/status keeps the approval conditions it had: {}",
        through_status.body
    );
    let mut both = created.body.clone();
    both["status"] = json!({"conditions": [{"type": "Approved", "status": "True"},
                                           {"type": "Denied", "status": "True"}]});
    let reply = h.put(&format!("{CSRS}/ok/approval"), &both).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        [
            "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
        ]
    );
    assert_eq!(
        h.put(&format!("{CSRS}/ok/approval"), &approved)
            .await
            .status,
        200
    );
    let latest = h.get(&format!("{CSRS}/ok")).await;
    let mut removed = latest.body.clone();
    removed["status"] = json!({"conditions": []});
    let reply = h.put(&format!("{CSRS}/ok/approval"), &removed).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
    );
}

/// Creates a service account and returns its uid.
async fn service_account(h: &Harness, namespace: &str, name: &str) -> String {
    let created = h
        .post(
            &format!("/api/v1/namespaces/{namespace}/serviceaccounts"),
            &json!({"metadata": {"name": name}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_owned()
}

async fn review(h: &Harness, token: &str, audiences: Option<Value>) -> Value {
    let mut spec = json!({"token": token});
    if let Some(audiences) = audiences {
        spec["audiences"] = audiences;
    }
    let reply = h
        .post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.body["status"].clone()
}

/// The JSON claims of a JWT (the middle part, base64url).
fn jwt_claims(token: &str) -> Value {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[tokio::test]
async fn s16_token_request_issues_a_token_that_token_review_accepts_until_its_account_goes() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-token").await;
    let uid = service_account(&h, &ns, "builder").await;
    let reply = h
        .post(
            &format!("/api/v1/namespaces/{ns}/serviceaccounts/builder/token"),
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 3600}}),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.body["kind"], "TokenRequest");
    assert_eq!(reply.body["metadata"]["name"], "builder");
    assert_eq!(
        reply.body["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert!(reply.body["status"]["expirationTimestamp"].is_string());
    let token = reply.body["status"]["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let claims = jwt_claims(&token);
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(claims["sub"], format!("system:serviceaccount:{ns}:builder"));
    assert_eq!(
        claims["aud"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(
        claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat"),
        3600
    );
    assert_eq!(
        claims["kubernetes.io"],
        json!({"namespace": ns, "serviceaccount": {"name": "builder", "uid": uid}})
    );

    let status = review(&h, &token, None).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        format!("system:serviceaccount:{ns}:builder")
    );
    assert_eq!(status["user"]["uid"], uid);
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated"
        ])
    );
    assert_eq!(
        status["user"]["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={}", claims["jti"].as_str().expect("jti"))])
    );
    assert_eq!(
        status["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let wrong = review(&h, &token, Some(json!(["vault"]))).await;
    assert!(wrong.get("authenticated").is_none(), "{wrong}");
    assert_eq!(
        wrong["error"],
        "[invalid bearer token, token audiences [\"https://kubernetes.default.svc.cluster.local\"] is invalid for the target audiences [\"vault\"]]"
    );
    let garbage = review(&h, "not-a-token", None).await;
    assert_eq!(garbage["error"], "invalid bearer token");

    let deleted = h
        .delete(
            &format!("/api/v1/namespaces/{ns}/serviceaccounts/builder"),
            None,
        )
        .await;
    assert_eq!(deleted.status, 200);
    let status = review(&h, &token, None).await;
    assert!(status.get("authenticated").is_none(), "{status}");
    assert_eq!(
        status["error"],
        "[invalid bearer token, serviceaccounts \"builder\" not found]"
    );
    // A new account of the same name is another account.
    service_account(&h, &ns, "builder").await;
    let status = review(&h, &token, None).await;
    assert!(
        status["error"]
            .as_str()
            .is_some_and(|e| e.contains("does not match claim")),
        "{status}"
    );
}

#[tokio::test]
async fn s16_token_request_bound_to_a_pod_dies_with_the_pod() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-bound").await;
    service_account(&h, &ns, "runner").await;
    let pod = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods"),
            &json!({"metadata": {"name": "job"},
                    "spec": {"serviceAccountName": "runner",
                             "containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .await;
    assert_eq!(pod.status, 201, "{}", pod.body);
    let pod_uid = pod.body["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_owned();
    let request =
        |reference: Value| json!({"spec": {"audiences": ["vault"], "boundObjectRef": reference}});
    let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/runner/token");
    let reply = h
        .post(
            &path,
            &request(json!({"apiVersion": "v1", "kind": "Pod", "name": "job", "uid": pod_uid})),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let token = reply.body["status"]["token"]
        .as_str()
        .expect("token")
        .to_owned();
    assert_eq!(
        jwt_claims(&token)["kubernetes.io"]["pod"],
        json!({"name": "job", "uid": pod_uid})
    );
    let status = review(&h, &token, Some(json!(["vault"]))).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["job"])
    );
    // A binding the object does not match is refused.
    let wrong_uid = h
        .post(
            &path,
            &request(json!({"apiVersion": "v1", "kind": "Pod", "name": "job", "uid": "nope"})),
        )
        .await;
    assert_eq!(wrong_uid.status, 409, "{}", wrong_uid.body);
    let wrong_kind = h
        .post(
            &path,
            &request(json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "job"})),
        )
        .await;
    assert_eq!(wrong_kind.status, 400);
    assert_eq!(
        wrong_kind.body["message"],
        "cannot bind token to object of type apps/v1, Kind=Deployment"
    );
    let short = h
        .post(&path, &json!({"spec": {"expirationSeconds": 60}}))
        .await;
    assert_eq!(short.status, 422);
    assert_eq!(
        causes(&short.body),
        [
            "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        ]
    );

    let gone = h
        .delete(
            &format!("/api/v1/namespaces/{ns}/pods/job"),
            Some(&json!({"gracePeriodSeconds": 0})),
        )
        .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    let status = review(&h, &token, Some(json!(["vault"]))).await;
    assert!(status.get("authenticated").is_none(), "{status}");
    assert_eq!(
        status["error"],
        "[invalid bearer token, service account token has been invalidated]"
    );
}

#[tokio::test]
async fn s16_self_subject_and_access_reviews_answer_as_an_always_allow_server() {
    let h = Harness::start().await;
    let whoami = h
        .post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        )
        .await;
    assert_eq!(whoami.status, 201, "{}", whoami.body);
    assert_eq!(
        whoami.body["status"]["userInfo"],
        json!({"username": "system:admin",
               "groups": ["system:masters", "system:authenticated"]})
    );
    let can_i = h
        .post(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &json!({"spec": {"resourceAttributes": {"namespace": "default", "verb": "create",
                                                    "resource": "pods"}}}),
        )
        .await;
    assert_eq!(can_i.status, 201, "{}", can_i.body);
    assert_eq!(can_i.body["status"], json!({"allowed": true}));
    assert_eq!(can_i.body["metadata"], json!({"creationTimestamp": null}));
    let anyone = h
        .post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &json!({"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}),
        )
        .await;
    assert_eq!(anyone.status, 422);
    assert_eq!(
        causes(&anyone.body),
        ["spec.user: Invalid value: \"\": at least one of user or group must be specified"]
    );
    let neither = h
        .post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &json!({"spec": {"user": "alice"}}),
        )
        .await;
    assert_eq!(neither.status, 422);
    assert_eq!(
        causes(&neither.body),
        [
            "spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
        ]
    );
    let local = h
        .post(
            "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
            &json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "other",
                                                                   "verb": "get"}}}),
        )
        .await;
    assert_eq!(local.status, 422);
    assert_eq!(
        causes(&local.body),
        [
            "spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace"
        ]
    );
    let rules = h
        .post(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            &json!({"spec": {"namespace": "default"}}),
        )
        .await;
    assert_eq!(rules.status, 201);
    assert_eq!(
        rules.body["status"],
        json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
               "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
               "incomplete": false})
    );
    // Reviews are created, never stored or read.
    let list = h
        .get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .await;
    assert_eq!(list.status, 405);
}

#[tokio::test]
async fn s16_component_statuses_report_what_runs() {
    let components = ComponentHealth::default();
    components.set("controller-manager", true);
    let h = Harness::start_with(ServerConfig {
        components: components.clone(),
        ..ServerConfig::default()
    })
    .await;
    let list = h.get("/api/v1/componentstatuses").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["kind"], "ComponentStatusList");
    let by_name = |name: &str| {
        list.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|i| i["metadata"]["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        by_name("etcd-0")["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    assert_eq!(
        by_name("controller-manager")["conditions"][0]["status"],
        "True"
    );
    let scheduler = &by_name("scheduler")["conditions"][0];
    assert_eq!(scheduler["status"], "False");
    assert_eq!(
        scheduler["error"],
        "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"
    );
    let table = h
        .get_accepting(
            "/api/v1/componentstatuses/scheduler",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    assert_eq!(table.body["rows"][0]["cells"][1], "Unhealthy");
    assert_eq!(h.get("/api/v1/componentstatuses/nope").await.status, 404);
}

#[tokio::test]
async fn s16_bindings_and_evictions_act_on_pods() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-bind").await;
    for name in ["a", "b"] {
        let pod = h
            .post(
                &format!("/api/v1/namespaces/{ns}/pods"),
                &json!({"metadata": {"name": name, "labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
            )
            .await;
        assert_eq!(pod.status, 201);
    }
    let bound = h
        .post(
            &format!("/api/v1/namespaces/{ns}/bindings"),
            &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"},
                    "target": {"kind": "Node", "name": "node-1"}}),
        )
        .await;
    assert_eq!(bound.status, 201, "{}", bound.body);
    let pod = h.get(&format!("/api/v1/namespaces/{ns}/pods/a")).await;
    assert_eq!(pod.body["spec"]["nodeName"], "node-1");

    // A pending pod is evicted whatever its budget says.
    let evict = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});
    let reply = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods/b/eviction"),
            &evict("b"),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.body["status"], "Success");
    // A running pod under a budget that allows no disruption is not.
    let running = json!({"status": {"phase": "Running"}});
    let patched = h
        .patch(
            &format!("/api/v1/namespaces/{ns}/pods/a/status"),
            "application/merge-patch+json",
            &running,
        )
        .await;
    assert_eq!(patched.status, 200);
    let budget = h
        .post(
            &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
            &json!({"metadata": {"name": "web"},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
    assert_eq!(budget.status, 201);
    let refused = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods/a/eviction"),
            &evict("a"),
        )
        .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    // No disruption controller has looked at the new budget yet (`createTooManyRequestsError`).
    assert_eq!(
        refused.body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        refused.body["details"]["causes"][0],
        json!({"reason": "DisruptionBudget",
               "message": "The disruption budget web is still being processed by the server."})
    );
    assert_eq!(refused.body["details"]["retryAfterSeconds"], 10);
    let mismatched = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods/a/eviction"),
            &evict("b"),
        )
        .await;
    assert_eq!(mismatched.status, 400);
    assert_eq!(
        mismatched.body["message"],
        "name in URL does not match name in Eviction object"
    );
}

#[tokio::test]
async fn s16_pods_take_ephemeral_containers_only_through_their_subresource() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-debug").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let on_create = h
        .post(
            &pods,
            &json!({"metadata": {"name": "early"}, "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "ephemeralContainers": [{"name": "d", "image": "busybox"}]}}),
        )
        .await;
    assert_eq!(on_create.status, 422);
    assert_eq!(
        causes(&on_create.body),
        ["spec.ephemeralContainers: Forbidden: cannot be set on create"]
    );
    let created = h
        .post(
            &pods,
            &json!({"metadata": {"name": "web"},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}),
        )
        .await;
    assert_eq!(created.status, 201);
    let item = format!("{pods}/web/ephemeralcontainers");
    // What `kubectl debug` sends: a strategic merge patch of the pod.
    let added = h
        .patch(
            &item,
            "application/strategic-merge-patch+json",
            &json!({"spec": {"ephemeralContainers": [{"name": "debugger", "image": "busybox:1.36",
                "targetContainerName": "c", "stdin": true, "tty": true}]}}),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let container = &added.body["spec"]["ephemeralContainers"][0];
    assert_eq!(container["name"], "debugger");
    assert_eq!(container["terminationMessagePolicy"], "File", "defaulted");
    assert_eq!(container["imagePullPolicy"], "IfNotPresent");
    let read = h.get(&item).await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body["kind"], "Pod");

    // Nothing but the ephemeral containers changes through it.
    let mut other = read.body.clone();
    other["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    other["metadata"]["labels"] = json!({"a": "b"});
    let kept = h.put(&item, &other).await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(kept.body["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(kept.body["metadata"].get("labels").is_none());

    let mut removed = kept.body.clone();
    removed["spec"]["ephemeralContainers"] = json!([]);
    let reply = h.put(&item, &removed).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger\" may not be removed\n"
        ]
    );
    let mut with_ports = kept.body.clone();
    with_ports["spec"]["ephemeralContainers"]
        .as_array_mut()
        .expect("a list")
        .push(
            json!({"name": "bad", "image": "busybox", "targetContainerName": "nope",
                     "ports": [{"containerPort": 80}]}),
        );
    let reply = h.put(&item, &with_ports).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        causes(&reply.body),
        [
            "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[1].targetContainerName: Not found: \"nope\"",
        ]
    );
    // The pod itself may not change them.
    let mut through_pod = kept.body.clone();
    through_pod["spec"]["ephemeralContainers"] = json!([]);
    let reply = h.put(&format!("{pods}/web"), &through_pod).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
}

/// `pods/eviction` against a budget whose status a disruption controller computed
/// (`pkg/registry/core/pod/storage/eviction.go`): an allowed eviction charges the budget
/// (`disruptionsAllowed` down by one, the pod in `disruptedPods`, the condition False at zero)
/// and marks the pod `DisruptionTarget` before deleting it; a dry run charges nothing; with
/// none left, a 429 names the budget's figures.
#[tokio::test]
async fn s16_an_eviction_charges_the_pods_disruption_budget() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-evict").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    for name in ["a", "b", "c"] {
        let created = h
            .post(
                &pods,
                &json!({"metadata": {"name": name, "labels": {"app": "db"}},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
            )
            .await;
        assert_eq!(created.status, 201);
        let ready = json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}});
        let patched = h
            .patch(
                &format!("{pods}/{name}/status"),
                "application/merge-patch+json",
                &ready,
            )
            .await;
        assert_eq!(patched.status, 200);
    }
    let budgets = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets");
    let budget = h
        .post(
            &budgets,
            &json!({"metadata": {"name": "db"},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}),
        )
        .await;
    assert_eq!(budget.status, 201);
    // What the disruption controller would write: 3 healthy, 2 desired, 1 disruption.
    let computed = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": 1,
        "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
        "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    let written = h
        .patch(
            &format!("{budgets}/db/status"),
            "application/merge-patch+json",
            &computed,
        )
        .await;
    assert_eq!(written.status, 200, "{}", written.body);
    let evict = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});

    // A dry run charges nothing and deletes nothing.
    let dry = h
        .post(&format!("{pods}/a/eviction?dryRun=All"), &evict("a"))
        .await;
    assert_eq!(dry.status, 201, "{}", dry.body);
    assert_eq!(
        h.get(&format!("{budgets}/db")).await.body["status"]["disruptionsAllowed"],
        1
    );
    assert_eq!(h.get(&format!("{pods}/a")).await.status, 200);

    let evicted = h.post(&format!("{pods}/a/eviction"), &evict("a")).await;
    assert_eq!(evicted.status, 201, "{}", evicted.body);
    let status = h.get(&format!("{budgets}/db")).await.body["status"].clone();
    assert_eq!(status["disruptionsAllowed"], 0, "{status}");
    assert!(status["disruptedPods"]["a"].is_string(), "{status}");
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(status["conditions"][0]["reason"], "InsufficientPods");
    // The pod was marked, then deleted (gone at once: it has no node).
    assert_eq!(h.get(&format!("{pods}/a")).await.status, 404);

    let refused = h.post(&format!("{pods}/b/eviction"), &evict("b")).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(
        refused.body["details"]["causes"][0]["message"],
        "The disruption budget db needs 2 healthy pods and has 3 currently"
    );
    assert!(refused.body["details"].get("retryAfterSeconds").is_none());
    assert_eq!(h.get(&format!("{pods}/b")).await.status, 200);
}

/// `pods/log` of a simulated container (`handlers::logs`, upstream
/// `pkg/registry/core/pod/rest/log.go` and the kubelet's log options): the pod's
/// `kubemock.dev/log` lines, `tailLines`, `timestamps` and `limitBytes`; upstream's refusals;
/// `proxy`, which kubemock does not simulate, answers a 400 that says so; exec refuses an
/// unknown container and a missing command as upstream does.
#[tokio::test]
async fn s16_pod_logs_follow_the_kubelets_options_and_refusals() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-logs").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let created = h
        .post(
            &pods,
            &json!({"metadata": {"name": "web", "annotations": {
                        "kubemock.dev/log": "one\ntwo\nthree",
                        "kubemock.dev/log.side": "side car"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"},
                                            {"name": "side", "image": "busybox"}]}}),
        )
        .await;
    assert_eq!(created.status, 201);
    let log = format!("{pods}/web/log");
    // Not on a node yet.
    let reply = h.get(&format!("{log}?container=app")).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "pod web does not have a host assigned"
    );
    let bound = h
        .post(
            &format!("{pods}/web/binding"),
            &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                    "target": {"kind": "Node", "name": "node-1"}}),
        )
        .await;
    assert_eq!(bound.status, 201);
    let reply = h.get(&format!("{log}?container=app")).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "container \"app\" in pod \"web\" is waiting to start: ContainerCreating"
    );
    // What a kubelet reports once the containers run.
    let started = "2026-01-02T03:04:05Z";
    let running = |name: &str| {
        json!({"name": name, "image": "x", "imageID": "", "ready": true,
        "restartCount": 0, "state": {"running": {"startedAt": started}}})
    };
    let patched = h
        .patch(
            &format!("{pods}/web/status"),
            "application/merge-patch+json",
            &json!({"status": {"phase": "Running",
                               "containerStatuses": [running("app"), running("side")]}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);

    let reply = h.get(&log).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "a container name must be specified for pod web, choose one of: [app side]"
    );
    let reply = h.get(&format!("{log}?container=nope")).await;
    assert_eq!(
        reply.body["message"],
        "container nope is not valid for pod web"
    );
    let reply = h.get(&format!("{log}?container=app")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["content-type"], "text/plain");
    assert_eq!(reply.body, "one\ntwo\nthree\n");
    let reply = h.get(&format!("{log}?container=side")).await;
    assert_eq!(reply.body, "side car\n");
    let reply = h
        .get(&format!("{log}?container=app&tailLines=2&timestamps=true"))
        .await;
    assert_eq!(
        reply.body,
        "2026-01-02T03:04:05.000000000Z two\n2026-01-02T03:04:05.000000000Z three\n"
    );
    let reply = h.get(&format!("{log}?container=app&limitBytes=5")).await;
    assert_eq!(reply.body, "one\nt");
    let reply = h.get(&format!("{log}?container=app&previous=true")).await;
    assert_eq!(
        reply.body["message"],
        "previous terminated container \"app\" in pod \"web\" not found"
    );
    let reply = h.get(&format!("{log}?container=app&tailLines=-1")).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    // A restarted container: `previous` reads the run its lastState records (the kubelet's
    // log of the previous container), stamped with that run's start.
    let mut restarted = running("app");
    restarted["restartCount"] = json!(1);
    restarted["state"] = json!({"running": {"startedAt": "2026-01-02T03:10:00Z"}});
    restarted["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error",
        "startedAt": "2026-01-02T03:05:00Z", "finishedAt": "2026-01-02T03:06:00Z"}});
    let patched = h
        .patch(
            &format!("{pods}/web/status"),
            "application/merge-patch+json",
            &json!({"status": {"containerStatuses": [restarted, running("side")]}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let reply = h
        .get(&format!(
            "{log}?container=app&previous=true&timestamps=true&tailLines=1"
        ))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body, "2026-01-02T03:05:00.000000000Z three\n");
    let reply = h
        .get(&format!("{log}?container=app&timestamps=true&tailLines=1"))
        .await;
    assert_eq!(reply.body, "2026-01-02T03:10:00.000000000Z three\n");
    let reply = h.get(&format!("{log}?container=side&previous=true")).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "previous terminated container \"side\" in pod \"web\" not found"
    );

    let reply = h.get(&format!("{pods}/web/proxy")).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("kubemock does not simulate pods/proxy")),
        "{}",
        reply.body
    );
    // The streaming subresources check as upstream does before upgrading (podio): the
    // container (apiserver), then the kubelet's options.
    let reply = h
        .get(&format!(
            "{pods}/web/exec?container=nope&command=true&stdout=true"
        ))
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "container nope is not valid for pod web"
    );
    let reply = h
        .get(&format!("{pods}/web/exec?container=app&stdout=true"))
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "you must specify at least one command for the container"
    );
}
