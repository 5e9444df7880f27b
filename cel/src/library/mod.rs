//! The function table: every function and operator of the environment, each with its typed
//! overloads (what the checker matches), its implementation and its runtime cost.
//!
//! One table serves both the checker and the interpreter, so a call that type-checks runs the
//! same overload it was checked against; with `dyn` arguments the interpreter picks the
//! overload by the values' runtime types, and reports `no such overload` when none fits, as
//! cel-go does.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::error::EvalError;
use crate::types::{Bindings, Type, assignable};
use crate::value::Value;

pub(crate) mod k8s;
pub(crate) mod net;
pub(crate) mod std_lib;
pub(crate) mod strings;

/// An implementation: the arguments, receiver first for a member call.
pub(crate) type Impl = fn(&[Value]) -> Result<Value, EvalError>;
/// The runtime cost of one call, from its arguments.
pub(crate) type CostFn = fn(&[Value]) -> u64;

/// One overload of a function.
pub(crate) struct Overload {
    /// Called as `x.f(...)` (true) or `f(x, ...)`.
    pub(crate) member: bool,
    /// Parameter types, receiver first.
    pub(crate) params: Vec<Type>,
    /// Result type.
    pub(crate) result: Type,
    /// What it does.
    pub(crate) imp: Impl,
    /// What it costs.
    pub(crate) cost: CostFn,
}

/// The cost of most calls (cel-go's default call cost).
pub(crate) fn unit_cost(_: &[Value]) -> u64 {
    1
}

/// cel-go's `StringTraversalCostFactor`: a string operation costs 0.1 per byte it reads.
const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;

/// Size of a value for cost: bytes of strings, elements of lists and maps.
pub(crate) fn size_of(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.len() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.len() as u64,
        _ => 1,
    }
}

/// 1 plus 0.1 per byte of every argument (string functions reading their inputs once).
pub(crate) fn traversal_cost(args: &[Value]) -> u64 {
    let bytes: u64 = args.iter().map(size_of).sum();
    1 + (bytes as f64 * STRING_TRAVERSAL_COST_FACTOR).ceil() as u64
}

/// 1 plus one per element of every argument (list functions visiting each element).
pub(crate) fn linear_cost(args: &[Value]) -> u64 {
    1 + args.iter().map(size_of).sum::<u64>()
}

/// All functions, by name.
pub(crate) struct Library {
    functions: HashMap<&'static str, Vec<Overload>>,
}

/// The environment's library: built once.
pub(crate) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let mut lib = Library {
        functions: HashMap::new(),
    };
    std_lib::register(&mut lib);
    strings::register(&mut lib);
    k8s::register(&mut lib);
    net::register(&mut lib);
    crate::authz::register(&mut lib);
    lib
});

impl Library {
    /// Adds a global overload.
    pub(crate) fn global(
        &mut self,
        name: &'static str,
        params: Vec<Type>,
        result: Type,
        imp: Impl,
    ) {
        self.add(name, false, params, result, imp, unit_cost);
    }

    /// Adds a member overload (receiver first in `params`).
    pub(crate) fn member(
        &mut self,
        name: &'static str,
        params: Vec<Type>,
        result: Type,
        imp: Impl,
    ) {
        self.add(name, true, params, result, imp, unit_cost);
    }

    /// Adds an overload with its cost function.
    pub(crate) fn add(
        &mut self,
        name: &'static str,
        member: bool,
        params: Vec<Type>,
        result: Type,
        imp: Impl,
        cost: CostFn,
    ) {
        self.functions.entry(name).or_default().push(Overload {
            member,
            params,
            result,
            imp,
            cost,
        });
    }

    /// Whether a function of this name exists (any style).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// Whether a global function of this name exists.
    pub(crate) fn has_global(&self, name: &str) -> bool {
        self.functions
            .get(name)
            .is_some_and(|o| o.iter().any(|o| !o.member))
    }

    /// The overloads of `name` in the call style that accept `args`, with the result type
    /// of each; an empty list means no overload matches.
    pub(crate) fn resolve(&self, name: &str, member: bool, args: &[Type]) -> Vec<(usize, Type)> {
        let Some(overloads) = self.functions.get(name) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (i, o) in overloads.iter().enumerate() {
            if o.member != member || o.params.len() != args.len() {
                continue;
            }
            let mut bindings = Bindings::default();
            if o.params
                .iter()
                .zip(args)
                .all(|(p, a)| assignable(p, a, &mut bindings))
            {
                found.push((i, crate::types::substitute(&o.result, &bindings)));
            }
        }
        found
    }

    /// The overloads of `name` (for the interpreter).
    pub(crate) fn overloads(&self, name: &str) -> &[Overload] {
        self.functions.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Whether a runtime value may be passed where `param` is declared (shallow: a list matches
/// any list type).
pub(crate) fn value_matches(param: &Type, value: &Value) -> bool {
    match (param, value) {
        (Type::Dyn | Type::Param(_), _) => true,
        (Type::Null, Value::Null) => true,
        (Type::Bool, Value::Bool(_)) => true,
        (Type::Int, Value::Int(_)) => true,
        (Type::Uint, Value::Uint(_)) => true,
        (Type::Double, Value::Double(_)) => true,
        (Type::String, Value::String(_)) => true,
        (Type::Bytes, Value::Bytes(_)) => true,
        (Type::Duration, Value::Duration(_)) => true,
        (Type::Timestamp, Value::Timestamp(_)) => true,
        (Type::List(_), Value::List(_)) => true,
        (Type::Map(_, _) | Type::Object(_), Value::Map(_)) => true,
        (Type::Optional(_), Value::Optional(_)) => true,
        (Type::Type, Value::Type(_)) => true,
        // `authorizer` without a hook reaches any authorizer call, which then fails.
        (Type::Opaque(name), Value::Authz(a))
            if matches!(**a, crate::authz::AuthzValue::Unavailable) =>
        {
            name.starts_with("kubernetes.authorization.")
        }
        (Type::Opaque(name), v) => v.type_name() == *name,
        _ => false,
    }
}

/// The `no such overload` error of cel-go for a call that no overload accepts at run time.
pub(crate) fn no_such_overload() -> EvalError {
    EvalError::new("no such overload")
}

/// Shorthand for an error value.
pub(crate) fn err(message: impl Into<String>) -> EvalError {
    EvalError::new(message)
}
