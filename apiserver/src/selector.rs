//! Label and field selectors (§7.4, §7.5).
//!
//! List, watch and deletecollection narrow their results with `labelSelector=` and
//! `fieldSelector=`. Clients build these strings themselves (kubectl, client-go informers,
//! controllers) and show our error messages to people, so both grammars and every error wording
//! follow kubernetes/apimachinery (`pkg/labels/selector.go`, `pkg/fields/selector.go`,
//! `pkg/util/validation`) instead of a tidier grammar of our own. The label lexer and parser are
//! a port of the real recursive-descent parser, quirks included: `k in ()` means "k is present
//! with the empty value", `in` and `notin` are plain words where a value is expected, a NUL
//! character ends the text. Which fields a kind may select on is data (`kind_fields`), as in the
//! real per-kind field-label conversion functions.
//!
//! Invariant: parsing and matching never panic, whatever the text or the object.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

use crate::registry::Resource;
use crate::status::ApiError;

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// A parsed `labelSelector`: the AND of its requirements. No requirements selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LabelSelector {
    /// The requirements, stably sorted by key, as apimachinery sorts them after parsing.
    requirements: Vec<Requirement>,
}

/// One requirement of a label selector: a key, an operator and the values it compares with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    /// The label key.
    key: String,
    /// How the label relates to `values`.
    operator: Operator,
    /// The values: from the parser sorted and without duplicates (a Go `sets.String`); empty for
    /// `Exists` and `DoesNotExist`.
    values: Vec<String>,
}

/// A label selector operator (`selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    /// `k=v`.
    Equals,
    /// `k==v`.
    DoubleEquals,
    /// `k!=v`.
    NotEquals,
    /// `k in (a,b)`.
    In,
    /// `k notin (a,b)`.
    NotIn,
    /// `k`.
    Exists,
    /// `!k`.
    DoesNotExist,
    /// `k>5`.
    GreaterThan,
    /// `k<5`.
    LessThan,
}

impl LabelSelector {
    /// Parses `labelSelector=` text; empty or whitespace-only text selects everything. A
    /// malformed selector is a 400 BadRequest in apimachinery's words.
    pub(crate) fn parse(text: &str) -> Result<Self, ApiError> {
        let requirements = Parser::new(text).parse().map_err(ApiError::bad_request)?;
        Ok(Self::from_requirements(requirements))
    }

    /// A selector of `requirements`, sorted by key (stably, so equal keys keep their order).
    fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements }
    }

    /// True if the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's `metadata.labels` (may be absent/null) match.
    pub(crate) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Convenience: matches `object["metadata"]["labels"]`.
    pub(crate) fn matches_object(&self, object: &Value) -> bool {
        let labels = object
            .get("metadata")
            .and_then(|metadata| metadata.get("labels"))
            .and_then(Value::as_object);
        self.matches(labels)
    }
}

/// The apimachinery `Selector.String()` form: requirements joined by `,`.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl Requirement {
    /// Whether `labels` satisfy this requirement (`Requirement.Matches`).
    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let actual = labels.and_then(|l| l.get(&self.key)).map(label_text);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                actual.is_some_and(|v| self.has_value(&v))
            }
            Operator::NotEquals | Operator::NotIn => actual.is_none_or(|v| !self.has_value(&v)),
            Operator::Exists => actual.is_some(),
            Operator::DoesNotExist => actual.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = actual.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }

    /// True if `value` is one of the requirement's values.
    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }
}

