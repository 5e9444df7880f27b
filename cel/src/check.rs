//! The type checker: walks cel-rust's parsed (macro-expanded) AST with the declared variables'
//! types, reports cel-go's issues (`undeclared reference`, `undefined field`, `found no
//! matching overload`), and lowers the AST to the interpreter's [`Node`]s with qualified
//! function names resolved (`optional.none()`, `sets.contains(...)`, `format.uuid()`).
//!
//! `dyn` is let through everywhere, as cel-go lets it through: what cannot be known before
//! run time (an int-or-string field, a preserved-unknown subtree) is checked when it runs.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::library::{LIBRARY, k8s};
use crate::types::{Type, join};
use crate::value::Value;

/// A lowered expression.
#[derive(Debug)]
pub(crate) enum Node {
    Const(Value),
    Ident(Arc<str>),
    Select {
        operand: Box<Node>,
        field: Arc<str>,
        test: bool,
    },
    OptSelect {
        operand: Box<Node>,
        field: Arc<str>,
    },
    Index {
        operand: Box<Node>,
        index: Box<Node>,
        optional: bool,
    },
    Call {
        name: Arc<str>,
        member: bool,
        args: Vec<Node>,
        /// The overload the checker found when it found only one: run when the values fit
        /// it (an empty `list(duration)` sums to a duration, as cel-go dispatches by the
        /// checked overload), else the overload is chosen by the values.
        checked: Option<usize>,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    NotStrictlyFalse(Box<Node>),
    List {
        elems: Vec<Node>,
        optional: Vec<bool>,
    },
    Map {
        entries: Vec<(Node, Node, bool)>,
    },
    Comprehension(Box<Comprehension>),
    /// A two-variable comprehension (`l.all(i, v, p)`, `m.transformMap(k, v, e)`).
    TwoVar(Box<TwoVar>),
    /// `o.optMap(v, e)` (`flat`: `o.optFlatMap(v, e)`, `e` being optional itself): cel-go's
    /// optional macros, which cel-rust's parser leaves as calls.
    OptMap {
        target: Box<Node>,
        var: Arc<str>,
        body: Box<Node>,
        flat: bool,
    },
    /// `variables.<name>` of an admission policy: evaluated lazily, once per request, by the
    /// activation ([`crate::Activation::variable`]).
    Variable(Arc<str>),
}

#[derive(Debug)]
pub(crate) struct Comprehension {
    pub(crate) range: Node,
    pub(crate) iter_var: Arc<str>,
    pub(crate) accu_var: Arc<str>,
    pub(crate) init: Node,
    pub(crate) cond: Node,
    pub(crate) step: Node,
    pub(crate) result: Node,
}

/// The two-variable comprehensions of cel-go's `ext.TwoVarComprehensions` (in Kubernetes'
/// environment since 1.32, `staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`),
/// which cel-rust's parser leaves as calls: over a list the variables are the index and the
/// item, over a map the key and the value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum TwoVarKind {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

impl TwoVarKind {
    /// The comprehension a member call `name` with `args` arguments is.
    fn of(name: &str, args: usize) -> Option<TwoVarKind> {
        Some(match (name, args) {
            ("all", 3) => TwoVarKind::All,
            ("exists", 3) => TwoVarKind::Exists,
            ("existsOne", 3) => TwoVarKind::ExistsOne,
            ("transformList", 3 | 4) => TwoVarKind::TransformList,
            ("transformMap", 3 | 4) => TwoVarKind::TransformMap,
            ("transformMapEntry", 3 | 4) => TwoVarKind::TransformMapEntry,
            _ => return None,
        })
    }
}

#[derive(Debug)]
pub(crate) struct TwoVar {
    pub(crate) kind: TwoVarKind,
    pub(crate) range: Node,
    pub(crate) first: Arc<str>,
    pub(crate) second: Arc<str>,
    /// The optional filter of the transforms.
    pub(crate) filter: Option<Node>,
    pub(crate) body: Node,
}

/// The variable holding an admission policy's composited variables (upstream's
/// `VariableVarName`).
pub(crate) const VARIABLES: &str = "variables";

/// The names that are types when used as values (`type(x) == int`).
const TYPE_NAMES: [&str; 11] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

/// The qualified type names that may be written in an expression (`type(x) == net.IP`,
/// `type(d) == google.protobuf.Duration`).
const LIBRARY_TYPE_NAMES: [&str; 7] = [
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
    "net.IP",
    "net.CIDR",
    "kubernetes.Quantity",
    "kubernetes.URL",
    "kubernetes.NamedFormat",
];

/// What the checker resolved a call to, kept for the cost estimate (`crate::cost`), which
/// like cel-go's `checker/cost.go` prices a call by its overload.
#[derive(Debug)]
pub(crate) struct CallInfo {
    /// The function's (qualified) name.
    pub(crate) name: Arc<str>,
    /// Called as a member (`x.f()`); false for a global, also a qualified global written as
    /// a member call (`optional.none()`), whose target is then no operand.
    pub(crate) member: bool,
    /// The parameter types (receiver first) of each overload that matched.
    pub(crate) overloads: Vec<Vec<Type>>,
}

pub(crate) struct Checker<'a> {
    vars: &'a [(String, Type)],
    scopes: Vec<(String, Type)>,
    /// The type found for each expression, by id.
    pub(crate) types: HashMap<u64, Type>,
    /// The resolution of each call through the function table, by the call's id.
    pub(crate) calls: HashMap<u64, CallInfo>,
    /// Issues: the expression id they are at, and the message.
    pub(crate) issues: Vec<(u64, String)>,
    /// Variables the expression reads (`oldSelf` makes a transition rule).
    pub(crate) referenced: Vec<String>,
    /// List literals that may mix types: the argument list of `format`, which cel-go's
    /// `ValidateHomogeneousAggregateLiterals` exempts (`ext/strings.go`).
    heterogeneous: Vec<u64>,
}

