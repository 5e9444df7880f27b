//! What reconciling one bootstrap object with its stored copy takes, decided without I/O, as
//! upstream's `staging/src/k8s.io/component-helpers/auth/rbac/reconciliation`
//! (`reconcile_role.go` `computeReconciledRole`, `reconcile_rolebindings.go`
//! `computeReconciledRoleBinding`) decides it for the bootstrap hook: a union, never a
//! removal. Missing labels and annotations are added (the stored values win), missing rules
//! and subjects appended, missing aggregation selectors appended; an aggregation rule the
//! policy does not have is removed; a binding whose roleRef differs is replaced. An object
//! annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is left alone.

use serde_json::{Map, Value};

use crate::authz::rule::{PolicyRule, covers};
use crate::object::Object;

/// The annotation by which a stored object opts out of reconciliation (value `"false"`).
pub(crate) const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// What a stored object needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Nothing: it has everything the policy gives it.
    Keep,
    /// It opts out (autoupdate `"false"`) though it lacks something: upstream logs and skips.
    Protected,
    /// Store this object over it.
    Update(Object),
    /// Delete it and create this one (a binding whose roleRef changed: roleRef is immutable).
    Recreate(Object),
}

/// `computeReconciledRole` (union, no aggregation label prefixes removed) of a stored
/// ClusterRole or Role with the policy's `expected`.
pub(crate) fn role(existing: &Object, expected: &Object) -> Decision {
    // The common case, a role as the policy wrote it, without breaking its rules down.
    if metadata_holds(existing, expected)
        && set(existing, "rules") == set(expected, "rules")
        && aggregation_rule(existing) == aggregation_rule(expected)
    {
        return Decision::Keep;
    }
    let mut result = existing.clone();
    let mut changed = merge_metadata(&mut result, existing, expected);
    let (_, missing) = covers(
        &PolicyRule::list_from(existing.get("rules")),
        &PolicyRule::list_from(expected.get("rules")),
    );
    if !missing.is_empty() {
        let mut rules = match existing.get("rules") {
            Some(Value::Array(rules)) => rules.clone(),
            _ => Vec::new(),
        };
        rules.extend(missing.iter().map(PolicyRule::to_json));
        result.insert("rules".to_owned(), Value::Array(rules));
        changed = true;
    }
    let expected_rule = aggregation_rule(expected);
    let existing_rule = aggregation_rule(existing);
    match (expected_rule, existing_rule) {
        (None, Some(_)) => {
            result.shift_remove("aggregationRule");
            changed = true;
        }
        (Some(wanted), have) => {
            let have = have.map(selectors).unwrap_or_default();
            let missing: Vec<Value> = selectors(wanted)
                .into_iter()
                .filter(|selector| !have.iter().any(|h| same_selector(h, selector)))
                .cloned()
                .collect();
            if !missing.is_empty() {
                let rule = crate::object::child_object(&mut result, "aggregationRule");
                let mut all = match rule.get("clusterRoleSelectors") {
                    Some(Value::Array(selectors)) => selectors.clone(),
                    _ => Vec::new(),
                };
                all.extend(missing);
                rule.insert("clusterRoleSelectors".to_owned(), Value::Array(all));
                changed = true;
            }
        }
        (None, None) => {}
    }
    decide(existing, result, changed)
}

/// `computeReconciledRoleBinding` (union) of a stored ClusterRoleBinding or RoleBinding with
/// the policy's `expected`.
pub(crate) fn binding(existing: &Object, expected: &Object) -> Decision {
    if role_ref(existing) != role_ref(expected) {
        return if protected(existing) {
            Decision::Protected
        } else {
            Decision::Recreate(expected.clone())
        };
    }
    if metadata_holds(existing, expected) && set(existing, "subjects") == set(expected, "subjects")
    {
        return Decision::Keep;
    }
    let mut result = existing.clone();
    let mut changed = merge_metadata(&mut result, existing, expected);
    let have: Vec<Subject> = subjects(existing);
    let mut missing: Vec<Subject> = Vec::new();
    for subject in subjects(expected) {
        if !have.contains(&subject) && !missing.contains(&subject) {
            missing.push(subject);
        }
    }
    if !missing.is_empty() {
        let mut list = match existing.get("subjects") {
            Some(Value::Array(subjects)) => subjects.clone(),
            _ => Vec::new(),
        };
        list.extend(missing.iter().map(Subject::to_json));
        result.insert("subjects".to_owned(), Value::Array(list));
        changed = true;
    }
    decide(existing, result, changed)
}

/// Whether the stored object opts out of reconciliation.
pub(crate) fn protected(existing: &Object) -> bool {
    string_map(existing, "annotations")
        .and_then(|annotations| annotations.get(AUTOUPDATE))
        .and_then(Value::as_str)
        == Some("false")
}

