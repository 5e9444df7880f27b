//! Go `text/template`, as far as kwok's Stage templates use it (`next.statusTemplate`; kwok
//! renders them with Go's engine, sprig's functions and its own: kwok `pkg/utils/gotpl`).
//! No maintained Rust crate renders Go templates with Go 1.11's variable assignment
//! (`{{ $found = true }}`, which kwok's `node-initialize` stage uses), so this is a small,
//! explicit engine for that subset, parsed when a Stage is written: anything outside it is
//! refused there (a 422 naming the field), never skipped when rendering.
//!
//! The subset: text; actions with trim markers `{{-` `-}}` and comments `{{/* */}}`;
//! pipelines with `|`; variables (`$x := p`, `$x = p`, `$`, `$x.field`); `.` and field chains
//! (`.a.b`, `(p).a`); literals (strings, raw strings, numbers, `true`, `false`, `nil`);
//! `if`/`else if`/`else`, `range` (with `$i, $v :=`, and `else`), `with` (and `else`), `end`.
//! Functions: Go's `and or not eq ne lt le gt ge len index printf print`; sprig's `dict list
//! default empty quote toJson trim upper lower add sub`; kwok's `Quote YAML Version
//! NodeConditions`, and the ones that depend on the object (`Now`, `NodeIP`, `PodIPWith`...),
//! answered by the caller ([`Host`]).
//!
//! Values are JSON values (kwok renders on the object decoded from JSON). A missing field is
//! `nil`, a field of `nil` is `nil` (Go errors on a field of a nil interface; being lenient
//! there renders every template Go renders), and `nil` prints as Go prints it, `<no value>`.

use std::fmt;

use serde_json::{Map, Value};

/// The functions whose answer depends on the object or the cluster (kwok's `funcMap` of its
/// node and pod controllers, and `Now`).
pub trait Host {
    /// Calls `name` with `args`; `None` when the host has no such function.
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>>;
}

/// The host functions a Stage may call (checked when it is parsed).
pub const HOST_FUNCTIONS: &[&str] = &[
    "Now",
    "StartTime",
    "NodeIP",
    "NodeName",
    "NodePort",
    "PodIP",
    "NodeIPWith",
    "NodeIPsWith",
    "PodIPWith",
    "PodIPsWith",
];

/// Functions this engine implements itself.
const BUILTIN_FUNCTIONS: &[&str] = &[
    "and",
    "or",
    "not",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "len",
    "index",
    "printf",
    "print",
    "dict",
    "list",
    "default",
    "empty",
    "quote",
    "toJson",
    "trim",
    "upper",
    "lower",
    "add",
    "sub",
    "Quote",
    "YAML",
    "Version",
    "NodeConditions",
];

/// The version `Version` answers (kwok answers its own release).
pub const VERSION: &str = "kubemock";

/// A parse or render error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, with the line it was found on.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    nodes: Vec<Node>,
}

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipeline),
    If {
        cond: Pipeline,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Range {
        pipe: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    With {
        pipe: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
}

#[derive(Debug, Clone)]
struct Pipeline {
    /// Declared (`:=`) or assigned (`=`) variables.
    vars: Vec<String>,
    assign: bool,
    commands: Vec<Vec<Arg>>,
}

#[derive(Debug, Clone)]
enum Arg {
    /// `.` followed by fields (`.a.b`; none for `.`).
    Dot(Vec<String>),
    /// `$x.a.b`.
    Var(String, Vec<String>),
    Func(String),
    Literal(Value),
    /// `(p).a.b`.
    Paren(Box<Pipeline>, Vec<String>),
}

// ---------------------------------------------------------------------------------------
// Lexing: the text is split into text runs and actions.

enum Piece {
    Text(String),
    Action(String, usize),
}

fn split(src: &str) -> Result<Vec<Piece>, Error> {
    let mut pieces = Vec::new();
    let mut rest = src;
    let mut trim_next = false;
    while let Some(start) = rest.find("{{") {
        let mut text = &rest[..start];
        if trim_next {
            text = text.trim_start();
        }
        let after = &rest[start + 2..];
        let trim_before =
            after.starts_with("- ") || after.starts_with("-\t") || after.starts_with("-\n");
        if trim_before {
            text = text.trim_end();
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text.to_owned()));
        }
        let body_start = if trim_before { 1 } else { 0 };
        let line = src[..src.len() - rest.len() + start].matches('\n').count() + 1;
        let after_open = &after[body_start..];
        // A comment may contain `}}`: it ends at `*/}}` (or `*/ -}}`).
        let close = if after_open.trim_start().starts_with("/*") {
            after_open
                .find("*/")
                .and_then(|c| after_open[c..].find("}}").map(|e| c + e))
        } else {
            find_close(after_open)
        };
        let Some(close) = close else {
            return Err(Error {
                message: format!("line {line}: unclosed action"),
            });
        };
        let mut body = &after_open[..close];
        trim_next = false;
        if body.ends_with(" -") || body.ends_with("\t-") || body.ends_with("\n-") {
            body = &body[..body.len() - 1];
            trim_next = true;
        }
        pieces.push(Piece::Action(body.trim().to_owned(), line));
        rest = &after_open[close + 2..];
    }
    let mut text = rest;
    if trim_next {
        text = text.trim_start();
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text.to_owned()));
    }
    Ok(pieces)
}

