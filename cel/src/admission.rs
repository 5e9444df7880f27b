//! Admission expressions: what webhooks' `matchConditions` (and later ValidatingAdmissionPolicy
//! expressions) are compiled against (upstream's
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/compile.go`): the variables
//! `object`, `oldObject`, `request` (the AdmissionRequest as JSON) and `params`, all `dyn`
//! because the kinds they hold are not known when the configuration is written.
//!
//! Use for a webhook's matchConditions: compile each with [`compile_match_condition`] when the
//! configuration is written (a compile error refuses it: upstream's
//! `webhooks[i].matchConditions[j].expression: Invalid value: "...": compilation failed: ...`),
//! then for each request build [`admission_vars`] once and call [`evaluate_match_conditions`]:
//! `Ok(false)` skips the webhook, `Err` applies its failurePolicy. The `authorizer` variable
//! is not declared (README: CEL), so an expression using it does not compile.

use crate::env::{Env, Program, RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS};
use crate::error::{CompileError, EvalError};
use crate::eval::Vars;
use crate::types::Type;
use crate::value::Value;

/// The environment of admission expressions.
pub fn admission_env() -> Env {
    Env::new()
        .with_var("object", Type::Dyn)
        .with_var("oldObject", Type::Dyn)
        .with_var("request", Type::Dyn)
        .with_var("params", Type::Dyn)
}

/// Compiles one matchCondition; it must yield a bool.
///
/// # Errors
/// cel-go's issues, or upstream's `cel expression must evaluate to a bool`.
pub fn compile_match_condition(expression: &str) -> Result<Program, CompileError> {
    let program = admission_env().compile(expression)?;
    if !matches!(program.result_type, Type::Bool | Type::Dyn) {
        return Err(CompileError {
            text: "cel expression must evaluate to a bool".into(),
            messages: vec!["cel expression must evaluate to a bool".into()],
        });
    }
    Ok(program)
}

/// The variables of one admission request: `object` and `oldObject` (null when absent) and
/// the AdmissionRequest (`request`), all as JSON.
pub fn admission_vars(
    object: Option<&serde_json::Value>,
    old_object: Option<&serde_json::Value>,
    request: &serde_json::Value,
) -> Vars {
    let or_null = |v: Option<&serde_json::Value>| v.map_or(Value::Null, Value::from_json);
    Vars::new()
        .with("object", or_null(object))
        .with("oldObject", or_null(old_object))
        .with("request", Value::from_json(request))
        .with("params", Value::Null)
}

/// Evaluates matchConditions in order as upstream's matcher does: the first that is false
/// means no match (`Ok(false)`); an error (or a non-bool) is returned after all are tried,
/// unless one was false; all the conditions share upstream's match-condition budget.
///
/// # Errors
/// The first condition's error, named by its index.
pub fn evaluate_match_conditions(
    conditions: &[Program],
    vars: &Vars,
) -> Result<bool, (usize, EvalError)> {
    let mut budget = RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS;
    let mut first_error = None;
    for (i, condition) in conditions.iter().enumerate() {
        let run = condition.eval(vars, budget);
        budget = budget.saturating_sub(run.cost);
        match run.result {
            Ok(Value::Bool(false)) => return Ok(false),
            Ok(Value::Bool(true)) => {}
            Ok(_) => {
                first_error.get_or_insert((i, EvalError::new("no such overload")));
            }
            Err(e) => {
                first_error.get_or_insert((i, e));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_false_condition_skips_and_an_error_reports() {
        let skip_system =
            compile_match_condition("!(request.userInfo.username.startsWith('system:'))")
                .expect("compiles");
        let has_label =
            compile_match_condition("'team' in object.metadata.labels").expect("compiles");
        let object = json!({"metadata": {"labels": {"team": "a"}}});
        let by_user = |name: &str| {
            admission_vars(
                Some(&object),
                None,
                &json!({"userInfo": {"username": name}}),
            )
        };
        let conditions = [skip_system, has_label];
        assert_eq!(
            evaluate_match_conditions(&conditions, &by_user("alice")),
            Ok(true)
        );
        assert_eq!(
            evaluate_match_conditions(&conditions, &by_user("system:kube-scheduler")),
            Ok(false)
        );
        let broken = [compile_match_condition("object.spec.replicas > 1").expect("compiles")];
        let err = evaluate_match_conditions(&broken, &by_user("alice")).expect_err("no spec");
        assert_eq!(err.0, 0);
        assert_eq!(err.1.message, "no such key: spec");
        assert!(compile_match_condition("1 + 1").is_err());
        assert!(compile_match_condition("authorizer.group('') != null").is_err());
    }
}
