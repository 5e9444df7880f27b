//! A `Fault` object read and checked once, when it is written (`admission`) and when the
//! index loads it, into the compiled form the request path matches against: selectors
//! parsed, globs compiled, durations and times converted. The request path then never
//! parses anything, and a Fault that does not compile is refused with 422 field errors, so
//! that a typo (`verb:` for `verbs:`, `pach`) cannot silently match nothing.

use std::time::Duration;

use axum::http::StatusCode;
use kubemock_apimachinery::labels::Selector as LabelSelector;
use serde_json::{Map, Value};

use crate::meta::FieldError;
use crate::registry::testing::GROUP;
use crate::status::{ApiError, Details};

/// The verbs a fault may match, as the request log names them.
pub(crate) const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The codes a status action may answer with.
pub(crate) const CODES: &[u16] = &[400, 403, 404, 409, 410, 429, 500, 503, 504];

/// `Retry-After` of a 429, 503 or 504 when the fault does not say (upstream's in-flight
/// limit sends 1).
const DEFAULT_RETRY_AFTER_SECONDS: u64 = 1;

/// The members of `spec`.
const SPEC_FIELDS: &[&str] = &[
    "action",
    "after",
    "count",
    "expiryTime",
    "match",
    "probability",
    "seed",
    "startTime",
];
/// The members of `spec.match`.
const MATCH_FIELDS: &[&str] = &[
    "dryRun",
    "fieldManager",
    "group",
    "labelSelector",
    "name",
    "namespace",
    "resource",
    "subresource",
    "user",
    "userAgent",
    "verbs",
];
/// The members of `spec.action`.
const ACTION_FIELDS: &[&str] = &["compact", "failAfterCommit", "latency", "status", "watch"];
/// The members of a status answer.
const STATUS_FIELDS: &[&str] = &["code", "message", "reason", "retryAfterSeconds"];
/// The members of `spec.action.latency`.
const LATENCY_FIELDS: &[&str] = &["after", "before"];
/// The members of `spec.action.watch`.
const WATCH_FIELDS: &[&str] = &[
    "delayEvents",
    "endAfterEvents",
    "endAfterSeconds",
    "expire",
    "holdBookmarks",
];

/// A glob over object names: `*` any run, `?` one character, `[abc]`, `[a-z]`, `[!a-z]`
/// classes, `\` escapes the next character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    /// Compiles `pattern`; the error says why it is not one.
    pub(crate) fn parse(pattern: &str) -> Result<Glob, String> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                '?' => tokens.push(Token::Any),
                '\\' => match chars.next() {
                    Some(escaped) => tokens.push(Token::Char(escaped)),
                    None => return Err("trailing backslash".to_owned()),
                },
                '[' => {
                    let negated = matches!(chars.peek(), Some('!' | '^'));
                    if negated {
                        chars.next();
                    }
                    let mut ranges = Vec::new();
                    let mut closed = false;
                    while let Some(c) = chars.next() {
                        if c == ']' {
                            closed = true;
                            break;
                        }
                        let low = if c == '\\' {
                            chars.next().ok_or("trailing backslash")?
                        } else {
                            c
                        };
                        if chars.peek() == Some(&'-') {
                            chars.next();
                            match chars.next() {
                                Some(']') | None => {
                                    return Err("unterminated range in character class".to_owned());
                                }
                                Some(high) if high < low => {
                                    return Err(format!("bad range {low}-{high}"));
                                }
                                Some(high) => ranges.push((low, high)),
                            }
                        } else {
                            ranges.push((low, low));
                        }
                    }
                    if !closed {
                        return Err("unclosed character class".to_owned());
                    }
                    if ranges.is_empty() {
                        return Err("empty character class".to_owned());
                    }
                    tokens.push(Token::Class { negated, ranges });
                }
                c => tokens.push(Token::Char(c)),
            }
        }
        Ok(Glob { tokens })
    }

    /// Whether `text` matches the whole glob (iterative, with one backtrack point per
    /// star: linear in practice, never exponential).
    /// The character every name it matches starts with, when its first token is a literal
    /// one (`None`: it starts with `*`, `?` or a class).
    pub(crate) fn first_char(&self) -> Option<char> {
        match self.tokens.first() {
            Some(Token::Char(c)) => Some(*c),
            _ => None,
        }
    }

    pub(crate) fn matches(&self, text: &str) -> bool {
        // `t` is a byte offset that moves by whole characters: no copy of the text (this runs
        // for every candidate Fault of every request).
        let char_at = |t: usize| text.get(t..).and_then(|rest| rest.chars().next());
        let (mut t, mut p) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while let Some(here) = char_at(t) {
            match self.tokens.get(p) {
                Some(Token::Star) => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                Some(token) if token.matches_one(here) => {
                    t += here.len_utf8();
                    p += 1;
                    continue;
                }
                _ => {}
            }
            match star {
                Some((star_p, star_t)) => {
                    let skipped = char_at(star_t).map_or(1, char::len_utf8);
                    p = star_p + 1;
                    t = star_t + skipped;
                    star = Some((star_p, t));
                }
                None => return false,
            }
        }
        self.tokens[p..].iter().all(|t| *t == Token::Star)
    }
}

