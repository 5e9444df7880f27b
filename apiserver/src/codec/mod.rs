//! Request bodies in the media types the real server reads (docs/api-behaviour.md#content-types): JSON, YAML, and Kubernetes
//! protobuf for built-in kinds (`kubemock_apimachinery::protobuf`), decoded to
//! the one JSON value every handler works on. One place decides which `Content-Type` means
//! what, so create, update and delete options agree.

use std::collections::HashSet;
use std::sync::LazyLock;

use axum::http::{HeaderMap, header};
use kubemock_apimachinery::protobuf;
use serde_json::Value;

use crate::registry::{Registry, Resource};
use crate::status::{ApiError, ApiResult};

/// The media types a write body may have, as the real server lists them in its 415.
pub(crate) const ACCEPTED_BODY_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// The media type of a request body: the `Content-Type` without parameters, lower-cased
/// (empty when absent).
pub(crate) fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// A body's syntax, from its media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// `application/json` (also an absent `Content-Type`, as the real server assumes).
    Json,
    /// `application/yaml`: parsed into the same JSON value.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`: an enveloped built-in object.
    Protobuf,
}

impl Syntax {
    /// The syntax of a write body with this `Content-Type`, or the real 415.
    pub(crate) fn of_body(headers: &HeaderMap) -> ApiResult<Syntax> {
        match media_type(headers).as_str() {
            "" | "application/json" | "*/*" => Ok(Syntax::Json),
            "application/yaml" | "application/x-yaml" | "text/yaml" => Ok(Syntax::Yaml),
            protobuf::MEDIA_TYPE => Ok(Syntax::Protobuf),
            _ => Err(ApiError::unsupported_media_type(ACCEPTED_BODY_TYPES)),
        }
    }

    /// Parses `body`; the error is the parser's message, for the caller to wrap.
    pub(crate) fn parse(self, body: &[u8]) -> Result<Value, String> {
        match self {
            Syntax::Json => serde_json::from_slice(body).map_err(|err| err.to_string()),
            Syntax::Yaml => {
                let value: Value =
                    serde_yaml_ng::from_slice(body).map_err(|err| format!("yaml: {err}"))?;
                Ok(value)
            }
            Syntax::Protobuf => protobuf::decode(body),
        }
    }
}

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

/// Whether `resource` is served in protobuf: a built-in resource whose kind has a message.
pub(crate) fn supports_protobuf(resource: &Resource) -> bool {
    is_builtin(resource) && protobuf::has_kind(&resource.group_version(), &resource.kind)
}

/// Whether `resource` is one of the server's own (not added at run time by a definition).
pub(crate) fn is_builtin(resource: &Resource) -> bool {
    BUILTIN.contains(&(
        resource.group.clone(),
        resource.version.clone(),
        resource.plural.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).expect("a header value"),
        );
        headers
    }

    #[test]
    fn content_types_map_to_syntaxes() {
        assert_eq!(Syntax::of_body(&HeaderMap::new()).ok(), Some(Syntax::Json));
        assert_eq!(
            Syntax::of_body(&headers("application/json; charset=utf-8")).ok(),
            Some(Syntax::Json)
        );
        assert_eq!(
            Syntax::of_body(&headers("application/yaml")).ok(),
            Some(Syntax::Yaml)
        );
        let err = Syntax::of_body(&headers("text/plain")).expect_err("415");
        assert_eq!(err.code.as_u16(), 415);
        assert_eq!(
            err.message,
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn yaml_parses_to_the_json_value() {
        let value = Syntax::Yaml
            .parse(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\ndata:\n  a: \"1\"\n")
            .expect("yaml");
        assert_eq!(
            value,
            serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"a":"1"}})
        );
        assert!(Syntax::Yaml.parse(b"a: [").is_err());
    }
}
