//! Upstream's CRD validation rule table (k8s.io/apiextensions-apiserver v0.32.1
//! `pkg/apiserver/schema/cel/validation_test.go`, `TestValidationExpressions`), ported as data
//! by `tests/data/port_validation_tables.py` into `tests/data/validation_cases.json`.
//!
//! Each rule is typed and run as a CRD rule is (`self`, and `oldSelf` where the case has an
//! old object, typed from the schema, the value built from the object under the schema): a
//! `valid` rule must compile and give `true` (or be skipped, a transition rule without an old
//! object); an `errors` rule must fail, and the error upstream's validator would report
//! (`pkg/apiserver/schema/cel/validation.go`, `validateExpressions`, whose messages are built
//! here the same way) must contain upstream's expected text, as upstream's harness checks it.
//! Rules where kubemock still differs are listed in [`KNOWN_DIFFERENCES`] with the reason;
//! the test fails when a listed rule passes or an unlisted rule fails.

use std::sync::Arc;

use kubemock_cel::schema::{schema_sizes, schema_type, to_value};
use kubemock_cel::{COST_LIMIT_MESSAGE, Env, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET, Type, Value};
use serde_json::Value as Json;

const INVALID_DATA: &str = "values are not checked against the schema as they are read: kubemock's CRD layer validates the object before its rules run, so no `invalid data` error";
const REGEX_AT_BUILD: &str = "a constant find/findAll pattern is checked when the rule runs, not when the program is built, and Rust's regex words its errors differently from Go's";

/// (case, rule, why kubemock differs from upstream).
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "date-time format",
        "timestamp(-62135596801)",
        "cel-rust places a negative literal after its `-`: the issue is at column 12, cel-go's at 11",
    ),
    (
        "conversions",
        "string(self.val11) == self.val10",
        "timestamps keep no zone offset: string() prints UTC where cel-go keeps the +01:00 the value was written with",
    ),
    (
        "escaping",
        "self.true == 1",
        "cel-rust's parser words this syntax error `no viable alternative at input '.true'`",
    ),
    ("invalid data", "has(self.o)", INVALID_DATA),
    ("invalid data", "has(self.m)", INVALID_DATA),
    ("invalid data", "has(self.l)", INVALID_DATA),
    ("invalid data", "has(self.s)", INVALID_DATA),
    ("invalid data", "has(self.lm)", INVALID_DATA),
    ("invalid data", "has(self.intorstring)", INVALID_DATA),
    ("invalid data", "self.nullable[0] == 'x'", INVALID_DATA),
    (
        "stdlib regex functions",
        "self.str.find(')') == ''",
        REGEX_AT_BUILD,
    ),
    (
        "stdlib regex functions",
        "self.str.findAll(')') == []",
        REGEX_AT_BUILD,
    ),
    (
        "stdlib regex functions",
        "self.str.findAll(')', 1) == []",
        REGEX_AT_BUILD,
    ),
];

/// What upstream's validator reports for a rule on the case's object: `Ok(cost)` when the rule
/// holds (or is skipped), else the error as `field.Error.Error()` prints it (`root: Invalid
/// value: "<type>": <detail>`).
fn validate(case: &Json, rule: &str, root: bool) -> Result<u64, String> {
    let schema = &case["schema"];
    let invalid = |detail: String| {
        let t = schema["type"].as_str().unwrap_or_default();
        format!("root: Invalid value: \"{t}\": {detail}")
    };
    let self_type = schema_type(schema, root, "self");
    let mut env = Env::new()
        .with_var("self", self_type.clone())
        .with_var("oldSelf", self_type);
    if let Some(sizes) = schema_sizes(schema, root) {
        env = env.with_sizes(Arc::new(sizes));
    }
    let program = env.compile(rule).map_err(|e| {
        invalid(format!(
            "rule compile error: compilation failed: {}",
            e.text
        ))
    })?;
    if !matches!(program.result_type, Type::Bool | Type::Dyn) {
        return Err(invalid(
            "rule compile error: cel expression must evaluate to a bool".into(),
        ));
    }
    let old = case.get("oldObj").filter(|o| !o.is_null());
    if program.references("oldSelf") && old.is_none() {
        // Transition rules run only with an old value.
        return Ok(0);
    }
    let mut vars = kubemock_cel::Vars::new().with("self", to_value(Some(schema), &case["obj"]));
    if let Some(old) = old {
        vars = vars.with("oldSelf", to_value(Some(schema), old));
    }
    let budget = case["costBudget"]
        .as_u64()
        .unwrap_or(RUNTIME_CEL_COST_BUDGET);
    let run = program.eval(&vars, PER_CALL_LIMIT);
    if run.cost > budget {
        return Err(invalid(
            "validation failed due to running out of cost budget, no further validation rules will be run".into(),
        ));
    }
    match run.result {
        Ok(Value::Bool(true)) => Ok(run.cost),
        Ok(Value::Bool(false)) => Err(invalid(format!("failed rule: {}", rule.trim()))),
        Ok(_) => Err(invalid(format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
            rule.trim()
        ))),
        Err(e) if e.message.starts_with("no such overload") => Err(invalid(format!(
            "'{}': call arguments did not match a supported operator, function or macro signature for rule: {}",
            e.message,
            rule.trim()
        ))),
        Err(e) if e.message.starts_with(COST_LIMIT_MESSAGE) => Err(invalid(format!(
            "'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            e.message,
            rule.trim()
        ))),
        Err(e) => Err(invalid(format!(
            "{} evaluating rule: {}",
            e.message,
            rule.trim()
        ))),
    }
}

