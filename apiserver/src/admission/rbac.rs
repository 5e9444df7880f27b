//! Roles, ClusterRoles, RoleBindings and ClusterRoleBindings: the defaults of
//! `pkg/apis/rbac/v1/defaults.go` (a binding's `roleRef.apiGroup`, a User or Group subject's
//! `apiGroup`) and the validation of `pkg/apis/rbac/validation/validation.go` (rules with verbs
//! and either resources or non-resource URLs, aggregation selectors, role references and
//! subjects, a binding's `roleRef` unchangeable), so that what the authorizer reads is what
//! upstream would have stored. Names are path segments (`ValidateRBACName`), checked with the
//! other metadata rules (`NameRule::PathSegment`).

use kubemock_apimachinery::labels::Selector;
use kubemock_apimachinery::validation;
use serde_json::{Map, Value, json};

use super::fields::{forbidden, go_str, go_string_slice, invalid, not_supported, required};
use crate::meta::FieldError;
use crate::object::Object;

/// The RBAC API group (`rbac.GroupName`), the only group a role reference may name.
const GROUP: &str = "rbac.authorization.k8s.io";

/// The subject kinds (`rbac.ServiceAccountKind`, `UserKind`, `GroupKind`).
const SUBJECT_KINDS: [&str; 3] = ["ServiceAccount", "User", "Group"];

/// `Subject`'s fields in Go's order, which is the order upstream's JSON lists them in.
const SUBJECT_ORDER: [&str; 4] = ["kind", "apiGroup", "name", "namespace"];

/// `RoleRef`'s fields in Go's order.
const ROLE_REF_ORDER: [&str; 3] = ["apiGroup", "kind", "name"];

/// Which of the four kinds an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    fn namespaced(self) -> bool {
        matches!(self, Kind::Role | Kind::RoleBinding)
    }

    fn binding(self) -> bool {
        matches!(self, Kind::RoleBinding | Kind::ClusterRoleBinding)
    }
}

/// `SetDefaults_RoleBinding`, `SetDefaults_ClusterRoleBinding` and `SetDefaults_Subject`: an
/// empty `roleRef.apiGroup` is the RBAC group, as is a User's or Group's `apiGroup`. The
/// fields keep Go's order.
pub(super) fn default(kind: Kind, object: &mut Object) {
    if !kind.binding() {
        return;
    }
    if let Some(Value::Object(role_ref)) = object.get_mut("roleRef") {
        if is_empty(role_ref.get("apiGroup")) {
            role_ref.insert("apiGroup".to_owned(), json!(GROUP));
            in_go_order(role_ref, &ROLE_REF_ORDER);
        }
    }
    if let Some(Value::Array(subjects)) = object.get_mut("subjects") {
        for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let user_or_group = matches!(
                subject.get("kind").and_then(Value::as_str),
                Some("User" | "Group")
            );
            if user_or_group && is_empty(subject.get("apiGroup")) {
                subject.insert("apiGroup".to_owned(), json!(GROUP));
                in_go_order(subject, &SUBJECT_ORDER);
            }
        }
    }
}

/// An absent, null or empty string field: Go's zero value.
fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(_) => false,
    }
}

/// Reorders `map`'s fields: those of `order` first, in that order, then the rest as they were.
fn in_go_order(map: &mut Map<String, Value>, order: &[&str]) {
    let mut ordered = Map::new();
    for field in order {
        if let Some(value) = map.remove(*field) {
            ordered.insert((*field).to_owned(), value);
        }
    }
    ordered.append(map);
    *map = ordered;
}

/// `ValidateRole`, `ValidateClusterRole`, `ValidateRoleBinding`, `ValidateClusterRoleBinding`
/// (their metadata rules are the generic ones).
pub(super) fn validate(kind: Kind, object: &Object, errors: &mut Vec<FieldError>) {
    if kind.binding() {
        validate_binding(kind, object, errors);
        return;
    }
    for (i, rule) in array(object.get("rules")).iter().enumerate() {
        validate_rule(rule, kind.namespaced(), &format!("rules[{i}]"), errors);
    }
    if kind == Kind::ClusterRole {
        validate_aggregation(object.get("aggregationRule"), errors);
    }
}

/// `ValidateRoleBindingUpdate`, `ValidateClusterRoleBindingUpdate`: a binding's `roleRef` never
/// changes (a different role means a new binding, as `kubectl auth reconcile` recreates it).
pub(super) fn validate_update(
    kind: Kind,
    existing: &Object,
    object: &Object,
    errors: &mut Vec<FieldError>,
) {
    if !kind.binding() {
        return;
    }
    let (old, new) = (role_ref(existing), role_ref(object));
    if old != new {
        errors.push(invalid(
            "roleRef",
            format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                go_str(new.0),
                go_str(new.1),
                go_str(new.2)
            ),
            "cannot change roleRef",
        ));
    }
}

