//! A CRD's `x-kubernetes-validations`: CEL rules on any schema node, compiled once per
//! served schema (when the definition's resources are built, so per CRD generation) and run
//! on every write of a custom object, with upstream's messages and field paths
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`,
//! `compilation.go`; the checks at CRD write time from
//! `pkg/apis/apiextensions/validation/validation.go`).
//!
//! A transition rule (one reading `oldSelf`) runs only on an update whose old object has the
//! node (or always with `optionalOldSelf`, `oldSelf` then being optional). Old values are
//! correlated as upstream correlates them: object properties by name, map values by key,
//! `x-kubernetes-list-type: map` items by their keys; other list items have no old value.
//!
//! When a definition is written, each rule's compile-time cost estimate
//! ([`kubemock_cel::cost`]) times the most times its node can occur in an object is checked
//! against upstream's per-expression limit, and the sum against the limit of the whole schema
//! (`pkg/apis/apiextensions/validation/validation.go`, `cel_validation.go`).
//!
//! Lists compare and concatenate as their `x-kubernetes-list-type` says (`kubemock_cel::value::
//! ListKind`); rules under `allOf`/`anyOf`/`oneOf`/`not` are refused, as upstream refuses them
//! in a CRD's structural schema.

use std::sync::Arc;

use kubemock_cel::env::SharedProgram;
use kubemock_cel::schema::{DeclSize, MAX_REQUEST_SIZE_BYTES, schema_sizes, schema_type, to_value};
use kubemock_cel::{
    COST_LIMIT_MESSAGE, Env, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET, Type, Value as Cel, Vars,
};
use serde_json::Value;

use crate::field_error::FieldError;
use crate::ratchet::{self, Nearest};

/// The reasons a rule may name (upstream's `supportedValidationReason`).
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];
/// Upstream's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// Upstream's `StaticEstimatedCostLimit`: the most one rule (or messageExpression) may be
/// estimated to cost, times the most times its schema node can occur in an object.
const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// Upstream's `StaticEstimatedCRDCostLimit`: the most all the rules of one version's schema
/// may be estimated to cost together.
const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// How many of the costliest rules the error on the total names (upstream's `TotalCost`
/// keeps 4).
const MOST_EXPENSIVE_KEPT: usize = 4;

/// The sum of the estimated rule costs of one schema (upstream's `TotalCost`), and whether
/// the per-expression limit is waived (on an update that leaves the version's schema
/// unchanged, upstream's `suppressPerExpressionCost`).
#[derive(Debug, Default)]
pub(crate) struct CostCheck {
    suppress_per_expression: bool,
    total: u64,
    /// The costliest rules of at least 1% of the total limit, costliest first.
    most_expensive: Vec<(String, u64)>,
}

impl CostCheck {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        // Stable, as Go's sort.Slice is not: ties between rules over 1% of the limit are
        // left in schema order.
        self.most_expensive
            .sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        self.most_expensive.truncate(MOST_EXPENSIVE_KEPT);
    }

    /// The per-expression check of one cost; false when it is over the limit.
    fn within_limit(&self, cost: u64) -> bool {
        self.suppress_per_expression || cost <= STATIC_ESTIMATED_COST_LIMIT
    }
}

/// Upstream's `multiplyWithOverflowGuard`.
fn multiply_with_overflow_guard(base: u64, cardinality: u64) -> u64 {
    if base == 0 {
        return 0;
    }
    base.saturating_mul(cardinality)
}

/// Upstream's `maxCardinality`: how many times a value of at least `min_size` bytes fits in
/// a request, with a comma after each.
fn max_cardinality(min_size: i64) -> u64 {
    (MAX_REQUEST_SIZE_BYTES / (min_size.max(0) + 1)) as u64
}

/// Upstream's `extractMaxElements`: by how much a node multiplies the occurrences of its
/// children (`None`: without bound).
fn max_elements(schema: &Value) -> Option<u64> {
    let limit = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_i64)
            .map(|v| v.max(0) as u64)
    };
    match schema.get("type").and_then(Value::as_str) {
        Some("object") if schema.get("additionalProperties").is_some() => limit("maxProperties"),
        Some("array") => limit("maxItems"),
        _ => Some(1),
    }
}

/// The cardinality of a node's children (upstream's `childContext`): its own times what it
/// multiplies them by, unbounded when either is.
fn child_cardinality(cardinality: Option<u64>, schema: &Value) -> Option<u64> {
    cardinality
        .zip(max_elements(schema))
        .map(|(c, m)| multiply_with_overflow_guard(c, m))
}

