//! Label and field selectors of list, watch and deletecollection (docs/api-behaviour.md#label-selectors, #field-selectors).
//!
//! Both grammars, their escapes and their syntax errors are `kubemock_apimachinery`'s
//! (`labels`, `fields`: ports of upstream's `pkg/labels` and `pkg/fields`), shared with the
//! client. What is the server's own is here: which fields each kind may select on (data,
//! `kind_fields`, as in the real per-kind field-label conversion functions), the canonical
//! names of aliases, how an unsupported field is worded, and how a field's value is read from a
//! stored object.
//!
//! Invariant: parsing and matching never panic, whatever the text or the object.

use std::borrow::Cow;

use serde_json::Value;

use kubemock_apimachinery::fields::{self, Operator, Requirement};

use crate::registry::Resource;
use crate::status::ApiError;

// ---------------------------------------------------------------------------------------------
// Label selectors: `kubemock_apimachinery::labels`, shared with the client and the controllers
// ---------------------------------------------------------------------------------------------

pub(crate) use kubemock_apimachinery::labels::{Selector as LabelSelector, label_selector_string};

// ---------------------------------------------------------------------------------------------
// Field selectors: the syntax is `kubemock_apimachinery::fields`; the fields of each kind here
// ---------------------------------------------------------------------------------------------

/// A parsed `fieldSelector`: the AND of its terms, each on a field the kind supports. No terms
/// selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FieldSelector {
    /// The terms, in the order apimachinery keeps them (sorted by their text).
    terms: Vec<FieldTerm>,
}

/// One term: a field compared with a value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    /// The parsed term, its field renamed to the canonical name (`spec.host` becomes
    /// `spec.nodeName`).
    requirement: Requirement,
    /// Where the field's value comes from in an object.
    source: FieldSource,
}

/// Where a selectable field's value comes from in an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldSource {
    /// The string form of the value at a JSON path; `absent` when missing or null (the Go
    /// zero value's string form: `""`, `"false"` for booleans, `"0"` for counts).
    Path {
        /// The object keys leading to the value.
        path: &'static [&'static str],
        /// What a missing value reads as.
        absent: &'static str,
    },
    /// Pod `status.podIP`: the first `status.podIPs[].ip`, else `status.podIP`.
    PodIp,
    /// Pod `status.podIPs`: every `status.podIPs[].ip` (or `status.podIP`); a term holds if any
    /// of them equals the value; a pod without addresses reads as `""`.
    PodIps,
    /// A custom resource's selectable field: the value at the term's own (dotted) path.
    Selectable,
    /// Event `source`: `source.component`, else `reportingComponent`.
    EventSource,
}

/// A field a kind may select on.
#[derive(Debug, Clone, Copy)]
struct FieldSpec {
    /// The name a selector uses.
    label: &'static str,
    /// The name it converts to (differs only for aliases).
    canonical: &'static str,
    /// Where its value comes from.
    source: FieldSource,
}

/// How a kind words an unsupported field (its field-label conversion function's error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnknownField {
    /// `runtime.DefaultMetaV1FieldSelectorConversion`, for kinds without a list of their own.
    Default,
    /// `field label not supported: <field>`, the core/v1 kinds' wording.
    NotSupported,
    /// `field label "<field>" not supported for batchv1.Job`.
    Job,
}

impl UnknownField {
    /// The error message for `field`.
    fn message(self, field: &str) -> String {
        match self {
            UnknownField::Default => format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                kubemock_apimachinery::go::quote(field)
            ),
            UnknownField::NotSupported => format!("field label not supported: {field}"),
            UnknownField::Job => format!(
                "field label {} not supported for batchv1.Job",
                kubemock_apimachinery::go::quote(field)
            ),
        }
    }
}

/// A field read from a plain path, absent reading as `""`.
const fn text_field(label: &'static str, path: &'static [&'static str]) -> FieldSpec {
    defaulted_field(label, path, "")
}

/// A field read from a plain path, absent reading as `absent`.
const fn defaulted_field(
    label: &'static str,
    path: &'static [&'static str],
    absent: &'static str,
) -> FieldSpec {
    FieldSpec {
        label,
        canonical: label,
        source: FieldSource::Path { path, absent },
    }
}

/// A field with a computed value.
const fn computed_field(label: &'static str, source: FieldSource) -> FieldSpec {
    FieldSpec {
        label,
        canonical: label,
        source,
    }
}

