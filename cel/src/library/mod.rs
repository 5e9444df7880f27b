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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The functions of cel-go itself that the table holds: the standard library
    /// (`common/stdlib/standard.go`), the extended strings (`ext/strings.go`, version 2 as
    /// Kubernetes configures it), sets (`ext/sets.go`) and optional types (`cel/library.go`).
    const CEL_GO: [&str; 61] = [
        "!_",
        "-_",
        "@in",
        "_!=_",
        "_%_",
        "_*_",
        "_+_",
        "_-_",
        "_/_",
        "_<=_",
        "_<_",
        "_==_",
        "_>=_",
        "_>_",
        "bool",
        "bytes",
        "contains",
        "double",
        "duration",
        "dyn",
        "endsWith",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getMonth",
        "getSeconds",
        "int",
        "matches",
        "size",
        "startsWith",
        "string",
        "timestamp",
        "type",
        "uint",
        "charAt",
        "indexOf",
        "lastIndexOf",
        "lowerAscii",
        "upperAscii",
        "replace",
        "split",
        "substring",
        "trim",
        "join",
        "format",
        "strings.quote",
        "sets.contains",
        "sets.equivalent",
        "sets.intersects",
        "optional.none",
        "optional.of",
        "optional.ofNonZeroValue",
        "or",
        "orValue",
        "hasValue",
        "value",
    ];

    /// Functions upstream's list holds that are not in Kubernetes 1.32's CEL environment
    /// (`staging/src/k8s.io/apiserver/pkg/cel/environment/base.go` of v0.32.0 adds neither
    /// library), so not built here (docs/webhooks-and-cel.md).
    const NOT_IN_THE_ENVIRONMENT: [(&str, &str); 6] = [
        (
            "isSemver",
            "semver library: not in the 1.32 base environment",
        ),
        ("major", "semver library: not in the 1.32 base environment"),
        ("minor", "semver library: not in the 1.32 base environment"),
        ("patch", "semver library: not in the 1.32 base environment"),
        ("semver", "semver library: not in the 1.32 base environment"),
        (
            "jsonpatch.escapeKey",
            "JSONPatch library: only MutatingAdmissionPolicy's environment",
        ),
    ];

    // Upstream: pkg/cel/library/library_compatibility_test.go `TestLibraryCompatibility`,
    // its list ported by tests/data/port_library_functions.py. Upstream asserts that the
    // names its libraries declare are exactly the listed ones; here, that every listed name
    // is a function of the table (less those outside the environment, named with the
    // reason), and that every function of the table is either listed or cel-go's own.
    #[test]
    fn kubernetes_functions_are_the_ones_upstream_lists() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/library_functions.json"))
                .expect("valid function list");
        let listed: BTreeSet<&str> = data["known_functions"]
            .as_object()
            .expect("versions")
            .values()
            .flat_map(|names| names.as_array().into_iter().flatten())
            .filter_map(serde_json::Value::as_str)
            .collect();
        assert!(listed.len() > 60, "the list is all there");
        let not_built: BTreeSet<&str> = NOT_IN_THE_ENVIRONMENT.iter().map(|(n, _)| *n).collect();
        let missing: Vec<_> = listed
            .iter()
            .filter(|n| !not_built.contains(*n) && !super::LIBRARY.has(n))
            .collect();
        assert!(
            missing.is_empty(),
            "upstream's functions missing: {missing:?}"
        );
        let stale: Vec<_> = not_built
            .iter()
            .filter(|n| !listed.contains(*n) || super::LIBRARY.has(n))
            .collect();
        assert!(stale.is_empty(), "not-built entries to revisit: {stale:?}");
        // Upstream's named formats (`ConstantFormats` of `pkg/cel/library/format.go`): each
        // is a function `format.<name>()`, declared apart from the library's `declarations()`,
        // so upstream's list leaves them out.
        let formats: BTreeSet<String> = super::k8s::FORMAT_NAMES
            .iter()
            .map(|f| format!("format.{f}"))
            .collect();
        let unexpected: Vec<_> = super::LIBRARY
            .functions
            .keys()
            .filter(|n| !listed.contains(*n) && !CEL_GO.contains(n) && !formats.contains(**n))
            .collect();
        assert!(
            unexpected.is_empty(),
            "functions neither upstream's Kubernetes libraries nor cel-go's: {unexpected:?}"
        );
    }
}
