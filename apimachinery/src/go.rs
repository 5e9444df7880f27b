//! Go's conversions and formatting rules that upstream's results and messages depend on:
//! `math.Pow10`, float-to-int conversion, `strconv.Quote`, `strconv.Atoi`'s errors and
//! `fmt`'s `%v` for floats. Upstream's error texts embed these (`Invalid value: "x"`,
//! `strconv.Atoi: parsing "a": invalid syntax`), so they are ported once, here.

use std::fmt::Write as _;

/// `10^n` as Go's `math.Pow10` computes it (from two tables, so not always the nearest float):
/// infinity above 308, zero below -323.
pub(crate) fn go_pow10(n: i64) -> f64 {
    const POW10: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POW10_POS_32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const POW10_NEG_32: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        let n = n as usize;
        return POW10_POS_32[n / 32] * POW10[n % 32];
    }
    if (-323..=0).contains(&n) {
        let n = (-n) as usize;
        return POW10_NEG_32[n / 32] / POW10[n % 32];
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

/// Go's `int64(f)` on amd64, where kube-apiserver runs: truncation, and `i64::MIN` for NaN
/// and out-of-range values (the CPU's "integer indefinite"; Rust's `as` saturates instead).
pub(crate) fn go_f64_to_i64(f: f64) -> i64 {
    /// 2^63, the first float past `i64::MAX`.
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-TWO_POW_63..TWO_POW_63).contains(&f) {
        return i64::MIN;
    }
    f as i64
}

/// Whether Go's `strconv.IsPrint` holds for `c`: letters, marks, numbers, punctuation,
/// symbols and the ASCII space. Rust's standard library has no general-category table, so
/// this excludes the non-printing categories Go excludes (controls, format characters,
/// separators other than U+0020, private use, surrogates, noncharacters) and treats the rest,
/// unassigned code points included, as printable; upstream escapes unassigned ones.
pub(crate) fn is_print(c: char) -> bool {
    let u = u32::from(c);
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    !matches!(u,
        0x80..=0x9f                      // C1 controls
        | 0xa0 | 0xad                    // no-break space, soft hyphen
        | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2
        | 0x1680 | 0x180e
        | 0x2000..=0x200f                // spaces, zero-width and direction marks
        | 0x2028..=0x202f                // line/paragraph separators, embeddings, narrow space
        | 0x205f..=0x2064 | 0x2066..=0x206f
        | 0x3000
        | 0xd800..=0xf8ff                // surrogates, private use
        | 0xfdd0..=0xfdef                // noncharacters
        | 0xfeff | 0xfff9..=0xfffb
        | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        | 0xe0001 | 0xe0020..=0xe007f
        | 0xf0000..=0x10ffff             // private use planes
    ) && (u & 0xfffe) != 0xfffe // U+xxFFFE and U+xxFFFF are noncharacters
}

/// Go's generated `(*metav1.LabelSelector).String()`, which `%v` prints (upstream's
/// messages quote selectors so: a binding's parameter selector, the disruption controller's
/// `UnmanagedPods` event): labels sorted, each requirement's values as `%v` of a slice.
///
/// ```
/// let selector = serde_json::json!({"matchLabels": {"b": "2", "a": "1"},
///     "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]});
/// assert_eq!(
///     kubemock_apimachinery::go::label_selector_string(&selector),
///     "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:\
///      []LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
/// );
/// ```
pub fn label_selector_string(selector: &serde_json::Value) -> String {
    use serde_json::Value;
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut labels: Vec<(&String, &str)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(key, value)| (key, value.as_str().unwrap_or("")))
        .collect();
    labels.sort();
    let labels: String = labels
        .iter()
        .map(|(key, value)| format!("{key}: {value},"))
        .collect();
    let expressions: String = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|requirement| {
            let values: Vec<&str> = requirement
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(requirement, "key"),
                text(requirement, "operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// Go's `strconv.Quote` (and `%q`): double quotes, Go escapes, printable characters kept as
/// they are.
///
/// ```
/// assert_eq!(kubemock_apimachinery::go::quote("a\"b\n"), r#""a\"b\n""#);
/// ```
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if u32::from(c) < 0x20 || u32::from(c) == 0x7f => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Why Go's `strconv.Atoi` refused a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtoiError {
    Syntax,
    /// Out of range; Go still returns the clamped value.
    Range(i64),
}

/// Go's `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits.
pub(crate) fn atoi(s: &str) -> Result<i64, AtoiError> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(AtoiError::Syntax);
    }
    let mut magnitude: u64 = 0;
    for c in digits.bytes() {
        match magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(c - b'0')))
        {
            Some(m) => magnitude = m,
            None => return Err(AtoiError::Range(if negative { i64::MIN } else { i64::MAX })),
        }
    }
    if negative {
        match magnitude {
            m if m <= i64::MAX as u64 => Ok(-(m as i64)),
            m if m == i64::MAX as u64 + 1 => Ok(i64::MIN),
            _ => Err(AtoiError::Range(i64::MIN)),
        }
    } else {
        i64::try_from(magnitude).map_err(|_| AtoiError::Range(i64::MAX))
    }
}

/// The message of Go's `*strconv.NumError` from `Atoi`.
pub(crate) fn atoi_error_message(s: &str, err: AtoiError) -> String {
    let why = match err {
        AtoiError::Syntax => "invalid syntax",
        AtoiError::Range(_) => "value out of range",
    };
    format!("strconv.Atoi: parsing {}: {why}", quote(s))
}
/// A float as Go's `fmt` prints it with `%v` (`strconv.FormatFloat(f, 'g', -1, 64)`): the
/// shortest digits that read back the same, in `%e` form (`1e+06`, `1.5e-05`) when the decimal
/// exponent is below -4 or at least 6.
pub(crate) fn format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        };
    }
    // Rust's `{:e}` prints the shortest round-tripping digits: "d.ddde-x".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    /// `%g` with the shortest precision uses `%e` from this decimal exponent on.
    const SHORTEST_EXPONENT_FORM_FROM: i32 = 6;
    if !(-4..SHORTEST_EXPONENT_FORM_FROM).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{point}e{exp_sign}{:02}", exponent.abs());
    }
    let point = exponent + 1; // digits before the decimal point
    if point <= 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-point) as usize));
    }
    let point = point as usize;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}
