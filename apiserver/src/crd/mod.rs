//! CustomResourceDefinitions (docs/api-behaviour.md#custom-resources): what a definition must look like (defaults and validation
//! on its writes), the registry entries its served versions become, the admission of custom
//! objects (pruning, schema defaults, validation), and the controller (`controller`) that
//! accepts names, establishes definitions, serves them and cleans up after deleted ones, as
//! kube-apiserver's apiextensions controllers do.

pub(crate) mod controller;
pub(crate) mod schema;

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::registry::{
    Admission, Behaviour, Custom, GenerationPolicy, Gvk, NameRule, Printer, PrinterColumn,
    Resource, ScalePaths, Subresource, version_priority,
};
use crate::status::{ApiError, ApiResult};
use kubemock_apimachinery::managedfields::types::Types;

/// The finalizer a definition being deleted carries until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `resource` is the definitions resource itself.
pub(crate) fn is_definitions(resource: &Resource) -> bool {
    resource.group == "apiextensions.k8s.io" && resource.plural == "customresourcedefinitions"
}

fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// What a write of `resource` must pass beyond the generic rules: a definition's defaults and
/// validation, a custom object's schema defaults and validation. `old` is the stored object
/// for an update.
pub(crate) fn admit(
    resource: &Resource,
    old: Option<&Object>,
    object: &mut Object,
) -> ApiResult<()> {
    if is_definitions(resource) {
        return admit_definition(old, object);
    }
    let Some(custom) = &resource.custom else {
        return Ok(());
    };
    if old.is_none() && custom.terminating {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        ));
    }
    let Some(schema) = &custom.schema else {
        return Ok(());
    };
    let mut value = Value::Object(std::mem::take(object));
    schema::default(schema, &mut value);
    if let Value::Object(defaulted) = value {
        *object = defaulted;
    }
    let mut errors = schema::validate(schema, object, old);
    if let Some(rules) = &custom.rules {
        let new = Value::Object(std::mem::take(object));
        let old_value = old.map(|o| Value::Object(o.clone()));
        let outcome = rules.validate(&new, old_value.as_ref());
        errors.extend(outcome.errors);
        for warning in outcome.warnings {
            crate::webhook::note(|notes| notes.warnings.push(warning));
        }
        if let Value::Object(map) = new {
            *object = map;
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(meta::invalid(
            &resource.qualified_kind(),
            &resource.group,
            &resource.kind,
            object::name_of(object),
            errors,
        ))
    }
}

/// The `x-kubernetes-validations` of every version's schema compiled, as upstream does when
/// a definition is written: a rule that does not compile, or whose estimated cost is over
/// budget, refuses it. Upstream checks its internal form, where schemas all versions share
/// are one `spec.validation`, so the paths are printed there when they are shared. On an
/// update, a version whose schema is unchanged (by name; for a shared schema, the first
/// version's) is spared the per-expression cost limit, as upstream spares it
/// (`suppressExpressionCostForUnchangedSchema`), so a definition accepted under older
/// estimates stays writable.
fn cel_rule_errors(versions: &[Value], old: Option<&[Value]>, errors: &mut Vec<FieldError>) {
    let schema_of = |v: &Value| {
        v.get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .cloned()
    };
    let unchanged = |version: &Value| {
        let name = text(version, &["name"]);
        old.into_iter().flatten().any(|o| {
            text(o, &["name"]) == name
                && schema_of(o).is_some()
                && schema_of(o) == schema_of(version)
        })
    };
    let schemas: Vec<Option<&Value>> = versions
        .iter()
        .map(|v| v.get("schema").and_then(|s| s.get("openAPIV3Schema")))
        .collect();
    let shared = !schemas.is_empty() && schemas.iter().all(|s| s.is_some() && *s == schemas[0]);
    if shared {
        if let (Some(Some(schema)), Some(first)) = (schemas.first(), versions.first()) {
            crate::cel_rules::check(
                schema,
                "spec.validation.openAPIV3Schema",
                unchanged(first),
                errors,
            );
        }
        return;
    }
    for (index, (schema, version)) in schemas.iter().zip(versions).enumerate() {
        if let Some(schema) = schema {
            let at = format!("spec.versions[{index}].schema.openAPIV3Schema");
            crate::cel_rules::check(schema, &at, unchanged(version), errors);
        }
    }
}

