//! The one mapping from failures to Kubernetes `metav1.Status` responses. Every error a
//! handler returns is an [`ApiError`]; its single `IntoResponse` renders the Status body with
//! the real code, reason, message and details (docs/api-behaviour.md#errors), so that clients that
//! branch on `reason` (client-go) or on `code` (kube-rs, Python, kopf) see what a real
//! kube-apiserver would send.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kubemock_storage::Error as StorageError;
use serde::Serialize;

use crate::registry::Resource;

/// The most a request body may hold (the real server's default, whatever the content type).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// One cause of a failure (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// Machine-readable cause type (`FieldValueRequired`, ...); empty is omitted.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: String,
    /// Human-readable text.
    pub message: String,
    /// JSON path of the field; empty is omitted.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub field: String,
}

/// `details` of a Status. Empty members are omitted; route-level errors send `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    /// The object's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The API group (absent for core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The resource (plural) or, for Invalid, the Kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The object's uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Per-field causes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    /// Seconds after which a retry may succeed; also sent as `Retry-After`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
}

/// A failed request, rendered as a v1 `Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code (also the Status `code`).
    pub code: StatusCode,
    /// Status `reason` (`NotFound`, `AlreadyExists`, ...); empty is omitted.
    pub reason: &'static str,
    /// Status `message`.
    pub message: String,
    /// Status `details`; `None` omits the member. Boxed: errors travel through every handler's
    /// `Result`, which should stay small.
    pub details: Option<Box<Details>>,
    /// `metadata.continue` of the Status: the fresh token a 410 for a compacted continue token
    /// offers (docs/api-behaviour.md#pagination).
    pub continue_token: Option<Box<str>>,
}

/// A `Result` whose error renders as a Status.
pub type ApiResult<T> = Result<T, ApiError>;

/// The serialised form, fields in the order the real server emits them.
#[derive(Serialize)]
struct StatusBody<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: serde_json::Map<String, serde_json::Value>,
    status: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Details>,
    code: u16,
}

