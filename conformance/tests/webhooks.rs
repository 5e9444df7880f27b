//! Admission webhooks and CRD conversion webhooks, against real HTTPS webhook servers in the
//! test process (`kubemock_conformance::webhook_server`: a fresh CA, rustls), as controller
//! projects run theirs under envtest. Upstream's behaviour is the reference:
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/` (matching, the mutating and
//! validating dispatchers, `errors/statuserror.go`, `request/admissionreview.go`) and
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`.
//!
//! In-process only: the servers must reach the test's webhook servers on 127.0.0.1.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubemock_conformance::webhook_server::{Answer, WebhookServer, admission_answer, patch};
use kubemock_conformance::{Harness, Reply, configmap};
use serde_json::{Value, json};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// A webhook on configmaps (`operations`), calling `client_config`.
fn hook(name: &str, client_config: Value, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Value::Object(hook), Value::Object(extra)) = (&mut hook, extra) {
        hook.extend(extra);
    }
    hook
}

fn url_config(server: &WebhookServer, path: &str) -> Value {
    json!({"url": server.url(path), "caBundle": server.ca_bundle})
}

async fn configure(h: &Harness, path: &str, kind: &str, name: &str, hooks: Vec<Value>) {
    let reply = h
        .post(
            path,
            &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                    "metadata": {"name": name}, "webhooks": hooks}),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

async fn validating(h: &Harness, name: &str, hooks: Vec<Value>) {
    configure(h, VALIDATING, "ValidatingWebhookConfiguration", name, hooks).await;
}

async fn mutating(h: &Harness, name: &str, hooks: Vec<Value>) {
    configure(h, MUTATING, "MutatingWebhookConfiguration", name, hooks).await;
}

async fn create_configmap(h: &Harness, ns: &str, body: Value) -> Reply {
    h.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await
}

fn message(reply: &Reply) -> &str {
    reply.body["message"].as_str().unwrap_or("")
}

fn warnings(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect()
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    listener.local_addr().expect("an address").port()
}

