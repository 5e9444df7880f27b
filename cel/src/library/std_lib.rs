//! CEL's standard definitions (cel-spec `doc/langdef.md`, cel-go `checker/decls` and
//! `interpreter/functions`): arithmetic with overflow errors, comparisons (across numeric
//! types, as Kubernetes enables `CrossTypeNumericComparisons`), `in`, `size`, conversions,
//! string predicates, `matches`, durations and timestamps, and optional values.

use std::cmp::Ordering;
use std::sync::Arc;

use kubemock_apimachinery::duration::{format_duration, parse_duration};
use kubemock_apimachinery::gotime;
use kubemock_apimachinery::time::{NANOS_PER_SECOND, civil_from_days};

use super::{Library, err, linear_cost, no_such_overload, traversal_cost, unit_cost};
use crate::error::EvalError;
use crate::types::Type;
use crate::value::{Key, Value, numeric_cmp};

type R = Result<Value, EvalError>;

fn overflow() -> EvalError {
    err("integer overflow")
}

/// Seconds of the largest timestamp CEL allows (9999-12-31T23:59:59Z).
const MAX_TIMESTAMP_SECONDS: i128 = 253_402_300_799;
/// Seconds of the smallest timestamp CEL allows (0001-01-01T00:00:00Z).
const MIN_TIMESTAMP_SECONDS: i128 = -62_135_596_800;

fn check_timestamp(nanos: i128) -> R {
    let seconds = nanos.div_euclid(NANOS_PER_SECOND);
    if !(MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(&seconds) {
        return Err(err("timestamp out of range"));
    }
    Ok(Value::Timestamp(nanos))
}

fn add(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::Int(x), Value::Int(y)) => x.checked_add(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => x.checked_add(*y).map(Value::Uint).ok_or_else(overflow),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x + y)),
        (Value::String(x), Value::String(y)) => Ok(Value::string(format!("{x}{y}"))),
        (Value::Bytes(x), Value::Bytes(y)) => Ok(Value::Bytes([&x[..], &y[..]].concat().into())),
        (Value::List(x), Value::List(y)) => Ok(Value::concat_lists(x, y)),
        (Value::Duration(x), Value::Duration(y)) => {
            x.checked_add(*y).map(Value::Duration).ok_or_else(overflow)
        }
        (Value::Timestamp(t), Value::Duration(d)) | (Value::Duration(d), Value::Timestamp(t)) => {
            check_timestamp(t + i128::from(*d))
        }
        _ => Err(no_such_overload()),
    }
}

fn sub(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::Int(x), Value::Int(y)) => x.checked_sub(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => x.checked_sub(*y).map(Value::Uint).ok_or_else(overflow),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x - y)),
        (Value::Duration(x), Value::Duration(y)) => {
            x.checked_sub(*y).map(Value::Duration).ok_or_else(overflow)
        }
        (Value::Timestamp(t), Value::Duration(d)) => check_timestamp(t - i128::from(*d)),
        (Value::Timestamp(x), Value::Timestamp(y)) => i64::try_from(x - y)
            .map(Value::Duration)
            .map_err(|_| overflow()),
        _ => Err(no_such_overload()),
    }
}

fn mul(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::Int(x), Value::Int(y)) => x.checked_mul(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => x.checked_mul(*y).map(Value::Uint).ok_or_else(overflow),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x * y)),
        _ => Err(no_such_overload()),
    }
}

fn div(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
            Err(err("division by zero"))
        }
        (Value::Int(x), Value::Int(y)) => x.checked_div(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => Ok(Value::Uint(x / y)),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x / y)),
        _ => Err(no_such_overload()),
    }
}

fn rem(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
            Err(err("modulus by zero"))
        }
        (Value::Int(x), Value::Int(y)) => x.checked_rem(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => Ok(Value::Uint(x % y)),
        _ => Err(no_such_overload()),
    }
}

fn neg(a: &[Value]) -> R {
    match &a[0] {
        Value::Int(x) => x.checked_neg().map(Value::Int).ok_or_else(overflow),
        Value::Double(x) => Ok(Value::Double(-x)),
        _ => Err(no_such_overload()),
    }
}

