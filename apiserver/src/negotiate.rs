//! The one place a resource response's form is decided and encoded. The real server
//! negotiates every answer from `Accept` (`k8s.io/apiserver/pkg/endpoints/handlers/negotiation`):
//! media ranges in goautoneg's order, each tried against the serializers in the server's order
//! (JSON, YAML, protobuf); the first the endpoint can answer wins, with its parameters: a
//! conversion (`as`, `g`, `v`: a `meta.k8s.io` Table or `PartialObjectMetadata[List]`, from
//! `handlers/response.go`), a stream schema (`stream=watch`) and `pretty=1`. No acceptable
//! range is a 406. Built-in kinds are served in all three; custom resources have no protobuf
//! form of their own (`PartialObjectMetadata` of them is a meta type and has one); Tables are
//! JSON or YAML only; watches have no YAML form.
//!
//! Handlers negotiate once per request ([`Negotiated::negotiate`], kept in the call) and hand
//! every body — objects, lists, Status errors, watch events — to [`Encoding`], so no handler
//! branches on the media type. The plain JSON paths are unchanged (GET keeps answering from the
//! stored bytes).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;
use tracing::warn;

use crate::accept::{self, MediaRange};
use crate::codec::{is_builtin, supports_protobuf};
use crate::partial::{self, META_GROUP};
use crate::query::Query;
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult};
use crate::table::{self, TableRequest};
use kubemock_apimachinery::protobuf::{self, MEDIA_TYPE, WATCH_MEDIA_TYPE};

/// The versions of the conversions' kinds, preferred first.
const META_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
/// What a 406 lists: every media type the resource endpoints serve.
const MEDIA_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
/// What a 406 of a watch lists: the media types with a stream form.
const STREAM_MEDIA_TYPES: &str =
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";

/// The serializer of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// `application/json`.
    Json,
    /// `application/yaml` (keys sorted, as Go's `yaml.JSONToYAML` writes them).
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// The serializers in the server's order, by media subtype (all are `application/...`).
const SERIALIZERS: [(&str, Encoding); 3] = [
    ("json", Encoding::Json),
    ("yaml", Encoding::Yaml),
    ("vnd.kubernetes.protobuf", Encoding::Protobuf),
];

/// A conversion of the response the client asked for and the server makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// A `meta.k8s.io` Table of this version (docs/api-behaviour.md#tables).
    Table(&'static str),
    /// `PartialObjectMetadata` (or, with `list`, `PartialObjectMetadataList`) of this version:
    /// what client-go's metadata client and metadata-only informers ask for.
    Partial { version: &'static str, list: bool },
}

/// What the answers to one request are: negotiated once, from `Accept` (and, for
/// pretty-printing, the query and the User-Agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Negotiated {
    pub(crate) encoding: Encoding,
    pub(crate) conversion: Option<Conversion>,
    /// Indented JSON (`?pretty`, a `pretty=1` media type parameter, or a curl, Wget or browser
    /// User-Agent, as upstream's `isPrettyPrint`).
    pub(crate) pretty: bool,
}

impl Negotiated {
    /// What `Accept` asks for on `resource`: the first media range, in goautoneg's order, that
    /// a serializer can answer with the range's parameters; 406 when none can.
    pub(crate) fn negotiate(
        headers: &HeaderMap,
        query: &Query,
        resource: &Resource,
    ) -> ApiResult<Negotiated> {
        let pretty = pretty_print(headers, query);
        // No header (or an empty one) is JSON; one without a range that parses answers nothing.
        if headers
            .get(header::ACCEPT)
            .is_none_or(|accept| accept.is_empty())
        {
            return Ok(Negotiated {
                encoding: Encoding::Json,
                conversion: None,
                pretty,
            });
        }
        for range in &accept::media_ranges(headers) {
            for (subtype, encoding) in SERIALIZERS {
                let matches = (range.kind == "application"
                    && (range.subtype == subtype || range.subtype == "*"))
                    || (range.kind == "*" && range.subtype == "*");
                if !matches {
                    continue;
                }
                if let Some(conversion) = accepted(range, encoding, resource) {
                    return Ok(Negotiated {
                        encoding,
                        conversion,
                        pretty: pretty || range.param("pretty") == Some("1"),
                    });
                }
            }
        }
        Err(ApiError::not_acceptable(format!(
            "only the following media types are accepted: {MEDIA_TYPES}"
        )))
    }