/// The `}}` closing an action, outside string literals.
fn find_close(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Dot(Vec<String>),
    Var(String, Vec<String>),
    Ident(String),
    Str(String),
    Num(Value),
    Fields(Vec<String>),
    Pipe,
    LParen,
    RParen,
    Declare,
    Assign,
    Comma,
}

fn tokenize(action: &str, line: usize) -> Result<Vec<Tok>, Error> {
    let err = |m: String| Error {
        message: format!("line {line}: {m}"),
    };
    let b = action.as_bytes();
    let mut i = 0;
    let mut toks = Vec::new();
    let fields = |i: &mut usize| -> Vec<String> {
        let mut out = Vec::new();
        while *i < b.len() && b[*i] == b'.' && b.get(*i + 1).is_some_and(|c| is_ident(*c)) {
            *i += 1;
            let s = *i;
            while *i < b.len() && is_ident(b[*i]) {
                *i += 1;
            }
            out.push(action[s..*i].to_owned());
        }
        out
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'|' => {
                toks.push(Tok::Pipe);
                i += 1;
            }
            b'(' => {
                toks.push(Tok::LParen);
                i += 1;
            }
            b')' => {
                i += 1;
                let f = fields(&mut i);
                toks.push(Tok::RParen);
                if !f.is_empty() {
                    toks.push(Tok::Fields(f));
                }
            }
            b',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            b':' if b.get(i + 1) == Some(&b'=') => {
                toks.push(Tok::Declare);
                i += 2;
            }
            b'=' => {
                toks.push(Tok::Assign);
                i += 1;
            }
            b'.' => {
                let f = fields(&mut i);
                if f.is_empty() {
                    i += 1;
                }
                toks.push(Tok::Dot(f));
            }
            b'$' => {
                i += 1;
                let s = i;
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                let name = format!("${}", &action[s..i]);
                let f = fields(&mut i);
                toks.push(Tok::Var(name, f));
            }
            b'"' => {
                let s = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                let text = action.get(s..i.min(b.len())).unwrap_or_default();
                let value: String = serde_json::from_str(text)
                    .map_err(|_| err(format!("bad string literal {text}")))?;
                toks.push(Tok::Str(value));
            }
            b'`' => {
                let s = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
                if i >= b.len() {
                    return Err(err("unterminated raw string".to_owned()));
                }
                toks.push(Tok::Str(action[s..i].to_owned()));
                i += 1;
            }
            c if c == b'-' || c == b'+' || c.is_ascii_digit() => {
                let s = i;
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
                let text = action[s..i].trim_start_matches('+');
                let value = if let Some(hex) = text.strip_prefix("0x") {
                    i64::from_str_radix(hex, 16).ok().map(Value::from)
                } else if let Ok(n) = text.parse::<i64>() {
                    Some(Value::from(n))
                } else {
                    text.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                };
                let Some(value) = value else {
                    return Err(err(format!("bad number {text}")));
                };
                toks.push(Tok::Num(value));
            }
            c if is_ident(c) => {
                let s = i;
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                toks.push(Tok::Ident(action[s..i].to_owned()));
            }
            other => {
                return Err(err(format!("unexpected {:?} in action", char::from(other))));
            }
        }
    }
    Ok(toks)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

