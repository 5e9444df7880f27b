//! kwok's `Stage` (`kwok.x-k8s.io/v1alpha1`, kwok `pkg/apis/v1alpha1/stage_types.go`): a
//! lifecycle rule for objects of one kind, "when an object matches this selector, after this
//! delay, do this next". The API server compiles a Stage when it is written (its validation:
//! every field error at once, a 422) and the simulated kubelet compiles the stored ones to run
//! them; both use [`Stage::compile`], so what is accepted is exactly what runs.
//!
//! What is served, with kwok's semantics (kwok `pkg/utils/lifecycle`): `resourceRef` (Pod,
//! Node), `selector` (`matchLabels`, `matchAnnotations`, `matchExpressions` with a [`jq`] key
//! and `In`/`NotIn`/`Exists`/`DoesNotExist`), `weight`/`weightFrom`, `delay`
//! (`durationMilliseconds`/`durationFrom`, `jitterDurationMilliseconds`/`jitterDurationFrom`),
//! `next` (`event`, `finalizers`, `statusTemplate` rendered by [`gotpl`] and
//! `statusSubresource`, `delete`) and `immediateNextStage`. What kwok has and kubemock does
//! not run (`steps`, `next.patches`, `next.statusPatchAs`, CEL expressions, other kinds) is
//! refused with a field error naming it, never accepted and ignored.

pub mod gotpl;
pub mod jq;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::field::{Error as FieldError, Path};

/// The Stage API group.
pub const GROUP: &str = "kwok.x-k8s.io";
/// Its version.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "Stage";
/// The resource (plural).
pub const PLURAL: &str = "stages";

/// The kinds Stages can drive: the core group's Pod and Node, the ones kubemock simulates.
pub const KINDS: &[&str] = &["Pod", "Node"];

/// The selector operators (kwok's `SelectorOperator`).
pub const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];

/// A compiled Stage.
#[derive(Debug, Clone)]
pub struct Stage {
    /// `metadata.name`.
    pub name: String,
    /// `spec.resourceRef.kind`: one of [`KINDS`].
    pub kind: String,
    match_labels: BTreeMap<String, String>,
    match_annotations: BTreeMap<String, String>,
    match_expressions: Vec<Requirement>,
    weight: i64,
    weight_from: Option<jq::Query>,
    delay: Option<Delay>,
    /// What the Stage does.
    pub next: Next,
    /// `spec.immediateNextStage`.
    pub immediate_next_stage: bool,
}

#[derive(Debug, Clone)]
struct Requirement {
    query: jq::Query,
    operator: String,
    values: Vec<String>,
}

#[derive(Debug, Clone)]
struct Delay {
    duration_ms: Option<i64>,
    duration_from: Option<jq::Query>,
    jitter_ms: Option<i64>,
    jitter_from: Option<jq::Query>,
}

/// `spec.next`, in the order kwok runs it (its conversion to steps: event, finalizers, the
/// status patch, delete).
#[derive(Debug, Clone, Default)]
pub struct Next {
    /// `event`: type, reason, message.
    pub event: Option<(String, String, String)>,
    /// `finalizers`.
    pub finalizers: Option<Finalizers>,
    /// `statusTemplate`.
    pub status_template: Option<gotpl::Template>,
    /// `statusSubresource` (default `status`; empty: the object itself).
    pub status_subresource: String,
    /// `delete`.
    pub delete: bool,
}

/// `next.finalizers`.
#[derive(Debug, Clone, Default)]
pub struct Finalizers {
    /// `add[].value`.
    pub add: Vec<String>,
    /// `remove[].value`.
    pub remove: Vec<String>,
    /// `empty`.
    pub empty: bool,
}

/// The delay of a matched Stage: at least `min`, at most `max` (picked at random between,
/// kwok's jitter), in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayRange {
    /// The shortest delay.
    pub min_ms: i64,
    /// The longest delay (equal to `min_ms` without jitter).
    pub max_ms: i64,
}

