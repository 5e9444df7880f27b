//! Timestamps read exactly as upstream's typed decoding reads them: `metav1.Time` with Go's
//! `time.Parse(time.RFC3339, s)` and `metav1.MicroTime` with `time.Parse(RFC3339Micro, s)`
//! (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/time.go`, `micro_time.go`). What Go
//! accepts is accepted (a one-digit hour, a fraction the layout lacks, a `+24:00` offset), what
//! it refuses is refused with Go's own `ParseError` text, so a client sees the message a real
//! cluster sends. `time::parse_rfc3339` stays the lenient reader of what the server itself
//! wrote.

use crate::time::{self, NANOS_PER_SECOND};

/// `time.RFC3339`, the layout of `metav1.Time`.
pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.RFC3339Micro`, the layout of `metav1.MicroTime`.
pub const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// One element of the two layouts, in order (Go's `nextStdChunk` splits them so).
#[derive(Clone, Copy)]
enum Element {
    /// Text that must appear as it is.
    Literal(&'static str),
    /// `2006`: four digits.
    Year,
    /// `01`: two digits, 1 to 12.
    Month,
    /// `02`: two digits (the day is checked against the month at the end).
    Day,
    /// `15`: one or two digits, below 24.
    Hour,
    /// `04`: two digits, below 60.
    Minute,
    /// `05`: two digits, below 60, then a fraction even if the layout has none.
    Second,
    /// `.000000`: a separator and exactly six digits.
    Micros,
    /// `Z07:00`: `Z` or `±hh:mm`.
    Zone,
}

impl Element {
    /// The element as the layout spells it (Go's `stdstr`, quoted in errors).
    fn layout(self) -> &'static str {
        match self {
            Element::Literal(text) => text,
            Element::Year => "2006",
            Element::Month => "01",
            Element::Day => "02",
            Element::Hour => "15",
            Element::Minute => "04",
            Element::Second => "05",
            Element::Micros => ".000000",
            Element::Zone => "Z07:00",
        }
    }
}

const SECONDS_LAYOUT: &[Element] = &[
    Element::Year,
    Element::Literal("-"),
    Element::Month,
    Element::Literal("-"),
    Element::Day,
    Element::Literal("T"),
    Element::Hour,
    Element::Literal(":"),
    Element::Minute,
    Element::Literal(":"),
    Element::Second,
    Element::Zone,
];

const MICROS_LAYOUT: &[Element] = &[
    Element::Year,
    Element::Literal("-"),
    Element::Month,
    Element::Literal("-"),
    Element::Day,
    Element::Literal("T"),
    Element::Hour,
    Element::Literal(":"),
    Element::Minute,
    Element::Literal(":"),
    Element::Second,
    Element::Micros,
    Element::Zone,
];

/// Parses `value` as Go's `time.Parse(layout, value)` does for [`RFC3339`] (`micro` false)
/// or [`RFC3339_MICRO`] (`micro` true): nanoseconds since the Unix epoch, or Go's error text.
pub fn parse(value: &str, micro: bool) -> Result<i128, String> {
    let (layout, elements) = if micro {
        (RFC3339_MICRO, MICROS_LAYOUT)
    } else {
        (RFC3339, SECONDS_LAYOUT)
    };
    let cannot = |value_elem: &str, layout_elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(value_elem),
            quote(layout_elem)
        )
    };
    let out_of_range = |what: &str| format!("parsing time {}: {what} out of range", quote(value));
    let mut rest = value;
    let (mut year, mut month, mut day) = (0_i64, 0_i64, 0_i64);
    let (mut hour, mut minute, mut second, mut nanos) = (0_i64, 0_i64, 0_i64, 0_i64);
    let mut offset = 0_i64;
    for (index, element) in elements.iter().enumerate() {
        let hold = rest;
        let bad = || cannot(hold, element.layout());
        match *element {
            Element::Literal(text) => {
                // Go's `skip`: the error quotes the value from the first byte that differs.
                let common = rest
                    .bytes()
                    .zip(text.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                if common < text.len() {
                    return Err(cannot(&rest[common..], text));
                }
                rest = &rest[text.len()..];
            }
            Element::Year => {
                let digits = rest
                    .get(..4)
                    .filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
                let Some(digits) = digits else {
                    return Err(bad());
                };
                year = digits.parse().map_err(|_| bad())?;
                rest = &rest[4..];
            }
            Element::Month => {
                (month, rest) = number(rest, true).ok_or_else(bad)?;
                if !(1..=12).contains(&month) {
                    return Err(out_of_range("month"));
                }
            }
            Element::Day => (day, rest) = number(rest, true).ok_or_else(bad)?,
            Element::Hour => {
                (hour, rest) = number(rest, false).ok_or_else(bad)?;
                if hour >= 24 {
                    return Err(out_of_range("hour"));
                }
            }
            Element::Minute => {
                (minute, rest) = number(rest, true).ok_or_else(bad)?;
                if minute >= 60 {
                    return Err(out_of_range("minute"));
                }
            }
            Element::Second => {
                (second, rest) = number(rest, true).ok_or_else(bad)?;
                if second >= 60 {
                    return Err(out_of_range("second"));
                }
                // A fraction the layout does not have is read anyway, any number of digits.
                let bytes = rest.as_bytes();
                let next_is_fraction = matches!(elements.get(index + 1), Some(Element::Micros));
                if !next_is_fraction
                    && bytes.len() >= 2
                    && matches!(bytes[0], b'.' | b',')
                    && bytes[1].is_ascii_digit()
                {
                    let end = 1 + bytes[1..].iter().take_while(|b| b.is_ascii_digit()).count();
                    nanos = fraction_nanos(&rest[1..end]);
                    rest = &rest[end..];
                }
            }
            Element::Micros => {
                let bytes = rest.as_bytes();
                let valid = bytes.len() >= 7
                    && matches!(bytes[0], b'.' | b',')
                    && bytes[1..7].iter().all(u8::is_ascii_digit);
                if !valid {
                    return Err(bad());
                }
                nanos = fraction_nanos(&rest[1..7]);
                rest = &rest[7..];
            }
            Element::Zone => {
                if let Some(after) = rest.strip_prefix('Z') {
                    rest = after;
                    continue;
                }
                let bytes = rest.as_bytes();
                if bytes.len() < 6 || bytes[3] != b':' {
                    return Err(bad());
                }
                let hours = number(&rest[1..3], true).map(|(n, _)| n);
                let minutes = number(&rest[4..6], true).map(|(n, _)| n);
                let (Some(hours), Some(minutes)) = (hours, minutes) else {
                    return Err(bad());
                };
                // Go's bounds are `>`, not `>=`: some write offsets of 24 hours.
                if hours > 24 {
                    return Err(out_of_range("time zone offset hour"));
                }
                if minutes > 60 {
                    return Err(out_of_range("time zone offset minute"));
                }
                offset = (hours * 60 + minutes) * 60;
                match bytes[0] {
                    b'+' => {}
                    b'-' => offset = -offset,
                    _ => return Err(bad()),
                }
                rest = &rest[6..];
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            quote(value),
            quote(rest)
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(format!("parsing time {}: day out of range", quote(value)));
    }
    let days = time::days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Ok(i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos))
}

/// The canonical form of a parsed time, as upstream writes it back: UTC, whole seconds for
/// `metav1.Time`, microseconds for `metav1.MicroTime`.
pub fn format(unix_nanos: i128, micro: bool) -> String {
    let seconds = unix_nanos.div_euclid(NANOS_PER_SECOND);
    let nanos = unix_nanos.rem_euclid(NANOS_PER_SECOND);
    let seconds = i64::try_from(seconds).unwrap_or(i64::MAX);
    if micro {
        time::rfc3339_micro(seconds, u32::try_from(nanos).unwrap_or(0))
    } else {
        time::rfc3339(seconds)
    }
}

/// Go's `getnum`: two digits, or (when not `fixed`) one.
fn number(text: &str, fixed: bool) -> Option<(i64, &str)> {
    let bytes = text.as_bytes();
    let digit = |i: usize| {
        bytes
            .get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| b - b'0')
    };
    let first = digit(0)?;
    match digit(1) {
        Some(second) => Some((i64::from(first * 10 + second), &text[2..])),
        None if fixed => None,
        None => Some((i64::from(first), &text[1..])),
    }
}

/// Nanoseconds of a fraction's digits (Go keeps the first nine).
fn fraction_nanos(digits: &str) -> i64 {
    digits
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0, |n, digit| n * 10 + i64::from(digit - b'0'))
}

/// Days in `month` of `year` (proleptic Gregorian).
fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `time.quote`: double quotes, `"` and `\` escaped, bytes of control and non-ASCII
/// characters as `\xNN`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buffer = [0; 4];
            for byte in c.encode_utf8(&mut buffer).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages as Go 1.22's `time.Parse` prints them for these inputs.
    #[test]
    fn times_parse_and_fail_as_go_parses_them() {
        let ok = |value: &str| parse(value, false).unwrap_or_else(|err| panic!("{value}: {err}"));
        assert_eq!(ok("1970-01-01T00:00:00Z"), 0);
        assert_eq!(ok("1970-01-01T01:00:00+01:00"), 0);
        assert_eq!(ok("1970-01-01T0:00:01Z"), NANOS_PER_SECOND);
        assert_eq!(ok("1970-01-01T00:00:00.5Z"), NANOS_PER_SECOND / 2);
        assert_eq!(ok("2024-02-29T00:00:00Z"), 1_709_164_800 * NANOS_PER_SECOND);
        assert_eq!(
            format(ok("2024-05-01T12:00:00.9-02:30"), false),
            "2024-05-01T14:30:00Z"
        );
        let err = |value: &str| parse(value, false).expect_err(value);
        assert_eq!(
            err("x"),
            r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#
        );
        assert_eq!(
            err("2024/01/01T00:00:00Z"),
            r#"parsing time "2024/01/01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/01T00:00:00Z" as "-""#
        );
        assert_eq!(
            err("2024-13-01T00:00:00Z"),
            r#"parsing time "2024-13-01T00:00:00Z": month out of range"#
        );
        assert_eq!(
            err("2023-02-29T00:00:00Z"),
            r#"parsing time "2023-02-29T00:00:00Z": day out of range"#
        );
        assert_eq!(
            err("2024-01-01T00:00:00"),
            r#"parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#
        );
        assert_eq!(
            err("2024-01-01T00:00:00Zjunk"),
            r#"parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk""#
        );
        assert_eq!(
            err("2024-01-01T00:00:00+25:00"),
            r#"parsing time "2024-01-01T00:00:00+25:00": time zone offset hour out of range"#
        );
        assert_eq!(
            err("2024-01-01T24:00:00Z"),
            r#"parsing time "2024-01-01T24:00:00Z": hour out of range"#
        );
        assert_eq!(
            err("2024-01-01t00:00:00Z"),
            r#"parsing time "2024-01-01t00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "t00:00:00Z" as "T""#
        );
        assert_eq!(
            err("é"),
            r#"parsing time "\xc3\xa9" as "2006-01-02T15:04:05Z07:00": cannot parse "\xc3\xa9" as "2006""#
        );
    }

    #[test]
    fn micro_times_need_exactly_six_fraction_digits() {
        let ok = parse("2024-05-01T12:00:00.123456Z", true).expect("six digits");
        assert_eq!(format(ok, true), "2024-05-01T12:00:00.123456Z");
        assert_eq!(
            parse("2024-05-01T12:00:00Z", true).expect_err("no fraction"),
            r#"parsing time "2024-05-01T12:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
        assert_eq!(
            parse("2024-05-01T12:00:00.123456789Z", true).expect_err("nine digits"),
            r#"parsing time "2024-05-01T12:00:00.123456789Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "789Z" as "Z07:00""#
        );
    }
}