// ---------------------------------------------------------------------------------------
// Parsing.

struct Parser {
    pieces: std::vec::IntoIter<Piece>,
}

/// How a list of nodes ended.
enum Closing {
    Eof,
    Keyword,
    Else(Vec<Tok>, usize),
}

impl Template {
    /// Parses `source` (kwok trims it first), refusing what the subset does not have and
    /// functions that do not exist.
    pub fn parse(source: &str) -> Result<Template, Error> {
        let pieces = split(source.trim())?;
        let mut parser = Parser {
            pieces: pieces.into_iter(),
        };
        let (nodes, end) = parser.list()?;
        match end {
            Closing::Eof => Ok(Template { nodes }),
            Closing::Keyword => Err(Error {
                message: "unexpected {{end}}".to_owned(),
            }),
            Closing::Else(_, line) => Err(Error {
                message: format!("line {line}: unexpected {{{{else}}}}"),
            }),
        }
    }

    /// Renders the template on `data`.
    pub fn render(&self, data: &Value, host: &dyn Host) -> Result<String, Error> {
        let mut state = State {
            vars: vec![("$".to_owned(), data.clone())],
            host,
            out: String::new(),
            steps: 0,
        };
        state.walk(&self.nodes, data)?;
        Ok(state.out)
    }
}

impl Parser {
    fn list(&mut self) -> Result<(Vec<Node>, Closing), Error> {
        let mut nodes = Vec::new();
        while let Some(piece) = self.pieces.next() {
            let (action, line) = match piece {
                Piece::Text(t) => {
                    nodes.push(Node::Text(t));
                    continue;
                }
                Piece::Action(a, line) => (a, line),
            };
            if action.starts_with("/*") {
                continue;
            }
            let toks = tokenize(&action, line)?;
            let keyword = match toks.first() {
                Some(Tok::Ident(k)) => k.as_str(),
                _ => "",
            };
            match keyword {
                "end" => return Ok((nodes, Closing::Keyword)),
                "else" => return Ok((nodes, Closing::Else(toks[1..].to_vec(), line))),
                "if" | "range" | "with" => {
                    let kind = keyword.to_owned();
                    nodes.push(self.block(&kind, &toks[1..], line)?);
                }
                "define" | "template" | "block" | "break" | "continue" => {
                    return Err(Error {
                        message: format!(
                            "line {line}: {{{{{keyword}}}}} is not in the template subset kubemock renders"
                        ),
                    });
                }
                _ => nodes.push(Node::Action(pipeline(&toks, line)?)),
            }
        }
        Ok((nodes, Closing::Eof))
    }

    /// `if`/`range`/`with` after its keyword, up to its `end`.
    fn block(&mut self, kind: &str, toks: &[Tok], line: usize) -> Result<Node, Error> {
        let pipe = pipeline(toks, line)?;
        let (body, end) = self.list()?;
        let otherwise = match end {
            Closing::Eof => {
                return Err(Error {
                    message: format!("line {line}: {{{{{kind}}}}} without {{{{end}}}}"),
                });
            }
            Closing::Keyword => Vec::new(),
            Closing::Else(rest, else_line) => {
                if rest.is_empty() {
                    let (otherwise, end) = self.list()?;
                    if !matches!(end, Closing::Keyword) {
                        return Err(Error {
                            message: format!("line {else_line}: {{{{else}}}} without {{{{end}}}}"),
                        });
                    }
                    otherwise
                } else {
                    // `else if ...` / `else with ...`: a nested block sharing the `end`.
                    let nested = match rest.first() {
                        Some(Tok::Ident(k)) if k == "if" || k == "with" => k.clone(),
                        _ => {
                            return Err(Error {
                                message: format!(
                                    "line {else_line}: expected if or with after else"
                                ),
                            });
                        }
                    };
                    vec![self.block(&nested, &rest[1..], else_line)?]
                }
            }
        };
        Ok(match kind {
            "if" => Node::If {
                cond: pipe,
                then: body,
                otherwise,
            },
            "range" => Node::Range {
                pipe,
                body,
                otherwise,
            },
            _ => Node::With {
                pipe,
                body,
                otherwise,
            },
        })
    }
}

