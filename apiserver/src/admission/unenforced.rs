//! What kubemock stores but does not enforce yet, refused rather than silently ignored.
//!
//! A real cluster evaluates ValidatingAdmissionPolicies through their bindings. kubemock does
//! not yet (webhooks and their `matchConditions` are: `webhook`, `dispatch`; CRDs'
//! `x-kubernetes-validations` are enforced: `crd::rules`). A test that installs such an object
//! would pass believing its rule held, so a write that asks for any of them is refused (422,
//! one `Forbidden` cause per field) unless the server runs with `--accept-unenforced`; then it
//! is stored and each write gets a `Warning` header saying what is not enforced.

use super::fields::forbidden;
use crate::meta::FieldError;
use crate::object::Object;
use crate::registry::Resource;

/// The admission registration group.
const ADMISSIONREGISTRATION: &str = "admissionregistration.k8s.io";
/// Why a refusal happens, and how to get past it, at the end of every cause.
const HOW_TO_ACCEPT: &str = "kubemock does not enforce this yet; refused so that no test passes believing it ran (start kubemock with --accept-unenforced to store it anyway, unenforced)";

/// The fields of `object` that ask for something kubemock does not enforce, as causes.
pub(crate) fn unenforced(resource: &Resource, _object: &Object) -> Vec<FieldError> {
    let mut found = Vec::new();
    match (resource.group.as_str(), resource.plural.as_str()) {
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
