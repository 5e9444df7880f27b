//! The test-backend group `testing.kubemock.dev/v1`: what kubemock offers tests that no real
//! cluster does (README, "Test-backend powers"). Its resources are entries in the one registry
//! like every other kind, so discovery, routing, OpenAPI, Table output (`kubectl get
//! requests`) and authorization treat them as they treat the built-in kinds; the handlers
//! are `handlers::testing`.
//!
//! - `requests` (`Request`, cluster-scoped, read-only): the request log (`requestlog`), every
//!   API request the server answered, listed and watched from memory; `DELETE` of the
//!   collection clears it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Behaviour, Group, Printer, PrinterColumn, Resource, Storage};

/// The group's name.
pub(crate) const GROUP: &str = "testing.kubemock.dev";
/// Its one version.
pub(crate) const VERSION: &str = "v1";

/// The group, as discovery lists it (after the built-in groups).
pub(super) fn group() -> Group {
    Group {
        name: GROUP.to_owned(),
        versions: vec![VERSION.to_owned()],
    }
}

/// The group's resources, in discovery order.
pub(super) fn resources() -> Vec<Resource> {
    vec![requests()]
}

/// `requests`: the request log, read-only (`deletecollection` clears it).
fn requests() -> Resource {
    Resource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        plural: "requests".to_owned(),
        singular: "request".to_owned(),
        kind: "Request".to_owned(),
        namespaced: false,
        verbs: ["deletecollection", "get", "list", "watch"]
            .map(str::to_owned)
            .to_vec(),
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        behaviour: Behaviour {
            storage: Storage::Virtual,
            ..Behaviour::default()
        },
        printer: Printer::Columns(Arc::from(request_columns())),
        custom: None,
    }
}

/// `kubectl get requests`: what was asked, of what, by whom, and how it ended.
fn request_columns() -> Vec<PrinterColumn> {
    let column =
        |name: &str, kind: &str, path: &str, priority: i64, description: &str| PrinterColumn {
            name: name.to_owned(),
            kind: kind.to_owned(),
            format: String::new(),
            description: description.to_owned(),
            priority,
            json_path: path.to_owned(),
        };
    vec![
        column("Verb", "string", ".verb", 0, "The Kubernetes verb."),
        column(
            "Resource",
            "string",
            ".resource",
            0,
            "The resource, or the path of a non-resource request.",
        ),
        column(
            "Namespace",
            "string",
            ".namespace",
            0,
            "The namespace in the path.",
        ),
        column(
            "Object",
            "string",
            ".name",
            0,
            "The object name in the path.",
        ),
        column(
            "Code",
            "integer",
            ".code",
            0,
            "The HTTP status code of the answer.",
        ),
        column(
            "Latency",
            "string",
            ".latency",
            0,
            "Time to the answer's headers.",
        ),
        column(
            "User",
            "string",
            ".user.username",
            1,
            "Who made the request.",
        ),
        column("Test", "string", ".test", 1, "The X-Kubemock-Test header."),
        column(
            "Age",
            "date",
            ".metadata.creationTimestamp",
            0,
            "When the request arrived.",
        ),
    ]
}

/// The OpenAPI v3 schema of a kind of the group (without `apiVersion`, `kind` and `metadata`,
/// which the documents add as they add them to custom resources'); `None` for other kinds.
pub(crate) fn schema(resource: &Resource) -> Option<Value> {
    if resource.group != GROUP {
        return None;
    }
    match resource.kind.as_str() {
        "Request" => Some(request_schema()),
        _ => None,
    }
}

/// `Request`: one logged API request (`requestlog`).
fn request_schema() -> Value {
    let string = |description: &str| json!({"type": "string", "description": description});
    json!({
        "type": "object",
        "description": "One API request the server answered, from the request log (read-only; DELETE of the collection clears the log).",
        "properties": {
            "time": {"type": "string", "format": "date-time", "description": "When the request arrived (microseconds)."},
            "user": {"type": "object", "description": "Who made it (after impersonation): username, uid, groups, extra.",
                "x-kubernetes-preserve-unknown-fields": true},
            "userAgent": string("The User-Agent header."),
            "verb": string("The Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; for non-resource requests the HTTP method in lower case."),
            "method": string("The HTTP method."),
            "group": string("The API group of the resource (empty for core)."),
            "version": string("The API version of the resource."),
            "resource": string("The resource (plural)."),
            "subresource": string("The subresource."),
            "namespace": string("The namespace in the path."),
            "name": string("The object name in the path."),
            "path": string("The URL path."),
            "query": string("The raw query string."),
            "fieldManager": string("The fieldManager query parameter."),
            "dryRun": {"type": "boolean", "description": "The request was a dry run."},
            "test": string("The X-Kubemock-Test header: the test that made the request."),
            "code": {"type": "integer", "format": "int32", "description": "The HTTP status code of the answer."},
            "latency": string("From arrival to the answer's headers, as a duration."),
            "latencyMicroseconds": {"type": "integer", "format": "int64", "description": "The latency in microseconds."},
            "requestContentType": string("The request's Content-Type."),
            "responseContentType": string("The answer's Content-Type."),
            "resourceVersionBefore": string("The cluster's resourceVersion when the request arrived."),
            "resourceVersionAfter": string("The cluster's resourceVersion when it was answered."),
            "requestBody": {"description": "The request body, with --request-log-bodies (decoded when JSON, YAML or protobuf).",
                "x-kubernetes-preserve-unknown-fields": true},
            "requestBodyTruncated": {"type": "boolean", "description": "The request body was longer than the log keeps."},
            "responseBody": {"description": "The response body, with --request-log-bodies.",
                "x-kubernetes-preserve-unknown-fields": true},
            "responseBodyTruncated": {"type": "boolean", "description": "The response body was longer than the log keeps."},
        },
    })
}
