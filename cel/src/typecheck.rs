//! ValidatingAdmissionPolicy type checking: the warnings upstream writes into a policy's
//! `status.typeChecking` (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/
//! validating/typechecking.go`), so that a typo such as `object.spec.replica` is reported
//! where `kubectl get validatingadmissionpolicy -o yaml` shows it, although the policy is
//! accepted and runs against `dyn` objects (upstream does the same at run time).
//!
//! The kinds a policy is checked against come from its `matchConstraints.resourceRules`:
//! only rules naming exact groups, versions and resources (no `*`, no subresources), each
//! resolved to its kinds by the caller's [`RestMapper`], at most [`MAX_TYPES_TO_CHECK`],
//! sorted by group, version and kind. For each kind with a schema, `object` and `oldObject`
//! take the kind's type ([`crate::schema::resolved_type`]), `params` the paramKind's when it
//! has a schema (when it has none, `params` is not declared at all, as upstream), and the
//! policy's variables are typed from them; every validation's `expression` and
//! `messageExpression` is checked, with `request`, `namespaceObject`, `authorizer` and
//! `variables` as at admission. This module is pure: finding the schemas and writing the
//! status is the caller's (kube-controller-manager's `validatingadmissionpolicy-status`
//! controller, here `kubemock-controllers`).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value as Json;

use crate::admission::{Compiler, Declarations};
use crate::types::Type;

/// Upstream's `maxTypesToCheck`: the most kinds one policy is checked against.
pub const MAX_TYPES_TO_CHECK: usize = 10;

/// A group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupVersionKind {
    /// The group (empty for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

impl GroupVersionKind {
    /// A kind of `group`/`version`.
    pub fn new(group: &str, version: &str, kind: &str) -> GroupVersionKind {
        GroupVersionKind {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }
}

impl fmt::Display for GroupVersionKind {
    /// apimachinery's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1,
    /// Kind=Pod` for core.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A group, version and resource of a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupVersionResource {
    /// The group (empty for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource (plural).
    pub resource: String,
}

/// What maps a rule's resources to kinds (upstream's `meta.RESTMapper`).
pub trait RestMapper {
    /// The kinds served for `gvr`; `None` when it cannot be resolved (not served, or
    /// discovery failed).
    fn kinds_for(&mut self, gvr: &GroupVersionResource) -> Option<Vec<GroupVersionKind>>;

    /// Forgets what was discovered, so the next [`RestMapper::kinds_for`] asks again
    /// (`ResettableRESTMapper.Reset`); upstream does it at most once per policy, on the
    /// first resource that does not resolve.
    fn reset(&mut self) {}
}

/// The strings of `rule[key]`.
fn strings<'a>(rule: &'a Json, key: &str) -> Vec<&'a str> {
    rule.get(key)
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default()
}

/// The exact rules of a policy's `matchConstraints.resourceRules`, each as its sorted
/// groups, versions and resources: a wildcard group or version gives up on the rule;
/// wildcard resources and subresources are skipped (upstream's `extractGroups`,
/// `extractVersions`, `extractResources`).
fn exact_rules(spec: &Json) -> Vec<[Vec<&str>; 3]> {
    let rules = spec
        .get("matchConstraints")
        .and_then(|m| m.get("resourceRules"))
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for rule in rules {
        let mut groups = strings(rule, "apiGroups");
        let mut versions = strings(rule, "apiVersions");
        let mut resources: Vec<&str> = strings(rule, "resources")
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        if groups.iter().chain(&versions).any(|s| s.contains('*')) {
            continue;
        }
        if groups.is_empty() || versions.is_empty() || resources.is_empty() {
            continue;
        }
        groups.sort_unstable();
        versions.sort_unstable();
        resources.sort_unstable();
        out.push([groups, versions, resources]);
    }
    out
}

/// The group-versions whose resources [`types_to_check`] may ask the [`RestMapper`] about
/// (so that a caller can read their discovery documents first), sorted, each once.
pub fn group_versions(spec: &Json) -> Vec<(String, String)> {
    let mut out = BTreeSet::new();
    for [groups, versions, _] in exact_rules(spec) {
        for group in &groups {
            for version in &versions {
                out.insert(((*group).to_owned(), (*version).to_owned()));
            }
        }
    }
    out.into_iter().collect()
}

