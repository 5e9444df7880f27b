//! cel-go's extended strings (`ext.Strings`, version 2 as Kubernetes 1.32 enables it), the
//! sets extension (`ext.Sets`), and Kubernetes' lists and regex libraries
//! (`staging/src/k8s.io/apiserver/pkg/cel/library/lists.go`, `regex.go`).

use std::sync::Arc;

use super::std_lib::{compare, compile_regex, format_double, to_string};
use super::{Library, err, no_such_overload, traversal_cost};
use crate::error::EvalError;
use crate::types::Type;
use crate::value::{ListValue, Value};

type R = Result<Value, EvalError>;

fn s(v: &Value) -> Result<&str, EvalError> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(no_such_overload()),
    }
}

fn i(v: &Value) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        _ => Err(no_such_overload()),
    }
}

fn list(v: &Value) -> Result<&Arc<ListValue>, EvalError> {
    match v {
        Value::List(l) => Ok(l),
        _ => Err(no_such_overload()),
    }
}

fn char_at(a: &[Value]) -> R {
    let chars: Vec<char> = s(&a[0])?.chars().collect();
    let at = i(&a[1])?;
    if at < 0 || at as usize > chars.len() {
        return Err(err(format!("index out of range: {at}")));
    }
    Ok(Value::string(
        chars
            .get(at as usize)
            .map(|c| c.to_string())
            .unwrap_or_default(),
    ))
}

/// Index in code points of `needle` in `hay` at or after code point `from`.
fn index_of(a: &[Value]) -> R {
    let hay: Vec<char> = s(&a[0])?.chars().collect();
    let needle: Vec<char> = s(&a[1])?.chars().collect();
    let from = match a.get(2) {
        Some(v) => i(v)?,
        None => 0,
    };
    if from < 0 || from as usize > hay.len() {
        return Err(err(format!("index out of range: {from}")));
    }
    if needle.is_empty() {
        return Ok(Value::Int(from));
    }
    let from = from as usize;
    for start in from..hay.len() {
        if hay[start..].starts_with(&needle) {
            return Ok(Value::Int(start as i64));
        }
    }
    Ok(Value::Int(-1))
}

fn last_index_of(a: &[Value]) -> R {
    let hay: Vec<char> = s(&a[0])?.chars().collect();
    let needle: Vec<char> = s(&a[1])?.chars().collect();
    let from = match a.get(2) {
        Some(v) => i(v)?,
        None => hay.len() as i64,
    };
    if from < 0 || from as usize > hay.len() {
        return Err(err(format!("index out of range: {from}")));
    }
    if needle.is_empty() {
        return Ok(Value::Int(from));
    }
    let last_start = (from as usize).min(hay.len().saturating_sub(needle.len()));
    if needle.len() > hay.len() {
        return Ok(Value::Int(-1));
    }
    for start in (0..=last_start).rev() {
        if hay[start..].starts_with(&needle) {
            return Ok(Value::Int(start as i64));
        }
    }
    Ok(Value::Int(-1))
}

fn replace(a: &[Value]) -> R {
    let (hay, from, to) = (s(&a[0])?, s(&a[1])?, s(&a[2])?);
    let n = match a.get(3) {
        Some(v) => i(v)?,
        None => -1,
    };
    Ok(Value::string(if n < 0 {
        hay.replace(from, to)
    } else {
        hay.replacen(from, to, n as usize)
    }))
}

fn split(a: &[Value]) -> R {
    let (hay, sep) = (s(&a[0])?, s(&a[1])?);
    let n = match a.get(2) {
        Some(v) => i(v)?,
        None => -1,
    };
    let parts: Vec<Value> = match n {
        0 => Vec::new(),
        n if n < 0 => {
            if sep.is_empty() {
                hay.chars().map(|c| Value::string(c.to_string())).collect()
            } else {
                hay.split(sep).map(Value::string).collect()
            }
        }
        n => {
            if sep.is_empty() {
                let chars: Vec<char> = hay.chars().collect();
                let n = n as usize;
                let mut out: Vec<Value> = chars
                    .iter()
                    .take(n.saturating_sub(1))
                    .map(|c| Value::string(c.to_string()))
                    .collect();
                if chars.len() >= n {
                    out.push(Value::string(chars[n - 1..].iter().collect::<String>()));
                }
                out
            } else {
                hay.splitn(n as usize, sep).map(Value::string).collect()
            }
        }
    };
    Ok(Value::list(parts))
}

