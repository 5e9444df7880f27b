//! Admission expressions: webhooks' `matchConditions` and ValidatingAdmissionPolicies'
//! variables, match conditions, validations, message expressions and audit annotations, as
//! upstream compiles and runs them (`staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/`:
//! `compile.go`, `activation.go`, `composition.go`, `condition.go`; the matcher of
//! `plugin/webhook/matchconditions/matcher.go`).
//!
//! The variables: `object` and `oldObject` (`dyn`, null when absent), `request` (the
//! AdmissionRequest without `uid`, `object` and `oldObject`, typed as upstream's
//! `kubernetes.AdmissionRequest`), `namespaceObject` (typed as `kubernetes.Namespace`),
//! `params` (`dyn`, only when a policy has a `paramKind`), `variables` (a policy's composited
//! variables, each evaluated at most once per request, when first read) and `authorizer`.
//!
//! `authorizer` and `authorizer.requestResource` (upstream's authorization library,
//! [`crate::authz`]) are declared where upstream declares them; their checks ask the
//! [`Authorize`] hook of [`Inputs::authz`]. An activation without one makes every
//! authorizer call fail with [`crate::authz::NO_AUTHORIZER`] (never a silent allow).
//!
//! Use: compile each expression with a [`Compiler`] when the configuration is written (a
//! compile error refuses the object, worded by [`Compiler::compile`] as upstream's
//! validation words it) and keep the programs; per request, build one [`AdmissionActivation`]
//! and run the expressions with [`evaluate`] (or [`match_conditions`]).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::authz::{
    AUTHORIZER_TYPE, Authorize, RESOURCE_CHECK_TYPE, RequestResource, UserInfo, authorizer_value,
    request_resource_value,
};
use crate::check::VARIABLES;
use crate::env::{Env, PER_CALL_LIMIT, Program, RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS};
use crate::error::EvalError;
use crate::eval::{Activation, Vars};
use crate::types::{ObjectType, Type};
use crate::value::Value;

/// The error of a set of expressions whose total cost passed the budget (upstream's
/// `ErrOutOfBudget` detail): no further expression is run.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// Which optional variables are declared (upstream's `OptionalVariableDeclarations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Declarations {
    /// `params` (a policy with a `paramKind`).
    pub params: bool,
    /// `authorizer` and `authorizer.requestResource` (where upstream declares them).
    pub authorizer: bool,
}

/// What an expression must evaluate to (upstream's `ReturnTypes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returns {
    /// `bool`: match conditions and validations.
    Bool,
    /// `string`: message expressions.
    String,
    /// `string` or `null`: audit annotations' value expressions.
    StringOrNull,
    /// Anything: variables.
    Any,
}

/// A compiled expression: its source and its program, or the compile error's detail (a
/// stored configuration written before a check existed still runs, failing as upstream's
/// `compilation error: ...`).
#[derive(Debug)]
pub struct Expression {
    /// The source as written.
    pub source: String,
    /// The program, or why there is none.
    pub program: Result<Program, String>,
}

/// One composited variable of a policy.
#[derive(Debug)]
pub struct Variable {
    /// `name`.
    pub name: String,
    /// Its expression.
    pub expression: Expression,
}

/// Compiles the expressions of one configuration: the declarations, and the variables
/// compiled so far (a variable may read the ones before it).
#[derive(Debug, Default)]
pub struct Compiler {
    declarations: Declarations,
    /// Whether `variables` is declared (a policy with variables: upstream's composition).
    composition: bool,
    variables: Vec<Variable>,
    variable_types: BTreeMap<String, Type>,
    /// The type of `object` and `oldObject`; `None` is `dyn` (admission at run time, as
    /// upstream's `compile.go`; a schema's type only for status type checking,
    /// [`crate::typecheck`]).
    object_type: Option<Type>,
    /// The type of `params` (when declared); `None` is `dyn`.
    params_type: Option<Type>,
}