/// The kinds a policy (its `spec`) is type-checked against (upstream's `typesToCheck`):
/// sorted by group, version, kind; empty without exact resource rules.
pub fn types_to_check(spec: &Json, mapper: &mut dyn RestMapper) -> Vec<GroupVersionKind> {
    let mut kinds = BTreeSet::new();
    let mut refreshed = false;
    for [groups, versions, resources] in exact_rules(spec) {
        // Upstream counts per rule, duplicates included.
        let mut count = 0;
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let gvr = GroupVersionResource {
                        group: (*group).to_owned(),
                        version: (*version).to_owned(),
                        resource: (*resource).to_owned(),
                    };
                    let resolved = match mapper.kinds_for(&gvr) {
                        Some(resolved) => resolved,
                        None if refreshed => continue,
                        None => {
                            mapper.reset();
                            refreshed = true;
                            match mapper.kinds_for(&gvr) {
                                Some(resolved) => resolved,
                                None => continue,
                            }
                        }
                    };
                    for kind in resolved {
                        if kind.kind.is_empty() && kind.version.is_empty() && kind.group.is_empty()
                        {
                            continue;
                        }
                        kinds.insert(kind);
                        count += 1;
                        if count == MAX_TYPES_TO_CHECK {
                            return kinds.into_iter().collect();
                        }
                    }
                }
            }
        }
    }
    kinds.into_iter().collect()
}

/// The paramKind of a policy (its `spec`), `None` without one or when its `apiVersion`
/// does not parse (upstream's `paramsGVK`).
pub fn params_kind(spec: &Json) -> Option<GroupVersionKind> {
    let param_kind = spec.get("paramKind")?;
    let api_version = param_kind
        .get("apiVersion")
        .and_then(Json::as_str)
        .unwrap_or_default();
    let kind = param_kind
        .get("kind")
        .and_then(Json::as_str)
        .unwrap_or_default();
    // schema.ParseGroupVersion: "" is empty, "v1" the core group, "g/v" a group, more
    // slashes an error.
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] => ("", ""),
        [version] => ("", *version),
        [group, version] => (*group, *version),
        _ => return None,
    };
    let gvk = GroupVersionKind::new(group, version, kind);
    (!(group.is_empty() && version.is_empty() && kind.is_empty())).then_some(gvk)
}

/// One warning of `status.typeChecking.expressionWarnings`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpressionWarning {
    /// The expression's path (`spec.validations[0].expression`).
    pub field_ref: String,
    /// What the checker found, per kind (upstream's `TypeCheckingResults.String()`).
    pub warning: String,
}

