//! Admission configurations whose CEL kubemock evaluates: webhooks' `matchConditions` and
//! ValidatingAdmissionPolicies with their bindings. A configuration that would fail to run
//! is refused when written, with upstream's messages
//! (`pkg/apis/admissionregistration/validation/validation.go`), and policies and bindings
//! get their v1 defaults (`pkg/apis/admissionregistration/v1/defaults.go`), so that what is
//! stored is what the dispatch (`policy`, `dispatch`) runs.
//!
//! Of a webhook configuration only the `matchConditions` are validated here (the rest of
//! `ValidateValidatingWebhookConfiguration` is not: docs/webhooks-and-cel.md#webhooks).

use std::collections::HashSet;

use kubemock_apimachinery::validation;
use kubemock_cel::admission::{Compiler, Declarations, Returns};
use serde_json::{Map, Value, json};

use super::fields::{
    child, default_to, duplicate, forbidden, go_str, go_value, invalid, not_supported, required,
};
use super::rbac::validate_label_selector;
use crate::meta::FieldError;
use crate::object::Object;

/// Upstream's limit on a webhook's or policy's match conditions.
const MAX_MATCH_CONDITIONS: usize = 64;
/// `maxAuditAnnotations`.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// `maxAuditAnnotationValueExpressionLength`: 5 KiB.
const MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH: usize = 5 * 1024;

const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
const REASONS: [&str; 3] = ["Forbidden", "Invalid", "RequestEntityTooLarge"];

fn array(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A slice of Go type `[]T` as `%#v` prints it (strings quoted).
fn go_slice(element_type: &str, items: &[Value]) -> String {
    let inner: Vec<String> = items
        .iter()
        .map(|v| go_str(v.as_str().unwrap_or_default()))
        .collect();
    format!("[]{element_type}{{{}}}", inner.join(", "))
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The match-condition compiler of webhooks (no params) or of a policy (params when it has
/// a `paramKind`); the authorizer is declared, and refused (`kubemock_cel::admission`).
fn condition_compiler(params: bool) -> Compiler {
    Compiler::new(
        Declarations {
            params,
            authorizer: true,
        },
        false,
    )
}

/// `validateMatchConditions`.
fn validate_match_conditions(
    conditions: &[Value],
    params: bool,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errors.push(
            kubemock_apimachinery::field::Error::too_many(
                &kubemock_apimachinery::field::Path::new(path),
                Some(conditions.len()),
                Some(MAX_MATCH_CONDITIONS),
            )
            .into(),
        );
    }
    let compiler = condition_compiler(params);
    let mut names = HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let expression = text(condition, "expression").trim();
        if expression.is_empty() {
            errors.push(required(format!("{at}.expression"), ""));
        } else if let Err(detail) = compiler.compile(expression, Returns::Bool, true).program {
            errors.push(invalid(
                format!("{at}.expression"),
                go_str(expression),
                &detail,
            ));
        }
        let name = text(condition, "name");
        if name.is_empty() {
            errors.push(required(format!("{at}.name"), ""));
        } else {
            for message in validation::is_qualified_name(name) {
                errors.push(invalid(format!("{at}.name"), go_str(name), &message));
            }
            if !names.insert(name) {
                errors.push(duplicate(format!("{at}.name"), go_str(name)));
            }
        }
    }
}

/// A webhook configuration's `matchConditions` (create, and an update that changes them:
/// `ignoreValidatingWebhookMatchConditions`).
pub(super) fn validate_webhook_configuration(
    object: &Object,
    old: Option<&Object>,
    errors: &mut Vec<FieldError>,
) {
    let webhooks = array(object.get("webhooks"));
    if let Some(old) = old {
        let old_webhooks = array(old.get("webhooks"));
        let unchanged = old_webhooks.len() == webhooks.len()
            && webhooks
                .iter()
                .zip(old_webhooks)
                .all(|(new, old)| new.get("matchConditions") == old.get("matchConditions"));
        if unchanged {
            return;
        }
    }
    for (i, webhook) in webhooks.iter().enumerate() {
        validate_match_conditions(
            array(webhook.get("matchConditions")),
            false,
            &format!("webhooks[{i}].matchConditions"),
            errors,
        );
    }
}

/// `SetDefaults_MatchResources` and `SetDefaults_Rule` on a `matchConstraints` or
/// `matchResources`.
fn default_match_resources(resources: &mut Map<String, Value>) {
    default_to(resources, "matchPolicy", json!("Equivalent"));
    default_to(resources, "namespaceSelector", json!({}));
    default_to(resources, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        if let Some(Value::Array(rules)) = resources.get_mut(key) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                default_to(rule, "scope", json!("*"));
            }
        }
    }
}