impl Token {
    fn matches_one(&self, c: char) -> bool {
        match self {
            Token::Char(expected) => *expected == c,
            Token::Any => true,
            Token::Star => false,
            Token::Class { negated, ranges } => {
                ranges.iter().any(|(low, high)| (*low..=*high).contains(&c)) != *negated
            }
        }
    }
}

/// What a fault matches. `None` members match anything.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    /// Kubernetes verbs (`VERBS`).
    pub(crate) verbs: Option<Vec<&'static str>>,
    /// The API group (`""`: core).
    pub(crate) group: Option<String>,
    /// The resource (plural).
    pub(crate) resource: Option<String>,
    /// The subresource; `""` matches requests for the resource itself only.
    pub(crate) subresource: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<Glob>,
    /// Labels of the object as stored (requests that name an object only).
    pub(crate) labels: Option<LabelSelector>,
    /// A substring of the username.
    pub(crate) user: Option<String>,
    /// A substring of the `User-Agent` header.
    pub(crate) user_agent: Option<String>,
    /// The `fieldManager` query parameter, exactly.
    pub(crate) field_manager: Option<String>,
    /// Dry-run requests only (true) or real ones only (false).
    pub(crate) dry_run: Option<bool>,
}

/// An error answer: its code, reason, message and `Retry-After`.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) code: u16,
    reason: Option<String>,
    message: Option<String>,
    retry_after: Option<u64>,
}

/// What a request sees of the object the answer names.
pub(crate) struct Named<'a> {
    pub(crate) group: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) name: &'a str,
    /// The resourceVersion asked for, and the store's current revision (for a 410's text).
    pub(crate) requested_revision: &'a str,
    pub(crate) current_revision: u64,
}

