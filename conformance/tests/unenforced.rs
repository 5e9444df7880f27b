//! What kubemock does not enforce yet is refused, not stored and ignored:
//! ValidatingAdmissionPolicies and their bindings (webhooks' `matchConditions` are evaluated:
//! `vap.rs`). A test that
//! installs one on a real cluster relies on it running; here it would silently not run.
//! `--accept-unenforced` stores them with a `Warning` header instead.
//! (`apiserver/src/admission/unenforced.rs`; the webhooks themselves are called: `webhooks.rs`;
//! CRDs' CEL rules are enforced: `cel.rs`.)

use kubemock_apiserver::ServerConfig;
use kubemock_conformance::{Harness, Reply};
use serde_json::{Value, json};

fn policy() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replicas"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]},
    })
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
async fn admission_policies_are_refused_and_cel_rules_and_conversion_webhooks_stored() {
    let h = Harness::start().await;
    let refused = h
        .post(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            &policy(),
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
    let created = h
        .post(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            &policy(),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let warning = created
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        warning
            .starts_with("299 - \"spec: Forbidden: ValidatingAdmissionPolicies are not evaluated"),
        "{warning}"
    );
}