    /// Plain JSON, compact: what the handlers' stored-bytes fast paths answer.
    pub(crate) fn is_plain_json(&self) -> bool {
        self.encoding == Encoding::Json && self.conversion.is_none() && !self.pretty
    }

    /// The serializer of a watch: 406 for one without a stream form (YAML), as upstream's
    /// `NegotiateOutputMediaTypeStream`.
    pub(crate) fn watch_encoding(&self) -> ApiResult<Encoding> {
        match self.encoding {
            Encoding::Yaml => Err(ApiError::not_acceptable(format!(
                "only the following media types are accepted: {STREAM_MEDIA_TYPES}"
            ))),
            encoding => Ok(encoding),
        }
    }
}

impl Conversion {
    /// `body` converted (upstream's `doTransformObject`), or `None` to answer it as it is: a
    /// Status is never converted. `list` says whether `body` is a list: asking for the
    /// `PartialObjectMetadata` of a list, or the `PartialObjectMetadataList` of an object, is a
    /// 406; `query` carries a Table's `includeObject`.
    pub(crate) fn apply(
        self,
        body: &Value,
        list: bool,
        resource: &Resource,
        subresource: Option<&str>,
        query: &Query,
    ) -> ApiResult<Option<Value>> {
        if body.get("kind").and_then(Value::as_str) == Some("Status") {
            return Ok(None);
        }
        let converted = match self {
            Conversion::Table(version) => {
                let table = TableRequest::new(version, query)?;
                let printer = table::printer_for(resource, subresource);
                if list {
                    // Rows carry objects with their kind (list items have none, docs/api-behaviour.md#list-shape), as
                    // upstream converts each row's object to the endpoint's version.
                    let items = body
                        .get("items")
                        .and_then(Value::as_array)
                        .map(|items| {
                            items
                                .iter()
                                .map(|item| match item {
                                    Value::Object(map) => Value::Object(
                                        crate::object::with_type_meta(map.clone(), resource),
                                    ),
                                    other => other.clone(),
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let metadata = body
                        .get("metadata")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    table.list(&printer, items, metadata)
                } else {
                    table.object(&printer, body.clone())
                }
            }
            Conversion::Partial {
                version,
                list: false,
            } if !list => partial::object(version, body),
            Conversion::Partial {
                version,
                list: true,
            } if list => partial::list(version, body),
            Conversion::Partial { list: false, .. } => {
                return Err(ApiError::not_acceptable(format!(
                    "you requested PartialObjectMetadata, but the requested object is a list ({})",
                    go_type(resource, subresource, true)
                )));
            }
            Conversion::Partial { list: true, .. } => {
                return Err(ApiError::not_acceptable(format!(
                    "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                    go_type(resource, subresource, false)
                )));
            }
        };
        Ok(Some(converted))
    }
}

/// The Go type upstream's messages name (`%T` of what the registry returns): the internal
/// type, `*core.ConfigMap`, `*apps.DeploymentList`, `*unstructured.Unstructured`.
fn go_type(resource: &Resource, subresource: Option<&str>, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if subresource == Some("scale") {
        return format!("*autoscaling.Scale{suffix}");
    }
    if !is_builtin(resource) {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match resource.group.as_str() {
        "" | "events.k8s.io" => "core",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("*{package}.{}{suffix}", resource.kind)
}

/// Whether `encoding` can answer `range` on `resource` (upstream's `acceptMediaTypeOptions`
/// with the resource endpoints' restrictions): `Some` with the conversion asked for, if any.
fn accepted(
    range: &MediaRange,
    encoding: Encoding,
    resource: &Resource,
) -> Option<Option<Conversion>> {
    if let Some(stream) = range.param("stream").filter(|s| !s.is_empty())
        && (stream != "watch" || encoding == Encoding::Yaml)
    {
        return None;
    }
    // The server version of generic output: the endpoints' meta version only.
    if range
        .param("sv")
        .is_some_and(|v| !v.is_empty() && v != "v1")
    {
        return None;
    }
    let (kind, group, version) = (range.param("as"), range.param("g"), range.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        // The plain objects: custom resources have no protobuf form.
        return (encoding != Encoding::Protobuf || supports_protobuf(resource)).then_some(None);
    }
    if group != Some(META_GROUP) {
        return None;
    }
    let version = META_VERSIONS.into_iter().find(|v| Some(*v) == version)?;
    match kind? {
        "Table" if encoding != Encoding::Protobuf => Some(Some(Conversion::Table(version))),
        "PartialObjectMetadata" => Some(Some(Conversion::Partial {
            version,
            list: false,
        })),
        "PartialObjectMetadataList" => Some(Some(Conversion::Partial {
            version,
            list: true,
        })),
        _ => None,
    }
}

/// Upstream's `isPrettyPrint`: `?pretty` parsed as Go's `ParseBool` when given, else whether
/// the User-Agent is a person's tool (curl, Wget, a browser).
fn pretty_print(headers: &HeaderMap, query: &Query) -> bool {
    if let Some(value) = query.get("pretty").filter(|v| !v.is_empty()) {
        return matches!(value, "1" | "t" | "T" | "true" | "TRUE" | "True");
    }
    headers
        .get(header::USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
        .is_some_and(|agent| {
            ["curl", "Wget", "Mozilla/5.0"]
                .iter()
                .any(|tool| agent.starts_with(tool))
        })
}

/// The encoding of a Status answered before any resource is known (the authorization
/// step's 403): the first media range `Accept` prefers that names a serializer without asking
/// for a conversion (`application/*` and `*/*` are JSON, the server's first), else JSON
/// (where upstream's `ErrorNegotiated` would answer 406 instead).
pub(crate) fn status_encoding(headers: &HeaderMap) -> Encoding {
    for range in accept::media_ranges(headers) {
        if range.param("as").is_some() {
            continue;
        }
        match (range.kind.as_str(), range.subtype.as_str()) {
            ("application", "json" | "*") | ("*", "*") => return Encoding::Json,
            ("application", "yaml") => return Encoding::Yaml,
            ("application", "vnd.kubernetes.protobuf") => return Encoding::Protobuf,
            _ => {}
        }
    }
    Encoding::Json
}

impl Encoding {
    /// A response with `body` (an object, a list or a Status), indented when `pretty` (JSON
    /// only, as upstream has no pretty form of the others).
    pub(crate) fn respond(self, status: StatusCode, body: &Value, pretty: bool) -> Response {
        match self {
            Encoding::Protobuf => match protobuf::encode(body) {
                Ok(bytes) => return with_type(status, MEDIA_TYPE, bytes),
                Err(err) => warn!(error = %err, "answering in JSON: the body has no protobuf form"),
            },
            Encoding::Yaml => match yaml(body) {
                Ok(bytes) => return with_type(status, YAML_MEDIA_TYPE, bytes),
                Err(err) => return ApiError::internal(err).into_response(),
            },
            Encoding::Json => {}
        }
        // Go's json.MarshalIndent ends without a newline; its Encoder's compact form with one.
        let encoded = if pretty {
            serde_json::to_vec_pretty(body)
        } else {
            serde_json::to_vec(body).map(|mut bytes| {
                bytes.push(b'\n');
                bytes
            })
        };
        match encoded {
            Ok(bytes) => with_type(status, "application/json", bytes),
            Err(err) => ApiError::internal(err).into_response(),
        }
    }

    /// The Status response of a failure, with the failure's code.
    pub(crate) fn error(self, error: ApiError) -> Response {
        match self {
            Encoding::Protobuf => match protobuf::encode(&error.to_json()) {
                Ok(bytes) => return error.into_response_with(MEDIA_TYPE, bytes),
                Err(err) => warn!(error = %err, "answering a Status in JSON"),
            },
            Encoding::Yaml => match yaml(&error.to_json()) {
                Ok(bytes) => return error.into_response_with(YAML_MEDIA_TYPE, bytes),
                Err(err) => warn!(error = %err, "answering a Status in JSON"),
            },
            Encoding::Json => {}
        }
        error.into_response()
    }

    /// The `Content-Type` of a watch response (the real server adds `;stream=watch` to every
    /// media type but JSON). YAML has no stream form ([`Negotiated::watch_encoding`]).
    pub(crate) fn watch_content_type(self) -> &'static str {
        match self {
            Encoding::Json | Encoding::Yaml => "application/json",
            Encoding::Protobuf => WATCH_MEDIA_TYPE,
        }
    }

    /// `body` alone, encoded: protobuf (with its envelope) when it has a protobuf form, else
    /// compact JSON (custom resources; also for YAML, which has no stream form).
    pub(crate) fn object_bytes(self, body: &Value) -> Vec<u8> {
        if self == Encoding::Protobuf
            && let Ok(bytes) = protobuf::encode(body)
        {
            return bytes;
        }
        serde_json::to_vec(body).unwrap_or_default()
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
        // Written in place: `json!` would copy the whole object into a new tree first.
        let mut line = b"{\"type\":".to_vec();
        let written = serde_json::to_writer(&mut line, kind)
            .and_then(|()| {
                line.extend_from_slice(b",\"object\":");
                serde_json::to_writer(&mut line, &object)
            })
            .is_ok();
        if !written {
            return Bytes::new();
        }
        line.extend_from_slice(b"}\n");
        Bytes::from(line)
    }
}

/// The media type of YAML answers.
const YAML_MEDIA_TYPE: &str = "application/yaml";

/// `body` as YAML, its maps' keys sorted as Go's `yaml.JSONToYAML` (a round trip through Go
/// maps) sorts them.
fn yaml(body: &Value) -> Result<Vec<u8>, String> {
    let mut sorted = body.clone();
    sorted.sort_all_objects();
    serde_yaml_ng::to_string(&sorted)
        .map(String::into_bytes)
        .map_err(|err| format!("encoding YAML: {err}"))
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
    use crate::registry::Registry;
    use serde_json::json;

    const KUBECTL_TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    /// client-go's metadata client, for lists.
    const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

    fn headers(accept: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, accept.parse().expect("a header"));
        headers
    }

    fn negotiate(accept: &str, resource: &Resource) -> ApiResult<Negotiated> {
        Negotiated::negotiate(&headers(accept), &Query::parse(None), resource)
    }

    fn pods() -> std::sync::Arc<Resource> {
        Registry::builtin().lookup("", "v1", "pods").expect("pods")
    }

    fn widgets() -> Resource {
        let registry = Registry::builtin();
        let mut custom = (*registry
            .lookup("apps", "v1", "deployments")
            .expect("deployments"))
        .clone();
        custom.group = "example.com".to_owned();
        custom.plural = "widgets".to_owned();
        custom.kind = "Widget".to_owned();
        custom
    }

    #[test]
    fn protobuf_is_answered_when_preferred_and_the_resource_has_it() {
        let pods = pods();
        let encoding = |accept: &str| negotiate(accept, &pods).expect("acceptable").encoding;
        for protobuf in [
            "application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf, */*",
            "application/vnd.kubernetes.protobuf,application/json",
            "application/vnd.kubernetes.protobuf;stream=watch",
            "application/json;q=0.5, application/vnd.kubernetes.protobuf",
            "*/*;q=0.1, application/vnd.kubernetes.protobuf;q=0.9",
            "text/html, application/vnd.kubernetes.protobuf",
        ] {
            assert_eq!(encoding(protobuf), Encoding::Protobuf, "{protobuf}");
        }
        for json in [
            "application/json",
            "*/*",
            "application/*",
            "application/json, application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf;q=0.5, application/json",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
            "application/vnd.kubernetes.protobuf;stream=other, application/json",
            "application/vnd.kubernetes.protobuf;q=0, */*",
            "application/json;charset=utf-8",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "",
        ] {
            assert_eq!(encoding(json), Encoding::Json, "{json}");
        }
        for yaml in [
            "application/yaml",
            "application/yaml, application/vnd.kubernetes.protobuf",
            "application/json;q=0.5, application/yaml",
        ] {
            assert_eq!(encoding(yaml), Encoding::Yaml, "{yaml}");
        }
        let none = Negotiated::negotiate(&HeaderMap::new(), &Query::parse(None), &pods);
        assert_eq!(none.expect("acceptable").encoding, Encoding::Json);
    }

    #[test]
    fn nothing_acceptable_is_406_listing_the_media_types() {
        let pods = pods();
        for accept in [
            "text/html",
            "text/plain, image/png",
            "application/xml",
            "application/json;as=Table;v=v9;g=meta.k8s.io",
            "application/json;as=Foo;v=v1;g=meta.k8s.io",
            "application/json;stream=other",
            "application/yaml;stream=watch",
            "json",
        ] {
            let err = negotiate(accept, &pods).expect_err(accept);
            assert_eq!(err.code, StatusCode::NOT_ACCEPTABLE, "{accept}");
            assert_eq!(err.reason, "NotAcceptable");
            assert_eq!(
                err.message,
                "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            );
        }
    }

    #[test]
    fn watches_have_no_yaml_form() {
        let pods = pods();
        let yaml = negotiate("application/yaml, application/json", &pods).expect("acceptable");
        let err = yaml.watch_encoding().expect_err("no YAML stream");
        assert_eq!(err.code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
        let json = negotiate("application/json", &pods).expect("acceptable");
        assert_eq!(json.watch_encoding().expect("a stream"), Encoding::Json);
    }

    #[test]
    fn custom_resources_have_no_protobuf_form_but_their_metadata_does() {
        let custom = widgets();
        assert!(!supports_protobuf(&custom));
        let plain = negotiate("application/vnd.kubernetes.protobuf, */*", &custom);
        assert_eq!(plain.expect("acceptable").encoding, Encoding::Json);
        let only = negotiate("application/vnd.kubernetes.protobuf", &custom);
        assert_eq!(only.expect_err("406").code, StatusCode::NOT_ACCEPTABLE);
        let metadata = negotiate(METADATA_LIST, &custom).expect("acceptable");
        assert_eq!(metadata.encoding, Encoding::Protobuf);
        assert_eq!(
            metadata.conversion,
            Some(Conversion::Partial {
                version: "v1",
                list: true
            })
        );
        // A custom resource named like a built-in kind is still custom.
        let mut named = custom;
        named.kind = "Deployment".to_owned();
        named.group = "apps.example.com".to_owned();
        assert!(!supports_protobuf(&named));
    }

    #[test]
    fn tables_are_json_or_yaml_preferring_the_first_version_asked_for() {
        let pods = pods();
        let conversion = |accept: &str| negotiate(accept, &pods).expect(accept).conversion;
        assert_eq!(conversion(KUBECTL_TABLE), Some(Conversion::Table("v1")));
        let beta_first = "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(conversion(beta_first), Some(Conversion::Table("v1beta1")));
        assert_eq!(
            conversion("application/json;q=0.9,application/json;as=Table;v=v1;g=meta.k8s.io"),
            Some(Conversion::Table("v1")),
            "quality orders the ranges"
        );
        assert_eq!(
            conversion("application/*;as=Table;v=v1;g=meta.k8s.io"),
            Some(Conversion::Table("v1"))
        );
        let yaml = negotiate("application/yaml;as=Table;v=v1;g=meta.k8s.io", &pods).expect("yaml");
        assert_eq!(
            (yaml.encoding, yaml.conversion),
            (Encoding::Yaml, Some(Conversion::Table("v1")))
        );
        for plain in [
            "application/json",
            "*/*",
            "",
            "application/vnd.kubernetes.protobuf,application/json",
            "application/json,application/json;as=Table;v=v1;g=meta.k8s.io",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json",
        ] {
            assert_eq!(conversion(plain), None, "{plain}");
        }
        for unserved in [
            "application/json;as=Table;v=v2;g=meta.k8s.io",
            "application/json;as=Table;g=meta.k8s.io",
            "application/json;as=Table;v=v1;g=example.com",
            "text/html;as=Table;v=v1;g=meta.k8s.io",
            "application/json;as=Table;v=v1;g=meta.k8s.io;stream=other",
        ] {
            let header = format!("{unserved},application/json;as=Table;v=v1beta1;g=meta.k8s.io");
            assert_eq!(
                conversion(&header),
                Some(Conversion::Table("v1beta1")),
                "{unserved} is passed over"
            );
        }
    }

    #[test]
    fn the_metadata_client_gets_partial_metadata_in_protobuf() {
        let pods = pods();
        let list = negotiate(METADATA_LIST, &pods).expect("acceptable");
        assert_eq!(list.encoding, Encoding::Protobuf);
        assert_eq!(
            list.conversion,
            Some(Conversion::Partial {
                version: "v1",
                list: true
            })
        );
        let json = negotiate(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
            &pods,
        )
        .expect("acceptable");
        assert_eq!(json.encoding, Encoding::Json);
        assert_eq!(
            json.conversion,
            Some(Conversion::Partial {
                version: "v1beta1",
                list: false
            })
        );
    }

    #[test]
    fn a_partial_conversion_of_the_wrong_shape_is_406_and_a_status_is_left_alone() {
        let pods = pods();
        let query = Query::parse(None);
        let list = json!({"kind": "PodList", "metadata": {"resourceVersion": "4"}, "items": []});
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}});
        let object_of = Conversion::Partial {
            version: "v1",
            list: false,
        };
        let list_of = Conversion::Partial {
            version: "v1",
            list: true,
        };
        let err = object_of
            .apply(&list, true, &pods, None, &query)
            .expect_err("406");
        assert_eq!(err.code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            err.message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
        );
        let err = list_of
            .apply(&pod, false, &pods, None, &query)
            .expect_err("406");
        assert_eq!(
            err.message,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)"
        );
        let converted = object_of.apply(&pod, false, &pods, None, &query);
        assert_eq!(
            converted.expect("converts").expect("converted")["kind"],
            "PartialObjectMetadata"
        );
        let status = ApiError::not_found(&pods, "p").to_json();
        assert_eq!(
            object_of
                .apply(&status, false, &pods, None, &query)
                .expect("left"),
            None
        );
        let deployments = Registry::builtin()
            .lookup("apps", "v1", "deployments")
            .expect("deployments");
        assert_eq!(go_type(&deployments, None, true), "*apps.DeploymentList");
        assert_eq!(
            go_type(&deployments, Some("scale"), false),
            "*autoscaling.Scale"
        );
        assert_eq!(
            go_type(&widgets(), None, false),
            "*unstructured.Unstructured"
        );
    }

    #[test]
    fn pretty_follows_the_query_then_the_user_agent() {
        let pods = pods();
        let pretty = |query: &str, agent: Option<&str>, accept: &str| {
            let mut headers = headers(accept);
            if let Some(agent) = agent {
                headers.insert(header::USER_AGENT, agent.parse().expect("a header"));
            }
            Negotiated::negotiate(&headers, &Query::parse(Some(query)), &pods)
                .expect("acceptable")
                .pretty
        };
        assert!(pretty("", Some("curl/8.5.0"), "*/*"));
        assert!(pretty("", Some("Wget/1.21"), "*/*"));
        assert!(pretty("", Some("Mozilla/5.0 (X11)"), "*/*"));
        assert!(!pretty("", Some("kubectl/v1.32.0 (linux/amd64)"), "*/*"));
        assert!(!pretty("", None, "application/json"));
        assert!(!pretty("pretty=false", Some("curl/8.5.0"), "*/*"));
        assert!(!pretty("pretty=yes", None, "*/*"), "Go's ParseBool");
        assert!(pretty("pretty=true", None, "*/*"));
        assert!(pretty("pretty=1", None, "*/*"));
        assert!(pretty("", None, "application/json;pretty=1"));
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
        // PartialObjectMetadata has a protobuf form.
        let partial = partial::object("v1", &body);
        let response = Encoding::Protobuf.respond(StatusCode::OK, &partial, false);
        assert_eq!(response.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        assert_eq!(protobuf::decode(&bytes).expect("decodes"), partial);
    }

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    #[tokio::test]
    async fn yaml_sorts_keys_and_json_indents_like_go() {
        let body = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "c", "labels": {"b": "2", "a": "1"}}, "data": {"n": "42"}});
        let response = Encoding::Yaml.respond(StatusCode::OK, &body, false);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/yaml");
        let yaml = text(response).await;
        assert_eq!(
            yaml,
            "apiVersion: v1\ndata:\n  n: '42'\nkind: ConfigMap\nmetadata:\n  labels:\n    a: '1'\n    b: '2'\n  name: c\n"
        );
        let back: Value = serde_yaml_ng::from_str(&yaml).expect("YAML");
        assert_eq!(back, body);
        let error = text(Encoding::Yaml.error(ApiError::not_acceptable("no"))).await;
        assert!(error.contains("reason: NotAcceptable\n"), "{error}");
        let compact = text(Encoding::Json.respond(StatusCode::OK, &json!({"a": [1]}), false)).await;
        assert_eq!(compact, "{\"a\":[1]}\n");
        let pretty = text(Encoding::Json.respond(StatusCode::OK, &json!({"a": [1]}), true)).await;
        assert_eq!(pretty, "{\n  \"a\": [\n    1\n  ]\n}");
    }
}
