//! kwok's group `kwok.x-k8s.io/v1alpha1`, of which kubemock serves `stages` (`Stage`,
//! cluster-scoped): the lifecycle rules its simulated kubelet runs (`controllers`
//! `kubelet::stages`), so that a team's kwok stage files apply unchanged. A Stage is an entry
//! in the one registry as a built-in kind (discovery, routing, OpenAPI, `kubectl get stages`
//! columns); its validation compiles it (`kubemock_apimachinery::stage::Stage::compile`, the
//! same compilation the kubelet runs), so anything the kubelet would not run is a 422 naming
//! the field. kwok's other kinds (Attach, ClusterLogs, Metric, ...) are not served.

use std::sync::Arc;

use kubemock_apimachinery::stage::{GROUP, KIND, PLURAL, VERSION};
use serde_json::{Value, json};

use super::{Admission, Behaviour, GenerationPolicy, Group, Printer, PrinterColumn, Resource};

/// The group, as discovery lists it (after the built-in groups).
pub(super) fn group() -> Group {
    Group {
        name: GROUP.to_owned(),
        versions: vec![VERSION.to_owned()],
    }
}

/// The group's resources, in discovery order.
pub(super) fn resources() -> Vec<Resource> {
    vec![Resource {
        group: GROUP.to_owned(),
        version: VERSION.to_owned(),
        plural: PLURAL.to_owned(),
        singular: "stage".to_owned(),
        kind: KIND.to_owned(),
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
        subresources: Vec::new(),
        behaviour: Behaviour {
            generation: GenerationPolicy::Spec,
            admission: Admission::Stage,
            ..Behaviour::default()
        },
        printer: Printer::Columns(Arc::from(columns())),
        custom: None,
    }]
}

/// `kubectl get stages`: the kind a Stage drives, its delay and what it does.
fn columns() -> Vec<PrinterColumn> {
    let column = PrinterColumn::new;
    vec![
        column(
            "Kind",
            "string",
            ".spec.resourceRef.kind",
            0,
            "The kind of objects the Stage drives.",
        ),
        column(
            "Delay",
            "integer",
            ".spec.delay.durationMilliseconds",
            0,
            "Milliseconds between a match and the next state.",
        ),
        column(
            "Jitter",
            "integer",
            ".spec.delay.jitterDurationMilliseconds",
            1,
            "The longest delay, in milliseconds (picked at random from delay to jitter).",
        ),
        column(
            "Weight",
            "integer",
            ".spec.weight",
            1,
            "The Stage's weight among several matching ones.",
        ),
        column(
            "Delete",
            "boolean",
            ".spec.next.delete",
            0,
            "Whether the next state deletes the object.",
        ),
        column(
            "Age",
            "date",
            ".metadata.creationTimestamp",
            0,
            "Time since the Stage was created.",
        ),
    ]
}

/// The OpenAPI v3 schema of `Stage` (without `apiVersion`, `kind` and `metadata`), from kwok's
/// `kustomize/crd/bases/kwok.x-k8s.io_stages.yaml`, for the fields kubemock runs; the ones it
/// refuses (`steps`, `next.patches`, CEL) are there too, so that the refusal is the Stage
/// validation's field error and not an unknown-field one. `None` for other kinds.
pub(crate) fn schema(resource: &Resource) -> Option<Value> {
    if resource.group != GROUP || resource.kind != KIND {
        return None;
    }
    let string = |d: &str| json!({"type": "string", "description": d});
    let expression_from = |d: &str| {
        json!({"type": "object", "description": d, "properties": {
            "expressionFrom": string("A jq expression over the object (kubemock evaluates a subset: docs/stages.md)."),
            "jq": {"type": "object", "properties": {"expression": string("A jq expression.")}},
            "cel": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "description": "Not evaluated by kubemock (refused)."},
        }})
    };
    let requirement = json!({"type": "object", "properties": {
        "key": string("A jq expression over the object, e.g. .status.phase."),
        "operator": string("In, NotIn, Exists or DoesNotExist."),
        "values": {"type": "array", "items": {"type": "string"}},
    }});
    let mut expression = requirement.clone();
    if let Some(props) = expression
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        props.insert("jq".to_owned(), requirement);
        props.insert(
            "cel".to_owned(),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "description": "Not evaluated by kubemock (refused)."}),
        );
    }
    let event = json!({"type": "object", "properties": {
        "type": string("Normal or Warning."), "reason": string("The Event's reason."),
        "message": string("The Event's message.")}});
    let finalizer_items = json!({"type": "array", "items": {"type": "object",
        "properties": {"value": string("A finalizer.")}}});
    Some(json!({
        "type": "object",
        "description": "kwok's Stage: when an object of a kind matches the selector, after the delay, the next state (docs/stages.md).",
        "required": ["spec"],
        "properties": {
            "spec": {"type": "object", "required": ["resourceRef"], "properties": {
                "resourceRef": {"type": "object", "required": ["kind"], "properties": {
                    "apiGroup": string("The kind's group version (v1 for Pod and Node)."),
                    "kind": string("Pod or Node."),
                }},
                "selector": {"type": "object", "properties": {
                    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "matchAnnotations": {"type": "object", "additionalProperties": {"type": "string"}},
                    "matchExpressions": {"type": "array", "items": expression},
                }},
                "weight": {"type": "integer", "description": "The weight among several matching Stages."},
                "weightFrom": expression_from("Where the weight comes from."),
                "delay": {"type": "object", "properties": {
                    "durationMilliseconds": {"type": "integer", "format": "int64"},
                    "durationFrom": expression_from("An RFC 3339 time or a Go duration."),
                    "jitterDurationMilliseconds": {"type": "integer", "format": "int64"},
                    "jitterDurationFrom": expression_from("An RFC 3339 time or a Go duration."),
                }},
                "next": {"type": "object", "properties": {
                    "event": event.clone(),
                    "finalizers": {"type": "object", "properties": {
                        "add": finalizer_items.clone(), "remove": finalizer_items,
                        "empty": {"type": "boolean"}}},
                    "delete": {"type": "boolean"},
                    "statusTemplate": string("A Go template rendering the new status as YAML."),
                    "statusSubresource": string("status (default) or empty."),
                    "statusPatchAs": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "description": "Not supported by kubemock (refused)."},
                    "patches": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "description": "Not supported by kubemock (refused)."},
                }},
                "immediateNextStage": {"type": "boolean"},
                "steps": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "description": "Not supported by kubemock (refused)."},
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    }))
}
