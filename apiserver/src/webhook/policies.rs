//! Stored ValidatingAdmissionPolicies and their bindings as the dispatch runs them
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_source.go`,
//! `.../policy/validating/plugin.go` `compilePolicy`): every expression compiled once per
//! version of the policy, when the index sees it, not per request.

use std::sync::Arc;

use kubemock_cel::admission::{Compiler, Declarations, Expression, Returns, Variable};
use serde_json::Value;

use super::config::{Rule, compile_conditions, rule_of, strings};

/// One of `resourceRules` / `excludeResourceRules` (`NamedRuleWithOperations`).
#[derive(Debug, Clone)]
pub(crate) struct NamedRule {
    /// The rule.
    pub(crate) rule: Rule,
    /// `resourceNames`; empty matches every name.
    pub(crate) names: Vec<String>,
}

/// `matchConstraints` of a policy, `matchResources` of a binding (v1 defaults applied).
#[derive(Debug, Clone)]
pub(crate) struct MatchResources {
    /// `namespaceSelector`, when it selects something.
    pub(crate) namespace_selector: Option<Value>,
    /// `objectSelector`, when it selects something.
    pub(crate) object_selector: Option<Value>,
    /// `resourceRules`.
    pub(crate) resource_rules: Vec<NamedRule>,
    /// `excludeResourceRules`.
    pub(crate) exclude_rules: Vec<NamedRule>,
    /// `matchPolicy: Equivalent` (the default).
    pub(crate) equivalent: bool,
}

/// A policy's `paramKind`.
#[derive(Debug, Clone)]
pub(crate) struct ParamKind {
    /// `apiVersion` (`group/version`, or `version` for core).
    pub(crate) api_version: String,
    /// `kind`.
    pub(crate) kind: String,
}

/// One of a policy's `validations`.
#[derive(Debug)]
pub(crate) struct Validation {
    /// `expression`, compiled.
    pub(crate) expression: Expression,
    /// `message`.
    pub(crate) message: String,
    /// `messageExpression`, compiled, if any.
    pub(crate) message_expression: Option<Expression>,
    /// `reason`; empty for the default (`Invalid`).
    pub(crate) reason: String,
}

/// A ValidatingAdmissionPolicy, compiled.
#[derive(Debug)]
pub(crate) struct Policy {
    /// `metadata.name`.
    pub(crate) name: String,
    /// `failurePolicy: Ignore` (Fail is the default).
    pub(crate) ignore_failures: bool,
    /// `paramKind`.
    pub(crate) param_kind: Option<ParamKind>,
    /// `matchConstraints`; `None` is upstream's configuration error (a required field).
    pub(crate) constraints: Option<MatchResources>,
    /// `matchConditions`.
    pub(crate) match_conditions: Arc<[Expression]>,
    /// `variables`, in order.
    pub(crate) variables: Arc<[Variable]>,
    /// `validations`.
    pub(crate) validations: Vec<Validation>,
    /// `auditAnnotations`: key and value expression.
    pub(crate) audit_annotations: Vec<(String, Expression)>,
}

/// A binding's `paramRef`.
#[derive(Debug, Clone)]
pub(crate) struct ParamRef {
    /// `name`; empty when a selector is used.
    pub(crate) name: String,
    /// `namespace`; empty for the request's.
    pub(crate) namespace: String,
    /// `selector`.
    pub(crate) selector: Option<Value>,
    /// `parameterNotFoundAction: Deny` (the default).
    pub(crate) deny_not_found: bool,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub(crate) struct Binding {
    /// `metadata.name`.
    pub(crate) name: String,
    /// `spec.policyName`.
    pub(crate) policy_name: String,
    /// `spec.paramRef`.
    pub(crate) param_ref: Option<ParamRef>,
    /// `spec.matchResources`; none matches everything the policy matches.
    pub(crate) match_resources: Option<MatchResources>,
    /// `spec.validationActions` (`Deny`, `Warn`, `Audit`).
    pub(crate) actions: Vec<String>,
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Whether a label selector selects nothing in particular (and so matches everything).
fn selector_is_empty(selector: &Value) -> bool {
    let count = |key: &str| match selector.get(key) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

fn match_resources_of(value: &Value) -> MatchResources {
    let selector = |key: &str| {
        value
            .get(key)
            .filter(|s| !s.is_null() && !selector_is_empty(s))
            .cloned()
    };
    let rules = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|rule| NamedRule {
                rule: rule_of(rule),
                names: strings(rule.get("resourceNames")),
            })
            .collect()
    };
    MatchResources {
        namespace_selector: selector("namespaceSelector"),
        object_selector: selector("objectSelector"),
        resource_rules: rules("resourceRules"),
        exclude_rules: rules("excludeResourceRules"),
        equivalent: text(value, "matchPolicy") != "Exact",
    }
}

/// A stored policy, compiled (`compilePolicy`).
pub(crate) fn policy_of(object: &Value) -> Policy {
    let spec = object.get("spec").cloned().unwrap_or_default();
    let param_kind = spec
        .get("paramKind")
        .filter(|k| !k.is_null())
        .map(|k| ParamKind {
            api_version: text(k, "apiVersion"),
            kind: text(k, "kind"),
        });
    let mut compiler = Compiler::new(
        Declarations {
            params: param_kind.is_some(),
            authorizer: true,
        },
        true,
    );
    for variable in spec
        .get("variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        compiler.add_variable(&text(variable, "name"), &text(variable, "expression"));
    }
    let match_conditions = compile_conditions(&compiler, spec.get("matchConditions"));
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let message_expression = text(v, "messageExpression");
            Validation {
                expression: compiler.compile(&text(v, "expression"), Returns::Bool, true),
                message: text(v, "message"),
                message_expression: (!message_expression.is_empty())
                    .then(|| compiler.compile(&message_expression, Returns::String, false)),
                reason: text(v, "reason"),
            }
        })
        .collect();
    let audit_annotations = spec
        .get("auditAnnotations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| {
            let source = text(a, "valueExpression");
            (
                text(a, "key"),
                compiler.compile(source.trim(), Returns::StringOrNull, true),
            )
        })
        .collect();
    Policy {
        name: object
            .get("metadata")
            .map(|m| text(m, "name"))
            .unwrap_or_default(),
        ignore_failures: text(&spec, "failurePolicy") == "Ignore",
        param_kind,
        constraints: spec
            .get("matchConstraints")
            .filter(|c| !c.is_null())
            .map(match_resources_of),
        match_conditions,
        variables: compiler.into_variables(),
        validations,
        audit_annotations,
    }
}

/// A stored binding.
pub(crate) fn binding_of(object: &Value) -> Binding {
    let spec = object.get("spec").cloned().unwrap_or_default();
    Binding {
        name: object
            .get("metadata")
            .map(|m| text(m, "name"))
            .unwrap_or_default(),
        policy_name: text(&spec, "policyName"),
        param_ref: spec
            .get("paramRef")
            .filter(|p| !p.is_null())
            .map(|p| ParamRef {
                name: text(p, "name"),
                namespace: text(p, "namespace"),
                selector: p.get("selector").filter(|s| !s.is_null()).cloned(),
                deny_not_found: text(p, "parameterNotFoundAction") != "Allow",
            }),
        match_resources: spec
            .get("matchResources")
            .filter(|r| !r.is_null())
            .map(match_resources_of),
        actions: strings(spec.get("validationActions")),
    }
}