/// `metadata.name`, selectable on every kind.
const METADATA_NAME: FieldSpec = text_field("metadata.name", &["metadata", "name"]);

/// `metadata.namespace`.
const METADATA_NAMESPACE: FieldSpec = text_field("metadata.namespace", &["metadata", "namespace"]);

/// Kinds without a list of their own (`DefaultMetaV1FieldSelectorConversion`, which accepts
/// `metadata.namespace` even for cluster-scoped kinds; there it reads as `""`).
const DEFAULT_FIELDS: &[FieldSpec] = &[METADATA_NAME, METADATA_NAMESPACE];

/// core/v1 Pod.
const POD_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("spec.nodeName", &["spec", "nodeName"]),
    text_field("spec.restartPolicy", &["spec", "restartPolicy"]),
    text_field("spec.schedulerName", &["spec", "schedulerName"]),
    text_field("spec.serviceAccountName", &["spec", "serviceAccountName"]),
    defaulted_field("spec.hostNetwork", &["spec", "hostNetwork"], "false"),
    text_field("status.phase", &["status", "phase"]),
    computed_field("status.podIP", FieldSource::PodIp),
    computed_field("status.podIPs", FieldSource::PodIps),
    text_field("status.nominatedNodeName", &["status", "nominatedNodeName"]),
    // Legacy v1 clients send `spec.host`.
    FieldSpec {
        label: "spec.host",
        canonical: "spec.nodeName",
        source: FieldSource::Path {
            path: &["spec", "nodeName"],
            absent: "",
        },
    },
];

/// core/v1 Event.
const EVENT_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("involvedObject.kind", &["involvedObject", "kind"]),
    text_field("involvedObject.namespace", &["involvedObject", "namespace"]),
    text_field("involvedObject.name", &["involvedObject", "name"]),
    text_field("involvedObject.uid", &["involvedObject", "uid"]),
    text_field(
        "involvedObject.apiVersion",
        &["involvedObject", "apiVersion"],
    ),
    text_field(
        "involvedObject.resourceVersion",
        &["involvedObject", "resourceVersion"],
    ),
    text_field("involvedObject.fieldPath", &["involvedObject", "fieldPath"]),
    text_field("reason", &["reason"]),
    text_field("reportingComponent", &["reportingComponent"]),
    computed_field("source", FieldSource::EventSource),
    text_field("type", &["type"]),
];

/// core/v1 Secret.
const SECRET_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("type", &["type"]),
];

/// core/v1 Namespace (no `metadata.namespace`).
const NAMESPACE_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    text_field("status.phase", &["status", "phase"]),
];

/// core/v1 Node (no `metadata.namespace`).
const NODE_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    defaulted_field("spec.unschedulable", &["spec", "unschedulable"], "false"),
];

/// core/v1 Service.
const SERVICE_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    text_field("spec.clusterIP", &["spec", "clusterIP"]),
    text_field("spec.type", &["spec", "type"]),
];

/// core/v1 ReplicationController and apps/v1 ReplicaSet.
const REPLICAS_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    defaulted_field("status.replicas", &["status", "replicas"], "0"),
];

/// batch/v1 Job: `status.successful` is `status.succeeded`.
const JOB_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    METADATA_NAMESPACE,
    defaulted_field("status.successful", &["status", "succeeded"], "0"),
];

/// certificates.k8s.io/v1 CertificateSigningRequest (no `metadata.namespace`).
const CSR_FIELDS: &[FieldSpec] = &[
    METADATA_NAME,
    text_field("spec.signerName", &["spec", "signerName"]),
];

/// The fields `resource` may select on and how it words an unknown one (docs/api-behaviour.md#field-selectors).
fn kind_fields(resource: &Resource) -> (&'static [FieldSpec], UnknownField) {
    use UnknownField::{Job, NotSupported};
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "pods") => (POD_FIELDS, NotSupported),
        ("", "events") => (EVENT_FIELDS, NotSupported),
        ("", "secrets") => (SECRET_FIELDS, NotSupported),
        ("", "namespaces") => (NAMESPACE_FIELDS, NotSupported),
        ("", "nodes") => (NODE_FIELDS, NotSupported),
        ("", "services") => (SERVICE_FIELDS, NotSupported),
        ("", "replicationcontrollers") | ("apps", "replicasets") => (REPLICAS_FIELDS, NotSupported),
        ("batch", "jobs") => (JOB_FIELDS, Job),
        ("certificates.k8s.io", "certificatesigningrequests") => (CSR_FIELDS, NotSupported),
        _ => (DEFAULT_FIELDS, UnknownField::Default),
    }
}