fn not(a: &[Value]) -> R {
    match &a[0] {
        Value::Bool(b) => Ok(Value::Bool(!b)),
        _ => Err(no_such_overload()),
    }
}

/// The order of two comparable values, `None` when they are not comparable.
pub(crate) fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        _ => numeric_cmp(a, b),
    }
}

fn ordered(a: &[Value], want: fn(Ordering) -> bool) -> R {
    let numbers = |v: &Value| matches!(v, Value::Int(_) | Value::Uint(_) | Value::Double(_));
    match compare(&a[0], &a[1]) {
        Some(o) => Ok(Value::Bool(want(o))),
        // NaN compares false with everything.
        None if numbers(&a[0]) && numbers(&a[1]) => Ok(Value::Bool(false)),
        None => Err(no_such_overload()),
    }
}

fn lt(a: &[Value]) -> R {
    ordered(a, Ordering::is_lt)
}
fn le(a: &[Value]) -> R {
    ordered(a, Ordering::is_le)
}
fn gt(a: &[Value]) -> R {
    ordered(a, Ordering::is_gt)
}
fn ge(a: &[Value]) -> R {
    ordered(a, Ordering::is_ge)
}

/// `==`. The authorizer library's values compare only to the bare receiver value upstream
/// embeds in them, so comparing two of them is cel-go's `no such overload` at run time
/// (`staging/src/k8s.io/apiserver/pkg/cel/library/authz.go`, `receiverOnlyObjectVal.Equal`).
fn eq(a: &[Value]) -> R {
    if let Value::Authz(_) = &a[0] {
        return Err(no_such_overload());
    }
    Ok(Value::Bool(a[0].equals(&a[1])))
}
/// `!=`: cel-go's `evalNe` is true whenever equality is not `true`, an error included, so an
/// authorizer value is never equal to anything.
fn ne(a: &[Value]) -> R {
    Ok(Value::Bool(!a[0].equals(&a[1])))
}

fn in_(a: &[Value]) -> R {
    match &a[1] {
        Value::List(items) => Ok(Value::Bool(items.iter().any(|i| i.equals(&a[0])))),
        Value::Map(map) => Ok(Value::Bool(
            Key::from_value(&a[0]).is_some_and(|k| map.contains_key(&k)),
        )),
        _ => Err(no_such_overload()),
    }
}

