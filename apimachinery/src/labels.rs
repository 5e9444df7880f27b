//! Label selectors as `k8s.io/apimachinery/pkg/labels` has them, for everyone who needs one:
//! the API server filters lists and watches with them, the client's listers and the
//! controllers select the objects they own with them. Clients build selector strings
//! themselves (kubectl, informers) and show the errors to people, so the grammar and every
//! wording follow upstream's `selector.go` instead of a tidier grammar of our own: the lexer and
//! parser are a port of upstream's recursive-descent parser, quirks included (`k in ()` means
//! "k is present with the empty value", `in` and `notin` are plain words where a value is
//! expected, a NUL character ends the text).
//!
//! Invariant: parsing and matching never panic, whatever the text or the labels.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as OpenApiLabelSelector;
use serde_json::{Map, Value};

use crate::field;
use crate::validation;

/// Labels a selector can be matched against: a key's value, if the label is present.
pub trait Labels {
    /// The value of label `key`, if present.
    fn label(&self, key: &str) -> Option<Cow<'_, str>>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get(key).map(|v| Cow::Borrowed(v.as_str()))
    }
}

impl Labels for HashMap<String, String> {
    fn label(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get(key).map(|v| Cow::Borrowed(v.as_str()))
    }
}

/// An object's `metadata.labels` as JSON: a malformed object may hold anything there; null reads
/// as empty (as Go decodes it into a `map[string]string`), other values as their JSON.
impl Labels for Map<String, Value> {
    fn label(&self, key: &str) -> Option<Cow<'_, str>> {
        self.get(key).map(label_text)
    }
}

/// A parsed `labelSelector`: the AND of its requirements. No requirements selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    /// The requirements, stably sorted by key, as apimachinery sorts them after parsing.
    requirements: Vec<Requirement>,
    /// `labels.Nothing()`: matches no object (a missing selector).
    nothing: bool,
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

impl Selector {
    /// Parses selector text (`labels.Parse`); empty or whitespace-only text selects
    /// everything. The error is upstream's message.
    ///
    /// ```
    /// use kubemock_apimachinery::labels::Selector;
    /// let selector = Selector::parse("app in (a,b),!legacy").unwrap();
    /// assert_eq!(selector.to_string(), "app in (a,b),!legacy");
    /// assert!(Selector::parse("app in a").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let requirements = Parser::new(text).parse()?;
        Ok(Self::from_requirements(requirements))
    }

    /// The selector that selects everything (`labels.Everything`).
    pub fn everything() -> Self {
        Selector::default()
    }

    /// The selector of a plain label map, as a Service's selector, a pod's `nodeSelector` and
    /// a ReplicationController's selector are (`labels.SelectorFromSet`, built
    /// `AsSelectorPreValidated`: the keys and values are not checked): every label equal. An
    /// empty map selects everything.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubemock_apimachinery::labels::Selector;
    /// let set = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    /// let selector = Selector::from_set(&set);
    /// assert_eq!(selector.to_string(), "app=web");
    /// let labels = BTreeMap::from([("app".to_owned(), "web".to_owned()), ("x".to_owned(), "y".to_owned())]);
    /// assert!(selector.matches(&labels));
    /// assert!(!selector.matches(&BTreeMap::new()));
    /// assert!(Selector::from_set(&BTreeMap::new()).matches(&BTreeMap::new()));
    /// ```
    pub fn from_set(set: &BTreeMap<String, String>) -> Self {
        Self::from_requirements(
            set.iter()
                .map(|(key, value)| Requirement {
                    key: key.clone(),
                    operator: Operator::Equals,
                    values: vec![value.clone()],
                })
                .collect(),
        )
    }

    /// The selector that selects nothing (`labels.Nothing`: what a missing selector means).
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// A selector of `requirements`, sorted by key (stably, so equal keys keep their order).
    fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector {
            requirements,
            nothing: false,
        }
    }

    /// True if the selector selects everything (`Empty`).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty() && !self.nothing
    }

    /// Whether `labels` satisfy every requirement (`Matches`).
    pub fn matches(&self, labels: &impl Labels) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether an object's `metadata.labels` (may be absent or null) match.
    pub fn matches_object(&self, object: &Value) -> bool {
        let labels = object
            .get("metadata")
            .and_then(|metadata| metadata.get("labels"))
            .and_then(Value::as_object);
        match labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&Map::new()),
        }
    }
}

