//! Whether one set of RBAC rules allows everything another allows, as upstream's
//! `staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go` decides
//! it (`Covers`): the servant's rules are broken down into rules of one API group, one
//! resource, one verb and at most one resource name (or one non-resource URL and one verb),
//! and each of those must be allowed by a single owner rule. The pieces no owner rule allows
//! are what reconciliation adds to a bootstrap role that lost them.

use serde_json::{Map, Value};

/// `*` in a rule's verbs, API groups or resources: all of them.
const ALL: &str = "*";

/// A `PolicyRule`, its lists read from JSON (an absent or null list is empty, as Go decodes
/// it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) verbs: Vec<String>,
    pub(crate) api_groups: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) resource_names: Vec<String>,
    pub(crate) non_resource_urls: Vec<String>,
}

impl Rule {
    /// The rule a JSON `PolicyRule` is (what is not a string list counts as empty).
    pub(crate) fn from_json(rule: &Value) -> Rule {
        let list = |field: &str| -> Vec<String> {
            rule.get(field)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        Rule {
            verbs: list("verbs"),
            api_groups: list("apiGroups"),
            resources: list("resources"),
            resource_names: list("resourceNames"),
            non_resource_urls: list("nonResourceURLs"),
        }
    }

    /// The rules of a JSON list of `PolicyRule`s (null or absent: none).
    pub(crate) fn list_from_json(rules: Option<&Value>) -> Vec<Rule> {
        rules
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Rule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule as Go's encoder writes a `PolicyRule`: `verbs` always, the other lists only
    /// when not empty (`omitempty`), in the struct's order.
    pub(crate) fn to_json(&self) -> Value {
        let mut rule = Map::new();
        let mut put = |field: &str, items: &[String], always: bool| {
            if always || !items.is_empty() {
                rule.insert(
                    field.to_owned(),
                    Value::Array(items.iter().cloned().map(Value::String).collect()),
                );
            }
        };
        put("verbs", &self.verbs, true);
        put("apiGroups", &self.api_groups, false);
        put("resources", &self.resources, false);
        put("resourceNames", &self.resource_names, false);
        put("nonResourceURLs", &self.non_resource_urls, false);
        Value::Object(rule)
    }
}

/// The pieces of `servant`'s rules that no rule of `owner` allows (upstream's `Covers`, whose
/// first result is this list being empty), in the order of the breakdown.
pub(crate) fn uncovered(owner: &[Rule], servant: &[Rule]) -> Vec<Rule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|piece| !owner.iter().any(|rule| rule_covers(rule, piece)))
        .collect()
}

/// `BreakdownRule`: the rule as rules of one group, one resource, one verb and at most one
/// resource name each (group, then resource, then verb, then name), then its non-resource
/// URLs with each verb.
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let one = |item: &String| vec![item.clone()];
    let mut pieces = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let piece = |names: Vec<String>| Rule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    resource_names: names,
                    non_resource_urls: Vec::new(),
                };
                if rule.resource_names.is_empty() {
                    pieces.push(piece(Vec::new()));
                } else {
                    pieces.extend(rule.resource_names.iter().map(|name| piece(one(name))));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            pieces.push(Rule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Rule::default()
            });
        }
    }
    pieces
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|item| has(set, item))
}

