//! APIServices (`apiregistration.k8s.io/v1`): the aggregator's strategy
//! (`k8s.io/kube-aggregator/pkg/registry/apiservice/strategy.go`: no status on create, the old
//! status kept by writes to the object) and validation
//! (`k8s.io/kube-aggregator/pkg/apis/apiregistration/validation/validation.go`).

use serde_json::{Value, json};

use super::fields::{self, go_str};
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::registry::NameRule;

/// `groupPriorityMinimum` must be within (0, this].
const MAX_GROUP_PRIORITY: i64 = 20000;
/// `versionPriority` must be within (0, this].
const MAX_VERSION_PRIORITY: i64 = 1000;

/// `PrepareForCreate`: a new APIService has no status.
pub(super) fn prepare_create(service: &mut Object) {
    service.insert("status".to_owned(), json!({}));
}

/// `ValidateAPIService`.
pub(super) fn validate(service: &Object, errors: &mut Vec<FieldError>) {
    let spec = service.get("spec").cloned().unwrap_or(Value::Null);
    let group = fields::str_at(&spec, &["group"]);
    let version = fields::str_at(&spec, &["version"]);
    let required = format!("{version}.{group}");
    let name = object::name_of(service);
    // (Path-segment names are checked with the other metadata: `NameRule::PathSegment`.)
    if !name.is_empty() && name != required {
        errors.push(fields::invalid(
            "metadata.name",
            go_str(name),
            &format!(
                "must be `spec.version+\".\"+spec.group`: {}",
                go_str(&required)
            ),
        ));
    }
    if group.is_empty() && version != "v1" {
        errors.push(fields::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for problem in meta::name_errors(group, NameRule::Subdomain, false) {
            errors.push(FieldError {
                field: "spec.group".to_owned(),
                reason: "FieldValueInvalid",
                detail: problem,
            });
        }
    }
    for problem in meta::name_errors(version, NameRule::Dns1035, false) {
        errors.push(FieldError {
            field: "spec.version".to_owned(),
            reason: "FieldValueInvalid",
            detail: problem,
        });
    }
    let group_priority = spec
        .get("groupPriorityMinimum")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if group_priority <= 0 || group_priority > MAX_GROUP_PRIORITY {
        errors.push(fields::invalid(
            "spec.groupPriorityMinimum",
            group_priority.to_string(),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = spec
        .get("versionPriority")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if version_priority <= 0 || version_priority > MAX_VERSION_PRIORITY {
        errors.push(fields::invalid(
            "spec.versionPriority",
            version_priority.to_string(),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = fields::str_at(&spec, &["caBundle"]);
    let insecure = spec
        .get("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(service_ref) = spec.get("service").filter(|s| !s.is_null()) else {
        if !ca_bundle.is_empty() {
            // The bundle is base64 in JSON; upstream counts its bytes.
            let bytes = ca_bundle.len() / 4 * 3;
            errors.push(fields::invalid(
                "spec.caBundle",
                go_str(&format!("{bytes} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errors.push(fields::invalid(
                "spec.insecureSkipTLSVerify",
                "true".to_owned(),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return;
    };
    if fields::str_at(service_ref, &["namespace"]).is_empty() {
        errors.push(fields::required("spec.service.namespace", ""));
    }
    if fields::str_at(service_ref, &["name"]).is_empty() {
        errors.push(fields::required("spec.service.name", ""));
    }
    let port = service_ref
        .get("port")
        .and_then(Value::as_i64)
        .unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errors.push(fields::invalid(
            "spec.service.port",
            port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && !ca_bundle.is_empty() {
        errors.push(fields::invalid(
            "spec.insecureSkipTLSVerify",
            "true".to_owned(),
            "may not be true if caBundle is present",
        ));
    }
}

/// The defaults of `v1.SetDefaults_ServiceReference`: port 443.
pub(super) fn default(service: &mut Object) {
    if let Some(Value::Object(spec)) = service.get_mut("spec")
        && let Some(Value::Object(reference)) = spec.get_mut("service")
    {
        fields::default_to(reference, "port", json!(443));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(service: Value) -> Vec<String> {
        let mut errors = Vec::new();
        validate(service.as_object().unwrap(), &mut errors);
        errors
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn an_api_service_is_named_after_its_version_and_group() {
        let good = json!({"metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                     "versionPriority": 15}});
        assert!(errors_of(good).is_empty());
        let bad = json!({"metadata": {"name": "v2.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 0,
                     "versionPriority": 15, "insecureSkipTLSVerify": true}});
        assert_eq!(
            errors_of(bad),
            [
                "metadata.name: Invalid value: \"v2.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
        let remote = json!({"metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1,
                     "versionPriority": 1, "service": {"port": 70000}}});
        assert_eq!(
            errors_of(remote),
            [
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
            ]
        );
    }
}
