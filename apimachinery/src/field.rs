//! Field paths and field errors, as `staging/src/k8s.io/apimachinery/pkg/util/validation/field`
//! (`path.go`, `errors.go`) and the aggregate of `pkg/util/errors/errors.go` word them.
//!
//! Why here: a 422 `Invalid` answer lists one cause per field (`spec.replicas: Invalid value:
//! -1: must be greater than or equal to 0`), clients and tests match those strings, and the
//! API server, admission and controllers all produce them. One implementation keeps the
//! wording (Go's `%v`/`%q` rendering of the bad value included) identical everywhere.
//!
//! Invariant: `Display` of an [`Error`] is upstream's `Error()`, of its body upstream's
//! `ErrorBody()`, and of an [`ErrorList`] upstream's `ToAggregate().Error()` (duplicates
//! dropped, several messages in `[a, b]`).

use std::fmt;

use crate::go::{format_float_v, quote};

/// One step of a [`Path`]: a field name, or a subscript (list index or map key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Element {
    Name(String),
    Index(String),
}

/// The path from an object's root to one of its fields (upstream's `field.Path`), printed as
/// `spec.containers[0].image` or `metadata.labels[app]`.
///
/// ```
/// use kubemock_apimachinery::field::Path;
///
/// let image = Path::new("spec").child("containers").index(0).child("image");
/// assert_eq!(image.to_string(), "spec.containers[0].image");
/// assert_eq!(Path::new("metadata").child("labels").key("app").to_string(), "metadata.labels[app]");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Path {
    elements: Vec<Element>,
}

impl Path {
    /// A root path (upstream's `NewPath(name)`). An empty name prints as `[]`, as upstream's.
    pub fn new(name: &str) -> Path {
        Path::default().child(name)
    }

    /// A root path of several names (upstream's `NewPath(name, moreNames...)`).
    ///
    /// ```
    /// use kubemock_apimachinery::field::Path;
    /// assert_eq!(Path::from_names(["spec", "template", "spec"]).to_string(), "spec.template.spec");
    /// ```
    pub fn from_names<I, S>(names: I) -> Path
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        names
            .into_iter()
            .fold(Path::default(), |p, name| p.child(name.as_ref()))
    }

    /// The path of a field of this one (upstream's `Child`).
    #[must_use]
    pub fn child(&self, name: &str) -> Path {
        // Upstream prints an empty name as an empty subscript.
        let element = if name.is_empty() {
            Element::Index(String::new())
        } else {
            Element::Name(name.to_string())
        };
        self.with(element)
    }

    /// The path of a list item (upstream's `Index`).
    #[must_use]
    pub fn index(&self, index: usize) -> Path {
        self.with(Element::Index(index.to_string()))
    }

    /// The path of a map entry (upstream's `Key`).
    #[must_use]
    pub fn key(&self, key: &str) -> Path {
        self.with(Element::Index(key.to_string()))
    }

    /// The path without its last step; `None` for a root.
    pub fn parent(&self) -> Option<Path> {
        if self.elements.len() <= 1 {
            return None;
        }
        Some(Path {
            elements: self.elements[..self.elements.len() - 1].to_vec(),
        })
    }

    /// The first step alone (upstream's `Root`).
    pub fn root(&self) -> Path {
        Path {
            elements: self.elements.iter().take(1).cloned().collect(),
        }
    }

    fn with(&self, element: Element) -> Path {
        let mut elements = Vec::with_capacity(self.elements.len() + 1);
        elements.extend_from_slice(&self.elements);
        elements.push(element);
        Path { elements }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, element) in self.elements.iter().enumerate() {
            match element {
                Element::Name(name) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(name)?;
                }
                Element::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// Why a field is wrong (upstream's `ErrorType`); [`ErrorType::as_str`] is the `reason` of a
/// `Status` cause, `Display` the words of the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// A value looked up and not found (`FieldValueNotFound`).
    NotFound,
    /// A value that must be given was not (`FieldValueRequired`).
    Required,
    /// A value that must be unique is not (`FieldValueDuplicate`).
    Duplicate,
    /// A malformed value (`FieldValueInvalid`).
    Invalid,
    /// A value outside an enumeration (`FieldValueNotSupported`).
    NotSupported,
    /// A valid value that is not allowed here (`FieldValueForbidden`).
    Forbidden,
    /// A value too long; the value is not shown (`FieldValueTooLong`).
    TooLong,
    /// A list with too many items (`FieldValueTooMany`).
    TooMany,
    /// A failure not caused by the input (`InternalError`).
    Internal,
    /// A value of the wrong type for the schema (`FieldValueTypeInvalid`).
    TypeInvalid,
}

