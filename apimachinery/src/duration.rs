//! Go's duration syntax (`1h2m3.5s`, `-1.5h`, `300ms`), as `time.ParseDuration` and
//! `time.Duration.String` define it (`src/time/format.go`, `src/time/time.go`), and
//! `metav1.Duration`, the API field type that carries one as a JSON string
//! (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/duration.go`).
//!
//! Why a port: a `metav1.Duration` field is a JSON string in Go's syntax, written back in Go's
//! form (`90m` reads back as `1h30m0s`), and a bad value is refused in Go's words
//! (`time: unknown unit "d" in duration "1d"`); server and clients must agree on both.
//!
//! Invariant: a duration is a signed count of nanoseconds in an `i64`, exactly Go's range;
//! parsing rejects overflow as Go does, and printing then parsing gives the same count.

use std::fmt;

/// Nanoseconds in each unit Go's `time.ParseDuration` knows.
const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1000 * NANOSECOND;
const MILLISECOND: u64 = 1000 * MICROSECOND;
const SECOND: u64 = 1000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// 2^63: the magnitude of the most negative duration, one past the most positive.
const MAGNITUDE_LIMIT: u64 = 1 << 63;

/// Why [`parse_duration`] refused a string; `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration, or out of range: `time: invalid duration "x"`.
    #[error("time: invalid duration {}", quote(input))]
    Invalid {
        /// The whole input.
        input: String,
    },
    /// A number without a unit: `time: missing unit in duration "1"`.
    #[error("time: missing unit in duration {}", quote(input))]
    MissingUnit {
        /// The whole input.
        input: String,
    },
    /// A unit Go does not know: `time: unknown unit "d" in duration "1d"`.
    #[error("time: unknown unit {} in duration {}", quote(unit), quote(input))]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole input.
        input: String,
    },
}

/// Go's `time` package quoting: `"` and `\` escaped, bytes of non-ASCII and control
/// characters as `\x..` (not `strconv.Quote`).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_control() || c == '\u{7f}' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

/// The leading decimal digits of `s` as a number, and the rest; `None` past 2^63 (Go's
/// `leadingInt`).
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut x: u64 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        if x > MAGNITUDE_LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(s[i] - b'0');
        if x > MAGNITUDE_LIMIT {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// The leading fraction digits of `s` as a number and its scale (10^digits kept), and the
/// rest; digits past `u64` precision are consumed but ignored (Go's `leadingFraction`).
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let mut x: u64 = 0;
    let mut scale = 1.0;
    let mut overflow = false;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        if !overflow {
            if x > (MAGNITUDE_LIMIT - 1) / 10 {
                overflow = true;
            } else {
                let y = x * 10 + u64::from(s[i] - b'0');
                if y > MAGNITUDE_LIMIT {
                    overflow = true;
                } else {
                    x = y;
                    scale *= 10.0;
                }
            }
        }
        i += 1;
    }
    (x, scale, &s[i..])
}

fn unit_nanos(unit: &[u8]) -> Option<u64> {
    match unit {
        b"ns" => Some(NANOSECOND),
        // "us", "µs" (U+00B5 micro sign) and "μs" (U+03BC Greek mu).
        b"us" | [0xc2, 0xb5, b's'] | [0xce, 0xbc, b's'] => Some(MICROSECOND),
        b"ms" => Some(MILLISECOND),
        b"s" => Some(SECOND),
        b"m" => Some(MINUTE),
        b"h" => Some(HOUR),
        _ => None,
    }
}

