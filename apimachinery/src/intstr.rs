//! `IntOrString`: a field that holds a number or a string (a port `8080` or `"http"`, a rolling
//! update's `maxSurge: 1` or `"25%"`), as `staging/src/k8s.io/apimachinery/pkg/util/intstr`
//! (`intstr.go`) defines it.
//!
//! Why here: the API server decodes and validates these fields, and the Deployment, DaemonSet
//! and disruption controllers turn a percentage into a count of pods; both must read `"25%"`
//! the same way, round it the same way, and refuse `"25"` with the same words.
//!
//! Invariant: JSON is a string or an integer that fits an `int32`, and `null` reads as `0`,
//! as upstream's `UnmarshalJSON` does.

use std::fmt;

use crate::go::{AtoiError, atoi, atoi_error_message, go_f64_to_i64};

/// An int32 or a string (upstream's `intstr.IntOrString`).
///
/// ```
/// use kubemock_apimachinery::intstr::IntOrString;
///
/// let port: IntOrString = serde_json::from_str("8080")?;
/// assert_eq!(port, IntOrString::Int(8080));
/// let surge: IntOrString = serde_json::from_str(r#""25%""#)?;
/// assert_eq!(serde_json::to_string(&surge)?, r#""25%""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// A number.
    Int(i32),
    /// A string, such as `"http"` or `"25%"`.
    String(String),
}

impl Default for IntOrString {
    /// `Int(0)`, upstream's zero value.
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

/// Why [`get_scaled_value_from_int_or_percent`] refused a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntOrStringError {
    /// A string without a trailing `%`.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
    /// A `%`-terminated string whose number does not parse (message from Go's `strconv.Atoi`).
    #[error(
        "invalid value for IntOrString: invalid value {}: {atoi}",
        crate::go::quote(value)
    )]
    InvalidValue {
        /// The whole string, `%` included.
        value: String,
        /// Go's `strconv.Atoi` error for the number, e.g. `strconv.Atoi: parsing "a": invalid syntax`.
        atoi: String,
    },
}

impl IntOrString {
    /// `Int` when `value` is a decimal int32, else `String` (upstream's `Parse`).
    ///
    /// ```
    /// use kubemock_apimachinery::intstr::IntOrString;
    /// assert_eq!(IntOrString::parse("80"), IntOrString::Int(80));
    /// assert_eq!(IntOrString::parse("2147483648"), IntOrString::String("2147483648".into()));
    /// ```
    pub fn parse(value: &str) -> IntOrString {
        match atoi(value).ok().and_then(|v| i32::try_from(v).ok()) {
            Some(v) => IntOrString::Int(v),
            None => IntOrString::String(value.to_string()),
        }
    }

    /// The number; a string reads as Go's `strconv.Atoi` reads it, 0 when it is not a number
    /// and clamped to `i64` when it is too large (upstream's `IntValue`).
    pub fn int_value(&self) -> i64 {
        match self {
            IntOrString::Int(v) => i64::from(*v),
            IntOrString::String(s) => match atoi(s) {
                Ok(v) | Err(AtoiError::Range(v)) => v,
                Err(AtoiError::Syntax) => 0,
            },
        }
    }
}

impl fmt::Display for IntOrString {
    /// The string, or the number in decimal (upstream's `String()`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(v) => write!(f, "{v}"),
            IntOrString::String(s) => f.write_str(s),
        }
    }
}

impl From<i32> for IntOrString {
    fn from(v: i32) -> Self {
        IntOrString::Int(v)
    }
}

impl From<&str> for IntOrString {
    fn from(v: &str) -> Self {
        IntOrString::String(v.to_string())
    }
}

impl From<String> for IntOrString {
    fn from(v: String) -> Self {
        IntOrString::String(v)
    }
}

/// A number, or a percentage of `total` (upstream's `GetScaledValueFromIntOrPercent`): `"25%"`
/// of 10 is 2.5, so 3 when rounding up and 2 when rounding down. A string without `%` is an
/// error, with upstream's message.
///
/// ```
/// use kubemock_apimachinery::intstr::{IntOrString, get_scaled_value_from_int_or_percent};
///
/// let surge = IntOrString::from("25%");
/// assert_eq!(get_scaled_value_from_int_or_percent(&surge, 10, true), Ok(3));
/// assert_eq!(get_scaled_value_from_int_or_percent(&surge, 10, false), Ok(2));
/// assert_eq!(
///     get_scaled_value_from_int_or_percent(&IntOrString::from("25"), 10, true).unwrap_err().to_string(),
///     "invalid value for IntOrString: invalid type: string is not a percentage"
/// );
/// ```
pub fn get_scaled_value_from_int_or_percent(
    value: &IntOrString,
    total: i64,
    round_up: bool,
) -> Result<i64, IntOrStringError> {
    let (value, is_percent) = int_or_percent_value_safely(value)?;
    if !is_percent {
        return Ok(value);
    }
    // Upstream computes in float64 and converts back with Go's int().
    let scaled = value as f64 * total as f64 / 100.0;
    Ok(go_f64_to_i64(if round_up {
        scaled.ceil()
    } else {
        scaled.floor()
    }))
}

