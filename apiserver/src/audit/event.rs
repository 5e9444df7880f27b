//! The `audit.k8s.io/v1` `Event` as upstream's log backend writes it
//! (`pkg/apis/audit/v1/types.go`): members in the struct's order, empty optional members left
//! out as Go's `omitempty` leaves them, timestamps as `metav1.MicroTime`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::policy::{Level, Stage};

/// `audit.k8s.io/v1` `ObjectReference`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) subresource: String,
}

/// `audit.k8s.io/v1` `Event`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event {
    kind: &'static str,
    api_version: &'static str,
    pub(crate) level: Level,
    #[serde(rename = "auditID")]
    pub(crate) audit_id: String,
    pub(crate) stage: Stage,
    #[serde(rename = "requestURI")]
    pub(crate) request_uri: String,
    pub(crate) verb: String,
    /// `authentication/v1` `UserInfo`; `{}` when authentication failed.
    pub(crate) user: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) impersonated_user: Option<Value>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub(crate) source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) object_ref: Option<ObjectRef>,
    /// A `metav1.Status` without its type meta.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_object: Option<Value>,
    pub(crate) request_received_timestamp: String,
    pub(crate) stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) annotations: BTreeMap<String, String>,
}

impl Serialize for Level {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for Stage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Event {
    /// An event at `level`, received at `received` (a `MicroTime`), before its stage is set.
    pub(crate) fn new(level: Level, audit_id: String, received: String) -> Event {
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level,
            audit_id,
            stage: Stage::RequestReceived,
            request_uri: String::new(),
            verb: String::new(),
            user: Value::Object(Map::new()),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            stage_timestamp: received.clone(),
            request_received_timestamp: received,
            annotations: BTreeMap::new(),
        }
    }

    /// One line of the log: the event's JSON and a newline.
    pub(crate) fn to_line(&self) -> Vec<u8> {
        // An Event of strings and JSON values always encodes.
        let mut line = serde_json::to_vec(self).unwrap_or_default();
        line.push(b'\n');
        line
    }
}

/// The now as a `metav1.MicroTime`.
pub(crate) fn micro_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    kubemock_apimachinery::time::rfc3339_micro(
        i64::try_from(now.as_secs()).unwrap_or(i64::MAX),
        now.subsec_nanos(),
    )
}

/// A response status with only its code (`auditResponseWriter.processCode`).
pub(crate) fn status_code(code: u16) -> Value {
    json!({"metadata": {}, "code": code})
}

/// The audit copy of a `metav1.Status` body (`LogResponseObject`: status, message, reason,
/// details and code, no type meta).
pub(crate) fn status_of(status: &Value) -> Value {
    let mut out = Map::new();
    out.insert("metadata".to_owned(), json!({}));
    for key in ["status", "message", "reason", "details", "code"] {
        if let Some(value) = status.get(key).filter(|v| !is_empty(v)) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(out)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_written_in_upstreams_member_order_without_empty_members() {
        let mut event = Event::new(
            Level::Metadata,
            "id".to_owned(),
            "2024-01-02T03:04:05.000006Z".to_owned(),
        );
        event.verb = "get".to_owned();
        event.response_status = Some(status_code(200));
        event.object_ref = Some(ObjectRef {
            resource: "pods".to_owned(),
            api_version: "v1".to_owned(),
            ..ObjectRef::default()
        });
        let line = String::from_utf8(event.to_line()).unwrap();
        assert_eq!(
            line,
            "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"Metadata\",\
             \"auditID\":\"id\",\"stage\":\"RequestReceived\",\"requestURI\":\"\",\"verb\":\"get\",\
             \"user\":{},\"objectRef\":{\"resource\":\"pods\",\"apiVersion\":\"v1\"},\
             \"responseStatus\":{\"metadata\":{},\"code\":200},\
             \"requestReceivedTimestamp\":\"2024-01-02T03:04:05.000006Z\",\
             \"stageTimestamp\":\"2024-01-02T03:04:05.000006Z\"}\n"
        );
    }

    #[test]
    fn a_status_body_is_copied_without_its_type_meta() {
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "m", "reason": "NotFound",
            "details": {"name": "x", "kind": "pods"}, "code": 404});
        assert_eq!(
            serde_json::to_string(&status_of(&status)).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"m","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#
        );
    }
}