fn size(a: &[Value]) -> R {
    match &a[0] {
        Value::String(s) => Ok(Value::Int(s.chars().count() as i64)),
        Value::Bytes(b) => Ok(Value::Int(b.len() as i64)),
        Value::List(l) => Ok(Value::Int(l.len() as i64)),
        Value::Map(m) => Ok(Value::Int(m.len() as i64)),
        _ => Err(no_such_overload()),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`-like shortest text, as cel-go's `string(double)`.
pub(crate) fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let exp = if d == 0.0 {
        0
    } else {
        d.abs().log10().floor() as i32
    };
    if !(-4..21).contains(&exp) {
        let s = format!("{d:e}");
        // Rust writes 1e21 / 1.5e-7; Go writes 1e+21 / 1.5e-07.
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match e.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', e),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    format!("{d}")
}

pub(crate) fn to_string(a: &[Value]) -> R {
    Ok(match &a[0] {
        Value::String(s) => Value::String(s.clone()),
        Value::Int(i) => Value::string(i.to_string()),
        Value::Uint(u) => Value::string(u.to_string()),
        Value::Double(d) => Value::string(format_double(*d)),
        Value::Bool(b) => Value::string(b.to_string()),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => Value::string(s),
            Err(_) => return Err(err("invalid UTF-8 in bytes, cannot convert to string")),
        },
        Value::Duration(d) => Value::string(duration_string(*d)),
        Value::Timestamp(t) => Value::string(timestamp_string(*t)),
        Value::Ip(ip) => Value::string(ip.to_string()),
        Value::Cidr(c) => Value::string(format!("{}/{}", c.addr, c.prefix)),
        _ => return Err(no_such_overload()),
    })
}

/// A duration as protobuf's JSON writes it (`3600s`, `1.5s`), as cel-go's `string()`.
fn duration_string(nanos: i64) -> String {
    let seconds = nanos / 1_000_000_000;
    let frac = (nanos % 1_000_000_000).unsigned_abs();
    if frac == 0 {
        return format!("{seconds}s");
    }
    let sign = if nanos < 0 && seconds == 0 { "-" } else { "" };
    let digits = format!("{frac:09}");
    format!("{sign}{seconds}.{}s", digits.trim_end_matches('0'))
}

/// A timestamp in RFC 3339 with nanoseconds trimmed, as Go's `time.RFC3339Nano`.
fn timestamp_string(nanos: i128) -> String {
    let seconds = nanos.div_euclid(NANOS_PER_SECOND);
    let frac = nanos.rem_euclid(NANOS_PER_SECOND);
    let base = gotime::format(seconds * NANOS_PER_SECOND, false);
    if frac == 0 {
        return base;
    }
    let digits = format!("{frac:09}");
    let trimmed = digits.trim_end_matches('0');
    match base.strip_suffix('Z') {
        Some(stem) => format!("{stem}.{trimmed}Z"),
        None => base,
    }
}

fn to_int(a: &[Value]) -> R {
    match &a[0] {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::Uint(u) => i64::try_from(*u)
            .map(Value::Int)
            .map_err(|_| err("integer overflow")),
        Value::Double(d) => {
            // cel-go: the truncated value must lie strictly inside the int64 range.
            if !d.is_finite() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                Err(err("integer overflow"))
            } else {
                Ok(Value::Int(d.trunc() as i64))
            }
        }
        Value::String(s) => s
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| err(format!("cannot convert string '{s}' to int"))),
        Value::Duration(d) => Ok(Value::Int(*d)),
        Value::Timestamp(t) => Ok(Value::Int(t.div_euclid(NANOS_PER_SECOND) as i64)),
        Value::Bool(_) => Err(no_such_overload()),
        _ => Err(no_such_overload()),
    }
}

fn to_uint(a: &[Value]) -> R {
    match &a[0] {
        Value::Uint(u) => Ok(Value::Uint(*u)),
        Value::Int(i) => u64::try_from(*i)
            .map(Value::Uint)
            .map_err(|_| err("integer overflow")),
        Value::Double(d) => {
            if !d.is_finite() || *d < 0.0 || *d >= 1.844_674_407_370_955_2e19 {
                Err(err("integer overflow"))
            } else {
                Ok(Value::Uint(d.trunc() as u64))
            }
        }
        Value::String(s) => s
            .parse::<u64>()
            .map(Value::Uint)
            .map_err(|_| err(format!("cannot convert string '{s}' to uint"))),
        _ => Err(no_such_overload()),
    }
}

fn to_double(a: &[Value]) -> R {
    match &a[0] {
        Value::Double(d) => Ok(Value::Double(*d)),
        Value::Int(i) => Ok(Value::Double(*i as f64)),
        Value::Uint(u) => Ok(Value::Double(*u as f64)),
        Value::String(s) => s
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| err(format!("cannot convert string '{s}' to double"))),
        _ => Err(no_such_overload()),
    }
}

fn to_bool(a: &[Value]) -> R {
    match &a[0] {
        Value::Bool(b) => Ok(Value::Bool(*b)),
        Value::String(s) => match s.as_ref() {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
            _ => Err(err("type conversion error from 'string' to 'bool'")),
        },
        _ => Err(no_such_overload()),
    }
}

fn to_bytes(a: &[Value]) -> R {
    match &a[0] {
        Value::Bytes(b) => Ok(Value::Bytes(b.clone())),
        Value::String(s) => Ok(Value::Bytes(s.as_bytes().into())),
        _ => Err(no_such_overload()),
    }
}

fn to_duration(a: &[Value]) -> R {
    match &a[0] {
        Value::Duration(d) => Ok(Value::Duration(*d)),
        Value::String(s) => parse_duration(s)
            .map(Value::Duration)
            .map_err(|e| err(format!("{e}"))),
        Value::Int(i) => Ok(Value::Duration(*i)),
        _ => Err(no_such_overload()),
    }
}

fn to_timestamp(a: &[Value]) -> R {
    match &a[0] {
        Value::Timestamp(t) => Ok(Value::Timestamp(*t)),
        Value::String(s) => match kubemock_apimachinery::time::parse_rfc3339(s) {
            Some(nanos) => check_timestamp(nanos),
            None => Err(err(format!(
                "parsing time \"{s}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"{s}\" as \"2006\""
            ))),
        },
        Value::Int(i) => check_timestamp(i128::from(*i) * NANOS_PER_SECOND),
        _ => Err(no_such_overload()),
    }
}

fn dyn_(a: &[Value]) -> R {
    Ok(a[0].clone())
}

fn type_of(a: &[Value]) -> R {
    Ok(Value::Type(a[0].type_name().into()))
}

fn contains(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::String(s), Value::String(t)) => Ok(Value::Bool(s.contains(t.as_ref()))),
        _ => Err(no_such_overload()),
    }
}
fn starts_with(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::String(s), Value::String(t)) => Ok(Value::Bool(s.starts_with(t.as_ref()))),
        _ => Err(no_such_overload()),
    }
}
fn ends_with(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::String(s), Value::String(t)) => Ok(Value::Bool(s.ends_with(t.as_ref()))),
        _ => Err(no_such_overload()),
    }
}

/// A RE2 pattern compiled by the regex crate (the same syntax, linear time), as cel-go's
/// `matches` and the regex library use it; the error reads as Go's `regexp` error.
pub(crate) fn compile_regex(pattern: &str) -> Result<regex::Regex, EvalError> {
    if let Some(ops) = nested_repetition(pattern) {
        return Err(err(format!(
            "error parsing regexp: invalid nested repetition operator: `{ops}`"
        )));
    }
    regex::Regex::new(pattern).map_err(|e| {
        err(format!(
            "error parsing regexp: {}",
            e.to_string().lines().last().unwrap_or_default().trim()
        ))
    })
}

/// A repetition operator repeated (`a**`, `a++`, `a*+`, `a{2}*`, `a*??`), which Go's RE2
/// parser refuses (`regexp/syntax/parse.go`, `repeat`: Perl does not stack repetitions) and
/// Rust's regex takes: the operators, as Go quotes them.
fn nested_repetition(pattern: &str) -> Option<String> {
    let b: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    // Where the repetition operator that ends at `i` starts.
    let mut last_repeat: Option<usize> = None;
    while i < b.len() {
        let op_len = match b[i] {
            '*' | '+' | '?' => Some(1),
            '{' => brace_repeat_len(&b[i..]),
            _ => None,
        };
        if let Some(n) = op_len {
            let mut end = i + n;
            if b.get(end) == Some(&'?') {
                end += 1;
            }
            if let Some(start) = last_repeat {
                return Some(b[start..end].iter().collect());
            }
            // `(?` opens flags or a named group: not a repetition.
            last_repeat = (i == 0 || b[i - 1] != '(').then_some(i);
            i = end;
            continue;
        }
        last_repeat = None;
        match b[i] {
            '\\' => i += 2,
            '[' => {
                i += 1;
                if b.get(i) == Some(&'^') {
                    i += 1;
                }
                if b.get(i) == Some(&']') {
                    i += 1;
                }
                while i < b.len() && b[i] != ']' {
                    if b[i] == '\\' {
                        i += 1;
                    } else if b[i] == '[' && b.get(i + 1) == Some(&':') {
                        // `[:alpha:]`
                        while i + 1 < b.len() && !(b[i] == ':' && b[i + 1] == ']') {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// The length of a counted repetition `{n}`, `{n,}`, `{n,m}` at the start of `b`; `None`
/// where the brace is a literal.
fn brace_repeat_len(b: &[char]) -> Option<usize> {
    let mut i = 1;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if !digits(&mut i) {
        return None;
    }
    if b.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    (b.get(i) == Some(&'}')).then_some(i + 1)
}

fn matches(a: &[Value]) -> R {
    match (&a[0], &a[1]) {
        (Value::String(s), Value::String(p)) => {
            Ok(Value::Bool(compile_regex(p)?.is_match(s.as_ref())))
        }
        _ => Err(no_such_overload()),
    }
}

/// `matches`: cel-go charges the string times the pattern.
fn matches_cost(a: &[Value]) -> u64 {
    let s = super::size_of(&a[0]) as f64 * 0.1;
    let p = super::size_of(&a[1]) as f64 * 0.25;
    1 + (s.ceil() * p.ceil().max(1.0)) as u64
}

/// Broken-down UTC time (or at a fixed offset / named zone offset) of a timestamp.
fn civil(a: &[Value]) -> Result<(i64, u32, u32, i64, i64), EvalError> {
    let Value::Timestamp(t) = &a[0] else {
        return Err(no_such_overload());
    };
    let mut offset: i128 = 0;
    if let Some(Value::String(zone)) = a.get(1) {
        offset = zone_offset(zone)?;
    }
    let seconds = t.div_euclid(NANOS_PER_SECOND) + offset;
    let days = seconds.div_euclid(86_400) as i64;
    let in_day = seconds.rem_euclid(86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    Ok((y, m, d, days, in_day))
}

/// A zone argument: `UTC`, or an offset `[+-]HH:MM` (cel-go's `timeZone` reads whatever is
/// around the colon as hours and minutes, so `01:00` is one hour east). Named IANA zones
/// other than UTC are not known here (docs/webhooks-and-cel.md#cel).
fn zone_offset(zone: &str) -> Result<i128, EvalError> {
    if zone == "UTC" || zone.is_empty() {
        return Ok(0);
    }
    if let Some((hours, minutes)) = zone.split_once(':') {
        let invalid = || err(format!("unknown time zone {zone}"));
        let h: i128 = hours
            .strip_prefix('+')
            .unwrap_or(hours)
            .parse()
            .map_err(|_| invalid())?;
        let m: i128 = minutes.parse().map_err(|_| invalid())?;
        let off = if hours.starts_with('-') {
            h * 60 - m
        } else {
            h * 60 + m
        };
        return Ok(off * 60);
    }
    Err(err(format!("unknown time zone {zone}")))
}

fn ts_part(a: &[Value], part: fn((i64, u32, u32, i64, i64)) -> i64) -> R {
    Ok(Value::Int(part(civil(a)?)))
}

fn register_timestamps(lib: &mut Library) {
    type P = fn((i64, u32, u32, i64, i64)) -> i64;
    let parts: [(&'static str, super::Impl); 9] = [
        ("getFullYear", |a| ts_part(a, (|c| c.0) as P)),
        ("getMonth", |a| ts_part(a, (|c| i64::from(c.1) - 1) as P)),
        ("getDate", |a| ts_part(a, (|c| i64::from(c.2)) as P)),
        ("getDayOfMonth", |a| {
            ts_part(a, (|c| i64::from(c.2) - 1) as P)
        }),
        ("getDayOfWeek", |a| {
            ts_part(a, (|c| (c.3 + 4).rem_euclid(7)) as P)
        }),
        ("getDayOfYear", |a| {
            ts_part(
                a,
                (|c| c.3 - kubemock_apimachinery::time::days_from_civil(c.0, 1, 1)) as P,
            )
        }),
        ("getHours", |a| match &a[0] {
            Value::Duration(d) => Ok(Value::Int(d / 3_600_000_000_000)),
            _ => ts_part(a, (|c| c.4 / 3600) as P),
        }),
        ("getMinutes", |a| match &a[0] {
            Value::Duration(d) => Ok(Value::Int(d / 60_000_000_000)),
            _ => ts_part(a, (|c| c.4 % 3600 / 60) as P),
        }),
        ("getSeconds", |a| match &a[0] {
            Value::Duration(d) => Ok(Value::Int(d / 1_000_000_000)),
            _ => ts_part(a, (|c| c.4 % 60) as P),
        }),
    ];
    for (name, f) in parts {
        lib.member(name, vec![Type::Timestamp], Type::Int, f);
        lib.member(name, vec![Type::Timestamp, Type::String], Type::Int, f);
        if matches!(name, "getHours" | "getMinutes" | "getSeconds") {
            lib.member(name, vec![Type::Duration], Type::Int, f);
        }
    }
    let millis = |a: &[Value]| match &a[0] {
        // cel-go: the whole duration in milliseconds.
        Value::Duration(d) => Ok(Value::Int(d / 1_000_000)),
        Value::Timestamp(t) => Ok(Value::Int(
            (t.rem_euclid(NANOS_PER_SECOND) / 1_000_000) as i64,
        )),
        _ => Err(no_such_overload()),
    };
    lib.member("getMilliseconds", vec![Type::Timestamp], Type::Int, millis);
    lib.member(
        "getMilliseconds",
        vec![Type::Timestamp, Type::String],
        Type::Int,
        millis,
    );
    lib.member("getMilliseconds", vec![Type::Duration], Type::Int, millis);
}

fn opt_of(a: &[Value]) -> R {
    Ok(Value::Optional(Some(Arc::new(a[0].clone()))))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Duration(d) => *d == 0,
        // Go's zero time.Time, 0001-01-01T00:00:00Z (the epoch is not zero).
        Value::Timestamp(t) => *t == -62_135_596_800 * NANOS_PER_SECOND,
        _ => false,
    }
}

fn register_optional(lib: &mut Library) {
    let a = || Type::Param("A");
    let opt = || Type::optional(Type::Param("A"));
    lib.global("optional.of", vec![a()], opt(), opt_of);
    lib.global("optional.ofNonZeroValue", vec![a()], opt(), |a| {
        Ok(if is_zero(&a[0]) {
            Value::Optional(None)
        } else {
            Value::Optional(Some(Arc::new(a[0].clone())))
        })
    });
    lib.global("optional.none", vec![], opt(), |_| {
        Ok(Value::Optional(None))
    });
    lib.member("hasValue", vec![opt()], Type::Bool, |a| match &a[0] {
        Value::Optional(o) => Ok(Value::Bool(o.is_some())),
        _ => Err(no_such_overload()),
    });
    lib.member("value", vec![opt()], a(), |a| match &a[0] {
        Value::Optional(Some(v)) => Ok(v.as_ref().clone()),
        Value::Optional(None) => Err(err("optional.none() dereference")),
        _ => Err(no_such_overload()),
    });
    lib.member("or", vec![opt(), opt()], opt(), |a| match &a[0] {
        Value::Optional(Some(_)) => Ok(a[0].clone()),
        Value::Optional(None) => Ok(a[1].clone()),
        _ => Err(no_such_overload()),
    });
    lib.member("orValue", vec![opt(), a()], a(), |a| match &a[0] {
        Value::Optional(Some(v)) => Ok(v.as_ref().clone()),
        Value::Optional(None) => Ok(a[1].clone()),
        _ => Err(no_such_overload()),
    });
}

pub(super) fn register(lib: &mut Library) {
    use Type as T;
    let numeric = [T::Int, T::Uint, T::Double];
    for t in &numeric {
        lib.global("_+_", vec![t.clone(), t.clone()], t.clone(), add);
        lib.global("_-_", vec![t.clone(), t.clone()], t.clone(), sub);
        lib.global("_*_", vec![t.clone(), t.clone()], t.clone(), mul);
        lib.global("_/_", vec![t.clone(), t.clone()], t.clone(), div);
    }
    lib.global("_%_", vec![T::Int, T::Int], T::Int, rem);
    lib.global("_%_", vec![T::Uint, T::Uint], T::Uint, rem);
    lib.add(
        "_+_",
        false,
        vec![T::String, T::String],
        T::String,
        add,
        traversal_cost,
    );
    lib.add(
        "_+_",
        false,
        vec![T::Bytes, T::Bytes],
        T::Bytes,
        add,
        traversal_cost,
    );
    let list_a = || T::list(T::Param("A"));
    lib.add(
        "_+_",
        false,
        vec![list_a(), list_a()],
        list_a(),
        add,
        linear_cost,
    );
    lib.global("_+_", vec![T::Duration, T::Duration], T::Duration, add);
    lib.global("_+_", vec![T::Timestamp, T::Duration], T::Timestamp, add);
    lib.global("_+_", vec![T::Duration, T::Timestamp], T::Timestamp, add);
    lib.global("_-_", vec![T::Duration, T::Duration], T::Duration, sub);
    lib.global("_-_", vec![T::Timestamp, T::Duration], T::Timestamp, sub);
    lib.global("_-_", vec![T::Timestamp, T::Timestamp], T::Duration, sub);
    lib.global("-_", vec![T::Int], T::Int, neg);
    lib.global("-_", vec![T::Double], T::Double, neg);
    lib.global("!_", vec![T::Bool], T::Bool, not);
    let cmp: [(&'static str, super::Impl); 4] =
        [("_<_", lt), ("_<=_", le), ("_>_", gt), ("_>=_", ge)];
    for (name, f) in cmp {
        for x in &numeric {
            for y in &numeric {
                lib.global(name, vec![x.clone(), y.clone()], T::Bool, f);
            }
        }
        for t in [T::String, T::Bytes] {
            lib.add(name, false, vec![t.clone(), t], T::Bool, f, traversal_cost);
        }
        for t in [T::Bool, T::Duration, T::Timestamp] {
            lib.global(name, vec![t.clone(), t], T::Bool, f);
        }
    }
    let a = || T::Param("A");
    lib.add("_==_", false, vec![a(), a()], T::Bool, eq, equality_cost);
    lib.add("_!=_", false, vec![a(), a()], T::Bool, ne, equality_cost);
    lib.add(
        "@in",
        false,
        vec![a(), T::list(a())],
        T::Bool,
        in_,
        linear_cost,
    );
    lib.global("@in", vec![a(), T::map(a(), T::Param("B"))], T::Bool, in_);
    for t in [
        T::String,
        T::Bytes,
        T::list(a()),
        T::map(a(), T::Param("B")),
    ] {
        lib.global("size", vec![t.clone()], T::Int, size);
        lib.member("size", vec![t], T::Int, size);
    }
    for t in [
        T::Int,
        T::Uint,
        T::Double,
        T::String,
        T::Bool,
        T::Bytes,
        T::Duration,
        T::Timestamp,
    ] {
        lib.global("string", vec![t.clone()], T::String, to_string);
        if matches!(
            t,
            T::Uint | T::Double | T::String | T::Duration | T::Timestamp | T::Int
        ) {
            lib.global("int", vec![t.clone()], T::Int, to_int);
        }
        if matches!(t, T::Int | T::Double | T::String | T::Uint) {
            lib.global("uint", vec![t.clone()], T::Uint, to_uint);
            lib.global("double", vec![t.clone()], T::Double, to_double);
        }
    }
    lib.global("bool", vec![T::Bool], T::Bool, to_bool);
    lib.global("bool", vec![T::String], T::Bool, to_bool);
    lib.global("bytes", vec![T::Bytes], T::Bytes, to_bytes);
    lib.global("bytes", vec![T::String], T::Bytes, to_bytes);
    lib.global("duration", vec![T::String], T::Duration, to_duration);
    lib.global("duration", vec![T::Duration], T::Duration, to_duration);
    lib.global("timestamp", vec![T::String], T::Timestamp, to_timestamp);
    lib.global("timestamp", vec![T::Int], T::Timestamp, to_timestamp);
    lib.global("timestamp", vec![T::Timestamp], T::Timestamp, to_timestamp);
    lib.global("dyn", vec![a()], T::Dyn, dyn_);
    lib.global("type", vec![a()], T::Type, type_of);
    for (name, f) in [
        ("contains", contains as fn(&[Value]) -> R),
        ("startsWith", starts_with),
        ("endsWith", ends_with),
    ] {
        lib.add(
            name,
            true,
            vec![T::String, T::String],
            T::Bool,
            f,
            traversal_cost,
        );
    }
    lib.add(
        "matches",
        true,
        vec![T::String, T::String],
        T::Bool,
        matches,
        matches_cost,
    );
    lib.add(
        "matches",
        false,
        vec![T::String, T::String],
        T::Bool,
        matches,
        matches_cost,
    );
    register_timestamps(lib);
    register_optional(lib);
    let _ = unit_cost;
    let _ = format_duration;
}

/// The runtime cost of `==` and `!=`: 0.1 per element or byte of the smaller operand,
/// rounded up (cel-go's `interpreter/runtimecost.go`; 1 for two scalars).
fn equality_cost(args: &[Value]) -> u64 {
    let smaller = args.iter().map(super::size_of).min().unwrap_or(1);
    (smaller as f64 * 0.1).ceil() as u64
}
