//! The one place a resource response is encoded. The real server negotiates the serializer of
//! every answer from `Accept` (`k8s.io/apiserver/pkg/endpoints/handlers/negotiation`): the
//! first range it can answer, in goautoneg's order, wins. Built-in kinds are served in JSON,
//! YAML and protobuf; custom resources have no protobuf, so
//! `application/vnd.kubernetes.protobuf, */*` gets them JSON. kubemock answers a protobuf
//! range in protobuf and every other answerable range (JSON, YAML, `*/*`) in JSON; Table
//! conversions are JSON only, so a protobuf range asking for one is passed over.
//!
//! Handlers negotiate once per request ([`Encoding::negotiate`], kept in the call) and hand
//! every body — objects, lists, Status errors, watch events — to [`Encoding`], so no handler
//! branches on the media type. The JSON paths are unchanged (GET keeps answering from the
//! stored bytes).

use std::collections::HashSet;
use std::sync::LazyLock;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tracing::warn;

use crate::accept;
use crate::codec::protobuf::{self, MEDIA_TYPE, WATCH_MEDIA_TYPE};
use crate::registry::{Registry, Resource};
use crate::status::ApiError;

/// The built-in resources (group, version, plural): the ones with protobuf. Resources added
/// at run time (custom resources) are not among them, whatever their kind is called.
static BUILTIN: LazyLock<HashSet<(String, String, String)>> = LazyLock::new(|| {
    let registry = Registry::builtin();
    let mut builtin = HashSet::new();
    for group in registry.groups() {
        for version in &group.versions {
            for resource in registry.resources_in(&group.name, version) {
                builtin.insert((
                    resource.group.clone(),
                    resource.version.clone(),
                    resource.plural.clone(),
                ));
            }
        }
    }
    builtin
});

/// The serializer of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// `application/json` (also for ranges asking for YAML, which kubemock answers in JSON).
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

impl Encoding {
    /// The encoding `Accept` asks for on `resource`.
    pub(crate) fn negotiate(headers: &HeaderMap, resource: &Resource) -> Encoding {
        if !headers.contains_key(header::ACCEPT) {
            return Encoding::Json;
        }
        for range in accept::media_ranges(headers) {
            if let Some(stream) = range.param("stream")
                && !stream.is_empty()
                && stream != "watch"
            {
                continue;
            }
            if range.kind == "application" && range.subtype == "vnd.kubernetes.protobuf" {
                let converts = ["as", "g", "v"].iter().any(|p| range.param(p).is_some());
                // Asked only here: most clients accept JSON and never pay for the lookup.
                if !converts && supports_protobuf(resource) {
                    return Encoding::Protobuf;
                }
                continue;
            }
            if range.accepts_json() || range.names_other_serializer() {
                return Encoding::Json;
            }
        }
        Encoding::Json
    }

    /// A response with `body` (an object, a list or a Status), indented when `pretty` (JSON
    /// only, as upstream's protobuf has no pretty form).
    pub(crate) fn respond(self, status: StatusCode, body: &Value, pretty: bool) -> Response {
        if self == Encoding::Protobuf {
            match protobuf::encode(body) {
                Ok(bytes) => return with_type(status, MEDIA_TYPE, bytes),
                Err(err) => warn!(error = %err, "answering in JSON: the body has no protobuf form"),
            }
        }
        let encoded = if pretty {
            serde_json::to_vec_pretty(body)
        } else {
            serde_json::to_vec(body)
        };
        match encoded {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                with_type(status, "application/json", bytes)
            }
            Err(err) => ApiError::internal(err).into_response(),
        }
    }

    /// The Status response of a failure, with the failure's code.
    pub(crate) fn error(self, error: ApiError) -> Response {
        if self == Encoding::Protobuf {
            match protobuf::encode(&error.to_json()) {
                Ok(bytes) => return error.into_response_with(MEDIA_TYPE, bytes),
                Err(err) => warn!(error = %err, "answering a Status in JSON"),
            }
        }
        error.into_response()
    }

    /// The `Content-Type` of a watch response (the real server adds `;stream=watch` to every
    /// media type but JSON).
    pub(crate) fn watch_content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Protobuf => WATCH_MEDIA_TYPE,
        }
    }

    /// One watch event as sent: a JSON line, or a length-prefixed protobuf frame. An object
    /// without a protobuf form is sent as an ERROR event.
    pub(crate) fn watch_event(self, kind: &str, object: Value) -> Bytes {
        if self == Encoding::Protobuf {
            match protobuf::encode_watch_event(kind, &object) {
                Ok(frame) => return Bytes::from(frame),
                Err(err) => {
                    let error = ApiError::internal(format!("encoding a {kind} event: {err}"));
                    if let Ok(frame) = protobuf::encode_watch_event("ERROR", &error.to_json()) {
                        return Bytes::from(frame);
                    }
                }
            }
        }
        let mut line =
            serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
        line.push(b'\n');
        Bytes::from(line)
    }
}

