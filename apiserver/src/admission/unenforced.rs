//! What kubemock stores but does not enforce yet, refused rather than silently ignored.
//!
//! A real cluster evaluates the CEL of an admission webhook's `matchConditions` and of
//! ValidatingAdmissionPolicies through their bindings. kubemock does not yet (admission and
//! conversion webhooks are called: `webhook`, `dispatch`; CRDs' `x-kubernetes-validations` are
//! enforced: `cel_rules`). A test that installs such an object would pass believing its rule
//! held, so a write that asks for any of them is refused (422, one `Forbidden` cause per field)
//! unless the server runs with `--accept-unenforced`; then it is stored and each write gets a
//! `Warning` header saying what is not enforced (a webhook with `matchConditions` is then
//! called as if they all held).

use serde_json::Value;

use super::fields::forbidden;
use crate::meta::FieldError;
use crate::object::Object;
use crate::registry::Resource;

/// The admission registration group.
const ADMISSIONREGISTRATION: &str = "admissionregistration.k8s.io";
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
            for (i, webhook) in webhooks.into_iter().flatten().enumerate() {
                let conditions = webhook.get("matchConditions").and_then(Value::as_array);
                if conditions.is_some_and(|c| !c.is_empty()) {
                    found.push(forbidden(
                        format!("webhooks[{i}].matchConditions"),
                        &format!("CEL match conditions are not evaluated: {HOW_TO_ACCEPT}"),
                    ));
                }
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
    fn match_conditions_are_refused_and_empty_ones_are_not() {
        let resource = crate::registry::Registry::builtin()
            .lookup(
                ADMISSIONREGISTRATION,
                "v1",
                "validatingwebhookconfigurations",
            )
            .expect("served");
        let configuration = object(json!({"webhooks": [
            {"name": "a", "matchConditions": []},
            {"name": "b", "matchConditions": [{"name": "c", "expression": "true"}]}]}));
        let causes = unenforced(&resource, &configuration);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "webhooks[1].matchConditions");
        assert_eq!(causes[0].reason, "FieldValueForbidden");
        assert!(causes[0].detail.contains("--accept-unenforced"));
    }
}