fn pipeline(toks: &[Tok], line: usize) -> Result<Pipeline, Error> {
    let err = |m: &str| Error {
        message: format!("line {line}: {m}"),
    };
    let mut vars = Vec::new();
    let mut assign = false;
    let mut rest = toks;
    // `$a :=`, `$a, $b :=`, `$a =`
    let decl_at = toks
        .iter()
        .position(|t| matches!(t, Tok::Declare | Tok::Assign));
    if let Some(at) = decl_at {
        let head = &toks[..at];
        let all_vars = head.iter().enumerate().all(|(i, t)| match t {
            Tok::Var(_, f) => i % 2 == 0 && f.is_empty(),
            Tok::Comma => i % 2 == 1,
            _ => false,
        });
        if all_vars && !head.is_empty() {
            for t in head {
                if let Tok::Var(name, _) = t {
                    vars.push(name.clone());
                }
            }
            assign = matches!(toks[at], Tok::Assign);
            rest = &toks[at + 1..];
            if vars.len() > 2 {
                return Err(err("too many declarations"));
            }
        }
    }
    let mut commands = Vec::new();
    let mut pos = 0;
    loop {
        let mut args = Vec::new();
        while pos < rest.len() && rest[pos] != Tok::Pipe && rest[pos] != Tok::RParen {
            let arg = match &rest[pos] {
                Tok::Dot(f) => Arg::Dot(f.clone()),
                Tok::Var(n, f) => Arg::Var(n.clone(), f.clone()),
                Tok::Str(s) => Arg::Literal(Value::String(s.clone())),
                Tok::Num(n) => Arg::Literal(n.clone()),
                Tok::Ident(name) => match name.as_str() {
                    "true" => Arg::Literal(Value::Bool(true)),
                    "false" => Arg::Literal(Value::Bool(false)),
                    "nil" => Arg::Literal(Value::Null),
                    _ if BUILTIN_FUNCTIONS.contains(&name.as_str())
                        || HOST_FUNCTIONS.contains(&name.as_str()) =>
                    {
                        Arg::Func(name.clone())
                    }
                    _ => {
                        return Err(err(&format!(
                            "function {name:?} not defined (kubemock renders Go's, kwok's and some of sprig's template functions)"
                        )));
                    }
                },
                Tok::LParen => {
                    // Find the matching paren.
                    let mut depth = 0;
                    let mut end = None;
                    for (j, t) in rest.iter().enumerate().skip(pos) {
                        match t {
                            Tok::LParen => depth += 1,
                            Tok::RParen => {
                                depth -= 1;
                                if depth == 0 {
                                    end = Some(j);
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    let Some(end) = end else {
                        return Err(err("unclosed ("));
                    };
                    let inner = pipeline(&rest[pos + 1..end], line)?;
                    pos = end;
                    let fields = match rest.get(end + 1) {
                        Some(Tok::Fields(f)) => {
                            pos += 1;
                            f.clone()
                        }
                        _ => Vec::new(),
                    };
                    Arg::Paren(Box::new(inner), fields)
                }
                other => return Err(err(&format!("unexpected {other:?}"))),
            };
            args.push(arg);
            pos += 1;
        }
        if args.is_empty() {
            return Err(err("missing value for command"));
        }
        if args.len() > 1 && !matches!(args[0], Arg::Func(_)) {
            return Err(err("can't give arguments to a non-function"));
        }
        commands.push(args);
        if pos >= rest.len() {
            break;
        }
        if rest[pos] == Tok::RParen {
            return Err(err("unexpected )"));
        }
        pos += 1;
    }
    Ok(Pipeline {
        vars,
        assign,
        commands,
    })
}

// ---------------------------------------------------------------------------------------
// Rendering.

/// Steps one render may take (range iterations and actions), so a template cannot render
/// without end on a large object.
const MAX_STEPS: usize = 1_000_000;

struct State<'a> {
    vars: Vec<(String, Value)>,
    host: &'a dyn Host,
    out: String,
    steps: usize,
}

impl State<'_> {
    fn step(&mut self) -> Result<(), Error> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(rerr("template took too many steps"));
        }
        Ok(())
    }

    fn walk(&mut self, nodes: &[Node], dot: &Value) -> Result<(), Error> {
        for node in nodes {
            self.step()?;
            match node {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipe(p, dot)?;
                    if p.vars.is_empty() {
                        print(&v, &mut self.out);
                    }
                }
                Node::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.pipe(cond, dot)?;
                    if truth(&v) {
                        self.walk(then, dot)?;
                    } else {
                        self.walk(otherwise, dot)?;
                    }
                    self.vars.truncate(mark);
                }
                Node::With {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.pipe(pipe, dot)?;
                    if truth(&v) {
                        self.walk(body, &v)?;
                    } else {
                        self.walk(otherwise, dot)?;
                    }
                    self.vars.truncate(mark);
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    // The range's variables are set per item, not by the pipeline.
                    let unbound = Pipeline {
                        vars: Vec::new(),
                        assign: false,
                        commands: pipe.commands.clone(),
                    };
                    let v = self.pipe(&unbound, dot)?;
                    let items: Vec<(Value, Value)> = match v {
                        Value::Array(a) => a
                            .into_iter()
                            .enumerate()
                            .map(|(i, v)| (Value::from(i), v))
                            .collect(),
                        Value::Object(m) => {
                            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
                            entries.sort_by(|a, b| a.0.cmp(&b.0));
                            entries
                                .into_iter()
                                .map(|(k, v)| (Value::String(k), v))
                                .collect()
                        }
                        Value::Null => Vec::new(),
                        Value::Number(n) if n.as_u64().is_some() => (0..n.as_u64().unwrap_or(0))
                            .map(|i| (Value::from(i), Value::from(i)))
                            .collect(),
                        other => {
                            return Err(rerr(&format!("range can't iterate over {other}")));
                        }
                    };
                    if items.is_empty() {
                        self.walk(otherwise, dot)?;
                    }
                    for (key, item) in items {
                        self.step()?;
                        let inner = self.vars.len();
                        match pipe.vars.as_slice() {
                            [] => {}
                            [v] => self.vars.push((v.clone(), item.clone())),
                            [k, v, ..] => {
                                self.vars.push((k.clone(), key));
                                self.vars.push((v.clone(), item.clone()));
                            }
                        }
                        self.walk(body, &item)?;
                        self.vars.truncate(inner);
                    }
                    self.vars.truncate(mark);
                }
            }
        }
        Ok(())
    }

    fn pipe(&mut self, p: &Pipeline, dot: &Value) -> Result<Value, Error> {
        let mut last: Option<Value> = None;
        for cmd in &p.commands {
            last = Some(self.command(cmd, dot, last)?);
        }
        let value = last.unwrap_or(Value::Null);
        if p.assign {
            for name in &p.vars {
                match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = value.clone(),
                    None => return Err(rerr(&format!("undefined variable: {name}"))),
                }
            }
        } else {
            for name in &p.vars {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn command(&mut self, args: &[Arg], dot: &Value, piped: Option<Value>) -> Result<Value, Error> {
        let Some(first) = args.first() else {
            return Ok(Value::Null);
        };
        if let Arg::Func(name) = first {
            // `and`/`or` evaluate lazily (Go 1.18).
            if name == "and" || name == "or" {
                let mut last = Value::Null;
                let total = args.len() - 1 + usize::from(piped.is_some());
                if total == 0 {
                    return Err(rerr(&format!("wrong number of args for {name}")));
                }
                for arg in &args[1..] {
                    last = self.arg(arg, dot)?;
                    if truth(&last) == (name == "or") {
                        return Ok(last);
                    }
                }
                if let Some(p) = piped {
                    last = p;
                }
                return Ok(last);
            }
            let mut values = Vec::with_capacity(args.len());
            for arg in &args[1..] {
                values.push(self.arg(arg, dot)?);
            }
            if let Some(p) = piped {
                values.push(p);
            }
            return call(name, &values, self.host);
        }
        if piped.is_some() {
            return Err(rerr("can't give arguments to a non-function"));
        }
        self.arg(first, dot)
    }

    fn arg(&mut self, arg: &Arg, dot: &Value) -> Result<Value, Error> {
        Ok(match arg {
            Arg::Dot(fields) => walk_fields(dot, fields),
            Arg::Var(name, fields) => {
                let Some((_, v)) = self.vars.iter().rev().find(|(n, _)| n == name) else {
                    return Err(rerr(&format!("undefined variable: {name}")));
                };
                walk_fields(v, fields)
            }
            Arg::Literal(v) => v.clone(),
            Arg::Func(name) => call(name, &[], self.host)?,
            Arg::Paren(p, fields) => {
                let v = self.pipe(p, dot)?;
                walk_fields(&v, fields)
            }
        })
    }
}

fn rerr(message: &str) -> Error {
    Error {
        message: message.to_owned(),
    }
}

fn walk_fields(v: &Value, fields: &[String]) -> Value {
    let mut cur = v;
    for f in fields {
        match cur.get(f.as_str()) {
            Some(next) => cur = next,
            None => return Value::Null,
        }
    }
    cur.clone()
}

/// Go's `truth`: false, 0, nil and empty strings, lists and maps are false.
fn truth(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// How `{{ v }}` prints: strings as they are, numbers as JSON writes them, nil as Go's
/// `<no value>`; lists and maps as JSON (Go prints `map[a:b]`, which no Stage can use).
fn print(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<no value>"),
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
}

fn to_text(v: &Value) -> String {
    let mut s = String::new();
    print(v, &mut s);
    s
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn order(name: &str, a: &Value, b: &Value) -> Result<std::cmp::Ordering, Error> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => Ok(x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)),
            _ => Err(rerr(&format!("{name}: incompatible types for comparison"))),
        },
    }
}

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), Error> {
    if args.len() == n {
        Ok(())
    } else {
        Err(rerr(&format!(
            "wrong number of args for {name}: want {n} got {}",
            args.len()
        )))
    }
}

