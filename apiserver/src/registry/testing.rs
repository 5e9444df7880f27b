//! The test-backend group `testing.kubemock.dev/v1`: what kubemock offers tests that no real
//! cluster does (docs/test-powers.md). Its resources are entries in the one registry
//! like every other kind, so discovery, routing, OpenAPI, Table output (`kubectl get
//! requests`) and authorization treat them as they treat the built-in kinds; the handlers
//! are `handlers::testing`.
//!
//! - `requests` (`Request`, cluster-scoped, read-only): the request log (`requestlog`), every
//!   API request the server answered, listed and watched from memory; `DELETE` of the
//!   collection clears it.
//! - `faults` (`Fault`, cluster-scoped, stored): faults injected into matching requests
//!   (`faults`), with a `status` subresource the server writes.
//! - `clocks` (`Clock`, one object named `cluster`): the server's clock, read, and moved with
//!   `--virtual-clock` (`handlers::clock`).
//! - `compactions` (`Compaction`, create only): compacts the store now.
//! - `resets` (`Reset`, create only): brings the store back to its startup state (`reset`).
//! - `snapshots` (`Snapshot`, create only): answers the whole store as one object
//!   (`reset::snapshot`), for `kubemock snapshot save` and `serve --restore`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    Admission, Behaviour, GenerationPolicy, Group, Printer, PrinterColumn, Resource, Storage,
    Subresource,
};

/// The group's name.
pub(crate) const GROUP: &str = "testing.kubemock.dev";
/// Its one version.
pub(crate) const VERSION: &str = "v1";
/// The name of the one `Clock` (`handlers::clock`): the cluster's clock.
pub(crate) const CLOCK_NAME: &str = "cluster";

/// The group, as discovery lists it (after the built-in groups).
pub(super) fn group() -> Group {
    Group {
        name: GROUP.to_owned(),
        versions: vec![VERSION.to_owned()],
    }
}

/// The group's resources, in discovery order.
pub(super) fn resources() -> Vec<Resource> {
    vec![
        requests(),
        faults(),
        clocks(),
        action("compactions", "Compaction"),
        action("resets", "Reset"),
        action("snapshots", "Snapshot"),
    ]
}

/// `faults`: stored, with the `status` subresource the server writes its counters to.
fn faults() -> Resource {
    Resource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        plural: "faults".to_owned(),
        singular: "fault".to_owned(),
        kind: "Fault".to_owned(),
        namespaced: false,
        verbs: [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
        .map(str::to_owned)
        .to_vec(),
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: vec![Subresource {
            name: "status".to_owned(),
            response: None,
            verbs: ["get", "patch", "update"].map(str::to_owned).to_vec(),
            printer: None,
        }],
        behaviour: Behaviour {
            generation: GenerationPolicy::Spec,
            admission: Admission::Fault,
            ..Behaviour::default()
        },
        printer: Printer::Columns(Arc::from(fault_columns())),
        custom: None,
    }
}

/// `clocks`: the one `Clock`, read, and moved by writes of its `spec`.
fn clocks() -> Resource {
    Resource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        plural: "clocks".to_owned(),
        singular: "clock".to_owned(),
        kind: "Clock".to_owned(),
        namespaced: false,
        verbs: ["get", "list", "patch", "update"]
            .map(str::to_owned)
            .to_vec(),
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        behaviour: Behaviour {
            storage: Storage::Virtual,
            ..Behaviour::default()
        },
        printer: Printer::Columns(Arc::from(clock_columns())),
        custom: None,
    }
}

/// `kubectl get clocks`: the time, and whether it can move.
fn clock_columns() -> Vec<PrinterColumn> {
    let column = |name: &str, kind: &str, path: &str, description: &str| {
        PrinterColumn::new(name, kind, path, 0, description)
    };
    vec![
        column("Now", "string", ".status.now", "The clock's time."),
        column(
            "Virtual",
            "boolean",
            ".status.virtual",
            "Whether the clock can be moved (--virtual-clock).",
        ),
    ]
}

/// A create-only virtual resource: each POST does something now and answers what it did.
fn action(plural: &str, kind: &str) -> Resource {
    Resource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        plural: plural.to_owned(),
        singular: plural.trim_end_matches('s').to_owned(),
        kind: kind.to_owned(),
        namespaced: false,
        verbs: vec!["create".to_owned()],
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        behaviour: Behaviour {
            storage: Storage::Virtual,
            ..Behaviour::default()
        },
        printer: Printer::Default,
        custom: None,
    }
}