#[tokio::test]
async fn a_mutating_webhook_defaults_and_a_validating_one_denies_with_upstreams_words() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-basic").await;
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let record = Arc::clone(&seen);
    let server = WebhookServer::start(
        &[],
        Arc::new(move |path, review| {
            record.lock().expect("lock").push(review.clone());
            let object = &review["request"]["object"];
            match path {
                "/mutate" if object["data"].get("size").is_none() => {
                    Answer::Json(admission_answer(review, json!({
                        "allowed": true, "patchType": "JSONPatch",
                        "patch": patch(json!([{"op": "add", "path": "/data/size", "value": "small"}])),
                        "auditAnnotations": {"defaulted": "size"},
                    })))
                }
                "/mutate" => Answer::Json(admission_answer(review, json!({"allowed": true}))),
                _ if object["data"]["size"] == "huge" => Answer::Json(admission_answer(review, json!({
                    "allowed": false,
                    "status": {"code": 403, "reason": "Forbidden", "message": "size huge is not allowed"},
                }))),
                _ => Answer::Json(admission_answer(
                    review,
                    json!({"allowed": true, "warnings": ["size checked"]}),
                )),
            }
        }),
    )
    .await;
    mutating(
        &h,
        "defaults",
        vec![hook(
            "size.defaults.example.com",
            url_config(&server, "/mutate"),
            json!({}),
        )],
    )
    .await;
    validating(
        &h,
        "checks",
        vec![hook(
            "size.checks.example.com",
            url_config(&server, "/validate"),
            json!({}),
        )],
    )
    .await;
    // The configurations' own writes called nobody.
    assert_eq!(server.calls(), 0);

    let created = create_configmap(&h, &ns, configmap("plain", json!({"a": "b"}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["data"]["size"], "small", "{}", created.body);
    assert_eq!(warnings(&created), ["299 - \"size checked\""]);
    let stored = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/plain"))
        .await;
    assert_eq!(stored.body["data"]["size"], "small");
    {
        let seen = seen.lock().expect("lock");
        let request = &seen[0]["request"];
        assert_eq!(seen[0]["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(request["operation"], "CREATE");
        assert_eq!(
            request["kind"],
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        assert_eq!(
            request["resource"],
            json!({"group": "", "version": "v1", "resource": "configmaps"})
        );
        assert_eq!(request["namespace"], ns.as_str());
        assert_eq!(request["name"], "plain");
        assert_eq!(request["dryRun"], false);
        assert_eq!(request["options"]["kind"], "CreateOptions");
        assert!(request["oldObject"].is_null());
        // The validating webhook saw the mutated object.
        assert_eq!(seen[1]["request"]["object"]["data"]["size"], "small");
    }

    let denied = create_configmap(&h, &ns, configmap("huge", json!({"size": "huge"}))).await;
    assert_eq!(denied.status, 403, "{}", denied.body);
    assert_eq!(denied.body["reason"], "Forbidden");
    assert_eq!(
        message(&denied),
        "admission webhook \"size.checks.example.com\" denied the request: size huge is not allowed"
    );
    assert_eq!(
        h.get(&format!("/api/v1/namespaces/{ns}/configmaps/huge"))
            .await
            .status,
        404
    );
    // Updates are admitted too, with the old object.
    let mut update = stored.body.clone();
    update["data"]["size"] = json!("huge");
    let denied = h
        .put(
            &format!("/api/v1/namespaces/{ns}/configmaps/plain"),
            &update,
        )
        .await;
    assert_eq!(denied.status, 403, "{}", denied.body);
    let last = seen
        .lock()
        .expect("lock")
        .last()
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["request"]["operation"], "UPDATE");
    assert_eq!(last["request"]["oldObject"]["data"]["size"], "small");
    // A patch as well.
    let denied = h
        .patch(
            &format!("/api/v1/namespaces/{ns}/configmaps/plain"),
            "application/merge-patch+json",
            &json!({"data": {"size": "huge"}}),
        )
        .await;
    assert_eq!(denied.status, 403, "{}", denied.body);
    // Deleting the configuration stops the calls at once.
    let calls = server.calls();
    assert_eq!(
        h.delete(&format!("{VALIDATING}/checks"), None).await.status,
        200
    );
    assert_eq!(
        h.delete(&format!("{MUTATING}/defaults"), None).await.status,
        200
    );
    let created = create_configmap(&h, &ns, configmap("after", json!({"size": "huge"}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(server.calls(), calls);
}

#[tokio::test]
async fn a_webhook_that_is_down_fails_closed_or_open_by_its_failure_policy() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-down").await;
    let port = closed_port().await;
    let down = json!({"url": format!("https://127.0.0.1:{port}/validate")});
    validating(
        &h,
        "down",
        vec![hook(
            "down.example.com",
            down.clone(),
            json!({"failurePolicy": "Fail", "objectSelector": {"matchLabels": {"policy": "fail"}}}),
        ),
        hook(
            "ignored.example.com",
            down,
            json!({"failurePolicy": "Ignore", "objectSelector": {"matchLabels": {"policy": "ignore"}}}),
        )],
    )
    .await;
    let mut failing = configmap("failing", json!({}));
    failing["metadata"]["labels"] = json!({"policy": "fail"});
    let refused = create_configmap(&h, &ns, failing).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert_eq!(refused.body["reason"], "InternalError");
    assert_eq!(
        message(&refused),
        format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/validate?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let mut ignoring = configmap("ignoring", json!({}));
    ignoring["metadata"]["labels"] = json!({"policy": "ignore"});
    let created = create_configmap(&h, &ns, ignoring).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test]
async fn a_slow_webhook_times_out_with_upstreams_error() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-slow").await;
    let server = WebhookServer::start(
        &[],
        Arc::new(|_, review| {
            Answer::Delayed(
                Duration::from_secs(5),
                Box::new(Answer::Json(admission_answer(
                    review,
                    json!({"allowed": true}),
                ))),
            )
        }),
    )
    .await;
    validating(
        &h,
        "slow",
        vec![hook(
            "slow.example.com",
            url_config(&server, "/validate"),
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let started = std::time::Instant::now();
    let refused = create_configmap(&h, &ns, configmap("slow", json!({}))).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert_eq!(
        message(&refused),
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
            server.url("/validate")
        )
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn namespace_and_object_selectors_choose_what_is_sent() {
    let h = Harness::start().await;
    let chosen = h.namespace("webhooks-chosen").await;
    let other = h.namespace("webhooks-other").await;
    let labels = json!({"metadata": {"labels": {"webhooks": "on"}}});
    let labelled = h
        .patch(
            &format!("/api/v1/namespaces/{chosen}"),
            "application/merge-patch+json",
            &labels,
        )
        .await;
    assert_eq!(labelled.status, 200, "{}", labelled.body);
    let server = WebhookServer::start(
        &[],
        Arc::new(|_, review| {
            Answer::Json(admission_answer(
                review,
                json!({"allowed": false, "status": {"message": "selected"}}),
            ))
        }),
    )
    .await;
    validating(
        &h,
        "selected",
        vec![hook(
            "selected.example.com",
            url_config(&server, "/validate"),
            json!({"namespaceSelector": {"matchLabels": {"webhooks": "on"}},
                   "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}}),
        )],
    )
    .await;
    let refused = create_configmap(&h, &chosen, configmap("a", json!({}))).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "admission webhook \"selected.example.com\" denied the request: selected"
    );
    assert_eq!(
        create_configmap(&h, &other, configmap("a", json!({})))
            .await
            .status,
        201
    );
    let mut skipped = configmap("b", json!({}));
    skipped["metadata"]["labels"] = json!({"skip": "yes"});
    assert_eq!(create_configmap(&h, &chosen, skipped).await.status, 201);
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn dry_run_calls_only_webhooks_without_side_effects() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-dryrun").await;
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let record = Arc::clone(&seen);
    let server = WebhookServer::start(
        &[],
        Arc::new(move |_, review| {
            record.lock().expect("lock").push(review.clone());
            Answer::Json(admission_answer(review, json!({"allowed": true})))
        }),
    )
    .await;
    validating(
        &h,
        "dry",
        vec![
            hook(
                "none.example.com",
                url_config(&server, "/validate"),
                json!({"sideEffects": "None", "objectSelector": {"matchLabels": {"effects": "none"}}}),
            ),
            hook(
                "some.example.com",
                url_config(&server, "/validate"),
                json!({"sideEffects": "Some", "objectSelector": {"matchLabels": {"effects": "some"}}}),
            ),
        ],
    )
    .await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps?dryRun=All");
    let mut none = configmap("none", json!({}));
    none["metadata"]["labels"] = json!({"effects": "none"});
    let created = h.post(&path, &none).await;
    assert_eq!(created.status, 201, "{}", created.body);
    {
        let seen = seen.lock().expect("lock");
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["request"]["dryRun"], true);
        assert_eq!(seen[0]["request"]["options"]["dryRun"], json!(["All"]));
    }
    let mut some = configmap("some", json!({}));
    some["metadata"]["labels"] = json!({"effects": "some"});
    let refused = h.post(&path, &some).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "admission webhook \"some.example.com\" does not support dry run"
    );
    assert_eq!(seen.lock().expect("lock").len(), 1);
    // Without dry run, the webhook with side effects is called.
    let created = create_configmap(&h, &ns, some).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(seen.lock().expect("lock").len(), 2);
}

#[tokio::test]
async fn an_if_needed_webhook_is_called_again_after_a_later_one_changed_the_object() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-reinvoke").await;
    let server = WebhookServer::start(
        &[],
        Arc::new(|path, review| {
            let object = &review["request"]["object"];
            let operations = match path {
                // Counts its calls in an annotation.
                "/first" => {
                    let count = object["metadata"]["annotations"]["first-calls"]
                        .as_str()
                        .and_then(|c| c.parse::<u32>().ok())
                        .unwrap_or(0);
                    let op = if count == 0 { "add" } else { "replace" };
                    if object["metadata"].get("annotations").is_none() {
                        json!([{"op": "add", "path": "/metadata/annotations",
                                "value": {"first-calls": "1"}}])
                    } else {
                        json!([{"op": op, "path": "/metadata/annotations/first-calls",
                                "value": (count + 1).to_string()}])
                    }
                }
                // Adds a label once.
                _ if object["metadata"]["labels"].get("second").is_none() => {
                    json!([{"op": "add", "path": "/metadata/labels", "value": {"second": "done"}}])
                }
                _ => json!([]),
            };
            Answer::Json(admission_answer(
                review,
                json!({"allowed": true, "patchType": "JSONPatch", "patch": patch(operations)}),
            ))
        }),
    )
    .await;
    mutating(
        &h,
        "a-first",
        vec![hook(
            "first.example.com",
            url_config(&server, "/first"),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    mutating(
        &h,
        "b-second",
        vec![hook(
            "second.example.com",
            url_config(&server, "/second"),
            json!({}),
        )],
    )
    .await;
    let created = create_configmap(&h, &ns, configmap("again", json!({}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["labels"]["second"], "done");
    // Called, then called again after the second webhook's change; the second is not
    // reinvoked (its policy is Never).
    assert_eq!(
        created.body["metadata"]["annotations"]["first-calls"], "2",
        "{}",
        created.body
    );
    assert_eq!(server.calls(), 3);
}

#[tokio::test]
async fn bad_webhook_answers_fail_the_request_as_upstream_fails_it() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-bad").await;
    let server = WebhookServer::start(
        &[],
        Arc::new(|path, review| match path {
            "/malformed" => Answer::Raw(200, b"{not json".to_vec()),
            "/wrong-uid" => Answer::Json(json!({"apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview", "response": {"uid": "someone-else", "allowed": true}})),
            "/bad-patch" => Answer::Json(admission_answer(
                review,
                json!({"allowed": true, "patchType": "JSONPatch",
                       "patch": patch(json!([{"op": "remove", "path": "/no/such/field"}]))}),
            )),
            "/not-a-patch" => Answer::Json(admission_answer(
                review,
                json!({"allowed": true, "patchType": "JSONPatch",
                       "patch": patch(json!({"op": "add"}))}),
            )),
            "/oversized" => Answer::Raw(200, vec![b' '; 17 * 1024 * 1024]),
            "/server-error" => Answer::Raw(500, b"boom".to_vec()),
            _ => Answer::Json(admission_answer(review, json!({"allowed": true}))),
        }),
    )
    .await;
    let cases = [
        (
            "malformed",
            "failed to call webhook: couldn't get version/kind; json parse error",
        ),
        (
            "wrong-uid",
            "received invalid webhook response: expected response.uid=",
        ),
        ("oversized", "failed to call webhook: Post"),
        (
            "server-error",
            "failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding",
        ),
    ];
    let mut hooks = Vec::new();
    for (path, _) in cases
        .iter()
        .chain(&[("bad-patch", ""), ("not-a-patch", "")])
    {
        hooks.push(hook(
            &format!("{path}.example.com"),
            url_config(&server, &format!("/{path}")),
            json!({"objectSelector": {"matchLabels": {"case": path}}}),
        ));
    }
    mutating(&h, "bad", hooks).await;
    for (path, expected) in cases {
        let mut object = configmap(path, json!({}));
        object["metadata"]["labels"] = json!({"case": path});
        let refused = create_configmap(&h, &ns, object).await;
        assert_eq!(refused.status, 500, "{path}: {}", refused.body);
        let prefix = format!(
            "Internal error occurred: failed calling webhook \"{path}.example.com\": {expected}"
        );
        assert!(
            message(&refused).starts_with(&prefix),
            "{path}: {}",
            message(&refused)
        );
    }
    for path in ["bad-patch", "not-a-patch"] {
        let mut object = configmap(path, json!({}));
        object["metadata"]["labels"] = json!({"case": path});
        let refused = create_configmap(&h, &ns, object).await;
        assert_eq!(refused.status, 500, "{path}: {}", refused.body);
        assert_eq!(refused.body["reason"], "InternalError", "{path}");
        assert_eq!(
            h.get(&format!("/api/v1/namespaces/{ns}/configmaps/{path}"))
                .await
                .status,
            404
        );
    }
    // The server is still serving.
    assert_eq!(
        create_configmap(&h, &ns, configmap("fine", json!({})))
            .await
            .status,
        201
    );
}

#[tokio::test]
async fn a_service_reference_reaches_the_server_through_the_endpoints() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-service").await;
    let server = WebhookServer::start(
        &[&format!("hooks.{ns}.svc")],
        Arc::new(|_, review| {
            Answer::Json(admission_answer(
                review,
                json!({"allowed": false, "status": {"message": "through the service"}}),
            ))
        }),
    )
    .await;
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}});
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/services"), &service)
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": server.address.port()}]}]});
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/endpoints"), &endpoints)
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let config = json!({"service": {"namespace": ns, "name": "hooks", "path": "/validate"},
                        "caBundle": server.ca_bundle});
    validating(
        &h,
        "service",
        vec![hook("service.example.com", config, json!({}))],
    )
    .await;
    let refused = create_configmap(&h, &ns, configmap("a", json!({}))).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "admission webhook \"service.example.com\" denied the request: through the service"
    );
    // Without a matching service port: upstream's resolver error, failing closed.
    assert_eq!(
        h.delete(&format!("{VALIDATING}/service"), None)
            .await
            .status,
        200
    );
    let no_port = json!({"service": {"namespace": ns, "name": "hooks", "port": 8443},
                         "caBundle": server.ca_bundle});
    validating(
        &h,
        "no-port",
        vec![hook("no-port.example.com", no_port, json!({}))],
    )
    .await;
    let refused = create_configmap(&h, &ns, configmap("b", json!({}))).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    let expected = format!(
        "Internal error occurred: failed calling webhook \"no-port.example.com\": failed to call webhook: Post \"https://hooks.{ns}.svc:8443/?timeout=10s\": no service port 8443 found for service \"hooks\""
    );
    assert_eq!(message(&refused), expected);
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-ca").await;
    let server = WebhookServer::start(
        &[],
        Arc::new(|_, review| Answer::Json(admission_answer(review, json!({"allowed": true})))),
    )
    .await;
    let stranger = WebhookServer::start(&[], Arc::new(|_, _| Answer::Json(json!({})))).await;
    let config = json!({"url": server.url("/validate"), "caBundle": stranger.ca_bundle});
    validating(&h, "ca", vec![hook("ca.example.com", config, json!({}))]).await;
    let refused = create_configmap(&h, &ns, configmap("a", json!({}))).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert!(
        message(&refused).ends_with(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        ),
        "{}",
        message(&refused)
    );
    assert_eq!(server.calls(), 0);
}

/// controller-runtime's envtest (`WebhookInstallOptions`, `pkg/envtest/webhook.go`) registers
/// its webhook server as kube-apiserver accepts it: the `caBundle` is the serving certificate
/// itself (Go's `crypto/x509` trusts a certificate found in its roots as it is), and the URL
/// is `https://HOST:PORT/` followed by a path that starts with `/` (client-go's `path.Join`
/// cleans it away).
#[tokio::test]
async fn envtests_registration_the_serving_certificate_as_ca_bundle_and_a_double_slash() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-envtest").await;
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&paths);
    let server = WebhookServer::start(
        &[],
        Arc::new(move |path, review| {
            seen.lock().expect("paths").push(path.to_owned());
            Answer::Json(admission_answer(
                review,
                json!({"allowed": false, "status": {"message": "reached"}}),
            ))
        }),
    )
    .await;
    let config = json!({"url": format!("https://{}//validate-v1-configmap", server.address),
                        "caBundle": server.serving_bundle});
    validating(
        &h,
        "envtest",
        vec![hook("envtest.example.com", config, json!({}))],
    )
    .await;
    let refused = create_configmap(&h, &ns, configmap("a", json!({}))).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "admission webhook \"envtest.example.com\" denied the request: reached"
    );
    assert_eq!(
        *paths.lock().expect("paths"),
        vec!["/validate-v1-configmap".to_owned()]
    );
    // The serving certificate of another server is no CA of this one.
    let stranger = WebhookServer::start(&[], Arc::new(|_, _| Answer::Json(json!({})))).await;
    assert_eq!(
        h.delete(&format!("{VALIDATING}/envtest"), None)
            .await
            .status,
        200
    );
    let config = json!({"url": server.url("/validate"), "caBundle": stranger.serving_bundle});
    validating(
        &h,
        "stranger",
        vec![hook("stranger.example.com", config, json!({}))],
    )
    .await;
    let refused = create_configmap(&h, &ns, configmap("b", json!({}))).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert!(
        message(&refused).ends_with(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        ),
        "{}",
        message(&refused)
    );
    assert_eq!(server.calls(), 1);
}

/// The conversion webhook of the Widget tests: `spec.size` in v1 is `spec.replicas` in v2;
/// an object labelled `conversion: fail` cannot be converted.
fn convert_widgets(review: &Value) -> Answer {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let mut converted = Vec::new();
    for object in request["objects"].as_array().into_iter().flatten() {
        if object["metadata"]["labels"]["conversion"] == "fail" {
            return Answer::Json(json!({"apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview", "response": {"uid": request["uid"],
                "result": {"status": "Failure", "message": "cannot convert"}}}));
        }
        let mut object = object.clone();
        let spec = object["spec"].as_object_mut().cloned().unwrap_or_default();
        let (from, to) = if desired.ends_with("/v2") {
            ("size", "replicas")
        } else {
            ("replicas", "size")
        };
        let mut new_spec = spec.clone();
        if let Some(value) = new_spec.remove(from) {
            new_spec.insert(to.to_owned(), value);
        }
        object["spec"] = Value::Object(new_spec);
        object["apiVersion"] = json!(desired);
        converted.push(object);
    }
    Answer::Json(
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"},
                     "convertedObjects": converted}}),
    )
}