impl ErrorType {
    /// The machine-readable name (`"FieldValueInvalid"`), a `Status` cause's `reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words a message starts with (`"Invalid value"`): upstream's `ErrorType.String()`.
    pub fn message(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// The offending value of an [`Error`], in the Go type upstream would hold, since that type
/// decides how the message prints it.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// Not shown (upstream's `omitValue`).
    Omitted,
    /// Go's `nil` (or a nil pointer): printed as `"null"`, quoted, as upstream prints it.
    Null,
    /// An integer, printed plainly (`-1`).
    Int(i64),
    /// A float, printed as Go's `%v` does (`0.5`, `1e+06`).
    Float(f64),
    /// A boolean (`true`).
    Bool(bool),
    /// A string, quoted as Go's `%q` does (`"x"`, `"a\"b"`).
    String(String),
    /// A value with a `String()` method: its text, unquoted.
    Stringer(String),
    /// Any other Go value, which upstream prints with `%#v`: the caller gives that text, for
    /// example `[]string{"a", "b"}` (see [`BadValue::go_string_slice`]).
    GoSyntax(String),
}

impl BadValue {
    /// A `[]string` as Go's `%#v` prints it: `[]string{"a", "b"}`.
    ///
    /// ```
    /// use kubemock_apimachinery::field::BadValue;
    /// assert_eq!(BadValue::go_string_slice(&["a", "b"]), BadValue::GoSyntax(r#"[]string{"a", "b"}"#.into()));
    /// ```
    pub fn go_string_slice<S: AsRef<str>>(items: &[S]) -> BadValue {
        let items: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
        BadValue::GoSyntax(format!("[]string{{{}}}", items.join(", ")))
    }
}

impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        BadValue::Int(v)
    }
}

impl From<i32> for BadValue {
    fn from(v: i32) -> Self {
        BadValue::Int(i64::from(v))
    }
}

impl From<u32> for BadValue {
    fn from(v: u32) -> Self {
        BadValue::Int(i64::from(v))
    }
}

impl From<f64> for BadValue {
    fn from(v: f64) -> Self {
        BadValue::Float(v)
    }
}

impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        BadValue::Bool(v)
    }
}

impl From<&str> for BadValue {
    fn from(v: &str) -> Self {
        BadValue::String(v.to_string())
    }
}

impl From<String> for BadValue {
    fn from(v: String) -> Self {
        BadValue::String(v)
    }
}

impl From<&String> for BadValue {
    fn from(v: &String) -> Self {
        BadValue::String(v.clone())
    }
}

impl From<&serde_json::Value> for BadValue {
    /// A JSON value as upstream holds it once decoded into `interface{}` (integers as `int64`,
    /// other numbers as `float64`), so arrays and objects print as Go's `%#v` of
    /// `[]interface {}` and `map[string]interface {}`.
    fn from(v: &serde_json::Value) -> Self {
        use serde_json::Value;
        match v {
            Value::Null => BadValue::Null,
            Value::Bool(b) => BadValue::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => BadValue::Int(i),
                None => BadValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => BadValue::String(s.clone()),
            Value::Array(_) | Value::Object(_) => BadValue::GoSyntax(go_syntax(v)),
        }
    }
}