impl Answer {
    /// The Status this answer is, for a request on `named`: upstream's constructors
    /// (`staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`) and their texts,
    /// unless the fault gives its own reason or message.
    pub(crate) fn to_error(&self, named: &Named<'_>) -> ApiError {
        let qualified = if named.group.is_empty() {
            named.resource.to_owned()
        } else {
            format!("{}.{}", named.resource, named.group)
        };
        let object_details = || Details {
            name: (!named.name.is_empty()).then(|| named.name.to_owned()),
            group: (!named.group.is_empty()).then(|| named.group.to_owned()),
            kind: Some(named.resource.to_owned()),
            ..Details::default()
        };
        let retry = self.retry_after.unwrap_or(DEFAULT_RETRY_AFTER_SECONDS);
        let (reason, message, details): (&'static str, String, Details) = match self.code {
            // `NewBadRequest`.
            400 => (
                "BadRequest",
                "the request was refused by an injected fault".to_owned(),
                Details::default(),
            ),
            // `NewForbidden`.
            403 => (
                "Forbidden",
                format!(
                    "{qualified} {} is forbidden: refused by an injected fault",
                    kubemock_apimachinery::go::quote(named.name)
                ),
                object_details(),
            ),
            // `NewNotFound`.
            404 => (
                "NotFound",
                format!(
                    "{qualified} {} not found",
                    kubemock_apimachinery::go::quote(named.name)
                ),
                object_details(),
            ),
            // `NewConflict` with `registry.OptimisticLockErrorMsg`, as a stale update gets it.
            409 => (
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {qualified} {}: the object has been modified; please apply your changes to the latest version and try again",
                    kubemock_apimachinery::go::quote(named.name)
                ),
                object_details(),
            ),
            // `NewResourceExpired`, as the watch cache words a compacted resourceVersion.
            410 => (
                "Expired",
                format!(
                    "too old resource version: {} ({})",
                    if named.requested_revision.is_empty() {
                        "0"
                    } else {
                        named.requested_revision
                    },
                    named.current_revision
                ),
                Details::default(),
            ),
            // `NewTooManyRequests`.
            429 => (
                "TooManyRequests",
                "Too many requests, please try again later.".to_owned(),
                Details {
                    retry_after_seconds: Some(retry),
                    ..Details::default()
                },
            ),
            // `NewServiceUnavailable`.
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request".to_owned(),
                Details {
                    retry_after_seconds: Some(retry),
                    ..Details::default()
                },
            ),
            // `NewTimeoutError`, as the timeout filter sends it (`pkg/server/filters/timeout.go`).
            504 => (
                "Timeout",
                "Timeout: request did not complete within the allotted timeout".to_owned(),
                Details {
                    retry_after_seconds: Some(retry),
                    ..Details::default()
                },
            ),
            // `NewInternalError`.
            _ => {
                let text = self
                    .message
                    .clone()
                    .unwrap_or_else(|| "an injected fault".to_owned());
                let mut error = ApiError::internal(text);
                if let Some(reason) = &self.reason {
                    error.reason = leak_reason(reason);
                }
                return error;
            }
        };
        let mut error = ApiError::new(
            StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            reason,
            self.message.clone().unwrap_or(message),
        );
        if let Some(reason) = &self.reason {
            error.reason = leak_reason(reason);
        }
        if details != Details::default() {
            error = error.with_details(details);
        }
        error
    }
}

/// `ApiError::reason` is `&'static str`: a fault's own reason is one of the known ones
/// (checked at validation), found here.
fn leak_reason(reason: &str) -> &'static str {
    REASONS
        .iter()
        .find(|known| **known == reason)
        .copied()
        .unwrap_or("InternalError")
}

/// The `metav1.StatusReason`s a fault may give (`staging/src/k8s.io/apimachinery/pkg/apis/
/// meta/v1/types.go`).
const REASONS: &[&str] = &[
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Expired",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerTimeout",
    "ServiceUnavailable",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
];

/// What a watch the fault acts on does.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchAction {
    /// End the stream once this many events (not bookmarks) went out.
    pub(crate) end_after_events: Option<u64>,
    /// End the stream after this long.
    pub(crate) end_after: Option<Duration>,
    /// End it with an ERROR event carrying 410 Expired (the client must relist) rather than
    /// closing it; alone, at once.
    pub(crate) expire: bool,
    /// Wait this long before each event.
    pub(crate) delay_events: Option<Duration>,
    /// Send no BOOKMARK event.
    pub(crate) hold_bookmarks: bool,
}