/// `resourceCoversAll`: `*`, every resource by name, or each subresource by `*/sub`.
fn resources_cover(set: &[String], resources: &[String]) -> bool {
    if has(set, ALL) || has_all(set, resources) {
        return true;
    }
    resources.iter().all(|resource| {
        has(set, resource)
            || resource
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

/// `nonResourceURLCovers`: the same path, or a prefix ending in `*`.
fn url_covers(owner: &str, path: &str) -> bool {
    owner == path
        || owner
            .strip_suffix('*')
            .is_some_and(|_| path.starts_with(owner.trim_end_matches('*')))
}

/// `ruleCovers`: whether `owner` allows the broken-down `piece`.
fn rule_covers(owner: &Rule, piece: &Rule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &piece.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &piece.api_groups);
    let resources = resources_cover(&owner.resources, &piece.resources);
    let urls = piece
        .non_resource_urls
        .iter()
        .all(|path| owner.non_resource_urls.iter().any(|o| url_covers(o, path)));
    let names = if piece.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &piece.resource_names)
    };
    verbs && groups && resources && names && urls
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(value: Value) -> Vec<Rule> {
        Rule::list_from_json(Some(&value))
    }

    fn pieces(owner: Value, servant: Value) -> Value {
        Value::Array(
            uncovered(&rules(owner), &rules(servant))
                .iter()
                .map(Rule::to_json)
                .collect(),
        )
    }

    #[test]
    fn a_rule_covers_itself_and_what_stars_allow() {
        let rule = json!([{"verbs": ["get", "list"], "apiGroups": ["", "apps"],
                           "resources": ["pods", "deployments"]}]);
        assert_eq!(pieces(rule.clone(), rule.clone()), json!([]));
        let star = json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                          {"verbs": ["*"], "nonResourceURLs": ["*"]}]);
        assert_eq!(pieces(star.clone(), rule), json!([]));
        let urls = json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/v1"]}]);
        assert_eq!(pieces(star, urls), json!([]));
    }

    #[test]
    fn what_is_not_covered_comes_back_broken_down_in_order() {
        let owner = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
        let servant = json!([{"verbs": ["get", "watch"], "apiGroups": ["", "apps"],
                              "resources": ["pods"]}]);
        assert_eq!(
            pieces(owner, servant),
            json!([
                {"verbs": ["watch"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]},
                {"verbs": ["watch"], "apiGroups": ["apps"], "resources": ["pods"]},
            ])
        );
    }

    #[test]
    fn subresources_are_covered_by_their_star_form_only() {
        let owner = json!([{"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]}]);
        let scale = json!([{"verbs": ["get"], "apiGroups": ["apps"],
                            "resources": ["deployments/scale"]}]);
        assert_eq!(pieces(owner.clone(), scale), json!([]));
        let plain =
            json!([{"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]}]);
        assert_eq!(pieces(owner, plain.clone()), plain);
    }

    #[test]
    fn resource_names_narrow_a_rule() {
        let named = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                            "resourceNames": ["a", "b"]}]);
        let all = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]);
        // An unnamed owner rule allows every name; a named one never allows them all.
        assert_eq!(pieces(all.clone(), named.clone()), json!([]));
        assert_eq!(pieces(named.clone(), all.clone()), all);
        let one = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                          "resourceNames": ["a"]}]);
        assert_eq!(
            pieces(one, named),
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": ["b"]}])
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_a_star_prefix() {
        let owner = json!([{"verbs": ["get"], "nonResourceURLs": ["/api/*", "/version"]}]);
        let servant = json!([{"verbs": ["get"],
                              "nonResourceURLs": ["/api/v1", "/version", "/version/", "/apis"]}]);
        assert_eq!(
            pieces(owner, servant),
            json!([{"verbs": ["get"], "nonResourceURLs": ["/version/"]},
                   {"verbs": ["get"], "nonResourceURLs": ["/apis"]}])
        );
        // A resource rule never allows a URL, nor a URL rule a resource.
        let resource = json!([{"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}]);
        let url = json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]);
        assert_eq!(pieces(resource.clone(), url.clone()), url);
        assert_eq!(
            pieces(url, resource),
            json!([{"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}])
        );
    }

    #[test]
    fn absent_and_null_lists_are_empty() {
        assert!(Rule::list_from_json(None).is_empty());
        assert!(Rule::list_from_json(Some(&Value::Null)).is_empty());
        let rule = Rule::from_json(&json!({"verbs": ["get"], "resources": null}));
        assert!(rule.resources.is_empty());
        assert_eq!(rule.to_json(), json!({"verbs": ["get"]}));
    }
}
