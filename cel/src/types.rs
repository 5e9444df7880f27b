//! The checker's types: what an expression is known to produce before it runs, so that a
//! rule calling `size()` on an int, or naming a field its schema lacks, is refused when the
//! CRD or policy is written (as cel-go's checker refuses it), not on the first object.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// An object type: a schema node with declared properties.
#[derive(Debug, PartialEq)]
pub struct ObjectType {
    /// Its name in messages.
    pub name: String,
    /// Its fields, by (escaped) CEL name.
    pub fields: BTreeMap<String, Type>,
}

/// A CEL type.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// Unknown until run time (`dyn`).
    Dyn,
    /// `null_type` (printed `null` in issues, as cel-go formats it).
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// An object with declared fields.
    Object(Arc<ObjectType>),
    /// A library type by name (`kubernetes.Quantity`, `net.IP`, ...).
    Opaque(&'static str),
    /// `optional_type(T)`.
    Optional(Box<Type>),
    /// `type`.
    Type,
    /// A type parameter in an overload's signature.
    Param(&'static str),
}

impl Type {
    /// `list(t)`.
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    /// `map(k, v)`.
    pub fn map(k: Type, v: Type) -> Type {
        Type::Map(Box::new(k), Box::new(v))
    }

    /// `optional_type(t)`.
    pub fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    /// Whether the type is (or holds) `dyn` or a parameter, so a value of it may be anything.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn | Type::Param(_))
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => write!(f, "dyn"),
            Type::Null => write!(f, "null"),
            Type::Bool => write!(f, "bool"),
            Type::Int => write!(f, "int"),
            Type::Uint => write!(f, "uint"),
            Type::Double => write!(f, "double"),
            Type::String => write!(f, "string"),
            Type::Bytes => write!(f, "bytes"),
            Type::Duration => write!(f, "google.protobuf.Duration"),
            Type::Timestamp => write!(f, "google.protobuf.Timestamp"),
            Type::List(t) => write!(f, "list({t})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(o) => write!(f, "{}", o.name),
            Type::Opaque(name) => write!(f, "{name}"),
            Type::Optional(t) => write!(f, "optional_type({t})"),
            Type::Type => write!(f, "type"),
            Type::Param(name) => write!(f, "{name}"),
        }
    }
}

/// Type parameters bound while matching one overload.
#[derive(Default)]
pub(crate) struct Bindings(Vec<(&'static str, Type)>);

impl Bindings {
    fn get(&self, name: &str) -> Option<&Type> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, t)| t)
    }
}

/// Whether an argument of type `arg` may be passed where `param` is declared, binding the
/// parameters of `param`. `dyn` on either side matches.
pub(crate) fn assignable(param: &Type, arg: &Type, bindings: &mut Bindings) -> bool {
    match (param, arg) {
        (Type::Param(name), _) => match bindings.get(name).cloned() {
            Some(bound) => {
                if bound.is_dyn() {
                    // Narrow a dyn binding to what is now known.
                    if let Some(slot) = bindings.0.iter_mut().find(|(n, _)| n == name) {
                        slot.1 = arg.clone();
                    }
                    true
                } else {
                    assignable(&bound, arg, bindings)
                }
            }
            None => {
                bindings.0.push((name, arg.clone()));
                true
            }
        },
        (Type::Dyn, _) | (_, Type::Dyn) => true,
        (Type::List(p), Type::List(a)) => assignable(p, a, bindings),
        (Type::Map(pk, pv), Type::Map(ak, av)) => {
            assignable(pk, ak, bindings) && assignable(pv, av, bindings)
        }
        (Type::Map(pk, pv), Type::Object(_)) => {
            assignable(pk, &Type::String, bindings) && assignable(pv, &Type::Dyn, bindings)
        }
        (Type::Optional(p), Type::Optional(a)) => assignable(p, a, bindings),
        (Type::Object(a), Type::Object(b)) => Arc::ptr_eq(a, b) || a == b,
        (Type::Null, Type::Null) => true,
        // cel-go's legacy nullable kinds (`checker/types.go` `isLegacyNullable`): `obj ==
        // null` type-checks.
        (Type::Object(_) | Type::Opaque(_) | Type::Duration | Type::Timestamp, Type::Null)
        | (Type::Null, Type::Object(_) | Type::Opaque(_) | Type::Duration | Type::Timestamp) => {
            true
        }
        (p, a) => std::mem::discriminant(p) == std::mem::discriminant(a) && p == a,
    }
}

/// `t` with the bound parameters replaced (unbound ones become `dyn`).
pub(crate) fn substitute(t: &Type, bindings: &Bindings) -> Type {
    match t {
        Type::Param(name) => bindings.get(name).cloned().unwrap_or(Type::Dyn),
        Type::List(e) => Type::list(substitute(e, bindings)),
        Type::Map(k, v) => Type::map(substitute(k, bindings), substitute(v, bindings)),
        Type::Optional(e) => Type::optional(substitute(e, bindings)),
        other => other.clone(),
    }
}

/// The common type of two (for list literals, ternaries, equality): equal types stay, a
/// `dyn` side yields the other, anything else is `None`.
pub(crate) fn join(a: &Type, b: &Type) -> Option<Type> {
    match (a, b) {
        (Type::Dyn, t) | (t, Type::Dyn) => Some(t.clone()),
        (Type::List(x), Type::List(y)) => join(x, y).map(Type::list),
        (Type::Map(xk, xv), Type::Map(yk, yv)) => Some(Type::map(join(xk, yk)?, join(xv, yv)?)),
        (Type::Optional(x), Type::Optional(y)) => join(x, y).map(Type::optional),
        (x, y) if x == y => Some(x.clone()),
        _ => None,
    }
}
