//! The interpreter: evaluates lowered [`Node`]s against an activation while counting cost,
//! and stops with cel-go's `operation cancelled: actual cost limit exceeded` as soon as the
//! count passes the program's limit (upstream's `cel.CostLimit(PerCallLimit)`), so a rule
//! that would run for seconds is cut off early instead of holding a request.
//!
//! The count follows cel-go's runtime cost tracker in kind (`interpreter/runtimecost.go`):
//! 1 per variable read, field selection and index, nothing for constants, `has()` and the
//! logical operators, 10 per list or map literal, and each call what its library entry says
//! (1 for most, proportional to the bytes or elements it reads for string and list functions).

use std::collections::HashMap;
use std::sync::Arc;

use crate::check::{Node, TwoVar, TwoVarKind};
use crate::error::EvalError;
use crate::library::{LIBRARY, no_such_overload, value_matches};
use crate::value::{Key, MapValue, Value};

/// cel-go's `common.ListCreateBaseCost` / `MapCreateBaseCost`.
const AGGREGATE_CREATE_COST: u64 = 10;

/// The variables a program reads.
pub trait Activation {
    /// The value of `name`, if bound.
    fn resolve(&self, name: &str) -> Option<Value>;

    /// The value of the composited variable `variables.<name>` of an admission policy,
    /// evaluated when first read (`None`: no such variable).
    fn variable(&self, _name: &str) -> Option<Result<Value, EvalError>> {
        None
    }
}

impl Activation for HashMap<String, Value> {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.get(name).cloned()
    }
}

/// A handful of named values (the usual activation: `self`, `oldSelf`; `object`, `request`).
#[derive(Clone, Debug, Default)]
pub struct Vars(Vec<(String, Value)>);

impl Vars {
    /// No variables.
    pub fn new() -> Vars {
        Vars::default()
    }

    /// Binds `name` (replacing an earlier binding).
    #[must_use]
    pub fn with(mut self, name: &str, value: Value) -> Vars {
        self.0.retain(|(n, _)| n != name);
        self.0.push((name.to_string(), value));
        self
    }
}

impl Activation for Vars {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
}

pub(crate) struct Interpreter<'a> {
    vars: &'a dyn Activation,
    /// Comprehension variables; an accumulator may hold an error, which cel-go keeps
    /// folding (`exists` absorbs it when a later element is true).
    locals: Vec<(Arc<str>, R)>,
    pub(crate) cost: u64,
    limit: u64,
}

type R = Result<Value, EvalError>;