/// The number and whether it is a percentage (upstream's `getIntOrPercentValueSafely`).
fn int_or_percent_value_safely(value: &IntOrString) -> Result<(i64, bool), IntOrStringError> {
    match value {
        IntOrString::Int(v) => Ok((i64::from(*v), false)),
        IntOrString::String(s) => {
            let number = s
                .strip_suffix('%')
                .ok_or(IntOrStringError::NotAPercentage)?;
            match atoi(number) {
                Ok(v) => Ok((v, true)),
                Err(err) => Err(IntOrStringError::InvalidValue {
                    value: s.clone(),
                    atoi: atoi_error_message(number, err),
                }),
            }
        }
    }
}

impl serde::Serialize for IntOrString {
    /// A JSON number or string, as upstream's `MarshalJSON`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(v) => serializer.serialize_i32(*v),
            IntOrString::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> serde::Deserialize<'de> for IntOrString {
    /// As upstream's `UnmarshalJSON`: a string, an integer that fits an int32, or null (`Int(0)`);
    /// anything else is refused in the words of Go's `encoding/json` (`json: cannot unmarshal
    /// number 1.5 into Go value of type int32`). A non-integer number is quoted as the
    /// deserializer's `f64` prints, not as it was written.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntOrStringVisitor)
    }
}

struct IntOrStringVisitor;

fn not_int32<E: serde::de::Error>(what: &str) -> E {
    E::custom(format_args!(
        "json: cannot unmarshal {what} into Go value of type int32"
    ))
}

