//! kubemock once refused what it stored but did not enforce (webhooks' `matchConditions`,
//! ValidatingAdmissionPolicies and their bindings, CRDs' CEL rules, conversion webhooks),
//! unless `--accept-unenforced`. All of it is enforced now (`vap.rs`, `cel.rs`,
//! `webhooks.rs`): each is stored, with no `Warning` header. `--accept-unenforced` is still
//! accepted by the binary, with no effect.

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

#[tokio::test]
async fn what_used_to_be_refused_is_stored_without_warnings() {
    let h = Harness::start().await;
    let no_warning = |reply: &Reply| {
        assert_eq!(reply.status, 201, "{}", reply.body);
        assert!(
            reply.headers.get("warning").is_none(),
            "{:?}",
            reply.headers
        );
    };
    let admission = "/apis/admissionregistration.k8s.io/v1";
    no_warning(
        &h.post(
            &format!("{admission}/validatingadmissionpolicies"),
            &policy(),
        )
        .await,
    );
    no_warning(
        &h.post(
            &format!("{admission}/validatingadmissionpolicybindings"),
            &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "replicas"},
                    "spec": {"policyName": "replicas", "validationActions": ["Deny"]}}),
        )
        .await,
    );
    no_warning(
        &h.post(
            &format!("{admission}/validatingwebhookconfigurations"),
            &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "checks"},
                "webhooks": [{"name": "check.example.com",
                    "matchConditions": [{"name": "some", "expression": "object.metadata.name != 'x'"}],
                    "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
                    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                               "resources": ["configmaps"]}],
                    "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        )
        .await,
    );
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    // CEL rules are enforced (`cel.rs`): stored.
    no_warning(&h.post(crds, &gadget_definition("gadget")).await);
    let mut webhook = gadget_definition("widget");
    webhook["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        .as_object_mut()
        .map(|spec| spec.remove("x-kubernetes-validations"));
    // A conversion webhook is called (`webhooks.rs`): stored.
    webhook["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://127.0.0.1:9443/convert"}}});
    no_warning(&h.post(crds, &webhook).await);
}