impl<'a> Interpreter<'a> {
    pub(crate) fn new(vars: &'a dyn Activation, limit: u64) -> Interpreter<'a> {
        Interpreter {
            vars,
            locals: Vec::new(),
            cost: 0,
            limit,
        }
    }

    fn charge(&mut self, n: u64) -> Result<(), EvalError> {
        self.cost = self.cost.saturating_add(n);
        if self.cost > self.limit {
            return Err(EvalError::cost_limit());
        }
        Ok(())
    }

    fn bool_of(v: &R) -> Option<bool> {
        match v {
            Ok(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    pub(crate) fn eval(&mut self, node: &Node) -> R {
        match node {
            Node::Const(v) => Ok(v.clone()),
            Node::Ident(name) => {
                self.charge(1)?;
                if let Some((_, v)) = self.locals.iter().rev().find(|(n, _)| n == name) {
                    return v.clone();
                }
                self.vars
                    .resolve(name)
                    .ok_or_else(|| EvalError::new(format!("no such attribute(s): {name}")))
            }
            Node::Select {
                operand,
                field,
                test,
            } => {
                let o = self.eval(operand)?;
                if !test {
                    self.charge(1)?;
                }
                select(&o, field, *test)
            }
            Node::OptSelect { operand, field } => {
                let o = self.eval(operand)?;
                self.charge(1)?;
                let inner = match o {
                    Value::Optional(None) => return Ok(Value::Optional(None)),
                    Value::Optional(Some(v)) => v.as_ref().clone(),
                    v => v,
                };
                match &inner {
                    Value::Map(m) => Ok(Value::Optional(field_of(m, field).cloned().map(Arc::new))),
                    _ => Err(no_such_overload()),
                }
            }
            Node::Index {
                operand,
                index,
                optional,
            } => {
                let o = self.eval(operand)?;
                let i = self.eval(index)?;
                self.charge(1)?;
                if *optional {
                    let inner = match o {
                        Value::Optional(None) => return Ok(Value::Optional(None)),
                        Value::Optional(Some(v)) => v.as_ref().clone(),
                        v => v,
                    };
                    return match index_value(&inner, &i) {
                        Ok(v) => Ok(Value::Optional(Some(Arc::new(v)))),
                        Err(e)
                            if e.message.starts_with("no such key")
                                || e.message.starts_with("index out of bounds") =>
                        {
                            Ok(Value::Optional(None))
                        }
                        Err(e) => Err(e),
                    };
                }
                index_value(&o, &i)
            }
            Node::Call {
                name,
                member,
                args,
                checked,
            } => {
                let mut values = Vec::with_capacity(args.len());
                for a in args {
                    values.push(self.eval(a)?);
                }
                let overloads = LIBRARY.overloads(name);
                let fits = |o: &&crate::library::Overload| {
                    o.member == *member
                        && o.params.len() == values.len()
                        && o.params
                            .iter()
                            .zip(&values)
                            .all(|(p, v)| value_matches(p, v))
                };
                let overload = checked
                    .and_then(|i| overloads.get(i))
                    .filter(fits)
                    .or_else(|| overloads.iter().find(fits))
                    .ok_or_else(no_such_overload)?;
                self.charge((overload.cost)(&values))?;
                (overload.imp)(&values)
            }
            Node::And(a, b) => {
                let left = self.eval(a);
                if Self::bool_of(&left) == Some(false) {
                    return Ok(Value::Bool(false));
                }
                if let Err(e) = &left {
                    if e.cost_exceeded {
                        return left;
                    }
                }
                let right = self.eval(b);
                match (Self::bool_of(&left), Self::bool_of(&right)) {
                    (Some(true), _) => logical_operand(right),
                    (_, Some(false)) => Ok(Value::Bool(false)),
                    _ => match (left, right) {
                        (_, Err(e)) if e.cost_exceeded => Err(e),
                        (Err(e), _) => Err(e),
                        (Ok(_), Ok(Value::Bool(_))) | (Ok(_), Err(_)) | (Ok(_), Ok(_)) => {
                            Err(no_such_overload())
                        }
                    },
                }
            }
            Node::Or(a, b) => {
                let left = self.eval(a);
                if Self::bool_of(&left) == Some(true) {
                    return Ok(Value::Bool(true));
                }
                if let Err(e) = &left {
                    if e.cost_exceeded {
                        return left;
                    }
                }
                let right = self.eval(b);
                match (Self::bool_of(&left), Self::bool_of(&right)) {
                    (Some(false), _) => logical_operand(right),
                    (_, Some(true)) => Ok(Value::Bool(true)),
                    _ => match (left, right) {
                        (_, Err(e)) if e.cost_exceeded => Err(e),
                        (Err(e), _) => Err(e),
                        _ => Err(no_such_overload()),
                    },
                }
            }
            Node::Cond(c, t, f) => match self.eval(c)? {
                Value::Bool(true) => self.eval(t),
                Value::Bool(false) => self.eval(f),
                _ => Err(no_such_overload()),
            },
            Node::NotStrictlyFalse(a) => match self.eval(a) {
                Ok(Value::Bool(b)) => Ok(Value::Bool(b)),
                Err(e) if e.cost_exceeded => Err(e),
                _ => Ok(Value::Bool(true)),
            },
            Node::List { elems, optional } => {
                self.charge(AGGREGATE_CREATE_COST)?;
                let mut out = Vec::with_capacity(elems.len());
                for (e, opt) in elems.iter().zip(optional) {
                    let v = self.eval(e)?;
                    if *opt {
                        match v {
                            Value::Optional(Some(v)) => out.push(v.as_ref().clone()),
                            Value::Optional(None) => {}
                            _ => return Err(no_such_overload()),
                        }
                    } else {
                        out.push(v);
                    }
                }
                Ok(Value::list(out))
            }
            Node::Map { entries } => {
                self.charge(AGGREGATE_CREATE_COST)?;
                let mut out = MapValue::new();
                for (k, v, opt) in entries {
                    let kv = self.eval(k)?;
                    let key = Key::from_value(&kv).ok_or_else(|| {
                        EvalError::new(format!("unsupported key type: {}", kv.type_name()))
                    })?;
                    let vv = self.eval(v)?;
                    let vv = if *opt {
                        match vv {
                            Value::Optional(Some(v)) => v.as_ref().clone(),
                            Value::Optional(None) => continue,
                            _ => return Err(no_such_overload()),
                        }
                    } else {
                        vv
                    };
                    if out.insert(key, vv).is_some() {
                        return Err(EvalError::new(format!("Failed with repeated key: {kv}")));
                    }
                }
                Ok(Value::Map(Arc::new(out)))
            }
            Node::Variable(name) => {
                self.charge(1)?;
                self.vars
                    .variable(name)
                    .unwrap_or_else(|| Err(EvalError::new(format!("no such key: {name}"))))
            }
            Node::TwoVar(c) => self.two_var(c),
            Node::OptMap {
                target,
                var,
                body,
                flat,
            } => match self.eval(target)? {
                Value::Optional(None) => Ok(Value::Optional(None)),
                Value::Optional(Some(v)) => {
                    self.locals.push((var.clone(), Ok(v.as_ref().clone())));
                    let result = self.eval(body);
                    self.locals.pop();
                    match (result?, flat) {
                        (v @ Value::Optional(_), true) => Ok(v),
                        (_, true) => Err(no_such_overload()),
                        (v, false) => Ok(Value::Optional(Some(Arc::new(v)))),
                    }
                }
                _ => Err(no_such_overload()),
            },
            Node::Comprehension(c) => {
                let range = self.eval(&c.range)?;
                let items: Vec<Value> = match &range {
                    Value::List(l) => l.to_vec(),
                    Value::Map(m) => m.keys().map(Key::to_value).collect(),
                    _ => return Err(no_such_overload()),
                };
                let init = self.eval(&c.init)?;
                self.locals.push((c.accu_var.clone(), Ok(init)));
                let accu_at = self.locals.len() - 1;
                let mut outcome = Ok(());
                for item in items {
                    self.locals.push((c.iter_var.clone(), Ok(item)));
                    // cel-go's fold stops only on a false condition: an error or a non-bool
                    // condition goes on, as an error in the accumulator does.
                    let go_on = match self.eval(&c.cond) {
                        Ok(Value::Bool(b)) => b,
                        Err(e) if e.cost_exceeded => {
                            outcome = Err(e);
                            false
                        }
                        _ => true,
                    };
                    if !go_on {
                        self.locals.pop();
                        break;
                    }
                    match self.eval(&c.step) {
                        Err(e) if e.cost_exceeded => {
                            self.locals.pop();
                            outcome = Err(e);
                            break;
                        }
                        step => self.locals[accu_at].1 = step,
                    }
                    self.locals.pop();
                }
                let result = match outcome {
                    Ok(()) => self.eval(&c.result),
                    Err(e) => Err(e),
                };
                self.locals.truncate(accu_at);
                result
            }
        }
    }
}

impl Interpreter<'_> {
    /// A two-variable comprehension, with the error handling of the fold cel-go expands it
    /// to (`ext/comprehensions.go`): `all` is false and `exists` true as soon as an element
    /// decides it, whatever errors other elements gave; otherwise an error is the result.
    fn two_var(&mut self, c: &TwoVar) -> R {
        let range = self.eval(&c.range)?;
        let pairs: Vec<(Value, Value)> = match &range {
            Value::List(l) => l
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), v.clone()))
                .collect(),
            Value::Map(m) => m.iter().map(|(k, v)| (k.to_value(), v.clone())).collect(),
            _ => return Err(no_such_overload()),
        };
        let mut error: Option<EvalError> = None;
        let mut count = 0;
        let mut list = Vec::new();
        let mut map = MapValue::new();
        for (first, second) in pairs {
            self.locals.push((c.first.clone(), Ok(first.clone())));
            self.locals.push((c.second.clone(), Ok(second)));
            let outcome = self.two_var_element(c);
            self.locals.truncate(self.locals.len() - 2);
            let value = match outcome {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) if e.cost_exceeded => return Err(e),
                Err(e) => {
                    if matches!(
                        c.kind,
                        TwoVarKind::All | TwoVarKind::Exists | TwoVarKind::ExistsOne
                    ) {
                        error.get_or_insert(e);
                        continue;
                    }
                    return Err(e);
                }
            };
            match (c.kind, value) {
                (TwoVarKind::All, Value::Bool(false)) => return Ok(Value::Bool(false)),
                (TwoVarKind::Exists, Value::Bool(true)) => return Ok(Value::Bool(true)),
                (TwoVarKind::All | TwoVarKind::Exists, Value::Bool(_)) => {}
                (TwoVarKind::ExistsOne, Value::Bool(b)) => count += usize::from(b),
                (TwoVarKind::TransformList, v) => list.push(v),
                (TwoVarKind::TransformMap, v) => {
                    let key = Key::from_value(&first).ok_or_else(no_such_overload)?;
                    map.insert(key, v);
                }
                (TwoVarKind::TransformMapEntry, Value::Map(entries)) => {
                    for (k, v) in entries.iter() {
                        if map.insert(k.clone(), v.clone()).is_some() {
                            // cel-go's `mutableMap.Insert`, the key printed with Go's `%v`.
                            let key = match k.to_value() {
                                Value::String(s) => s.to_string(),
                                other => other.to_string(),
                            };
                            return Err(EvalError::new(format!(
                                "insert failed: key {key} already exists"
                            )));
                        }
                    }
                }
                _ => {
                    error.get_or_insert_with(no_such_overload);
                }
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        Ok(match c.kind {
            TwoVarKind::All => Value::Bool(true),
            TwoVarKind::Exists => Value::Bool(false),
            TwoVarKind::ExistsOne => Value::Bool(count == 1),
            TwoVarKind::TransformList => Value::list(list),
            TwoVarKind::TransformMap | TwoVarKind::TransformMapEntry => Value::Map(Arc::new(map)),
        })
    }

    /// The body's value for the element the variables hold; `None` when the filter drops it.
    fn two_var_element(&mut self, c: &TwoVar) -> Result<Option<Value>, EvalError> {
        if let Some(filter) = &c.filter {
            match self.eval(filter)? {
                Value::Bool(true) => {}
                Value::Bool(false) => return Ok(None),
                _ => return Err(no_such_overload()),
            }
        }
        self.eval(&c.body).map(Some)
    }
}

/// The right operand of `&&`/`||` when the left one decided nothing: it must be a bool.
fn logical_operand(v: R) -> R {
    match v {
        Ok(Value::Bool(b)) => Ok(Value::Bool(b)),
        Ok(_) => Err(no_such_overload()),
        Err(e) => Err(e),
    }
}

/// The value of `field` in an object or map, `field` being a reserved word written unescaped
/// also finding the escaped one (`crate::schema::field_name_fallback`).
fn field_of<'m>(m: &'m MapValue, field: &Arc<str>) -> Option<&'m Value> {
    m.get(&Key::String(field.clone())).or_else(|| {
        crate::schema::field_name_fallback(field).and_then(|f| m.get(&Key::String(f.into())))
    })
}

fn select(o: &Value, field: &Arc<str>, test: bool) -> R {
    match o {
        Value::Map(m) => {
            let found = field_of(m, field);
            if test {
                return Ok(Value::Bool(found.is_some()));
            }
            found
                .cloned()
                .ok_or_else(|| EvalError::new(format!("no such key: {field}")))
        }
        _ => Err(no_such_overload()),
    }
}

fn index_value(o: &Value, i: &Value) -> R {
    match (o, i) {
        (Value::List(items), idx) => {
            let n = match idx {
                Value::Int(n) => *n,
                Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                Value::Double(d) if d.fract() == 0.0 => *d as i64,
                _ => return Err(no_such_overload()),
            };
            usize::try_from(n)
                .ok()
                .and_then(|n| items.get(n))
                .cloned()
                .ok_or_else(|| EvalError::new(format!("index out of bounds: {n}")))
        }
        (Value::Map(m), key) => {
            let k = Key::from_value(key).ok_or_else(no_such_overload)?;
            m.get(&k).cloned().ok_or_else(|| match key {
                Value::String(s) => EvalError::new(format!("no such key: {s}")),
                other => EvalError::new(format!("no such key: {other}")),
            })
        }
        _ => Err(no_such_overload()),
    }
}