/// Parses a Go duration into nanoseconds (Go's `time.ParseDuration`): a possibly signed
/// sequence of decimal numbers, each with an optional fraction and a unit (`ns`, `us`/`µs`,
/// `ms`, `s`, `m`, `h`); `"0"` alone needs no unit.
///
/// ```
/// use kubemock_apimachinery::duration::parse_duration;
///
/// assert_eq!(parse_duration("1h2m3.5s"), Ok(3_723_500_000_000));
/// assert_eq!(parse_duration("-1.5h"), Ok(-5_400_000_000_000));
/// assert_eq!(parse_duration("1µs"), Ok(1000));
/// assert_eq!(parse_duration("0"), Ok(0));
/// assert_eq!(parse_duration("1d").unwrap_err().to_string(), r#"time: unknown unit "d" in duration "1d""#);
/// assert_eq!(parse_duration("1").unwrap_err().to_string(), r#"time: missing unit in duration "1""#);
/// assert_eq!(parse_duration("x").unwrap_err().to_string(), r#"time: invalid duration "x""#);
/// ```
pub fn parse_duration(input: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid {
        input: input.to_string(),
    };
    let mut s = input.as_bytes();
    let mut negative = false;
    if let Some(&c @ (b'-' | b'+')) = s.first() {
        negative = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (mut v, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let pre = before != s.len();

        let mut fraction = (0u64, 1.0f64);
        let mut post = false;
        if let Some((b'.', rest)) = s.split_first() {
            let before = rest.len();
            let (f, scale, rest) = leading_fraction(rest);
            fraction = (f, scale);
            post = before != rest.len();
            s = rest;
        }
        if !pre && !post {
            return Err(invalid());
        }

        let unit_len = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit {
                input: input.to_string(),
            });
        }
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let Some(unit) = unit_nanos(unit) else {
            // The unit ends before a digit or '.', so it is whole characters.
            let unit = String::from_utf8_lossy(unit).into_owned();
            return Err(DurationError::UnknownUnit {
                unit,
                input: input.to_string(),
            });
        };
        if v > MAGNITUDE_LIMIT / unit {
            return Err(invalid());
        }
        v *= unit;
        let (f, scale) = fraction;
        if f > 0 {
            // float64 keeps fractions of hours nanosecond-accurate, as Go computes them.
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > MAGNITUDE_LIMIT {
                return Err(invalid());
            }
        }
        total += v;
        if total > MAGNITUDE_LIMIT {
            return Err(invalid());
        }
    }
    if negative {
        return Ok((total as i64).wrapping_neg());
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Formats nanoseconds as Go's `time.Duration.String` does: `1h2m3.5s`, `0s`, `1.5µs`,
/// `-2m0.001s`.
///
/// ```
/// use kubemock_apimachinery::duration::format_duration;
///
/// assert_eq!(format_duration(3_723_500_000_000), "1h2m3.5s");
/// assert_eq!(format_duration(0), "0s");
/// assert_eq!(format_duration(1500), "1.5µs");
/// assert_eq!(format_duration(90 * 60 * 1_000_000_000), "1h30m0s");
/// ```
pub fn format_duration(nanos: i64) -> String {
    // Largest: "-2562047h47m16.854775808s"; built backwards like Go's.
    let mut buf = [0u8; 32];
    let mut w = buf.len();
    let mut u = nanos.unsigned_abs();
    let mut put = |w: &mut usize, bytes: &[u8]| {
        *w -= bytes.len();
        buf[*w..*w + bytes.len()].copy_from_slice(bytes);
    };
    if u < SECOND {
        put(&mut w, b"s");
        let prec = match u {
            0 => {
                put(&mut w, b"0");
                return String::from_utf8_lossy(&buf[w..]).into_owned();
            }
            u if u < MICROSECOND => {
                put(&mut w, b"n");
                0
            }
            u if u < MILLISECOND => {
                put(&mut w, "µ".as_bytes());
                3
            }
            _ => {
                put(&mut w, b"m");
                6
            }
        };
        u = format_fraction(&mut put, &mut w, u, prec);
        format_int(&mut put, &mut w, u);
    } else {
        put(&mut w, b"s");
        u = format_fraction(&mut put, &mut w, u, 9);
        format_int(&mut put, &mut w, u % 60);
        u /= 60;
        if u > 0 {
            put(&mut w, b"m");
            format_int(&mut put, &mut w, u % 60);
            u /= 60;
            // Stop at hours: days can be different lengths.
            if u > 0 {
                put(&mut w, b"h");
                format_int(&mut put, &mut w, u);
            }
        }
    }
    if nanos < 0 {
        put(&mut w, b"-");
    }
    String::from_utf8_lossy(&buf[w..]).into_owned()
}

/// Writes `.digits` of `v / 10^prec` without trailing zeros (nothing when the fraction is 0)
/// and returns the integer part (Go's `fmtFrac`).
fn format_fraction(
    put: &mut impl FnMut(&mut usize, &[u8]),
    w: &mut usize,
    mut v: u64,
    prec: u32,
) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            put(w, &[b'0' + digit]);
        }
        v /= 10;
    }
    if print {
        put(w, b".");
    }
    v
}

/// Writes `v` in decimal (Go's `fmtInt`).
fn format_int(put: &mut impl FnMut(&mut usize, &[u8]), w: &mut usize, mut v: u64) {
    if v == 0 {
        put(w, b"0");
        return;
    }
    while v > 0 {
        put(w, &[b'0' + (v % 10) as u8]);
        v /= 10;
    }
}

