//! Kubernetes' CEL environment for kubemock: what CRD validation rules
//! (`x-kubernetes-validations`), ValidatingAdmissionPolicies and admission webhooks'
//! `matchConditions` are written in.
//!
//! The language's grammar and macros come from cel-rust (`cel` on crates.io), whose parser
//! is a port of cel-go's; its interpreter is not used, because it has no type checker and no
//! cost accounting, and Kubernetes needs both: a rule must be refused when its CRD is
//! written if it names a field the schema lacks, and a rule must be cut off at upstream's
//! cost limit. So this crate has its own checker, interpreter and function table, with the
//! Kubernetes libraries (`staging/src/k8s.io/apiserver/pkg/cel/library/`) on top.
//!
//! It is pure, like `kubemock-apimachinery` (whose Quantity and name rules it uses): no
//! HTTP, no store, no async.
//!
//! Layout:
//! - `value`: values; `types`: the checker's types.
//! - `check`: type checking and lowering; `eval`: the cost-counting interpreter;
//!   `cost`: the compile-time cost estimate (cel-go's `EstimateCost`), with which upstream
//!   refuses a CRD whose rule may cost too much.
//! - `library`: the function table (standard, extended strings, sets, lists, regex, URL,
//!   quantity, format, IP, CIDR, optional); `authz`: the authorizer library and its hook.
//! - `env`: compile and run; `schema`: OpenAPI schemas as CEL types and JSON as values.
//! - `formats`: the schema `format`s upstream validates.
//! - `admission`: admission expressions (webhooks' matchConditions, ValidatingAdmissionPolicy
//!   variables, validations, messages, audit annotations), their variables and budget.
//! - `typecheck`: a ValidatingAdmissionPolicy's expressions checked against the schemas of
//!   the kinds it matches (the warnings of its `status.typeChecking`).

pub mod admission;
pub mod authz;
pub mod cost;
pub mod env;
pub mod error;
pub mod formats;
pub mod schema;
pub mod typecheck;
pub mod types;
pub mod value;

mod check;
mod eval;
mod library;

pub use cost::CostEstimate;
pub use env::{
    Env, Evaluation, PER_CALL_LIMIT, Program, RUNTIME_CEL_COST_BUDGET,
    RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS,
};
pub use error::{COST_LIMIT_MESSAGE, CompileError, EvalError};
pub use eval::{Activation, Vars};
pub use types::Type;
pub use value::Value;