/// The apimachinery `Selector.String()` form: requirements joined by `,`.
impl fmt::Display for Selector {
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
    fn matches(&self, labels: &impl Labels) -> bool {
        let actual = labels.label(&self.key);
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

/// The string form of a `metav1.Selector` JSON object (matchLabels + matchExpressions with
/// operators In, NotIn, Exists, DoesNotExist), as `kubectl` and the Scale subresource's
/// `status.selector` show it, e.g. `app=web,tier in (a,b),!legacy`. Keys sorted the way
/// apimachinery's `metav1.SelectorAsSelector(...).String()` sorts requirements (by key).
///
/// A missing or non-object selector (`labels.Nothing()`) and an empty one (`Everything()`) both
/// render as the empty string. Nothing is validated: expressions with an unknown operator or no
/// key are left out rather than failing, since the selector was validated when it was stored.
pub fn label_selector_string(selector: &Value) -> String {
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
    Selector::from_requirements(requirements).to_string()
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

/// A requirement checked as `labels.NewRequirement` checks it: the key (with the error path
/// `key`), the number of values each operator takes, integers for `Gt`/`Lt`, and every value
/// (paths `values[i][key]`). The error is the aggregate of every problem, in Go's wording.
fn new_requirement(
    key: String,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let mut errors = Vec::new();
    if let Err(detail) = validate_label_key(&key) {
        errors.push(field_invalid("key", &key, &detail));
    }
    let count_error = match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            Some("for 'in', 'notin' operators, values set can't be empty")
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            Some("exact-match compatibility requires one single value")
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            Some("values set must be empty for exists and does not exist")
        }
        Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
            Some("for 'Gt', 'Lt' operators, exactly one value is required")
        }
        _ => None,
    };
    if let Some(detail) = count_error {
        errors.push(
            field::Error {
                kind: field::ErrorType::Invalid,
                field: "values".to_owned(),
                bad_value: field::BadValue::go_string_slice(&values),
                detail: detail.to_owned(),
            }
            .to_string(),
        );
    }
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
    field::Error {
        kind: field::ErrorType::Invalid,
        field: path.to_owned(),
        bad_value: field::BadValue::String(value.to_owned()),
        detail: detail.to_owned(),
    }
    .to_string()
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

/// A label key's problems as `validateLabelKey` words them: upstream's `IsQualifiedName`, the
/// messages joined with `"; "`.
fn validate_label_key(key: &str) -> Result<(), String> {
    let errors = validation::is_qualified_name(key);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// A label value's problems as `validateLabelValue` words them (`IsValidLabelValue`).
fn validate_label_value(value: &str) -> Result<(), String> {
    let errors = validation::is_valid_label_value(value);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

impl FromStr for Selector {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Selector::parse(text)
    }
}

impl Selector {
    /// The selector of a `metav1.LabelSelector` JSON object, as `LabelSelectorAsSelector`
    /// builds it: `matchLabels` as equality requirements, `matchExpressions` with the
    /// operators `In`, `NotIn`, `Exists` and `DoesNotExist`, each checked as
    /// `NewRequirement` checks it; a missing (null) selector selects nothing, an empty one
    /// everything. The error is upstream's message.
    ///
    /// ```
    /// use kubemock_apimachinery::labels::Selector;
    /// let selector = Selector::from_label_selector_json(&serde_json::json!({
    ///     "matchLabels": {"app": "web"},
    ///     "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]
    /// })).unwrap();
    /// assert_eq!(selector.to_string(), "app=web,tier notin (db)");
    /// ```
    pub fn from_label_selector_json(selector: &Value) -> Result<Self, String> {
        let Some(selector) = selector.as_object() else {
            return Ok(Selector::nothing());
        };
        let mut requirements = Vec::new();
        if let Some(match_labels) = selector.get("matchLabels").and_then(Value::as_object) {
            for (key, value) in match_labels {
                requirements.push(new_requirement(
                    key.clone(),
                    Operator::Equals,
                    vec![label_text(value).into_owned()],
                )?);
            }
        }
        for expression in selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
            let operator = expression
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or("");
            let values = expression
                .get("values")
                .and_then(Value::as_array)
                .map(|values| values.iter().map(|v| label_text(v).into_owned()).collect())
                .unwrap_or_default();
            requirements.push(expression_requirement(key, operator, values)?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// [`Selector::from_label_selector_json`] of a typed `metav1.LabelSelector`.
    pub fn from_label_selector(selector: &OpenApiLabelSelector) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(new_requirement(
                key.clone(),
                Operator::Equals,
                vec![value.clone()],
            )?);
        }
        for expression in selector.match_expressions.iter().flatten() {
            requirements.push(expression_requirement(
                &expression.key,
                &expression.operator,
                expression.values.clone().unwrap_or_default(),
            )?);
        }
        Ok(Self::from_requirements(requirements))
    }
}

impl Selector {
    /// The selector of a node selector term's `matchExpressions`, as kube-scheduler and the
    /// DaemonSet controller build it (`nodeSelectorRequirementsAsSelector`,
    /// `k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go`): the
    /// operators `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` and `Lt`, each requirement
    /// checked as `NewRequirement` checks it. No requirements select nothing. The error (an
    /// unknown operator, an invalid key or value, a `Gt` bound that is not an integer) means
    /// the term matches no node.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::NodeSelectorRequirement;
    /// use kubemock_apimachinery::labels::Selector;
    /// let requirement = |key: &str, operator: &str, values: &[&str]| NodeSelectorRequirement {
    ///     key: key.to_owned(),
    ///     operator: operator.to_owned(),
    ///     values: Some(values.iter().map(|v| v.to_string()).collect()),
    /// };
    /// let selector = Selector::from_node_selector_requirements(&[
    ///     requirement("zone", "In", &["a", "b"]),
    ///     requirement("cores", "Gt", &["4"]),
    /// ])
    /// .unwrap();
    /// assert_eq!(selector.to_string(), "cores>4,zone in (a,b)");
    /// assert!(Selector::from_node_selector_requirements(&[requirement("k", "Near", &[])]).is_err());
    /// ```
    pub fn from_node_selector_requirements(
        requirements: &[NodeSelectorRequirement],
    ) -> Result<Self, String> {
        if requirements.is_empty() {
            return Ok(Selector::nothing());
        }
        let mut built = Vec::with_capacity(requirements.len());
        let mut errors = Vec::new();
        for (i, requirement) in requirements.iter().enumerate() {
            let operator = match requirement.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                "Gt" => Operator::GreaterThan,
                "Lt" => Operator::LessThan,
                other => {
                    let path = field::Path::new("matchExpressions")
                        .index(i)
                        .child("operator");
                    errors.push(field::Error::not_supported::<&str>(&path, other, &[]).to_string());
                    continue;
                }
            };
            let values = requirement.values.clone().unwrap_or_default();
            match new_requirement(requirement.key.clone(), operator, values) {
                Ok(requirement) => built.push(requirement),
                Err(err) => errors.push(err),
            }
        }
        if errors.is_empty() {
            Ok(Self::from_requirements(built))
        } else {
            Err(errors.join("; "))
        }
    }
}

/// One `matchExpressions` entry as `LabelSelectorAsSelector` reads it.
fn expression_requirement(
    key: &str,
    operator: &str,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let operator = match operator {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(format!(
                "{} is not a valid label selector operator",
                crate::go::quote(other)
            ));
        }
    };
    // `NewRequirement` keeps the values as given; a `sets.String` in the parser sorts them.
    new_requirement(key.to_owned(), operator, values)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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