/// A binding's `roleRef` as (apiGroup, kind, name), empty strings for what is missing.
fn role_ref(object: &Object) -> (&str, &str, &str) {
    let role_ref = object.get("roleRef");
    let text = |field: &str| {
        role_ref
            .and_then(|r| r.get(field))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    (text("apiGroup"), text("kind"), text("name"))
}

/// The items of a JSON array (none for anything else).
fn array(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Whether a list field of `rule` has items.
fn has_items(rule: &Value, field: &str) -> bool {
    !array(rule.get(field)).is_empty()
}

/// `ValidatePolicyRule`.
fn validate_rule(rule: &Value, namespaced: bool, path: &str, errors: &mut Vec<FieldError>) {
    if !has_items(rule, "verbs") {
        errors.push(required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if has_items(rule, "nonResourceURLs") {
        let urls = go_string_slice(rule.get("nonResourceURLs"));
        if namespaced {
            errors.push(invalid(
                format!("{path}.nonResourceURLs"),
                urls.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if has_items(rule, "apiGroups")
            || has_items(rule, "resources")
            || has_items(rule, "resourceNames")
        {
            errors.push(invalid(
                format!("{path}.nonResourceURLs"),
                urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if !has_items(rule, "apiGroups") {
        errors.push(required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if !has_items(rule, "resources") {
        errors.push(required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// A ClusterRole's `aggregationRule`: at least one selector, each valid
/// (`ValidateLabelSelector`) and convertible to a selector (`LabelSelectorAsSelector`).
fn validate_aggregation(rule: Option<&Value>, errors: &mut Vec<FieldError>) {
    let Some(rule) = rule.filter(|r| !r.is_null()) else {
        return;
    };
    let selectors = array(rule.get("clusterRoleSelectors"));
    if selectors.is_empty() {
        errors.push(required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let path = format!("aggregationRule.clusterRoleSelectors[{i}]");
        validate_label_selector(selector, &path, errors);
        if Selector::from_label_selector_json(selector).is_err() {
            // Upstream quotes the selector the failed conversion returned: nil.
            errors.push(invalid(path, go_str("null"), "invalid label selector."));
        }
    }
}

/// `ValidateLabelSelector` (`apimachinery/pkg/apis/meta/v1/validation`), without its options.
pub(super) fn validate_label_selector(selector: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(Value::Object(labels)) = selector.get("matchLabels") {
        let labels_path = format!("{path}.matchLabels");
        for (key, value) in labels {
            label_name_errors(key, &labels_path, errors);
            let value = value.as_str().unwrap_or("");
            for message in validation::is_valid_label_value(value) {
                errors.push(invalid(labels_path.clone(), go_str(value), &message));
            }
        }
    }
    for (i, requirement) in array(selector.get("matchExpressions")).iter().enumerate() {
        let path = format!("{path}.matchExpressions[{i}]");
        let values = array(requirement.get("values"));
        let operator = requirement
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or("");
        match operator {
            "In" | "NotIn" if values.is_empty() => errors.push(required(
                format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(forbidden(
                format!("{path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(invalid(
                format!("{path}.operator"),
                go_str(other),
                "not a valid selector operator",
            )),
        }
        let key = requirement.get("key").and_then(Value::as_str).unwrap_or("");
        label_name_errors(key, &format!("{path}.key"), errors);
        for (j, value) in values.iter().enumerate() {
            let value = value.as_str().unwrap_or("");
            for message in validation::is_valid_label_value(value) {
                errors.push(invalid(
                    format!("{path}.values[{j}]"),
                    go_str(value),
                    &message,
                ));
            }
        }
    }
}

/// `ValidateLabelName`.
fn label_name_errors(name: &str, path: &str, errors: &mut Vec<FieldError>) {
    for message in validation::is_qualified_name(name) {
        errors.push(invalid(path, go_str(name), &message));
    }
}

/// `ValidateRoleBinding`, `ValidateClusterRoleBinding`.
fn validate_binding(kind: Kind, object: &Object, errors: &mut Vec<FieldError>) {
    let (api_group, ref_kind, name) = role_ref(object);
    if api_group != GROUP {
        errors.push(not_supported("roleRef.apiGroup", api_group, &[GROUP]));
    }
    let kinds: &[&str] = if kind == Kind::RoleBinding {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&ref_kind) {
        errors.push(not_supported("roleRef.kind", ref_kind, kinds));
    }
    if name.is_empty() {
        errors.push(required("roleRef.name", ""));
    } else {
        for message in validation::is_valid_path_segment_name(name) {
            errors.push(invalid("roleRef.name", go_str(name), &message));
        }
    }
    for (i, subject) in array(object.get("subjects")).iter().enumerate() {
        validate_subject(
            subject,
            kind.namespaced(),
            &format!("subjects[{i}]"),
            errors,
        );
    }
}

/// `ValidateRoleBindingSubject`.
fn validate_subject(subject: &Value, namespaced: bool, path: &str, errors: &mut Vec<FieldError>) {
    let text = |field: &str| subject.get(field).and_then(Value::as_str).unwrap_or("");
    let name = text("name");
    if name.is_empty() {
        errors.push(required(format!("{path}.name"), ""));
    }
    let api_group = text("apiGroup");
    match text("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                // `ValidateServiceAccountName`: a DNS-1123 subdomain.
                for message in validation::is_dns1123_subdomain(name) {
                    errors.push(invalid(format!("{path}.name"), go_str(name), &message));
                }
            }
            if !api_group.is_empty() {
                errors.push(not_supported(format!("{path}.apiGroup"), api_group, &[""]));
            }
            if !namespaced && text("namespace").is_empty() {
                errors.push(required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errors.push(not_supported(
                    format!("{path}.apiGroup"),
                    api_group,
                    &[GROUP],
                ));
            }
        }
        other => errors.push(not_supported(format!("{path}.kind"), other, &SUBJECT_KINDS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("a test object"),
        }
    }

    /// Each error as the 422's message words it: `field: detail`.
    fn worded(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    fn messages(kind: Kind, value: Value) -> Vec<String> {
        let mut errors = Vec::new();
        validate(kind, &object(value), &mut errors);
        worded(&errors)
    }

    #[test]
    fn rules_need_verbs_and_resources_or_urls_as_validate_policy_rule_says() {
        assert_eq!(
            messages(Kind::Role, json!({"rules": [{}]})),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
            ]
        );
        assert_eq!(
            messages(
                Kind::Role,
                json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]}]})
            ),
            [
                r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#,
                r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs"#,
            ]
        );
        assert!(
            messages(
                Kind::ClusterRole,
                json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
                                 {"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}]})
            )
            .is_empty()
        );
    }

    #[test]
    fn aggregation_rules_need_valid_selectors() {
        assert_eq!(
            messages(Kind::ClusterRole, json!({"aggregationRule": {}})),
            [
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
            ]
        );
        assert_eq!(
            messages(
                Kind::ClusterRole,
                json!({"aggregationRule": {"clusterRoleSelectors": [
                    {"matchExpressions": [{"key": "a", "operator": "In"}]}
                ]}})
            ),
            [
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                r#"aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": invalid label selector."#,
            ]
        );
        assert!(
            messages(
                Kind::ClusterRole,
                json!({"aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}}
                ]}})
            )
            .is_empty()
        );
    }

    #[test]
    fn bindings_reference_a_role_of_the_rbac_group_and_valid_subjects() {
        assert_eq!(
            messages(
                Kind::ClusterRoleBinding,
                json!({"roleRef": {"apiGroup": "x", "kind": "Role", "name": ""},
                       "subjects": [{"kind": "ServiceAccount", "name": "Bad_Name"},
                                    {"kind": "User", "name": "alice", "apiGroup": ""},
                                    {"kind": "Robot", "name": "r2"}]})
            ),
            [
                r#"roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io""#,
                r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
                "roleRef.name: Required value",
                r#"subjects[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                "subjects[0].namespace: Required value",
                r#"subjects[1].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io""#,
                r#"subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
            ]
        );
        assert!(
            messages(
                Kind::RoleBinding,
                json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "system:basic-user"},
                       "subjects": [{"kind": "ServiceAccount", "name": "default"}]})
            )
            .is_empty()
        );
    }

    #[test]
    fn defaults_fill_the_rbac_group_in_go_order() {
        let mut binding = object(json!({
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]
        }));
        default(Kind::RoleBinding, &mut binding);
        assert_eq!(
            Value::Object(binding).to_string(),
            json!({
                "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "alice"},
                             {"kind": "ServiceAccount", "name": "sa"}]
            })
            .to_string()
        );
    }

    #[test]
    fn a_bindings_role_ref_cannot_change() {
        let old = object(json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "a"}}));
        let new = object(json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "b"}}));
        let mut errors = Vec::new();
        validate_update(Kind::RoleBinding, &old, &new, &mut errors);
        assert_eq!(
            worded(&errors),
            [
                r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"b"}: cannot change roleRef"#
            ]
        );
        errors.clear();
        validate_update(Kind::RoleBinding, &old, &old, &mut errors);
        assert!(errors.is_empty());
    }
}