/// The apimachinery `Requirement.String()` form (`!k`, `k=v`, `k in (a,b)` with sorted values).
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let operator = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(operator)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        if let [only] = self.values.as_slice() {
            f.write_str(only)?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label value as text: labels are strings, but a malformed object may hold anything; null
/// reads as empty (as Go decodes it into a `map[string]string`), other values as their JSON.
fn label_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(text) => Cow::Borrowed(text),
        Value::Null => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

/// The string form of a `metav1.LabelSelector` JSON object (matchLabels + matchExpressions with
/// operators In, NotIn, Exists, DoesNotExist), as `kubectl` and the Scale subresource's
/// `status.selector` show it, e.g. `app=web,tier in (a,b),!legacy`. Keys sorted the way
/// apimachinery's `metav1.LabelSelectorAsSelector(...).String()` sorts requirements (by key).
///
/// A missing or non-object selector (`labels.Nothing()`) and an empty one (`Everything()`) both
/// render as the empty string. Nothing is validated: expressions with an unknown operator or no
/// key are left out rather than failing, since the selector was validated when it was stored.
pub(crate) fn label_selector_string(selector: &Value) -> String {
    let Some(selector) = selector.as_object() else {
        return String::new();
    };
    let mut requirements = Vec::new();
    if let Some(match_labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in match_labels {
            requirements.push(Requirement {
                key: key.clone(),
                operator: Operator::Equals,
                values: vec![label_text(value).into_owned()],
            });
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for expression in expressions {
            let Some(key) = expression.get("key").and_then(Value::as_str) else {
                continue;
            };
            let operator = match expression.get("operator").and_then(Value::as_str) {
                Some("In") => Operator::In,
                Some("NotIn") => Operator::NotIn,
                Some("Exists") => Operator::Exists,
                Some("DoesNotExist") => Operator::DoesNotExist,
                _ => continue,
            };
            let values = if matches!(operator, Operator::In | Operator::NotIn) {
                expression
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|values| values.iter().map(|v| label_text(v).into_owned()).collect())
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            requirements.push(Requirement {
                key: key.to_owned(),
                operator,
                values,
            });
        }
    }
    LabelSelector::from_requirements(requirements).to_string()
}

// ---------------------------------------------------------------------------------------------
// Label selector lexer and parser (a port of apimachinery's `Lexer` and `Parser`)
// ---------------------------------------------------------------------------------------------

/// The operators a binary requirement may use, as the "expected:" part of an error lists them
/// (`strings.Join(binaryOperators, ", ")`).
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// A lexer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A scan error (unreachable with the real symbol table, kept for fidelity).
    Error,
    /// The end of the text (or a NUL character).
    EndOfString,
    /// `)`.
    ClosedPar,
    /// `,`.
    Comma,
    /// `!`.
    DoesNotExist,
    /// `==`.
    DoubleEquals,
    /// `=`.
    Equals,
    /// `>`.
    GreaterThan,
    /// A key or a value.
    Identifier,
    /// `in`.
    In,
    /// `<`.
    LessThan,
    /// `!=`.
    NotEquals,
    /// `notin`.
    NotIn,
    /// `(`.
    OpenPar,
}

/// A token and the text it was scanned from.
#[derive(Debug, Clone)]
struct Item {
    /// The token.
    token: Token,
    /// Its text (what error messages quote).
    literal: String,
}

/// The token a literal stands for, if any (`string2token`).
fn keyword(literal: &str) -> Option<Token> {
    Some(match literal {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// True for the characters the lexer skips between tokens.
fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// True for the characters that start an operator and end an identifier.
fn is_special_symbol(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits selector text into tokens. Works on characters where Go works on bytes; every
/// delimiter is ASCII, so the tokens are the same.
struct Lexer {
    /// The text.
    chars: Vec<char>,
    /// The next character to read.
    pos: usize,
}

impl Lexer {
    /// A lexer at the start of `text`.
    fn new(text: &str) -> Self {
        Lexer {
            chars: text.chars().collect(),
            pos: 0,
        }
    }

    /// The next character, or `None` at the end. A NUL reads as the end but is consumed, as Go's
    /// `read` returns the zero byte for both.
    fn read(&mut self) -> Option<char> {
        let c = *self.chars.get(self.pos)?;
        self.pos += 1;
        (c != '\0').then_some(c)
    }

    /// Steps back over the character just read (only ever called after a `Some`).
    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// The next token (`Lex`).
    fn lex(&mut self) -> Item {
        let mut next = self.read();
        while let Some(c) = next {
            if !is_whitespace(c) {
                break;
            }
            next = self.read();
        }
        match next {
            None => Item {
                token: Token::EndOfString,
                literal: String::new(),
            },
            Some(c) if is_special_symbol(c) => {
                self.unread();
                self.scan_special_symbol()
            }
            Some(_) => {
                self.unread();
                self.scan_identifier_or_keyword()
            }
        }
    }

    /// An identifier, or `in`/`notin` (`scanIDOrKeyword`).
    fn scan_identifier_or_keyword(&mut self) -> Item {
        let mut buffer = String::new();
        while let Some(c) = self.read() {
            if is_special_symbol(c) || is_whitespace(c) {
                self.unread();
                break;
            }
            buffer.push(c);
        }
        let token = keyword(&buffer).unwrap_or(Token::Identifier);
        Item {
            token,
            literal: buffer,
        }
    }

    /// The longest operator made of special symbols (`scanSpecialSymbol`).
    fn scan_special_symbol(&mut self) -> Item {
        let mut buffer = String::new();
        let mut last: Option<Item> = None;
        while let Some(c) = self.read() {
            if !is_special_symbol(c) {
                self.unread();
                break;
            }
            buffer.push(c);
            if let Some(token) = keyword(&buffer) {
                last = Some(Item {
                    token,
                    literal: buffer.clone(),
                });
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| Item {
            token: Token::Error,
            literal: format!("error expected: keyword found '{buffer}'"),
        })
    }
}

/// Where the parser is: `in` and `notin` are operators after a key but plain words where a
/// value (or a key) is expected (`ParserContext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// After a key, where an operator is expected.
    KeyAndOperator,
    /// Where a key or a value is expected.
    Values,
}

/// The recursive-descent label selector parser over the scanned tokens (`Parser`).
struct Parser {
    /// Every token of the text; the last is always `EndOfString`.
    items: Vec<Item>,
    /// The next token to consume.
    position: usize,
}

impl Parser {
    /// Scans all of `text` (`scan`).
    fn new(text: &str) -> Self {
        let mut lexer = Lexer::new(text);
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.token == Token::EndOfString;
            items.push(item);
            if end {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    /// The current token, read in `context`, without consuming it. Past the end it stays at
    /// `EndOfString`.
    fn lookahead(&self, context: Context) -> (Token, String) {
        let Some(item) = self.items.get(self.position).or_else(|| self.items.last()) else {
            return (Token::EndOfString, String::new());
        };
        let token = match (context, item.token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, token) => token,
        };
        (token, item.literal.clone())
    }

    /// The current token, read in `context`, consumed.
    fn consume(&mut self, context: Context) -> (Token, String) {
        let current = self.lookahead(context);
        self.position += 1;
        current
    }

    /// The whole selector (`parse`).
    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .parse_requirement()
                        .map_err(|error| format!("unable to parse requirement: {error}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{next_literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    /// One requirement (`parseRequirement`).
    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(operator @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return new_requirement(key, operator, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values.into_iter().collect())
    }

    /// An optional `!` and a key; the operator is `Exists` (or `DoesNotExist` after `!`) when
    /// the key ends the requirement (`parseKeyAndInferOperator`).
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Err(detail) = validate_label_key(&literal) {
            // The parser's field path is nil, which Go prints as "<nil>".
            return Err(field_invalid("<nil>", &literal, &detail));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma)
            && operator != Some(Operator::DoesNotExist)
        {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    /// A binary operator (`parseOperator`).
    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{literal}', expected: {BINARY_OPERATORS}")),
        })
    }

    /// A parenthesised value set; `()` is the set of the empty value (`parseValues`).
    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (token, _) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    /// Comma-separated, possibly empty values up to (not including) `)`
    /// (`parseIdentifiersList`).
    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{next_literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new()); // "(,"
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        values.insert(String::new()); // ",)"
                        return Ok(values);
                    }
                    if next == Token::Comma {
                        self.consume(Context::Values);
                        values.insert(String::new()); // ",,"
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// The one value of `=`, `==`, `!=`, `>`, `<`; nothing before `,` or the end is the empty
    /// value (`parseExactValue`).
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(BTreeSet::from([literal]))
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

/// A requirement whose values are checked as `labels.NewRequirement` checks them (the key was
/// checked by the parser). The error is the aggregate of every problem, in Go's wording.
fn new_requirement(
    key: String,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let mut errors = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                errors.push(field_invalid(
                    &format!("values[{i}]"),
                    value,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        if let Err(detail) = validate_label_value(value) {
            errors.push(field_invalid(
                &format!("values[{i}][{key}]"),
                value,
                &detail,
            ));
        }
    }
    if errors.is_empty() {
        Ok(Requirement {
            key,
            operator,
            values,
        })
    } else {
        Err(aggregate(errors))
    }
}

/// A `field.Invalid` error as Go prints it: `<path>: Invalid value: "<value>": <detail>`.
fn field_invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// Several errors as `utilerrors.Aggregate` prints them: one alone, more deduplicated in
/// brackets.
fn aggregate(errors: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::with_capacity(errors.len());
    for error in errors {
        if !unique.contains(&error) {
            unique.push(error);
        }
    }
    if let [only] = unique.as_slice() {
        only.clone()
    } else {
        format!("[{}]", unique.join(", "))
    }
}

/// `text` quoted as Go's `%q` quotes it: escapes for quotes, backslashes and unprintable
/// characters.
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if is_go_printable(c) => out.push(c),
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

/// An approximation of Go's `strconv.IsPrint` for non-ASCII-control characters: the space, and
/// anything that is not a control, a space other than ' ', or a common format character.
fn is_go_printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(
                c,
                '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                    | '\u{2060}'..='\u{2064}' | '\u{feff}'
            ))
}

// ---------------------------------------------------------------------------------------------
// Label key and value syntax (§3.6; apimachinery `IsQualifiedName`, `IsValidLabelValue`)
// ---------------------------------------------------------------------------------------------

/// The longest label name part (and label value): Kubernetes' `qualifiedNameMaxLength` and
/// `LabelValueMaxLength`.
const LABEL_NAME_MAX_LENGTH: usize = 63;

/// The longest key prefix: a DNS-1123 subdomain (`DNS1123SubdomainMaxLength`).
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// The qualified-name pattern, quoted in errors.
const QUALIFIED_NAME_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// What a qualified name must look like, in apimachinery's words.
const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character";

/// The label value pattern, quoted in errors.
const LABEL_VALUE_FORMAT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// What a label value must look like, in apimachinery's words.
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of \
     alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
     character";

/// The DNS-1123 subdomain pattern, quoted in errors.
const DNS1123_SUBDOMAIN_FORMAT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// What a DNS-1123 subdomain must look like, in apimachinery's (1.32) words.
const DNS1123_SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower \
     case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character";

/// apimachinery's `RegexError`: the message, examples and the pattern.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let mut text = message.to_owned();
    if examples.is_empty() {
        let _ = write!(text, " (regex used for validation is '{format}')");
        return text;
    }
    text.push_str(" (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            text.push_str(" or ");
        }
        let _ = write!(text, "'{example}', ");
    }
    let _ = write!(text, "regex used for validation is '{format}')");
    text
}

/// True if `name` matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_name_part(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// True if `text` matches the DNS-1123 subdomain pattern (dot-separated labels of lower-case
/// alphanumerics and '-', each starting and ending alphanumeric).
fn is_dns1123_subdomain_pattern(text: &str) -> bool {
    let is_edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    text.split('.').all(|label| {
        let bytes = label.as_bytes();
        bytes.first().is_some_and(is_edge)
            && bytes.last().is_some_and(is_edge)
            && bytes.iter().all(|b| is_edge(b) || *b == b'-')
    })
}

/// apimachinery's `IsDNS1123Subdomain`.
fn dns1123_subdomain_errors(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    if !is_dns1123_subdomain_pattern(text) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_MESSAGE,
            DNS1123_SUBDOMAIN_FORMAT,
            &["example.com"],
        ));
    }
    errors
}

/// apimachinery's `IsQualifiedName`, the errors joined with "; " as `validateLabelKey` joins
/// them.
fn validate_label_key(key: &str) -> Result<(), String> {
    let name_examples = ["MyName", "my.name", "123-abc"];
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                for error in dns1123_subdomain_errors(prefix) {
                    errors.push(format!("prefix part {error}"));
                }
            }
            *name
        }
        _ => {
            return Err(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MESSAGE,
                    QUALIFIED_NAME_FORMAT,
                    &name_examples
                )
            ));
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_NAME_MAX_LENGTH {
        errors.push(format!(
            "name part must be no more than {LABEL_NAME_MAX_LENGTH} characters"
        ));
    }
    if !is_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MESSAGE,
                QUALIFIED_NAME_FORMAT,
                &name_examples
            )
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// apimachinery's `IsValidLabelValue`, the errors joined with "; ".
fn validate_label_value(value: &str) -> Result<(), String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_NAME_MAX_LENGTH {
        errors.push(format!(
            "must be no more than {LABEL_NAME_MAX_LENGTH} characters"
        ));
    }
    if !(value.is_empty() || is_qualified_name_part(value)) {
        errors.push(regex_error(
            LABEL_VALUE_MESSAGE,
            LABEL_VALUE_FORMAT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

// ---------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------

/// A parsed `fieldSelector`: the AND of its terms, each on a field the kind supports. No terms
/// selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FieldSelector {
    /// The terms, in the order apimachinery keeps them (sorted by their text).
    terms: Vec<FieldTerm>,
}

/// One term: a field compared with a value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    /// The field's canonical name (`spec.host` becomes `spec.nodeName`).
    field: Cow<'static, str>,
    /// True for `=` and `==`, false for `!=`.
    equal: bool,
    /// The unescaped value.
    value: String,
    /// Where the field's value comes from in an object.
    source: FieldSource,
}

/// Where a selectable field's value comes from in an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldSource {
    /// The string form of the value at a JSON path; `absent` when missing or null (the Go
    /// zero value's string form: `""`, `"false"` for booleans, `"0"` for counts).
    Path {
        /// The object keys leading to the value.
        path: &'static [&'static str],
        /// What a missing value reads as.
        absent: &'static str,
    },
    /// Pod `status.podIP`: the first `status.podIPs[].ip`, else `status.podIP`.
    PodIp,
    /// Pod `status.podIPs`: every `status.podIPs[].ip` (or `status.podIP`); a term holds if any
    /// of them equals the value; a pod without addresses reads as `""`.
    PodIps,
    /// A custom resource's selectable field: the value at the term's own (dotted) path.
    Selectable,
    /// Event `source`: `source.component`, else `reportingComponent`.
    EventSource,
}