    fn labels(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("labels are an object")
    }

    fn selects(selector: &str, labels_json: Value) -> bool {
        Selector::parse(selector)
            .unwrap_or_else(|e| panic!("{selector:?}: {e}"))
            .matches(&labels(labels_json))
    }

    fn label_error(selector: &str) -> String {
        match Selector::parse(selector) {
            Ok(parsed) => panic!("{selector:?} parsed as {parsed:?}"),
            Err(error) => error,
        }
    }

    // ----- label selectors: operators and matching -----

    #[test]
    fn empty_and_whitespace_label_selectors_select_everything() {
        for text in ["", " ", " \t\r\n ", "\0app"] {
            let selector = Selector::parse(text).unwrap();
            assert!(selector.is_empty(), "{text:?}");
            assert!(selector.matches(&Map::new()));
            assert!(selector.matches(&labels(json!({"a": "b"}))));
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
        assert!(!Selector::parse("app=web").unwrap().is_empty());
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
        let positive = Selector::parse("app").unwrap();
        let negative = Selector::parse("!app,app!=x,app notin (x)").unwrap();
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
        assert!(!positive.matches(&Map::new()));
        assert!(negative.matches(&Map::new()));
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
            Selector::parse("k in (b,,a,b)").unwrap().to_string(),
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
        assert!(Selector::parse(&format!("{prefix253}/{name63}")).is_ok());
        assert!(Selector::parse(&format!("k={name63}")).is_ok());
    }

    #[test]
    fn display_sorts_requirements_by_key_and_set_values() {
        let selector =
            Selector::parse("z==1,b notin (y,x),a in (c,b,a),!m,k,n>3,o<4,p!=q").unwrap();
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
        let parsed = Selector::parse(&text).unwrap();
        assert_eq!(parsed.to_string(), text);
        assert!(parsed.matches(&labels(json!({"app": "web", "env": "c"}))));
        assert!(!parsed.matches(&labels(json!({"app": "web", "env": "a"}))));
    }

    /// `LabelSelectorAsSelector`: requirements checked by `NewRequirement`, a missing selector
    /// selects nothing, an empty one everything
    /// (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go`).
    #[test]
    fn label_selector_objects_become_selectors_as_upstream_builds_them() {
        let web = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
        assert!(
            !Selector::from_label_selector_json(&Value::Null)
                .unwrap()
                .matches(&web)
        );
        assert!(
            Selector::from_label_selector_json(&json!({}))
                .unwrap()
                .matches(&web)
        );
        let selector = Selector::from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}))
        .unwrap();
        assert!(selector.matches(&web));
        assert_eq!(
            Selector::from_label_selector_json(&json!({
                "matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]}))
            .unwrap_err(),
            "\"Gt\" is not a valid label selector operator"
        );
        assert_eq!(
            Selector::from_label_selector_json(&json!({
                "matchExpressions": [{"key": "k", "operator": "In"}]}))
            .unwrap_err(),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            Selector::from_label_selector_json(&json!({
                "matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]}))
            .unwrap_err(),
            "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist"
        );
        let typed: OpenApiLabelSelector = serde_json::from_value(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}))
        .unwrap();
        let selector = Selector::from_label_selector(&typed).unwrap();
        assert_eq!(selector.to_string(), "app=web,tier notin (db)");
        assert!(selector.matches(&web));
        let parsed: Selector = "app in (a,b),!legacy".parse().unwrap();
        assert_eq!(parsed.to_string(), "app in (a,b),!legacy");
    }

    /// `TestRequirementConstructor` of `pkg/labels/selector_test.go`, as data: key, operator,
    /// values, and whether upstream refuses the requirement.
    #[test]
    fn requirements_are_constructed_as_upstream_constructs_them() {
        use Operator::*;
        let long_key = format!("{}/x", "a".repeat(254));
        let cases: &[(&str, Operator, &[&str], bool)] = &[
            ("x1", In, &[], true),
            ("x2", NotIn, &[], true),
            ("x3", In, &["foo"], false),
            ("x4", NotIn, &["foo"], false),
            ("x5", Equals, &["foo", "bar"], true),
            ("x6", Exists, &[], false),
            ("x7", DoesNotExist, &[], false),
            ("x8", Exists, &["foo"], true),
            ("x9", In, &["bar"], false),
            ("x10", In, &["bar"], false),
            ("x11", GreaterThan, &["1"], false),
            ("x12", LessThan, &["6"], false),
            ("x13", GreaterThan, &[], true),
            ("x14", GreaterThan, &["bar"], true),
            ("x15", LessThan, &["bar"], true),
            (&long_key, Exists, &[], true),
            ("x16", Equals, &[&"a".repeat(64)], true),
            ("x17", Equals, &["a b"], true),
            ("x18", Exists, &[], false),
            ("-x18", Exists, &[], true),
        ];
        for (key, operator, values, refused) in cases {
            let values: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
            let result = new_requirement((*key).to_owned(), *operator, values);
            assert_eq!(result.is_err(), *refused, "{key}: {result:?}");
        }
    }
}

/// Upstream's own answers: `testdata/selector-cases.json` holds what `labels.Parse` of
/// k8s.io/apimachinery v0.32.0 makes of every selector string of `pkg/labels/selector_test.go`
/// (and more): its `String()` or its error, and `Matches` against label sets. The file is
/// generated by running upstream's code (`testdata/gen-selector-cases`), so each expectation
/// is upstream's, not ours.
#[cfg(test)]
mod upstream_cases {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::Selector;

    fn cases() -> Value {
        serde_json::from_str(include_str!("../testdata/selector-cases.json"))
            .expect("testdata/selector-cases.json is JSON")
    }

    #[test]
    fn parse_prints_and_refuses_as_upstream() {
        let cases = cases();
        let mut wrong = Vec::new();
        for case in cases["parse"].as_array().expect("parse cases") {
            let input = case["in"].as_str().expect("in");
            let got = match Selector::parse(input) {
                Ok(selector) => (Some(selector.to_string()), None),
                Err(error) => (None, Some(error)),
            };
            let want = (
                case["string"].as_str().map(str::to_owned),
                case["error"].as_str().map(str::to_owned),
            );
            if got != want {
                wrong.push(format!("{input:?}: got {got:?}, upstream {want:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn matches_as_upstream() {
        let cases = cases();
        let mut wrong = Vec::new();
        for case in cases["matches"].as_array().expect("match cases") {
            let text = case["selector"].as_str().expect("selector");
            let labels: BTreeMap<String, String> =
                serde_json::from_value(case["labels"].clone()).expect("labels");
            let selector = Selector::parse(text).expect("upstream parsed it");
            if selector.matches(&labels) != case["matches"].as_bool().expect("matches") {
                wrong.push(format!("{text:?} against {labels:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