/// What a fault does to a request it applies to.
#[derive(Debug, Default)]
pub(crate) struct Action {
    /// Answer this instead of running the request.
    pub(crate) status: Option<Answer>,
    pub(crate) latency_before: Option<Duration>,
    pub(crate) latency_after: Option<Duration>,
    /// Run the request, then answer this if it succeeded (the write committed).
    pub(crate) fail_after_commit: Option<Answer>,
    pub(crate) watch: Option<std::sync::Arc<WatchAction>>,
    /// Compact the store up to its current revision before the request runs.
    pub(crate) compact: bool,
}

/// When a matching request is acted on.
#[derive(Debug, Default, Clone)]
pub(crate) struct Schedule {
    /// Act this many times, then the fault is exhausted.
    pub(crate) count: Option<u64>,
    /// Skip the first this many matches.
    pub(crate) after: u64,
    /// Act on a match with this probability, rolled from `seed` and the match's number.
    pub(crate) probability: Option<f64>,
    pub(crate) seed: u64,
    /// Nanoseconds since the epoch before which, and from which, the fault does not match.
    pub(crate) start: Option<i128>,
    pub(crate) expiry: Option<i128>,
}

/// A compiled `Fault`.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    pub(crate) matcher: Matcher,
    pub(crate) action: Action,
    pub(crate) schedule: Schedule,
}

impl Compiled {
    /// A one-line summary of the action, for `kubectl get faults` (`status.action`).
    pub(crate) fn summary(&self) -> String {
        let action = &self.action;
        let mut parts = Vec::new();
        if action.compact {
            parts.push("compact".to_owned());
        }
        if let Some(latency) = action.latency_before {
            parts.push(format!("delay {latency:?}"));
        }
        if let Some(answer) = &action.status {
            parts.push(answer.code.to_string());
        }
        if let Some(answer) = &action.fail_after_commit {
            parts.push(format!("commit then {}", answer.code));
        }
        if let Some(watch) = &action.watch {
            let mut text = "watch".to_owned();
            if let Some(events) = watch.end_after_events {
                text.push_str(&format!(" end after {events} events"));
            }
            if let Some(after) = watch.end_after {
                text.push_str(&format!(" end after {after:?}"));
            }
            if watch.expire {
                text.push_str(" with 410");
            }
            if let Some(delay) = watch.delay_events {
                text.push_str(&format!(" delay {delay:?}"));
            }
            if watch.hold_bookmarks {
                text.push_str(" no bookmarks");
            }
            parts.push(text);
        }
        if let Some(latency) = action.latency_after {
            parts.push(format!("then delay {latency:?}"));
        }
        parts.join(", ")
    }
}

/// Reads a Fault object's `spec`, collecting every field error.
pub(crate) fn compile(object: &Map<String, Value>) -> Result<Compiled, Vec<FieldError>> {
    let mut errors = Vec::new();
    let compiled = Reader {
        errors: &mut errors,
    }
    .spec(object.get("spec"));
    if errors.is_empty() {
        Ok(compiled)
    } else {
        Err(errors)
    }
}

struct Reader<'a> {
    errors: &'a mut Vec<FieldError>,
}

fn quoted(value: &Value) -> String {
    match value {
        Value::String(s) => kubemock_apimachinery::go::quote(s),
        other => other.to_string(),
    }
}

