//! RBAC policy rules: whether one allows a request (`plugin/pkg/auth/authorizer/rbac/rbac.go`,
//! `RuleAllows`, with `pkg/apis/rbac/v1/evaluation_helpers.go`), whether a set of rules
//! covers another (`staging/src/k8s.io/component-helpers/auth/rbac/validation/
//! policy_comparator.go`, what escalation prevention asks), and how missing rules are listed in
//! a refusal (`pkg/registry/rbac/validation/policy_compact.go`, `CompactString`). Pure
//! functions over data, so that upstream's test tables run against them as they are.

use kubemock_apimachinery::go;
use serde_json::{Map, Value, json};

use super::Attributes;

/// `*` in verbs, API groups, resources and non-resource URLs (`rbacv1.VerbAll`,
/// `APIGroupAll`, `ResourceAll`, `NonResourceAll`).
const ALL: &str = "*";

/// An `rbac.authorization.k8s.io/v1` `PolicyRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyRule {
    /// `verbs`.
    pub(crate) verbs: Vec<String>,
    /// `apiGroups`.
    pub(crate) api_groups: Vec<String>,
    /// `resources`, `resource/subresource` or `*/subresource`.
    pub(crate) resources: Vec<String>,
    /// `resourceNames`; none allows every name.
    pub(crate) resource_names: Vec<String>,
    /// `nonResourceURLs`, a trailing `*` matching any suffix.
    pub(crate) non_resource_urls: Vec<String>,
}

