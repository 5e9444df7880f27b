//! What kubemock does not enforce yet is refused, not stored and ignored: admission webhooks
//! with `matchConditions` (CEL), ValidatingAdmissionPolicies and their bindings. A test that
//! installs one on a real cluster relies on it running; here it would silently not run.
//! `--accept-unenforced` stores them with a `Warning` header instead.
//! (`apiserver/src/admission/unenforced.rs`; the webhooks themselves are called: `webhooks.rs`;
//! CRDs' CEL rules are enforced: `cel.rs`.)

use kubemock_apiserver::ServerConfig;
use kubemock_conformance::{Harness, Reply};
use serde_json::{Value, json};

fn webhook_configuration(name: &str, webhooks: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": webhooks,
    })
}

fn one_webhook() -> Value {
    json!([{
        "name": "check.example.com",
        "matchConditions": [{"name": "only-some", "expression": "object.metadata.name != 'x'"}],
        "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }])
}

fn gadget_definition(name: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{name}s.unenforced.example.com")},
        "spec": {
            "group": "unenforced.example.com",
            "names": {"plural": format!("{name}s"), "kind": "Gadget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.size > 0"}],
                }}}
            }}],
        },
    })
}

fn causes(reply: &Reply) -> Vec<(String, String)> {
    reply.body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_owned(),
                c["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn webhooks_with_match_conditions_are_refused_and_others_stored() {
    let h = Harness::start().await;
    let path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let refused = h
        .post(path, &webhook_configuration("checks", one_webhook()))
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Invalid");
    assert_eq!(
        causes(&refused),
        [(
            "webhooks[0].matchConditions".to_owned(),
            "FieldValueForbidden".to_owned()
        )]
    );
    let message = refused.body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"checks\" is invalid: webhooks[0].matchConditions: Forbidden: CEL match conditions are not evaluated"
        ),
        "{message}"
    );
    assert!(message.contains("--accept-unenforced"), "{message}");
    assert_eq!(h.get(&format!("{path}/checks")).await.status, 404);
    // No conditions: stored. Adding conditions later is refused like creating them.
    let empty = h
        .post(path, &webhook_configuration("none", json!([])))
        .await;
    assert_eq!(empty.status, 201, "{}", empty.body);
    let mut with_one = empty.body.clone();
    with_one["webhooks"] = one_webhook();
    let update = h.put(&format!("{path}/none"), &with_one).await;
    assert_eq!(update.status, 422, "{}", update.body);
    let patched = h
        .patch(
            &format!("{path}/none"),
            "application/merge-patch+json",
            &json!({"webhooks": one_webhook()}),
        )
        .await;
    assert_eq!(patched.status, 422, "{}", patched.body);
}

#[tokio::test]
async fn admission_policies_are_refused_and_cel_rules_and_conversion_webhooks_stored() {
    let h = Harness::start().await;
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replicas"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]},
    });
    let refused = h
        .post(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            &policy,
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        causes(&refused),
        [("spec".to_owned(), "FieldValueForbidden".to_owned())]
    );
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    // CEL rules are enforced (`cel.rs`): stored.
    let stored = h.post(crds, &gadget_definition("gadget")).await;
    assert_eq!(stored.status, 201, "{}", stored.body);
    let mut webhook = gadget_definition("widget");
    webhook["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        .as_object_mut()
        .map(|spec| spec.remove("x-kubernetes-validations"));
    // A conversion webhook is called (`webhooks.rs`): stored.
    webhook["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://127.0.0.1:9443/convert"}}});
    let stored = h.post(crds, &webhook).await;
    assert_eq!(stored.status, 201, "{}", stored.body);
}

#[tokio::test]
async fn accept_unenforced_stores_them_with_a_warning() {
    let config = ServerConfig {
        accept_unenforced: true,
        ..ServerConfig::default()
    };
    let h = Harness::start_with(config).await;
    let path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let created = h
        .post(path, &webhook_configuration("checks", one_webhook()))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let warning = created
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        warning.starts_with(
            "299 - \"webhooks[0].matchConditions: Forbidden: CEL match conditions are not evaluated"
        ),
        "{warning}"
    );
}
