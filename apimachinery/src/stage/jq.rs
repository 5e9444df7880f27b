//! The jq expressions of kwok's Stages (`selector.matchExpressions[].key`, `*From.expressionFrom`):
//! kwok runs them with gojq (kwok `pkg/utils/expression/query.go`). This is an explicit subset,
//! the one kwok's shipped and documented stages use, parsed when a Stage is written so that
//! anything outside it is refused there (a 422 naming the field) rather than never matching:
//!
//! - paths: `.`, `.a.b`, `.["key"]`, `.a["key"]`, `.a.[]`, `.a[]`, `.a[0]`, `."key"`, `?`;
//! - pipes `|`, parentheses, `select(...)`, `not`, `length`;
//! - comparisons `==` `!=` `<` `<=` `>` `>=`, `and`, `or`, the alternative `//`;
//! - literals: strings (with JSON escapes), numbers, `true`, `false`, `null`.
//!
//! An expression yields a stream of values, as jq's. An error (iterating over a number, a
//! field of a string) ends the evaluation, and kwok then takes the expression as yielding
//! nothing (`Execute` answers `nil`), as [`Query::execute`] does.
//!
//! Plain paths (`.a.b`, `.a["k"]`, `.a[0]`, `.a[]`, with `?`, and pipes of them) are found
//! when an expression is parsed and walked by reference: only what they yield is cloned, not
//! every value on the way (a Stage's selector runs on every pod event; the general evaluator
//! would clone the whole object for `.metadata.labels["x"]`). The tests check that both
//! evaluations agree.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

/// A parse error, with the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset in the expression.
    pub offset: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.message)
    }
}

/// A parsed jq expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    root: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Identity,
    Literal(Value),
    /// `e.name` / `e["name"]`; `optional` for `?`.
    Field(Box<Expr>, String, bool),
    /// `e[n]`.
    Index(Box<Expr>, i64, bool),
    /// `e[]`.
    Iterate(Box<Expr>, bool),
    Pipe(Box<Expr>, Box<Expr>),
    /// A plain path from the input, walked by reference (found by [`optimize`]).
    Path(Vec<Step>),
    Select(Box<Expr>),
    Not,
    Length,
    Compare(Box<Expr>, CmpOp, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Alternative(Box<Expr>, Box<Expr>),
}

