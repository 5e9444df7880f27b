//! Leases and Events (docs/api-behaviour.md#leases-and-events): what leader election and event recorders write. Their timestamps
//! are decoded as the real types decode them (`metav1.Time`: RFC 3339, stored at seconds
//! precision in UTC; `metav1.MicroTime`: exactly six fractional digits, stored in UTC; anything
//! else is a 400), core/v1 Events serialise the fields Go always writes, and both Event APIs
//! are validated as `pkg/apis/core/validation/events.go` does (strictly for events.k8s.io).

use serde_json::{Value, json};

use super::fields::{default_to, go_str, invalid, obj_at, required};
use crate::meta::FieldError;
use crate::object::Object;
use crate::status::{ApiError, ApiResult};
use kubemock_apimachinery::time;

/// `ReportingInstanceLengthLimit`, `ActionLengthLimit`, `ReasonLengthLimit`.
const SHORT_FIELD_LIMIT: usize = 128;
/// `NoteLengthLimit`.
const NOTE_LIMIT: usize = 1024;
/// The layout Go names in MicroTime parse errors.
const MICRO_LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";
/// The layout Go names in Time parse errors.
const SECONDS_LAYOUT: &str = "2006-01-02T15:04:05Z07:00";

/// Which of a timestamp's two wire types a field has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Precision {
    /// `metav1.Time`.
    Seconds,
    /// `metav1.MicroTime`.
    Micros,
}

/// The timestamp fields of a kind, by path.
fn time_fields(kind: &str) -> &'static [(&'static [&'static str], Precision)] {
    use Precision::{Micros, Seconds};
    match kind {
        "Lease" => &[
            (&["spec", "acquireTime"], Micros),
            (&["spec", "renewTime"], Micros),
        ],
        "Event" => &[
            (&["firstTimestamp"], Seconds),
            (&["lastTimestamp"], Seconds),
            (&["eventTime"], Micros),
            (&["series", "lastObservedTime"], Micros),
        ],
        "EventV1" => &[
            (&["deprecatedFirstTimestamp"], Seconds),
            (&["deprecatedLastTimestamp"], Seconds),
            (&["eventTime"], Micros),
            (&["series", "lastObservedTime"], Micros),
        ],
        _ => &[],
    }
}

/// Decodes and re-encodes the timestamps of `kind` as the real server stores them.
pub(super) fn normalize_times(kind: &str, type_name: &str, object: &mut Object) -> ApiResult<()> {
    for (path, precision) in time_fields(kind) {
        let Some((last, parents)) = path.split_last() else {
            continue;
        };
        let mut map = Some(&mut *object);
        for parent in parents {
            map = map
                .and_then(|m| m.get_mut(*parent))
                .and_then(Value::as_object_mut);
        }
        let Some(map) = map else { continue };
        let Some(Value::String(text)) = map.get(*last) else {
            continue;
        };
        let normalized = normalize_time(text, *precision).map_err(|detail| {
            ApiError::bad_request(format!(
                "{type_name} in version \"v1\" cannot be handled as a {type_name}: {detail}"
            ))
        })?;
        map.insert((*last).to_owned(), Value::String(normalized));
    }
    Ok(())
}

/// One timestamp as stored, or the parse error in Go's words.
fn normalize_time(text: &str, precision: Precision) -> Result<String, String> {
    let layout = match precision {
        Precision::Seconds => SECONDS_LAYOUT,
        Precision::Micros => MICRO_LAYOUT,
    };
    let error = |what: &str, as_what: &str| {
        format!(
            "parsing time {}: cannot parse {} as {}",
            go_str(text) + " as " + &go_str(layout),
            go_str(what),
            go_str(as_what)
        )
    };
    let nanos = time::parse_rfc3339(text).ok_or_else(|| error(text, "2006"))?;
    if precision == Precision::Micros {
        // Exactly six fractional digits, as the layout demands.
        let fraction = text.get(19..).unwrap_or("");
        let digits = fraction
            .strip_prefix('.')
            .map_or(0, |f| f.bytes().take_while(u8::is_ascii_digit).count());
        if digits != 6 {
            return Err(error(fraction, ".000000"));
        }
    }
    let seconds =
        i64::try_from(nanos.div_euclid(1_000_000_000)).map_err(|_| error(text, "2006"))?;
    let sub = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
    Ok(match precision {
        Precision::Seconds => time::rfc3339(seconds),
        Precision::Micros => time::rfc3339_micro(seconds, sub),
    })
}