/// Type-checks a policy's validations (upstream's `TypeChecker.Check`): `kinds` are the
/// kinds of [`types_to_check`] that have a schema, with their types; `params` the
/// paramKind's type when it has a schema. Empty when every expression checks (or no kind
/// could be typed).
pub fn check(
    spec: &Json,
    kinds: &[(GroupVersionKind, Type)],
    params: Option<&Type>,
) -> Vec<ExpressionWarning> {
    let variables: Vec<(&str, &str)> = spec
        .get("variables")
        .and_then(Json::as_array)
        .map(|vars| {
            vars.iter()
                .map(|v| {
                    let s = |k: &str| v.get(k).and_then(Json::as_str).unwrap_or_default();
                    (s("name"), s("expression"))
                })
                .collect()
        })
        .unwrap_or_default();
    // One compiler per kind, its variables typed against that kind.
    let compilers: Vec<(&GroupVersionKind, Compiler)> = kinds
        .iter()
        .map(|(gvk, object)| {
            let declarations = Declarations {
                params: params.is_some(),
                authorizer: true,
            };
            let mut compiler =
                Compiler::new(declarations, true).with_types(Some(object.clone()), params.cloned());
            for (name, expression) in &variables {
                compiler.add_variable(name, expression);
            }
            (gvk, compiler)
        })
        .collect();
    let check_one = |expression: &str| -> Option<String> {
        let results: Vec<String> = compilers
            .iter()
            .filter_map(|(gvk, compiler)| {
                compiler
                    .issues(expression)
                    .map(|issues| format!("{gvk}: {issues}\n"))
            })
            .collect();
        (!results.is_empty()).then(|| results.join("\n"))
    };
    let mut warnings = Vec::new();
    let validations = spec
        .get("validations")
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, validation) in validations.iter().enumerate() {
        for key in ["expression", "messageExpression"] {
            let Some(expression) = validation.get(key).and_then(Json::as_str) else {
                continue;
            };
            if key == "messageExpression" && expression.is_empty() {
                continue;
            }
            if let Some(warning) = check_one(expression) {
                warnings.push(ExpressionWarning {
                    field_ref: format!("spec.validations[{i}].{key}"),
                    warning,
                });
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use kubemock_apimachinery::openapi::SCHEMAS;
    use serde_json::json;

    use super::*;
    use crate::schema::{populate_refs, resolved_type};

    /// A mapper over a fixed table, counting resets.
    #[derive(Default)]
    struct Table {
        kinds: HashMap<(String, String, String), Vec<GroupVersionKind>>,
        resets: usize,
    }

    impl Table {
        fn with(mut self, group: &str, version: &str, resource: &str, kind: &str) -> Table {
            self.kinds
                .entry((group.into(), version.into(), resource.into()))
                .or_default()
                .push(GroupVersionKind::new(group, version, kind));
            self
        }
    }

    impl RestMapper for Table {
        fn kinds_for(&mut self, gvr: &GroupVersionResource) -> Option<Vec<GroupVersionKind>> {
            self.kinds
                .get(&(gvr.group.clone(), gvr.version.clone(), gvr.resource.clone()))
                .cloned()
        }
        fn reset(&mut self) {
            self.resets += 1;
        }
    }

    /// A built-in kind's type, as the controller resolves it.
    fn builtin(group: &str, version: &str, kind: &str) -> (GroupVersionKind, Type) {
        let name = SCHEMAS.kind(group, version, kind).expect("a built-in kind");
        let schema = populate_refs(name, &|n| SCHEMAS.component(n)).expect("refs resolve");
        let t = resolved_type(&schema, true, kind).expect("an object type");
        (GroupVersionKind::new(group, version, kind), t)
    }

    fn policy(expression: &str) -> Json {
        json!({
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "resources": ["deployments"], "operations": ["CREATE"]}]},
            "validations": [{"expression": expression}],
        })
    }

    #[test]
    fn a_typo_in_a_field_name_is_reported_with_upstreams_text() {
        let kinds = [builtin("apps", "v1", "Deployment")];
        let warnings = check(&policy("object.spec.replica > 1"), &kinds, None);
        assert_eq!(
            warnings,
            vec![ExpressionWarning {
                field_ref: "spec.validations[0].expression".into(),
                warning: "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n | object.spec.replica > 1\n | ...........^\n"
                    .into(),
            }]
        );
    }

    #[test]
    fn correct_expressions_over_typed_fields_give_no_warning() {
        let kinds = [builtin("apps", "v1", "Deployment")];
        for expression in [
            "object.spec.replicas > 1",
            "object.metadata.labels['app'] == 'web'",
            "object.spec.template.spec.containers.all(c, c.image.startsWith('r/'))",
            "has(object.metadata.annotations) && oldObject.metadata.name == object.metadata.name",
            "object.spec.strategy.rollingUpdate.maxSurge == 1",
            "request.operation == 'CREATE' && namespaceObject.metadata.name != ''",
            "authorizer.group('apps').resource('deployments').check('get').allowed()",
        ] {
            assert_eq!(
                check(&policy(expression), &kinds, None),
                vec![],
                "{expression}"
            );
        }
    }

    #[test]
    fn a_wrong_type_is_reported_and_message_expressions_are_checked() {
        let kinds = [builtin("apps", "v1", "Deployment")];
        let spec = json!({"validations": [
            {"expression": "true", "messageExpression": "object.spec.replicas + 'x'"},
            {"expression": "object.metadata.name > 1"},
        ]});
        let warnings = check(&spec, &kinds, None);
        let refs: Vec<&str> = warnings.iter().map(|w| w.field_ref.as_str()).collect();
        assert_eq!(
            refs,
            [
                "spec.validations[0].messageExpression",
                "spec.validations[1].expression"
            ]
        );
        assert!(
            warnings[0].warning.starts_with(
                "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_+_' applied to '(int, string)'"
            ),
            "{}",
            warnings[0].warning
        );
    }

    #[test]
    fn each_kind_reports_on_its_own_and_variables_are_typed() {
        let kinds = [
            builtin("", "v1", "ConfigMap"),
            builtin("apps", "v1", "Deployment"),
        ];
        let spec = json!({
            "variables": [
                {"name": "r", "expression": "object.spec.replicas"},
                {"name": "n", "expression": "object.metadata.name"},
            ],
            "validations": [
                {"expression": "variables.r > 0"},
                {"expression": "variables.n > 0"},
                {"expression": "object.data.size() > 0"},
            ],
        });
        let warnings = check(&spec, &kinds, None);
        let refs: Vec<&str> = warnings.iter().map(|w| w.field_ref.as_str()).collect();
        // `variables.r` is an int for Deployment and, not compiling for ConfigMap, `dyn`
        // there (a variable's own error is not reported, as upstream): no warning.
        assert_eq!(
            refs,
            [
                "spec.validations[1].expression",
                "spec.validations[2].expression"
            ]
        );
        // `variables.n` is a string for both kinds.
        let overload =
            "ERROR: <input>:1:13: found no matching overload for '_>_' applied to '(string, int)'";
        assert!(
            warnings[0]
                .warning
                .starts_with(&format!("/v1, Kind=ConfigMap: {overload}")),
            "{}",
            warnings[0].warning
        );
        assert!(
            warnings[0]
                .warning
                .contains(&format!("\n\napps/v1, Kind=Deployment: {overload}")),
            "{}",
            warnings[0].warning
        );
        assert!(
            warnings[1].warning.starts_with(
                "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'data'"
            ),
            "{}",
            warnings[1].warning
        );
    }

    #[test]
    fn several_kinds_join_as_upstream_joins_them() {
        let kinds = [
            builtin("apps", "v1", "DaemonSet"),
            builtin("apps", "v1", "Deployment"),
        ];
        let warnings = check(&policy("object.spec.nope"), &kinds, None);
        let caret = " | object.spec.nope\n | ...........^\n";
        assert_eq!(
            warnings[0].warning,
            format!(
                "apps/v1, Kind=DaemonSet: ERROR: <input>:1:12: undefined field 'nope'\n{caret}\napps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'nope'\n{caret}"
            )
        );
    }

    #[test]
    fn params_are_typed_by_their_kind_and_undeclared_without_a_schema() {
        let kinds = [builtin("apps", "v1", "Deployment")];
        let (_, config_map) = builtin("", "v1", "ConfigMap");
        let spec = policy("object.spec.replicas <= int(params.data['max'])");
        assert_eq!(check(&spec, &kinds, Some(&config_map)), vec![]);
        let spec = policy("params.spec.max > 0");
        assert!(
            check(&spec, &kinds, Some(&config_map))[0]
                .warning
                .contains("undefined field 'spec'")
        );
        // No schema for the paramKind: upstream leaves `params` undeclared.
        assert!(
            check(&spec, &kinds, None)[0]
                .warning
                .contains("undeclared reference to 'params'")
        );
    }

    #[test]
    fn only_exact_rules_resolve_to_kinds_sorted_and_refreshed_once() {
        let mut mapper = Table::default()
            .with("apps", "v1", "deployments", "Deployment")
            .with("", "v1", "pods", "Pod")
            .with("apps", "v1", "daemonsets", "DaemonSet");
        let spec = json!({"matchConstraints": {"resourceRules": [
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "deployments/status", "*", "daemonsets", "nopes", "gones"]},
            {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["pods"]},
            {"apiGroups": [""], "apiVersions": ["*"], "resources": ["pods"]},
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "deployments"]},
        ]}});
        let kinds = types_to_check(&spec, &mut mapper);
        assert_eq!(
            kinds,
            [
                GroupVersionKind::new("", "v1", "Pod"),
                GroupVersionKind::new("apps", "v1", "DaemonSet"),
                GroupVersionKind::new("apps", "v1", "Deployment"),
            ]
        );
        assert_eq!(mapper.resets, 1);
        assert_eq!(types_to_check(&json!({}), &mut mapper), []);
    }

    #[test]
    fn at_most_ten_kinds_of_one_rule_are_checked() {
        let mut mapper = Table::default();
        let resources: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
        for r in &resources {
            mapper = mapper.with("g", "v1", r, &format!("K{r}"));
        }
        let spec = json!({"matchConstraints": {"resourceRules": [
            {"apiGroups": ["g"], "apiVersions": ["v1"], "resources": resources}]}});
        assert_eq!(types_to_check(&spec, &mut mapper).len(), MAX_TYPES_TO_CHECK);
    }

    #[test]
    fn params_kind_parses_as_upstream() {
        let of = |v: Json| params_kind(&json!({"paramKind": v}));
        assert_eq!(
            of(json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            Some(GroupVersionKind::new("", "v1", "ConfigMap"))
        );
        assert_eq!(
            of(json!({"apiVersion": "example.com/v1", "kind": "Limit"})),
            Some(GroupVersionKind::new("example.com", "v1", "Limit"))
        );
        assert_eq!(of(json!({"apiVersion": "a/b/c", "kind": "X"})), None);
        assert_eq!(params_kind(&json!({})), None);
    }
}