/// One step of a plain path: `Expr::Field`, `Expr::Index` and `Expr::Iterate` on what the
/// steps before yield.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String, bool),
    Index(i64, bool),
    Iterate(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// An evaluation error: ends the stream.
#[derive(Debug)]
struct EvalError;

impl Query {
    /// Parses `source`, refusing what the subset does not have.
    pub fn parse(source: &str) -> Result<Query, ParseError> {
        Ok(Query {
            root: optimize(parse_tree(source)?),
        })
    }

    /// The values the expression yields on `input`, nulls left out, as kwok's `Execute`; an
    /// evaluation error yields nothing.
    pub fn execute(&self, input: &Value) -> Vec<Value> {
        if let Expr::Path(steps) = &self.root {
            return match walk(steps, input) {
                Ok(values) => values
                    .into_iter()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect(),
                Err(EvalError) => Vec::new(),
            };
        }
        let mut out = Vec::new();
        match eval(&self.root, input, &mut out) {
            Ok(()) => out.into_iter().filter(|v| !v.is_null()).collect(),
            Err(EvalError) => Vec::new(),
        }
    }
}

/// The expression tree of `source`, as parsed (no [`Expr::Path`]).
fn parse_tree(source: &str) -> Result<Expr, ParseError> {
    let mut parser = Parser {
        src: source.as_bytes(),
        pos: 0,
    };
    parser.skip_ws();
    if parser.pos >= parser.src.len() {
        return Err(parser.error("empty expression"));
    }
    let root = parser.pipe()?;
    parser.skip_ws();
    if parser.pos < parser.src.len() {
        return Err(parser.error("unexpected text (not in the jq subset kubemock evaluates)"));
    }
    Ok(root)
}

/// The steps of `expr` when it is a plain path from its input (`.` is the empty path).
fn as_path(expr: &Expr) -> Option<Vec<Step>> {
    match expr {
        Expr::Identity => Some(Vec::new()),
        Expr::Field(base, name, optional) => {
            let mut steps = as_path(base)?;
            steps.push(Step::Field(name.clone(), *optional));
            Some(steps)
        }
        Expr::Index(base, index, optional) => {
            let mut steps = as_path(base)?;
            steps.push(Step::Index(*index, *optional));
            Some(steps)
        }
        Expr::Iterate(base, optional) => {
            let mut steps = as_path(base)?;
            steps.push(Step::Iterate(*optional));
            Some(steps)
        }
        // `p | q` of two paths walks p, then q from each value: the path p then q.
        Expr::Pipe(left, right) => {
            let mut steps = as_path(left)?;
            steps.extend(as_path(right)?);
            Some(steps)
        }
        _ => None,
    }
}

/// `expr` with each largest plain path replaced by an [`Expr::Path`].
fn optimize(expr: Expr) -> Expr {
    if let Some(steps) = as_path(&expr) {
        return if steps.is_empty() {
            Expr::Identity
        } else {
            Expr::Path(steps)
        };
    }
    let boxed = |e: Box<Expr>| Box::new(optimize(*e));
    match expr {
        Expr::Field(base, name, optional) => Expr::Field(boxed(base), name, optional),
        Expr::Index(base, index, optional) => Expr::Index(boxed(base), index, optional),
        Expr::Iterate(base, optional) => Expr::Iterate(boxed(base), optional),
        Expr::Pipe(left, right) => Expr::Pipe(boxed(left), boxed(right)),
        Expr::Select(cond) => Expr::Select(boxed(cond)),
        Expr::Compare(left, op, right) => Expr::Compare(boxed(left), op, boxed(right)),
        Expr::And(left, right) => Expr::And(boxed(left), boxed(right)),
        Expr::Or(left, right) => Expr::Or(boxed(left), boxed(right)),
        Expr::Alternative(left, right) => Expr::Alternative(boxed(left), boxed(right)),
        other => other,
    }
}

/// The null a missing field or index yields.
static NULL: Value = Value::Null;

/// The values a plain path yields on `input`, by reference: each step as `eval` runs its
/// expression (a missing field or index, or a step on null, yields null; `?` skips what the
/// step cannot apply to, which is an error otherwise).
fn walk<'a>(steps: &[Step], input: &'a Value) -> Result<Vec<&'a Value>, EvalError> {
    let mut current: Vec<&'a Value> = vec![input];
    for step in steps {
        let mut next = Vec::with_capacity(current.len());
        for v in current {
            match (step, v) {
                (Step::Field(name, _), Value::Object(map)) => {
                    next.push(map.get(name).unwrap_or(&NULL));
                }
                (Step::Index(index, _), Value::Array(items)) => {
                    let len = items.len() as i64;
                    let i = if *index < 0 { len + index } else { *index };
                    next.push(
                        usize::try_from(i)
                            .ok()
                            .and_then(|i| items.get(i))
                            .unwrap_or(&NULL),
                    );
                }
                (Step::Field(..) | Step::Index(..), Value::Null) => next.push(&NULL),
                (Step::Iterate(_), Value::Array(items)) => next.extend(items.iter()),
                (Step::Iterate(_), Value::Object(map)) => next.extend(map.values()),
                (
                    Step::Field(_, optional) | Step::Index(_, optional) | Step::Iterate(optional),
                    _,
                ) => {
                    if !*optional {
                        return Err(EvalError);
                    }
                }
            }
        }
        current = next;
    }
    Ok(current)
}