fn substring(a: &[Value]) -> R {
    let chars: Vec<char> = s(&a[0])?.chars().collect();
    let start = i(&a[1])?;
    let end = match a.get(2) {
        Some(v) => i(v)?,
        None => chars.len() as i64,
    };
    if start < 0 || start as usize > chars.len() {
        return Err(err(format!("index out of range: {start}")));
    }
    if end < 0 || end as usize > chars.len() {
        return Err(err(format!("index out of range: {end}")));
    }
    if start > end {
        return Err(err(format!(
            "invalid substring range. start: {start}, end: {end}"
        )));
    }
    Ok(Value::string(
        chars[start as usize..end as usize]
            .iter()
            .collect::<String>(),
    ))
}

fn join(a: &[Value]) -> R {
    let items = list(&a[0])?;
    let sep = match a.get(1) {
        Some(v) => s(v)?,
        None => "",
    };
    let parts: Result<Vec<&str>, _> = items.iter().map(s).collect();
    Ok(Value::string(parts?.join(sep)))
}

/// `strings.quote`: Go's `strconv.Quote`-like escaping, as cel-go writes it.
fn quote(a: &[Value]) -> R {
    let text = s(&a[0])?;
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(Value::string(out))
}

/// `"...".format([args])`: the `%s %d %f %e %b %o %x %X %%` clauses of cel-go's formatter.
fn format(a: &[Value]) -> R {
    let template = s(&a[0])?;
    let args = list(&a[1])?;
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut digits = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(*d);
                chars.next();
            }
            precision = digits.parse().ok();
        }
        let Some(verb) = chars.next() else {
            return Err(err("unexpected end of format string"));
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next) else {
            return Err(err(format!("index {next} out of range")));
        };
        next += 1;
        match verb {
            's' => out.push_str(&format_s(arg)?),
            'd' => match arg {
                Value::Int(v) => out.push_str(&v.to_string()),
                Value::Uint(v) => out.push_str(&v.to_string()),
                Value::Double(d) if d.is_nan() => out.push_str("NaN"),
                Value::Double(d) if d.is_infinite() => {
                    out.push_str(if *d > 0.0 { "Infinity" } else { "-Infinity" })
                }
                _ => {
                    return Err(err(format!(
                        "error during formatting: decimal clause can only be used on integers, was given {}",
                        arg.type_name()
                    )));
                }
            },
            'f' | 'e' => {
                let d = match arg {
                    Value::Double(d) => *d,
                    Value::Int(v) => *v as f64,
                    Value::Uint(v) => *v as f64,
                    _ => {
                        return Err(err(format!(
                            "error during formatting: fixed-point clause can only be used on doubles, was given {}",
                            arg.type_name()
                        )));
                    }
                };
                let p = precision.unwrap_or(6);
                if verb == 'f' {
                    out.push_str(&format!("{d:.p$}"));
                } else {
                    // cel-go prints `%e` through golang.org/x/text's printer in its default
                    // locale: `3.140000 × 10⁰⁰` (narrow no-break spaces, a superscript
                    // exponent of at least two digits, `⁻` when negative).
                    const SUPERSCRIPT: [char; 10] =
                        ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
                    let t = format!("{d:.p$e}");
                    let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
                    let (negative, digits) = match e.strip_prefix('-') {
                        Some(d) => (true, d),
                        None => (false, e),
                    };
                    out.push_str(m);
                    out.push_str("\u{202f}×\u{202f}10");
                    if negative {
                        out.push('⁻');
                    }
                    for c in format!("{digits:0>2}").chars() {
                        let i = c.to_digit(10).map_or(0, |i| i as usize);
                        out.push(SUPERSCRIPT[i]);
                    }
                }
            }
            'b' | 'o' | 'x' | 'X' => {
                let text = match (verb, arg) {
                    ('b', Value::Int(v)) => format!("{v:b}"),
                    ('b', Value::Uint(v)) => format!("{v:b}"),
                    ('b', Value::Bool(v)) => (if *v { "1" } else { "0" }).to_string(),
                    ('o', Value::Int(v)) => format!("{v:o}"),
                    ('o', Value::Uint(v)) => format!("{v:o}"),
                    ('x', Value::Int(v)) => format!("{v:x}"),
                    ('x', Value::Uint(v)) => format!("{v:x}"),
                    ('x', Value::String(v)) => v.bytes().map(|b| format!("{b:02x}")).collect(),
                    ('x', Value::Bytes(v)) => v.iter().map(|b| format!("{b:02x}")).collect(),
                    ('X', Value::Int(v)) => format!("{v:X}"),
                    ('X', Value::Uint(v)) => format!("{v:X}"),
                    ('X', Value::String(v)) => v.bytes().map(|b| format!("{b:02X}")).collect(),
                    ('X', Value::Bytes(v)) => v.iter().map(|b| format!("{b:02X}")).collect(),
                    _ => {
                        return Err(err(format!(
                            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given {}",
                            arg.type_name()
                        )));
                    }
                };
                out.push_str(&text);
            }
            other => {
                return Err(err(format!(
                    "could not parse formatting clause: unrecognized formatting clause \"{other}\""
                )));
            }
        }
    }
    Ok(Value::string(out))
}