/// `kubectl get faults`: what each fault matches and does, and how often it did.
fn fault_columns() -> Vec<PrinterColumn> {
    let column = PrinterColumn::new;
    vec![
        column(
            "Verbs",
            "string",
            ".spec.match.verbs",
            0,
            "The verbs matched.",
        ),
        column(
            "Resource",
            "string",
            ".spec.match.resource",
            0,
            "The resource matched.",
        ),
        column(
            "Object",
            "string",
            ".spec.match.name",
            0,
            "The object names matched (a glob).",
        ),
        column(
            "Action",
            "string",
            ".status.action",
            0,
            "What the fault does.",
        ),
        column(
            "Matched",
            "integer",
            ".status.matched",
            0,
            "Requests that matched.",
        ),
        column(
            "Applied",
            "integer",
            ".status.applied",
            0,
            "Requests the fault acted on.",
        ),
        column(
            "Exhausted",
            "boolean",
            ".status.exhausted",
            0,
            "The count is used up.",
        ),
        column(
            "Namespace",
            "string",
            ".spec.match.namespace",
            1,
            "The namespace matched.",
        ),
        column(
            "User",
            "string",
            ".spec.match.user",
            1,
            "The user matched (substring).",
        ),
        column(
            "Age",
            "date",
            ".metadata.creationTimestamp",
            0,
            "When the fault was created.",
        ),
    ]
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
    let column = PrinterColumn::new;
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
        "Fault" => Some(fault_schema()),
        "Clock" => Some(json!({"type": "object",
        "description": "The server's clock (the one object is named cluster). A write of spec moves it, when the server runs with --virtual-clock.",
        "properties": {
            "spec": {"type": "object", "description": "A move: set one field per write.", "properties": {
                "advance": {"type": "string", "description": "Move the clock forward by this Go duration (90s, 6h), once per write."},
                "time": {"type": "string", "format": "date-time", "description": "Set the clock to this time (backwards too)."},
            }},
            "status": {"type": "object", "properties": {
                "now": {"type": "string", "format": "date-time", "description": "The clock's time (microseconds)."},
                "virtual": {"type": "boolean", "description": "Whether the clock can be moved (--virtual-clock)."},
            }},
        }})),
        "Reset" => Some(json!({"type": "object",
            "description": "A reset of the cluster to its startup state, done when created (POST); its status counts what changed.",
            "x-kubernetes-preserve-unknown-fields": true})),
        "Snapshot" => Some(json!({"type": "object",
            "description": "The whole store at one resourceVersion, answered when created (POST): items of key and object.",
            "x-kubernetes-preserve-unknown-fields": true})),
        "Compaction" => Some(json!({"type": "object",
            "description": "A compaction of the store, done when created (POST); its status says up to which resourceVersion.",
            "x-kubernetes-preserve-unknown-fields": true})),
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

/// `Fault`: a fault injected into matching requests (`faults`).
fn fault_schema() -> Value {
    let string = |description: &str| json!({"type": "string", "description": description});
    let answer = |description: &str| {
        json!({"type": "object", "description": description, "required": ["code"], "properties": {
            "code": {"type": "integer", "description": "The HTTP code: 400, 403, 404, 409, 410, 429, 500, 503 or 504 (a Status with upstream's reason and message for it)."},
            "reason": string("The Status reason, instead of the code's."),
            "message": string("The Status message, instead of upstream's for the code."),
            "retryAfterSeconds": {"type": "integer", "description": "Retry-After of a 429, 503 or 504 (default 1)."},
        }})
    };
    json!({
        "type": "object",
        "description": "A fault injected into the requests it matches (the testing.kubemock.dev group itself is never affected).",
        "properties": {
            "spec": {"type": "object", "required": ["action"], "properties": {
                "match": {"type": "object", "description": "What requests the fault matches; every field given must match.", "properties": {
                    "verbs": {"type": "array", "items": {"type": "string"}, "description": "get, list, watch, create, update, patch, delete, deletecollection."},
                    "group": string("The API group (empty: core)."),
                    "resource": string("The resource (plural)."),
                    "subresource": string("The subresource (empty: the resource itself only)."),
                    "namespace": string("The namespace."),
                    "name": string("The object name, exactly or as a glob (*, ?, [a-z], [!a-z], \\ escapes)."),
                    "labelSelector": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "description": "Labels of the object as stored (requests naming an existing object only)."},
                    "user": string("A substring of the username."),
                    "userAgent": string("A substring of the User-Agent header."),
                    "fieldManager": string("The fieldManager query parameter."),
                    "dryRun": {"type": "boolean", "description": "Dry-run requests only (true) or real ones only (false)."},
                }},
                "action": {"type": "object", "description": "What the fault does to a request it acts on.", "properties": {
                    "status": answer("Answer this Status instead of running the request."),
                    "failAfterCommit": answer("Run the request, then answer this Status if it succeeded: the write is committed, the client is told it failed."),
                    "latency": {"type": "object", "properties": {
                        "before": string("A delay before the request runs (a duration: 200ms, 2s)."),
                        "after": string("A delay after it ran, before the answer."),
                    }},
                    "watch": {"type": "object", "description": "For watches (verbs: [watch]).", "properties": {
                        "endAfterEvents": {"type": "integer", "description": "End the stream once this many events went out."},
                        "endAfterSeconds": {"type": "integer", "description": "End the stream after this long."},
                        "expire": {"type": "boolean", "description": "End it with an ERROR event carrying 410 Expired (alone: at once)."},
                        "delayEvents": string("Wait this long before each event."),
                        "holdBookmarks": {"type": "boolean", "description": "Send no BOOKMARK event."},
                    }},
                    "compact": {"type": "boolean", "description": "Compact the store up to its current revision before the request runs."},
                }},
                "count": {"type": "integer", "description": "Act this many times, then the fault is exhausted."},
                "after": {"type": "integer", "description": "Skip the first this many matches."},
                "probability": {"type": "number", "description": "Act on a match with this probability (0 to 1)."},
                "seed": {"type": "integer", "description": "The seed of the probability rolls: the same seed and request order give the same decisions."},
                "startTime": {"type": "string", "format": "date-time", "description": "The fault matches nothing before this time."},
                "expiryTime": {"type": "string", "format": "date-time", "description": "The fault matches nothing from this time."},
            }},
            "status": {"type": "object", "description": "Written by the server (at most every 200 ms).", "properties": {
                "matched": {"type": "integer", "description": "Requests that matched inside the time window, before exhaustion."},
                "applied": {"type": "integer", "description": "Requests the fault acted on."},
                "exhausted": {"type": "boolean", "description": "The count is used up."},
                "action": string("What the fault does, in words."),
                "lastAppliedTime": {"type": "string", "format": "date-time", "description": "When it last acted."},
            }},
        },
    })
}