fn eval(expr: &Expr, input: &Value, out: &mut Vec<Value>) -> Result<(), EvalError> {
    match expr {
        Expr::Identity => out.push(input.clone()),
        Expr::Literal(v) => out.push(v.clone()),
        Expr::Field(base, name, optional) => {
            for v in stream(base, input)? {
                match &v {
                    Value::Object(map) => out.push(map.get(name).cloned().unwrap_or(Value::Null)),
                    Value::Null => out.push(Value::Null),
                    _ if *optional => {}
                    _ => return Err(EvalError),
                }
            }
        }
        Expr::Index(base, index, optional) => {
            for v in stream(base, input)? {
                match &v {
                    Value::Array(items) => {
                        let len = items.len() as i64;
                        let i = if *index < 0 { len + index } else { *index };
                        let item = usize::try_from(i).ok().and_then(|i| items.get(i));
                        out.push(item.cloned().unwrap_or(Value::Null));
                    }
                    Value::Null => out.push(Value::Null),
                    _ if *optional => {}
                    _ => return Err(EvalError),
                }
            }
        }
        Expr::Iterate(base, optional) => {
            for v in stream(base, input)? {
                match v {
                    Value::Array(items) => out.extend(items),
                    Value::Object(map) => out.extend(map.into_iter().map(|(_, v)| v)),
                    _ if *optional => {}
                    _ => return Err(EvalError),
                }
            }
        }
        Expr::Path(steps) => out.extend(walk(steps, input)?.into_iter().cloned()),
        // A path on the left is walked by reference: nothing is cloned on the way.
        Expr::Pipe(left, right) if matches!(**left, Expr::Path(_)) => {
            let Expr::Path(steps) = &**left else {
                return Err(EvalError);
            };
            for v in walk(steps, input)? {
                eval(right, v, out)?;
            }
        }
        Expr::Pipe(left, right) => {
            for v in stream(left, input)? {
                eval(right, &v, out)?;
            }
        }
        Expr::Select(cond) => {
            for v in stream(cond, input)? {
                if truthy(&v) {
                    out.push(input.clone());
                }
            }
        }
        Expr::Not => out.push(Value::Bool(!truthy(input))),
        Expr::Length => out.push(match input {
            Value::Null => Value::from(0),
            Value::Bool(_) => return Err(EvalError),
            Value::Number(n) => Value::from(n.as_f64().unwrap_or_default().abs()),
            Value::String(s) => Value::from(s.chars().count()),
            Value::Array(a) => Value::from(a.len()),
            Value::Object(m) => Value::from(m.len()),
        }),
        Expr::Compare(left, op, right) => {
            // jq's order: the right operand's outputs outer, the left's inner.
            let rights = stream(right, input)?;
            let lefts = stream(left, input)?;
            for r in &rights {
                for l in &lefts {
                    let ord = compare(l, r);
                    let result = match op {
                        CmpOp::Eq => ord == Ordering::Equal,
                        CmpOp::Ne => ord != Ordering::Equal,
                        CmpOp::Lt => ord == Ordering::Less,
                        CmpOp::Le => ord != Ordering::Greater,
                        CmpOp::Gt => ord == Ordering::Greater,
                        CmpOp::Ge => ord != Ordering::Less,
                    };
                    out.push(Value::Bool(result));
                }
            }
        }
        Expr::And(left, right) => {
            for l in stream(left, input)? {
                if !truthy(&l) {
                    out.push(Value::Bool(false));
                    continue;
                }
                for r in stream(right, input)? {
                    out.push(Value::Bool(truthy(&r)));
                }
            }
        }
        Expr::Or(left, right) => {
            for l in stream(left, input)? {
                if truthy(&l) {
                    out.push(Value::Bool(true));
                    continue;
                }
                for r in stream(right, input)? {
                    out.push(Value::Bool(truthy(&r)));
                }
            }
        }
        Expr::Alternative(left, right) => {
            let lefts: Vec<Value> = stream(left, input)
                .unwrap_or_default()
                .into_iter()
                .filter(truthy)
                .collect();
            if lefts.is_empty() {
                eval(right, input, out)?;
            } else {
                out.extend(lefts);
            }
        }
    }
    Ok(())
}

fn stream(expr: &Expr, input: &Value) -> Result<Vec<Value>, EvalError> {
    let mut out = Vec::new();
    eval(expr, input, &mut out)?;
    Ok(out)
}

/// jq's truth: everything but `false` and `null`.
fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Null | Value::Bool(false))
}