fn lit(l: &LiteralValue) -> (Value, Type) {
    match l {
        LiteralValue::Boolean(b) => (Value::Bool(*b.inner()), Type::Bool),
        LiteralValue::Bytes(b) => (Value::Bytes(b.inner().into()), Type::Bytes),
        LiteralValue::Double(d) => (Value::Double(*d.inner()), Type::Double),
        LiteralValue::Int(i) => (Value::Int(*i.inner()), Type::Int),
        LiteralValue::Null => (Value::Null, Type::Null),
        LiteralValue::String(s) => (Value::string(s.inner()), Type::String),
        LiteralValue::UInt(u) => (Value::Uint(*u.inner()), Type::Uint),
    }
}

/// The qualified name an expression spells (`a.b.c`), if it is only identifiers and selects.
fn qualified(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        Expr::Select(s) if !s.test => Some(format!("{}.{}", qualified(&s.operand)?, s.field)),
        _ => None,
    }
}

fn root(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Ident(n) => Some(n),
        Expr::Select(s) => root(&s.operand),
        _ => None,
    }
}

impl<'a> Checker<'a> {
    pub(crate) fn new(vars: &'a [(String, Type)]) -> Checker<'a> {
        Checker {
            vars,
            scopes: Vec::new(),
            types: HashMap::new(),
            calls: HashMap::new(),
            issues: Vec::new(),
            referenced: Vec::new(),
            heterogeneous: Vec::new(),
        }
    }

    fn issue(&mut self, id: u64, message: String) {
        self.issues.push((id, message));
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    pub(crate) fn check(&mut self, e: &IdedExpr) -> (Node, Type) {
        let (node, t) = self.check_expr(e);
        self.types.insert(e.id, t.clone());
        (node, t)
    }

    fn check_expr(&mut self, e: &IdedExpr) -> (Node, Type) {
        match &e.expr {
            Expr::Unspecified => (Node::Const(Value::Null), Type::Dyn),
            Expr::Literal(l) => {
                let (v, t) = lit(l);
                (Node::Const(v), t)
            }
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(s) => {
                // A qualified name that is not a variable path may name a library type.
                if let Some(q) = qualified(e) {
                    // A variable declared with a qualified name (`authorizer.requestResource`)
                    // is resolved whole, as cel-go resolves qualified identifiers.
                    if !s.test
                        && q.contains('.')
                        && self.lookup(&q).is_some()
                        && !root(e).is_some_and(|r| self.scopes.iter().any(|(n, _)| n == r))
                    {
                        return self.ident(e.id, &q);
                    }
                    let root_is_var = root(e).is_some_and(|r| self.lookup(r).is_some());
                    if !root_is_var && LIBRARY_TYPE_NAMES.contains(&q.as_str()) {
                        return (Node::Const(Value::Type(q.into())), Type::Type);
                    }
                }
                // `variables.x` of an admission policy: lazily evaluated by the activation.
                if let Expr::Ident(root_name) = &s.operand.expr
                    && root_name == VARIABLES
                    && !self.scopes.iter().any(|(n, _)| n == VARIABLES)
                    && let Some(t @ Type::Object(_)) = self.lookup(VARIABLES)
                {
                    if !self.referenced.iter().any(|r| r == VARIABLES) {
                        self.referenced.push(VARIABLES.to_string());
                    }
                    let field_t = self.field_type(e.id, &t, &s.field);
                    if s.test {
                        // Every declared variable is present (upstream's lazy map).
                        return (Node::Const(Value::Bool(true)), Type::Bool);
                    }
                    return (Node::Variable(s.field.as_str().into()), field_t);
                }
                let (operand, t) = self.check(&s.operand);
                let field_t = self.field_type(e.id, &t, &s.field);
                (
                    Node::Select {
                        operand: Box::new(operand),
                        field: s.field.as_str().into(),
                        test: s.test,
                    },
                    if s.test { Type::Bool } else { field_t },
                )
            }
            Expr::Call(call) => self.call(e.id, call),
            Expr::List(list) => {
                let mut elems = Vec::new();
                let mut optional = Vec::new();
                let mut elem_t = Type::Dyn;
                let mut first = true;
                for (i, item) in list.elements.iter().enumerate() {
                    let (node, mut t) = self.check(item);
                    let opt = list.optional_indices.contains(&i);
                    if opt {
                        t = match t {
                            Type::Optional(inner) => *inner,
                            Type::Dyn => Type::Dyn,
                            other => {
                                self.issue(
                                    item.id,
                                    format!("expected type 'optional_type' but found '{other}'"),
                                );
                                Type::Dyn
                            }
                        };
                    }
                    if first {
                        elem_t = t;
                        first = false;
                    } else {
                        match join(&elem_t, &t) {
                            Some(j) => elem_t = j,
                            None if self.heterogeneous.contains(&e.id) => elem_t = Type::Dyn,
                            None => {
                                self.issue(
                                    item.id,
                                    format!("expected type '{elem_t}' but found '{t}'"),
                                );
                                elem_t = Type::Dyn;
                            }
                        }
                    }
                    elems.push(node);
                    optional.push(opt);
                }
                // cel-go's `OptOptimize` (on in every Kubernetes environment,
                // `staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`) builds a list of
                // constants once, when the program is planned: it costs nothing when it runs.
                if !optional.contains(&true) && elems.iter().all(|n| matches!(n, Node::Const(_))) {
                    let items = elems
                        .into_iter()
                        .filter_map(|n| match n {
                            Node::Const(v) => Some(v),
                            _ => None,
                        })
                        .collect();
                    return (Node::Const(Value::list(items)), Type::list(elem_t));
                }
                (Node::List { elems, optional }, Type::list(elem_t))
            }
            Expr::Map(map) => {
                let mut entries = Vec::new();
                let (mut kt, mut vt) = (Type::Dyn, Type::Dyn);
                let mut first = true;
                for entry in &map.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        continue;
                    };
                    let (k, kty) = self.check(&me.key);
                    let (v, mut vty) = self.check(&me.value);
                    if me.optional {
                        if let Type::Optional(inner) = vty {
                            vty = *inner;
                        }
                    }
                    if first {
                        (kt, vt) = (kty, vty);
                        first = false;
                    } else {
                        match join(&kt, &kty) {
                            Some(j) => kt = j,
                            None => {
                                self.issue(
                                    me.key.id,
                                    format!("expected type '{kt}' but found '{kty}'"),
                                );
                                kt = Type::Dyn;
                            }
                        }
                        match join(&vt, &vty) {
                            Some(j) => vt = j,
                            None => {
                                self.issue(
                                    me.value.id,
                                    format!("expected type '{vt}' but found '{vty}'"),
                                );
                                vt = Type::Dyn;
                            }
                        }
                    }
                    entries.push((k, v, me.optional));
                }
                (Node::Map { entries }, Type::map(kt, vt))
            }
            Expr::Struct(s) => {
                self.issue(
                    e.id,
                    format!(
                        "undeclared reference to '{}' (in container '')",
                        s.type_name
                    ),
                );
                (Node::Const(Value::Null), Type::Dyn)
            }
            Expr::Comprehension(c) => {
                let (range, range_t) = self.check(&c.iter_range);
                let iter_t = match &range_t {
                    Type::List(t) => (**t).clone(),
                    Type::Map(k, _) => (**k).clone(),
                    Type::Object(_) => Type::String,
                    Type::Dyn => Type::Dyn,
                    other => {
                        self.issue(
                            c.iter_range.id,
                            format!(
                                "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                            ),
                        );
                        Type::Dyn
                    }
                };
                let (init, init_t) = self.check(&c.accu_init);
                self.scopes.push((c.accu_var.clone(), init_t.clone()));
                self.scopes.push((c.iter_var.clone(), iter_t));
                let (cond, _) = self.check(&c.loop_cond);
                let (step, step_t) = self.check(&c.loop_step);
                self.scopes.pop();
                self.scopes.pop();
                let accu_t = join(&init_t, &step_t).unwrap_or(Type::Dyn);
                self.scopes.push((c.accu_var.clone(), accu_t));
                let (result, result_t) = self.check(&c.result);
                self.scopes.pop();
                (
                    Node::Comprehension(Box::new(Comprehension {
                        range,
                        iter_var: c.iter_var.as_str().into(),
                        accu_var: c.accu_var.as_str().into(),
                        init,
                        cond,
                        step,
                        result,
                    })),
                    result_t,
                )
            }
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> (Node, Type) {
        if let Some(t) = self.lookup(name) {
            if !self.scopes.iter().any(|(n, _)| n == name)
                && !self.referenced.iter().any(|r| r == name)
            {
                self.referenced.push(name.to_string());
            }
            return (Node::Ident(name.into()), t);
        }
        if TYPE_NAMES.contains(&name) {
            return (Node::Const(Value::Type(name.into())), Type::Type);
        }
        self.issue(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
        (Node::Const(Value::Null), Type::Dyn)
    }

    fn field_type(&mut self, id: u64, t: &Type, field: &str) -> Type {
        match t {
            Type::Object(o) => match o.fields.get(field).or_else(|| {
                crate::schema::field_name_fallback(field).and_then(|f| o.fields.get(&f))
            }) {
                Some(f) => f.clone(),
                None => {
                    self.issue(id, format!("undefined field '{field}'"));
                    Type::Dyn
                }
            },
            Type::Map(_, v) => (**v).clone(),
            Type::Dyn | Type::Param(_) => Type::Dyn,
            other => {
                self.issue(
                    id,
                    format!("type '{other}' does not support field selection"),
                );
                Type::Dyn
            }
        }
    }

    fn call(&mut self, id: u64, call: &CallExpr) -> (Node, Type) {
        let name = call.func_name.as_str();
        match (name, call.args.len()) {
            ("_&&_" | "_||_", 2) => {
                let (a, at) = self.check(&call.args[0]);
                let (b, bt) = self.check(&call.args[1]);
                self.expect_bool(name, id, &[at, bt]);
                let node = if name == "_&&_" {
                    Node::And(Box::new(a), Box::new(b))
                } else {
                    Node::Or(Box::new(a), Box::new(b))
                };
                return (node, Type::Bool);
            }
            ("_?_:_", 3) => {
                let (c, ct) = self.check(&call.args[0]);
                let (t, tt) = self.check(&call.args[1]);
                let (f, ft) = self.check(&call.args[2]);
                if !matches!(ct, Type::Bool | Type::Dyn) {
                    self.issue(
                        id,
                        format!(
                            "found no matching overload for '_?_:_' applied to '({ct}, {tt}, {ft})'"
                        ),
                    );
                }
                let rt = match join(&tt, &ft) {
                    Some(t) => t,
                    None => {
                        self.issue(
                            id,
                            format!("found no matching overload for '_?_:_' applied to '({ct}, {tt}, {ft})'"),
                        );
                        Type::Dyn
                    }
                };
                return (Node::Cond(Box::new(c), Box::new(t), Box::new(f)), rt);
            }
            ("@not_strictly_false", 1) => {
                let (a, _) = self.check(&call.args[0]);
                return (Node::NotStrictlyFalse(Box::new(a)), Type::Bool);
            }
            ("_[_]" | "_[?_]", 2) => {
                let optional = name == "_[?_]";
                let (o, ot) = self.check(&call.args[0]);
                let (i, it) = self.check(&call.args[1]);
                let base = match (&ot, optional) {
                    (Type::Optional(inner), true) => (**inner).clone(),
                    _ => ot.clone(),
                };
                let elem = match &base {
                    Type::List(e) if matches!(it, Type::Int | Type::Uint | Type::Dyn) => {
                        (**e).clone()
                    }
                    Type::Map(k, v) if join(k, &it).is_some() => (**v).clone(),
                    // An object's fields are selected, not indexed (cel-go: no `_[_]` on a
                    // struct type).
                    Type::Dyn => Type::Dyn,
                    _ => {
                        self.issue(
                            id,
                            format!(
                                "found no matching overload for '{name}' applied to '({ot}, {it})'"
                            ),
                        );
                        Type::Dyn
                    }
                };
                let rt = if optional { Type::optional(elem) } else { elem };
                return (
                    Node::Index {
                        operand: Box::new(o),
                        index: Box::new(i),
                        optional,
                    },
                    rt,
                );
            }
            ("_?._", 2) => {
                let (o, ot) = self.check(&call.args[0]);
                let field = match &call.args[1].expr {
                    Expr::Literal(LiteralValue::String(s)) => s.inner().to_string(),
                    _ => String::new(),
                };
                let base = match ot {
                    Type::Optional(inner) => *inner,
                    other => other,
                };
                let ft = self.field_type(id, &base, &field);
                return (
                    Node::OptSelect {
                        operand: Box::new(o),
                        field: field.into(),
                    },
                    Type::optional(ft),
                );
            }
            _ => {}
        }

        // A qualified global function written as a member call: `optional.none()`.
        if let Some(target) = &call.target {
            if let Some(q) = qualified(target) {
                let root_is_var = root(target).is_some_and(|r| self.lookup(r).is_some());
                let full = format!("{q}.{name}");
                if !root_is_var && LIBRARY.has_global(&full) {
                    if let Some(fmt) = full.strip_prefix("format.") {
                        if call.args.is_empty() && k8s::FORMAT_NAMES.contains(&fmt) {
                            self.calls.insert(
                                id,
                                CallInfo {
                                    name: full.as_str().into(),
                                    member: false,
                                    overloads: Vec::new(),
                                },
                            );
                            return (
                                Node::Const(Value::Format(fmt.into())),
                                Type::Opaque(k8s::FORMAT),
                            );
                        }
                    }
                    return self.resolve_call(id, full.into(), false, &call.args, None);
                }
            }
        }
        if let Some(target) = &call.target
            && matches!(name, "optMap" | "optFlatMap")
            && let [var, body] = call.args.as_slice()
            && let Expr::Ident(var) = &var.expr
        {
            return self.opt_map(id, name == "optFlatMap", target, var, body);
        }
        if let Some(target) = &call.target
            && let Some(kind) = TwoVarKind::of(name, call.args.len())
            && let (Expr::Ident(first), Expr::Ident(second)) =
                (&call.args[0].expr, &call.args[1].expr)
        {
            return self.two_var(id, kind, target, first, second, &call.args[2..]);
        }
        match &call.target {
            Some(target) => {
                let (t, tt) = self.check(target);
                self.resolve_call(id, name.into(), true, &call.args, Some((t, tt)))
            }
            None => self.resolve_call(id, name.into(), false, &call.args, None),
        }
    }

    /// Checks `target.optMap(var, body)` (`flat`: `optFlatMap`, cel-go's `cel/macro.go`
    /// optional macros).
    fn opt_map(
        &mut self,
        id: u64,
        flat: bool,
        target: &IdedExpr,
        var: &str,
        body: &IdedExpr,
    ) -> (Node, Type) {
        let (target_node, target_t) = self.check(target);
        let inner = match target_t {
            Type::Optional(t) => *t,
            Type::Dyn => Type::Dyn,
            other => {
                let name = if flat { "optFlatMap" } else { "optMap" };
                self.issue(
                    id,
                    format!(
                        "found no matching overload for '{name}' applied to '{other}.(dyn, dyn)'"
                    ),
                );
                Type::Dyn
            }
        };
        self.scopes.push((var.to_string(), inner));
        let (body_node, body_t) = self.check(body);
        self.scopes.pop();
        let result_t = if flat {
            match body_t {
                t @ (Type::Optional(_) | Type::Dyn) => t,
                other => {
                    self.issue(
                        body.id,
                        format!("expected type 'optional_type' but found '{other}'"),
                    );
                    Type::Dyn
                }
            }
        } else {
            Type::optional(body_t)
        };
        self.types.insert(id, result_t.clone());
        (
            Node::OptMap {
                target: Box::new(target_node),
                var: var.into(),
                body: Box::new(body_node),
                flat,
            },
            result_t,
        )
    }

    /// Checks a two-variable comprehension over `target`; `rest` is the optional filter and
    /// the body.
    fn two_var(
        &mut self,
        id: u64,
        kind: TwoVarKind,
        target: &IdedExpr,
        first: &str,
        second: &str,
        rest: &[IdedExpr],
    ) -> (Node, Type) {
        let (range, range_t) = self.check(target);
        let (first_t, second_t) = match &range_t {
            Type::List(t) => (Type::Int, (**t).clone()),
            Type::Map(k, v) => ((**k).clone(), (**v).clone()),
            Type::Dyn => (Type::Dyn, Type::Dyn),
            other => {
                self.issue(
                    target.id,
                    format!(
                        "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                (Type::Dyn, Type::Dyn)
            }
        };
        self.scopes.push((first.to_string(), first_t.clone()));
        self.scopes.push((second.to_string(), second_t));
        let filter = match rest {
            [filter, _] => {
                let (node, t) = self.check(filter);
                if !matches!(t, Type::Bool | Type::Dyn) {
                    self.issue(filter.id, format!("expected type 'bool' but found '{t}'"));
                }
                Some(node)
            }
            _ => None,
        };
        let body_expr = &rest[rest.len() - 1];
        let (body, body_t) = self.check(body_expr);
        self.scopes.pop();
        self.scopes.pop();
        let result_t = match kind {
            TwoVarKind::All | TwoVarKind::Exists | TwoVarKind::ExistsOne => {
                if !matches!(body_t, Type::Bool | Type::Dyn) {
                    self.issue(
                        body_expr.id,
                        format!("expected type 'bool' but found '{body_t}'"),
                    );
                }
                Type::Bool
            }
            TwoVarKind::TransformList => Type::list(body_t),
            TwoVarKind::TransformMap => Type::map(first_t, body_t),
            TwoVarKind::TransformMapEntry => match body_t {
                t @ (Type::Map(..) | Type::Dyn) => t,
                other => {
                    self.issue(
                        body_expr.id,
                        format!("expected type 'map' but found '{other}'"),
                    );
                    Type::Dyn
                }
            },
        };
        self.types.insert(id, result_t.clone());
        (
            Node::TwoVar(Box::new(TwoVar {
                kind,
                range,
                first: first.into(),
                second: second.into(),
                filter,
                body,
            })),
            result_t,
        )
    }

    fn expect_bool(&mut self, name: &str, id: u64, types: &[Type]) {
        if types.iter().any(|t| !matches!(t, Type::Bool | Type::Dyn)) {
            let shown: Vec<String> = types.iter().map(ToString::to_string).collect();
            self.issue(
                id,
                format!(
                    "found no matching overload for '{name}' applied to '({})'",
                    shown.join(", ")
                ),
            );
        }
    }

    fn resolve_call(
        &mut self,
        id: u64,
        name: Arc<str>,
        member: bool,
        args: &[IdedExpr],
        target: Option<(Node, Type)>,
    ) -> (Node, Type) {
        let mut nodes = Vec::new();
        let mut types = Vec::new();
        if let Some((n, t)) = target {
            nodes.push(n);
            types.push(t);
        }
        for a in args {
            if &*name == "format" && matches!(a.expr, Expr::List(_)) {
                self.heterogeneous.push(a.id);
            }
            let (n, t) = self.check(a);
            nodes.push(n);
            types.push(t);
        }
        if !LIBRARY.has(&name) {
            self.issue(
                id,
                format!("undeclared reference to '{name}' (in container '')"),
            );
            return (Node::Const(Value::Null), Type::Dyn);
        }
        let found = LIBRARY.resolve(&name, member, &types);
        let all = LIBRARY.overloads(&name);
        self.calls.insert(
            id,
            CallInfo {
                name: name.clone(),
                member,
                overloads: found
                    .iter()
                    .filter_map(|(i, _)| all.get(*i).map(|o| o.params.clone()))
                    .collect(),
            },
        );
        let result = match found.as_slice() {
            [] => {
                let shown: Vec<String> = types.iter().map(ToString::to_string).collect();
                let applied = if member {
                    format!("{}.({})", shown[0], shown[1..].join(", "))
                } else {
                    format!("({})", shown.join(", "))
                };
                self.issue(
                    id,
                    format!("found no matching overload for '{name}' applied to '{applied}'"),
                );
                Type::Dyn
            }
            [(_, t)] => t.clone(),
            many => {
                let first = many[0].1.clone();
                if many.iter().all(|(_, t)| *t == first) {
                    first
                } else {
                    Type::Dyn
                }
            }
        };
        let checked = match found.as_slice() {
            [(i, _)] => Some(*i),
            _ => None,
        };
        (
            Node::Call {
                name,
                member,
                args: nodes,
                checked,
            },
            result,
        )
    }
}

/// The functions whose literal arguments are checked when an expression compiles, with the
/// argument checked (counting a member call's receiver as the first): cel-go's
/// `ValidateDurationLiterals`, `ValidateTimestampLiterals` and `ValidateRegexLiterals`
/// (`cel/validator.go`), which Kubernetes' base environment turns on
/// (`staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`).
const LITERAL_CHECKED: [(&str, usize); 3] = [("duration", 0), ("timestamp", 0), ("matches", 1)];

impl Checker<'_> {
    /// Reports `invalid <function> argument` for each literal argument of
    /// [`LITERAL_CHECKED`] the function refuses, as cel-go's literal validators do: the call
    /// is run on the literal (a regex against `""`).
    pub(crate) fn validate_literals(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Call(call) => {
                let mut args: Vec<&IdedExpr> = call.target.iter().map(|t| &**t).collect();
                args.extend(call.args.iter());
                let checked = LITERAL_CHECKED
                    .iter()
                    .find(|(name, _)| *name == call.func_name.as_str());
                if let Some((name, at)) = checked
                    && let Some(arg) = args.get(*at)
                    && let Expr::Literal(l) = &arg.expr
                {
                    let mut values: Vec<Node> = args
                        .iter()
                        .map(|_| Node::Const(Value::string("")))
                        .collect();
                    values[*at] = Node::Const(lit(l).0);
                    let node = Node::Call {
                        name: (*name).into(),
                        member: call.target.is_some(),
                        args: values,
                        checked: None,
                    };
                    let vars = crate::eval::Vars::new();
                    let mut interpreter =
                        crate::eval::Interpreter::new(&vars, crate::env::PER_CALL_LIMIT);
                    if interpreter.eval(&node).is_err() {
                        self.issue(arg.id, format!("invalid {name} argument"));
                    }
                }
                for a in args {
                    self.validate_literals(a);
                }
            }
            Expr::Select(s) => self.validate_literals(&s.operand),
            Expr::List(l) => {
                for el in &l.elements {
                    self.validate_literals(el);
                }
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        self.validate_literals(&me.key);
                        self.validate_literals(&me.value);
                    }
                }
            }
            Expr::Comprehension(c) => {
                for part in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    self.validate_literals(part);
                }
            }
            _ => {}
        }
    }
}