/// `kubernetes.AdmissionRequest` (`BuildRequestType`).
fn request_type() -> Type {
    let object = |name: &str, fields: &[(&str, Type)]| {
        Type::Object(Arc::new(ObjectType {
            name: name.to_owned(),
            fields: fields
                .iter()
                .map(|(n, t)| ((*n).to_owned(), t.clone()))
                .collect(),
        }))
    };
    let gvk = object(
        "kubernetes.GroupVersionKind",
        &[
            ("group", Type::String),
            ("version", Type::String),
            ("kind", Type::String),
        ],
    );
    let gvr = object(
        "kubernetes.GroupVersionResource",
        &[
            ("group", Type::String),
            ("version", Type::String),
            ("resource", Type::String),
        ],
    );
    let user = object(
        "kubernetes.UserInfo",
        &[
            ("username", Type::String),
            ("uid", Type::String),
            ("groups", Type::list(Type::String)),
            ("extra", Type::map(Type::String, Type::list(Type::String))),
        ],
    );
    object(
        "kubernetes.AdmissionRequest",
        &[
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", Type::String),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", Type::String),
            ("name", Type::String),
            ("namespace", Type::String),
            ("operation", Type::String),
            ("userInfo", user),
            ("dryRun", Type::Bool),
            ("options", Type::Dyn),
        ],
    )
}

/// `kubernetes.Namespace` (`BuildNamespaceType`).
fn namespace_type() -> Type {
    let object = |name: &str, fields: Vec<(&str, Type)>| {
        Type::Object(Arc::new(ObjectType {
            name: name.to_owned(),
            fields: fields.into_iter().map(|(n, t)| (n.to_owned(), t)).collect(),
        }))
    };
    let strings = || Type::list(Type::String);
    let condition = object(
        "kubernetes.NamespaceCondition",
        vec![
            ("status", Type::String),
            ("type", Type::String),
            ("lastTransitionTime", Type::Timestamp),
            ("message", Type::String),
            ("reason", Type::String),
        ],
    );
    let metadata = object(
        "kubernetes.NamespaceMetadata",
        vec![
            ("name", Type::String),
            ("generateName", Type::String),
            ("namespace", Type::String),
            ("labels", Type::map(Type::String, Type::String)),
            ("annotations", Type::map(Type::String, Type::String)),
            ("UID", Type::String),
            ("creationTimestamp", Type::Timestamp),
            ("deletionGracePeriodSeconds", Type::Int),
            ("deletionTimestamp", Type::Timestamp),
            ("generation", Type::Int),
            ("resourceVersion", Type::String),
            ("finalizers", strings()),
        ],
    );
    object(
        "kubernetes.Namespace",
        vec![
            ("metadata", metadata),
            (
                "spec",
                object("kubernetes.NamespaceSpec", vec![("finalizers", strings())]),
            ),
            (
                "status",
                object(
                    "kubernetes.NamespaceStatus",
                    vec![
                        ("conditions", Type::list(condition)),
                        ("phase", Type::String),
                    ],
                ),
            ),
        ],
    )
}

impl Compiler {
    /// A compiler for expressions with these declarations; `composition` declares
    /// `variables` (a policy with variables).
    pub fn new(declarations: Declarations, composition: bool) -> Compiler {
        Compiler {
            declarations,
            composition,
            variables: Vec::new(),
            variable_types: BTreeMap::new(),
            object_type: None,
            params_type: None,
        }
    }

    /// Types `object` and `oldObject` as `object`, and `params` (when declared) as `params`,
    /// instead of `dyn`: upstream's `typeCheckingCompiler` (`policy/validating/
    /// typechecking.go`), for the warnings of a policy's `status.typeChecking`.
    #[must_use]
    pub fn with_types(mut self, object: Option<Type>, params: Option<Type>) -> Compiler {
        self.object_type = object;
        self.params_type = params;
        self
    }

    /// The environment; `authorizer` is declared when the configuration declares it and
    /// the expression may see it (`authorizer`: message expressions may not).
    fn env(&self, authorizer: bool) -> Env {
        let object = self.object_type.clone().unwrap_or(Type::Dyn);
        let mut env = Env::new()
            .with_var("object", object.clone())
            .with_var("oldObject", object)
            .with_var("namespaceObject", namespace_type())
            .with_var("request", request_type());
        if self.declarations.params {
            env = env.with_var("params", self.params_type.clone().unwrap_or(Type::Dyn));
        }
        if self.declarations.authorizer && authorizer {
            env = env
                .with_var(AUTHORIZER, Type::Opaque(AUTHORIZER_TYPE))
                .with_var(REQUEST_RESOURCE, Type::Opaque(RESOURCE_CHECK_TYPE));
        }
        if self.composition {
            env = env.with_var(
                VARIABLES,
                Type::Object(Arc::new(ObjectType {
                    name: "kubernetes.variables".to_owned(),
                    fields: self.variable_types.clone(),
                })),
            );
        }
        env
    }