/// jq's total order: null < false < true < numbers < strings < arrays < objects.
fn compare(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(false) => 1,
            Value::Bool(true) => 2,
            Value::Number(_) => 3,
            Value::String(_) => 4,
            Value::Array(_) => 5,
            Value::Object(_) => 6,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or_default(),
                y.as_f64().unwrap_or_default(),
            );
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let o = compare(l, r);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            if x == y {
                Ordering::Equal
            } else {
                let mut xk: Vec<&String> = x.keys().collect();
                let mut yk: Vec<&String> = y.keys().collect();
                xk.sort();
                yk.sort();
                xk.cmp(&yk).then(Ordering::Less)
            }
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ParseError {
        ParseError {
            offset: self.pos,
            message: message.to_owned(),
        }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.src[self.pos..].starts_with(token.as_bytes()) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    /// `token` as a keyword: not followed by an identifier character.
    fn eat_keyword(&mut self, word: &str) -> bool {
        self.skip_ws();
        let end = self.pos + word.len();
        if self.src[self.pos..].starts_with(word.as_bytes())
            && !self.src.get(end).is_some_and(|c| is_ident(*c))
        {
            self.pos = end;
            true
        } else {
            false
        }
    }

    fn pipe(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.alternative()?;
        loop {
            self.skip_ws();
            // `|=` is an update-assignment, not in the subset.
            if self.peek() == Some(b'|') && self.src.get(self.pos + 1) != Some(&b'=') {
                self.pos += 1;
                let right = self.alternative()?;
                left = Expr::Pipe(Box::new(left), Box::new(right));
            } else {
                return Ok(left);
            }
        }
    }

    fn alternative(&mut self) -> Result<Expr, ParseError> {
        let left = self.or()?;
        if self.eat("//") {
            let right = self.alternative()?;
            return Ok(Expr::Alternative(Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.and()?;
        while self.eat_keyword("or") {
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.comparison()?;
        while self.eat_keyword("and") {
            let right = self.comparison()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let left = self.postfix()?;
        self.skip_ws();
        let op = if self.eat("==") {
            CmpOp::Eq
        } else if self.eat("!=") {
            CmpOp::Ne
        } else if self.eat("<=") {
            CmpOp::Le
        } else if self.eat(">=") {
            CmpOp::Ge
        } else if self.eat("<") {
            CmpOp::Lt
        } else if self.eat(">") {
            CmpOp::Gt
        } else {
            return Ok(left);
        };
        let right = self.postfix()?;
        Ok(Expr::Compare(Box::new(left), op, Box::new(right)))
    }

    fn postfix(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let mut expr = match self.peek() {
            Some(b'.') => {
                self.pos += 1;
                match self.peek() {
                    Some(c) if is_ident_start(c) => {
                        let name = self.ident();
                        Expr::Field(Box::new(Expr::Identity), name, false)
                    }
                    Some(b'"') => {
                        let name = self.string()?;
                        Expr::Field(Box::new(Expr::Identity), name, false)
                    }
                    _ => Expr::Identity,
                }
            }
            Some(b'"') => Expr::Literal(Value::String(self.string()?)),
            Some(b'(') => {
                self.pos += 1;
                let inner = self.pipe()?;
                if !self.eat(")") {
                    return Err(self.error("expected )"));
                }
                inner
            }
            Some(c) if c == b'-' || c.is_ascii_digit() => self.number()?,
            Some(c) if is_ident_start(c) => {
                let start = self.pos;
                let word = self.ident();
                match word.as_str() {
                    "true" => Expr::Literal(Value::Bool(true)),
                    "false" => Expr::Literal(Value::Bool(false)),
                    "null" => Expr::Literal(Value::Null),
                    "not" => Expr::Not,
                    "length" => Expr::Length,
                    "select" => {
                        if !self.eat("(") {
                            return Err(self.error("expected ( after select"));
                        }
                        let cond = self.pipe()?;
                        if !self.eat(")") {
                            return Err(self.error("expected )"));
                        }
                        Expr::Select(Box::new(cond))
                    }
                    _ => {
                        self.pos = start;
                        return Err(self.error(&format!(
                            "function {word:?} is not in the jq subset kubemock evaluates (paths, |, select, not, length, comparisons, and, or, //)"
                        )));
                    }
                }
            }
            _ => return Err(self.error("expected a path, a literal, select(...) or (")),
        };
        // Suffixes: .name, ."name", .[...], [...], ?
        loop {
            let save = self.pos;
            match self.peek() {
                Some(b'.') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c) if is_ident_start(c) => {
                            let name = self.ident();
                            expr = Expr::Field(Box::new(expr), name, false);
                        }
                        Some(b'"') => {
                            let name = self.string()?;
                            expr = Expr::Field(Box::new(expr), name, false);
                        }
                        Some(b'[') => {
                            expr = self.bracket(expr)?;
                        }
                        _ => {
                            self.pos = save;
                            return Err(self.error("expected a field name or [ after ."));
                        }
                    }
                }
                Some(b'[') => expr = self.bracket(expr)?,
                Some(b'?') => {
                    self.pos += 1;
                    expr = match expr {
                        Expr::Field(b, n, _) => Expr::Field(b, n, true),
                        Expr::Index(b, i, _) => Expr::Index(b, i, true),
                        Expr::Iterate(b, _) => Expr::Iterate(b, true),
                        other => other,
                    };
                }
                _ => return Ok(expr),
            }
        }
    }

    /// `[` `]`, `[` string `]` or `[` integer `]`, at `[`.
    fn bracket(&mut self, base: Expr) -> Result<Expr, ParseError> {
        self.pos += 1;
        self.skip_ws();
        if self.eat("]") {
            return Ok(Expr::Iterate(Box::new(base), false));
        }
        let expr = match self.peek() {
            Some(b'"') => Expr::Field(Box::new(base), self.string()?, false),
            Some(c) if c == b'-' || c.is_ascii_digit() => match self.number()? {
                Expr::Literal(Value::Number(n)) => match n.as_i64() {
                    Some(i) => Expr::Index(Box::new(base), i, false),
                    None => return Err(self.error("an index must be an integer")),
                },
                _ => return Err(self.error("expected an index")),
            },
            _ => {
                return Err(self.error(
                    "only [], [\"key\"] and [N] subscripts are in the jq subset kubemock evaluates",
                ));
            }
        };
        if !self.eat("]") {
            return Err(self.error("expected ]"));
        }
        Ok(expr)
    }

    fn ident(&mut self) -> String {
        let start = self.pos;
        while self.pos < self.src.len() && is_ident(self.src[self.pos]) {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.src[start..self.pos]).into_owned()
    }

    fn number(&mut self) -> Result<Expr, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E')
        {
            self.pos += 1;
        }
        let text = String::from_utf8_lossy(&self.src[start..self.pos]);
        match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Number(_)) => Ok(Expr::Literal(v)),
            _ => {
                self.pos = start;
                Err(self.error("invalid number"))
            }
        }
    }

    /// A JSON string literal, at its opening quote.
    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        self.pos += 1;
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    let text = String::from_utf8_lossy(&self.src[start..self.pos]);
                    if text.contains("\\(") {
                        self.pos = start;
                        return Err(self.error(
                            "string interpolation is not in the jq subset kubemock evaluates",
                        ));
                    }
                    return serde_json::from_str::<String>(&text).map_err(|_| {
                        self.pos = start;
                        self.error("invalid string literal")
                    });
                }
                _ => self.pos += 1,
            }
        }
        self.pos = start;
        Err(self.error("unterminated string"))
    }
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(q: &str, v: &Value) -> Vec<Value> {
        match Query::parse(q) {
            Ok(q) => q.execute(v),
            Err(e) => panic!("{q}: {e}"),
        }
    }

    #[test]
    fn kwok_shipped_keys() {
        let pod = json!({
            "metadata": {"labels": {"node-not-ready.stage.kwok.x-k8s.io": "true"},
                         "ownerReferences": [{"kind": "Job"}, {"kind": "Other"}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
        });
        assert_eq!(
            run(".metadata.deletionTimestamp", &pod),
            Vec::<Value>::new()
        );
        assert_eq!(run(".status.phase", &pod), vec![json!("Pending")]);
        assert_eq!(
            run(
                r#".status.conditions.[] | select( .type == "Ready" ) | .status"#,
                &pod
            ),
            vec![json!("False")]
        );
        assert_eq!(
            run(".metadata.ownerReferences.[].kind", &pod),
            vec![json!("Job"), json!("Other")]
        );
        assert_eq!(
            run(
                r#".metadata.labels["node-not-ready.stage.kwok.x-k8s.io"]"#,
                &pod
            ),
            vec![json!("true")]
        );
        // Iterating over null is an error in jq: the whole expression yields nothing.
        assert_eq!(run(".spec.containers[].name", &pod), Vec::<Value>::new());
        assert_eq!(
            run(".status.conditions[1].type", &pod),
            vec![json!("PodScheduled")]
        );
        assert_eq!(run(".status.conditions | length", &pod), vec![json!(2)]);
        assert_eq!(run(r#".x // "d""#, &pod), vec![json!("d")]);
        assert_eq!(
            run(
                r#".status.phase == "Pending" and (.status.conditions | length) > 1"#,
                &pod
            ),
            vec![json!(true)]
        );
    }

    /// The fast path (plain paths walked by reference) yields what the general evaluator
    /// yields, on a table of queries and inputs.
    #[test]
    fn plain_paths_walked_by_reference_agree_with_the_general_evaluator() {
        let inputs = [
            json!({
                "metadata": {"name": "p", "labels": {"app": "a", "x.io/k": "v"},
                    "ownerReferences": [{"kind": "Job"}, {"kind": "ReplicaSet"}],
                    "deletionTimestamp": null},
                "spec": {"containers": [{"name": "c", "ports": [{"port": 80}]},
                    {"name": "d"}], "nodeName": "n"},
                "status": {"phase": "Running", "conditions": [
                    {"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]},
                "n": 3, "s": "str", "a": [1, [2, 3], {"k": 4}], "o": {"p": {"q": 1}, "r": 2},
            }),
            json!({"metadata": {}, "status": null}),
            json!(null),
            json!([{"a": 1}, {"a": 2}]),
            json!("a string"),
            json!(7),
        ];
        let queries = [
            ".",
            ".metadata",
            ".metadata.name",
            ".metadata.labels.app",
            r#".metadata.labels["x.io/k"]"#,
            r#".metadata.labels."x.io/k""#,
            ".metadata.deletionTimestamp",
            ".metadata.ownerReferences[].kind",
            ".metadata.ownerReferences.[].kind",
            ".metadata.ownerReferences[0].kind",
            ".metadata.ownerReferences[-1].kind",
            ".metadata.ownerReferences[5].kind",
            ".spec.containers[].ports[].port",
            ".spec.containers[].ports[]?.port",
            ".spec.containers[]?.name",
            ".status.conditions[]?",
            ".status.phase",
            ".status.phase.x",
            ".status.phase.x?",
            ".status.phase[0]",
            ".status.phase[0]?",
            ".status.phase[]",
            ".status.phase[]?",
            ".n.x",
            ".s[]?",
            ".a[]",
            ".a[][]?",
            ".a[1][0]",
            ".o[]",
            ".o[][]",
            ".o[][]?",
            ".[]",
            ".[0]",
            ".[].a",
            ".metadata | .labels | .app",
            ".spec | .containers[] | .name",
            ".[] | .a",
            r#".status.conditions[]? | select(.type == "Ready") | .status"#,
            r#".status.conditions.[] | select( .type == "Ready" ) | .status"#,
            ".spec.containers | length",
            ".metadata.labels.app == \"a\"",
            ".missing // .status.phase",
            ".a[] | .k?",
            "(.metadata.name) | .x?",
            ".status.phase and .n",
            ".s | not",
        ];
        let mut paths = 0;
        for q in queries {
            let fast = Query::parse(q).unwrap_or_else(|e| panic!("{q}: {e}"));
            let general = Query {
                root: parse_tree(q).unwrap_or_else(|e| panic!("{q}: {e}")),
            };
            if matches!(fast.root, Expr::Path(_)) {
                paths += 1;
            }
            for input in &inputs {
                assert_eq!(
                    fast.execute(input),
                    general.execute(input),
                    "{q} on {input}"
                );
            }
        }
        // Most of the table takes the fast path itself, the rest in part.
        assert!(paths >= 30, "{paths} plain paths");
        assert!(matches!(
            Query::parse(".a | select(.b)").map(|q| q.root),
            Ok(Expr::Pipe(left, _)) if matches!(*left, Expr::Path(_))
        ));
    }

    #[test]
    fn outside_the_subset_is_refused() {
        for bad in [
            "",
            ".a |= 1",
            "map(.x)",
            ".a[1:2]",
            r#""\(.a)""#,
            ".a.",
            "select(.a",
            ".a ]",
        ] {
            assert!(Query::parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
