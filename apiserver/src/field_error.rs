//! One field's validation error as the 422 `Status` carries it (a cause: field, reason,
//! text), on its own below every module that reports or collects them, so that the
//! validators that sit under the registry (CRD CEL rules: `cel_rules`) can use it without
//! depending on the modules that build the `Status` (`meta`, `status`).

use kubemock_apimachinery::field;

/// A field error, for `meta::invalid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// The field path (`metadata.name`).
    pub(crate) field: String,
    /// Cause type (`FieldValueInvalid`).
    pub(crate) reason: &'static str,
    /// The text after the field path (`Invalid value: "x": ...`).
    pub(crate) detail: String,
}

impl From<field::Error> for FieldError {
    /// A field error as upstream words it (`kubemock_apimachinery::field`).
    fn from(error: field::Error) -> Self {
        FieldError {
            reason: error.kind.as_str(),
            detail: error.error_body(),
            field: error.field,
        }
    }
}