impl Reader<'_> {
    fn invalid(&mut self, field: &str, value: &Value, why: &str) {
        self.errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueInvalid",
            detail: format!("Invalid value: {}: {why}", quoted(value)),
        });
    }

    fn unsupported(&mut self, field: &str, value: &Value, supported: &[String]) {
        let supported: Vec<String> = supported
            .iter()
            .map(|s| kubemock_apimachinery::go::quote(s))
            .collect();
        self.errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueNotSupported",
            detail: format!(
                "Unsupported value: {}: supported values: {}",
                quoted(value),
                supported.join(", ")
            ),
        });
    }

    fn required(&mut self, field: &str, why: &str) {
        self.errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueRequired",
            detail: if why.is_empty() {
                "Required value".to_owned()
            } else {
                format!("Required value: {why}")
            },
        });
    }

    fn forbidden(&mut self, field: &str, why: &str) {
        self.errors.push(FieldError {
            field: field.to_owned(),
            reason: "FieldValueForbidden",
            detail: format!("Forbidden: {why}"),
        });
    }

    /// The object at `field`, with its unknown members reported; `None` when absent or null.
    fn object<'v>(
        &mut self,
        field: &str,
        value: Option<&'v Value>,
        known: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => {
                for key in map.keys() {
                    if !known.contains(&key.as_str()) {
                        self.unsupported(
                            &format!("{field}.{key}"),
                            &Value::String(key.clone()),
                            &[format!("known fields: {}", known.join(", "))],
                        );
                    }
                }
                Some(map)
            }
            Some(other) => {
                self.invalid(field, other, "must be an object");
                None
            }
        }
    }

    fn string(&mut self, field: &str, value: Option<&Value>) -> Option<String> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.invalid(field, other, "must be a string");
                None
            }
        }
    }

    fn uint(&mut self, field: &str, value: Option<&Value>) -> Option<u64> {
        match value {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) => Some(n),
                None => {
                    self.invalid(field, v, "must be a non-negative integer");
                    None
                }
            },
        }
    }

    fn boolean(&mut self, field: &str, value: Option<&Value>) -> Option<bool> {
        match value {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.invalid(field, other, "must be a boolean");
                None
            }
        }
    }

    fn duration(&mut self, field: &str, value: Option<&Value>) -> Option<Duration> {
        let text = self.string(field, value)?;
        match kubemock_apimachinery::duration::parse_duration(&text) {
            Ok(nanos) if nanos >= 0 => Some(Duration::from_nanos(nanos.unsigned_abs())),
            Ok(_) => {
                self.invalid(field, &Value::String(text), "must not be negative");
                None
            }
            Err(err) => {
                self.invalid(field, &Value::String(text), &err.to_string());
                None
            }
        }
    }

    fn time(&mut self, field: &str, value: Option<&Value>) -> Option<i128> {
        let text = self.string(field, value)?;
        let parsed = kubemock_apimachinery::time::parse_rfc3339(&text);
        if parsed.is_none() {
            self.invalid(
                field,
                &Value::String(text),
                "must be an RFC 3339 time (2006-01-02T15:04:05Z)",
            );
        }
        parsed
    }

    fn spec(&mut self, spec: Option<&Value>) -> Compiled {
        let Some(spec) = self.object("spec", spec, SPEC_FIELDS) else {
            self.required("spec", "");
            return Compiled::default();
        };
        let matcher = self.matcher(spec.get("match"));
        let action = self.action(spec.get("action"), &matcher);
        let probability = match spec.get("probability") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(p) if (0.0..=1.0).contains(&p) => Some(p),
                _ => {
                    self.invalid("spec.probability", v, "must be between 0 and 1");
                    None
                }
            },
        };
        let start = self.time("spec.startTime", spec.get("startTime"));
        let expiry = self.time("spec.expiryTime", spec.get("expiryTime"));
        if let (Some(start), Some(expiry)) = (start, expiry)
            && expiry <= start
            && let Some(value) = spec.get("expiryTime")
        {
            self.invalid("spec.expiryTime", value, "must be after spec.startTime");
        }
        let schedule = Schedule {
            count: self.uint("spec.count", spec.get("count")),
            after: self.uint("spec.after", spec.get("after")).unwrap_or(0),
            probability,
            seed: self.uint("spec.seed", spec.get("seed")).unwrap_or(0),
            start,
            expiry,
        };
        Compiled {
            matcher,
            action,
            schedule,
        }
    }

    fn matcher(&mut self, value: Option<&Value>) -> Matcher {
        let Some(m) = self.object("spec.match", value, MATCH_FIELDS) else {
            return Matcher::default();
        };
        let verbs = match m.get("verbs") {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) => {
                let mut verbs = Vec::new();
                for (i, verb) in list.iter().enumerate() {
                    match verb.as_str().and_then(|v| VERBS.iter().find(|k| **k == v)) {
                        Some(known) => verbs.push(*known),
                        None => self.unsupported(
                            &format!("spec.match.verbs[{i}]"),
                            verb,
                            &VERBS.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>(),
                        ),
                    }
                }
                if list.is_empty() {
                    self.required("spec.match.verbs", "leave it out to match every verb");
                }
                Some(verbs)
            }
            Some(other) => {
                self.invalid("spec.match.verbs", other, "must be a list of verbs");
                None
            }
        };
        let group = self.string("spec.match.group", m.get("group"));
        if group.as_deref() == Some(GROUP) {
            self.forbidden(
                "spec.match.group",
                "faults never apply to the testing.kubemock.dev group",
            );
        }
        let name = self
            .string("spec.match.name", m.get("name"))
            .and_then(|pattern| match Glob::parse(&pattern) {
                Ok(glob) => Some(glob),
                Err(why) => {
                    self.invalid("spec.match.name", &Value::String(pattern), &why);
                    None
                }
            });
        let labels = match m.get("labelSelector") {
            None | Some(Value::Null) => None,
            Some(selector @ Value::Object(_)) => {
                match LabelSelector::from_label_selector_json(selector) {
                    Ok(parsed) => Some(parsed),
                    Err(why) => {
                        self.invalid("spec.match.labelSelector", selector, &why);
                        None
                    }
                }
            }
            Some(other) => {
                self.invalid(
                    "spec.match.labelSelector",
                    other,
                    "must be a label selector (matchLabels, matchExpressions)",
                );
                None
            }
        };
        Matcher {
            verbs,
            group,
            resource: self.string("spec.match.resource", m.get("resource")),
            subresource: self.string("spec.match.subresource", m.get("subresource")),
            namespace: self.string("spec.match.namespace", m.get("namespace")),
            name,
            labels,
            user: self.string("spec.match.user", m.get("user")),
            user_agent: self.string("spec.match.userAgent", m.get("userAgent")),
            field_manager: self.string("spec.match.fieldManager", m.get("fieldManager")),
            dry_run: self.boolean("spec.match.dryRun", m.get("dryRun")),
        }
    }

    fn answer(&mut self, field: &str, value: Option<&Value>) -> Option<Answer> {
        let map = self.object(field, value, STATUS_FIELDS)?;
        let code = match map.get("code") {
            None | Some(Value::Null) => {
                self.required(&format!("{field}.code"), "");
                return None;
            }
            Some(v) => match v.as_u64().and_then(|c| u16::try_from(c).ok()) {
                Some(code) if CODES.contains(&code) => code,
                _ => {
                    self.unsupported(
                        &format!("{field}.code"),
                        v,
                        &CODES.iter().map(u16::to_string).collect::<Vec<_>>(),
                    );
                    return None;
                }
            },
        };
        let reason = self.string(&format!("{field}.reason"), map.get("reason"));
        if let Some(reason) = &reason
            && !REASONS.contains(&reason.as_str())
        {
            self.unsupported(
                &format!("{field}.reason"),
                &Value::String(reason.clone()),
                &REASONS.iter().map(|r| (*r).to_owned()).collect::<Vec<_>>(),
            );
        }
        Some(Answer {
            code,
            reason,
            message: self.string(&format!("{field}.message"), map.get("message")),
            retry_after: self.uint(
                &format!("{field}.retryAfterSeconds"),
                map.get("retryAfterSeconds"),
            ),
        })
    }

    fn action(&mut self, value: Option<&Value>, matcher: &Matcher) -> Action {
        let Some(a) = self.object("spec.action", value, ACTION_FIELDS) else {
            self.required("spec.action", "");
            return Action::default();
        };
        let status = self.answer("spec.action.status", a.get("status"));
        let fail_after_commit =
            self.answer("spec.action.failAfterCommit", a.get("failAfterCommit"));
        if status.is_some() && fail_after_commit.is_some() {
            self.forbidden(
                "spec.action.failAfterCommit",
                "may not be given with spec.action.status",
            );
        }
        let (latency_before, latency_after) =
            match self.object("spec.action.latency", a.get("latency"), LATENCY_FIELDS) {
                Some(latency) => (
                    self.duration("spec.action.latency.before", latency.get("before")),
                    self.duration("spec.action.latency.after", latency.get("after")),
                ),
                None => (None, None),
            };
        let watch = self
            .object("spec.action.watch", a.get("watch"), WATCH_FIELDS)
            .map(|w| WatchAction {
                end_after_events: self
                    .uint("spec.action.watch.endAfterEvents", w.get("endAfterEvents")),
                end_after: self
                    .uint(
                        "spec.action.watch.endAfterSeconds",
                        w.get("endAfterSeconds"),
                    )
                    .map(Duration::from_secs),
                expire: self
                    .boolean("spec.action.watch.expire", w.get("expire"))
                    .unwrap_or(false),
                delay_events: self.duration("spec.action.watch.delayEvents", w.get("delayEvents")),
                hold_bookmarks: self
                    .boolean("spec.action.watch.holdBookmarks", w.get("holdBookmarks"))
                    .unwrap_or(false),
            });
        if watch.is_some() {
            match &matcher.verbs {
                Some(verbs) if verbs.iter().all(|v| *v == "watch") => {}
                _ => self.required("spec.match.verbs", "a watch action needs verbs: [watch]"),
            }
            if status.is_some() || fail_after_commit.is_some() {
                self.forbidden(
                    "spec.action.watch",
                    "may not be given with spec.action.status or spec.action.failAfterCommit",
                );
            }
        }
        let compact = self
            .boolean("spec.action.compact", a.get("compact"))
            .unwrap_or(false);
        let action = Action {
            status,
            latency_before,
            latency_after,
            fail_after_commit,
            watch: watch.map(std::sync::Arc::new),
            compact,
        };
        let something = action.status.is_some()
            || action.fail_after_commit.is_some()
            || action.watch.is_some()
            || action.compact
            || action.latency_before.is_some()
            || action.latency_after.is_some();
        if !something && self.errors.is_empty() {
            self.required(
                "spec.action",
                "one of status, latency, failAfterCommit, watch or compact",
            );
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors_of(spec: Value) -> Vec<String> {
        let object = json!({"metadata": {"name": "f"}, "spec": spec});
        match compile(object.as_object().unwrap()) {
            Ok(_) => Vec::new(),
            Err(errors) => errors
                .into_iter()
                .map(|e| format!("{}: {}", e.field, e.detail))
                .collect(),
        }
    }

    #[test]
    fn globs_match_stars_marks_classes_and_escapes() {
        let cases = [
            ("web-*", "web-1", true),
            ("web-*", "web-", true),
            ("web-*", "api-1", false),
            ("*-db", "main-db", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("pod-?", "pod-7", true),
            ("pod-?", "pod-17", false),
            ("pod-[0-3]", "pod-2", true),
            ("pod-[!0-3]", "pod-2", false),
            ("pod-[!0-3]", "pod-9", true),
            ("x\\*", "x*", true),
            ("x\\*", "xy", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("*", "", true),
            // Characters, not bytes: a star backtracks over a whole multibyte character.
            ("caf?-*", "café-1", true),
            ("*é*x", "aébéx", true),
            ("*é*x", "aébéy", false),
            ("[à-é]", "è", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                Glob::parse(pattern).unwrap().matches(text),
                expected,
                "{pattern} ~ {text}"
            );
        }
    }

    #[test]
    fn bad_globs_are_refused_with_the_reason() {
        assert_eq!(
            Glob::parse("web-[").unwrap_err(),
            "unclosed character class"
        );
        assert_eq!(Glob::parse("web\\").unwrap_err(), "trailing backslash");
        assert_eq!(Glob::parse("[]").unwrap_err(), "empty character class");
        assert_eq!(Glob::parse("[z-a]").unwrap_err(), "bad range z-a");
    }

    #[test]
    fn a_valid_fault_compiles() {
        assert!(
            errors_of(json!({
                "match": {"verbs": ["update", "patch"], "group": "apps", "resource": "deployments",
                    "name": "web-*", "labelSelector": {"matchLabels": {"app": "web"}}, "dryRun": false},
                "action": {"status": {"code": 409}, "latency": {"before": "10ms"}},
                "count": 1, "probability": 0.5, "seed": 7, "after": 2,
                "startTime": "2020-01-01T00:00:00Z", "expiryTime": "2999-01-01T00:00:00Z",
            }))
            .is_empty()
        );
    }

    #[test]
    fn invalid_faults_list_every_field_error() {
        let errors = errors_of(json!({
            "match": {"verbs": ["pach"], "name": "web-[", "group": "testing.kubemock.dev", "verb": "x"},
            "action": {"status": {"code": 418}, "latency": {"before": "soon"}},
            "probability": 1.5,
            "count": -1,
        }));
        let text = errors.join("\n");
        for expected in [
            "spec.match.verbs[0]: Unsupported value: \"pach\": supported values: \"create\"",
            "spec.match.name: Invalid value: \"web-[\": unclosed character class",
            "spec.match.group: Forbidden: faults never apply to the testing.kubemock.dev group",
            "spec.match.verb: Unsupported value: \"verb\"",
            "spec.action.status.code: Unsupported value: 418",
            "spec.action.latency.before: Invalid value: \"soon\": time: invalid duration \"soon\"",
            "spec.probability: Invalid value: 1.5: must be between 0 and 1",
            "spec.count: Invalid value: -1: must be a non-negative integer",
        ] {
            assert!(text.contains(expected), "{expected} not in\n{text}");
        }
        assert_eq!(
            errors_of(json!({"match": {}, "action": {}})),
            [
                "spec.action: Required value: one of status, latency, failAfterCommit, watch or compact"
            ]
        );
        assert_eq!(
            errors_of(json!({"match": {"verbs": ["get"]}, "action": {"watch": {"expire": true}}})),
            ["spec.match.verbs: Required value: a watch action needs verbs: [watch]"]
        );
    }

    #[test]
    fn answers_are_upstreams_statuses() {
        let named = Named {
            group: "apps",
            resource: "deployments",
            name: "web",
            requested_revision: "12",
            current_revision: 40,
        };
        let answer = |code| Answer {
            code,
            reason: None,
            message: None,
            retry_after: None,
        };
        let conflict = answer(409).to_error(&named).to_json();
        assert_eq!(
            conflict["message"],
            "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(conflict["reason"], "Conflict");
        assert_eq!(
            conflict["details"],
            json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
        let gone = answer(410).to_error(&named).to_json();
        assert_eq!(gone["message"], "too old resource version: 12 (40)");
        assert_eq!(gone["reason"], "Expired");
        let busy = answer(429).to_error(&named).to_json();
        assert_eq!(busy["details"]["retryAfterSeconds"], 1);
        assert_eq!(busy["reason"], "TooManyRequests");
        let internal = answer(500).to_error(&named).to_json();
        assert_eq!(
            internal["message"],
            "Internal error occurred: an injected fault"
        );
        assert_eq!(
            answer(504).to_error(&named).to_json()["message"],
            "Timeout: request did not complete within the allotted timeout"
        );
        assert_eq!(answer(503).to_error(&named).code.as_u16(), 503);
    }
}