    /// Compiles `source` (upstream's `CompileCELExpression`), with `authorizer` declared or
    /// not (message expressions do not see it).
    ///
    /// # Errors
    /// Upstream's detail: `compilation failed: <cel-go's issues>`, `must evaluate to bool
    /// but got int`.
    pub fn compile(&self, source: &str, returns: Returns, authorizer: bool) -> Expression {
        let program = self.compile_program(source, returns, authorizer);
        Expression {
            source: source.to_owned(),
            program,
        }
    }

    fn compile_program(
        &self,
        source: &str,
        returns: Returns,
        authorizer: bool,
    ) -> Result<Program, String> {
        let program = self
            .env(authorizer)
            .compile(source)
            .map_err(|err| format!("compilation failed: {}", err.text))?;
        let t = &program.result_type;
        let (fits, wanted) = match returns {
            Returns::Bool => (*t == Type::Bool, "bool"),
            Returns::String => (*t == Type::String, "string"),
            Returns::StringOrNull => (
                matches!(t, Type::String | Type::Null),
                "one of [string null_type]",
            ),
            Returns::Any => (true, ""),
        };
        if !fits {
            return Err(format!("must evaluate to {wanted} but got {t}"));
        }
        Ok(program)
    }

    /// The type checker's issues with `source` (cel-go's `issues.String()`: the
    /// `ERROR: <input>:1:6: ...` lines with their carets), `None` when it checks; any
    /// result type is accepted, and `authorizer` is declared, as upstream's
    /// `typeCheckingCompiler` does.
    pub fn issues(&self, source: &str) -> Option<String> {
        self.env(true).compile(source).err().map(|err| err.text)
    }

    /// Compiles a variable and adds it to those later expressions may read
    /// (`CompileAndStoreVariable`); its error detail, if it does not compile.
    pub fn add_variable(&mut self, name: &str, source: &str) -> Option<String> {
        let expression = self.compile(source, Returns::Any, true);
        let (t, error) = match &expression.program {
            Ok(program) => (program.result_type.clone(), None),
            Err(e) => (Type::Dyn, Some(e.clone())),
        };
        self.variable_types.insert(name.to_owned(), t);
        self.variables.push(Variable {
            name: name.to_owned(),
            expression,
        });
        error
    }

    /// The variables compiled so far.
    pub fn into_variables(self) -> Arc<[Variable]> {
        self.variables.into()
    }
}

/// `authorizer`.
const AUTHORIZER: &str = "authorizer";
/// `authorizer.requestResource`.
const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// What `authorizer` checks with: the server's authorizer, the requester and the request's
/// resource (upstream's `NewAuthorizerVal` and `NewResourceAuthorizerVal` arguments).
#[derive(Clone)]
pub struct AuthzInputs {
    /// The server's authorizer.
    pub authorizer: Arc<dyn Authorize>,
    /// The requester (`request.userInfo`).
    pub user: UserInfo,
    /// The request's group, resource, subresource, namespace and name.
    pub resource: RequestResource,
}

impl std::fmt::Debug for AuthzInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthzInputs")
            .field("user", &self.user)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// The values of one admission request, for [`AdmissionActivation::new`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs<'a> {
    /// The object (none for a delete).
    pub object: Option<&'a serde_json::Value>,
    /// The old object (none for a create).
    pub old_object: Option<&'a serde_json::Value>,
    /// The AdmissionRequest as JSON (no `uid`, `object`, `oldObject`).
    pub request: &'a serde_json::Value,
    /// The namespace of a namespaced request (its metadata, spec and status).
    pub namespace: Option<&'a serde_json::Value>,
    /// The param of a policy binding.
    pub params: Option<&'a serde_json::Value>,
    /// What `authorizer` checks with; `None`: every authorizer call fails with
    /// [`crate::authz::NO_AUTHORIZER`].
    pub authz: Option<&'a AuthzInputs>,
}

