//! The rules an aggregated ClusterRole should hold, decided without I/O as upstream's
//! `pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`
//! (`syncClusterRole`) decides them: for each of its `clusterRoleSelectors` in order, the
//! ClusterRoles that selector matches, sorted by name and without the role itself, contribute
//! their rules in order, each rule once (rules are compared as `equality.Semantic` compares
//! them: an absent list is an empty one).

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kubemock_apimachinery::labels::Selector;

use crate::error::{Error, Result};

/// The rules `role` aggregates from `roles` (every cached ClusterRole), or `None` when it
/// has no aggregation rule. A selector that cannot be read fails the whole role, as upstream.
pub(crate) fn aggregated_rules(
    role: &ClusterRole,
    roles: &[Arc<ClusterRole>],
) -> Result<Option<Vec<PolicyRule>>> {
    let Some(rule) = &role.aggregation_rule else {
        return Ok(None);
    };
    let name = role.metadata.name.as_deref().unwrap_or("");
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in rule.cluster_role_selectors.iter().flatten() {
        let selector =
            Selector::from_label_selector(selector).map_err(|message| Error::InvalidSelector {
                role: name.to_owned(),
                message,
            })?;
        let empty = Default::default();
        let mut matching: Vec<&Arc<ClusterRole>> = roles
            .iter()
            .filter(|r| selector.matches(r.metadata.labels.as_ref().unwrap_or(&empty)))
            .collect();
        matching.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for other in matching {
            if other.metadata.name.as_deref() == Some(name) {
                continue;
            }
            for rule in other.rules.iter().flatten() {
                if !rules.iter().any(|r| same_rule(r, rule)) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Ok(Some(rules))
}

/// Whether `current` (a role's rules; absent is none) already is `wanted`, rule by rule.
pub(crate) fn same_rules(current: Option<&Vec<PolicyRule>>, wanted: &[PolicyRule]) -> bool {
    let current = current.map(Vec::as_slice).unwrap_or_default();
    current.len() == wanted.len() && current.iter().zip(wanted).all(|(a, b)| same_rule(a, b))
}

/// `equality.Semantic.DeepEqual` of two rules: an absent list equals an empty one.
fn same_rule(a: &PolicyRule, b: &PolicyRule) -> bool {
    fn list(items: Option<&Vec<String>>) -> &[String] {
        items.map(Vec::as_slice).unwrap_or_default()
    }
    a.verbs == b.verbs
        && list(a.api_groups.as_ref()) == list(b.api_groups.as_ref())
        && list(a.resources.as_ref()) == list(b.resources.as_ref())
        && list(a.resource_names.as_ref()) == list(b.resource_names.as_ref())
        && list(a.non_resource_urls.as_ref()) == list(b.non_resource_urls.as_ref())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn role(value: Value) -> Arc<ClusterRole> {
        Arc::new(serde_json::from_value(value).expect("a ClusterRole"))
    }

    fn rule(verb: &str, resource: &str) -> Value {
        json!({"verbs": [verb], "apiGroups": [""], "resources": [resource]})
    }

    fn rules_of(rules: &[PolicyRule]) -> Value {
        serde_json::to_value(rules).expect("rules")
    }

    /// `admin`, `edit` and `view` as the policy chains them, and two roles of a user.
    fn cluster() -> Vec<Arc<ClusterRole>> {
        vec![
            role(json!({"metadata": {"name": "admin"},
                "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]}})),
            role(json!({"metadata": {"name": "edit",
                "labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
                "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]},
                "rules": [rule("get", "pods"), rule("create", "pods")]})),
            role(json!({"metadata": {"name": "system:aggregate-to-admin",
                "labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
                "rules": [rule("create", "roles"), rule("get", "pods")]})),
            role(json!({"metadata": {"name": "b-user",
                "labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
                "rules": [rule("get", "widgets")]})),
            role(json!({"metadata": {"name": "unrelated"}, "rules": [rule("get", "nodes")]})),
        ]
    }

    #[test]
    fn rules_come_from_matching_roles_by_name_each_once() {
        let roles = cluster();
        let admin = aggregated_rules(&roles[0], &roles)
            .expect("valid")
            .expect("aggregated");
        // b-user, edit, system:aggregate-to-admin: by name; `get pods` only once.
        assert_eq!(
            rules_of(&admin),
            json!([
                rule("get", "widgets"),
                rule("get", "pods"),
                rule("create", "pods"),
                rule("create", "roles")
            ])
        );
        assert!(
            aggregated_rules(&roles[4], &roles)
                .expect("valid")
                .is_none()
        );
    }

    #[test]
    fn selectors_contribute_in_order_and_a_role_never_aggregates_itself() {
        let mut roles = cluster();
        roles.push(role(json!({"metadata": {"name": "both",
            "labels": {"x": "1", "rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchExpressions": [{"key": "rbac.authorization.k8s.io/aggregate-to-admin",
                                       "operator": "DoesNotExist"}]},
                {"matchExpressions": [{"key": "rbac.authorization.k8s.io/aggregate-to-admin",
                                       "operator": "Exists"}]}]},
            "rules": [rule("delete", "everything")]})));
        let both = roles.last().expect("both").clone();
        let rules = aggregated_rules(&both, &roles)
            .expect("valid")
            .expect("aggregated");
        // The first selector: admin (no rules), unrelated; the second: b-user, edit,
        // system:aggregate-to-admin (not `both` itself).
        assert_eq!(
            rules_of(&rules),
            json!([
                rule("get", "nodes"),
                rule("get", "widgets"),
                rule("get", "pods"),
                rule("create", "pods"),
                rule("create", "roles")
            ])
        );
    }

    #[test]
    fn an_empty_aggregation_gives_no_rules_and_a_bad_selector_fails() {
        let lonely = role(json!({"metadata": {"name": "lonely"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"none": "here"}}]}}));
        let rules = aggregated_rules(&lonely, &cluster())
            .expect("valid")
            .expect("aggregated");
        assert!(rules.is_empty());
        assert!(same_rules(None, &rules));
        let bad = role(json!({"metadata": {"name": "bad"},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchExpressions": [{"key": "a", "operator": "Sideways"}]}]}}));
        let err = aggregated_rules(&bad, &cluster()).expect_err("invalid");
        assert!(err.to_string().contains("cluster role bad"), "{err}");
    }

    #[test]
    fn rules_compare_as_upstream_semantics_do() {
        let plain: PolicyRule = serde_json::from_value(json!({"verbs": ["get"]})).expect("rule");
        let empty_lists: PolicyRule =
            serde_json::from_value(json!({"verbs": ["get"], "apiGroups": [], "resources": []}))
                .expect("rule");
        assert!(same_rules(Some(&vec![plain.clone()]), &[empty_lists]));
        let other: PolicyRule = serde_json::from_value(json!({"verbs": ["list"]})).expect("rule");
        assert!(!same_rules(Some(&vec![plain.clone()]), &[other]));
        assert!(!same_rules(
            Some(&vec![plain.clone(), plain.clone()]),
            &[plain]
        ));
    }
}