impl FieldSelector {
    /// Parses `fieldSelector=` text for `resource`, checking each field name against the kind's
    /// list (docs/api-behaviour.md#field-selectors, chosen by group and plural: core pods, events, secrets, namespaces, nodes,
    /// services, replicationcontrollers; apps replicasets; batch jobs; certificates.k8s.io
    /// certificatesigningrequests; any other kind: `metadata.name` and `metadata.namespace`).
    /// Failures are 400 BadRequest in the real wording: `field label not supported: <f>` for
    /// kinds with their own list, `field label "<f>" not supported for batchv1.Job` for jobs,
    /// `"<f>" is not a known field selector: only "metadata.name", "metadata.namespace"` for the
    /// rest.
    ///
    /// The text is parsed first, as `fields.ParseSelector` parses it (terms sorted by their
    /// text, empty ones and those of an empty field and value (`=`) skipped, syntax errors in
    /// upstream's words), and only then are the
    /// field names checked, so a syntax error wins over an unknown field, as in the real
    /// server, which parses the query before it converts the field labels. Nothing is trimmed:
    /// `a = b` names the field `a `. Kinds without their own list accept `metadata.namespace`
    /// even when cluster-scoped, as the real default conversion does (it then reads as `""`).
    pub(crate) fn parse(text: &str, resource: &Resource) -> Result<Self, ApiError> {
        let parsed = fields::Selector::parse(text)
            .map_err(|error| ApiError::bad_request(error.to_string()))?;
        let (specs, unknown) = kind_fields(resource);
        // A custom resource's definition may declare more (`selectableFields`).
        let selectable = resource
            .custom
            .as_ref()
            .map(|c| c.selectable_fields.as_slice())
            .unwrap_or_default();
        let mut terms = Vec::new();
        for mut requirement in parsed.into_requirements() {
            let source = match specs.iter().find(|spec| spec.label == requirement.field) {
                Some(spec) => {
                    if spec.canonical != spec.label {
                        spec.canonical.clone_into(&mut requirement.field);
                    }
                    spec.source
                }
                None if selectable.contains(&requirement.field) => FieldSource::Selectable,
                None => return Err(ApiError::bad_request(unknown.message(&requirement.field))),
            };
            terms.push(FieldTerm {
                requirement,
                source,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// True if the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `object` satisfies every term. Values come from the object's JSON (`spec.nodeName`
    /// is `object.spec.nodeName`); booleans and numbers compare by their JSON text (`"true"`,
    /// `"3"`); missing or null fields read as `""`, except booleans and counts, which read as
    /// their Go zero value as the real server reads typed objects (`spec.hostNetwork`,
    /// `spec.unschedulable`: `"false"`; `status.replicas`, `status.successful`: `"0"`). Pod
    /// `status.podIP` is the first `status.podIPs[].ip`, `status.podIPs` holds if any address
    /// equals the value; Event `source` is `source.component`, else `reportingComponent`.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|term| term.matches(object))
    }

    /// The name the selector requires (`RequiresExactMatch("metadata.name")`: the first
    /// `metadata.name=<name>` or `==` term, whatever else it asks), as a request for one
    /// object checks it against the name in its path (`handlers/get.go`).
    pub(crate) fn exact_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .map(|term| &term.requirement)
            .find(|r| r.operator == Operator::Equals && r.field == "metadata.name")
            .map(|r| r.value.as_str())
    }
}

impl FieldTerm {
    /// Whether `object` satisfies this term.
    fn matches(&self, object: &Value) -> bool {
        let requirement = &self.requirement;
        match self.source {
            FieldSource::PodIps => {
                let ips = pod_ips(object);
                let found = if ips.is_empty() {
                    requirement.value.is_empty()
                } else {
                    ips.contains(&requirement.value.as_str())
                };
                found == (requirement.operator == Operator::Equals)
            }
            FieldSource::Selectable => {
                let path: Vec<&str> = requirement.field.split('.').collect();
                let actual = field_text(object, &path).unwrap_or(Cow::Borrowed(""));
                requirement.matches_value(&actual)
            }
            source => requirement.matches_value(&read_field(object, source)),
        }
    }
}

/// The value of a single-valued field in `object`.
fn read_field(object: &Value, source: FieldSource) -> Cow<'_, str> {
    match source {
        FieldSource::Path { path, absent } => {
            field_text(object, path).unwrap_or(Cow::Borrowed(absent))
        }
        FieldSource::PodIp => pod_ips(object)
            .first()
            .map_or(Cow::Borrowed(""), |ip| Cow::Borrowed(*ip)),
        FieldSource::EventSource => field_text(object, &["source", "component"])
            .filter(|component| !component.is_empty())
            .or_else(|| field_text(object, &["reportingComponent"]))
            .unwrap_or(Cow::Borrowed("")),
        // Multi-valued; `FieldTerm::matches` handles it. Read as the first address here.
        FieldSource::PodIps => read_field(object, FieldSource::PodIp),
        // Read from the term's path by `FieldTerm::matches`.
        FieldSource::Selectable => Cow::Borrowed(""),
    }
}

/// The string form of the value at `path`, or `None` if it is missing or null.
fn field_text<'a>(object: &'a Value, path: &[&str]) -> Option<Cow<'a, str>> {
    let mut current = object;
    for key in path {
        current = current.get(*key)?;
    }
    match current {
        Value::Null => None,
        Value::String(text) => Some(Cow::Borrowed(text)),
        other => Some(Cow::Owned(other.to_string())),
    }
}