fn decide(existing: &Object, result: Object, changed: bool) -> Decision {
    match (changed, protected(existing)) {
        (false, _) => Decision::Keep,
        (true, true) => Decision::Protected,
        (true, false) => Decision::Update(result),
    }
}

/// Merges the policy's labels and annotations into `result`'s (`merge(expected, existing)`:
/// the stored values win, none is removed); whether that changed them.
fn merge_metadata(result: &mut Object, existing: &Object, expected: &Object) -> bool {
    let mut changed = false;
    for field in ["annotations", "labels"] {
        let mut merged: Map<String, Value> =
            string_map(expected, field).cloned().unwrap_or_default();
        for (key, value) in string_map(existing, field).into_iter().flatten() {
            merged.insert(key.clone(), value.clone());
        }
        // Go's encoder writes a map's keys sorted; an empty map is no map (`omitempty`).
        merged.sort_keys();
        let before = string_map(existing, field).cloned().unwrap_or_default();
        if merged != before {
            changed = true;
            let metadata = crate::object::metadata_mut(result);
            if merged.is_empty() {
                metadata.shift_remove(field);
            } else {
                metadata.insert(field.to_owned(), Value::Object(merged));
            }
        }
    }
    changed
}

/// Whether the stored labels and annotations already hold every one of the policy's, with
/// its value (then merging them changes nothing).
fn metadata_holds(existing: &Object, expected: &Object) -> bool {
    ["annotations", "labels"].iter().all(|field| {
        let have = string_map(existing, field);
        string_map(expected, field)
            .into_iter()
            .flatten()
            .all(|(key, value)| have.and_then(|h| h.get(key)) == Some(value))
    })
}

fn string_map<'a>(object: &'a Object, field: &str) -> Option<&'a Map<String, Value>> {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
}

/// A field that is present and not null.
fn set<'a>(object: &'a Object, field: &str) -> Option<&'a Value> {
    object.get(field).filter(|value| !value.is_null())
}

fn aggregation_rule(object: &Object) -> Option<&Value> {
    set(object, "aggregationRule")
}

fn selectors(rule: &Value) -> Vec<&Value> {
    rule.get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .map(|selectors| selectors.iter().collect())
        .unwrap_or_default()
}

/// `equality.Semantic.DeepEqual` of two label selectors: absent, null and empty lists and
/// maps are alike.
fn same_selector(a: &Value, b: &Value) -> bool {
    fn labels(selector: &Value) -> Map<String, Value> {
        let mut labels = selector
            .get("matchLabels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        labels.sort_keys();
        labels
    }
    fn expressions(selector: &Value) -> Vec<(Value, Value, Vec<Value>)> {
        selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| {
                let field = |name: &str| e.get(name).cloned().unwrap_or(Value::Null);
                let values = e
                    .get("values")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                (field("key"), field("operator"), values)
            })
            .collect()
    }
    labels(a) == labels(b) && expressions(a) == expressions(b)
}