/// The variables of one evaluation (upstream's `evaluationActivation`): a policy's variables
/// are evaluated when first read and kept, their cost counted apart (`compositionContext`).
pub struct AdmissionActivation {
    vars: Vars,
    variables: Arc<[Variable]>,
    /// Each variable's value once evaluated, by index.
    cache: RefCell<Vec<Option<Result<Value, EvalError>>>>,
    /// The cost of the variables evaluated since the last [`AdmissionActivation::take_cost`].
    composition_cost: Cell<u64>,
}

impl AdmissionActivation {
    /// The activation of `inputs` with a policy's `variables` (empty for a webhook).
    pub fn new(inputs: &Inputs<'_>, variables: Arc<[Variable]>) -> AdmissionActivation {
        let or_null = |v: Option<&serde_json::Value>| v.map_or(Value::Null, Value::from_json);
        let vars = Vars::new()
            .with("object", or_null(inputs.object))
            .with("oldObject", or_null(inputs.old_object))
            .with("request", Value::from_json(inputs.request))
            .with("namespaceObject", or_null(inputs.namespace))
            .with("params", or_null(inputs.params))
            .with(
                AUTHORIZER,
                match inputs.authz {
                    Some(a) => authorizer_value(Some(a.authorizer.clone()), a.user.clone()),
                    None => authorizer_value(None, UserInfo::default()),
                },
            )
            .with(
                REQUEST_RESOURCE,
                match inputs.authz {
                    Some(a) => request_resource_value(
                        Some(a.authorizer.clone()),
                        a.user.clone(),
                        &a.resource,
                    ),
                    None => request_resource_value(
                        None,
                        UserInfo::default(),
                        &RequestResource::default(),
                    ),
                },
            );
        let cache = RefCell::new(vec![None; variables.len()]);
        AdmissionActivation {
            vars,
            variables,
            cache,
            composition_cost: Cell::new(0),
        }
    }

    /// The cost the variables have reached since the last call, reset.
    fn take_cost(&self) -> u64 {
        self.composition_cost.replace(0)
    }
}

impl Activation for AdmissionActivation {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.vars.resolve(name)
    }

    fn variable(&self, name: &str) -> Option<Result<Value, EvalError>> {
        let index = self.variables.iter().position(|v| v.name == name)?;
        if let Some(done) = self.cache.borrow().get(index).cloned().flatten() {
            return Some(done);
        }
        let variable = &self.variables[index];
        // The borrow is released: the variable may read earlier variables.
        let result = match &variable.expression.program {
            Err(e) => Err(EvalError::new(format!(
                "composited variable {name:?} fails to compile: {e}"
            ))),
            Ok(program) => {
                let run = program.eval(self, PER_CALL_LIMIT);
                self.composition_cost
                    .set(self.composition_cost.get().saturating_add(run.cost));
                run.result.map_err(|e| {
                    EvalError::new(format!(
                        "composited variable {name:?} fails to evaluate: {e}"
                    ))
                })
            }
        };
        if let Some(slot) = self.cache.borrow_mut().get_mut(index) {
            *slot = Some(result.clone());
        }
        Some(result)
    }
}

/// One expression's outcome: its value, or upstream's error detail (`expression '...'
/// resulted in error: ...`, `compilation error: ...`).
pub type Outcome = Result<Value, String>;