/// The fields Go always serialises on a core/v1 Event (no `omitempty`, or structs).
pub(super) fn default_event(object: &mut Object) {
    default_to(object, "involvedObject", json!({}));
    default_to(object, "source", json!({}));
    for field in ["firstTimestamp", "lastTimestamp", "eventTime"] {
        object.entry(field.to_owned()).or_insert(Value::Null);
    }
    for field in ["reportingComponent", "reportingInstance"] {
        object.entry(field.to_owned()).or_insert_with(|| json!(""));
    }
}

/// An Event's fields by their internal names, from either API's object.
struct EventView<'a> {
    object: &'a Object,
    v1: bool,
}

impl<'a> EventView<'a> {
    fn get(&self, internal: &str) -> Option<&'a Value> {
        let name = if self.v1 {
            match internal {
                "involvedObject" => "regarding",
                "message" => "note",
                "reportingComponent" => "reportingController",
                "source" => "deprecatedSource",
                "firstTimestamp" => "deprecatedFirstTimestamp",
                "lastTimestamp" => "deprecatedLastTimestamp",
                "count" => "deprecatedCount",
                other => other,
            }
        } else {
            internal
        };
        self.object.get(name).filter(|v| !v.is_null())
    }

    fn text(&self, internal: &str) -> &'a str {
        self.get(internal).and_then(Value::as_str).unwrap_or("")
    }

    fn namespace(&self) -> &'a str {
        crate::object::meta_str(self.object, "namespace").unwrap_or("")
    }

    fn involved_namespace(&self) -> &'a str {
        self.get("involvedObject")
            .and_then(|o| o.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// `legacyValidateEvent`: namespaces agree; an event with an `eventTime` names its reporter,
/// action and reason.
fn legacy_validate(view: &EventView<'_>, errors: &mut Vec<FieldError>) {
    let namespace = view.namespace();
    let involved = view.involved_namespace();
    let mismatch = |errors: &mut Vec<FieldError>| {
        errors.push(invalid(
            "involvedObject.namespace",
            go_str(involved),
            "does not match event.namespace",
        ));
    };
    if view.get("eventTime").is_none() {
        if involved.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                mismatch(errors);
            }
        } else if namespace != involved {
            mismatch(errors);
        }
        return;
    }
    if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
        mismatch(errors);
    }
    let controller_field = if view.v1 {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if view.text("reportingComponent").is_empty() {
        errors.push(required(controller_field, ""));
    }
    if view.text("reportingInstance").is_empty() {
        errors.push(required("reportingInstance", ""));
    }
    for (field, limit) in [
        ("reportingInstance", SHORT_FIELD_LIMIT),
        ("action", SHORT_FIELD_LIMIT),
        ("reason", SHORT_FIELD_LIMIT),
        ("message", NOTE_LIMIT),
    ] {
        if field != "reportingInstance" && field != "message" && view.text(field).is_empty() {
            errors.push(required(field, ""));
        }
        if view.text(field).len() > limit {
            errors.push(invalid(
                field,
                "\"\"".to_owned(),
                &format!("can have at most {limit} characters"),
            ));
        }
    }
}