/// Why a `valid` rule does not pass, if it does not.
fn check_valid(case: &Json, rule: &str) -> Option<String> {
    let root = case["isRoot"].as_bool() == Some(true);
    match validate(case, rule, root) {
        Err(e) => Some(format!("unexpected error: {e}")),
        Ok(cost) => {
            if let Some(want) = case["expectedCost"].as_u64() {
                return (cost != want).then(|| format!("cost {cost}, want {want}"));
            }
            if case["expectSkipped"].as_bool() == Some(true) && cost != 0 {
                return Some(format!("not skipped (cost {cost})"));
            }
            None
        }
    }
}

/// Why an `errors` rule does not fail as upstream's does, if it does not (upstream checks
/// these with the validator of a resource root).
fn check_error(case: &Json, rule: &str, want: &str) -> Option<String> {
    match validate(case, rule, true) {
        Ok(_) => Some(format!("no error, want one containing {want:?}")),
        Err(e) if e.contains(want) => None,
        Err(e) => Some(format!("error {e:?} does not contain {want:?}")),
    }
}

#[test]
fn upstream_validation_table_gives_upstream_results() {
    let cases: Vec<Json> =
        serde_json::from_str(include_str!("data/validation_cases.json")).expect("valid case file");
    assert!(cases.len() >= 60, "the ported table is all there");
    let (mut rules, mut passing) = (0, 0);
    let mut failures = Vec::new();
    let mut known_passing = Vec::new();
    let mut seen_known = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        let valid = case["valid"].as_array().into_iter().flatten();
        let valid = valid.map(|r| {
            let r = r.as_str().unwrap_or_default();
            (r, check_valid(case, r))
        });
        let errors = case["errors"].as_object().into_iter().flatten();
        let errors = errors.map(|(r, want)| {
            (
                r.as_str(),
                check_error(case, r, want.as_str().unwrap_or_default()),
            )
        });
        for (rule, outcome) in valid.chain(errors).collect::<Vec<_>>() {
            rules += 1;
            let known = KNOWN_DIFFERENCES
                .iter()
                .find(|(c, r, _)| *c == name && *r == rule);
            if let Some(k) = known {
                seen_known.push(*k);
            }
            match (outcome, known) {
                (None, None) => passing += 1,
                (None, Some(_)) => known_passing.push(format!("{name}: `{rule}`")),
                (Some(_), Some(_)) => {}
                (Some(why), None) => failures.push(format!("{name}: `{rule}`: {why}")),
            }
        }
    }
    eprintln!(
        "{} cases, {rules} rules, {passing} pass, {} known differences, {} other failures",
        cases.len(),
        KNOWN_DIFFERENCES.len(),
        failures.len()
    );
    let stale: Vec<_> = KNOWN_DIFFERENCES
        .iter()
        .filter(|k| !seen_known.contains(k))
        .collect();
    assert!(
        stale.is_empty(),
        "known differences not in the table: {stale:?}"
    );
    assert!(
        known_passing.is_empty(),
        "these known differences pass now; remove them from KNOWN_DIFFERENCES:\n{}",
        known_passing.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} of {rules} rules differ from upstream:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
