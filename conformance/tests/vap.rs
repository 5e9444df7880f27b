//! CEL in admission: webhooks' `matchConditions` and ValidatingAdmissionPolicies with their
//! bindings, over real sockets. Upstream's behaviour is the reference:
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions/matcher.go` and
//! `.../webhook/generic/webhook.go` (`ShouldCallHook`), `.../policy/validating/dispatcher.go`
//! and `validator.go`, `.../policy/generic/policy_dispatcher.go` (`CollectParams`), and
//! `pkg/apis/admissionregistration/validation/validation.go`; the cases follow upstream's
//! `test/integration/apiserver/admissionwebhook/match_conditions_test.go` and
//! `test/integration/apiserver/cel/validatingadmissionpolicy_test.go`.
//!
//! In-process only: the servers must reach the test's webhook servers on 127.0.0.1.

use std::sync::Arc;

use kubemock_conformance::webhook_server::{Answer, WebhookServer, admission_answer};
use kubemock_conformance::{Harness, Reply, configmap};
use serde_json::{Value, json};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// A webhook server that allows everything, counting calls.
async fn allowing_server() -> WebhookServer {
    WebhookServer::start(
        &[],
        Arc::new(|_, review| Answer::Json(admission_answer(review, json!({"allowed": true})))),
    )
    .await
}

/// A configuration of `kind` with one webhook on configmaps and these `extra` fields.
fn configuration(kind: &str, name: &str, server: &WebhookServer, extra: Value) -> Value {
    let mut hook = json!({
        "name": format!("{name}.example.com"),
        "clientConfig": {"url": server.url("/admit"), "caBundle": server.ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Value::Object(hook), Value::Object(extra)) = (&mut hook, extra) {
        hook.extend(extra);
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name}, "webhooks": [hook]})
}

async fn create_configmap(h: &Harness, ns: &str, body: Value) -> Reply {
    h.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await
}

fn message(reply: &Reply) -> &str {
    reply.body["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn match_conditions_decide_whether_a_webhook_is_called() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-conditions").await;
    let validating = allowing_server().await;
    let mutating = allowing_server().await;
    let conditions = json!({"matchConditions": [
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"},
        {"name": "is-create-or-update", "expression": "request.operation in ['CREATE', 'UPDATE']"},
        {"name": "no-old-object-on-create",
         "expression": "request.operation != 'CREATE' || oldObject == null"},
    ]});
    let created = h
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "checks",
                &validating,
                conditions.clone(),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = h
        .post(
            MUTATING,
            &configuration(
                "MutatingWebhookConfiguration",
                "defaults",
                &mutating,
                conditions,
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    let skipped = create_configmap(&h, &ns, configmap("skip-me", json!({}))).await;
    assert_eq!(skipped.status, 201, "{}", skipped.body);
    assert_eq!((validating.calls(), mutating.calls()), (0, 0));
    let checked = create_configmap(&h, &ns, configmap("check-me", json!({}))).await;
    assert_eq!(checked.status, 201, "{}", checked.body);
    assert_eq!((validating.calls(), mutating.calls()), (1, 1));
}

#[tokio::test]
async fn a_failing_match_condition_follows_the_failure_policy() {
    let h = Harness::start().await;
    let ns = h.namespace("vap-condition-errors").await;
    let server = allowing_server().await;
    // `object.data.size` is missing from a configmap without it: an evaluation error.
    let failing = |policy: &str| {
        json!({"failurePolicy": policy, "matchConditions": [
            {"name": "small", "expression": "object.data.size == 'small'"}]})
    };
    let created = h
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "fail-closed",
                &server,
                failing("Fail"),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let refused = create_configmap(&h, &ns, configmap("no-size", json!({"a": "b"}))).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Forbidden");
    assert_eq!(
        message(&refused),
        "configmaps \"no-size\" is forbidden: expression 'object.data.size == 'small'' resulted in error: no such key: size"
    );
    assert_eq!(server.calls(), 0);
    // A false condition wins over the error of another.
    let sized = create_configmap(&h, &ns, configmap("sized", json!({"size": "big"}))).await;
    assert_eq!(sized.status, 201, "{}", sized.body);
    assert_eq!(server.calls(), 0);

    let removed = h.delete(&format!("{VALIDATING}/fail-closed"), None).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let created = h
        .post(
            VALIDATING,
            &configuration(
                "ValidatingWebhookConfiguration",
                "fail-open",
                &server,
                failing("Ignore"),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ignored = create_configmap(&h, &ns, configmap("no-size-2", json!({"a": "b"}))).await;
    assert_eq!(ignored.status, 201, "{}", ignored.body);
    assert_eq!(
        server.calls(),
        0,
        "an evaluation error under Ignore skips the webhook"
    );
    let small = create_configmap(&h, &ns, configmap("small", json!({"size": "small"}))).await;
    assert_eq!(small.status, 201, "{}", small.body);
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn bad_match_conditions_are_refused_with_upstreams_messages() {
    let h = Harness::start().await;
    let server = allowing_server().await;
    let with = |conditions: Value| {
        configuration(
            "ValidatingWebhookConfiguration",
            "bad",
            &server,
            json!({"matchConditions": conditions}),
        )
    };
    let not_bool = h
        .post(
            VALIDATING,
            &with(json!([{"name": "a", "expression": "object.metadata.name"}])),
        )
        .await;
    assert_eq!(not_bool.status, 422, "{}", not_bool.body);
    assert_eq!(
        message(&not_bool),
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name\": must evaluate to bool but got dyn"
    );
    let duplicate = h
        .post(
            VALIDATING,
            &with(json!([{"name": "a", "expression": "true"},
                         {"name": "a", "expression": "request.nope == 'x'"}])),
        )
        .await;
    assert_eq!(duplicate.status, 422, "{}", duplicate.body);
    let text = message(&duplicate);
    assert!(
        text.contains("webhooks[0].matchConditions[1].expression: Invalid value: \"request.nope == 'x'\": compilation failed: ERROR: <input>:1:8: undefined field 'nope'"),
        "{text}"
    );
    assert!(
        text.contains("webhooks[0].matchConditions[1].name: Duplicate value: \"a\""),
        "{text}"
    );
    let authorizer = h
        .post(
            VALIDATING,
            &with(json!([{"name": "a",
                "expression": "authorizer.group('').resource('pods').check('create').allowed()"}])),
        )
        .await;
    assert_eq!(authorizer.status, 422, "{}", authorizer.body);
    assert!(
        message(&authorizer).contains("kubemock does not evaluate the CEL authorizer library"),
        "{}",
        authorizer.body
    );
    // Nothing was stored.
    assert_eq!(h.get(&format!("{VALIDATING}/bad")).await.status, 404);
}