/// `ValidateEventCreate`: legacy rules for core/v1, and strict ones for events.k8s.io.
pub(super) fn validate_event(object: &Object, v1: bool, errors: &mut Vec<FieldError>) {
    let view = EventView { object, v1 };
    legacy_validate(&view, errors);
    if !v1 {
        return;
    }
    validate_series(&view, errors);
    if view.get("eventTime").is_none() {
        errors.push(required("eventTime", ""));
    }
    let kind = view.text("type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(invalid(
            "type",
            "\"\"".to_owned(),
            &format!("has invalid value: {kind}"),
        ));
    }
    for (internal, field) in [
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
    ] {
        if view.get(internal).is_some() {
            errors.push(invalid(field, "\"\"".to_owned(), "needs to be unset"));
        }
    }
    if view.get("count").and_then(Value::as_i64).unwrap_or(0) != 0 {
        errors.push(invalid(
            "deprecatedCount",
            "\"\"".to_owned(),
            "needs to be unset",
        ));
    }
    let source = view.get("source");
    let set = |key: &str| {
        source
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    if set("component") || set("host") {
        errors.push(invalid(
            "deprecatedSource",
            "\"\"".to_owned(),
            "needs to be unset",
        ));
    }
}

/// `validateV1EventSeries`.
fn validate_series(view: &EventView<'_>, errors: &mut Vec<FieldError>) {
    let Some(series) = view.get("series") else {
        return;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errors.push(invalid(
            "series.count",
            "\"\"".to_owned(),
            "should be at least 2",
        ));
    }
    if series.get("lastObservedTime").is_none_or(Value::is_null) {
        errors.push(required("series.lastObservedTime", ""));
    }
}

/// `ValidateEventUpdate`: legacy rules; through events.k8s.io only the series may change.
pub(super) fn validate_event_update(
    existing: &Object,
    updated: &Object,
    v1: bool,
    errors: &mut Vec<FieldError>,
) {
    let new = EventView {
        object: updated,
        v1,
    };
    legacy_validate(&new, errors);
    if !v1 {
        return;
    }
    let old = EventView {
        object: existing,
        v1,
    };
    if old.get("series") != new.get("series") {
        validate_series(&new, errors);
    }
    for field in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        if old.get(field) != new.get(field) {
            let name = if field == "reportingComponent" {
                "reportingController"
            } else {
                field
            };
            let value = new
                .get(field)
                .map_or("null".to_owned(), super::fields::go_value);
            errors.push(invalid(name, value, "field is immutable"));
        }
    }
}

/// The field renames between the two Event APIs (docs/api-behaviour.md#events): core/v1 name, events.k8s.io/v1 name.
const V1_FIELDS: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// An events.k8s.io/v1 Event as stored: the core/v1 Event it is (both APIs share one
/// storage, docs/api-behaviour.md#events), with the fields Go always writes for core/v1.
pub(super) fn v1_to_core(object: &Object) -> Object {
    let mut core = Object::with_capacity(object.len() + 4);
    for (key, value) in object {
        let name = V1_FIELDS
            .iter()
            .find(|(_, v1)| v1 == key)
            .map_or(key.as_str(), |(core, _)| core);
        let value = match key.as_str() {
            "apiVersion" => json!("v1"),
            _ => value.clone(),
        };
        core.insert(name.to_owned(), value);
    }
    default_event(&mut core);
    core
}

/// A stored (core/v1) Event as events.k8s.io/v1 serialises it: renamed fields, `eventTime`,
/// `regarding` and `deprecatedSource` always present, empty `omitempty` fields left out.
pub(super) fn core_to_v1(object: Object) -> Object {
    let mut v1 = Object::with_capacity(object.len());
    for (key, value) in object {
        let name = V1_FIELDS
            .iter()
            .find(|(core, _)| *core == key)
            .map_or(key.as_str(), |(_, v1)| v1)
            .to_owned();
        let omitted = match name.as_str() {
            "reportingController" | "reportingInstance" | "note" | "action" | "reason" | "type" => {
                value.as_str() == Some("")
            }
            "deprecatedCount" => value.as_i64().unwrap_or(0) == 0,
            _ => false,
        };
        if omitted {
            continue;
        }
        let value = if name == "apiVersion" {
            json!("events.k8s.io/v1")
        } else {
            value
        };
        v1.insert(name, value);
    }
    v1.entry("eventTime".to_owned()).or_insert(Value::Null);
    for field in ["regarding", "deprecatedSource"] {
        v1.entry(field.to_owned()).or_insert_with(|| json!({}));
    }
    v1
}