/// A field a kind may select on.
#[derive(Debug, Clone, Copy)]
struct FieldSpec {
    /// The name a selector uses.
    label: &'static str,
    /// The name it converts to (differs only for aliases).
    canonical: &'static str,
    /// Where its value comes from.
    source: FieldSource,
}

/// How a kind words an unsupported field (its field-label conversion function's error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnknownField {
    /// `runtime.DefaultMetaV1FieldSelectorConversion`, for kinds without a list of their own.
    Default,
    /// `field label not supported: <field>`, the core/v1 kinds' wording.
    NotSupported,
    /// `field label "<field>" not supported for batchv1.Job`.
    Job,
}

impl UnknownField {
    /// The error message for `field`.
    fn message(self, field: &str) -> String {
        match self {
            UnknownField::Default => format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                go_quote(field)
            ),
            UnknownField::NotSupported => format!("field label not supported: {field}"),
            UnknownField::Job => format!(
                "field label {} not supported for batchv1.Job",
                go_quote(field)
            ),
        }
    }
}

/// A field read from a plain path, absent reading as `""`.
const fn text_field(label: &'static str, path: &'static [&'static str]) -> FieldSpec {
    defaulted_field(label, path, "")
}

/// A field read from a plain path, absent reading as `absent`.
const fn defaulted_field(
    label: &'static str,
    path: &'static [&'static str],
    absent: &'static str,
) -> FieldSpec {
    FieldSpec {
        label,
        canonical: label,
        source: FieldSource::Path { path, absent },
    }
}

/// A field with a computed value.
const fn computed_field(label: &'static str, source: FieldSource) -> FieldSpec {
    FieldSpec {
        label,
        canonical: label,
        source,
    }
}

/// `metadata.name`, selectable on every kind.
const METADATA_NAME: FieldSpec = text_field("metadata.name", &["metadata", "name"]);

/// `metadata.namespace`.
const METADATA_NAMESPACE: FieldSpec = text_field("metadata.namespace", &["metadata", "namespace"]);

/// Kinds without a list of their own (`DefaultMetaV1FieldSelectorConversion`, which accepts
/// `metadata.namespace` even for cluster-scoped kinds; there it reads as `""`).
const DEFAULT_FIELDS: &[FieldSpec] = &[METADATA_NAME, METADATA_NAMESPACE];

/// core/v1 Pod.
const POD_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("spec.nodeName", &["spec", "nodeName"]),
    text_field("spec.restartPolicy", &["spec", "restartPolicy"]),
    text_field("spec.schedulerName", &["spec", "schedulerName"]),
    text_field("spec.serviceAccountName", &["spec", "serviceAccountName"]),
    defaulted_field("spec.hostNetwork", &["spec", "hostNetwork"], "false"),
    text_field("status.phase", &["status", "phase"]),
    computed_field("status.podIP", FieldSource::PodIp),
    computed_field("status.podIPs", FieldSource::PodIps),
    text_field("status.nominatedNodeName", &["status", "nominatedNodeName"]),
    // Legacy v1 clients send `spec.host`.
    FieldSpec {
        label: "spec.host",
        canonical: "spec.nodeName",
        source: FieldSource::Path {
            path: &["spec", "nodeName"],
            absent: "",
        },
    },
];

/// core/v1 Event.
const EVENT_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("involvedObject.kind", &["involvedObject", "kind"]),
    text_field("involvedObject.namespace", &["involvedObject", "namespace"]),
    text_field("involvedObject.name", &["involvedObject", "name"]),
    text_field("involvedObject.uid", &["involvedObject", "uid"]),
    text_field(
        "involvedObject.apiVersion",
        &["involvedObject", "apiVersion"],
    ),
    text_field(
        "involvedObject.resourceVersion",
        &["involvedObject", "resourceVersion"],
    ),
    text_field("involvedObject.fieldPath", &["involvedObject", "fieldPath"]),
    text_field("reason", &["reason"]),
    text_field("reportingComponent", &["reportingComponent"]),
    computed_field("source", FieldSource::EventSource),
    text_field("type", &["type"]),
];

/// core/v1 Secret.
const SECRET_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("type", &["type"]),
];

/// core/v1 Namespace (no `metadata.namespace`).
const NAMESPACE_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    text_field("status.phase", &["status", "phase"]),
];

/// core/v1 Node (no `metadata.namespace`).
const NODE_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    defaulted_field("spec.unschedulable", &["spec", "unschedulable"], "false"),
];

/// core/v1 Service.
const SERVICE_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("spec.clusterIP", &["spec", "clusterIP"]),
    text_field("spec.type", &["spec", "type"]),
];

/// core/v1 ReplicationController and apps/v1 ReplicaSet.
const REPLICAS_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    defaulted_field("status.replicas", &["status", "replicas"], "0"),
];

/// batch/v1 Job: `status.successful` is `status.succeeded`.
const JOB_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    defaulted_field("status.successful", &["status", "succeeded"], "0"),
];

/// certificates.k8s.io/v1 CertificateSigningRequest (no `metadata.namespace`).
const CSR_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    text_field("spec.signerName", &["spec", "signerName"]),
];

/// The fields `resource` may select on and how it words an unknown one (§7.5).
fn kind_fields(resource: &Resource) -> (&'static [FieldSpec], UnknownField) {
    use UnknownField::{Job, NotSupported};
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "pods") => (POD_FIELDS, NotSupported),
        ("", "events") => (EVENT_FIELDS, NotSupported),
        ("", "secrets") => (SECRET_FIELDS, NotSupported),
        ("", "namespaces") => (NAMESPACE_FIELDS, NotSupported),
        ("", "nodes") => (NODE_FIELDS, NotSupported),
        ("", "services") => (SERVICE_FIELDS, NotSupported),
        ("", "replicationcontrollers") | ("apps", "replicasets") => (REPLICAS_FIELDS, NotSupported),
        ("batch", "jobs") => (JOB_FIELDS, Job),
        ("certificates.k8s.io", "certificatesigningrequests") => (CSR_FIELDS, NotSupported),
        _ => (DEFAULT_FIELDS, UnknownField::Default),
    }
}