/// A pod's addresses: `status.podIPs[].ip`, or `status.podIP` when that list is empty (as the
/// v1 conversion fills one from the other).
fn pod_ips(object: &Value) -> Vec<&str> {
    let status = object.get("status");
    let listed: Vec<&str> = status
        .and_then(|s| s.get("podIPs"))
        .and_then(Value::as_array)
        .map(|ips| {
            ips.iter()
                .filter_map(|ip| ip.get("ip").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed;
    }
    status
        .and_then(|s| s.get("podIP"))
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .into_iter()
        .collect()
}

/// The label and field selectors of one list, watch or deletecollection request.
pub(crate) struct Selectors {
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Selectors {
    /// Parses `labelSelector` and `fieldSelector` from a request's query for `resource`.
    pub(crate) fn from_query(
        query: &crate::query::Query,
        resource: &Resource,
    ) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
                .map_err(ApiError::bad_request)?,
            fields: FieldSelector::parse(query.get("fieldSelector").unwrap_or(""), resource)?,
        })
    }

    /// True when neither selector restricts anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether `object` is selected by both.
    pub(crate) fn matches(&self, object: &serde_json::Value) -> bool {
        self.labels.matches_object(object) && self.fields.matches(object)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::registry::Registry;

    fn resource(group: &str, plural: &str) -> Arc<Resource> {
        Registry::builtin()
            .lookup(group, "v1", plural)
            .unwrap_or_else(|| panic!("{group}/{plural} is built in"))
    }

    /// A resource the registry does not (yet) serve, for kinds only the selector table knows.
    fn fake_resource(group: &str, plural: &str, namespaced: bool) -> Resource {
        let mut resource = (*resource("", "configmaps")).clone();
        resource.group = group.to_owned();
        resource.plural = plural.to_owned();
        resource.namespaced = namespaced;
        resource
    }

    fn field_selects(selector: &str, resource: &Resource, object: &Value) -> bool {
        FieldSelector::parse(selector, resource)
            .unwrap_or_else(|e| panic!("{selector:?}: {}", e.message))
            .matches(object)
    }

    fn field_error(selector: &str, resource: &Resource) -> String {
        match FieldSelector::parse(selector, resource) {
            Ok(parsed) => panic!("{selector:?} parsed as {parsed:?}"),
            Err(error) => {
                assert_eq!(error.code.as_u16(), 400, "{selector:?}");
                assert_eq!(error.reason, "BadRequest", "{selector:?}");
                error.message
            }
        }
    }

    // ----- field selectors: grammar -----

    #[test]
    fn an_empty_field_selector_selects_everything() {
        let pods = resource("", "pods");
        // A term whose field and value are both empty is dropped, as `fields.ParseSelector`
        // drops it (its identity `Transform`), before any field name is checked.
        for text in ["", ",", ",,", "=", "!=", "==,="] {
            let selector = FieldSelector::parse(text, &pods).unwrap();
            assert!(selector.is_empty(), "{text:?}");
            assert!(selector.matches(&json!({})));
            assert_eq!(selector.exact_name(), None);
        }
    }

    #[test]
    fn field_terms_compare_strings_with_equals_double_equals_and_not_equals() {
        let pods = resource("", "pods");
        let pod = json!({
            "metadata": {"name": "web-1", "namespace": "prod"},
            "status": {"phase": "Running"},
        });
        assert!(field_selects("status.phase=Running", &pods, &pod));
        assert!(field_selects("status.phase==Running", &pods, &pod));
        assert!(!field_selects("status.phase!=Running", &pods, &pod));
        assert!(field_selects("status.phase!=Pending", &pods, &pod));
        assert!(field_selects(
            "metadata.name=web-1,metadata.namespace=prod",
            &pods,
            &pod
        ));
        assert!(!field_selects(
            "metadata.name=web-1,metadata.namespace=dev",
            &pods,
            &pod
        ));
        assert!(field_selects("status.phase=Running,,", &pods, &pod));
        // The first operator wins: the value of `a=!b` is `!b`.
        let named = json!({"metadata": {"name": "!x"}});
        assert!(field_selects("metadata.name=!x", &pods, &named));
        assert!(
            !FieldSelector::parse("metadata.name=web-1", &pods)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn backslash_escapes_commas_equals_and_backslashes_in_values() {
        let configmaps = resource("", "configmaps");
        let object = json!({"metadata": {"name": "a,b=c\\d"}});
        assert!(field_selects(
            "metadata.name=a\\,b\\=c\\\\d",
            &configmaps,
            &object
        ));
        assert!(!field_selects(
            "metadata.name!=a\\,b\\=c\\\\d",
            &configmaps,
            &object
        ));
        let selector = FieldSelector::parse("metadata.name=x\\,y", &configmaps).unwrap();
        assert_eq!(selector.exact_name(), Some("x,y"));
    }

    #[test]
    fn bad_escapes_and_bare_special_characters_in_values_are_rejected() {
        let configmaps = resource("", "configmaps");
        assert_eq!(
            field_error("metadata.name=a\\x", &configmaps),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            field_error("metadata.name=a\\", &configmaps),
            "invalid field selector: invalid escape sequence: \\"
        );
        assert_eq!(
            field_error("metadata.name=a=b", &configmaps),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            field_error("metadata.name!==b", &configmaps),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn an_unparseable_term_is_reported_with_the_whole_selector() {
        let pods = resource("", "pods");
        assert_eq!(
            field_error("foo", &pods),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        assert_eq!(
            field_error("metadata.name=a,foo", &pods),
            "invalid selector: 'metadata.name=a,foo'; can't understand 'foo'"
        );
        // Terms are sorted before they are parsed, so the first bad one in sorted order is named.
        assert_eq!(
            field_error("zzz,aaa", &pods),
            "invalid selector: 'zzz,aaa'; can't understand 'aaa'"
        );
        assert_eq!(
            field_error(" ", &pods),
            "invalid selector: ' '; can't understand ' '"
        );
        // Syntax is checked for every term before any field name is.
        assert_eq!(
            field_error("spec.foo=1,zzz", &pods),
            "invalid selector: 'spec.foo=1,zzz'; can't understand 'zzz'"
        );
    }

    #[test]
    fn spaces_are_part_of_field_names_and_values() {
        let configmaps = resource("", "configmaps");
        assert_eq!(
            field_error("metadata.name = a", &configmaps),
            "\"metadata.name \" is not a known field selector: only \"metadata.name\", \
             \"metadata.namespace\""
        );
        let object = json!({"metadata": {"name": " a"}});
        assert!(field_selects("metadata.name= a", &configmaps, &object));
    }

    // ----- field selectors: fields per kind -----

    #[test]
    fn an_unknown_field_on_a_kind_with_its_own_list_is_not_supported() {
        let cases = [
            (resource("", "pods"), "spec.foo"),
            (resource("", "events"), "spec.foo"),
            (resource("", "secrets"), "data"),
            (resource("", "services"), "spec.ports"),
            (resource("", "replicationcontrollers"), "spec.replicas"),
            (resource("apps", "replicasets"), "spec.replicas"),
            (resource("", "nodes"), "metadata.namespace"),
            (resource("", "namespaces"), "metadata.namespace"),
        ];
        for (resource, field) in cases {
            assert_eq!(
                field_error(&format!("{field}=x"), &resource),
                format!("field label not supported: {field}"),
                "{}",
                resource.plural
            );
        }
        let csr = fake_resource("certificates.k8s.io", "certificatesigningrequests", false);
        assert_eq!(
            field_error("metadata.namespace=x", &csr),
            "field label not supported: metadata.namespace"
        );
    }

    #[test]
    fn an_unknown_field_on_a_kind_without_a_list_names_the_metadata_fields() {
        for (group, plural) in [
            ("", "configmaps"),
            ("apps", "deployments"),
            ("events.k8s.io", "events"),
        ] {
            assert_eq!(
                field_error("spec.foo=x", &resource(group, plural)),
                "\"spec.foo\" is not a known field selector: only \"metadata.name\", \
                 \"metadata.namespace\"",
                "{plural}"
            );
        }
    }

    #[test]
    fn an_unknown_job_field_uses_the_batch_wording() {
        assert_eq!(
            field_error("status.succeeded=1", &resource("batch", "jobs")),
            "field label \"status.succeeded\" not supported for batchv1.Job"
        );
    }

    #[test]
    fn every_kind_accepts_its_documented_fields() {
        let cases: [(&str, &str, &[&str]); 11] = [
            (
                "",
                "pods",
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "spec.hostNetwork",
                    "status.phase",
                    "status.podIP",
                    "status.podIPs",
                    "status.nominatedNodeName",
                    "spec.host",
                ],
            ),
            (
                "",
                "events",
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "involvedObject.kind",
                    "involvedObject.namespace",
                    "involvedObject.name",
                    "involvedObject.uid",
                    "involvedObject.apiVersion",
                    "involvedObject.resourceVersion",
                    "involvedObject.fieldPath",
                    "reason",
                    "reportingComponent",
                    "source",
                    "type",
                ],
            ),
            (
                "",
                "secrets",
                &["metadata.name", "metadata.namespace", "type"],
            ),
            ("", "namespaces", &["metadata.name", "status.phase"]),
            ("", "nodes", &["metadata.name", "spec.unschedulable"]),
            (
                "",
                "services",
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "spec.clusterIP",
                    "spec.type",
                ],
            ),
            (
                "",
                "replicationcontrollers",
                &["metadata.name", "metadata.namespace", "status.replicas"],
            ),
            (
                "apps",
                "replicasets",
                &["metadata.name", "metadata.namespace", "status.replicas"],
            ),
            (
                "batch",
                "jobs",
                &["metadata.name", "metadata.namespace", "status.successful"],
            ),
            ("", "configmaps", &["metadata.name", "metadata.namespace"]),
            // The default conversion accepts metadata.namespace on cluster-scoped kinds too.
            (
                "rbac.authorization.k8s.io",
                "clusterroles",
                &["metadata.name", "metadata.namespace"],
            ),
        ];
        for (group, plural, fields) in cases {
            let resource = resource(group, plural);
            for field in fields {
                for operator in ["=", "==", "!="] {
                    let text = format!("{field}{operator}x");
                    assert!(
                        FieldSelector::parse(&text, &resource).is_ok(),
                        "{plural}: {text}"
                    );
                }
            }
        }
        let csr = fake_resource("certificates.k8s.io", "certificatesigningrequests", false);
        let selector = FieldSelector::parse("spec.signerName=example.com/x", &csr).unwrap();
        assert!(selector.matches(&json!({"spec": {"signerName": "example.com/x"}})));
    }

    #[test]
    fn absent_fields_compare_as_their_zero_value() {
        let pods = resource("", "pods");
        let bare = json!({"metadata": {"name": "p"}});
        assert!(field_selects("spec.nodeName=", &pods, &bare));
        assert!(!field_selects("spec.nodeName!=", &pods, &bare));
        assert!(field_selects("status.phase=,status.podIP=", &pods, &bare));
        assert!(field_selects("spec.hostNetwork=false", &pods, &bare));
        let null_node = json!({"spec": {"nodeName": null}});
        assert!(field_selects("spec.nodeName=", &pods, &null_node));
        let nodes = resource("", "nodes");
        assert!(field_selects(
            "spec.unschedulable=false",
            &nodes,
            &json!({})
        ));
        assert!(field_selects(
            "spec.unschedulable=true",
            &nodes,
            &json!({"spec": {"unschedulable": true}})
        ));
        let rcs = resource("", "replicationcontrollers");
        assert!(field_selects("status.replicas=0", &rcs, &json!({})));
        assert!(field_selects(
            "status.replicas=3",
            &rcs,
            &json!({"status": {"replicas": 3}})
        ));
        let jobs = resource("batch", "jobs");
        assert!(field_selects("status.successful=0", &jobs, &json!({})));
        assert!(field_selects(
            "status.successful=2",
            &jobs,
            &json!({"status": {"succeeded": 2}})
        ));
        let secrets = resource("", "secrets");
        assert!(field_selects(
            "type=Opaque",
            &secrets,
            &json!({"type": "Opaque"})
        ));
        assert!(field_selects("type=", &secrets, &json!({})));
        // Malformed objects never panic; they just read as absent.
        for object in [
            json!(null),
            json!("pod"),
            json!({"spec": 5}),
            json!({"status": {"podIPs": "x"}}),
        ] {
            assert!(
                field_selects("spec.nodeName=,status.podIPs=", &pods, &object),
                "{object}"
            );
        }
    }

    #[test]
    fn spec_host_is_an_alias_of_spec_node_name() {
        let pods = resource("", "pods");
        let pod = json!({"spec": {"nodeName": "node-1"}});
        assert!(field_selects("spec.host=node-1", &pods, &pod));
        assert!(!field_selects("spec.host=node-2", &pods, &pod));
        let selector = FieldSelector::parse("spec.host=node-1", &pods).unwrap();
        assert_eq!(selector.terms[0].requirement.field, "spec.nodeName");
    }

    #[test]
    fn pod_addresses_match_the_first_or_any_listed_ip() {
        let pods = resource("", "pods");
        let pod = json!({"status": {
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
        }});
        assert!(field_selects("status.podIP=10.0.0.1", &pods, &pod));
        assert!(!field_selects("status.podIP=fd00::1", &pods, &pod));
        assert!(field_selects("status.podIPs=fd00::1", &pods, &pod));
        assert!(field_selects("status.podIPs=10.0.0.1", &pods, &pod));
        assert!(!field_selects("status.podIPs=10.0.0.2", &pods, &pod));
        assert!(field_selects("status.podIPs!=10.0.0.2", &pods, &pod));
        assert!(!field_selects("status.podIPs!=fd00::1", &pods, &pod));
        let only_pod_ip = json!({"status": {"podIP": "10.0.0.9"}});
        assert!(field_selects("status.podIP=10.0.0.9", &pods, &only_pod_ip));
        assert!(field_selects("status.podIPs=10.0.0.9", &pods, &only_pod_ip));
        let no_ips = json!({"status": {}});
        assert!(field_selects("status.podIPs=", &pods, &no_ips));
        assert!(!field_selects("status.podIPs=10.0.0.9", &pods, &no_ips));
    }

    #[test]
    fn event_fields_read_the_involved_object_and_the_source_component() {
        let events = resource("", "events");
        let event = json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {
                "kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u-1",
                "apiVersion": "v1", "resourceVersion": "42", "fieldPath": "spec.containers{app}",
            },
            "reason": "Scheduled",
            "type": "Normal",
            "source": {"component": "default-scheduler"},
            "reportingComponent": "scheduler",
        });
        assert!(field_selects(
            "involvedObject.kind=Pod,involvedObject.name=web-1,involvedObject.namespace=default,\
             involvedObject.uid=u-1,involvedObject.apiVersion=v1,\
             involvedObject.resourceVersion=42,involvedObject.fieldPath=spec.containers{app}",
            &events,
            &event
        ));
        assert!(field_selects(
            "reason=Scheduled,type=Normal",
            &events,
            &event
        ));
        assert!(field_selects("source=default-scheduler", &events, &event));
        assert!(field_selects(
            "reportingComponent=scheduler",
            &events,
            &event
        ));
        assert!(!field_selects("involvedObject.kind=Node", &events, &event));
        let without_source = json!({"reportingComponent": "kubelet", "source": {"component": ""}});
        assert!(field_selects("source=kubelet", &events, &without_source));
        assert!(field_selects("source=", &events, &json!({})));
    }

    #[test]
    fn cluster_scoped_objects_have_an_empty_namespace() {
        let clusterroles = resource("rbac.authorization.k8s.io", "clusterroles");
        let role = json!({"metadata": {"name": "admin"}});
        assert!(field_selects("metadata.namespace=", &clusterroles, &role));
        assert!(!field_selects(
            "metadata.namespace=default",
            &clusterroles,
            &role
        ));
        assert!(field_selects("metadata.name=admin", &clusterroles, &role));
    }

    #[test]
    fn the_exact_name_is_the_first_name_equality_as_requires_exact_match_finds_it() {
        let pods = resource("", "pods");
        let name = |text: &str| {
            FieldSelector::parse(text, &pods)
                .unwrap()
                .exact_name()
                .map(str::to_owned)
        };
        assert_eq!(name("metadata.name=web"), Some("web".to_owned()));
        assert_eq!(name("metadata.name==web"), Some("web".to_owned()));
        assert_eq!(name(",metadata.name=web,"), Some("web".to_owned()));
        assert_eq!(name("=,metadata.name=web"), Some("web".to_owned()));
        assert_eq!(name("metadata.name="), Some(String::new()));
        assert_eq!(name("metadata.name!=web"), None);
        assert_eq!(name("metadata.namespace=web"), None);
        assert_eq!(
            name("metadata.name=web,status.phase=Running"),
            Some("web".to_owned())
        );
        assert_eq!(name("status.phase=Running,metadata.name!=a"), None);
        assert_eq!(name(""), None);
    }

    // ----- robustness -----

    #[test]
    fn random_input_never_panics_and_parsed_label_selectors_round_trip() {
        let seed = fastrand::u64(..);
        println!("selector fuzz seed {seed}");
        let mut rng = fastrand::Rng::with_seed(seed);
        let pieces = [
            "a",
            "b",
            "k",
            "app",
            "Z9",
            "0",
            "5",
            "-",
            "_",
            ".",
            "/",
            "example.com/",
            "=",
            "==",
            "!",
            "!=",
            "(",
            ")",
            ",",
            "<",
            ">",
            " ",
            "\t",
            "\\",
            "\\,",
            "\\=",
            "in",
            " in ",
            "notin",
            " notin ",
            "é",
            "\0",
            "\"",
            "+",
            "metadata.name",
            "spec.nodeName",
            "status.podIPs",
            "source",
            "spec.host",
        ];
        let kinds = [
            resource("", "pods"),
            resource("", "events"),
            resource("", "nodes"),
            resource("batch", "jobs"),
            resource("", "configmaps"),
        ];
        let objects = [
            json!({}),
            json!(null),
            json!({"metadata": {"name": "a", "labels": {"a": "5", "k": "", "app": "b"}}}),
            json!({
                "metadata": {"labels": [1]},
                "spec": {"nodeName": 3},
                "status": {"podIPs": [{"ip": 1}, "x"]},
            }),
        ];
        for _ in 0..600 {
            let length = rng.usize(0..16);
            let text: String = (0..length)
                .map(|_| pieces[rng.usize(0..pieces.len())])
                .collect();
            if let Ok(selector) = LabelSelector::parse(&text) {
                let shown = selector.to_string();
                let reparsed = LabelSelector::parse(&shown)
                    .unwrap_or_else(|e| panic!("{text:?} shown as {shown:?}: {e}"));
                assert_eq!(reparsed, selector, "{text:?} shown as {shown:?}");
                for object in &objects {
                    let _ = selector.matches_object(object);
                }
            }
            for kind in &kinds {
                if let Ok(selector) = FieldSelector::parse(&text, kind) {
                    for object in &objects {
                        let _ = selector.matches(object);
                    }
                    let _ = selector.exact_name();
                }
            }
            let _ = label_selector_string(&json!({
                "matchLabels": {text.clone(): text.clone(), "n": 1},
                "matchExpressions": [
                    {"key": text.clone(), "operator": "In", "values": [text.clone(), null]},
                    {"key": 5, "operator": "NotIn"},
                    {"key": "x", "operator": "NotIn", "values": "y"},
                ],
            }));
        }
    }
}