/// Upstream's `getCostErrorMessage`, its factor printed as Go prints it.
fn cost_error_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

fn forbidden(field: String, detail: &str) -> FieldError {
    cause(field, "FieldValueForbidden", format!("Forbidden: {detail}"))
}

/// One compiled rule.
struct Rule {
    rule: String,
    message: String,
    message_expression: Option<(String, SharedProgram)>,
    reason: Option<String>,
    field_path: Option<String>,
    program: SharedProgram,
    uses_old_self: bool,
    optional_old_self: bool,
}

/// What running a schema's rules on an object found.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The causes of a 422.
    pub(crate) errors: Vec<FieldError>,
    /// Failed rules that ratcheted, as upstream words their warnings (`field: detail`).
    pub(crate) warnings: Vec<String>,
}

/// The rules of a schema, in the schema's shape (only subtrees that hold rules).
#[derive(Default)]
pub(crate) struct Rules {
    rules: Vec<Rule>,
    /// The node's schema (its values are made from it).
    schema: Value,
    properties: Vec<(String, Rules)>,
    items: Option<Box<Rules>>,
    additional: Option<Box<Rules>>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

/// The rule as Go's `%#v` prints upstream's `apiextensions.ValidationRule` (set pointers are
/// printed with a placeholder address: Go prints the real one).
fn go_repr(rule: &Value) -> String {
    let s = |k: &str| format!("{:?}", rule.get(k).and_then(Value::as_str).unwrap_or(""));
    let reason = if rule.get("reason").is_some_and(|r| !r.is_null()) {
        "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
    } else {
        "(*apiextensions.FieldValueErrorReason)(nil)"
    };
    let optional = if rule.get("optionalOldSelf").is_some_and(|r| !r.is_null()) {
        "(*bool)(0xc000000000)"
    } else {
        "(*bool)(nil)"
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath")
    )
}

fn cause(field: String, reason: &'static str, detail: String) -> FieldError {
    FieldError {
        field,
        reason,
        detail,
    }
}

/// Whether `path` (`.spec.x`, `['a.b']`) names a field of `schema`.
fn valid_field_path(schema: &Value, path: &str) -> bool {
    let mut node = schema;
    let mut rest = path;
    while !rest.is_empty() {
        let name;
        if let Some(r) = rest.strip_prefix("['") {
            let Some(end) = r.find("']") else {
                return false;
            };
            name = &r[..end];
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            name = &r[..end];
            rest = &r[end..];
        } else {
            return false;
        }
        if name.is_empty() {
            return false;
        }
        node = match node
            .get("properties")
            .and_then(|p| p.get(name))
            .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
        {
            Some(n) => n,
            None => return false,
        };
    }
    true
}

/// `.spec.x` as upstream's normalized path (`spec.x`), `['a.b']` as `[a.b]`.
fn normalize_field_path(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out.push_str(&format!("[{}]", &r[..end]));
            rest = r.get(end + 2..).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&r[..end]);
            rest = &r[end..];
        } else {
            break;
        }
    }
    out
}

/// Compiles the rules under `schema` (printed at `at`, upstream's schema path style) to serve
/// them; the errors are those that refuse the CRD, less the cost checks.
pub(crate) fn compile(schema: &Value, at: &str, root: bool, errors: &mut Vec<FieldError>) -> Rules {
    compile_node(schema, at, root, Some(1), None, errors)
}