/// `metav1.Duration`: a duration that is a JSON string in Go's syntax.
///
/// ```
/// use kubemock_apimachinery::duration::Duration;
///
/// let d: Duration = serde_json::from_str(r#""90m""#)?;
/// assert_eq!(d.nanos(), 5_400_000_000_000);
/// assert_eq!(serde_json::to_string(&d)?, r#""1h30m0s""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub i64);

impl Duration {
    /// The signed count of nanoseconds.
    pub fn nanos(self) -> i64 {
        self.0
    }

    /// The duration as a standard one, `None` when negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl std::str::FromStr for Duration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(Duration)
    }
}

impl serde::Serialize for Duration {
    /// A JSON string, `Duration.String()` (upstream's `MarshalJSON`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Duration {
    /// A JSON string parsed by [`parse_duration`] (upstream's `UnmarshalJSON`). `null` reads
    /// as the empty string, so it fails with `time: invalid duration ""`, as upstream's does;
    /// other JSON types are refused as Go's decoder refuses them for a string.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DurationVisitor)
    }
}

struct DurationVisitor;

fn not_a_string<E: serde::de::Error>(what: &str) -> E {
    E::custom(format_args!(
        "json: cannot unmarshal {what} into Go value of type string"
    ))
}

impl<'de> serde::de::Visitor<'de> for DurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration string such as \"1h2m3s\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
        parse_duration(v).map(Duration).map_err(E::custom)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Duration, E> {
        self.visit_str("")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Duration, E> {
        self.visit_str("")
    }

    fn visit_some<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        serde::Deserialize::deserialize(deserializer)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
        Err(not_a_string(&format!("number {v}")))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Duration, E> {
        Err(not_a_string(&format!("number {v}")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Duration, E> {
        Err(not_a_string(&format!("number {v}")))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Duration, E> {
        Err(not_a_string("bool"))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Duration, A::Error> {
        Err(not_a_string("array"))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<Duration, A::Error> {
        Err(not_a_string("object"))
    }
}

#[cfg(test)]
mod tests {
    //! Cases of Go's own tests (`src/time/time_test.go`: `durationTests`, `parseDurationTests`,
    //! `parseDurationErrorTests`, `TestParseDurationRoundTrip`) and of upstream's
    //! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/duration_test.go` (v0.32.0).

    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1000 * NS;
    const MS: i64 = 1000 * US;
    const S: i64 = 1000 * MS;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    // durationTests / TestDurationString
    #[test]
    fn format_as_go_does() {
        let cases = [
            ("0s", 0),
            ("1ns", NS),
            ("1.1µs", 1100 * NS),
            ("2.2ms", 2200 * US),
            ("3.3s", 3300 * MS),
            ("4m5s", 4 * M + 5 * S),
            ("4m5.001s", 4 * M + 5001 * MS),
            ("5h6m7.001s", 5 * H + 6 * M + 7001 * MS),
            ("8m0.000000001s", 8 * M + NS),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
        ];
        for (expect, d) in cases {
            assert_eq!(format_duration(d), expect, "{d}");
            if d > 0 {
                assert_eq!(format_duration(-d), format!("-{expect}"), "{}", -d);
            }
        }
    }

    // parseDurationTests / TestParseDuration
    #[test]
    fn parse_as_go_does() {
        let cases = [
            // simple
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            // sign
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            // decimal
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            // different units
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12µs", 12 * US), // U+00B5
            ("12μs", 12 * US), // U+03BC
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            // composite durations
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
            ),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            // large value
            ("52763797000ns", 52763797000 * NS),
            // more than 9 digits after decimal point, see https://golang.org/issue/6617
            ("0.3333333333333333333h", 20 * M),
            // 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
            ("9007199254740993ns", ((1 << 53) + 1) * NS),
            // largest duration that can be represented by int64 in nanoseconds
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            // largest negative value
            ("-9223372036854775808ns", i64::MIN),
            // largest negative round trip value, see https://golang.org/issue/48629
            ("-2562047h47m16.854775808s", i64::MIN),
            // huge string; issue 15011.
            ("0.100000000000000000000h", 6 * M),
            // This value tests the first overflow check in leadingFraction.
            ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
        ];
        for (input, expect) in cases {
            assert_eq!(parse_duration(input), Ok(expect), "{input}");
        }
    }

    // parseDurationErrorTests / TestParseDurationErrors. Go's cases with invalid UTF-8
    // ("\x85\x85", "\xffff", "hello \xffff world") cannot be a Rust string and are left out.
    #[test]
    fn parse_errors_as_go_words_them() {
        let cases = [
            // invalid
            ("", r#""""#),
            ("3", r#""3""#),
            ("-", r#""-""#),
            ("s", r#""s""#),
            (".", r#"".""#),
            ("-.", r#""-.""#),
            (".s", r#"".s""#),
            ("+.s", r#""+.s""#),
            ("1d", r#""1d""#),
            ("\u{FFFD}", r#""\xef\xbf\xbd""#), // utf8.RuneError
            (
                "\u{FFFD} hello \u{FFFD} world",
                r#""\xef\xbf\xbd hello \xef\xbf\xbd world""#,
            ),
            // overflow
            ("9223372036854775810ns", r#""9223372036854775810ns""#),
            ("9223372036854775808ns", r#""9223372036854775808ns""#),
            ("-9223372036854775809ns", r#""-9223372036854775809ns""#),
            ("9223372036854776us", r#""9223372036854776us""#),
            ("3000000h", r#""3000000h""#),
            ("9223372036854775.808us", r#""9223372036854775.808us""#),
            (
                "9223372036854ms775us808ns",
                r#""9223372036854ms775us808ns""#,
            ),
        ];
        for (input, expect) in cases {
            let err = parse_duration(input).unwrap_err().to_string();
            assert!(
                err.contains(expect),
                "{input:?}: {err} does not contain {expect}"
            );
        }
        // The three kinds of message, whole.
        assert_eq!(
            parse_duration("3").unwrap_err().to_string(),
            r#"time: missing unit in duration "3""#
        );
        assert_eq!(
            parse_duration("1d").unwrap_err().to_string(),
            r#"time: unknown unit "d" in duration "1d""#
        );
        assert_eq!(
            parse_duration("").unwrap_err().to_string(),
            r#"time: invalid duration """#
        );
        assert_eq!(
            parse_duration("1é").unwrap_err().to_string(),
            r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#
        );
    }

    // TestParseDurationRoundTrip
    #[test]
    fn format_then_parse_round_trips() {
        for d in [i64::MAX, i64::MIN] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
        let mut x: u32 = 12345;
        for _ in 0..100 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let d = i64::from(x & 0x7fff_ffff) * MS;
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{d}");
        }
    }

    // duration_test.go: TestDurationMarshalJSON, TestDurationUnmarshalJSON,
    // TestDurationMarshalJSONUnmarshalYAML (JSON half)
    #[test]
    fn metav1_duration_json() -> Result<(), serde_json::Error> {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Holder {
            d: Duration,
        }
        for (d, expect) in [
            (5 * S, r#"{"d":"5s"}"#),
            (2 * M, r#"{"d":"2m0s"}"#),
            (H + 3 * MS, r#"{"d":"1h0m0.003s"}"#),
        ] {
            assert_eq!(serde_json::to_string(&Holder { d: Duration(d) })?, expect);
        }
        let cases = [
            (r#"{"d":"0s"}"#, 0),
            (r#"{"d":"5s"}"#, 5 * S),
            (r#"{"d":"2m0s"}"#, 2 * M),
            (r#"{"d":"1h0m0.003s"}"#, H + 3 * MS),
            // Units with zero values can optionally be dropped
            (r#"{"d":"2m"}"#, 2 * M),
            (r#"{"d":"1h0.003s"}"#, H + 3 * MS),
        ];
        for (input, expect) in cases {
            assert_eq!(
                serde_json::from_str::<Holder>(input)?.d,
                Duration(expect),
                "{input}"
            );
        }
        for d in [0, 5 * S, 2 * M, H + 3 * MS] {
            let json = serde_json::to_string(&Holder { d: Duration(d) })?;
            assert_eq!(serde_json::from_str::<Holder>(&json)?.d, Duration(d));
        }
        let err = |input: &str| {
            serde_json::from_str::<Duration>(input)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        assert!(
            err("null").starts_with(r#"time: invalid duration """#),
            "{}",
            err("null")
        );
        assert!(
            err("5").starts_with("json: cannot unmarshal number 5 into Go value of type string")
        );
        assert!(err(r#""1d""#).starts_with(r#"time: unknown unit "d" in duration "1d""#));
        Ok(())
    }
}