impl Stage {
    /// Compiles a Stage object, or answers every field error in it.
    pub fn compile(object: &Value) -> Result<Stage, Vec<FieldError>> {
        let mut errors = Vec::new();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let spec_path = Path::new("spec");
        let empty = Value::Object(serde_json::Map::new());
        let spec = object.get("spec").unwrap_or(&empty);
        if !spec.is_object() {
            errors.push(FieldError::required(&spec_path, ""));
            return Err(errors);
        }
        if spec.get("steps").is_some_and(|s| !s.is_null()) {
            errors.push(FieldError::forbidden(
                &spec_path.child("steps"),
                "kubemock runs spec.next, not spec.steps",
            ));
        }

        // resourceRef
        let rr_path = spec_path.child("resourceRef");
        let group = spec
            .pointer("/resourceRef/apiGroup")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = spec
            .pointer("/resourceRef/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if kind.is_empty() {
            errors.push(FieldError::required(&rr_path.child("kind"), ""));
        } else if !KINDS.contains(&kind.as_str()) {
            errors.push(FieldError::not_supported(
                &rr_path.child("kind"),
                kind.as_str(),
                KINDS,
            ));
        }
        // kwok writes the core group as its version, "v1".
        if !matches!(group, "" | "v1") {
            errors.push(FieldError::not_supported(
                &rr_path.child("apiGroup"),
                group,
                &["v1", ""],
            ));
        }

        // selector
        let sel_path = spec_path.child("selector");
        let mut match_labels = BTreeMap::new();
        let mut match_annotations = BTreeMap::new();
        let mut match_expressions = Vec::new();
        match spec.get("selector") {
            None | Some(Value::Null) => errors.push(FieldError::required(
                &sel_path,
                "a Stage without a selector matches nothing (kwok skips it)",
            )),
            Some(selector) => {
                for (field, into) in [
                    ("matchLabels", &mut match_labels),
                    ("matchAnnotations", &mut match_annotations),
                ] {
                    if let Some(map) = selector.get(field).and_then(Value::as_object) {
                        for (k, v) in map {
                            match v.as_str() {
                                Some(v) => {
                                    into.insert(k.clone(), v.to_owned());
                                }
                                None => errors.push(FieldError::invalid(
                                    &sel_path.child(field).key(k),
                                    v,
                                    "must be a string",
                                )),
                            }
                        }
                    }
                }
                let items = selector
                    .get("matchExpressions")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (i, item) in items.iter().enumerate() {
                    let path = sel_path.child("matchExpressions").index(i);
                    if item.get("cel").is_some_and(|c| !c.is_null()) {
                        errors.push(FieldError::forbidden(
                            &path.child("cel"),
                            "CEL expressions are not evaluated by kubemock; use key/operator/values (jq)",
                        ));
                        continue;
                    }
                    // kwok accepts the requirement inline or under `jq`.
                    let (req, path) = match item.get("jq") {
                        Some(jq) if !jq.is_null() => (jq, path.child("jq")),
                        _ => (item, path),
                    };
                    if let Some(r) = requirement(req, &path, &mut errors) {
                        match_expressions.push(r);
                    }
                }
            }
        }

        // weight
        let weight = match spec.get("weight") {
            None | Some(Value::Null) => 0,
            Some(w) => match w.as_i64() {
                Some(w) if w >= 0 => w,
                _ => {
                    errors.push(FieldError::invalid(
                        &spec_path.child("weight"),
                        w,
                        "must be greater than or equal to 0",
                    ));
                    0
                }
            },
        };
        let weight_from = expression_from(
            spec.get("weightFrom"),
            &spec_path.child("weightFrom"),
            &mut errors,
        );

        // delay
        let delay_path = spec_path.child("delay");
        let delay = spec.get("delay").filter(|d| !d.is_null()).map(|d| {
            let millis = |field: &str, errors: &mut Vec<FieldError>| match d.get(field) {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_i64() {
                    Some(ms) if ms >= 0 => Some(ms),
                    _ => {
                        errors.push(FieldError::invalid(
                            &delay_path.child(field),
                            v,
                            "must be greater than or equal to 0",
                        ));
                        None
                    }
                },
            };
            Delay {
                duration_ms: millis("durationMilliseconds", &mut errors),
                duration_from: expression_from(
                    d.get("durationFrom"),
                    &delay_path.child("durationFrom"),
                    &mut errors,
                ),
                jitter_ms: millis("jitterDurationMilliseconds", &mut errors),
                jitter_from: expression_from(
                    d.get("jitterDurationFrom"),
                    &delay_path.child("jitterDurationFrom"),
                    &mut errors,
                ),
            }
        });

        // next
        let next_path = spec_path.child("next");
        let mut next = Next {
            status_subresource: "status".to_owned(),
            ..Next::default()
        };
        if let Some(n) = spec.get("next").filter(|n| !n.is_null()) {
            for (field, why) in [
                ("patches", "kubemock renders statusTemplate only"),
                (
                    "statusPatchAs",
                    "kubemock does not impersonate on Stage writes",
                ),
            ] {
                if n.get(field)
                    .is_some_and(|v| !v.is_null() && v != &Value::Array(Vec::new()))
                {
                    errors.push(FieldError::forbidden(&next_path.child(field), why));
                }
            }
            if let Some(e) = n.get("event").filter(|e| !e.is_null()) {
                let text = |f: &str| {
                    e.get(f)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let kind = text("type");
                if !matches!(kind.as_str(), "Normal" | "Warning") {
                    errors.push(FieldError::not_supported(
                        &next_path.child("event").child("type"),
                        kind.as_str(),
                        &["Normal", "Warning"],
                    ));
                }
                if text("reason").is_empty() {
                    errors.push(FieldError::required(
                        &next_path.child("event").child("reason"),
                        "",
                    ));
                }
                next.event = Some((kind, text("reason"), text("message")));
            }
            if let Some(f) = n.get("finalizers").filter(|f| !f.is_null()) {
                let values = |field: &str| -> Vec<String> {
                    f.get(field)
                        .and_then(Value::as_array)
                        .map(|items| {
                            items
                                .iter()
                                .filter_map(|i| i.get("value").and_then(Value::as_str))
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default()
                };
                next.finalizers = Some(Finalizers {
                    add: values("add"),
                    remove: values("remove"),
                    empty: f.get("empty").and_then(Value::as_bool).unwrap_or(false),
                });
            }
            next.delete = n.get("delete").and_then(Value::as_bool).unwrap_or(false);
            if let Some(sub) = n.get("statusSubresource").and_then(Value::as_str) {
                if !matches!(sub, "" | "status") {
                    errors.push(FieldError::not_supported(
                        &next_path.child("statusSubresource"),
                        sub,
                        &["status", ""],
                    ));
                }
                next.status_subresource = sub.to_owned();
            }
            if let Some(t) = n
                .get("statusTemplate")
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
            {
                match gotpl::Template::parse(t) {
                    Ok(t) => next.status_template = Some(t),
                    Err(e) => errors.push(FieldError::invalid(
                        &next_path.child("statusTemplate"),
                        "",
                        format!("not a template kubemock renders: {e}"),
                    )),
                }
            }
        }
        let immediate_next_stage = spec
            .get("immediateNextStage")
            .and_then(Value::as_bool)
            .unwrap_or(false);

        // A Stage matching every object, with no delay, that changes something and does not
        // delete, matches its own result again at once, forever.
        let no_delay = delay.as_ref().is_none_or(|d| {
            d.duration_ms.unwrap_or(0) == 0
                && d.duration_from.is_none()
                && d.jitter_ms.unwrap_or(0) == 0
                && d.jitter_from.is_none()
        });
        let changes =
            next.status_template.is_some() || next.finalizers.is_some() || next.event.is_some();
        if no_delay
            && changes
            && !next.delete
            && match_labels.is_empty()
            && match_annotations.is_empty()
            && match_expressions.is_empty()
            && errors.is_empty()
        {
            errors.push(FieldError::invalid(
                &sel_path,
                "{}",
                "a Stage with an empty selector and no delay matches its own result again at once, forever: give it a selector its next state leaves, or a delay",
            ));
        }

        if errors.is_empty() {
            Ok(Stage {
                name,
                kind,
                match_labels,
                match_annotations,
                match_expressions,
                weight,
                weight_from,
                delay,
                next,
                immediate_next_stage,
            })
        } else {
            Err(errors)
        }
    }

    /// Whether `object` matches the selector (kwok `Stage.match`).
    pub fn matches(&self, object: &Value) -> bool {
        let sub = |field: &str, want: &BTreeMap<String, String>| {
            want.iter().all(|(k, v)| {
                object
                    .pointer(&format!("/metadata/{field}"))
                    .and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    == Some(v.as_str())
            })
        };
        sub("labels", &self.match_labels)
            && sub("annotations", &self.match_annotations)
            && self.match_expressions.iter().all(|r| r.matches(object))
    }

    /// The Stage's weight for `object` (`weightFrom` when it yields a number, else `weight`);
    /// `None` when `weightFrom` yields an empty or unparsable string (kwok's "no weight").
    pub fn weight(&self, object: &Value) -> Option<i64> {
        let Some(query) = &self.weight_from else {
            return Some(self.weight);
        };
        match query.execute(object).first() {
            None => Some(self.weight),
            Some(Value::String(s)) => parse_int(s),
            Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
            Some(_) => Some(self.weight),
        }
    }

    /// The delay before `next` for `object` at `now_unix_nanos` (kwok `Stage.Delay`): `None`
    /// without a delay.
    pub fn delay(&self, object: &Value, now_unix_nanos: i128) -> Option<DelayRange> {
        let d = self.delay.as_ref()?;
        let duration = duration_from(
            d.duration_ms,
            d.duration_from.as_ref(),
            object,
            now_unix_nanos,
        )?;
        let Some(jitter) =
            duration_from(d.jitter_ms, d.jitter_from.as_ref(), object, now_unix_nanos)
        else {
            return Some(DelayRange {
                min_ms: duration,
                max_ms: duration,
            });
        };
        if jitter <= duration {
            return Some(DelayRange {
                min_ms: jitter,
                max_ms: jitter,
            });
        }
        Some(DelayRange {
            min_ms: duration,
            max_ms: jitter,
        })
    }
}

/// Go's `strconv.ParseInt(s, 0, 0)`: decimal, `0x`, `0o`/`0`, `0b`.
fn parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let value = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(b) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        i64::from_str_radix(b, 2).ok()
    } else if let Some(o) = digits
        .strip_prefix("0o")
        .or_else(|| digits.strip_prefix("0O"))
    {
        i64::from_str_radix(o, 8).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse().ok()
    }?;
    Some(if neg { -value } else { value })
}

/// kwok's `durationFrom.Get`: the expression's first output, an RFC 3339 time (the delay runs
/// until then) or a Go duration; else the milliseconds given; `None` when neither says.
fn duration_from(
    millis: Option<i64>,
    query: Option<&jq::Query>,
    object: &Value,
    now_unix_nanos: i128,
) -> Option<i64> {
    if let Some(query) = query
        && let Some(first) = query.execute(object).into_iter().next()
    {
        if let Value::String(text) = &first {
            if text.is_empty() {
                return None;
            }
            if let Some(at) = crate::time::parse_rfc3339(text) {
                let ms = (at - now_unix_nanos) / 1_000_000;
                return Some(
                    i64::try_from(ms)
                        .unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
                        .max(0),
                );
            }
            if let Ok(nanos) = crate::duration::parse_duration(text) {
                return Some((nanos / 1_000_000).max(0));
            }
        }
    }
    millis
}

fn expression_from(
    value: Option<&Value>,
    path: &Path,
    errors: &mut Vec<FieldError>,
) -> Option<jq::Query> {
    let v = value.filter(|v| !v.is_null())?;
    if v.get("cel").is_some_and(|c| !c.is_null()) {
        errors.push(FieldError::forbidden(
            &path.child("cel"),
            "CEL expressions are not evaluated by kubemock; use expressionFrom (jq)",
        ));
        return None;
    }
    let (source, field) = match v.pointer("/jq/expression").and_then(Value::as_str) {
        Some(s) => (s, path.child("jq").child("expression")),
        None => (
            v.get("expressionFrom")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            path.child("expressionFrom"),
        ),
    };
    match jq::Query::parse(source) {
        Ok(q) => Some(q),
        Err(e) => {
            errors.push(FieldError::invalid(
                &field,
                source,
                format!("not a jq expression kubemock evaluates: {e}"),
            ));
            None
        }
    }
}

fn requirement(item: &Value, path: &Path, errors: &mut Vec<FieldError>) -> Option<Requirement> {
    let key = item.get("key").and_then(Value::as_str).unwrap_or_default();
    let operator = item
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let values: Vec<String> = item
        .get("values")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let before = errors.len();
    let query = if key.is_empty() {
        errors.push(FieldError::required(&path.child("key"), ""));
        None
    } else {
        match jq::Query::parse(key) {
            Ok(q) => Some(q),
            Err(e) => {
                errors.push(FieldError::invalid(
                    &path.child("key"),
                    key,
                    format!("not a jq expression kubemock evaluates: {e}"),
                ));
                None
            }
        }
    };
    match operator.as_str() {
        "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
            &path.child("values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other => errors.push(FieldError::not_supported(
            &path.child("operator"),
            other,
            OPERATORS,
        )),
    }
    if errors.len() != before {
        return None;
    }
    Some(Requirement {
        query: query?,
        operator,
        values,
    })
}