fn format_s(v: &Value) -> Result<String, EvalError> {
    Ok(match v {
        Value::String(s) => s.to_string(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::List(items) => {
            let parts: Result<Vec<String>, _> = items.iter().map(format_s).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Map(m) => {
            let parts: Result<Vec<String>, _> = m
                .iter()
                .map(|(k, v)| Ok(format!("{}: {}", format_s(&k.to_value())?, format_s(v)?)))
                .collect();
            format!("{{{}}}", parts?.join(", "))
        }
        Value::Type(t) => t.to_string(),
        other @ (Value::Duration(_) | Value::Timestamp(_)) => {
            match to_string(std::slice::from_ref(other))? {
                Value::String(s) => s.to_string(),
                _ => String::new(),
            }
        }
        other => other.to_string(),
    })
}

fn trim(a: &[Value]) -> R {
    Ok(Value::string(s(&a[0])?.trim()))
}

// --- Kubernetes lists (lists.go) ---

fn ordered_items(a: &[Value]) -> Result<&Arc<ListValue>, EvalError> {
    list(&a[0])
}

fn is_sorted(a: &[Value]) -> R {
    let items = ordered_items(a)?;
    for w in items.windows(2) {
        match compare(&w[0], &w[1]) {
            Some(o) if o.is_gt() => return Ok(Value::Bool(false)),
            Some(_) => {}
            None => return Err(no_such_overload()),
        }
    }
    Ok(Value::Bool(true))
}

fn sum(a: &[Value]) -> R {
    let items = list(&a[0])?;
    let mut acc = match items.first() {
        Some(Value::Uint(_)) => Value::Uint(0),
        Some(Value::Double(_)) => Value::Double(0.0),
        Some(Value::Duration(_)) => Value::Duration(0),
        _ => Value::Int(0),
    };
    for item in items.iter() {
        acc = super::LIBRARY
            .overloads("_+_")
            .first()
            .map(|o| (o.imp)(&[acc.clone(), item.clone()]))
            .unwrap_or_else(|| Err(no_such_overload()))?;
    }
    Ok(acc)
}

fn extreme(a: &[Value], want_greater: bool) -> R {
    let items = list(&a[0])?;
    let Some(first) = items.first() else {
        return Err(err(if want_greater {
            "max called on empty list"
        } else {
            "min called on empty list"
        }));
    };
    let mut best = first.clone();
    for item in items.iter().skip(1) {
        let o = compare(item, &best).ok_or_else(no_such_overload)?;
        if (want_greater && o.is_gt()) || (!want_greater && o.is_lt()) {
            best = item.clone();
        }
    }
    Ok(best)
}

fn list_index_of(a: &[Value]) -> R {
    let items = list(&a[0])?;
    Ok(Value::Int(
        items
            .iter()
            .position(|x| x.equals(&a[1]))
            .map_or(-1, |p| p as i64),
    ))
}

fn list_last_index_of(a: &[Value]) -> R {
    let items = list(&a[0])?;
    Ok(Value::Int(
        items
            .iter()
            .rposition(|x| x.equals(&a[1]))
            .map_or(-1, |p| p as i64),
    ))
}

// --- regex.go ---

fn find(a: &[Value]) -> R {
    let re = compile_regex(s(&a[1])?)?;
    Ok(Value::string(
        re.find(s(&a[0])?).map(|m| m.as_str()).unwrap_or_default(),
    ))
}

fn find_all(a: &[Value]) -> R {
    let re = compile_regex(s(&a[1])?)?;
    let limit = match a.get(2) {
        Some(v) => i(v)?,
        None => -1,
    };
    if limit == 0 {
        return Ok(Value::list(Vec::new()));
    }
    let hay = s(&a[0])?;
    let found = re.find_iter(hay).map(|m| Value::string(m.as_str()));
    Ok(Value::list(if limit < 0 {
        found.collect()
    } else {
        found.take(limit as usize).collect()
    }))
}

// --- ext.Sets ---

fn sets_contains(a: &[Value]) -> R {
    let (x, y) = (list(&a[0])?, list(&a[1])?);
    Ok(Value::Bool(y.iter().all(|e| x.iter().any(|f| f.equals(e)))))
}

fn sets_equivalent(a: &[Value]) -> R {
    let (x, y) = (list(&a[0])?, list(&a[1])?);
    Ok(Value::Bool(
        y.iter().all(|e| x.iter().any(|f| f.equals(e)))
            && x.iter().all(|e| y.iter().any(|f| f.equals(e))),
    ))
}

fn sets_intersects(a: &[Value]) -> R {
    let (x, y) = (list(&a[0])?, list(&a[1])?);
    Ok(Value::Bool(y.iter().any(|e| x.iter().any(|f| f.equals(e)))))
}

/// Pairwise set functions visit both lists.
fn product_cost(a: &[Value]) -> u64 {
    1 + super::size_of(&a[0]) * super::size_of(&a[1])
}

pub(super) fn register(lib: &mut Library) {
    use Type as T;
    let st = || T::String;
    let m = |lib: &mut Library, name: &'static str, params: Vec<T>, result: T, f: super::Impl| {
        lib.add(name, true, params, result, f, traversal_cost)
    };
    m(lib, "charAt", vec![st(), T::Int], st(), char_at);
    m(lib, "indexOf", vec![st(), st()], T::Int, index_of);
    m(lib, "indexOf", vec![st(), st(), T::Int], T::Int, index_of);
    m(lib, "lastIndexOf", vec![st(), st()], T::Int, last_index_of);
    m(
        lib,
        "lastIndexOf",
        vec![st(), st(), T::Int],
        T::Int,
        last_index_of,
    );
    m(lib, "lowerAscii", vec![st()], st(), |a| {
        Ok(Value::string(s(&a[0])?.to_ascii_lowercase()))
    });
    m(lib, "upperAscii", vec![st()], st(), |a| {
        Ok(Value::string(s(&a[0])?.to_ascii_uppercase()))
    });
    m(lib, "replace", vec![st(), st(), st()], st(), replace);
    m(
        lib,
        "replace",
        vec![st(), st(), st(), T::Int],
        st(),
        replace,
    );
    m(lib, "split", vec![st(), st()], T::list(st()), split);
    m(lib, "split", vec![st(), st(), T::Int], T::list(st()), split);
    m(lib, "substring", vec![st(), T::Int], st(), substring);
    m(
        lib,
        "substring",
        vec![st(), T::Int, T::Int],
        st(),
        substring,
    );
    m(lib, "trim", vec![st()], st(), trim);
    lib.add("join", true, vec![T::list(st())], st(), join, join_cost);
    lib.add(
        "join",
        true,
        vec![T::list(st()), st()],
        st(),
        join,
        join_cost,
    );
    m(lib, "format", vec![st(), T::list(T::Dyn)], st(), format);
    lib.add(
        "strings.quote",
        false,
        vec![st()],
        st(),
        quote,
        traversal_cost,
    );

    let a = || T::Param("A");
    // Upstream's lists library declares isSorted, min and max on lists of comparable types
    // only, sum on lists of summable ones (`staging/src/k8s.io/apiserver/pkg/cel/library/
    // lists.go`); an empty list sums to its type's zero.
    let comparable = [
        T::Int,
        T::Uint,
        T::Double,
        T::Bool,
        T::Duration,
        T::Timestamp,
        T::String,
        T::Bytes,
    ];
    for t in comparable {
        let list = T::list(t.clone());
        lib.add(
            "isSorted",
            true,
            vec![list.clone()],
            T::Bool,
            is_sorted,
            list_traversal_cost,
        );
        lib.add(
            "min",
            true,
            vec![list.clone()],
            t.clone(),
            |a| extreme(a, false),
            list_traversal_cost,
        );
        lib.add(
            "max",
            true,
            vec![list],
            t,
            |a| extreme(a, true),
            list_traversal_cost,
        );
    }
    let sums: [(T, super::Impl); 4] = [
        (T::Int, sum),
        (T::Uint, |a| empty_or(a, Value::Uint(0))),
        (T::Double, |a| empty_or(a, Value::Double(0.0))),
        (T::Duration, |a| empty_or(a, Value::Duration(0))),
    ];
    for (t, f) in sums {
        lib.add(
            "sum",
            true,
            vec![T::list(t.clone())],
            t,
            f,
            list_traversal_cost,
        );
    }
    lib.add(
        "indexOf",
        true,
        vec![T::list(a()), a()],
        T::Int,
        list_index_of,
        list_traversal_cost,
    );
    lib.add(
        "lastIndexOf",
        true,
        vec![T::list(a()), a()],
        T::Int,
        list_last_index_of,
        list_traversal_cost,
    );

    lib.add("find", true, vec![st(), st()], st(), find, traversal_cost);
    lib.add(
        "findAll",
        true,
        vec![st(), st()],
        T::list(st()),
        find_all,
        traversal_cost,
    );
    lib.add(
        "findAll",
        true,
        vec![st(), st(), T::Int],
        T::list(st()),
        find_all,
        traversal_cost,
    );

    for (name, f) in [
        ("sets.contains", sets_contains as super::Impl),
        ("sets.equivalent", sets_equivalent),
        ("sets.intersects", sets_intersects),
    ] {
        lib.add(
            name,
            false,
            vec![T::list(a()), T::list(a())],
            T::Bool,
            f,
            product_cost,
        );
    }
}

/// Upstream's `traversalCost` (`staging/src/k8s.io/apiserver/pkg/cel/library/cost.go`): 0.1
/// per byte of a string (rounded down), the sum over a list's items or a map's entries, 1
/// for anything else.
fn traversal(v: &Value) -> u64 {
    match v {
        Value::String(s) => (s.len() as f64 * 0.1) as u64,
        Value::Bytes(b) => (b.len() as f64 * 0.1) as u64,
        Value::List(l) => l.iter().map(traversal).sum(),
        Value::Map(m) => m
            .iter()
            .map(|(k, v)| traversal(&k.to_value()) + traversal(v))
            .sum(),
        _ => 1,
    }
}

/// The runtime cost of `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`: one
/// traversal of the list (upstream's `CostEstimator.CallCost`).
fn list_traversal_cost(args: &[Value]) -> u64 {
    args.first().map_or(0, traversal)
}

/// The runtime cost of `join`: 0.2 per byte of the result, rounded up (upstream's
/// `CostEstimator.CallCost`).
fn join_cost(args: &[Value]) -> u64 {
    let Some(Value::List(items)) = args.first() else {
        return 1;
    };
    let separator = match args.get(1) {
        Some(Value::String(s)) => s.len(),
        _ => 0,
    };
    let strings: usize = items
        .iter()
        .map(|i| match i {
            Value::String(s) => s.len(),
            _ => 0,
        })
        .sum();
    let size = strings + separator * items.len().saturating_sub(1);
    (size as f64 * 2.0 * 0.1).ceil() as u64
}

/// `sum` of a list whose empty sum is `zero`.
fn empty_or(a: &[Value], zero: Value) -> Result<Value, EvalError> {
    match &a[0] {
        Value::List(l) if l.is_empty() => Ok(zero),
        _ => sum(a),
    }
}
