//! What kubemock stores but does not enforce yet, refused rather than silently ignored.
//!
//! A real cluster evaluates the CEL of an admission webhook's `matchConditions`, of
//! ValidatingAdmissionPolicies through their bindings, and of a CustomResourceDefinition's
//! `x-kubernetes-validations`. kubemock has no CEL yet (admission webhooks and conversion
//! webhooks themselves are called: `admission::webhooks`, `admission::conversion`). A test
//! that installs such an object would pass believing its rule held, so a write that asks for
//! any of them is refused (422, one `Forbidden` cause per field) unless the server runs with
//! `--accept-unenforced`; then it is stored and each write gets a `Warning` header saying what
//! is not enforced (a webhook with `matchConditions` is then called as if they all held).

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

/// A CRD's CEL rules (in every version's schema).
fn definition(object: &Object, found: &mut Vec<FieldError>) {
    let spec = object.get("spec");
    let versions = spec
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array);
    for (i, version) in versions.into_iter().flatten().enumerate() {
        if let Some(schema) = version.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
            cel_rules(schema, &at, found);
        }
    }
}

/// Every non-empty `x-kubernetes-validations` under `schema` (at the printed path `at`, in
/// upstream's path style: `properties[name]`, `items`, `additionalProperties`, `allOf[i]`).
fn cel_rules(schema: &Value, at: &str, found: &mut Vec<FieldError>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|rules| !rules.is_empty())
    {
        found.push(forbidden(
            format!("{at}.x-kubernetes-validations"),
            &format!("CEL validation rules are not evaluated: {HOW_TO_ACCEPT}"),
        ));
    }
    for key in [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ] {
        if let Some(Value::Object(children)) = schema.get(key) {
            for (name, child) in children {
                cel_rules(child, &format!("{at}.{key}[{name}]"), found);
            }
        }
    }
    for key in ["items", "additionalProperties", "additionalItems", "not"] {
        match schema.get(key) {
            Some(Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    cel_rules(child, &format!("{at}.{key}[{i}]"), found);
                }
            }
            Some(child @ Value::Object(_)) => cel_rules(child, &format!("{at}.{key}"), found),
            _ => {}
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(children)) = schema.get(key) {
            for (i, child) in children.iter().enumerate() {
                cel_rules(child, &format!("{at}.{key}[{i}]"), found);
            }
        }
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
    fn cel_rules_are_found_at_any_depth_with_upstreams_path_style() {
        let crd = object(
            json!({"spec": {"conversion": {"strategy": "None"}, "versions": [
            {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0"}],
                    "properties": {"list": {"type": "array", "items": {
                        "type": "object", "x-kubernetes-validations": [{"rule": "true"}]}}}},
                "empty": {"type": "object", "x-kubernetes-validations": []}}}}}]}}),
        );
        let fields: Vec<String> = definition_causes(&crd)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations",
            ]
        );
    }

    #[test]
    fn conversion_webhooks_are_accepted_and_match_conditions_refused() {
        let webhook = object(json!({"spec": {"conversion": {"strategy": "Webhook"}}}));
        assert!(definition_causes(&webhook).is_empty());
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

    fn definition_causes(object: &Object) -> Vec<FieldError> {
        let mut found = Vec::new();
        definition(object, &mut found);
        found
    }
}