/// Runs `expressions` in order within `budget` (upstream's `ForInput`): each is limited to
/// [`PER_CALL_LIMIT`]; `None` entries (a validation without a messageExpression) give
/// `None`. Returns the outcomes and the budget left.
///
/// # Errors
/// [`OUT_OF_BUDGET`] once the expressions (and the variables they read) together pass
/// `budget`: upstream then discards every outcome.
pub fn evaluate(
    expressions: &[Option<&Expression>],
    activation: &AdmissionActivation,
    budget: u64,
) -> Result<(Vec<Option<Outcome>>, u64), String> {
    let mut remaining = budget;
    let mut outcomes = Vec::with_capacity(expressions.len());
    for expression in expressions {
        let Some(expression) = expression else {
            outcomes.push(None);
            continue;
        };
        let program = match &expression.program {
            Ok(program) => program,
            Err(e) => {
                outcomes.push(Some(Err(format!("compilation error: {e}"))));
                continue;
            }
        };
        let run = program.eval(activation, PER_CALL_LIMIT);
        let composition = activation.take_cost();
        remaining = remaining
            .checked_sub(composition)
            .ok_or_else(|| OUT_OF_BUDGET.to_owned())?;
        remaining = remaining
            .checked_sub(run.cost)
            .ok_or_else(|| OUT_OF_BUDGET.to_owned())?;
        outcomes.push(Some(run.result.map_err(|e| {
            format!(
                "expression '{}' resulted in error: {}",
                expression.source, e.message
            )
        })));
    }
    Ok((outcomes, remaining))
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several (duplicates once)
/// in brackets, comma-separated.
pub fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Evaluates match conditions as upstream's matcher does (`matchconditions/matcher.go`):
/// any false means no match (`Ok(false)`) whatever else failed; otherwise any error is the
/// aggregate error (the caller applies its failurePolicy: Fail refuses, Ignore skips); all
/// true is a match. All share upstream's match-condition budget.
///
/// # Errors
/// The aggregated error details, or [`OUT_OF_BUDGET`].
pub fn match_conditions(
    conditions: &[Expression],
    activation: &AdmissionActivation,
) -> Result<bool, String> {
    let refs: Vec<Option<&Expression>> = conditions.iter().map(Some).collect();
    let (outcomes, _) = evaluate(&refs, activation, RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)?;
    let mut errors = Vec::new();
    for outcome in outcomes.into_iter().flatten() {
        match outcome {
            Ok(Value::Bool(false)) => return Ok(false),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(aggregate(&errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn webhook_compiler() -> Compiler {
        Compiler::new(
            Declarations {
                params: false,
                authorizer: true,
            },
            false,
        )
    }

    /// Cases after upstream's `matchconditions/matcher_test.go`.
    #[test]
    fn a_false_condition_skips_and_an_error_reports() {
        let compiler = webhook_compiler();
        let condition = |source: &str| compiler.compile(source, Returns::Bool, true);
        let conditions = [
            condition("!(request.userInfo.username.startsWith('system:'))"),
            condition("'team' in object.metadata.labels"),
        ];
        assert!(conditions.iter().all(|c| c.program.is_ok()));
        let object = json!({"metadata": {"labels": {"team": "a"}}});
        let by_user = |name: &str| json!({"userInfo": {"username": name}});
        let run = |conditions: &[Expression], user: &str| {
            let request = by_user(user);
            let inputs = Inputs {
                object: Some(&object),
                request: &request,
                ..Inputs::default()
            };
            match_conditions(
                conditions,
                &AdmissionActivation::new(&inputs, Arc::from([])),
            )
        };
        assert_eq!(run(&conditions, "alice"), Ok(true));
        assert_eq!(run(&conditions, "system:kube-scheduler"), Ok(false));
        let broken = [condition("object.spec.replicas > 1")];
        assert_eq!(
            run(&broken, "alice"),
            Err(
                "expression 'object.spec.replicas > 1' resulted in error: no such key: spec"
                    .to_owned()
            )
        );
        // A false condition wins over an error.
        let mixed = [
            condition("object.spec.replicas > 1"),
            condition("request.userInfo.username == 'bob'"),
        ];
        assert_eq!(run(&mixed, "alice"), Ok(false));
        let two_errors = [
            condition("object.spec.replicas > 1"),
            condition("object.status.ready == true"),
        ];
        assert_eq!(
            run(&two_errors, "alice"),
            Err("[expression 'object.spec.replicas > 1' resulted in error: no such key: spec, expression 'object.status.ready == true' resulted in error: no such key: status]".to_owned())
        );
    }

    #[test]
    fn compile_errors_read_as_upstreams() {
        let compiler = webhook_compiler();
        let error = |source: &str| {
            compiler
                .compile(source, Returns::Bool, true)
                .program
                .expect_err("refused")
        };
        assert_eq!(error("1 + 1"), "must evaluate to bool but got int");
        assert_eq!(
            error("object.metadata.labels['x']"),
            "must evaluate to bool but got dyn"
        );
        assert!(
            error("request.nope == 'x'")
                .starts_with("compilation failed: ERROR: <input>:1:8: undefined field 'nope'"),
            "{}",
            error("request.nope == 'x'")
        );
        assert!(error("params.x == 1").contains("undeclared reference to 'params'"));
        assert!(
            compiler
                .compile(
                    "authorizer.group('').resource('pods').check('get').allowed()",
                    Returns::Bool,
                    true
                )
                .program
                .is_ok()
        );
        assert!(
            error("authorizer.group('').check('get').allowed()")
                .contains("found no matching overload for 'check'"),
            "{}",
            error("authorizer.group('').check('get').allowed()")
        );
        // Message expressions do not see the authorizer at all.
        let message = compiler
            .compile("authorizer.group('') == 'x'", Returns::String, false)
            .program
            .expect_err("refused");
        assert!(
            message.contains("undeclared reference to 'authorizer'"),
            "{message}"
        );
    }

    #[test]
    fn variables_are_lazy_memoized_and_typed() {
        let mut compiler = Compiler::new(
            Declarations {
                params: true,
                authorizer: true,
            },
            true,
        );
        assert_eq!(
            compiler.add_variable("replicas", "object.spec.replicas"),
            None
        );
        assert_eq!(
            compiler.add_variable("limit", "params.max * 2"),
            None,
            "params are declared"
        );
        assert_eq!(compiler.add_variable("broken", "object.nope.deeper"), None);
        let validation =
            compiler.compile("variables.replicas <= variables.limit", Returns::Bool, true);
        let unused = compiler.compile("variables.replicas > 0", Returns::Bool, true);
        let using_broken = compiler.compile("variables.broken == 1", Returns::Bool, true);
        let undefined = compiler.compile("variables.other == 1", Returns::Bool, true);
        assert!(
            undefined
                .program
                .as_ref()
                .expect_err("undefined")
                .contains("undefined field 'other'")
        );
        let variables = compiler.into_variables();
        let object = json!({"spec": {"replicas": 7}});
        let params = json!({"max": 3});
        let request = json!({});
        let inputs = Inputs {
            object: Some(&object),
            request: &request,
            params: Some(&params),
            ..Inputs::default()
        };
        let activation = AdmissionActivation::new(&inputs, variables);
        let (outcomes, _) = evaluate(
            &[Some(&validation), Some(&unused), Some(&using_broken)],
            &activation,
            crate::RUNTIME_CEL_COST_BUDGET,
        )
        .expect("within budget");
        let values: Vec<String> = outcomes
            .into_iter()
            .flatten()
            .map(|o| match o {
                Ok(v) => v.to_string(),
                Err(e) => e,
            })
            .collect();
        assert_eq!(
            values,
            [
                "false",
                "true",
                "expression 'variables.broken == 1' resulted in error: composited variable \"broken\" fails to evaluate: no such key: nope"
            ]
        );
    }

    #[test]
    fn the_budget_is_shared_and_its_end_is_fatal() {
        let compiler = webhook_compiler();
        let costly = compiler.compile(
            "[1,2,3,4,5,6,7,8,9,10].all(x, [1,2,3,4,5,6,7,8,9,10].all(y, true))",
            Returns::Bool,
            true,
        );
        let request = json!({});
        let inputs = Inputs {
            request: &request,
            ..Inputs::default()
        };
        let activation = AdmissionActivation::new(&inputs, Arc::from([]));
        let (_, left) = evaluate(&[Some(&costly)], &activation, 1_000).expect("fits");
        assert!(left < 1_000);
        assert_eq!(
            evaluate(
                &[Some(&costly), Some(&costly)],
                &activation,
                1_000 - left + 1
            )
            .err(),
            Some(OUT_OF_BUDGET.to_owned())
        );
    }
    /// Grants `get` on pods in `default` to `alice` and to the `default/sa` service account;
    /// records every request.
    struct Fake(std::sync::Mutex<Vec<crate::authz::AuthzRequest>>);

    impl Authorize for Fake {
        fn authorize(&self, r: &crate::authz::AuthzRequest) -> crate::authz::AuthzDecision {
            use crate::authz::{AuthzDecision, AuthzTarget, Verdict};
            if let Ok(mut seen) = self.0.lock() {
                seen.push(r.clone());
            }
            let allowed = match &r.target {
                AuthzTarget::Resource(res) => {
                    r.verb == "get" && res.resource == "pods" && res.namespace == "default"
                }
                AuthzTarget::Path(p) => p == "/healthz",
            };
            let user_ok =
                r.user.name == "alice" || r.user.name == "system:serviceaccount:default:sa";
            AuthzDecision {
                verdict: if allowed && user_ok {
                    Verdict::Allow
                } else {
                    Verdict::NoOpinion
                },
                reason: "fake".to_owned(),
                error: None,
            }
        }
    }

    #[test]
    fn authorizer_checks_ask_the_hook_and_fail_without_one() {
        let compiler = webhook_compiler();
        let fake = Arc::new(Fake(std::sync::Mutex::new(Vec::new())));
        let user = |name: &str| UserInfo {
            name: name.to_owned(),
            ..UserInfo::default()
        };
        let authz = |name: &str| AuthzInputs {
            authorizer: fake.clone(),
            user: user(name),
            resource: RequestResource {
                group: "apps".to_owned(),
                resource: "deployments".to_owned(),
                subresource: "scale".to_owned(),
                namespace: "default".to_owned(),
                name: "web".to_owned(),
            },
        };
        let run = |source: &str, authz: Option<&AuthzInputs>| {
            let expression = compiler.compile(source, Returns::Any, true);
            let request = json!({});
            let inputs = Inputs {
                request: &request,
                authz,
                ..Inputs::default()
            };
            let activation = AdmissionActivation::new(&inputs, Arc::from([]));
            let (mut outcomes, _) = evaluate(
                &[Some(&expression)],
                &activation,
                crate::RUNTIME_CEL_COST_BUDGET,
            )
            .expect("within budget");
            outcomes.pop().flatten().expect("an outcome")
        };
        let alice = authz("alice");
        let bob = authz("bob");
        let pods = "authorizer.group('').resource('pods').namespace('default').check('get')";
        assert_eq!(
            run(&format!("{pods}.allowed()"), Some(&alice)).map(|v| v.to_string()),
            Ok("true".to_owned())
        );
        assert_eq!(
            run(&format!("{pods}.allowed()"), Some(&bob)).map(|v| v.to_string()),
            Ok("false".to_owned())
        );
        assert_eq!(
            run(
                "authorizer.serviceAccount('default', 'sa').group('').resource('pods').namespace('default').check('get').allowed()",
                Some(&bob)
            )
            .map(|v| v.to_string()),
            Ok("true".to_owned())
        );
        assert_eq!(
            run(
                "authorizer.path('/healthz').check('get').reason()",
                Some(&alice)
            )
            .map(|v| v.to_string()),
            Ok("\"fake\"".to_owned())
        );
        // `authorizer.requestResource` is the request's resource.
        let seen_before = fake.0.lock().map(|s| s.len()).unwrap_or(0);
        assert_eq!(
            run(
                "authorizer.requestResource.labelSelector('a in (').check('update').errored()",
                Some(&alice)
            )
            .map(|v| v.to_string()),
            Ok("false".to_owned())
        );
        let last = fake.0.lock().ok().and_then(|s| s.get(seen_before).cloned());
        let Some(crate::authz::AuthzRequest {
            target: crate::authz::AuthzTarget::Resource(res),
            verb,
            ..
        }) = last
        else {
            panic!("a resource check was asked: {last:?}");
        };
        assert_eq!(verb, "update");
        assert_eq!(
            (
                res.group.as_str(),
                res.resource.as_str(),
                res.subresource.as_str(),
                res.namespace.as_str(),
                res.name.as_str()
            ),
            ("apps", "deployments", "scale", "default", "web")
        );
        assert!(res.label_selector_error.is_some(), "{res:?}");
        // Upstream's argument errors.
        assert_eq!(
            run("authorizer.path('').check('get').allowed()", Some(&alice)).map(|v| v.to_string()),
            Err("expression 'authorizer.path('').check('get').allowed()' resulted in error: path must not be empty".to_owned())
        );
        assert!(
            run("authorizer.serviceAccount('default', 'Bad_Name').path('/x').check('get').allowed()", Some(&alice))
                .is_err_and(|e| e.ends_with("Invalid service account name"))
        );
        // No hook: a clear error, never an allow.
        assert!(
            run(&format!("{pods}.allowed()"), None)
                .is_err_and(|e| e.ends_with(crate::authz::NO_AUTHORIZER))
        );
        assert!(
            run("authorizer.requestResource.check('get').allowed()", None)
                .is_err_and(|e| e.ends_with(crate::authz::NO_AUTHORIZER))
        );
    }
}