impl FieldSelector {
    /// Parses `fieldSelector=` text for `resource`, checking each field name against the kind's
    /// list (§7.5, chosen by group and plural: core pods, events, secrets, namespaces, nodes,
    /// services, replicationcontrollers; apps replicasets; batch jobs; certificates.k8s.io
    /// certificatesigningrequests; any other kind: `metadata.name` and `metadata.namespace`).
    /// Failures are 400 BadRequest in the real wording: `field label not supported: <f>` for
    /// kinds with their own list, `field label "<f>" not supported for batchv1.Job` for jobs,
    /// `"<f>" is not a known field selector: only "metadata.name", "metadata.namespace"` for the
    /// rest.
    ///
    /// As in apimachinery, every term is parsed (terms sorted by their text, empty ones skipped)
    /// before any field name is checked, so a syntax error wins over an unknown field. Nothing
    /// is trimmed: `a = b` names the field `a `. Kinds without their own list accept
    /// `metadata.namespace` even when cluster-scoped, as the real default conversion does (it
    /// then reads as `""`).
    pub(crate) fn parse(text: &str, resource: &Resource) -> Result<Self, ApiError> {
        let mut parts = split_terms(text);
        parts.sort_unstable();
        let mut parsed = Vec::with_capacity(parts.len());
        for part in parts.into_iter().filter(|part| !part.is_empty()) {
            let Some((field, equal, value)) = split_term(part) else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                )));
            };
            let value = unescape_value(value).map_err(ApiError::bad_request)?;
            parsed.push((field, equal, value));
        }
        let (fields, unknown) = kind_fields(resource);
        let mut terms = Vec::with_capacity(parsed.len());
        // A custom resource's definition may declare more (`selectableFields`).
        let selectable = resource
            .custom
            .as_ref()
            .map(|c| c.selectable_fields.as_slice())
            .unwrap_or_default();
        for (field, equal, value) in parsed {
            let term = match fields.iter().find(|spec| spec.label == field) {
                Some(spec) => FieldTerm {
                    field: Cow::Borrowed(spec.canonical),
                    equal,
                    value,
                    source: spec.source,
                },
                None if selectable.iter().any(|s| s == field) => FieldTerm {
                    field: Cow::Owned(field.to_owned()),
                    equal,
                    value,
                    source: FieldSource::Selectable,
                },
                None => return Err(ApiError::bad_request(unknown.message(field))),
            };
            terms.push(term);
        }
        Ok(FieldSelector { terms })
    }

    /// True if the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `object` satisfies every term. Values come from the object's JSON (`spec.nodeName`
    /// is `object.spec.nodeName`); booleans and numbers compare by their JSON text (`"true"`,
    /// `"3"`); missing or null fields read as `""`, except booleans and counts, which read as
    /// their Go zero value as the real server reads typed objects (`spec.hostNetwork`,
    /// `spec.unschedulable`: `"false"`; `status.replicas`, `status.successful`: `"0"`). Pod
    /// `status.podIP` is the first `status.podIPs[].ip`, `status.podIPs` holds if any address
    /// equals the value; Event `source` is `source.component`, else `reportingComponent`.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|term| term.matches(object))
    }

    /// The name, if the selector is exactly `metadata.name=<name>` (or `==`): a watch of one
    /// object.
    pub(crate) fn single_name(&self) -> Option<&str> {
        match self.terms.as_slice() {
            [term] if term.equal && term.field == "metadata.name" => Some(&term.value),
            _ => None,
        }
    }
}

impl FieldTerm {
    /// Whether `object` satisfies this term.
    fn matches(&self, object: &Value) -> bool {
        match self.source {
            FieldSource::PodIps => {
                let ips = pod_ips(object);
                let found = if ips.is_empty() {
                    self.value.is_empty()
                } else {
                    ips.contains(&self.value.as_str())
                };
                found == self.equal
            }
            FieldSource::Selectable => {
                let path: Vec<&str> = self.field.split('.').collect();
                let actual = field_text(object, &path).unwrap_or(Cow::Borrowed(""));
                (actual == self.value.as_str()) == self.equal
            }
            source => (read_field(object, source) == self.value) == self.equal,
        }
    }
}

/// The value of a single-valued field in `object`.
fn read_field(object: &Value, source: FieldSource) -> Cow<'_, str> {
    match source {
        FieldSource::Path { path, absent } => {
            field_text(object, path).unwrap_or(Cow::Borrowed(absent))
        }
        FieldSource::PodIp => pod_ips(object)
            .first()
            .map_or(Cow::Borrowed(""), |ip| Cow::Borrowed(*ip)),
        FieldSource::EventSource => field_text(object, &["source", "component"])
            .filter(|component| !component.is_empty())
            .or_else(|| field_text(object, &["reportingComponent"]))
            .unwrap_or(Cow::Borrowed("")),
        // Multi-valued; `FieldTerm::matches` handles it. Read as the first address here.
        FieldSource::PodIps => read_field(object, FieldSource::PodIp),
        // Read from the term's path by `FieldTerm::matches`.
        FieldSource::Selectable => Cow::Borrowed(""),
    }
}

/// The string form of the value at `path`, or `None` if it is missing or null.
fn field_text<'a>(object: &'a Value, path: &[&str]) -> Option<Cow<'a, str>> {
    let mut current = object;
    for key in path {
        current = current.get(*key)?;
    }
    match current {
        Value::Null => None,
        Value::String(text) => Some(Cow::Borrowed(text)),
        other => Some(Cow::Owned(other.to_string())),
    }
}

/// A pod's addresses: `status.podIPs[].ip`, or `status.podIP` when that list is empty (as the
/// v1 conversion fills one from the other).
fn pod_ips(object: &Value) -> Vec<&str> {
    let status = object.get("status");
    let listed: Vec<&str> = status
        .and_then(|s| s.get("podIPs"))
        .and_then(Value::as_array)
        .map(|ips| {
            ips.iter()
                .filter_map(|ip| ip.get("ip").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed;
    }
    status
        .and_then(|s| s.get("podIP"))
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .into_iter()
        .collect()
}

/// The comma-separated terms of a field selector; a backslash protects the next character, so
/// `\,` stays inside a term (with its backslash). Empty text has no terms (`splitTerms`).
fn split_terms(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in text.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&text[start..i]);
            start = i + 1;
        }
    }
    terms.push(&text[start..]);
    terms
}

/// A term split at the first operator (`!=`, then `==`, then `=` at each position): field,
/// whether it is an equality, and the still-escaped value (`splitTerm`).
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    const OPERATORS: [(&str, bool); 3] = [("!=", false), ("==", true), ("=", true)];
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (operator, equal) in OPERATORS {
            if let Some(value) = rest.strip_prefix(operator) {
                return Some((&term[..i], equal, value));
            }
        }
    }
    None
}

/// A field selector value with `\\`, `\,` and `\=` unescaped; any other escape, a trailing
/// backslash, or a bare `,`/`=` is an error in Go's words (the bare character printed as its
/// code point, as Go's `%v` prints a rune) (`UnescapeValue`).
fn unescape_value(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut in_slash = false;
    for c in value.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_owned());
    }
    Ok(out)
}