/// kwok's `Quote`: the JSON form of the value, itself quoted unless it is a string.
fn quote_json(v: &Value) -> String {
    let json = v.to_string();
    if json.starts_with('"') {
        json
    } else {
        Value::String(json).to_string()
    }
}

fn call(name: &str, args: &[Value], host: &dyn Host) -> Result<Value, Error> {
    use std::cmp::Ordering::{Greater, Less};
    Ok(match name {
        "not" => {
            arity(name, args, 1)?;
            Value::Bool(!truth(&args[0]))
        }
        "eq" => {
            if args.len() < 2 {
                return Err(rerr("missing argument for comparison"));
            }
            Value::Bool(args[1..].iter().any(|b| equal(&args[0], b)))
        }
        "ne" => {
            arity(name, args, 2)?;
            Value::Bool(!equal(&args[0], &args[1]))
        }
        "lt" | "le" | "gt" | "ge" => {
            arity(name, args, 2)?;
            let o = order(name, &args[0], &args[1])?;
            Value::Bool(match name {
                "lt" => o == Less,
                "le" => o != Greater,
                "gt" => o == Greater,
                _ => o != Less,
            })
        }
        "len" => {
            arity(name, args, 1)?;
            Value::from(match &args[0] {
                Value::String(s) => s.len(),
                Value::Array(a) => a.len(),
                Value::Object(m) => m.len(),
                Value::Null => 0,
                other => return Err(rerr(&format!("len of {other}"))),
            })
        }
        "index" => {
            let Some((first, keys)) = args.split_first() else {
                return Err(rerr("wrong number of args for index"));
            };
            let mut cur = first.clone();
            for key in keys {
                cur = match (&cur, key) {
                    (Value::Object(m), Value::String(k)) => {
                        m.get(k).cloned().unwrap_or(Value::Null)
                    }
                    (Value::Array(a), Value::Number(n)) => {
                        let i = n.as_u64().and_then(|i| usize::try_from(i).ok());
                        match i.and_then(|i| a.get(i)) {
                            Some(v) => v.clone(),
                            None => return Err(rerr(&format!("index out of range: {n}"))),
                        }
                    }
                    (Value::Null, _) => Value::Null,
                    _ => return Err(rerr(&format!("can't index {cur} with {key}"))),
                };
            }
            cur
        }
        "printf" => {
            let Some((format, rest)) = args.split_first() else {
                return Err(rerr("wrong number of args for printf"));
            };
            Value::String(printf(&to_text(format), rest))
        }
        "print" => Value::String(args.iter().map(to_text).collect::<Vec<_>>().join("")),
        "dict" => {
            let mut m = Map::new();
            for pair in args.chunks(2) {
                let key = to_text(&pair[0]);
                m.insert(
                    key,
                    pair.get(1).cloned().unwrap_or(Value::String(String::new())),
                );
            }
            Value::Object(m)
        }
        "list" => Value::Array(args.to_vec()),
        "default" => {
            // sprig: `default d v` is v unless empty.
            match args {
                [d] => d.clone(),
                [d, v] => {
                    if truth(v) {
                        v.clone()
                    } else {
                        d.clone()
                    }
                }
                _ => return Err(rerr("wrong number of args for default")),
            }
        }
        "empty" => {
            arity(name, args, 1)?;
            Value::Bool(!truth(&args[0]))
        }
        "quote" => Value::String(
            args.iter()
                .filter(|v| !v.is_null())
                .map(|v| Value::String(to_text(v)).to_string())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "toJson" => {
            arity(name, args, 1)?;
            Value::String(args[0].to_string())
        }
        "trim" | "upper" | "lower" => {
            arity(name, args, 1)?;
            let s = to_text(&args[0]);
            Value::String(match name {
                "trim" => s.trim().to_owned(),
                "upper" => s.to_uppercase(),
                _ => s.to_lowercase(),
            })
        }
        "add" | "sub" => {
            let nums: Vec<i64> = args
                .iter()
                .map(|v| match v {
                    Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
                    Value::String(s) => s.parse().ok(),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| rerr(&format!("{name}: arguments must be numbers")))?;
            match (name, nums.as_slice()) {
                ("sub", [a, b]) => Value::from(a.saturating_sub(*b)),
                ("add", _) => Value::from(nums.iter().fold(0i64, |a, b| a.saturating_add(*b))),
                _ => return Err(rerr("wrong number of args for sub")),
            }
        }
        "Quote" => {
            arity(name, args, 1)?;
            Value::String(quote_json(&args[0]))
        }
        "YAML" => {
            if args.is_empty() || args.len() > 2 {
                return Err(rerr("wrong number of args for YAML"));
            }
            let text = serde_yaml_ng::to_string(&args[0]).map_err(|e| rerr(&e.to_string()))?;
            let indent = args.get(1).and_then(Value::as_u64).unwrap_or(0);
            if indent > 0 {
                let pad = " ".repeat(usize::try_from(indent * 2).unwrap_or(0));
                Value::String(format!("\n{text}").replace('\n', &format!("\n{pad}")))
            } else {
                Value::String(text)
            }
        }
        "Version" => Value::String(VERSION.to_owned()),
        "NodeConditions" => node_conditions(),
        _ => match host.call(name, args) {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(rerr(&format!("{name}: {e}"))),
            None => return Err(rerr(&format!("function {name:?} is not available here"))),
        },
    })
}

/// Go's `fmt.Sprintf` for the verbs templates use: `%s %v %d %q %f %%`.
fn printf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(verb) => match args.next() {
                Some(v) => match verb {
                    'q' => out.push_str(&Value::String(to_text(v)).to_string()),
                    'd' => out.push_str(&match v {
                        Value::Number(n) => n
                            .as_i64()
                            .map(|i| i.to_string())
                            .unwrap_or_else(|| format!("%!d({n})")),
                        other => format!("%!d({})", to_text(other)),
                    }),
                    _ => out.push_str(&to_text(v)),
                },
                None => out.push_str(&format!("%!{verb}(MISSING)")),
            },
            None => out.push_str("%!(NOVERB)"),
        }
    }
    out
}