/// Compiles the rules of a version's schema as the definition is written: [`compile`]'s
/// errors and upstream's cost checks (`suppress_per_expression` when an update leaves the
/// schema as it was).
pub(crate) fn check(
    schema: &Value,
    at: &str,
    suppress_per_expression: bool,
    errors: &mut Vec<FieldError>,
) {
    let mut costs = CostCheck {
        suppress_per_expression,
        ..CostCheck::default()
    };
    // Sorted, as upstream's `ValidateStructural` sorts its errors.
    let mut nested = Vec::new();
    nested_rules(schema, at, false, &mut nested);
    nested.sort_by(|a, b| a.field.cmp(&b.field));
    errors.extend(nested);
    compile_node(schema, at, true, Some(1), Some(&mut costs), errors);
    if costs.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (path, _) in &costs.most_expensive {
            errors.push(forbidden(
                path.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errors.push(forbidden(
            at.to_owned(),
            &cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                costs.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
}

/// Rules under `allOf`, `anyOf`, `oneOf` or `not` (at any depth there): forbidden in a CRD's
/// structural schema, as upstream forbids them (`apiextensions-apiserver/pkg/apiserver/
/// schema/validation.go`, `validateNestedValueValidation` with `AllowNestedXValidations`
/// false), since only the structural part of a schema is validated with CEL.
fn nested_rules(schema: &Value, at: &str, nested: bool, errors: &mut Vec<FieldError>) {
    let Some(node) = schema.as_object() else {
        return;
    };
    if nested && node.contains_key("x-kubernetes-validations") {
        errors.push(forbidden(
            format!("{at}.x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            nested_rules(
                property,
                &format!("{at}.properties[{name}]"),
                nested,
                errors,
            );
        }
    }
    for child in ["items", "additionalProperties"] {
        if let Some(sub) = node.get(child) {
            nested_rules(sub, &format!("{at}.{child}"), nested, errors);
        }
    }
    for quantifier in ["allOf", "anyOf", "oneOf"] {
        for (index, sub) in node
            .get(quantifier)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            nested_rules(sub, &format!("{at}.{quantifier}[{index}]"), true, errors);
        }
    }
    if let Some(not) = node.get("not") {
        nested_rules(not, &format!("{at}.not"), true, errors);
    }
}

/// [`compile`] of one node: `cardinality` is the most times it can occur in an object
/// (upstream's `CELSchemaContext.MaxCardinality`, `None` when unbounded), `costs` the cost
/// checks when the definition is written.
fn compile_node(
    schema: &Value,
    at: &str,
    root: bool,
    cardinality: Option<u64>,
    mut costs: Option<&mut CostCheck>,
    errors: &mut Vec<FieldError>,
) -> Rules {
    let mut node = Rules {
        schema: schema.clone(),
        ..Rules::default()
    };
    if let Some(list) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        let self_type = schema_type(schema, root, "self");
        let resource_root = root
            || schema
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true);
        let sizes = schema_sizes(schema, resource_root).map(Arc::new);
        // A rule on a node under an unbounded list or map is counted as often as the
        // smallest value of the node fits in a request.
        let times = cardinality.unwrap_or_else(|| {
            sizes
                .as_ref()
                .map_or(1, |s| max_cardinality(s.min_serialized_size))
        });
        for (i, raw) in list.iter().enumerate() {
            let here = format!("{at}.x-kubernetes-validations[{i}]");
            let before = errors.len();
            let (rule, estimated) =
                compile_rule(raw, &self_type, sizes.clone(), schema, &here, errors);
            if let Some(rule) = rule {
                node.rules.push(rule);
            }
            // Where the node has no CEL sizes (upstream fails to build its type), nothing
            // is estimated: accepting rather than refusing what upstream may accept.
            if let (Some(check), Some(_)) = (costs.as_deref_mut(), &sizes) {
                let rule_cost = multiply_with_overflow_guard(estimated.rule, times);
                if !check.within_limit(rule_cost) {
                    errors.insert(
                        before,
                        forbidden(
                            format!("{here}.rule"),
                            &cost_error_message(
                                "estimated rule cost",
                                rule_cost,
                                STATIC_ESTIMATED_COST_LIMIT,
                            ),
                        ),
                    );
                }
                check.observe(format!("{here}.rule"), rule_cost);
                if let Some(message_cost) = estimated.message_expression {
                    if !check.within_limit(message_cost) {
                        errors.push(forbidden(
                            format!("{here}.messageExpression"),
                            &cost_error_message(
                                "estimated messageExpression cost",
                                message_cost,
                                STATIC_ESTIMATED_COST_LIMIT,
                            ),
                        ));
                    }
                    check.observe(format!("{here}.messageExpression"), message_cost);
                }
            }
        }
    }
    let child_cardinality = child_cardinality(cardinality, schema);
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            let sub = compile_node(
                child,
                &format!("{at}.properties[{name}]"),
                false,
                child_cardinality,
                costs.as_deref_mut(),
                errors,
            );
            if sub.has_rules() {
                node.properties.push((name.clone(), sub));
            }
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        let sub = compile_node(
            items,
            &format!("{at}.items"),
            false,
            child_cardinality,
            costs.as_deref_mut(),
            errors,
        );
        if sub.has_rules() {
            node.items = Some(Box::new(sub));
        }
    }
    if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let sub = compile_node(
            add,
            &format!("{at}.additionalProperties"),
            false,
            child_cardinality,
            costs,
            errors,
        );
        if sub.has_rules() {
            node.additional = Some(Box::new(sub));
        }
    }
    node
}

/// The estimated worst cases of a rule and of its messageExpression (compiled); 0 for a
/// rule that does not compile, as upstream counts it.
#[derive(Default)]
struct Estimated {
    rule: u64,
    message_expression: Option<u64>,
}

fn compile_rule(
    raw: &Value,
    self_type: &Type,
    sizes: Option<Arc<DeclSize>>,
    schema: &Value,
    here: &str,
    errors: &mut Vec<FieldError>,
) -> (Option<Rule>, Estimated) {
    let mut estimated = Estimated::default();
    let rule = compile_rule_into(raw, self_type, sizes, schema, here, errors, &mut estimated);
    (rule, estimated)
}

fn compile_rule_into(
    raw: &Value,
    self_type: &Type,
    sizes: Option<Arc<DeclSize>>,
    schema: &Value,
    here: &str,
    errors: &mut Vec<FieldError>,
    estimated: &mut Estimated,
) -> Option<Rule> {
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
    let rule = text("rule").unwrap_or_default();
    let repr = go_repr(raw);
    let before = errors.len();
    if rule.trim().is_empty() {
        errors.push(cause(
            format!("{here}.rule"),
            "FieldValueRequired",
            "Required value: rule is not specified".into(),
        ));
        return None;
    }
    let message = text("message");
    if let Some(m) = &message {
        if m.trim().is_empty() {
            errors.push(cause(
                format!("{here}.message"),
                "FieldValueInvalid",
                format!("Invalid value: {m:?}: message must be non-empty if specified"),
            ));
        } else if m.contains('\n') {
            errors.push(cause(
                format!("{here}.message"),
                "FieldValueInvalid",
                format!("Invalid value: {m:?}: message must not contain line breaks"),
            ));
        }
    } else if rule.contains('\n') {
        errors.push(cause(
            format!("{here}.message"),
            "FieldValueRequired",
            "Required value: message must be specified if rule contains line breaks".into(),
        ));
    }
    let reason = text("reason");
    if let Some(r) = &reason {
        if !REASONS.contains(&r.as_str()) {
            let supported: Vec<String> = REASONS.iter().map(|r| format!("{r:?}")).collect();
            errors.push(cause(
                format!("{here}.reason"),
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: {r:?}: supported values: {}",
                    supported.join(", ")
                ),
            ));
        }
    }
    let field_path = text("fieldPath");
    if let Some(p) = &field_path {
        let detail = if p.trim().is_empty() {
            Some("fieldPath must be non-empty if specified")
        } else if p.contains('\n') {
            Some("fieldPath must not contain line breaks")
        } else if !valid_field_path(schema, p) {
            Some("fieldPath must be a valid path")
        } else {
            None
        };
        if let Some(d) = detail {
            errors.push(cause(
                format!("{here}.fieldPath"),
                "FieldValueInvalid",
                format!("Invalid value: {p:?}: {d}"),
            ));
        }
    }
    let optional_old_self = raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let old_type = if optional_old_self {
        Type::optional(self_type.clone())
    } else {
        self_type.clone()
    };
    let mut env = Env::new()
        .with_var("self", self_type.clone())
        .with_var("oldSelf", old_type);
    if let Some(sizes) = sizes {
        env = env.with_sizes(sizes);
    }
    let program = match env.compile(&rule) {
        Ok(p) => p,
        Err(e) => {
            errors.push(cause(
                format!("{here}.rule"),
                "FieldValueInvalid",
                format!("Invalid value: {repr}: compilation failed: {}", e.text),
            ));
            return None;
        }
    };
    if !matches!(program.result_type, Type::Bool | Type::Dyn) {
        errors.push(cause(
            format!("{here}.rule"),
            "FieldValueInvalid",
            format!("Invalid value: {repr}: cel expression must evaluate to a bool"),
        ));
        return None;
    }
    estimated.rule = program.estimated_cost.max;
    let uses_old_self = program.references("oldSelf");
    if optional_old_self && !uses_old_self {
        errors.push(cause(
            format!("{here}.optionalOldSelf"),
            "FieldValueInvalid",
            "Invalid value: true: may not be set if oldSelf is not used in rule".into(),
        ));
    }
    let mut message_expression = None;
    if let Some(src) = text("messageExpression") {
        if src.trim().is_empty() {
            errors.push(cause(
                format!("{here}.messageExpression"),
                "FieldValueRequired",
                "Required value: messageExpression must be non-empty if specified".into(),
            ));
        } else {
            match env.compile(&src) {
                Ok(p) if matches!(p.result_type, Type::String | Type::Dyn) => {
                    estimated.message_expression = Some(p.estimated_cost.max);
                    message_expression = Some((src, Arc::new(p)));
                }
                Ok(_) => errors.push(cause(
                    format!("{here}.messageExpression"),
                    "FieldValueInvalid",
                    format!("Invalid value: {repr}: messageExpression must evaluate to a string"),
                )),
                Err(e) => errors.push(cause(
                    format!("{here}.messageExpression"),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {repr}: messageExpression compilation failed: {}",
                        e.text
                    ),
                )),
            }
        }
    }
    if errors.len() > before {
        return None;
    }
    Some(Rule {
        rule: rule.trim().to_owned(),
        message: message.map(|m| m.trim().to_owned()).unwrap_or_default(),
        message_expression,
        reason,
        field_path,
        program: Arc::new(program),
        uses_old_self,
        optional_old_self,
    })
}