/// Go's `%#v` of a JSON value decoded into `interface{}`.
fn go_syntax(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => format_float_v(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(map) => {
            // Go's fmt prints map entries sorted by key.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), go_syntax(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
    }
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Omitted => Ok(()),
            BadValue::Null => f.write_str("\"null\""),
            BadValue::Int(v) => write!(f, "{v}"),
            BadValue::Float(v) => f.write_str(&format_float_v(*v)),
            BadValue::Bool(v) => write!(f, "{v}"),
            BadValue::String(s) => f.write_str(&quote(s)),
            BadValue::Stringer(s) | BadValue::GoSyntax(s) => f.write_str(s),
        }
    }
}

/// A field-level validation error (upstream's `field.Error`).
///
/// ```
/// use kubemock_apimachinery::field::{Error, Path};
///
/// let replicas = Path::new("spec").child("replicas");
/// let err = Error::invalid(&replicas, -1, "must be greater than or equal to 0");
/// assert_eq!(err.to_string(), "spec.replicas: Invalid value: -1: must be greater than or equal to 0");
/// let err = Error::not_supported(&Path::new("spec").child("policy"), "x", &["a", "b"]);
/// assert_eq!(err.error_body(), r#"Unsupported value: "x": supported values: "a", "b""#);
/// assert_eq!(Error::required(&replicas, "").error_body(), "Required value");
/// assert_eq!(Error::too_long(&replicas, Some(63)).error_body(), "Too long: may not be more than 63 bytes");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// Why the field is wrong.
    pub kind: ErrorType,
    /// The field's path, printed (`spec.replicas`).
    pub field: String,
    /// The offending value.
    pub bad_value: BadValue,
    /// More words, after the value (may be empty).
    pub detail: String,
}