impl<'de> serde::de::Visitor<'de> for IntOrStringVisitor {
    type Value = IntOrString;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v.to_string()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| not_int32(&format!("number {v}")))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| not_int32(&format!("number {v}")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<IntOrString, E> {
        Err(not_int32(&format!("number {v}")))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<IntOrString, E> {
        Err(not_int32("bool"))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<IntOrString, A::Error> {
        Err(not_int32("array"))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<IntOrString, A::Error> {
        Err(not_int32("object"))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<IntOrString, E> {
        Ok(IntOrString::Int(0))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<IntOrString, E> {
        Ok(IntOrString::Int(0))
    }

    fn visit_some<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<IntOrString, D::Error> {
        serde::Deserialize::deserialize(deserializer)
    }
}

// k8s-openapi's IntOrString: the same two variants.
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString as OpenApiIntOrString;

impl From<OpenApiIntOrString> for IntOrString {
    fn from(v: OpenApiIntOrString) -> Self {
        match v {
            OpenApiIntOrString::Int(i) => IntOrString::Int(i),
            OpenApiIntOrString::String(s) => IntOrString::String(s),
        }
    }
}

impl From<IntOrString> for OpenApiIntOrString {
    fn from(v: IntOrString) -> Self {
        match v {
            IntOrString::Int(i) => OpenApiIntOrString::Int(i),
            IntOrString::String(s) => OpenApiIntOrString::String(s),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Cases of upstream's `staging/src/k8s.io/apimachinery/pkg/util/intstr/intstr_test.go`
    //! (v0.32.0); each test names the Go test it ports.

    use super::*;

    fn s(v: &str) -> IntOrString {
        IntOrString::from(v)
    }

    // TestFromInt, TestFromInt32, TestFromString
    #[test]
    fn constructors() {
        assert_eq!(IntOrString::from(93), IntOrString::Int(93));
        assert_eq!(s("76"), IntOrString::String("76".into()));
    }

    // TestIntOrStringUnmarshalJSON, TestIntOrStringMarshalJSON, TestIntOrStringMarshalJSONUnmarshalYAML
    #[test]
    fn json_round_trip() -> Result<(), serde_json::Error> {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Holder {
            val: IntOrString,
        }
        for (input, expect) in [
            (r#"{"val": 123}"#, IntOrString::Int(123)),
            (r#"{"val": "123"}"#, s("123")),
        ] {
            assert_eq!(
                serde_json::from_str::<Holder>(input)?.val,
                expect,
                "{input}"
            );
        }
        for (value, expect) in [
            (IntOrString::Int(123), r#"{"val":123}"#),
            (s("123"), r#"{"val":"123"}"#),
        ] {
            let holder = Holder { val: value };
            let json = serde_json::to_string(&holder)?;
            assert_eq!(json, expect);
            assert_eq!(serde_json::from_str::<Holder>(&json)?, holder);
        }
        Ok(())
    }

    // UnmarshalJSON: null is Int 0; other JSON types fail as Go's decoder says.
    #[test]
    fn json_null_and_wrong_types() -> Result<(), serde_json::Error> {
        assert_eq!(
            serde_json::from_str::<IntOrString>("null")?,
            IntOrString::Int(0)
        );
        for (input, message) in [
            (
                "1.5",
                "json: cannot unmarshal number 1.5 into Go value of type int32",
            ),
            (
                "3000000000",
                "json: cannot unmarshal number 3000000000 into Go value of type int32",
            ),
            (
                "-3000000000",
                "json: cannot unmarshal number -3000000000 into Go value of type int32",
            ),
            (
                "true",
                "json: cannot unmarshal bool into Go value of type int32",
            ),
            (
                "[1]",
                "json: cannot unmarshal array into Go value of type int32",
            ),
            (
                "{}",
                "json: cannot unmarshal object into Go value of type int32",
            ),
        ] {
            let err = serde_json::from_str::<IntOrString>(input)
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(message), "{input}: {err}");
        }
        Ok(())
    }

    // TestGetIntFromIntOrString (getIntOrPercentValueSafely)
    #[test]
    fn int_or_percent_value() {
        let cases = [
            (IntOrString::Int(200), Some((200, false))),
            (s("200"), None),
            (s("30%0"), None),
            (s("40%"), Some((40, true))),
            (s("%"), None),
            (s("a%"), None),
            (s("a"), None),
            (s("40#"), None),
            (s("40%%"), None),
        ];
        for (input, expect) in cases {
            assert_eq!(
                int_or_percent_value_safely(&input).ok(),
                expect,
                "{input:?}"
            );
        }
    }

    // TestGetIntFromIntOrPercent, with upstream's messages for the failures.
    #[test]
    fn scaled_value_from_int_or_percent() {
        let ok = [
            (IntOrString::Int(123), 0, false, 123),
            (s("90%"), 100, true, 90),
            (s("90%"), 95, true, 86),
            (s("90%"), 95, false, 85),
        ];
        for (input, total, round_up, expect) in ok {
            assert_eq!(
                get_scaled_value_from_int_or_percent(&input, total, round_up),
                Ok(expect),
                "{input:?}"
            );
        }
        let not_a_percentage =
            "invalid value for IntOrString: invalid type: string is not a percentage";
        let failures = [
            (
                s("%"),
                r#"invalid value for IntOrString: invalid value "%": strconv.Atoi: parsing "": invalid syntax"#,
            ),
            (s("90#"), not_a_percentage),
            (
                s("#%"),
                r##"invalid value for IntOrString: invalid value "#%": strconv.Atoi: parsing "#": invalid syntax"##,
            ),
            (s("90"), not_a_percentage),
            (
                s("99999999999999999999%"),
                r#"invalid value for IntOrString: invalid value "99999999999999999999%": strconv.Atoi: parsing "99999999999999999999": value out of range"#,
            ),
        ];
        for (input, message) in failures {
            let err = get_scaled_value_from_int_or_percent(&input, 0, false).unwrap_err();
            assert_eq!(err.to_string(), message, "{input:?}");
        }
    }

    // TestParse
    #[test]
    fn parse_int32_or_keep_the_string() {
        let cases = [
            ("0", IntOrString::Int(0)),
            ("2147483647", IntOrString::Int(i32::MAX)),
            ("-2147483648", IntOrString::Int(i32::MIN)),
            ("2147483648", s("2147483648")),
            ("-2147483649", s("-2147483649")),
            ("9223372036854775807", s("9223372036854775807")),
            ("-9223372036854775808", s("-9223372036854775808")),
            ("9223372036854775808", s("9223372036854775808")),
            ("-9223372036854775809", s("-9223372036854775809")),
        ];
        for (input, expect) in cases {
            assert_eq!(IntOrString::parse(input), expect, "{input}");
        }
    }

    // IntValue and String
    #[test]
    fn int_value_and_display() {
        assert_eq!(s("12").int_value(), 12);
        assert_eq!(s("x").int_value(), 0);
        assert_eq!(s("99999999999999999999").int_value(), i64::MAX);
        assert_eq!(IntOrString::Int(-3).to_string(), "-3");
        assert_eq!(s("http").to_string(), "http");
    }

    #[test]
    fn conversions_with_k8s_openapi() {
        let theirs = OpenApiIntOrString::String("25%".into());
        let ours = IntOrString::from(theirs.clone());
        assert_eq!(OpenApiIntOrString::from(ours), theirs);
        assert_eq!(
            IntOrString::from(OpenApiIntOrString::Int(3)),
            IntOrString::Int(3)
        );
    }
}