impl Rules {
    /// Whether this node or any below holds a rule.
    pub(crate) fn has_rules(&self) -> bool {
        !self.rules.is_empty()
            || !self.properties.is_empty()
            || self.items.is_some()
            || self.additional.is_some()
    }

    /// Runs every rule on `object` (and `old` on an update): the causes of a 422, and the
    /// warnings of failed rules that ratcheted (`ratchet`: a rule not reading `oldSelf` that
    /// fails on a part the update left unchanged warns instead of refusing).
    pub(crate) fn validate(&self, object: &Value, old: Option<&Value>) -> Outcome {
        let mut outcome = Outcome::default();
        let mut budget = RUNTIME_CEL_COST_BUDGET as i64;
        self.walk(None, object, old, None, &mut budget, &mut outcome);
        outcome
    }

    fn type_name(&self) -> String {
        format!(
            "{:?}",
            self.schema
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
        )
    }

    /// Runs the rules at and under this node. `old` is the node's correlated old value;
    /// `nearest` the nearest correlated node above it, for ratcheting.
    fn walk(
        &self,
        path: Option<&str>,
        value: &Value,
        old: Option<&Value>,
        nearest: Option<Nearest<'_>>,
        budget: &mut i64,
        outcome: &mut Outcome,
    ) -> bool {
        if value.is_null() {
            return true;
        }
        let nearest = match old {
            Some(old) => Some(Nearest {
                old,
                new: value,
                schema: &self.schema,
            }),
            None => nearest,
        };
        if !self.rules.is_empty() && !self.run_rules(path, value, old, nearest, budget, outcome) {
            return false;
        }
        let child = |segment: &str| match path {
            None => segment.to_owned(),
            Some(p) => format!("{p}.{segment}"),
        };
        match value {
            Value::Object(map) => {
                for (name, sub) in &self.properties {
                    if let Some(v) = map.get(name) {
                        let o = old.and_then(|o| o.get(name));
                        if !sub.walk(Some(&child(name)), v, o, nearest, budget, outcome) {
                            return false;
                        }
                    }
                }
                if let Some(sub) = &self.additional {
                    for (key, v) in map {
                        let o = old.and_then(|o| o.get(key));
                        let at = format!("{}[{key}]", path.unwrap_or("<nil>"));
                        if !sub.walk(Some(&at), v, o, nearest, budget, outcome) {
                            return false;
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = &self.items {
                    for (i, v) in items.iter().enumerate() {
                        let o = ratchet::correlated_item(&self.schema, old, v);
                        let at = format!("{}[{i}]", path.unwrap_or("<nil>"));
                        if !sub.walk(Some(&at), v, o, nearest, budget, outcome) {
                            return false;
                        }
                    }
                }
            }
            _ => {}
        }
        true
    }

    /// Runs this node's rules; false when the budget ran out (no further rules run).
    fn run_rules(
        &self,
        path: Option<&str>,
        value: &Value,
        old: Option<&Value>,
        nearest: Option<Nearest<'_>>,
        budget: &mut i64,
        outcome: &mut Outcome,
    ) -> bool {
        let errors = &mut outcome.errors;
        // Whether the nearest correlated node is unchanged: computed once, when a rule fails.
        let mut ratchets: Option<bool> = None;
        let at = path.unwrap_or("<nil>").to_owned();
        let sts_type = self.type_name();
        let invalid = |field: &str, detail: String| {
            cause(
                field.to_owned(),
                "FieldValueInvalid",
                format!("Invalid value: {sts_type}: {detail}"),
            )
        };
        if *budget <= 0 {
            errors.push(invalid(
                &at,
                "validation failed due to running out of cost budget, no further validation rules will be run".into(),
            ));
            return false;
        }
        let self_value = to_value(Some(&self.schema), value);
        let old_value = old
            .filter(|o| !o.is_null())
            .map(|o| to_value(Some(&self.schema), o));
        for rule in &self.rules {
            if rule.uses_old_self && old_value.is_none() && !rule.optional_old_self {
                continue;
            }
            let mut vars = Vars::new().with("self", self_value.clone());
            vars = match (&old_value, rule.optional_old_self) {
                (Some(o), false) => vars.with("oldSelf", o.clone()),
                (o, true) => vars.with("oldSelf", Cel::Optional(o.clone().map(Arc::new))),
                (None, false) => vars,
            };
            let run = rule.program.eval(&vars, PER_CALL_LIMIT);
            let shown = if rule.message.is_empty() {
                rule.rule.clone()
            } else {
                rule.message.clone()
            };
            if run.cost as i64 > *budget {
                errors.push(invalid(
                    &at,
                    "validation failed due to running out of cost budget, no further validation rules will be run".into(),
                ));
                return false;
            }
            *budget -= run.cost as i64;
            let ok = match run.result {
                Ok(Cel::Bool(b)) => b,
                Ok(_) => {
                    errors.push(invalid(
                        &at,
                        format!("'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {shown}"),
                    ));
                    continue;
                }
                Err(e) if e.message.starts_with("no such overload") => {
                    errors.push(invalid(
                        &at,
                        format!("'{}': call arguments did not match a supported operator, function or macro signature for rule: {shown}", e.message),
                    ));
                    continue;
                }
                Err(e) if e.message.starts_with(COST_LIMIT_MESSAGE) => {
                    errors.push(invalid(
                        &at,
                        format!("'{}': no further validation rules will be run due to call cost exceeds limit for rule: {shown}", e.message),
                    ));
                    return false;
                }
                Err(e) => {
                    errors.push(invalid(
                        &at,
                        format!("{} evaluating rule: {shown}", e.message),
                    ));
                    continue;
                }
            };
            if ok {
                continue;
            }
            let field = match rule.field_path.as_deref().map(normalize_field_path) {
                Some(p) if !p.is_empty() => match path {
                    None => p,
                    Some(base) => format!("{base}.{p}"),
                },
                _ => at.clone(),
            };
            let default_message = if rule.message.is_empty() {
                format!("failed rule: {}", rule.rule)
            } else {
                rule.message.clone()
            };
            let mut message = default_message.clone();
            if let Some((src, program)) = &rule.message_expression {
                let run = program.eval(&vars, PER_CALL_LIMIT);
                if run.cost as i64 > *budget {
                    errors.push(invalid(
                        &field,
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".into(),
                    ));
                    return false;
                }
                *budget -= run.cost as i64;
                match run.result {
                    Ok(Cel::String(s)) => {
                        let trimmed = s.trim();
                        if !trimmed.is_empty()
                            && !trimmed.contains('\n')
                            && trimmed.len() <= MAX_MESSAGE_EXPRESSION_BYTES
                        {
                            message = trimmed.to_owned();
                        }
                    }
                    Err(e) if e.cost_exceeded => {
                        errors.push(invalid(
                            &field,
                            format!("no further validation rules will be run due to call cost exceeds limit for messageExpression: {src:?}"),
                        ));
                        return false;
                    }
                    _ => {}
                }
            }
            let error = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => cause(
                    field,
                    "FieldValueForbidden",
                    format!("Forbidden: {message}"),
                ),
                Some("FieldValueRequired") => cause(
                    field,
                    "FieldValueRequired",
                    format!("Required value: {message}"),
                ),
                Some("FieldValueDuplicate") => cause(
                    field,
                    "FieldValueDuplicate",
                    format!("Duplicate value: {sts_type}"),
                ),
                _ => invalid(&field, message),
            };
            let ratchet = !rule.uses_old_self
                && *ratchets.get_or_insert_with(|| nearest.is_some_and(|n| n.unchanged()));
            if ratchet {
                outcome
                    .warnings
                    .push(format!("{}: {}", error.field, error.detail));
            } else {
                errors.push(error);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "self.name == oldSelf.name", "message": "name is immutable"}
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string",
                    "x-kubernetes-validations": [{"rule": "self.size() <= 3"}]}}
            }
        }}})
    }

    #[test]
    fn rules_refuse_with_upstream_paths_and_messages() {
        let mut errors = Vec::new();
        let rules = compile(
            &schema(),
            "spec.validation.openAPIV3Schema",
            true,
            &mut errors,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let obj = json!({"spec": {"minReplicas": 5, "maxReplicas": 1, "name": "a", "tags": ["ok", "toolong"]}});
        let found = rules.validate(&obj, None).errors;
        let texts: Vec<String> = found
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        assert_eq!(
            texts,
            [
                "spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas",
                "spec.tags[1]: Invalid value: \"string\": failed rule: self.size() <= 3",
            ]
        );
        // The transition rule runs on update only.
        let old = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "name": "b"}});
        let new = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "name": "a"}});
        let found = rules.validate(&new, Some(&old)).errors;
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].detail,
            "Invalid value: \"object\": name is immutable"
        );
    }

    #[test]
    fn a_rule_that_does_not_compile_refuses_the_definition() {
        let bad = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.nope == 1"}],
            "properties": {"a": {"type": "integer"}}}}});
        let mut errors = Vec::new();
        compile(&bad, "spec.validation.openAPIV3Schema", true, &mut errors);
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].field,
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
        );
        assert_eq!(
            errors[0].detail,
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.nope == 1\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope == 1\n | ....^"
        );
    }

    /// (field, reason) of each cause, sorted: upstream's tests match causes as a set.
    fn fields(errors: &[FieldError]) -> Vec<(String, &'static str)> {
        let mut out: Vec<_> = errors.iter().map(|e| (e.field.clone(), e.reason)).collect();
        out.sort();
        out
    }

    const AT: &str = "spec.validation.openAPIV3Schema";

    fn checked(schema: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check(schema, AT, false, &mut errors);
        errors
    }

    fn forbidden_at(path: &str) -> (String, &'static str) {
        (format!("{AT}{path}"), "FieldValueForbidden")
    }

    /// validation_test.go "forbid validation rules where cost total exceeds total limit".
    #[test]
    fn rules_over_the_total_limit_are_named_with_the_total() {
        let schema = json!({"type": "object", "properties": {
            "list": {"type": "array", "maxItems": 100000, "items": {"type": "string",
                "maxLength": 5000,
                "x-kubernetes-validations": [{"rule": "self.contains('keyword')"}]}},
            "map": {"type": "object", "maxProperties": 1000, "additionalProperties": {
                "type": "string", "maxLength": 5000,
                "x-kubernetes-validations": [{"rule": "self.contains('keyword')"}]}},
            "field": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self > 50 && self < 100"}]}}});
        let errors = checked(&schema);
        let list = ".properties[list].items.x-kubernetes-validations[0].rule";
        let map = ".properties[map].additionalProperties.x-kubernetes-validations[0].rule";
        assert_eq!(
            fields(&errors),
            vec![
                forbidden_at(""),
                forbidden_at(list),
                forbidden_at(list),
                forbidden_at(map),
            ]
        );
        // 2000 per string (20000 characters times 'keyword', 0.1 each, plus self), 100000
        // times; 1000 times under the map.
        let total = errors.last().map(|e| e.detail.clone()).unwrap_or_default();
        assert_eq!(
            total,
            "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 2.0x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert_eq!(
            errors[0].detail,
            "Forbidden: estimated rule cost exceeds budget by factor of 20.0x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
    }

    /// validation_test.go "x-kubernetes-validations rule invalidated by messageExpression
    /// exceeding per-expression estimated cost limit".
    #[test]
    fn a_message_expression_over_the_limit_refuses_the_definition() {
        let schema = json!({"type": "object", "properties": {"f": {"type": "array",
            "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "true",
                "messageExpression": "self[0] + self[1] + self[2] + self[3] + self[4] + self[5] + self[6] + self[7]"}]}}});
        assert_eq!(
            fields(&checked(&schema)),
            vec![forbidden_at(
                ".properties[f].x-kubernetes-validations[0].messageExpression"
            )]
        );
    }

    /// validation_test.go "x-kubernetes-validations rule with lowerAscii check should be
    /// within estimated cost limit".
    #[test]
    fn a_bounded_quadratic_rule_is_within_the_limit() {
        let schema = json!({"type": "object", "properties": {"f": {"type": "array",
            "maxItems": 5, "items": {"type": "string", "maxLength": 5},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.exists_one(y, x.lowerAscii() == y.lowerAscii()))"}]}}});
        assert!(checked(&schema).is_empty());
    }

    /// validation_test.go "x-kubernetes-validations rule invalidated by messageExpression
    /// exceeding per-CRD estimated cost limit".
    #[test]
    fn a_message_expression_over_the_total_limit_is_named_twice() {
        let schema = json!({"type": "object", "properties": {"f": {"type": "array",
            "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "true",
                "messageExpression": "string(self[0]) + string(self[1]) + string(self[2])"}]}}});
        let message = ".properties[f].x-kubernetes-validations[0].messageExpression";
        assert_eq!(
            fields(&checked(&schema)),
            vec![
                forbidden_at(""),
                forbidden_at(message),
                forbidden_at(message)
            ]
        );
    }

    /// An unchanged schema is spared the per-expression limit (validation_test.go "suppress
    /// per-expression cost limit in pre-existing versions"), not the total's.
    #[test]
    fn an_unchanged_schema_is_spared_the_per_expression_limit_only() {
        let rule_at = ".properties[f].x-kubernetes-validations[0].rule";
        let per_expression = json!({"type": "object", "properties": {"f": {"type": "array",
            "maxItems": 1000, "items": {"type": "string", "maxLength": 20000},
            "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]}}});
        assert_eq!(
            fields(&checked(&per_expression)),
            vec![forbidden_at(rule_at)]
        );
        let mut errors = Vec::new();
        check(&per_expression, AT, true, &mut errors);
        assert!(errors.is_empty());
        let total = json!({"type": "object", "properties": {"f": {"type": "array",
            "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]}}});
        let mut errors = Vec::new();
        check(&total, AT, true, &mut errors);
        assert_eq!(
            fields(&errors),
            vec![forbidden_at(""), forbidden_at(rule_at)]
        );
    }

    /// validation_test.go `TestPerCRDEstimatedCost`.
    #[test]
    fn the_total_keeps_the_four_costliest_rules_over_one_percent() {
        let cases: [(&[u64], &[u64], u64); 8] = [
            (&[], &[], 0),
            (&[1000000], &[1000000], 1000000),
            (&[900000], &[], 900000),
            (&[5000000, 25000000], &[25000000, 5000000], 30000000),
            (&[5000000, 25000000, 900000], &[25000000, 5000000], 30900000),
            (
                &[16000000, 50000000, 34000000, 50000000],
                &[50000000, 50000000, 34000000, 16000000],
                150000000,
            ),
            (
                &[16000000, 50000000, 900000, 34000000, 50000000, 50000001],
                &[50000001, 50000000, 50000000, 34000000],
                200900001,
            ),
            (
                &[u64::MAX / 2, u64::MAX / 2, 1, 10, 100, 1000],
                &[u64::MAX / 2, u64::MAX / 2],
                u64::MAX,
            ),
        ];
        for (costs, expensive, total) in cases {
            let mut check = CostCheck::default();
            for c in costs {
                check.observe(String::new(), *c);
            }
            let kept: Vec<u64> = check.most_expensive.iter().map(|(_, c)| *c).collect();
            assert_eq!(
                (kept.as_slice(), check.total),
                (expensive, total),
                "{costs:?}"
            );
        }
    }

    /// validation_test.go `TestCostInfo`: the cardinality of a string under each chain.
    #[test]
    fn cardinality_multiplies_down_the_schema() {
        let object = json!({"type": "object"});
        let array = |max: Option<i64>| match max {
            Some(m) => json!({"type": "array", "maxItems": m}),
            None => json!({"type": "array"}),
        };
        let map = |max: Option<i64>| match max {
            Some(m) => {
                json!({"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": m})
            }
            None => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        };
        let cases: Vec<(Vec<Value>, Option<u64>)> = vec![
            (vec![object.clone()], Some(1)),
            (vec![array(Some(5))], Some(5)),
            (vec![array(None)], None),
            (vec![map(Some(10))], Some(10)),
            (vec![map(None)], None),
            (vec![map(Some(5)), array(Some(5))], Some(25)),
            (vec![map(Some(5)), array(None)], None),
            (vec![array(Some(3)), object.clone()], Some(3)),
            (vec![array(Some(2)), object, map(Some(4))], Some(8)),
            (
                vec![array(Some(i64::MAX)), array(Some(100))],
                Some(u64::MAX),
            ),
        ];
        for (chain, want) in cases {
            let mut got = Some(1);
            for schema in &chain {
                got = child_cardinality(got, schema);
            }
            assert_eq!(got, want, "{chain:?}");
        }
    }

    #[test]
    fn cost_factors_print_as_go_prints_them() {
        let limit = STATIC_ESTIMATED_COST_LIMIT;
        let factor = |cost: u64| {
            let m = cost_error_message("c", cost, limit);
            m["c exceeds budget by factor of ".len()..m.find(" (try").unwrap_or(m.len())].to_owned()
        };
        assert_eq!(factor(12_000_000), "1.200000x");
        assert_eq!(factor(10_000_001), "1.000000x");
        assert_eq!(factor(25_000_000), "2.5x");
        assert_eq!(factor(1_000_000_000), "100.0x");
        assert_eq!(factor(1_000_000_001), "more than 100x");
    }
}