impl Requirement {
    /// kwok `Requirement.Matches`.
    fn matches(&self, object: &Value) -> bool {
        let data = self.query.execute(object);
        let has_value = || {
            data.iter().any(|d| match d {
                Value::String(s) => self.values.contains(s),
                Value::Bool(b) => self.values.contains(&b.to_string()),
                Value::Number(n) => n
                    .as_i64()
                    .is_some_and(|i| self.values.contains(&i.to_string())),
                _ => false,
            })
        };
        match self.operator.as_str() {
            "In" => has_value(),
            "NotIn" => !has_value(),
            "Exists" => !data.is_empty(),
            _ => data.is_empty(),
        }
    }
}

/// The JSON patch of `next.finalizers` on an object with `current` finalizers (kwok
/// `finalizersModify`); empty when nothing changes.
pub fn finalizers_patch(current: &[String], f: &Finalizers) -> Vec<Value> {
    use serde_json::json;
    let add = |current: &[String]| -> Vec<Value> {
        if f.add.is_empty() {
            return Vec::new();
        }
        if current.is_empty() {
            return vec![json!({"op": "add", "path": "/metadata/finalizers", "value": f.add})];
        }
        f.add
            .iter()
            .filter(|a| !current.contains(a))
            .map(|a| json!({"op": "add", "path": "/metadata/finalizers/-", "value": a}))
            .collect()
    };
    let mut empty = f.empty;
    let mut ops = Vec::new();
    if !empty && !f.remove.is_empty() {
        let removed: Vec<Value> = current
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, c)| f.remove.contains(c))
            .map(|(i, _)| json!({"op": "remove", "path": format!("/metadata/finalizers/{i}")}))
            .collect();
        if removed.len() == current.len() {
            empty = true;
        } else {
            ops.extend(removed);
        }
    }
    if empty {
        if !current.is_empty() {
            ops.push(json!({"op": "remove", "path": "/metadata/finalizers"}));
        }
        ops.extend(add(&[]));
    } else {
        ops.extend(add(current));
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(stage: Value) -> Vec<String> {
        match Stage::compile(&stage) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn invalid_fields_are_named() {
        let e = errors(json!({"metadata": {"name": "x"}, "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Secret"},
            "selector": {"matchExpressions": [
                {"key": ".a", "operator": "Matches", "values": ["x"]},
                {"key": ".a |= 1", "operator": "Exists"},
                {"key": ".a", "operator": "In"},
            ]},
            "delay": {"durationMilliseconds": -1},
            "next": {"statusTemplate": "{{ if .a }}", "patches": [{"template": "x"}]},
        }}));
        let text = e.join("\n");
        for want in [
            "spec.resourceRef.kind: Unsupported value: \"Secret\"",
            "spec.selector.matchExpressions[0].operator: Unsupported value: \"Matches\"",
            "spec.selector.matchExpressions[1].key: Invalid value: \".a |= 1\"",
            "spec.selector.matchExpressions[2].values: Required value",
            "spec.delay.durationMilliseconds: Invalid value: -1",
            "spec.next.statusTemplate: Invalid value",
            "spec.next.patches: Forbidden",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }

    #[test]
    fn a_stage_that_would_loop_forever_is_refused() {
        let e = errors(json!({"metadata": {"name": "x"}, "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {},
            "next": {"statusTemplate": "phase: Running"},
        }}));
        assert!(e.iter().any(|e| e.contains("forever")), "{e:?}");
        // The same with a delay is fine.
        let ok = errors(json!({"metadata": {"name": "x"}, "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {}, "delay": {"durationMilliseconds": 1000},
            "next": {"statusTemplate": "phase: Running"},
        }}));
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn delays_weights_and_finalizers_as_kwok() {
        let stage = Stage::compile(&json!({"metadata": {"name": "x"}, "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Node"},
            "selector": {"matchLabels": {"a": "b"}},
            "weight": 7,
            "weightFrom": {"expressionFrom": ".metadata.annotations.w"},
            "delay": {"durationMilliseconds": 1000, "jitterDurationMilliseconds": 5000,
                      "durationFrom": {"expressionFrom": ".metadata.annotations.d"}},
        }}))
        .ok();
        let Some(stage) = stage else {
            panic!("did not compile")
        };
        let plain = json!({"metadata": {"labels": {"a": "b"}}});
        assert!(stage.matches(&plain));
        assert!(!stage.matches(&json!({"metadata": {"labels": {"a": "c"}}})));
        assert_eq!(stage.weight(&plain), Some(7));
        assert_eq!(
            stage.delay(&plain, 0),
            Some(DelayRange {
                min_ms: 1000,
                max_ms: 5000
            })
        );
        let annotated = json!({"metadata": {"annotations": {"w": "0x10", "d": "2s"}}});
        assert_eq!(stage.weight(&annotated), Some(16));
        assert_eq!(
            stage.delay(&annotated, 0),
            Some(DelayRange {
                min_ms: 2000,
                max_ms: 5000
            })
        );
        let at = json!({"metadata": {"annotations": {"d": "1970-01-01T00:00:10Z"}}});
        assert_eq!(
            stage.delay(&at, 4_000_000_000),
            Some(DelayRange {
                min_ms: 5000,
                max_ms: 5000
            }),
            "jitter below the duration is the delay"
        );

        let f = |add: &[&str], remove: &[&str], empty| Finalizers {
            add: add.iter().map(|s| (*s).to_owned()).collect(),
            remove: remove.iter().map(|s| (*s).to_owned()).collect(),
            empty,
        };
        let cur = ["a".to_owned(), "b".to_owned()];
        assert_eq!(
            finalizers_patch(&cur, &f(&["c", "a"], &[], false)),
            vec![json!({"op": "add", "path": "/metadata/finalizers/-", "value": "c"})]
        );
        assert_eq!(
            finalizers_patch(&cur, &f(&[], &["b"], false)),
            vec![json!({"op": "remove", "path": "/metadata/finalizers/1"})]
        );
        assert_eq!(
            finalizers_patch(&cur, &f(&["x"], &["a", "b"], false)),
            vec![
                json!({"op": "remove", "path": "/metadata/finalizers"}),
                json!({"op": "add", "path": "/metadata/finalizers", "value": ["x"]}),
            ]
        );
        assert!(finalizers_patch(&[], &f(&[], &[], true)).is_empty());
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;
    use serde_json::json;

    struct Host;
    impl gotpl::Host for Host {
        fn call(&self, name: &str, _: &[Value]) -> Option<Result<Value, String>> {
            Some(Ok(match name {
                "NodeIPsWith" | "PodIPsWith" => json!(["10.0.0.1"]),
                "NodePort" => json!(10250),
                _ => json!("2026-01-01T00:00:00Z"),
            }))
        }
    }

    /// Every Stage of `examples/stages` compiles, and its template renders YAML on a node or
    /// a running pod.
    #[test]
    fn the_example_stages_compile_and_render() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/stages");
        let node = json!({"metadata": {"name": "n", "uid": "u", "annotations": {}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        let pod = json!({"metadata": {"name": "p", "namespace": "d", "uid": "u"},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "image": "i",
                "restartCount": 2, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}});
        let mut count = 0;
        for dir in ["default", "scenarios"] {
            for entry in std::fs::read_dir(root.join(dir))
                .into_iter()
                .flatten()
                .flatten()
            {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                for doc in serde_yaml_ng::Deserializer::from_str(&text) {
                    let value: Value = match serde::Deserialize::deserialize(doc) {
                        Ok(v) => v,
                        Err(e) => panic!("{}: {e}", entry.path().display()),
                    };
                    let stage = match Stage::compile(&value) {
                        Ok(s) => s,
                        Err(e) => panic!("{}: {e:?}", entry.path().display()),
                    };
                    count += 1;
                    let object = if stage.kind == "Node" { &node } else { &pod };
                    if let Some(t) = &stage.next.status_template {
                        let text = t
                            .render(object, &Host)
                            .unwrap_or_else(|e| panic!("{}: {e}", stage.name));
                        let status: Result<Value, _> = serde_yaml_ng::from_str(&text);
                        assert!(
                            status.as_ref().is_ok_and(Value::is_object),
                            "{}: {text}\n{status:?}",
                            stage.name
                        );
                    }
                }
            }
        }
        assert!(count >= 14, "{count} Stages");
    }
}