/// `ValidateLeaseSpec`.
pub(super) fn validate_lease(object: &Object, errors: &mut Vec<FieldError>) {
    let number = |field: &str| obj_at(object, &["spec", field]).and_then(Value::as_i64);
    if let Some(duration) = number("leaseDurationSeconds")
        && duration <= 0
    {
        errors.push(invalid(
            "spec.leaseDurationSeconds",
            duration.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = number("leaseTransitions")
        && transitions < 0
    {
        errors.push(invalid(
            "spec.leaseTransitions",
            transitions.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let text = |field: &str| {
        obj_at(object, &["spec", field])
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    if !text("preferredHolder").is_empty() && text("strategy").is_empty() {
        errors.push(super::fields::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_times_need_six_digits_and_are_stored_in_utc() {
        assert_eq!(
            normalize_time("2024-05-01T12:00:00.123456Z", Precision::Micros).unwrap(),
            "2024-05-01T12:00:00.123456Z"
        );
        assert_eq!(
            normalize_time("2024-05-01T14:00:00.000001+02:00", Precision::Micros).unwrap(),
            "2024-05-01T12:00:00.000001Z"
        );
        let err = normalize_time("2024-05-01T12:00:00Z", Precision::Micros).unwrap_err();
        assert_eq!(
            err,
            "parsing time \"2024-05-01T12:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
        );
        assert_eq!(
            normalize_time("2024-05-01T12:00:00.9Z", Precision::Seconds).unwrap(),
            "2024-05-01T12:00:00Z"
        );
        assert!(normalize_time("yesterday", Precision::Seconds).is_err());
    }

    #[test]
    fn new_style_events_need_their_reporter() {
        let event =
            json!({"metadata": {"namespace": "ns"}, "eventTime": "2024-05-01T12:00:00.000000Z",
                           "regarding": {"namespace": "ns"}, "type": "Normal"})
            .as_object()
            .cloned()
            .unwrap();
        let mut errors = Vec::new();
        validate_event(&event, true, &mut errors);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "reportingController",
                "reportingInstance",
                "action",
                "reason"
            ]
        );
    }

    #[test]
    fn the_two_event_apis_are_one_event_renamed() {
        let v1 = json!({"kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e"}, "eventTime": "2024-05-01T12:00:00.000000Z",
            "reportingController": "c", "reportingInstance": "i", "action": "a",
            "reason": "r", "type": "Normal", "note": "n", "regarding": {"kind": "Pod"},
            "series": {"count": 2, "lastObservedTime": "2024-05-01T12:00:01.000000Z"}})
        .as_object()
        .cloned()
        .unwrap();
        let core = v1_to_core(&v1);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"], json!({"kind": "Pod"}));
        assert_eq!(core["message"], "n");
        assert_eq!(core["reportingComponent"], "c");
        assert_eq!(core["source"], json!({}));
        assert_eq!(core["firstTimestamp"], Value::Null);
        let back = core_to_v1(core);
        for (key, value) in &v1 {
            assert_eq!(back.get(key), Some(value), "{key}");
        }
        assert_eq!(back["deprecatedSource"], json!({}));
        assert!(back.get("deprecatedCount").is_none());
    }

    #[test]
    fn legacy_events_must_be_in_their_objects_namespace() {
        let event = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}})
            .as_object()
            .cloned()
            .unwrap();
        let mut errors = Vec::new();
        validate_event(&event, false, &mut errors);
        assert_eq!(
            errors[0].detail,
            "Invalid value: \"b\": does not match event.namespace"
        );
    }
}