/// The label and field selectors of one list, watch or deletecollection request.
pub(crate) struct Selectors {
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Selectors {
    /// Parses `labelSelector` and `fieldSelector` from a request's query for `resource`.
    pub(crate) fn from_query(
        query: &crate::query::Query,
        resource: &Resource,
    ) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(query.get("labelSelector").unwrap_or(""))?,
            fields: FieldSelector::parse(query.get("fieldSelector").unwrap_or(""), resource)?,
        })
    }

    /// True when neither selector restricts anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether `object` is selected by both.
    pub(crate) fn matches(&self, object: &serde_json::Value) -> bool {
        self.labels.matches_object(object) && self.fields.matches(object)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::registry::Registry;

    /// The regex part of a label-name error, as the real server prints it.
    const NAME_PART_ERROR: &str = "name part must consist of alphanumeric characters, '-', '_' \
         or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
         'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    /// The regex part of a label-value error.
    const VALUE_ERROR: &str = "a valid label must be an empty string or consist of \
         alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
         character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
         '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn resource(group: &str, plural: &str) -> Arc<Resource> {
        Registry::builtin()
            .lookup(group, "v1", plural)
            .unwrap_or_else(|| panic!("{group}/{plural} is built in"))
    }

    /// A resource the registry does not (yet) serve, for kinds only the selector table knows.
    fn fake_resource(group: &str, plural: &str, namespaced: bool) -> Resource {
        let mut resource = (*resource("", "configmaps")).clone();
        resource.group = group.to_owned();
        resource.plural = plural.to_owned();
        resource.namespaced = namespaced;
        resource
    }

    fn labels(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("labels are an object")
    }

    fn selects(selector: &str, labels_json: Value) -> bool {
        LabelSelector::parse(selector)
            .unwrap_or_else(|e| panic!("{selector:?}: {}", e.message))
            .matches(Some(&labels(labels_json)))
    }

    fn label_error(selector: &str) -> String {
        match LabelSelector::parse(selector) {
            Ok(parsed) => panic!("{selector:?} parsed as {parsed:?}"),
            Err(error) => {
                assert_eq!(error.code.as_u16(), 400, "{selector:?}");
                assert_eq!(error.reason, "BadRequest", "{selector:?}");
                error.message
            }
        }
    }

    fn field_selects(selector: &str, resource: &Resource, object: &Value) -> bool {
        FieldSelector::parse(selector, resource)
            .unwrap_or_else(|e| panic!("{selector:?}: {}", e.message))
            .matches(object)
    }

    fn field_error(selector: &str, resource: &Resource) -> String {
        match FieldSelector::parse(selector, resource) {
            Ok(parsed) => panic!("{selector:?} parsed as {parsed:?}"),
            Err(error) => {
                assert_eq!(error.code.as_u16(), 400, "{selector:?}");
                assert_eq!(error.reason, "BadRequest", "{selector:?}");
                error.message
            }
        }
    }

    // ----- label selectors: operators and matching -----

    #[test]
    fn empty_and_whitespace_label_selectors_select_everything() {
        for text in ["", " ", " \t\r\n ", "\0app"] {
            let selector = LabelSelector::parse(text).unwrap();
            assert!(selector.is_empty(), "{text:?}");
            assert!(selector.matches(None));
            assert!(selector.matches(Some(&labels(json!({"a": "b"})))));
            assert_eq!(selector.to_string(), "");
        }
    }

    #[test]
    fn equality_operators_match_a_present_label_with_that_value() {
        for text in ["app=web", "app==web", " app = web ", "app ==web"] {
            assert!(selects(text, json!({"app": "web"})), "{text}");
            assert!(!selects(text, json!({"app": "db"})), "{text}");
            assert!(!selects(text, json!({})), "{text}");
        }
        assert!(!LabelSelector::parse("app=web").unwrap().is_empty());
    }

    #[test]
    fn an_empty_value_matches_only_a_present_empty_label() {
        for text in ["app=", "app==", "app= ,x!=y"] {
            assert!(selects(text, json!({"app": ""})), "{text}");
            assert!(!selects(text, json!({})), "{text}");
            assert!(!selects(text, json!({"app": "web"})), "{text}");
        }
        assert!(selects("app!=", json!({"app": "web"})));
        assert!(selects("app!=", json!({})));
        assert!(!selects("app!=", json!({"app": ""})));
    }

    #[test]
    fn not_equals_matches_an_absent_label_or_another_value() {
        assert!(selects("app!=web", json!({})));
        assert!(selects("app!=web", json!({"app": "db"})));
        assert!(!selects("app!=web", json!({"app": "web"})));
        assert!(selects(" app != web ", json!({"app": "db"})));
    }

    #[test]
    fn in_and_notin_test_membership_with_spaces_anywhere() {
        let text = "env in ( prod , staging )";
        assert!(selects(text, json!({"env": "prod"})));
        assert!(selects(text, json!({"env": "staging"})));
        assert!(!selects(text, json!({"env": "dev"})));
        assert!(!selects(text, json!({})));
        let text = "env notin (prod,staging)";
        assert!(selects(text, json!({"env": "dev"})));
        assert!(selects(text, json!({})));
        assert!(!selects(text, json!({"env": "prod"})));
        assert!(selects("env in(prod)", json!({"env": "prod"})));
        assert!(selects("env\tnotin\t(prod)", json!({"env": "dev"})));
    }

    #[test]
    fn a_bare_key_requires_presence_and_a_bang_requires_absence() {
        assert!(selects("app", json!({"app": ""})));
        assert!(selects("app", json!({"app": "web"})));
        assert!(!selects("app", json!({"other": "x"})));
        assert!(selects("!app", json!({"other": "x"})));
        assert!(!selects("!app", json!({"app": "web"})));
        assert!(selects(" ! app ", json!({})));
    }

    #[test]
    fn greater_and_less_than_compare_integers_and_never_match_other_values() {
        assert!(selects("replicas>5", json!({"replicas": "6"})));
        assert!(!selects("replicas>5", json!({"replicas": "5"})));
        assert!(selects("replicas<5", json!({"replicas": "-3"})));
        assert!(!selects("replicas<5", json!({"replicas": "5"})));
        assert!(selects("replicas > 5", json!({"replicas": "0010"})));
        assert!(!selects("replicas>5", json!({"replicas": "many"})));
        assert!(!selects("replicas<5", json!({"replicas": ""})));
        assert!(!selects("replicas<5", json!({})));
        assert!(!selects(
            "replicas>5",
            json!({"replicas": "99999999999999999999"})
        ));
    }

    #[test]
    fn commas_join_requirements_with_and() {
        let text = "app=web, tier in (front,back),!legacy,version>1";
        assert!(selects(
            text,
            json!({"app": "web", "tier": "front", "version": "2"})
        ));
        assert!(!selects(
            text,
            json!({"app": "web", "tier": "front", "version": "2", "legacy": "yes"})
        ));
        assert!(!selects(
            text,
            json!({"app": "web", "tier": "middle", "version": "2"})
        ));
        assert!(!selects(text, json!({"app": "web", "tier": "front"})));
    }

    #[test]
    fn absent_or_null_labels_satisfy_only_negative_requirements() {
        let positive = LabelSelector::parse("app").unwrap();
        let negative = LabelSelector::parse("!app,app!=x,app notin (x)").unwrap();
        for object in [
            json!({}),
            json!({"metadata": {}}),
            json!({"metadata": {"labels": null}}),
            json!({"metadata": "nonsense"}),
            json!(null),
            json!([1, 2]),
        ] {
            assert!(!positive.matches_object(&object), "{object}");
            assert!(negative.matches_object(&object), "{object}");
        }
        assert!(!positive.matches(None));
        assert!(negative.matches(None));
        let object = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(positive.matches_object(&object));
        assert!(!negative.matches_object(&object));
    }

    #[test]
    fn non_string_label_values_compare_by_their_text() {
        assert!(selects("app=", json!({"app": null})));
        assert!(selects("n=3", json!({"n": 3})));
        assert!(selects("n>2", json!({"n": 3})));
        assert!(selects("b=true", json!({"b": true})));
    }

    #[test]
    fn in_and_notin_are_plain_words_where_a_key_or_value_is_expected() {
        assert!(selects("in in (in, notin)", json!({"in": "notin"})));
        assert!(selects("notin notin (in)", json!({"notin": "x"})));
        assert!(selects("x=in", json!({"x": "in"})));
        assert!(selects("in", json!({"in": "a"})));
        assert!(selects("!notin", json!({})));
    }

    #[test]
    fn empty_parentheses_and_empty_list_items_stand_for_the_empty_value() {
        assert!(selects("k in ()", json!({"k": ""})));
        assert!(!selects("k in ()", json!({"k": "a"})));
        assert!(!selects("k in ()", json!({})));
        for text in ["k in (a,,b)", "k in (,a)", "k in (a,)", "k in (,)"] {
            assert!(selects(text, json!({"k": ""})), "{text}");
        }
        assert!(selects("k in (a,,b)", json!({"k": "b"})));
        assert_eq!(
            LabelSelector::parse("k in (b,,a,b)").unwrap().to_string(),
            "k in (,a,b)"
        );
    }

    #[test]
    fn a_nul_character_ends_a_token_and_at_a_token_start_ends_the_text() {
        assert!(selects("a\0,b", json!({"a": "1", "b": "2"})));
        // After an operator the NUL is swallowed with it, as Go's scanSpecialSymbol does.
        assert!(selects("a=1,\0b=2", json!({"a": "1", "b": "2"})));
        assert_eq!(
            label_error("a=1, \0b=2"),
            "found '', expected: identifier after ','"
        );
        assert_eq!(
            label_error("a\0b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
    }

    #[test]
    fn prefixed_keys_are_accepted() {
        assert!(selects(
            "app.kubernetes.io/name=web,example.com/Tier_1.x",
            json!({"app.kubernetes.io/name": "web", "example.com/Tier_1.x": ""})
        ));
        let name63 = "a".repeat(63);
        let prefix253 = format!(
            "{}.{}.{}.{}",
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(63),
            "e".repeat(61)
        );
        assert_eq!(prefix253.len(), 253);
        assert!(LabelSelector::parse(&format!("{prefix253}/{name63}")).is_ok());
        assert!(LabelSelector::parse(&format!("k={name63}")).is_ok());
    }

    #[test]
    fn display_sorts_requirements_by_key_and_set_values() {
        let selector =
            LabelSelector::parse("z==1,b notin (y,x),a in (c,b,a),!m,k,n>3,o<4,p!=q").unwrap();
        assert_eq!(
            selector.to_string(),
            "a in (a,b,c),b notin (x,y),k,!m,n>3,o<4,p!=q,z==1"
        );
    }

    // ----- label selectors: errors -----

    #[test]
    fn an_invalid_key_reports_the_real_validation_message() {
        assert_eq!(
            label_error("component+kube-apiserver"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"component+kube-apiserver\": \
                 {NAME_PART_ERROR}"
            )
        );
        assert_eq!(
            label_error("-app=web"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"-app\": {NAME_PART_ERROR}"
            )
        );
    }

    #[test]
    fn key_prefix_and_name_length_errors_follow_is_qualified_name() {
        let subdomain_error = "prefix part a lowercase RFC 1123 subdomain must consist of lower \
             case alphanumeric characters, '-' or '.', and must start and end with an \
             alphanumeric character (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        assert_eq!(
            label_error("Example.com/app"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"Example.com/app\": \
                 {subdomain_error}"
            )
        );
        assert_eq!(
            label_error("/app"),
            "unable to parse requirement: <nil>: Invalid value: \"/app\": prefix part must be \
             non-empty"
        );
        assert_eq!(
            label_error("example.com/"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"example.com/\": name part \
                 must be non-empty; {NAME_PART_ERROR}"
            )
        );
        let long = "a".repeat(64);
        assert_eq!(
            label_error(&long),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must \
                 be no more than 63 characters"
            )
        );
        let long_prefix = format!("{}/a", "a".repeat(254));
        assert_eq!(
            label_error(&long_prefix),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long_prefix}\": prefix \
                 part must be no more than 253 characters"
            )
        );
        assert_eq!(
            label_error("a/b/c"),
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name \
             must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
             with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
             used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an \
             optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
    }

    #[test]
    fn keys_are_quoted_like_go_in_errors() {
        assert_eq!(
            label_error("a\"b\\c"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a\\\"b\\\\c\": \
                 {NAME_PART_ERROR}"
            )
        );
        assert_eq!(
            label_error("é\u{1}"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"é\\x01\": {NAME_PART_ERROR}"
            )
        );
    }

    #[test]
    fn an_invalid_value_reports_its_index_and_key() {
        assert_eq!(
            label_error("app=-web"),
            format!(
                "unable to parse requirement: values[0][app]: Invalid value: \"-web\": \
                 {VALUE_ERROR}"
            )
        );
        // Set values are sorted before they are checked, so the index follows the sorted order.
        assert_eq!(
            label_error("app in (z, a+b)"),
            format!(
                "unable to parse requirement: values[0][app]: Invalid value: \"a+b\": \
                 {VALUE_ERROR}"
            )
        );
        assert_eq!(
            label_error("app in (z_, _a)"),
            format!(
                "unable to parse requirement: [values[0][app]: Invalid value: \"_a\": \
                 {VALUE_ERROR}, values[1][app]: Invalid value: \"z_\": {VALUE_ERROR}]"
            )
        );
    }

    #[test]
    fn a_long_value_reports_its_length() {
        let long = "v".repeat(64);
        assert_eq!(
            label_error(&format!("k={long}")),
            format!(
                "unable to parse requirement: values[0][k]: Invalid value: \"{long}\": must be \
                 no more than 63 characters"
            )
        );
    }

    #[test]
    fn a_non_integer_comparison_value_is_rejected() {
        assert_eq!(
            label_error("k>abc"),
            "unable to parse requirement: values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' \
             operators, the value must be an integer"
        );
        assert_eq!(
            label_error("k<"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' \
             operators, the value must be an integer"
        );
        // An integer that is not a valid label value fails only the label check.
        assert_eq!(
            label_error("k>-5"),
            format!(
                "unable to parse requirement: values[0][k]: Invalid value: \"-5\": {VALUE_ERROR}"
            )
        );
        assert_eq!(
            label_error("k>-x"),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"-x\": for 'Gt', 'Lt' \
                 operators, the value must be an integer, values[0][k]: Invalid value: \"-x\": \
                 {VALUE_ERROR}]"
            )
        );
    }

    #[test]
    fn parser_errors_use_apimachinery_wording() {
        let cases = [
            (
                "env in prod",
                "unable to parse requirement: found 'prod' expected: '('",
            ),
            ("a=x b", "found 'b', expected: ',' or 'end of string'"),
            (
                ",a",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "=a",
                "found '=', expected: !, identifier, or 'end of string'",
            ),
            ("a,", "found '', expected: identifier after ','"),
            ("a,,b", "found ',', expected: identifier after ','"),
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "a (b)",
                "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "!!a",
                "unable to parse requirement: found '!', expected: identifier",
            ),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            (
                "a=(b)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "a=!b",
                "unable to parse requirement: found '!', expected: identifier",
            ),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "a in (b c)",
                "unable to parse requirement: found 'c', expected: ',' or ')'",
            ),
            (
                "a in (b,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            (
                "a in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "a in",
                "unable to parse requirement: found '' expected: '('",
            ),
            (
                "a===b",
                "unable to parse requirement: found '=', expected: identifier",
            ),
            (
                "a)",
                "unable to parse requirement: found ')', expected: in, notin, =, ==, !=, gt, lt",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(label_error(text), message, "{text:?}");
        }
    }

    // ----- label_selector_string -----

    #[test]
    fn label_selector_string_renders_labels_and_expressions_sorted_by_key() {
        let selector = json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "env", "operator": "In", "values": ["prod", "canary"]},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "gpu", "operator": "Exists"},
            ],
        });
        assert_eq!(
            label_selector_string(&selector),
            "app=shop,env in (canary,prod),gpu,!legacy,tier=web,zone notin (b)"
        );
        assert_eq!(
            label_selector_string(&json!({"matchLabels": {"app": "web"}})),
            "app=web"
        );
    }

    #[test]
    fn label_selector_string_of_a_missing_or_empty_selector_is_empty() {
        for selector in [
            json!(null),
            json!({}),
            json!({"matchLabels": {}, "matchExpressions": []}),
            json!("app=web"),
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            json!({"matchExpressions": [{"operator": "Exists"}, 7]}),
        ] {
            assert_eq!(label_selector_string(&selector), "", "{selector}");
        }
    }

    #[test]
    fn label_selector_string_round_trips_through_the_parser() {
        let selector = json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a", "b"]}],
        });
        let text = label_selector_string(&selector);
        let parsed = LabelSelector::parse(&text).unwrap();
        assert_eq!(parsed.to_string(), text);
        assert!(parsed.matches(Some(&labels(json!({"app": "web", "env": "c"})))));
        assert!(!parsed.matches(Some(&labels(json!({"app": "web", "env": "a"})))));
    }

    // ----- field selectors: grammar -----

    #[test]
    fn an_empty_field_selector_selects_everything() {
        let pods = resource("", "pods");
        for text in ["", ",", ",,"] {
            let selector = FieldSelector::parse(text, &pods).unwrap();
            assert!(selector.is_empty(), "{text:?}");
            assert!(selector.matches(&json!({})));
            assert_eq!(selector.single_name(), None);
        }
    }

    #[test]
    fn field_terms_compare_strings_with_equals_double_equals_and_not_equals() {
        let pods = resource("", "pods");
        let pod = json!({
            "metadata": {"name": "web-1", "namespace": "prod"},
            "status": {"phase": "Running"},
        });
        assert!(field_selects("status.phase=Running", &pods, &pod));
        assert!(field_selects("status.phase==Running", &pods, &pod));
        assert!(!field_selects("status.phase!=Running", &pods, &pod));
        assert!(field_selects("status.phase!=Pending", &pods, &pod));
        assert!(field_selects(
            "metadata.name=web-1,metadata.namespace=prod",
            &pods,
            &pod
        ));
        assert!(!field_selects(
            "metadata.name=web-1,metadata.namespace=dev",
            &pods,
            &pod
        ));
        assert!(field_selects("status.phase=Running,,", &pods, &pod));
        // The first operator wins: the value of `a=!b` is `!b`.
        let named = json!({"metadata": {"name": "!x"}});
        assert!(field_selects("metadata.name=!x", &pods, &named));
        assert!(
            !FieldSelector::parse("metadata.name=web-1", &pods)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn backslash_escapes_commas_equals_and_backslashes_in_values() {
        let configmaps = resource("", "configmaps");
        let object = json!({"metadata": {"name": "a,b=c\\d"}});
        assert!(field_selects(
            "metadata.name=a\\,b\\=c\\\\d",
            &configmaps,
            &object
        ));
        assert!(!field_selects(
            "metadata.name!=a\\,b\\=c\\\\d",
            &configmaps,
            &object
        ));
        let selector = FieldSelector::parse("metadata.name=x\\,y", &configmaps).unwrap();
        assert_eq!(selector.single_name(), Some("x,y"));
    }

    #[test]
    fn bad_escapes_and_bare_special_characters_in_values_are_rejected() {
        let configmaps = resource("", "configmaps");
        assert_eq!(
            field_error("metadata.name=a\\x", &configmaps),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            field_error("metadata.name=a\\", &configmaps),
            "invalid field selector: invalid escape sequence: \\"
        );
        assert_eq!(
            field_error("metadata.name=a=b", &configmaps),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            field_error("metadata.name!==b", &configmaps),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn an_unparseable_term_is_reported_with_the_whole_selector() {
        let pods = resource("", "pods");
        assert_eq!(
            field_error("foo", &pods),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        assert_eq!(
            field_error("metadata.name=a,foo", &pods),
            "invalid selector: 'metadata.name=a,foo'; can't understand 'foo'"
        );
        // Terms are sorted before they are parsed, so the first bad one in sorted order is named.
        assert_eq!(
            field_error("zzz,aaa", &pods),
            "invalid selector: 'zzz,aaa'; can't understand 'aaa'"
        );
        assert_eq!(
            field_error(" ", &pods),
            "invalid selector: ' '; can't understand ' '"
        );
        // Syntax is checked for every term before any field name is.
        assert_eq!(
            field_error("spec.foo=1,zzz", &pods),
            "invalid selector: 'spec.foo=1,zzz'; can't understand 'zzz'"
        );
    }

    #[test]
    fn spaces_are_part_of_field_names_and_values() {
        let configmaps = resource("", "configmaps");
        assert_eq!(
            field_error("metadata.name = a", &configmaps),
            "\"metadata.name \" is not a known field selector: only \"metadata.name\", \
             \"metadata.namespace\""
        );
        let object = json!({"metadata": {"name": " a"}});
        assert!(field_selects("metadata.name= a", &configmaps, &object));
    }

    // ----- field selectors: fields per kind -----

    #[test]
    fn an_unknown_field_on_a_kind_with_its_own_list_is_not_supported() {
        let cases = [
            (resource("", "pods"), "spec.foo"),
            (resource("", "events"), "spec.foo"),
            (resource("", "secrets"), "data"),
            (resource("", "services"), "spec.ports"),
            (resource("", "replicationcontrollers"), "spec.replicas"),
            (resource("apps", "replicasets"), "spec.replicas"),
            (resource("", "nodes"), "metadata.namespace"),
            (resource("", "namespaces"), "metadata.namespace"),
        ];
        for (resource, field) in cases {
            assert_eq!(
                field_error(&format!("{field}=x"), &resource),
                format!("field label not supported: {field}"),
                "{}",
                resource.plural
            );
        }
        let csr = fake_resource("certificates.k8s.io", "certificatesigningrequests", false);
        assert_eq!(
            field_error("metadata.namespace=x", &csr),
            "field label not supported: metadata.namespace"
        );
    }

    #[test]
    fn an_unknown_field_on_a_kind_without_a_list_names_the_metadata_fields() {
        for (group, plural) in [
            ("", "configmaps"),
            ("apps", "deployments"),
            ("events.k8s.io", "events"),
        ] {
            assert_eq!(
                field_error("spec.foo=x", &resource(group, plural)),
                "\"spec.foo\" is not a known field selector: only \"metadata.name\", \
                 \"metadata.namespace\"",
                "{plural}"
            );
        }
    }

    #[test]
    fn an_unknown_job_field_uses_the_batch_wording() {
        assert_eq!(
            field_error("status.succeeded=1", &resource("batch", "jobs")),
            "field label \"status.succeeded\" not supported for batchv1.Job"
        );
    }

    #[test]
    fn every_kind_accepts_its_documented_fields() {
        let cases: [(&str, &str, &[&str]); 11] = [
            (
                "",
                "pods",
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "spec.hostNetwork",
                    "status.phase",
                    "status.podIP",
                    "status.podIPs",
                    "status.nominatedNodeName",
                    "spec.host",
                ],
            ),
            (
                "",
                "events",
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "involvedObject.kind",
                    "involvedObject.namespace",
                    "involvedObject.name",
                    "involvedObject.uid",
                    "involvedObject.apiVersion",
                    "involvedObject.resourceVersion",
                    "involvedObject.fieldPath",
                    "reason",
                    "reportingComponent",
                    "source",
                    "type",
                ],
            ),
            (
                "",
                "secrets",
                &["metadata.name", "metadata.namespace", "type"],
            ),
            ("", "namespaces", &["metadata.name", "status.phase"]),
            ("", "nodes", &["metadata.name", "spec.unschedulable"]),
            (
                "",
                "services",
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "spec.clusterIP",
                    "spec.type",
                ],
            ),
            (
                "",
                "replicationcontrollers",
                &["metadata.name", "metadata.namespace", "status.replicas"],
            ),
            (
                "apps",
                "replicasets",
                &["metadata.name", "metadata.namespace", "status.replicas"],
            ),
            (
                "batch",
                "jobs",
                &["metadata.name", "metadata.namespace", "status.successful"],
            ),
            ("", "configmaps", &["metadata.name", "metadata.namespace"]),
            // The default conversion accepts metadata.namespace on cluster-scoped kinds too.
            (
                "rbac.authorization.k8s.io",
                "clusterroles",
                &["metadata.name", "metadata.namespace"],
            ),
        ];
        for (group, plural, fields) in cases {
            let resource = resource(group, plural);
            for field in fields {
                for operator in ["=", "==", "!="] {
                    let text = format!("{field}{operator}x");
                    assert!(
                        FieldSelector::parse(&text, &resource).is_ok(),
                        "{plural}: {text}"
                    );
                }
            }
        }
        let csr = fake_resource("certificates.k8s.io", "certificatesigningrequests", false);
        let selector = FieldSelector::parse("spec.signerName=example.com/x", &csr).unwrap();
        assert!(selector.matches(&json!({"spec": {"signerName": "example.com/x"}})));
    }

    #[test]
    fn absent_fields_compare_as_their_zero_value() {
        let pods = resource("", "pods");
        let bare = json!({"metadata": {"name": "p"}});
        assert!(field_selects("spec.nodeName=", &pods, &bare));
        assert!(!field_selects("spec.nodeName!=", &pods, &bare));
        assert!(field_selects("status.phase=,status.podIP=", &pods, &bare));
        assert!(field_selects("spec.hostNetwork=false", &pods, &bare));
        let null_node = json!({"spec": {"nodeName": null}});
        assert!(field_selects("spec.nodeName=", &pods, &null_node));
        let nodes = resource("", "nodes");
        assert!(field_selects(
            "spec.unschedulable=false",
            &nodes,
            &json!({})
        ));
        assert!(field_selects(
            "spec.unschedulable=true",
            &nodes,
            &json!({"spec": {"unschedulable": true}})
        ));
        let rcs = resource("", "replicationcontrollers");
        assert!(field_selects("status.replicas=0", &rcs, &json!({})));
        assert!(field_selects(
            "status.replicas=3",
            &rcs,
            &json!({"status": {"replicas": 3}})
        ));
        let jobs = resource("batch", "jobs");
        assert!(field_selects("status.successful=0", &jobs, &json!({})));
        assert!(field_selects(
            "status.successful=2",
            &jobs,
            &json!({"status": {"succeeded": 2}})
        ));
        let secrets = resource("", "secrets");
        assert!(field_selects(
            "type=Opaque",
            &secrets,
            &json!({"type": "Opaque"})
        ));
        assert!(field_selects("type=", &secrets, &json!({})));
        // Malformed objects never panic; they just read as absent.
        for object in [
            json!(null),
            json!("pod"),
            json!({"spec": 5}),
            json!({"status": {"podIPs": "x"}}),
        ] {
            assert!(
                field_selects("spec.nodeName=,status.podIPs=", &pods, &object),
                "{object}"
            );
        }
    }

    #[test]
    fn spec_host_is_an_alias_of_spec_node_name() {
        let pods = resource("", "pods");
        let pod = json!({"spec": {"nodeName": "node-1"}});
        assert!(field_selects("spec.host=node-1", &pods, &pod));
        assert!(!field_selects("spec.host=node-2", &pods, &pod));
        let selector = FieldSelector::parse("spec.host=node-1", &pods).unwrap();
        assert_eq!(selector.terms[0].field, "spec.nodeName");
    }

    #[test]
    fn pod_addresses_match_the_first_or_any_listed_ip() {
        let pods = resource("", "pods");
        let pod = json!({"status": {
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
        }});
        assert!(field_selects("status.podIP=10.0.0.1", &pods, &pod));
        assert!(!field_selects("status.podIP=fd00::1", &pods, &pod));
        assert!(field_selects("status.podIPs=fd00::1", &pods, &pod));
        assert!(field_selects("status.podIPs=10.0.0.1", &pods, &pod));
        assert!(!field_selects("status.podIPs=10.0.0.2", &pods, &pod));
        assert!(field_selects("status.podIPs!=10.0.0.2", &pods, &pod));
        assert!(!field_selects("status.podIPs!=fd00::1", &pods, &pod));
        let only_pod_ip = json!({"status": {"podIP": "10.0.0.9"}});
        assert!(field_selects("status.podIP=10.0.0.9", &pods, &only_pod_ip));
        assert!(field_selects("status.podIPs=10.0.0.9", &pods, &only_pod_ip));
        let no_ips = json!({"status": {}});
        assert!(field_selects("status.podIPs=", &pods, &no_ips));
        assert!(!field_selects("status.podIPs=10.0.0.9", &pods, &no_ips));
    }

    #[test]
    fn event_fields_read_the_involved_object_and_the_source_component() {
        let events = resource("", "events");
        let event = json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {
                "kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u-1",
                "apiVersion": "v1", "resourceVersion": "42", "fieldPath": "spec.containers{app}",
            },
            "reason": "Scheduled",
            "type": "Normal",
            "source": {"component": "default-scheduler"},
            "reportingComponent": "scheduler",
        });
        assert!(field_selects(
            "involvedObject.kind=Pod,involvedObject.name=web-1,involvedObject.namespace=default,\
             involvedObject.uid=u-1,involvedObject.apiVersion=v1,\
             involvedObject.resourceVersion=42,involvedObject.fieldPath=spec.containers{app}",
            &events,
            &event
        ));
        assert!(field_selects(
            "reason=Scheduled,type=Normal",
            &events,
            &event
        ));
        assert!(field_selects("source=default-scheduler", &events, &event));
        assert!(field_selects(
            "reportingComponent=scheduler",
            &events,
            &event
        ));
        assert!(!field_selects("involvedObject.kind=Node", &events, &event));
        let without_source = json!({"reportingComponent": "kubelet", "source": {"component": ""}});
        assert!(field_selects("source=kubelet", &events, &without_source));
        assert!(field_selects("source=", &events, &json!({})));
    }

    #[test]
    fn cluster_scoped_objects_have_an_empty_namespace() {
        let clusterroles = resource("rbac.authorization.k8s.io", "clusterroles");
        let role = json!({"metadata": {"name": "admin"}});
        assert!(field_selects("metadata.namespace=", &clusterroles, &role));
        assert!(!field_selects(
            "metadata.namespace=default",
            &clusterroles,
            &role
        ));
        assert!(field_selects("metadata.name=admin", &clusterroles, &role));
    }

    #[test]
    fn a_single_name_is_offered_only_for_a_lone_name_equality() {
        let pods = resource("", "pods");
        let name = |text: &str| {
            FieldSelector::parse(text, &pods)
                .unwrap()
                .single_name()
                .map(str::to_owned)
        };
        assert_eq!(name("metadata.name=web"), Some("web".to_owned()));
        assert_eq!(name("metadata.name==web"), Some("web".to_owned()));
        assert_eq!(name(",metadata.name=web,"), Some("web".to_owned()));
        assert_eq!(name("metadata.name="), Some(String::new()));
        assert_eq!(name("metadata.name!=web"), None);
        assert_eq!(name("metadata.namespace=web"), None);
        assert_eq!(name("metadata.name=web,status.phase=Running"), None);
        assert_eq!(name(""), None);
    }

    // ----- robustness -----

    #[test]
    fn go_quoting_escapes_what_go_escapes() {
        assert_eq!(go_quote("plain"), "\"plain\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(
            go_quote("\n\t\r\u{7}\u{8}\u{b}\u{c}"),
            "\"\\n\\t\\r\\a\\b\\v\\f\""
        );
        assert_eq!(go_quote("\u{0}\u{7f}"), "\"\\x00\\x7f\"");
        assert_eq!(go_quote("é日本"), "\"é日本\"");
        assert_eq!(
            go_quote("\u{a0}\u{85}\u{feff}"),
            "\"\\u00a0\\u0085\\ufeff\""
        );
    }

    #[test]
    fn random_input_never_panics_and_parsed_label_selectors_round_trip() {
        let seed = fastrand::u64(..);
        println!("selector fuzz seed {seed}");
        let mut rng = fastrand::Rng::with_seed(seed);
        let pieces = [
            "a",
            "b",
            "k",
            "app",
            "Z9",
            "0",
            "5",
            "-",
            "_",
            ".",
            "/",
            "example.com/",
            "=",
            "==",
            "!",
            "!=",
            "(",
            ")",
            ",",
            "<",
            ">",
            " ",
            "\t",
            "\\",
            "\\,",
            "\\=",
            "in",
            " in ",
            "notin",
            " notin ",
            "é",
            "\0",
            "\"",
            "+",
            "metadata.name",
            "spec.nodeName",
            "status.podIPs",
            "source",
            "spec.host",
        ];
        let kinds = [
            resource("", "pods"),
            resource("", "events"),
            resource("", "nodes"),
            resource("batch", "jobs"),
            resource("", "configmaps"),
        ];
        let objects = [
            json!({}),
            json!(null),
            json!({"metadata": {"name": "a", "labels": {"a": "5", "k": "", "app": "b"}}}),
            json!({
                "metadata": {"labels": [1]},
                "spec": {"nodeName": 3},
                "status": {"podIPs": [{"ip": 1}, "x"]},
            }),
        ];
        for _ in 0..600 {
            let length = rng.usize(0..16);
            let text: String = (0..length)
                .map(|_| pieces[rng.usize(0..pieces.len())])
                .collect();
            if let Ok(selector) = LabelSelector::parse(&text) {
                let shown = selector.to_string();
                let reparsed = LabelSelector::parse(&shown)
                    .unwrap_or_else(|e| panic!("{text:?} shown as {shown:?}: {}", e.message));
                assert_eq!(reparsed, selector, "{text:?} shown as {shown:?}");
                for object in &objects {
                    let _ = selector.matches_object(object);
                }
            }
            for kind in &kinds {
                if let Ok(selector) = FieldSelector::parse(&text, kind) {
                    for object in &objects {
                        let _ = selector.matches(object);
                    }
                    let _ = selector.single_name();
                }
            }
            let _ = label_selector_string(&json!({
                "matchLabels": {text.clone(): text.clone(), "n": 1},
                "matchExpressions": [
                    {"key": text.clone(), "operator": "In", "values": [text.clone(), null]},
                    {"key": 5, "operator": "NotIn"},
                    {"key": "x", "operator": "NotIn", "values": "y"},
                ],
            }));
        }
    }
}
