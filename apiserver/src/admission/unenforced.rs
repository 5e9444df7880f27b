//! What kubemock stores but does not enforce yet, refused rather than silently ignored.
//!
//! A real cluster calls the admission webhooks of a Mutating/ValidatingWebhookConfiguration,
//! evaluates ValidatingAdmissionPolicies through their bindings, and calls a conversion webhook
//! for a CRD whose `spec.conversion.strategy` is `Webhook`. kubemock does none of that yet. A test
//! that installs such an object would pass believing its webhook ran or its rule held, so a
//! write that asks for any of them is refused (422, one `Forbidden` cause per field) unless the
//! server runs with `--accept-unenforced`; then it is stored and each write gets a `Warning`
//! header saying what is not enforced.
//!
//! What is harmless stays accepted: a webhook configuration with no webhooks, a CRD whose
//! conversion is `None`.

use serde_json::Value;

use super::fields::forbidden;
use crate::meta::FieldError;
use crate::object::Object;
use crate::registry::Resource;

/// The admission registration group.
const ADMISSIONREGISTRATION: &str = "admissionregistration.k8s.io";
/// The CRD group.
const APIEXTENSIONS: &str = "apiextensions.k8s.io";
/// Why a refusal happens, and how to get past it, at the end of every cause.
const HOW_TO_ACCEPT: &str = "kubemock does not enforce this yet; refused so that no test passes believing it ran (start kubemock with --accept-unenforced to store it anyway, unenforced)";

/// The fields of `object` that ask for something kubemock does not enforce, as causes.
pub(crate) fn unenforced(resource: &Resource, object: &Object) -> Vec<FieldError> {
    let mut found = Vec::new();
    match (resource.group.as_str(), resource.plural.as_str()) {
        (
            ADMISSIONREGISTRATION,
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => {
            let webhooks = object.get("webhooks").and_then(Value::as_array);
            if webhooks.is_some_and(|w| !w.is_empty()) {
                found.push(forbidden(
                    "webhooks",
                    &format!("admission webhooks are not called: {HOW_TO_ACCEPT}"),
                ));
            }
        }
        (ADMISSIONREGISTRATION, "validatingadmissionpolicies") => {
            found.push(forbidden(
                "spec",
                &format!("ValidatingAdmissionPolicies are not evaluated: {HOW_TO_ACCEPT}"),
            ));
        }
        (ADMISSIONREGISTRATION, "validatingadmissionpolicybindings") => {
            found.push(forbidden(
                "spec",
                &format!("ValidatingAdmissionPolicyBindings are not enforced: {HOW_TO_ACCEPT}"),
            ));
        }
        (APIEXTENSIONS, "customresourcedefinitions") => definition(object, &mut found),
        _ => {}
    }
    found
}

/// The messages of `causes` for `Warning` headers, when they are accepted anyway.
pub(crate) fn warnings(causes: &[FieldError]) -> Vec<String> {
    causes
        .iter()
        .map(|cause| format!("{}: {}", cause.field, cause.detail))
        .collect()
}

/// A CRD's conversion webhook. (Its CEL rules are enforced: `crd/rules.rs`.)
fn definition(object: &Object, found: &mut Vec<FieldError>) {
    let strategy = object
        .get("spec")
        .and_then(|s| s.get("conversion"))
        .and_then(|c| c.get("strategy"))
        .and_then(Value::as_str);
    if strategy == Some("Webhook") {
        found.push(forbidden(
            "spec.conversion.strategy",
            &format!("conversion webhooks are not called: {HOW_TO_ACCEPT}"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("test objects are objects"),
        }
    }

    #[test]
    fn a_conversion_webhook_is_refused_and_none_is_not() {
        let webhook = object(json!({"spec": {"conversion": {"strategy": "Webhook"}}}));
        let causes = definition_causes(&webhook);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.conversion.strategy");
        assert_eq!(causes[0].reason, "FieldValueForbidden");
        assert!(causes[0].detail.contains("--accept-unenforced"));
        let none = object(json!({"spec": {"conversion": {"strategy": "None"}}}));
        assert!(definition_causes(&none).is_empty());
    }

    fn definition_causes(object: &Object) -> Vec<FieldError> {
        let mut found = Vec::new();
        definition(object, &mut found);
        found
    }
}
