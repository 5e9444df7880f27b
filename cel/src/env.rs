//! Compiling an expression in Kubernetes' environment: parse (cel-rust, with Kubernetes'
//! optional syntax on), check against the declared variables, lower; and running the result
//! with a cost limit.

use std::sync::Arc;

use crate::check::{Checker, Node};
use crate::cost::{CostEstimate, Sizes, estimate};
use crate::error::{CompileError, EvalError, format_issue};
use crate::eval::{Activation, Interpreter};
use crate::schema::DeclSize;
use crate::types::Type;
use crate::value::Value;

/// Upstream's `PerCallLimit` (`staging/src/k8s.io/apiserver/pkg/apis/cel/config.go`): the
/// cost one evaluation of one expression may reach (about 0.1 s of work in cel-go).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream's `RuntimeCELCostBudget`: the cost all the rules of one custom resource, or of one
/// policy binding, may reach together.
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;
/// Upstream's `RuntimeCELCostBudgetMatchConditions`: all match conditions of one object.
pub const RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS: u64 = 2_500_000;
/// cel-go's default parser recursion limit (Kubernetes keeps it).
const MAX_RECURSION_DEPTH: u16 = 250;

/// The variables an expression may read, with their types.
#[derive(Clone, Debug, Default)]
pub struct Env {
    vars: Vec<(String, Type)>,
    /// The sizes of the variables' values for the cost estimate (a CRD rule's `self` and
    /// `oldSelf` share them); none leaves every size unknown.
    sizes: Option<Arc<DeclSize>>,
}

/// A compiled expression.
#[derive(Debug)]
pub struct Program {
    node: Node,
    /// The type the checker found for the whole expression.
    pub result_type: Type,
    /// The declared variables the expression reads.
    pub referenced: Vec<String>,
    /// The compile-time cost estimate (cel-go's `EstimateCost`), under the sizes the
    /// environment was given ([`Env::with_sizes`]).
    pub estimated_cost: CostEstimate,
}

impl Env {
    /// An environment with no variables.
    pub fn new() -> Env {
        Env::default()
    }

    /// Declares a variable.
    #[must_use]
    pub fn with_var(mut self, name: &str, t: Type) -> Env {
        self.vars.retain(|(n, _)| n != name);
        self.vars.push((name.to_string(), t));
        self
    }

    /// Gives the sizes of the variables' values (upstream's CRD size estimator: every
    /// variable's path is read from the same root), for [`Program::estimated_cost`].
    #[must_use]
    pub fn with_sizes(mut self, sizes: Arc<DeclSize>) -> Env {
        self.sizes = Some(sizes);
        self
    }

    /// Parses and checks `source`.
    ///
    /// # Errors
    /// cel-go's issues when it does not parse or type-check.
    pub fn compile(&self, source: &str) -> Result<Program, CompileError> {
        self.compile_sized(source, Sizes::of(self.sizes.as_deref()))
    }

    /// [`Env::compile`], the cost estimated with `sizes`.
    pub(crate) fn compile_sized(
        &self,
        source: &str,
        sizes: Sizes<'_>,
    ) -> Result<Program, CompileError> {
        let parser = cel::parser::Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(MAX_RECURSION_DEPTH);
        let (expr, info) = match parser.parse_with_source_info(source) {
            Ok(parsed) => parsed,
            Err(errors) => {
                return Err(CompileError {
                    text: errors.to_string(),
                    messages: errors.errors.iter().map(|e| e.msg.clone()).collect(),
                });
            }
        };
        let mut checker = Checker::new(&self.vars);
        let (node, result_type) = checker.check(&expr);
        if checker.issues.is_empty() {
            checker.validate_literals(&expr);
        }
        if !checker.issues.is_empty() {
            let texts: Vec<String> = checker
                .issues
                .iter()
                .map(|(id, message)| {
                    let offset = info.offset_for(*id).map_or(0, |(start, _)| start as usize);
                    // Offsets count characters; convert to a byte offset.
                    let byte = source
                        .char_indices()
                        .nth(offset)
                        .map_or(source.len(), |(b, _)| b);
                    format_issue(source, byte, message)
                })
                .collect();
            return Err(CompileError {
                text: texts.join("\n"),
                messages: checker.issues.iter().map(|(_, m)| m.clone()).collect(),
            });
        }
        let estimated_cost = estimate(&expr, &checker.types, &checker.calls, sizes);
        Ok(Program {
            node,
            result_type,
            referenced: checker.referenced,
            estimated_cost,
        })
    }
}

/// The outcome of one evaluation: the value or error, and the cost it reached.
#[derive(Debug)]
pub struct Evaluation {
    /// The value, or cel-go's error.
    pub result: Result<Value, EvalError>,
    /// The actual cost.
    pub cost: u64,
}

impl Program {
    /// Runs the program; evaluation stops with the cost-limit error once its cost passes
    /// `limit`.
    pub fn eval(&self, vars: &dyn Activation, limit: u64) -> Evaluation {
        let mut interpreter = Interpreter::new(vars, limit);
        let result = interpreter.eval(&self.node);
        Evaluation {
            result,
            cost: interpreter.cost,
        }
    }

    /// Whether the expression reads `name`.
    pub fn references(&self, name: &str) -> bool {
        self.referenced.iter().any(|r| r == name)
    }
}

/// A shared compiled program.
pub type SharedProgram = Arc<Program>;
