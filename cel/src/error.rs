//! The crate's errors: a rule that does not compile (with cel-go's issue text, so a refused
//! CRD reads as upstream's) and a rule that fails while it runs (cel-go's error strings,
//! which the CRD and policy layers wrap in upstream's sentences).

/// The message cel-go gives when a program's actual cost passes its limit.
pub const COST_LIMIT_MESSAGE: &str = "operation cancelled: actual cost limit exceeded";

/// A runtime error, as cel-go's `types.Err` prints it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// cel-go's text (`no such key: foo`, `division by zero`, ...).
    pub message: String,
    /// Whether evaluation stopped because the cost limit was passed.
    pub cost_exceeded: bool,
}

impl EvalError {
    /// An error with cel-go's text.
    pub fn new(message: impl Into<String>) -> EvalError {
        EvalError {
            message: message.into(),
            cost_exceeded: false,
        }
    }

    /// The cost limit was passed.
    pub fn cost_limit() -> EvalError {
        EvalError {
            message: COST_LIMIT_MESSAGE.to_string(),
            cost_exceeded: true,
        }
    }
}

/// Compile errors: cel-go's issues, each with its position, printed as `Issues.String()` does
/// (`ERROR: <input>:1:6: undefined field 'foo'` then the source line and a caret).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{text}")]
pub struct CompileError {
    /// The issues as cel-go prints them, joined by newlines.
    pub text: String,
    /// The bare messages, without position (what upstream's library tests match).
    pub messages: Vec<String>,
}

/// One issue at a byte offset of `source`, in cel-go's form.
pub(crate) fn format_issue(source: &str, offset: usize, message: &str) -> String {
    let mut line_no = 1;
    let mut line_start = 0;
    for (i, c) in source.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line_no += 1;
            line_start = i + 1;
        }
    }
    let line_end = source[line_start..]
        .find('\n')
        .map_or(source.len(), |e| line_start + e);
    let line = &source[line_start..line_end];
    let column = source[line_start..offset.min(source.len()).max(line_start)]
        .chars()
        .count();
    let mut text = format!("ERROR: <input>:{line_no}:{}: {message}", column + 1);
    text.push_str("\n | ");
    text.push_str(line);
    text.push_str("\n | ");
    text.push_str(&".".repeat(column));
    text.push('^');
    text
}