/// Whether `resource` is served in protobuf: a built-in resource whose kind has a message.
pub(crate) fn supports_protobuf(resource: &Resource) -> bool {
    BUILTIN.contains(&(
        resource.group.clone(),
        resource.version.clone(),
        resource.plural.clone(),
    )) && protobuf::has_kind(&resource.group_version(), &resource.kind)
}

fn with_type(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(accept: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, accept.parse().expect("a header"));
        headers
    }

    #[test]
    fn protobuf_is_answered_when_preferred_and_the_resource_has_it() {
        let registry = Registry::builtin();
        let pods = registry.lookup("", "v1", "pods").expect("pods");
        let deployments = registry
            .lookup("apps", "v1", "deployments")
            .expect("deployments");
        let negotiate = |accept: &str| Encoding::negotiate(&headers(accept), &pods);
        for protobuf in [
            "application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf, */*",
            "application/vnd.kubernetes.protobuf,application/json",
            "application/vnd.kubernetes.protobuf;stream=watch",
            "application/json;q=0.5, application/vnd.kubernetes.protobuf",
            "*/*;q=0.1, application/vnd.kubernetes.protobuf;q=0.9",
            "text/html, application/vnd.kubernetes.protobuf",
        ] {
            assert_eq!(negotiate(protobuf), Encoding::Protobuf, "{protobuf}");
        }
        for json in [
            "application/json",
            "*/*",
            "application/json, application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf;q=0.5, application/json",
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
            "application/vnd.kubernetes.protobuf;stream=other, application/json",
            "application/yaml, application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf;q=0, */*",
            "",
        ] {
            assert_eq!(negotiate(json), Encoding::Json, "{json}");
        }
        assert_eq!(
            Encoding::negotiate(&HeaderMap::new(), &pods),
            Encoding::Json
        );
        assert_eq!(
            Encoding::negotiate(&headers(MEDIA_TYPE), &deployments),
            Encoding::Protobuf
        );
    }

    #[test]
    fn custom_resources_answer_json() {
        let registry = Registry::builtin();
        let mut custom = (*registry
            .lookup("apps", "v1", "deployments")
            .expect("deployments"))
        .clone();
        custom.group = "example.com".to_owned();
        custom.plural = "widgets".to_owned();
        custom.kind = "Widget".to_owned();
        assert!(!supports_protobuf(&custom));
        assert_eq!(
            Encoding::negotiate(
                &headers("application/vnd.kubernetes.protobuf, */*"),
                &custom
            ),
            Encoding::Json
        );
        // A custom resource named like a built-in kind is still custom.
        custom.kind = "Deployment".to_owned();
        custom.group = "apps.example.com".to_owned();
        assert!(!supports_protobuf(&custom));
    }

    #[tokio::test]
    async fn bodies_and_errors_are_encoded_as_negotiated() {
        let body = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"}});
        let response = Encoding::Protobuf.respond(StatusCode::CREATED, &body, false);
        assert_eq!(response.status(), StatusCode::CREATED);
        assert_eq!(response.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        assert_eq!(protobuf::decode(&bytes).expect("decodes"), body);
        // A body without a protobuf form falls back to JSON.
        let widget = json!({"kind": "Widget", "apiVersion": "example.com/v1"});
        let response = Encoding::Protobuf.respond(StatusCode::OK, &widget, false);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        // Errors keep their code and Retry-After.
        let response = Encoding::Protobuf.error(ApiError::unavailable("starting"));
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let status = protobuf::decode(&bytes).expect("decodes");
        assert_eq!(status, ApiError::unavailable("starting").to_json());
    }
}