/// A ValidatingAdmissionPolicy's defaults (`SetDefaults_ValidatingAdmissionPolicySpec`).
pub(super) fn default_policy(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "failurePolicy", json!("Fail"));
    if let Some(Value::Object(constraints)) = spec.get_mut("matchConstraints") {
        default_match_resources(constraints);
    }
}

/// A ValidatingAdmissionPolicyBinding's defaults (`SetDefaults_MatchResources`). v1 has no
/// `SetDefaults_ParamRef` (`pkg/apis/admissionregistration/v1/defaults.go`; the alpha and beta
/// versions had one): a paramRef without `parameterNotFoundAction` is refused as required.
pub(super) fn default_binding(object: &mut Object) {
    let spec = child(object, "spec");
    if let Some(Value::Object(resources)) = spec.get_mut("matchResources") {
        default_match_resources(resources);
    }
}

/// `validateResources` (subresources allowed).
fn validate_resources(resources: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    if resources.is_empty() {
        errors.push(required(path, ""));
    }
    let mut with_wildcard_sub = HashSet::new();
    let mut sub_with_wildcard_res = HashSet::new();
    let (mut double_wildcard, mut single_wildcard, mut without_sub) = (false, false, false);
    for (i, value) in resources.iter().enumerate() {
        let res_sub = value.as_str().unwrap_or("");
        if res_sub.is_empty() {
            errors.push(required(format!("{path}[{i}]"), ""));
            continue;
        }
        double_wildcard |= res_sub == "*/*";
        single_wildcard |= res_sub == "*";
        let Some((res, sub)) = res_sub.split_once('/') else {
            without_sub = res_sub != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            errors.push(invalid(
                format!("{path}[{i}]"),
                go_str(res_sub),
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            errors.push(invalid(
                format!("{path}[{i}]"),
                go_str(res_sub),
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res);
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub);
        }
    }
    let shown = || go_slice("string", resources);
    if resources.len() > 1 && double_wildcard {
        errors.push(invalid(
            path,
            shown(),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && without_sub {
        errors.push(invalid(
            path,
            shown(),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `validateNamedRuleWithOperations` (`validateRuleWithOperations`, `validateRule`).
fn validate_rule(rule: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let mut names = HashSet::new();
    for (i, name) in array(rule.get("resourceNames")).iter().enumerate() {
        let name = name.as_str().unwrap_or("");
        let at = format!("{path}.resourceNames[{i}]");
        for message in validation::is_valid_path_segment_name(name) {
            errors.push(invalid(at.clone(), go_str(name), &message));
        }
        if !names.insert(name) {
            errors.push(duplicate(at, go_str(name)));
        }
    }
    let wildcard = |items: &[Value]| items.iter().any(|i| i == "*");
    let list = |items: &[Value]| go_slice("string", items);
    let operations = array(rule.get("operations"));
    if operations.is_empty() {
        errors.push(required(format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && wildcard(operations) {
        errors.push(invalid(
            format!("{path}.operations"),
            go_slice("admissionregistration.OperationType", operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, operation) in operations.iter().enumerate() {
        let operation = operation.as_str().unwrap_or("");
        if !OPERATIONS.contains(&operation) {
            errors.push(not_supported(
                format!("{path}.operations[{i}]"),
                operation,
                &OPERATIONS,
            ));
        }
    }
    let groups = array(rule.get("apiGroups"));
    if groups.is_empty() {
        errors.push(required(format!("{path}.apiGroups"), ""));
    }
    if groups.len() > 1 && wildcard(groups) {
        errors.push(invalid(
            format!("{path}.apiGroups"),
            list(groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = array(rule.get("apiVersions"));
    if versions.is_empty() {
        errors.push(required(format!("{path}.apiVersions"), ""));
    }
    if versions.len() > 1 && wildcard(versions) {
        errors.push(invalid(
            format!("{path}.apiVersions"),
            list(versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version.as_str().unwrap_or("").is_empty() {
            errors.push(required(format!("{path}.apiVersions[{i}]"), ""));
        }
    }
    validate_resources(
        array(rule.get("resources")),
        &format!("{path}.resources"),
        errors,
    );
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !SCOPES.contains(&scope)
    {
        errors.push(not_supported(format!("{path}.scope"), scope, &SCOPES));
    }
}

/// `validateMatchResources`.
fn validate_match_resources(resources: &Value, path: &str, errors: &mut Vec<FieldError>) {
    match resources.get("matchPolicy").and_then(Value::as_str) {
        None => errors.push(required(format!("{path}.matchPolicy"), "")),
        Some(policy) if !MATCH_POLICIES.contains(&policy) => errors.push(not_supported(
            format!("{path}.matchPolicy"),
            policy,
            &MATCH_POLICIES,
        )),
        Some(_) => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match resources.get(key) {
            None | Some(Value::Null) => errors.push(required(format!("{path}.{key}"), "")),
            Some(selector) => validate_label_selector(selector, &format!("{path}.{key}"), errors),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in array(resources.get(key)).iter().enumerate() {
            validate_rule(rule, &format!("{path}.{key}[{i}]"), errors);
        }
    }
}

/// `validateParamKind`.
fn validate_param_kind(kind: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let api_version = text(kind, "apiVersion");
    if api_version.is_empty() {
        errors.push(required(format!("{path}.apiVersion"), ""));
    } else if api_version.matches('/').count() > 1 {
        errors.push(invalid(
            format!("{path}.apiVersion"),
            go_str(api_version),
            &format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !group.is_empty() {
            let messages = validation::is_dns1123_subdomain(group);
            if !messages.is_empty() {
                errors.push(invalid(
                    format!("{path}.apiVersion"),
                    go_str(group),
                    &messages.join(","),
                ));
            }
        }
        if version.is_empty() {
            errors.push(invalid(
                format!("{path}.apiVersion"),
                go_str(api_version),
                "version must be specified",
            ));
        } else {
            let messages = validation::is_dns1035_label(version);
            if !messages.is_empty() {
                errors.push(invalid(
                    format!("{path}.apiVersion"),
                    go_str(version),
                    &messages.join(","),
                ));
            }
        }
    }
    let kind_name = text(kind, "kind");
    if kind_name.is_empty() {
        errors.push(required(format!("{path}.kind"), ""));
    } else {
        let messages = validation::is_dns1035_label(&kind_name.to_lowercase());
        if !messages.is_empty() {
            errors.push(invalid(
                format!("{path}.kind"),
                go_str(kind_name),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    messages.join(",")
                ),
            ));
        }
    }
}

/// `isCELIdentifier`.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !kubemock_cel::schema::RESERVED.contains(&name)
}

/// A ValidatingAdmissionPolicy (`validateValidatingAdmissionPolicySpec`); on an update whose
/// paramKind and matchConditions are unchanged the conditions are not checked again.
pub(super) fn validate_policy(object: &Object, old: Option<&Object>, errors: &mut Vec<FieldError>) {
    let empty = Value::Object(Map::new());
    let spec = object.get("spec").unwrap_or(&empty);
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errors.push(required("spec.failurePolicy", "")),
        Some(policy) if !FAILURE_POLICIES.contains(&policy) => errors.push(not_supported(
            "spec.failurePolicy",
            policy,
            &FAILURE_POLICIES,
        )),
        Some(_) => {}
    }
    let param_kind = spec.get("paramKind").filter(|k| !k.is_null());
    if let Some(kind) = param_kind {
        validate_param_kind(kind, "spec.paramKind", errors);
    }
    let params = param_kind.is_some();
    match spec.get("matchConstraints").filter(|c| !c.is_null()) {
        None => errors.push(required("spec.matchConstraints", "")),
        Some(constraints) => {
            validate_match_resources(constraints, "spec.matchConstraints", errors);
            if array(constraints.get("resourceRules")).is_empty() {
                errors.push(required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
    let conditions_unchanged = old.is_some_and(|old| {
        let old_spec = old.get("spec").unwrap_or(&empty);
        old_spec.get("paramKind") == spec.get("paramKind")
            && old_spec.get("matchConditions") == spec.get("matchConditions")
    });
    if !conditions_unchanged {
        validate_match_conditions(
            array(spec.get("matchConditions")),
            params,
            "spec.matchConditions",
            errors,
        );
    }
    let variables = array(spec.get("variables"));
    let mut compiler = Compiler::new(
        Declarations {
            params,
            authorizer: true,
        },
        !variables.is_empty(),
    );
    for (i, variable) in variables.iter().enumerate() {
        let at = format!("spec.variables[{i}]");
        let name = text(variable, "name");
        if name.trim().is_empty() {
            errors.push(required(format!("{at}.name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            errors.push(invalid(
                format!("{at}.name"),
                go_str(name),
                "name is not a valid CEL identifier",
            ));
        }
        let expression = text(variable, "expression");
        if expression.trim().is_empty() {
            errors.push(required(
                format!("{at}.expression"),
                "expression is not specified",
            ));
        } else if let Some(detail) = compiler.add_variable(name, expression) {
            errors.push(invalid(
                format!("{at}.expression"),
                go_str(expression),
                &detail,
            ));
        }
    }
    let validations = array(spec.get("validations"));
    let annotations = array(spec.get("auditAnnotations"));
    if validations.is_empty() && annotations.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        errors.push(required("spec.validations", detail));
        errors.push(required("spec.auditAnnotations", detail));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        validate_validation(&compiler, v, &format!("spec.validations[{i}]"), errors);
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errors.push(invalid(
            "spec.auditAnnotations",
            go_value(&Value::Array(annotations.to_vec())),
            &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let policy_name = crate::object::name_of(object);
    let mut keys = HashSet::new();
    for (i, annotation) in annotations.iter().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        let key = text(annotation, "key");
        if policy_name.is_empty() {
            errors.push(invalid(
                format!("{at}.key"),
                go_str(key),
                "requires metadata.name be non-empty",
            ));
        } else {
            let qualified = format!("{policy_name}/{key}");
            for message in validation::is_qualified_name(&qualified) {
                errors.push(invalid(format!("{at}.key"), go_str(&qualified), &message));
            }
        }
        let value_expression = text(annotation, "valueExpression");
        let trimmed = value_expression.trim();
        if trimmed.is_empty() {
            errors.push(required(
                format!("{at}.valueExpression"),
                "valueExpression is not specified",
            ));
        } else if trimmed.len() > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH {
            errors.push(required(
                format!("{at}.valueExpression"),
                &format!(
                    "must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length"
                ),
            ));
        } else if let Err(detail) = compiler
            .compile(trimmed, Returns::StringOrNull, true)
            .program
        {
            errors.push(invalid(
                format!("{at}.valueExpression"),
                go_str(value_expression),
                &detail,
            ));
        }
        if !keys.insert(key) {
            errors.push(duplicate(format!("{at}.key"), go_str(key)));
        }
    }
}

/// `validateValidation`.
fn validate_validation(
    compiler: &Compiler,
    validation: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let expression = text(validation, "expression");
    if expression.trim().is_empty() {
        errors.push(required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else if let Err(detail) = compiler.compile(expression, Returns::Bool, true).program {
        errors.push(invalid(
            format!("{path}.expression"),
            go_str(expression),
            &detail,
        ));
    }
    let message_expression = text(validation, "messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errors.push(invalid(
            format!("{path}.messageExpression"),
            go_str(message_expression),
            "must be non-empty if specified",
        ));
    } else if !message_expression.trim().is_empty()
        && let Err(detail) = compiler
            .compile(message_expression, Returns::String, false)
            .program
    {
        errors.push(invalid(
            format!("{path}.messageExpression"),
            go_str(message_expression),
            &detail,
        ));
    }
    let message = text(validation, "message");
    if !message.is_empty() && message.trim().is_empty() {
        errors.push(invalid(
            format!("{path}.message"),
            go_str(message),
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        errors.push(invalid(
            format!("{path}.message"),
            go_str(message),
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = validation.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        errors.push(not_supported(format!("{path}.reason"), reason, &REASONS));
    }
}

/// A ValidatingAdmissionPolicyBinding (`validateValidatingAdmissionPolicyBindingSpec`).
pub(super) fn validate_binding(object: &Object, errors: &mut Vec<FieldError>) {
    let empty = Value::Object(Map::new());
    let spec = object.get("spec").unwrap_or(&empty);
    let policy_name = text(spec, "policyName");
    if policy_name.is_empty() {
        errors.push(required("spec.policyName", ""));
    } else {
        for message in validation::is_dns1123_subdomain(policy_name) {
            errors.push(invalid("spec.policyName", go_str(policy_name), &message));
        }
    }
    if let Some(param_ref) = spec.get("paramRef").filter(|p| !p.is_null()) {
        validate_param_ref(param_ref, errors);
    }
    if let Some(resources) = spec.get("matchResources").filter(|r| !r.is_null()) {
        // Upstream's path has the typo.
        validate_match_resources(resources, "spec.matchResouces", errors);
    }
    let actions = array(spec.get("validationActions"));
    let mut seen = HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        let action = action.as_str().unwrap_or("");
        if !VALIDATION_ACTIONS.contains(&action) {
            errors.push(not_supported(
                format!("spec.validationActions[{i}]"),
                action,
                &VALIDATION_ACTIONS,
            ));
        }
        if !seen.insert(action) {
            errors.push(duplicate(
                format!("spec.validationActions[{i}]"),
                go_str(action),
            ));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errors.push(invalid(
            "spec.validationActions",
            go_slice("admissionregistration.ValidationAction", actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errors.push(required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
}

/// `validateParamRef`.
fn validate_param_ref(param_ref: &Value, errors: &mut Vec<FieldError>) {
    let name = text(param_ref, "name");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    if !name.is_empty() {
        for message in validation::is_valid_path_segment_name(name) {
            errors.push(invalid("spec.paramRef.name", go_str(name), &message));
        }
        if selector.is_some() {
            errors.push(forbidden(
                "spec.paramRef.name",
                "name and selector are mutually exclusive",
            ));
        }
    }
    if let Some(selector) = selector {
        validate_label_selector(selector, "spec.paramRef.selector", errors);
        if !name.is_empty() {
            errors.push(forbidden(
                "spec.paramRef.selector",
                "name and selector are mutually exclusive",
            ));
        }
    }
    if name.is_empty() && selector.is_none() {
        errors.push(required(
            "spec.paramRef",
            "one of name or selector must be specified",
        ));
    }
    match param_ref
        .get("parameterNotFoundAction")
        .and_then(Value::as_str)
    {
        None | Some("") => errors.push(required("spec.paramRef.parameterNotFoundAction", "")),
        Some("Allow" | "Deny") => {}
        Some(other) => errors.push(not_supported(
            "spec.paramRef.parameterNotFoundAction",
            other,
            &["Deny", "Allow"],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("test objects are objects"),
        }
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    /// After `TestValidateValidatingWebhookConfiguration`'s match-condition cases
    /// (`pkg/apis/admissionregistration/validation/validation_test.go`).
    #[test]
    fn match_conditions_are_checked_on_create_and_when_changed() {
        let configuration = |conditions: Value| {
            object(json!({"webhooks": [{"name": "a.example.com", "matchConditions": conditions}]}))
        };
        let mut errors = Vec::new();
        let bad = configuration(json!([
            {"name": "ok", "expression": "true"},
            {"name": "ok", "expression": "object.x"},
            {"name": "bad name!", "expression": "  "},
            {"name": "p", "expression": "params.x == 1"}]));
        validate_webhook_configuration(&bad, None, &mut errors);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "webhooks[0].matchConditions[1].expression",
                "webhooks[0].matchConditions[1].name",
                "webhooks[0].matchConditions[2].expression",
                "webhooks[0].matchConditions[2].name",
                "webhooks[0].matchConditions[3].expression",
            ],
            "{:?}",
            messages(&errors)
        );
        assert_eq!(
            errors[0].detail,
            "Invalid value: \"object.x\": must evaluate to bool but got dyn"
        );
        assert_eq!(errors[1].reason, "FieldValueDuplicate");
        assert!(
            errors[4]
                .detail
                .contains("undeclared reference to 'params'")
        );
        // Unchanged on update: not checked again.
        let mut again = Vec::new();
        validate_webhook_configuration(&bad, Some(&bad), &mut again);
        assert!(again.is_empty());
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
            .collect();
        let mut errors = Vec::new();
        validate_webhook_configuration(&configuration(Value::Array(many)), None, &mut errors);
        assert_eq!(
            messages(&errors),
            ["webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]
        );
    }

    #[test]
    fn policies_get_defaults_and_their_expressions_compiled() {
        let mut policy = object(json!({"metadata": {"name": "p"}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
            "validations": [
                {"expression": "variables.replicas <= int(params.data.max)",
                 "messageExpression": "'too many: ' + string(variables.replicas)"},
                {"expression": "variables.nope", "messageExpression": "1"}],
            "auditAnnotations": [{"key": "high", "valueExpression": "'x'"}]}}));
        default_policy(&mut policy);
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
        assert_eq!(
            policy["spec"]["matchConstraints"]["matchPolicy"],
            "Equivalent"
        );
        assert_eq!(
            policy["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
            "*"
        );
        let mut errors = Vec::new();
        validate_policy(&policy, None, &mut errors);
        assert_eq!(
            errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(),
            [
                "spec.validations[1].expression",
                "spec.validations[1].messageExpression"
            ],
            "{:?}",
            messages(&errors)
        );
        assert!(errors[0].detail.contains("undefined field 'nope'"));
        assert_eq!(
            errors[1].detail,
            "Invalid value: \"1\": must evaluate to string but got int"
        );
    }

    #[test]
    fn bindings_need_actions_and_one_param_reference() {
        let mut binding = object(json!({"spec": {"policyName": "p",
            "paramRef": {"name": "a", "selector": {}},
            "validationActions": ["Deny", "Warn", "Deny"]}}));
        default_binding(&mut binding);
        assert!(
            binding["spec"]["paramRef"]
                .get("parameterNotFoundAction")
                .is_none(),
            "v1 does not default it"
        );
        let mut errors = Vec::new();
        validate_binding(&binding, &mut errors);
        assert_eq!(
            messages(&errors),
            [
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction: Required value",
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
    }
}