/// kwok's `NodeConditions` (its `nodeConditions` in `pkg/utils/gotpl/funcs.go`): the
/// conditions of a healthy node.
fn node_conditions() -> Value {
    let condition = |kind: &str, status: &str, reason: &str, message: &str| serde_json::json!({"type": kind, "status": status, "reason": reason, "message": message});
    Value::Array(vec![
        condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        condition(
            "NetworkUnavailable",
            "False",
            "RouteCreated",
            "RouteController created a route",
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct NoHost;
    impl Host for NoHost {
        fn call(&self, name: &str, _: &[Value]) -> Option<Result<Value, String>> {
            match name {
                "Now" => Some(Ok(json!("2026-01-01T00:00:00Z"))),
                "NodeIP" => Some(Ok(json!("10.0.0.1"))),
                _ => None,
            }
        }
    }

    fn render(src: &str, data: &Value) -> String {
        match Template::parse(src).and_then(|t| t.render(data, &NoHost)) {
            Ok(s) => s,
            Err(e) => panic!("{src}: {e}"),
        }
    }

    #[test]
    fn actions_variables_and_blocks() {
        let data = json!({"spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b"}]},
                          "status": {"addresses": [{"type": "InternalIP"}]}, "n": 3});
        assert_eq!(render("{{ .spec.containers }}", &json!({})), "<no value>");
        assert_eq!(
            render(
                "{{ range $i, $c := .spec.containers }}{{ $i }}={{ $c.name | Quote }};{{ end }}",
                &data
            ),
            "0=\"a\";1=\"b\";"
        );
        assert_eq!(
            render(
                "{{ $has := false }}{{ range .status.addresses }}{{ if eq .type \"InternalIP\" }}{{ $has = true }}{{ end }}{{ end }}{{ $has }}",
                &data
            ),
            "true"
        );
        assert_eq!(
            render(
                "{{ with .missing }}x{{ else }}y{{ end }}-{{ with .n }}{{ . }}{{ end }}",
                &data
            ),
            "y-3"
        );
        assert_eq!(
            render(
                "{{ if eq .n 1 }}a{{ else if eq .n 3 }}b{{ else }}c{{ end }}",
                &data
            ),
            "b"
        );
        assert_eq!(render("{{ or .x `\"\"` }}", &data), "\"\"");
        assert_eq!(
            render("{{ printf \"kwok-%s\" Version }}", &data),
            "kwok-kubemock"
        );
        assert_eq!(
            render(
                "{{ $a := or .metadata.annotations dict }}{{ or (index $a \"k\") \"d\" }}",
                &data
            ),
            "d"
        );
        assert_eq!(render("{{- \" a \" -}}  \n  b  {{- 1 }}", &data), " a b1");
        assert_eq!(render("{{/* a comment }} */}}x", &data), "x");
        assert_eq!(
            render("{{ Now | Quote }} {{ 5 | Quote }}", &data),
            "\"2026-01-01T00:00:00Z\" \"5\""
        );
        assert_eq!(render("{{ YAML .spec 1 }}", &data).lines().count(), 6);
        assert_eq!(
            render("{{ default \"Delete\" .x | Quote }}", &data),
            "\"Delete\""
        );
    }

    #[test]
    fn refused_at_parse() {
        for bad in [
            "{{ Nope }}",
            "{{ if .a }}x",
            "{{ end }}",
            "{{ template \"x\" }}",
            "{{ .a",
            "{{ .a .b }}",
            "{{ (eq 1 }}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad:?} parsed");
        }
        // A host function the host lacks fails when rendered.
        let t = Template::parse("{{ PodIP }}").ok();
        assert!(t.is_some_and(|t| t.render(&json!({}), &NoHost).is_err()));
    }
}