impl Error {
    fn new(kind: ErrorType, field: &Path, bad_value: BadValue, detail: impl Into<String>) -> Error {
        Error {
            kind,
            field: field.to_string(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// A value of the wrong type (upstream's `TypeInvalid`).
    pub fn type_invalid(
        field: &Path,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Error {
        Error::new(ErrorType::TypeInvalid, field, value.into(), detail)
    }

    /// A value looked up and not found (upstream's `NotFound`).
    pub fn not_found(field: &Path, value: impl Into<BadValue>) -> Error {
        Error::new(ErrorType::NotFound, field, value.into(), "")
    }

    /// A missing value (upstream's `Required`).
    pub fn required(field: &Path, detail: impl Into<String>) -> Error {
        Error::new(
            ErrorType::Required,
            field,
            BadValue::String(String::new()),
            detail,
        )
    }

    /// A value that must be unique (upstream's `Duplicate`).
    pub fn duplicate(field: &Path, value: impl Into<BadValue>) -> Error {
        Error::new(ErrorType::Duplicate, field, value.into(), "")
    }

    /// A malformed value (upstream's `Invalid`).
    pub fn invalid(field: &Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Error {
        Error::new(ErrorType::Invalid, field, value.into(), detail)
    }

    /// A value outside `valid_values`, listed quoted in the detail (upstream's `NotSupported`).
    pub fn not_supported<S: AsRef<str>>(
        field: &Path,
        value: impl Into<BadValue>,
        valid_values: &[S],
    ) -> Error {
        let detail = if valid_values.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid_values.iter().map(|v| quote(v.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Error::new(ErrorType::NotSupported, field, value.into(), detail)
    }

    /// A valid value that is not allowed here (upstream's `Forbidden`).
    pub fn forbidden(field: &Path, detail: impl Into<String>) -> Error {
        Error::new(
            ErrorType::Forbidden,
            field,
            BadValue::String(String::new()),
            detail,
        )
    }

    /// A value longer than `max_length` bytes, or too long when that is unknown (upstream's
    /// `TooLong`; the value is never shown).
    pub fn too_long(field: &Path, max_length: Option<usize>) -> Error {
        let detail = match max_length {
            Some(max) => format!("may not be more than {max} bytes"),
            None => "value is too long".to_string(),
        };
        Error::new(
            ErrorType::TooLong,
            field,
            BadValue::String("<value omitted>".into()),
            detail,
        )
    }

    /// A list of `actual` items where at most `max` are allowed (upstream's `TooMany`; either
    /// may be unknown).
    ///
    /// ```
    /// use kubemock_apimachinery::field::{Error, Path};
    /// let err = Error::too_many(&Path::new("items"), Some(5), Some(3));
    /// assert_eq!(err.to_string(), "items: Too many: 5: must have at most 3 items");
    /// ```
    pub fn too_many(field: &Path, actual: Option<usize>, max: Option<usize>) -> Error {
        let detail = match max {
            Some(max) => format!("must have at most {max} items"),
            None => "has too many items".to_string(),
        };
        let actual = match actual {
            Some(n) => BadValue::Int(i64::try_from(n).unwrap_or(i64::MAX)),
            None => BadValue::Omitted,
        };
        Error::new(ErrorType::TooMany, field, actual, detail)
    }

    /// A failure not caused by the input (upstream's `InternalError`).
    pub fn internal(field: &Path, err: impl fmt::Display) -> Error {
        Error::new(ErrorType::Internal, field, BadValue::Null, err.to_string())
    }

    /// The message without the field (upstream's `ErrorBody()`): the type's words, the value
    /// unless the type or value omits it, then `: detail` when there is one.
    pub fn error_body(&self) -> String {
        let mut body = self.kind.message().to_string();
        let omitted = matches!(
            self.kind,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal
        ) || self.bad_value == BadValue::Omitted;
        if !omitted {
            body.push_str(&format!(": {}", self.bad_value));
        }
        if !self.detail.is_empty() {
            body.push_str(&format!(": {}", self.detail));
        }
        body
    }
}

impl fmt::Display for Error {
    /// `field: body` (upstream's `Error()`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error_body())
    }
}

impl std::error::Error for Error {}

/// Field errors collected by a validation (upstream's `ErrorList`).
///
/// ```
/// use kubemock_apimachinery::field::{Error, ErrorList, Path};
///
/// let mut errs = ErrorList::new();
/// errs.push(Error::required(&Path::new("metadata").child("name"), "name or generateName is required"));
/// errs.push(Error::invalid(&Path::new("spec").child("replicas"), -1, "must be greater than or equal to 0"));
/// assert_eq!(
///     errs.to_string(),
///     "[metadata.name: Required value: name or generateName is required, \
///      spec.replicas: Invalid value: -1: must be greater than or equal to 0]"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorList(pub Vec<Error>);

impl ErrorList {
    /// No errors.
    pub fn new() -> ErrorList {
        ErrorList(Vec::new())
    }

    /// The errors as one error, duplicates (same message) dropped; `None` when there are none
    /// (upstream's `ToAggregate`).
    pub fn to_aggregate(&self) -> Option<Aggregate> {
        let mut seen = std::collections::HashSet::new();
        let errors: Vec<Error> = self
            .0
            .iter()
            .filter(|e| seen.insert(e.to_string()))
            .cloned()
            .collect();
        if errors.is_empty() {
            None
        } else {
            Some(Aggregate(errors))
        }
    }

    /// The list without the errors of the given types, duplicates dropped (upstream's
    /// `Filter` with `NewErrorTypeMatcher`s).
    pub fn filter_out_types(&self, types: &[ErrorType]) -> ErrorList {
        let kept = self.to_aggregate().map(|a| a.0).unwrap_or_default();
        ErrorList(
            kept.into_iter()
                .filter(|e| !types.contains(&e.kind))
                .collect(),
        )
    }
}

impl std::ops::Deref for ErrorList {
    type Target = Vec<Error>;

    fn deref(&self) -> &Vec<Error> {
        &self.0
    }
}

impl std::ops::DerefMut for ErrorList {
    fn deref_mut(&mut self) -> &mut Vec<Error> {
        &mut self.0
    }
}

impl From<Vec<Error>> for ErrorList {
    fn from(errors: Vec<Error>) -> Self {
        ErrorList(errors)
    }
}

impl FromIterator<Error> for ErrorList {
    fn from_iter<I: IntoIterator<Item = Error>>(iter: I) -> Self {
        ErrorList(iter.into_iter().collect())
    }
}

impl IntoIterator for ErrorList {
    type Item = Error;
    type IntoIter = std::vec::IntoIter<Error>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Extend<Error> for ErrorList {
    fn extend<I: IntoIterator<Item = Error>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl fmt::Display for ErrorList {
    /// The aggregate's message, or nothing for an empty list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_aggregate() {
            Some(aggregate) => aggregate.fmt(f),
            None => Ok(()),
        }
    }
}

/// Several errors as one (upstream's `utilerrors.Aggregate` made by `ToAggregate`).
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate(Vec<Error>);

impl Aggregate {
    /// The errors, at least one.
    pub fn errors(&self) -> &[Error] {
        &self.0
    }
}

impl fmt::Display for Aggregate {
    /// One message alone; several, distinct ones joined by `, ` inside `[...]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.0.as_slice() {
            return only.fmt(f);
        }
        let mut seen = std::collections::HashSet::new();
        let messages: Vec<String> = self
            .0
            .iter()
            .map(Error::to_string)
            .filter(|m| seen.insert(m.clone()))
            .collect();
        if messages.len() == 1 {
            return f.write_str(&messages[0]);
        }
        write!(f, "[{}]", messages.join(", "))
    }
}

impl std::error::Error for Aggregate {}

#[cfg(test)]
mod tests {
    //! Cases of upstream's `staging/src/k8s.io/apimachinery/pkg/util/validation/field/path_test.go`
    //! and `errors_test.go` (v0.32.0); each test names the Go test it ports. Messages were
    //! checked against upstream's `Error()` at v0.32.0.

    use super::*;

    /// One step of a path test: an operation and the path it must print.
    type Step<'a> = (&'a dyn Fn(&Path) -> Path, &'a str);

    // TestPath
    #[test]
    fn path_steps() {
        let root = Path::new("root");
        let mut p = root.clone();
        let steps: [Step<'_>; 9] = [
            (&|p| p.clone(), "root"),
            (&|p| p.child("first"), "root.first"),
            (&|p| p.child("second"), "root.first.second"),
            (&|p| p.index(0), "root.first.second[0]"),
            (&|p| p.child("third"), "root.first.second[0].third"),
            (&|p| p.index(93), "root.first.second[0].third[93]"),
            (
                &|p| p.parent().unwrap_or_default(),
                "root.first.second[0].third",
            ),
            (&|p| p.parent().unwrap_or_default(), "root.first.second[0]"),
            (&|p| p.key("key"), "root.first.second[0][key]"),
        ];
        for (i, (op, expect)) in steps.into_iter().enumerate() {
            p = op(&p);
            assert_eq!(p.to_string(), expect, "[{i}]");
            assert_eq!(p.root(), root, "[{i}]");
        }
    }

    // TestPathMultiArg
    #[test]
    fn path_of_several_names() {
        let root = Path::from_names(["root", "first"]);
        let mut p = root.clone();
        let steps: [Step<'_>; 7] = [
            (&|p| p.clone(), "root.first"),
            (
                &|p| p.child("second").child("third"),
                "root.first.second.third",
            ),
            (&|p| p.index(0), "root.first.second.third[0]"),
            (
                &|p| p.parent().unwrap_or_default(),
                "root.first.second.third",
            ),
            (&|p| p.parent().unwrap_or_default(), "root.first.second"),
            (&|p| p.parent().unwrap_or_default(), "root.first"),
            (&|p| p.parent().unwrap_or_default(), "root"),
        ];
        for (i, (op, expect)) in steps.into_iter().enumerate() {
            p = op(&p);
            assert_eq!(p.to_string(), expect, "[{i}]");
            assert_eq!(p.root(), root.root(), "[{i}]");
        }
        assert_eq!(Path::new("").to_string(), "[]");
        assert_eq!(Path::new("").child("x").to_string(), "[].x");
    }

    // TestMakeFuncs
    #[test]
    fn constructors_set_the_type() {
        let f = Path::new("f");
        let cases = [
            (Error::invalid(&f, "v", "d"), ErrorType::Invalid),
            (
                Error::not_supported::<&str>(&f, "v", &[]),
                ErrorType::NotSupported,
            ),
            (Error::duplicate(&f, "v"), ErrorType::Duplicate),
            (Error::not_found(&f, "v"), ErrorType::NotFound),
            (Error::required(&f, "d"), ErrorType::Required),
            (Error::internal(&f, "e"), ErrorType::Internal),
        ];
        for (err, kind) in cases {
            assert_eq!(err.kind, kind);
        }
    }

    // TestErrorUsefulMessage, with the whole messages upstream prints.
    #[test]
    fn messages_render_values_as_go_does() {
        let foo = Path::new("foo");
        let cases = [
            (
                Error::invalid(&foo, BadValue::Null, ""),
                r#"foo: Invalid value: "null""#,
            ),
            (
                Error::invalid(&foo, "bar", "deet"),
                r#"foo: Invalid value: "bar": deet"#,
            ),
            (
                Error::invalid(&foo, -1, "must be greater than or equal to 0"),
                "foo: Invalid value: -1: must be greater than or equal to 0",
            ),
            (Error::invalid(&foo, true, ""), "foo: Invalid value: true"),
            (Error::invalid(&foo, 0.5, "d"), "foo: Invalid value: 0.5: d"),
            (
                Error::invalid(&foo, 1e6, "d"),
                "foo: Invalid value: 1e+06: d",
            ),
            (
                Error::invalid(&foo, 1.5e-5, "d"),
                "foo: Invalid value: 1.5e-05: d",
            ),
            (
                Error::invalid(&foo, 123456.0, "d"),
                "foo: Invalid value: 123456: d",
            ),
            (Error::invalid(&foo, 1e20, ""), "foo: Invalid value: 1e+20"),
            (
                Error::invalid(&foo, 0.0001, ""),
                "foo: Invalid value: 0.0001",
            ),
            (
                Error::invalid(&foo, 100000.0, ""),
                "foo: Invalid value: 100000",
            ),
            (Error::invalid(&foo, 1.0, ""), "foo: Invalid value: 1"),
            (
                Error::invalid(&foo, "a\"b\n\u{0}é\u{a0}", "d"),
                r#"foo: Invalid value: "a\"b\n\x00é\u00a0": d"#,
            ),
            (
                Error::invalid(&foo, BadValue::Stringer("100m".into()), "d"),
                "foo: Invalid value: 100m: d",
            ),
            (
                Error::invalid(&foo, BadValue::go_string_slice(&["a", "b"]), "d"),
                r#"foo: Invalid value: []string{"a", "b"}: d"#,
            ),
            (
                Error::type_invalid(&foo, "x", "must be integer"),
                r#"foo: Invalid value: "x": must be integer"#,
            ),
            (Error::not_found(&foo, "x"), r#"foo: Not found: "x""#),
            (Error::duplicate(&foo, 3), "foo: Duplicate value: 3"),
            (Error::required(&foo, ""), "foo: Required value"),
            (Error::required(&foo, "d"), "foo: Required value: d"),
            (
                Error::forbidden(&foo, "not allowed"),
                "foo: Forbidden: not allowed",
            ),
            (
                Error::too_long(&foo, Some(63)),
                "foo: Too long: may not be more than 63 bytes",
            ),
            (
                Error::too_long(&foo, None),
                "foo: Too long: value is too long",
            ),
            (
                Error::too_many(&foo, Some(5), Some(3)),
                "foo: Too many: 5: must have at most 3 items",
            ),
            (
                Error::too_many(&foo, None, Some(3)),
                "foo: Too many: must have at most 3 items",
            ),
            (
                Error::too_many(&foo, Some(5), None),
                "foo: Too many: 5: has too many items",
            ),
            (Error::internal(&foo, "e"), "foo: Internal error: e"),
        ];
        for (err, expect) in cases {
            assert_eq!(err.to_string(), expect);
        }
    }

    // JSON values print as Go prints what encoding/json decodes into interface{}.
    #[test]
    fn json_bad_values() {
        let foo = Path::new("foo");
        let value = serde_json::json!({"b": [1, "x", null, 1.5, true], "a": {"k": 2}});
        assert_eq!(
            Error::invalid(&foo, &value, "d").to_string(),
            r#"foo: Invalid value: map[string]interface {}{"a":map[string]interface {}{"k":2}, "b":[]interface {}{1, "x", interface {}(nil), 1.5, true}}: d"#
        );
        assert_eq!(
            Error::invalid(&foo, &serde_json::json!(null), "").to_string(),
            r#"foo: Invalid value: "null""#
        );
        assert_eq!(
            Error::invalid(&foo, &serde_json::json!(2.5), "").to_string(),
            "foo: Invalid value: 2.5"
        );
        assert_eq!(
            Error::invalid(&foo, &serde_json::json!(7), "").to_string(),
            "foo: Invalid value: 7"
        );
    }

    // TestToAggregate
    #[test]
    fn aggregate_drops_duplicates() {
        let f = Path::new("f");
        let invalid = || Error::invalid(&f, "v", "d");
        let cases: [(Vec<Error>, usize); 4] = [
            (vec![], 0),
            (vec![invalid()], 1),
            (vec![invalid(), invalid()], 1),
            (vec![invalid(), Error::internal(&Path::new(""), "e")], 2),
        ];
        for (errors, count) in cases {
            let list = ErrorList(errors);
            let aggregate = list.to_aggregate();
            assert_eq!(
                aggregate.as_ref().map_or(0, |a| a.errors().len()),
                count,
                "{list:?}"
            );
            assert_eq!(aggregate.is_none(), list.is_empty());
        }
        let list = ErrorList(vec![invalid(), invalid()]);
        assert_eq!(list.to_string(), r#"f: Invalid value: "v": d"#);
        let list = ErrorList(vec![
            invalid(),
            Error::internal(&Path::new(""), "e"),
            invalid(),
        ]);
        assert_eq!(
            list.to_string(),
            r#"[f: Invalid value: "v": d, []: Internal error: e]"#
        );
        assert_eq!(ErrorList::new().to_string(), "");
    }

    // TestErrListFilter
    #[test]
    fn filter_by_type() {
        let list = ErrorList(vec![
            Error::invalid(&Path::new("test.field"), "", ""),
            Error::invalid(&Path::new("field.test"), "", ""),
            Error::duplicate(&Path::new("test"), "value"),
        ]);
        assert_eq!(list.filter_out_types(&[ErrorType::Duplicate]).len(), 2);
        assert_eq!(list.filter_out_types(&[ErrorType::Invalid]).len(), 1);
    }

    // TestNotSupported
    #[test]
    fn not_supported_lists_the_values() {
        let err = Error::not_supported(&Path::new("f"), "v", &["a", "b", "c"]);
        assert_eq!(
            err.error_body(),
            r#"Unsupported value: "v": supported values: "a", "b", "c""#
        );
        assert_eq!(
            Error::not_supported::<&str>(&Path::new("f"), "v", &[]).error_body(),
            r#"Unsupported value: "v""#
        );
    }

    #[test]
    fn type_names_are_status_cause_reasons() {
        assert_eq!(ErrorType::Invalid.as_str(), "FieldValueInvalid");
        assert_eq!(ErrorType::Internal.as_str(), "InternalError");
        assert_eq!(ErrorType::TypeInvalid.to_string(), "Invalid value");
    }
}