#[tokio::test]
async fn a_conversion_webhook_converts_reads_writes_lists_and_watches_in_both_versions() {
    let h = Harness::start().await;
    let ns = h.namespace("webhooks-conversion").await;
    let server = WebhookServer::start(&[], Arc::new(|_, review| convert_widgets(review))).await;
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conv.example.com"},
        "spec": {
            "group": "conv.example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": server.url("/convert"), "caBundle": server.ca_bundle}}},
        },
    });
    let reply = h
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &definition,
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let v1 = format!("/apis/conv.example.com/v1/namespaces/{ns}/widgets");
    let v2 = format!("/apis/conv.example.com/v2/namespaces/{ns}/widgets");
    let mut watch_v1 = h.watch(&format!("{v1}?watch=true")).await;
    let mut watch_v2 = h.watch(&format!("{v2}?watch=true")).await;

    let widget = |name: &str, version: &str, spec: Value| {
        json!({"apiVersion": format!("conv.example.com/{version}"), "kind": "Widget",
               "metadata": {"name": name}, "spec": spec})
    };
    // Written in the storage version: no call; read in v2: converted.
    let created = h.post(&v1, &widget("one", "v1", json!({"size": 3}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(server.calls(), 0);
    let read = h.get(&format!("{v2}/one")).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["apiVersion"], "conv.example.com/v2");
    assert_eq!(read.body["spec"], json!({"replicas": 3}));
    assert_eq!(
        read.body["metadata"]["uid"],
        created.body["metadata"]["uid"]
    );
    // Written in v2: converted to v1 to be stored, answered in v2.
    let created = h
        .post(&v2, &widget("two", "v2", json!({"replicas": 5})))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["apiVersion"], "conv.example.com/v2");
    assert_eq!(created.body["spec"], json!({"replicas": 5}));
    let read = h.get(&format!("{v1}/two")).await;
    assert_eq!(read.body["spec"], json!({"size": 5}), "{}", read.body);
    // Lists in both versions.
    let listed = h.get(&v2).await;
    let specs: Vec<&Value> = listed.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| &item["spec"])
        .collect();
    assert_eq!(specs, [&json!({"replicas": 3}), &json!({"replicas": 5})]);
    let listed = h.get(&v1).await;
    let specs: Vec<&Value> = listed.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| &item["spec"])
        .collect();
    assert_eq!(specs, [&json!({"size": 3}), &json!({"size": 5})]);
    // Watches in both versions.
    for (watch, spec) in [
        (&mut watch_v1, json!({"size": 3})),
        (&mut watch_v2, json!({"replicas": 3})),
    ] {
        let event = watch.next_event().await.expect("an event");
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["spec"], spec, "{event}");
        let event = watch.next_event().await.expect("an event");
        assert_eq!(event["object"]["metadata"]["name"], "two");
    }
    // An update in v2 of an object stored in v1.
    let patched = h
        .patch(
            &format!("{v2}/one"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 4}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["spec"], json!({"replicas": 4}));
    assert_eq!(
        h.get(&format!("{v1}/one")).await.body["spec"],
        json!({"size": 4})
    );

    // A failing conversion answers as upstream's: a 500 naming the webhook's message.
    let mut failing = widget("three", "v1", json!({"size": 1}));
    failing["metadata"]["labels"] = json!({"conversion": "fail"});
    assert_eq!(h.post(&v1, &failing).await.status, 201);
    let refused = h.get(&format!("{v2}/three")).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert_eq!(
        message(&refused),
        "Internal error occurred: conversion webhook for conv.example.com/v1, Kind=Widget failed: cannot convert"
    );
    assert_eq!(h.get(&v2).await.status, 500);
    assert_eq!(h.get(&format!("{v1}/three")).await.status, 200);
}