/// The strings of a JSON array member (anything else reads as none, as a typed decode of an
/// object that validation admitted never sees it).
fn strings(rule: &Value, key: &str) -> Vec<String> {
    rule.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

impl PolicyRule {
    /// The rule an object's `rules[i]` holds.
    pub(crate) fn from_json(rule: &Value) -> Self {
        PolicyRule {
            verbs: strings(rule, "verbs"),
            api_groups: strings(rule, "apiGroups"),
            resources: strings(rule, "resources"),
            resource_names: strings(rule, "resourceNames"),
            non_resource_urls: strings(rule, "nonResourceURLs"),
        }
    }

    /// The rules of a Role's or ClusterRole's `rules` (absent or null: none).
    pub(crate) fn list_from(rules: Option<&Value>) -> Vec<PolicyRule> {
        rules
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// `RuleAllows`: the rule allows the request `attributes` describe.
    pub(crate) fn allows(&self, attributes: &Attributes) -> bool {
        if !self.verb_matches(&attributes.verb) {
            return false;
        }
        if !attributes.resource_request {
            return self.non_resource_url_matches(&attributes.path);
        }
        self.api_group_matches(&attributes.api_group)
            && self.resource_matches(&attributes.resource, &attributes.subresource)
            && self.resource_name_matches(&attributes.name)
    }

    /// `VerbMatches`.
    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    /// `APIGroupMatches`.
    fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `ResourceMatches`: `*`, the exact `resource` or `resource/subresource`, or
    /// `*/subresource`.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|rule| {
            if rule == ALL {
                return true;
            }
            if subresource.is_empty() {
                return rule == resource;
            }
            let exact = rule
                .strip_prefix(resource)
                .and_then(|rest| rest.strip_prefix('/'))
                == Some(subresource);
            exact || rule.strip_prefix("*/") == Some(subresource)
        })
    }

    /// `ResourceNameMatches`: no names allows all.
    fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
    fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls
            .iter()
            .any(|url| url == ALL || url == path || url_prefix_matches(url, path))
    }

    /// `CompactString`: the rule as escalation refusals list it, e.g.
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}` (empty fields left out).
    pub(crate) fn compact_string(&self) -> String {
        let fields: [(&str, &[String]); 5] = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        let parts: Vec<String> = fields
            .iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(name, values)| format!("{name}:{}", go_quoted_list(values)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }

    /// As an `rbac.authorization.k8s.io/v1` `PolicyRule` as Go's encoder writes it: `verbs`
    /// always, the other lists only when not empty (`omitempty`), in the struct's order.
    pub(crate) fn to_json(&self) -> Value {
        self.lists(&[
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ])
    }

    /// As an `authorization.k8s.io/v1` `ResourceRule`, written the same way.
    pub(crate) fn to_resource_rule(&self) -> Value {
        self.lists(&[
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
        ])
    }

    /// As an `authorization.k8s.io/v1` `NonResourceRule`, written the same way.
    pub(crate) fn to_non_resource_rule(&self) -> Value {
        self.lists(&[("nonResourceURLs", &self.non_resource_urls)])
    }

    /// `verbs`, then each of `others` that is not empty (Go's `omitempty`), in that order.
    fn lists(&self, others: &[(&str, &Vec<String>)]) -> Value {
        let mut rule = Map::new();
        rule.insert("verbs".to_owned(), json!(self.verbs));
        for (key, values) in others {
            if !values.is_empty() {
                rule.insert((*key).to_owned(), json!(values));
            }
        }
        Value::Object(rule)
    }
}

/// A `[]string` as Go's `%q` prints it: `["a" "b"]`.
pub(crate) fn go_quoted_list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go::quote(s.as_ref())).collect();
    format!("[{}]", quoted.join(" "))
}

/// A URL rule ending in `*` covers every path starting with what precedes the `*`s (Go's
/// `strings.TrimRight(url, "*")`).
fn url_prefix_matches(rule: &str, path: &str) -> bool {
    rule.ends_with('*') && path.starts_with(rule.trim_end_matches('*'))
}

/// `Covers`: whether `owner` rules allow everything `servant` rules do, and what they do not
/// (each servant rule broken down to one verb, group, resource and name, or one verb and URL).
pub(crate) fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// `BreakdownRule`: the rule as rules of one verb, group, resource and name each (resource
/// rules need a group, a resource and a verb), then one verb and URL each.
pub(crate) fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut subrules = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    subrules.push(base);
                } else {
                    for name in &rule.resource_names {
                        subrules.push(PolicyRule {
                            resource_names: vec![name.clone()],
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            subrules.push(PolicyRule {
                non_resource_urls: vec![url.clone()],
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    subrules
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|item| has(set, item))
}

/// `resourceCoversAll`: `*`, each resource named, or each subresource covered by `*/sub`.
fn resource_covers_all(owner: &[String], covered: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, covered) {
        return true;
    }
    covered.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// `nonResourceURLCovers`.
pub(crate) fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path || url_prefix_matches(owner, path)
}

/// `ruleCovers`: `owner` (any shape) covers `sub` (one verb, resource and name at most).
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|path| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, path))
    });
    let names = owner.resource_names.is_empty()
        || (!sub.resource_names.is_empty() && has_all(&owner.resource_names, &sub.resource_names));
    verbs && groups && resources && names && urls
}

/// `CompactRules`: rules of one group and one resource (and at most one name) and nothing
/// else merge their verbs, in the order they come; the rest stay as they are. The merged
/// rules follow the others, in the order their resource first came.
pub(crate) fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted = Vec::with_capacity(rules.len());
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            compacted.push(rule);
            continue;
        }
        match simple.iter_mut().find(|s| {
            s.api_groups == rule.api_groups
                && s.resources == rule.resources
                && s.resource_names == rule.resource_names
        }) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    compacted.extend(simple);
    compacted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        PolicyRule {
            verbs: owned(verbs),
            api_groups: owned(groups),
            resources: owned(resources),
            ..PolicyRule::default()
        }
    }

    fn with_names(mut rule: PolicyRule, names: &[&str]) -> PolicyRule {
        rule.resource_names = names.iter().map(|s| (*s).to_owned()).collect();
        rule
    }

    fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
            non_resource_urls: urls.iter().map(|s| (*s).to_owned()).collect(),
            ..PolicyRule::default()
        }
    }

    fn resource_request(verb: &str, group: &str, resource: &str, sub: &str) -> Attributes {
        Attributes {
            verb: verb.to_owned(),
            resource_request: true,
            api_group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: sub.to_owned(),
            ..Attributes::default()
        }
    }

    fn non_resource_request(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.to_owned(),
            path: path.to_owned(),
            ..Attributes::default()
        }
    }

    /// `rbac_test.go`, `TestRuleMatches`: each rule with its requests as
    /// `verb group resource[/subresource] allowed` (resource requests) or `verb URL allowed`.
    #[test]
    fn rules_match_requests_as_upstreams_table_says() {
        let cases: Vec<(&str, PolicyRule, &[&str])> = vec![
            (
                "star verb, exact match other",
                rule(&["*"], &["group1"], &["resource1"]),
                &[
                    "verb1 group1 resource1 true",
                    "verb1 group2 resource1 false",
                    "verb1 group1 resource2 false",
                    "verb1 group2 resource2 false",
                    "verb2 group1 resource1 true",
                    "verb2 group2 resource1 false",
                    "verb2 group1 resource2 false",
                    "verb2 group2 resource2 false",
                ],
            ),
            (
                "star group, exact match other",
                rule(&["verb1"], &["*"], &["resource1"]),
                &[
                    "verb1 group1 resource1 true",
                    "verb1 group2 resource1 true",
                    "verb1 group1 resource2 false",
                    "verb1 group2 resource2 false",
                    "verb2 group1 resource1 false",
                    "verb2 group2 resource1 false",
                    "verb2 group1 resource2 false",
                    "verb2 group2 resource2 false",
                ],
            ),
            (
                "star resource, exact match other",
                rule(&["verb1"], &["group1"], &["*"]),
                &[
                    "verb1 group1 resource1 true",
                    "verb1 group2 resource1 false",
                    "verb1 group1 resource2 true",
                    "verb1 group2 resource2 false",
                    "verb2 group1 resource1 false",
                    "verb2 group2 resource1 false",
                    "verb2 group1 resource2 false",
                    "verb2 group2 resource2 false",
                ],
            ),
            (
                "tuple expansion",
                rule(
                    &["verb1", "verb2"],
                    &["group1", "group2"],
                    &["resource1", "resource2"],
                ),
                &[
                    "verb1 group1 resource1 true",
                    "verb1 group2 resource1 true",
                    "verb1 group1 resource2 true",
                    "verb1 group2 resource2 true",
                    "verb2 group1 resource1 true",
                    "verb2 group2 resource1 true",
                    "verb2 group1 resource2 true",
                    "verb2 group2 resource2 true",
                ],
            ),
            (
                "subresource expansion",
                rule(&["*"], &["*"], &["resource1/subresource1"]),
                &[
                    "verb1 group1 resource1/subresource1 true",
                    "verb1 group2 resource1/subresource2 false",
                    "verb1 group1 resource2/subresource1 false",
                    "verb1 group2 resource2/subresource1 false",
                    "verb2 group1 resource1/subresource1 true",
                    "verb2 group2 resource1/subresource2 false",
                    "verb2 group1 resource2/subresource1 false",
                    "verb2 group2 resource2/subresource1 false",
                ],
            ),
            (
                "star nonresource, exact match other",
                urls(&["verb1"], &["*"]),
                &[
                    "verb1 /foo true",
                    "verb1 /foo/bar true",
                    "verb1 /foo/baz true",
                    "verb1 /foo/bar/one true",
                    "verb1 /foo/baz/one true",
                    "verb2 /foo false",
                    "verb2 /foo/bar false",
                    "verb2 /foo/baz false",
                    "verb2 /foo/bar/one false",
                    "verb2 /foo/baz/one false",
                ],
            ),
            (
                "star nonresource subpath",
                urls(&["verb1"], &["/foo/*"]),
                &[
                    "verb1 /foo false",
                    "verb1 /foo/bar true",
                    "verb1 /foo/baz true",
                    "verb1 /foo/bar/one true",
                    "verb1 /foo/baz/one true",
                    "verb1 /notfoo false",
                    "verb1 /notfoo/bar false",
                    "verb1 /notfoo/baz false",
                    "verb1 /notfoo/bar/one false",
                    "verb1 /notfoo/baz/one false",
                ],
            ),
            (
                "star verb, exact nonresource",
                urls(&["*"], &["/foo", "/foo/bar/one"]),
                &[
                    "verb1 /foo true",
                    "verb1 /foo/bar false",
                    "verb1 /foo/baz false",
                    "verb1 /foo/bar/one true",
                    "verb1 /foo/baz/one false",
                    "verb2 /foo true",
                    "verb2 /foo/bar false",
                    "verb2 /foo/baz false",
                    "verb2 /foo/bar/one true",
                    "verb2 /foo/baz/one false",
                ],
            ),
        ];
        for (name, rule, requests) in cases {
            for request in requests {
                let fields: Vec<&str> = request.split(' ').collect();
                let (attributes, expected) = match fields.as_slice() {
                    [verb, path, expected] if path.starts_with('/') => {
                        (non_resource_request(verb, path), *expected == "true")
                    }
                    [verb, group, resource, expected] => {
                        let (resource, sub) = resource.split_once('/').unwrap_or((resource, ""));
                        (
                            resource_request(verb, group, resource, sub),
                            *expected == "true",
                        )
                    }
                    _ => panic!("bad case {request}"),
                };
                assert_eq!(rule.allows(&attributes), expected, "{name}: {request}");
            }
        }
    }

    #[test]
    fn resource_names_and_wildcard_subresources_match_as_upstream() {
        let named = with_names(rule(&["get"], &[""], &["configmaps"]), &["a", "b"]);
        let mut get = resource_request("get", "", "configmaps", "");
        get.name = "a".to_owned();
        assert!(named.allows(&get));
        get.name = "c".to_owned();
        assert!(!named.allows(&get));
        get.name = String::new();
        assert!(!named.allows(&get), "a list names nothing");
        let scale = rule(&["get"], &["*"], &["*/scale"]);
        assert!(scale.allows(&resource_request("get", "apps", "deployments", "scale")));
        assert!(!scale.allows(&resource_request("get", "apps", "deployments", "")));
        assert!(!scale.allows(&resource_request("get", "apps", "deployments", "status")));
        // `pods/log` is only the subresource; `pods` is not `pods/`.
        let log = rule(&["get"], &[""], &["pods/log"]);
        assert!(log.allows(&resource_request("get", "", "pods", "log")));
        assert!(!log.allows(&resource_request("get", "", "pods", "")));
        assert!(!log.allows(&resource_request("get", "", "podsx", "log")));
        // Verbs compare case-sensitively (`rbac_test.go` refuses `GET`).
        assert!(!rule(&["get"], &[""], &["pods"]).allows(&resource_request("GET", "", "pods", "")));
    }

    /// `policy_comparator_test.go`: owner rules, servant rules, and what stays uncovered.
    #[test]
    fn covers_answers_as_upstreams_comparator_tests() {
        /// Name, owner rules, servant rules, the rules left uncovered.
        type Case = (
            &'static str,
            Vec<PolicyRule>,
            Vec<PolicyRule>,
            Vec<PolicyRule>,
        );
        let cases: Vec<Case> = vec![
            (
                "exact match",
                vec![rule(&["get"], &["v1"], &["builds"])],
                vec![rule(&["get"], &["v1"], &["builds"])],
                vec![],
            ),
            (
                "subresource wildcard",
                vec![rule(&["get"], &["v1"], &["*/scale"])],
                vec![rule(&["get"], &["v1"], &["foo/scale"])],
                vec![],
            ),
            (
                "multiple rules covering a single rule",
                vec![
                    rule(&["delete"], &["v1"], &["deployments"]),
                    rule(&["delete"], &["v1"], &["builds"]),
                    rule(&["update"], &["v1"], &["builds", "deployments"]),
                ],
                vec![rule(
                    &["delete", "update"],
                    &["v1"],
                    &["builds", "deployments"],
                )],
                vec![],
            ),
            (
                "multiple API groups covering a single rule",
                vec![
                    rule(&["delete"], &["group1"], &["deployments"]),
                    rule(&["delete"], &["group1"], &["builds"]),
                    rule(&["update"], &["group1"], &["builds", "deployments"]),
                    rule(&["delete"], &["group2"], &["deployments"]),
                    rule(&["delete"], &["group2"], &["builds"]),
                    rule(&["update"], &["group2"], &["builds", "deployments"]),
                ],
                vec![rule(
                    &["delete", "update"],
                    &["group1", "group2"],
                    &["builds", "deployments"],
                )],
                vec![],
            ),
            (
                "single API group rule covering multiple",
                vec![rule(
                    &["delete", "update"],
                    &["group1", "group2"],
                    &["builds", "deployments"],
                )],
                vec![
                    rule(&["delete"], &["group1"], &["deployments"]),
                    rule(&["delete"], &["group1"], &["builds"]),
                    rule(&["update"], &["group1"], &["builds", "deployments"]),
                    rule(&["delete"], &["group2"], &["deployments"]),
                    rule(&["delete"], &["group2"], &["builds"]),
                    rule(&["update"], &["group2"], &["builds", "deployments"]),
                ],
                vec![],
            ),
            (
                "missing a single verb and resource",
                vec![
                    rule(&["delete", "update"], &["v1"], &["builds", "deployments"]),
                    rule(&["delete"], &["v1"], &["pods"]),
                ],
                vec![rule(
                    &["delete", "update"],
                    &["v1"],
                    &["builds", "deployments", "pods"],
                )],
                vec![rule(&["update"], &["v1"], &["pods"])],
            ),
            (
                "API group star covering multiple",
                vec![rule(&["get"], &["*"], &["roles"])],
                vec![rule(&["get"], &["group1", "group2"], &["roles"])],
                vec![],
            ),
            (
                "enumeration not covering API group star",
                vec![rule(&["get"], &["dummy-group"], &["roles"])],
                vec![rule(&["get"], &["*"], &["roles"])],
                vec![rule(&["get"], &["*"], &["roles"])],
            ),
            (
                "API group star covering star",
                vec![rule(&["get"], &["*"], &["roles"])],
                vec![rule(&["get"], &["*"], &["roles"])],
                vec![],
            ),
            (
                "verb star covering multiple",
                vec![rule(&["*"], &["v1"], &["roles"])],
                vec![rule(&["watch", "list"], &["v1"], &["roles"])],
                vec![],
            ),
            (
                "enumeration not covering verb star",
                vec![rule(
                    &["get", "list", "watch", "create", "update", "delete", "exec"],
                    &["v1"],
                    &["roles"],
                )],
                vec![rule(&["*"], &["v1"], &["roles"])],
                vec![rule(&["*"], &["v1"], &["roles"])],
            ),
            (
                "verb star covering star",
                vec![rule(&["*"], &["v1"], &["roles"])],
                vec![rule(&["*"], &["v1"], &["roles"])],
                vec![],
            ),
            (
                "resource star covering multiple",
                vec![rule(&["get"], &["v1"], &["*"])],
                vec![rule(&["get"], &["v1"], &["resourcegroup:deployments"])],
                vec![],
            ),
            (
                "enumeration not covering resource star",
                vec![rule(
                    &["get"],
                    &["v1"],
                    &["roles", "resourcegroup:deployments"],
                )],
                vec![rule(&["get"], &["v1"], &["*"])],
                vec![rule(&["get"], &["v1"], &["*"])],
            ),
            (
                "resource star covering star",
                vec![rule(&["get"], &["v1"], &["*"])],
                vec![rule(&["get"], &["v1"], &["*"])],
                vec![],
            ),
            (
                "no resource names covering some",
                vec![rule(&["get"], &["v1"], &["pods"])],
                vec![with_names(
                    rule(&["get"], &["v1"], &["pods"]),
                    &["foo", "bar"],
                )],
                vec![],
            ),
            (
                "resource names not covering none",
                vec![with_names(
                    rule(&["get"], &["v1"], &["pods"]),
                    &["foo", "bar"],
                )],
                vec![rule(&["get"], &["v1"], &["pods"])],
                vec![rule(&["get"], &["v1"], &["pods"])],
            ),
            (
                "non-resource URLs",
                vec![urls(&["*"], &["/apis"])],
                vec![urls(&["*"], &["/apis"])],
                vec![],
            ),
            (
                "non-resource URLs star",
                vec![urls(&["*"], &["*"])],
                vec![urls(&["*"], &["/apis", "/apis/v1", "/"])],
                vec![],
            ),
            (
                "non-resource URL star after a prefix does not cover the prefix",
                vec![urls(&["*"], &["/apis/*"])],
                vec![urls(&["get"], &["/apis", "/apis/v1"])],
                vec![urls(&["get"], &["/apis"])],
            ),
            (
                "non-resource URL star after a prefix",
                vec![urls(&["*"], &["/apis/*"])],
                vec![urls(&["get"], &["/apis/v1/foo", "/apis/v1"])],
                vec![],
            ),
            (
                "non-resource URLs with other fields",
                vec![PolicyRule {
                    non_resource_urls: vec!["/apis".to_owned()],
                    ..rule(&["get"], &["v1"], &["builds"])
                }],
                vec![PolicyRule {
                    non_resource_urls: vec!["/apis".to_owned()],
                    ..rule(&["get"], &["v1"], &["builds"])
                }],
                vec![],
            ),
            (
                "non-resource URLs with other fields failing",
                vec![rule(&["get"], &["v1"], &["builds"])],
                vec![PolicyRule {
                    non_resource_urls: vec!["/apis".to_owned()],
                    ..rule(&["get"], &["v1"], &["builds"])
                }],
                vec![urls(&["get"], &["/apis"])],
            ),
        ];
        for (name, owner, servant, expected) in cases {
            let (covered, uncovered) = covers(&owner, &servant);
            assert_eq!(covered, expected.is_empty(), "{name}");
            assert_eq!(uncovered.len(), expected.len(), "{name}: {uncovered:?}");
            for rule in &expected {
                assert!(uncovered.contains(rule), "{name}: {uncovered:?}");
            }
        }
    }

    /// `policy_comparator_test.go`, `TestNonResourceURLCovers`.
    #[test]
    fn non_resource_urls_cover_as_upstream() {
        for (owner, requested, want) in [
            ("*", "", true),
            ("*", "/", true),
            ("*", "/api", true),
            ("/*", "", false),
            ("/*", "/", true),
            ("/*", "/foo", true),
            ("/api", "/api", true),
            ("/apis", "/api", false),
            ("/api/v1", "/api", false),
            ("/api/v1", "/api/v1", true),
            ("/api/*", "/api/v1", true),
            ("/api/*", "/api", false),
            ("/api/*/*", "/api/v1", false),
            ("/*/v1/*", "/api/v1", false),
        ] {
            assert_eq!(
                non_resource_url_covers(owner, requested),
                want,
                "{owner} {requested}"
            );
        }
    }

    /// `policy_compact_test.go`, `TestCompactRules` ("simple" and the complex cases), compared
    /// as sorted compact strings, and covering the input both ways as upstream checks.
    #[test]
    fn compacting_merges_simple_rules_only() {
        let input = vec![
            rule(&["get"], &[""], &["builds"]),
            rule(&["list"], &[""], &["builds"]),
            rule(&["update", "patch"], &[""], &["builds"]),
            rule(&["create"], &["extensions"], &["daemonsets"]),
            rule(&["delete"], &["extensions"], &["daemonsets"]),
            with_names(rule(&["patch"], &["extensions"], &["daemonsets"]), &[""]),
            with_names(rule(&["get"], &["extensions"], &["daemonsets"]), &["foo"]),
            with_names(rule(&["list"], &["extensions"], &["daemonsets"]), &["foo"]),
            rule(&["educate"], &[""], &["dolphins"]),
            rule(&[], &[""], &["pirates"]),
            rule(&[], &[""], &["pods"]),
            rule(&["create"], &[""], &["pods"]),
            rule(&["get"], &["", "builds.openshift.io"], &["builds"]),
            rule(&["list"], &["", "builds.openshift.io"], &["builds"]),
            rule(&["get"], &[""], &["builds", "images"]),
            rule(&["list"], &[""], &["builds", "images"]),
        ];
        let compacted = compact(input.clone());
        assert!(covers(&compacted, &input).0);
        assert!(covers(&input, &compacted).0);
        let mut got: Vec<String> = compacted.iter().map(PolicyRule::compact_string).collect();
        got.sort();
        let mut want = vec![
            r#"{APIGroups:["extensions"], Resources:["daemonsets"], Verbs:["create" "delete"]}"#,
            r#"{APIGroups:["extensions"], Resources:["daemonsets"], ResourceNames:[""], Verbs:["patch"]}"#,
            r#"{APIGroups:["extensions"], Resources:["daemonsets"], ResourceNames:["foo"], Verbs:["get" "list"]}"#,
            r#"{APIGroups:[""], Resources:["builds"], Verbs:["get" "list" "update" "patch"]}"#,
            r#"{APIGroups:[""], Resources:["dolphins"], Verbs:["educate"]}"#,
            r#"{APIGroups:[""], Resources:["pirates"]}"#,
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["create"]}"#,
            r#"{APIGroups:["" "builds.openshift.io"], Resources:["builds"], Verbs:["get"]}"#,
            r#"{APIGroups:["" "builds.openshift.io"], Resources:["builds"], Verbs:["list"]}"#,
            r#"{APIGroups:[""], Resources:["builds" "images"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["builds" "images"], Verbs:["list"]}"#,
        ];
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    fn compact_strings_quote_as_go_does() {
        let mut rule = with_names(rule(&["get", "list"], &[""], &["pods/log"]), &["a\"b"]);
        rule.non_resource_urls = vec!["/x".to_owned()];
        assert_eq!(
            rule.compact_string(),
            r#"{APIGroups:[""], Resources:["pods/log"], NonResourceURLs:["/x"], ResourceNames:["a\"b"], Verbs:["get" "list"]}"#
        );
        assert_eq!(PolicyRule::default().compact_string(), "{}");
    }
}