impl ApiError {
    /// A failure with the given code, reason and message, and no details.
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            continue_token: None,
        }
    }

    /// Attaches details.
    #[must_use]
    pub fn with_details(mut self, details: Details) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 404 for a path under an API root that names no served resource.
    pub fn route_not_found() -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(Details::default())
    }

    /// 405 for a method a route does not serve.
    pub fn route_method_not_allowed() -> Self {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(Details::default())
    }

    /// `details` naming an object of `resource` (kind is the plural resource, as the real
    /// server reports it for NotFound, AlreadyExists, Conflict and Forbidden).
    fn object_details(resource: &Resource, name: &str) -> Details {
        Details {
            name: Some(name.to_owned()),
            group: (!resource.group.is_empty()).then(|| resource.group.clone()),
            kind: Some(resource.plural.clone()),
            ..Details::default()
        }
    }

    /// 404: `<qres> "<name>" not found`.
    pub fn not_found(resource: &Resource, name: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified()),
        )
        .with_details(Self::object_details(resource, name))
    }

    /// 409: `<qres> "<name>" already exists` (with an optional prefix or suffix clause).
    pub fn already_exists(resource: &Resource, name: &str, prefix: &str, suffix: &str) -> Self {
        ApiError::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!(
                "{prefix}{} \"{name}\" already exists{suffix}",
                resource.qualified()
            ),
        )
        .with_details(Self::object_details(resource, name))
    }

    /// 409: `Operation cannot be fulfilled on <qres> "<name>": <why>`.
    pub fn conflict(resource: &Resource, name: &str, why: &str) -> Self {
        ApiError::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                resource.qualified()
            ),
        )
        .with_details(Self::object_details(resource, name))
    }

    /// 409 for a stale resourceVersion (docs/api-behaviour.md#update-and-conflicts).
    pub fn modified(resource: &Resource, name: &str) -> Self {
        Self::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 403: `<qres> "<name>" is forbidden: <why>`.
    pub fn forbidden(resource: &Resource, name: &str, why: &str, causes: Vec<Cause>) -> Self {
        let mut details = Self::object_details(resource, name);
        details.causes = causes;
        ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {why}", resource.qualified()),
        )
        .with_details(details)
    }

    /// 403 as `apierrors.NewForbidden` words it for `resource` of `group`: `forbidden: <why>`
    /// when there is no resource (a non-resource path), `<qres> is forbidden: <why>` when there
    /// is no name, else `<qres> "<name>" is forbidden: <why>`; the details name the group,
    /// resource and name (empty ones left out).
    pub fn forbidden_with(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        let message = if qualified.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!(
                "{qualified} {} is forbidden: {why}",
                kubemock_apimachinery::go::quote(name)
            )
        };
        let text = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message).with_details(Details {
            name: text(name),
            group: text(group),
            kind: text(resource),
            ..Details::default()
        })
    }

    /// 405: `<verb> is not supported on resources of kind "<qres>"`.
    pub fn verb_not_supported(resource: &Resource, verb: &str) -> Self {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                resource.qualified()
            ),
        )
        .with_details(Details {
            group: (!resource.group.is_empty()).then(|| resource.group.clone()),
            kind: Some(resource.plural.clone()),
            ..Details::default()
        })
    }

    /// 415 for a body in a format the server does not read.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 for an `Accept` header the server cannot answer, or a conversion of the wrong shape
    /// (upstream's `errNotAcceptable`: no details).
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    /// 413 for a body over [`MAX_BODY_BYTES`].
    pub fn too_large() -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {MAX_BODY_BYTES}"),
        )
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::GONE, "Expired", message)
    }

    /// 504 for a resourceVersion the store has not reached (docs/api-behaviour.md#resourceversion-on-reads).
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(Details {
            causes: vec![Cause {
                reason: "ResourceVersionTooLarge".to_owned(),
                message: "Too large resource version".to_owned(),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Details::default()
        })
    }

    /// A store failure that is not an expected outcome of the request.
    pub fn from_storage(error: StorageError) -> Self {
        match error {
            StorageError::Compacted {
                requested,
                compacted,
            } => Self::expired(format!(
                "too old resource version: {requested} ({})",
                compacted.saturating_sub(1)
            )),
            StorageError::FutureRevision { requested, current } => {
                Self::too_large_resource_version(requested, current)
            }
            StorageError::Closed => Self::unavailable("the server is shutting down"),
            // etcd down or not answering: 503, so clients retry (kube-apiserver answers such a
            // request with a 5xx too, never with a guess).
            StorageError::Unavailable { reason } => {
                Self::unavailable(format!("storage is unavailable: {reason}"))
            }
            other => Self::internal(other),
        }
    }

    /// 400 for a malformed request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 500 for a failure of the server itself.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        let text = error.to_string();
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            format!("Internal error occurred: {text}"),
        )
        .with_details(Details {
            causes: vec![Cause {
                reason: String::new(),
                message: text,
                field: String::new(),
            }],
            ..Details::default()
        })
    }

    /// 503 while the server is starting or stopping.
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            message,
        )
        .with_details(Details {
            retry_after_seconds: Some(1),
            ..Details::default()
        })
    }

    /// The Status body as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let mut metadata = serde_json::Map::new();
        if let Some(token) = &self.continue_token {
            metadata.insert("continue".to_owned(), serde_json::Value::from(&**token));
        }
        let body = StatusBody {
            kind: "Status",
            api_version: "v1",
            metadata,
            status: "Failure",
            message: &self.message,
            reason: self.reason,
            details: self.details.as_deref(),
            code: self.code.as_u16(),
        };
        serde_json::to_value(body).unwrap_or(serde_json::Value::Null)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.code.as_u16(),
            self.reason,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// The response carrying this failure's Status already encoded as `body` in
    /// `content_type` (the negotiated encoding, `negotiate`): its code, `Retry-After`, and the
    /// error left for the logging middleware.
    pub(crate) fn into_response_with(self, content_type: &'static str, body: Vec<u8>) -> Response {
        let retry_after = self.details.as_ref().and_then(|d| d.retry_after_seconds);
        let mut response = (
            self.code,
            [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            body,
        )
            .into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        // Left for the logging middleware, which logs every 5xx once, and for the audit log's
        // `responseStatus`.
        response.extensions_mut().insert(self);
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::to_vec(&self.to_json()).unwrap_or_default();
        body.push(b'\n');
        self.into_response_with("application/json", body)
    }
}

/// Marks an answer that left the request's body unread (over the limit) `Connection: close`,
/// as Go's server does: the connection cannot carry another request, and a client that is
/// not told so sends its next one into a closed socket.
pub(crate) fn close_connection(response: &mut axum::response::Response) {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_come_in_the_real_order_and_empty_members_are_omitted() {
        let text = serde_json::to_string(&ApiError::route_not_found().to_json()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#
        );
        let text = serde_json::to_string(&ApiError::bad_request("bad").to_json()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"bad","reason":"BadRequest","code":400}"#
        );
    }

    #[test]
    fn retry_after_becomes_a_header() {
        let response = ApiError::unavailable("starting").into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