fn invalid_definition(name: &str, errors: Vec<FieldError>) -> ApiError {
    meta::invalid(
        "CustomResourceDefinition.apiextensions.k8s.io",
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        name,
        errors,
    )
}

fn field_error(field: &str, reason: &'static str, detail: String) -> FieldError {
    FieldError {
        field: field.to_owned(),
        reason,
        detail,
    }
}

/// Defaults (`singular`, `listKind`, conversion `None`) and the validation of
/// `pkg/apis/apiextensions/validation` that users meet; on create the initial status, on an
/// update the new storage version recorded in `status.storedVersions`.
fn admit_definition(old: Option<&Object>, object: &mut Object) -> ApiResult<()> {
    let name = object::name_of(object).to_owned();
    let spec = object.entry("spec").or_insert_with(|| json!({}));
    let Value::Object(spec) = spec else {
        return Err(invalid_definition(
            &name,
            vec![field_error(
                "spec",
                "FieldValueRequired",
                "Required value".into(),
            )],
        ));
    };
    let names = spec.entry("names").or_insert_with(|| json!({}));
    if let Value::Object(names) = names {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !kind.is_empty() {
            names
                .entry("singular")
                .or_insert_with(|| json!(kind.to_lowercase()));
            names
                .entry("listKind")
                .or_insert_with(|| json!(format!("{kind}List")));
        }
    }
    spec.entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    let spec_value = Value::Object(spec.clone());
    let mut errors = Vec::new();
    let group = text(&spec_value, &["group"]);
    let plural = text(&spec_value, &["names", "plural"]);
    let kind = text(&spec_value, &["names", "kind"]);
    if group.is_empty() {
        errors.push(field_error(
            "spec.group",
            "FieldValueRequired",
            "Required value".into(),
        ));
    } else if !group.contains('.') {
        errors.push(field_error(
            "spec.group",
            "FieldValueInvalid",
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
        ));
    }
    if plural.is_empty() {
        errors.push(field_error(
            "spec.names.plural",
            "FieldValueRequired",
            "Required value".into(),
        ));
    } else if !meta::name_errors(plural, NameRule::Label, false).is_empty()
        || plural.chars().any(|c| c.is_ascii_uppercase())
    {
        errors.push(field_error(
            "spec.names.plural",
            "FieldValueInvalid",
            format!(
                "Invalid value: {plural:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ),
        ));
    }
    if kind.is_empty() {
        errors.push(field_error(
            "spec.names.kind",
            "FieldValueRequired",
            "Required value".into(),
        ));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errors.push(field_error(
            "metadata.name",
            "FieldValueInvalid",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let scope = text(&spec_value, &["scope"]);
    if !matches!(scope, "Namespaced" | "Cluster") {
        errors.push(field_error(
            "spec.scope",
            "FieldValueNotSupported",
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let versions = spec_value
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errors.push(field_error(
            "spec.versions",
            "FieldValueRequired",
            "Required value: must have exactly one version marked as storage version".into(),
        ));
    }
    let storage: Vec<&str> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| text(v, &["name"]))
        .collect();
    if !versions.is_empty() && storage.len() != 1 {
        errors.push(field_error(
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: \"versions\": must have exactly one version marked as storage version"
                .into(),
        ));
    }
    for (index, version) in versions.iter().enumerate() {
        if text(version, &["name"]).is_empty() {
            errors.push(field_error(
                &format!("spec.versions[{index}].name"),
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
        if version
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .is_none_or(|s| !s.is_object())
        {
            errors.push(field_error(
                &format!("spec.versions[{index}].schema.openAPIV3Schema"),
                "FieldValueRequired",
                "Required value: schemas are required".into(),
            ));
        }
    }
    let old_versions = old
        .and_then(|o| o.get("spec"))
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array);
    cel_rule_errors(&versions, old_versions.map(Vec::as_slice), &mut errors);
    if let Some(old) = old {
        let old_scope = old.get("spec").map(|s| text(s, &["scope"])).unwrap_or("");
        if !old_scope.is_empty() && old_scope != scope {
            errors.push(field_error(
                "spec.scope",
                "FieldValueInvalid",
                format!("Invalid value: {scope:?}: field is immutable"),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(invalid_definition(&name, errors));
    }
    let storage = storage.first().copied().unwrap_or("").to_owned();
    match old {
        None => {
            object.insert(
                "status".to_owned(),
                json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": [storage]}),
            );
        }
        Some(_) => {
            if let Some(Value::Object(status)) = object.get_mut("status") {
                let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
                if let Value::Array(stored) = stored
                    && !stored.iter().any(|v| v.as_str() == Some(&storage))
                {
                    stored.push(json!(storage));
                }
            }
        }
    }
    Ok(())
}

/// For a definition being deleted (docs/api-behaviour.md#crd-deletion): the cleanup finalizer and the `Terminating`
/// condition, so that the controller removes its objects before it goes.
pub(crate) fn on_delete(resource: &Resource, object: &mut Object) {
    if !is_definitions(resource) {
        return;
    }
    let metadata = object::metadata_mut(object);
    let finalizers = metadata.entry("finalizers").or_insert_with(|| json!([]));
    if let Value::Array(finalizers) = finalizers
        && !finalizers.iter().any(|f| f == CLEANUP_FINALIZER)
    {
        finalizers.push(json!(CLEANUP_FINALIZER));
    }
    set_condition(
        object,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
}

/// Sets a condition in `status.conditions`, keeping its transition time when only the reason
/// or message change. Returns whether anything changed.
pub(crate) fn set_condition(
    object: &mut Object,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> bool {
    let status_object = object.entry("status").or_insert_with(|| json!({}));
    let Value::Object(status_object) = status_object else {
        return false;
    };
    let conditions = status_object
        .entry("conditions")
        .or_insert_with(|| json!([]));
    let Value::Array(conditions) = conditions else {
        return false;
    };
    let existing = conditions.iter_mut().find(|c| c["type"] == kind);
    match existing {
        Some(condition)
            if condition["status"] == status
                && condition["reason"] == reason
                && condition["message"] == message =>
        {
            false
        }
        Some(condition) => {
            if condition["status"] != status {
                condition["lastTransitionTime"] = json!(meta::now_rfc3339());
            }
            condition["status"] = json!(status);
            condition["reason"] = json!(reason);
            condition["message"] = json!(message);
            true
        }
        None => {
            conditions.push(json!({
                "type": kind, "status": status,
                "lastTransitionTime": meta::now_rfc3339(),
                "reason": reason, "message": message,
            }));
            true
        }
    }
}

/// The status of a condition of a definition.
pub(crate) fn condition_status<'a>(object: &'a Object, kind: &str) -> Option<&'a str> {
    object
        .get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)?
        .get("status")?
        .as_str()
}

/// The registry entries of a definition's served versions (preferred first).
pub(crate) fn resources_of(definition: &Object) -> Vec<Arc<Resource>> {
    let empty = Value::Null;
    let spec = definition.get("spec").unwrap_or(&empty);
    let group = text(spec, &["group"]).to_owned();
    let names = spec.get("names").unwrap_or(&empty);
    let strings = |key: &str| -> Vec<String> {
        names
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let terminating = object::meta_str(definition, "deletionTimestamp").is_some();
    let mut versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter(|v| v["served"] == true).collect())
        .unwrap_or_default();
    versions.sort_by(|a, b| {
        version_priority(text(b, &["name"])).cmp(&version_priority(text(a, &["name"])))
    });
    let storage_version = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .map(|v| text(v, &["name"]).to_owned())
        .unwrap_or_default();
    let conversion = spec
        .get("conversion")
        .filter(|c| c.get("strategy").and_then(Value::as_str) == Some("Webhook"))
        .cloned();
    let mut resources = Vec::new();
    for version in versions {
        let name = text(version, &["name"]).to_owned();
        let schema = version
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .filter(|s| s.is_object())
            .cloned();
        let subresources = version.get("subresources").unwrap_or(&empty);
        let mut subs = Vec::new();
        let verbs = vec!["get".to_owned(), "patch".to_owned(), "update".to_owned()];
        let scale = subresources
            .get("scale")
            .filter(|s| s.is_object())
            .map(|s| ScalePaths {
                spec_replicas: text(s, &["specReplicasPath"]).to_owned(),
                status_replicas: text(s, &["statusReplicasPath"]).to_owned(),
                label_selector: Some(text(s, &["labelSelectorPath"]).to_owned())
                    .filter(|p| !p.is_empty()),
            });
        if scale.is_some() {
            subs.push(Subresource {
                name: "scale".to_owned(),
                response: Some(Gvk {
                    group: "autoscaling".to_owned(),
                    version: "v1".to_owned(),
                    kind: "Scale".to_owned(),
                }),
                verbs: verbs.clone(),
                printer: Some(Printer::Scale),
            });
        }
        if subresources.get("status").is_some_and(Value::is_object) {
            subs.push(Subresource {
                name: "status".to_owned(),
                response: None,
                verbs,
                printer: None,
            });
        }
        subs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut columns: Vec<PrinterColumn> = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| PrinterColumn {
                        name: text(c, &["name"]).to_owned(),
                        kind: text(c, &["type"]).to_owned(),
                        format: text(c, &["format"]).to_owned(),
                        description: text(c, &["description"]).to_owned(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: text(c, &["jsonPath"]).to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        if columns.is_empty() {
            // The real handler's default: the age.
            columns.push(PrinterColumn {
                name: "Age".to_owned(),
                kind: "date".to_owned(),
                format: String::new(),
                description: crate::table::CREATION_TIMESTAMP_DOC.to_owned(),
                priority: 0,
                json_path: ".metadata.creationTimestamp".to_owned(),
            });
        }
        let selectable_fields = version
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|fields| {
                fields
                    .iter()
                    .map(|f| text(f, &["jsonPath"]).trim_start_matches('.').to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let types = Arc::new(match &schema {
            Some(schema) => Types::from_openapi(schema),
            None => Types::from_openapi(&json!({"type": "object",
                "x-kubernetes-preserve-unknown-fields": true})),
        });
        let mut verbs: Vec<String> = [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
        .iter()
        .map(|v| (*v).to_owned())
        .collect();
        verbs.sort();
        // `customResourceStrategy.PrepareForUpdate`: any change but to `metadata` moves the
        // generation; with a status subresource, `status` cannot change through the main
        // resource, so only the rest counts.
        let generation = if subs.iter().any(|s| s.name == "status") {
            GenerationPolicy::AllButMetadataAndStatus
        } else {
            GenerationPolicy::AllButMetadata
        };
        resources.push(Arc::new(Resource {
            group: group.clone(),
            version: name,
            plural: text(names, &["plural"]).to_owned(),
            singular: text(names, &["singular"]).to_owned(),
            kind: text(names, &["kind"]).to_owned(),
            namespaced: text(spec, &["scope"]) == "Namespaced",
            verbs,
            short_names: strings("shortNames"),
            categories: strings("categories"),
            subresources: subs,
            behaviour: Behaviour {
                names: NameRule::Subdomain,
                generation,
                unconditional_update: false,
                create_on_update: false,
                delete_returns_object: false,
                admission: Admission::None,
                storage: crate::registry::Storage::Stored,
            },
            printer: Printer::Columns(columns.into()),
            custom: Some(Arc::new(Custom {
                crd_name: object::name_of(definition).to_owned(),
                // Compiled once per served schema (this runs for each definition change);
                // rules that fail to compile were refused when the definition was written.
                rules: schema.as_ref().and_then(|s| {
                    let rules = crate::cel_rules::compile(s, "", true, &mut Vec::new());
                    rules.has_rules().then(|| Arc::new(rules))
                }),
                schema,
                types,
                scale,
                selectable_fields,
                terminating,
                storage_version: storage_version.clone(),
                conversion: conversion.clone(),
            })),
        }));
    }
    resources
}

/// The names a definition claims in its group, for conflict detection: (what, name).
pub(crate) fn claimed_names(definition: &Object) -> Vec<(&'static str, String)> {
    let empty = Value::Null;
    let names = definition
        .get("spec")
        .and_then(|s| s.get("names"))
        .unwrap_or(&empty);
    let mut out = Vec::new();
    for (what, key) in [
        ("Plural", "plural"),
        ("Singular", "singular"),
        ("Kind", "kind"),
        ("ListKind", "listKind"),
    ] {
        let value = text(names, &[key]);
        if !value.is_empty() {
            out.push((what, value.to_owned()));
        }
    }
    for short in names
        .get("shortNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        out.push(("ShortNames", short.to_owned()));
    }
    out
}

/// `definition.spec.names` as `status.acceptedNames` shows them.
pub(crate) fn accepted_names(definition: &Object) -> Value {
    let names = definition
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut out = Map::new();
    for key in [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ] {
        if let Some(value) = names.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(out)
}