/// A binding's roleRef as compared (`RoleRef` is a struct of strings; absent is empty).
fn role_ref(binding: &Object) -> [String; 3] {
    let field = |name: &str| {
        binding
            .get("roleRef")
            .and_then(|r| r.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    [field("apiGroup"), field("kind"), field("name")]
}

/// A `Subject` as compared (a struct of strings; absent is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    kind: String,
    api_group: String,
    name: String,
    namespace: String,
}

impl Subject {
    /// As Go's encoder writes it: `kind` and `name` always, the others when not empty.
    fn to_json(&self) -> Value {
        let mut subject = Map::new();
        subject.insert("kind".to_owned(), Value::String(self.kind.clone()));
        if !self.api_group.is_empty() {
            subject.insert("apiGroup".to_owned(), Value::String(self.api_group.clone()));
        }
        subject.insert("name".to_owned(), Value::String(self.name.clone()));
        if !self.namespace.is_empty() {
            subject.insert(
                "namespace".to_owned(),
                Value::String(self.namespace.clone()),
            );
        }
        Value::Object(subject)
    }
}

fn subjects(binding: &Object) -> Vec<Subject> {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            let field = |name: &str| s.get(name).and_then(Value::as_str).unwrap_or("").to_owned();
            Subject {
                kind: field("kind"),
                api_group: field("apiGroup"),
                name: field("name"),
                namespace: field("namespace"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(object) => object,
            _ => panic!("an object"),
        }
    }

    fn view() -> Object {
        object(json!({
            "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "system:aggregate-to-view",
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults",
                                    "rbac.authorization.k8s.io/aggregate-to-view": "true"},
                         "annotations": {AUTOUPDATE: "true"}},
            "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""],
                       "resources": ["configmaps", "pods"]}],
        }))
    }

    #[test]
    fn an_identical_role_is_kept() {
        assert_eq!(role(&view(), &view()), Decision::Keep);
        // Extra rules, labels and annotations of the stored role stay without a write.
        let mut stored = view();
        stored["rules"]
            .as_array_mut()
            .expect("rules")
            .push(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}));
        stored["metadata"]["labels"]["team"] = json!("a");
        assert_eq!(role(&stored, &view()), Decision::Keep);
    }

    #[test]
    fn a_role_missing_a_rule_gets_the_missing_pieces_appended() {
        let mut stored = view();
        stored["rules"] = json!([
            {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"]},
            {"verbs": ["delete"], "apiGroups": [""], "resources": ["secrets"]},
        ]);
        let Decision::Update(repaired) = role(&stored, &view()) else {
            panic!("an update")
        };
        assert_eq!(
            repaired["rules"],
            json!([
                {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"]},
                {"verbs": ["delete"], "apiGroups": [""], "resources": ["secrets"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["watch"], "apiGroups": [""], "resources": ["pods"]},
            ])
        );
    }

    #[test]
    fn missing_labels_and_annotations_are_added_and_stored_values_win() {
        let mut stored = view();
        stored["metadata"] = json!({"name": "system:aggregate-to-view",
                                    "labels": {"kubernetes.io/bootstrapping": "mine", "z": "1"}});
        let Decision::Update(repaired) = role(&stored, &view()) else {
            panic!("an update")
        };
        assert_eq!(
            repaired["metadata"]["labels"],
            json!({"kubernetes.io/bootstrapping": "mine",
                   "rbac.authorization.k8s.io/aggregate-to-view": "true", "z": "1"})
        );
        assert_eq!(
            repaired["metadata"]["annotations"],
            json!({AUTOUPDATE: "true"})
        );
    }

    #[test]
    fn autoupdate_false_protects_a_role_that_lacks_something() {
        let mut stored = view();
        stored["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert_eq!(role(&stored, &view()), Decision::Keep);
        stored["rules"] = json!([]);
        assert_eq!(role(&stored, &view()), Decision::Protected);
    }

    #[test]
    fn aggregation_selectors_are_added_and_an_unexpected_aggregation_removed() {
        let admin = object(json!({
            "metadata": {"name": "admin"},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]},
            "rules": null,
        }));
        // The stored role aggregates by another selector too (kept), and is filled.
        let stored = object(json!({
            "metadata": {"name": "admin"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"mine": "true"}}]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        }));
        let Decision::Update(repaired) = role(&stored, &admin) else {
            panic!("an update")
        };
        assert_eq!(
            repaired["aggregationRule"],
            json!({"clusterRoleSelectors": [
                {"matchLabels": {"mine": "true"}},
                {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]})
        );
        // Its rules stay: the aggregation controller owns them.
        assert_eq!(repaired["rules"], stored["rules"]);
        // Equal selectors, written differently, are the same selector.
        let same = object(json!({
            "metadata": {"name": "admin"},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"},
                 "matchExpressions": []}]},
        }));
        assert_eq!(role(&same, &admin), Decision::Keep);
        // A role the policy does not aggregate loses a stored aggregation rule.
        let mut aggregated_view = view();
        aggregated_view.insert(
            "aggregationRule".to_owned(),
            json!({"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}),
        );
        let Decision::Update(repaired) = role(&aggregated_view, &view()) else {
            panic!("an update")
        };
        assert!(!repaired.contains_key("aggregationRule"));
    }

    fn discovery() -> Object {
        object(json!({
            "metadata": {"name": "system:discovery",
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                         "annotations": {AUTOUPDATE: "true"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:discovery"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                          "name": "system:authenticated"}],
        }))
    }

    #[test]
    fn bindings_get_missing_subjects_and_keep_extra_ones() {
        assert_eq!(binding(&discovery(), &discovery()), Decision::Keep);
        let mut stored = discovery();
        stored["subjects"] = json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                                     "name": "alice"}]);
        let Decision::Update(repaired) = binding(&stored, &discovery()) else {
            panic!("an update")
        };
        assert_eq!(
            repaired["subjects"],
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                   {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                    "name": "system:authenticated"}])
        );
    }

    #[test]
    fn a_binding_to_another_role_is_recreated_unless_protected() {
        let mut stored = discovery();
        stored["roleRef"]["name"] = json!("cluster-admin");
        assert_eq!(
            binding(&stored, &discovery()),
            Decision::Recreate(discovery())
        );
        stored["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert_eq!(binding(&stored, &discovery()), Decision::Protected);
    }
}
