//! POST (docs/api-behaviour.md#create): metadata rules (docs/api-behaviour.md#object-metadata), namespace admission (docs/api-behaviour.md#namespace-lifecycle), generateName with
//! retries (docs/api-behaviour.md#generated-names), kind defaults, dry run, and the store's create.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kubemock_storage::{CreateOutcome, KeyValue};
use serde_json::{Value, json};

use super::resource::{Call, Origin};
use crate::admission;
use crate::crd;
use crate::fieldvalidation::with_warnings;
use crate::identity::UserInfo;
use crate::keys;
use crate::managedfields::{self, Writer};
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::registry::{GenerationPolicy, Resource};
use crate::state::AppState;
use crate::status::{ApiError, ApiResult, Cause};

/// Attempts at a unique generated name before giving up (docs/api-behaviour.md#generated-names).
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// `POST` on a collection.
pub(crate) async fn create(call: &Call) -> ApiResult<Response> {
    call.require_verb("create")?;
    let resource = &call.target.resource;
    if resource.namespaced && call.target.namespace.is_none() {
        return Err(ApiError::route_method_not_allowed());
    }
    let dry_run = call.dry_run("CreateOptions")?;
    let writer = call.writer("CreateOptions")?;
    let mut object = object::decode_body(&call.headers, &call.body, resource)?;
    let warnings = call.decode_object(&mut object, Origin::Body)?;
    super::escalation::check(call, None, &object)?;
    let (created, stored) = create_stored(
        &call.state,
        resource,
        call.target.namespace.as_deref(),
        object,
        dry_run,
        Some(&writer),
        &call.user,
    )
    .await?;
    // The hot path, as GET's: the stored bytes with the resourceVersion spliced in, when
    // they are the answer as they are (JSON, not pretty, a kind stored as served).
    let plain =
        call.negotiated.is_plain_json() && !resource.is_custom() && !resource.stored_converted();
    if let Some(bytes) = stored
        .filter(|_| plain)
        .and_then(|kv| object::answer_bytes(&kv))
    {
        let response = (
            StatusCode::CREATED,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response();
        return Ok(with_warnings(response, &warnings));
    }
    let response = call.respond(StatusCode::CREATED, &Value::Object(created));
    Ok(with_warnings(response, &warnings))
}

/// Creates `object` as an object of `resource` in `namespace`: the whole create pipeline, for
/// POST, create-on-update, apply-create and the server's own startup objects. `writer`'s
/// ownership of the fields is recorded (docs/api-behaviour.md#server-side-apply); `None` when the caller did (an apply). `user`
/// makes the request ([`UserInfo::apiserver`] for the server's own objects).
pub(crate) async fn create_object(
    state: &AppState,
    resource: &Arc<Resource>,
    namespace: Option<&str>,
    object: Object,
    dry_run: bool,
    writer: Option<&Writer>,
    user: &UserInfo,
) -> ApiResult<Object> {
    let (created, _) =
        create_stored(state, resource, namespace, object, dry_run, writer, user).await?;
    Ok(created)
}

/// Stores an object the API server makes itself at startup (the local APIServices, the
/// bootstrap RBAC policy), complete as it is, status included: the generic metadata rules and
/// the field manager's record, without the kind's admission. Returns whether it was created
/// (`false`: it existed).
pub(crate) async fn create_system_object(
    state: &AppState,
    resource: &Resource,
    namespace: Option<&str>,
    mut object: Object,
    writer: &Writer,
) -> ApiResult<bool> {
    prepare(resource, namespace, &mut object)?;
    managedfields::record_update(resource, writer, None, &mut object);
    let key = keys::object_key(resource, namespace, object::name_of(&object));
    let bytes = object::to_stored(&object)?;
    match state
        .store()
        .create(key.into(), bytes)
        .await
        .map_err(ApiError::from_storage)?
    {
        CreateOutcome::Created(_) => Ok(true),
        CreateOutcome::AlreadyExists(_) => Ok(false),
    }
}

/// [`create_object`], also returning what the store holds now (none on a dry run).
async fn create_stored(
    state: &AppState,
    resource: &Arc<Resource>,
    namespace: Option<&str>,
    mut object: Object,
    dry_run: bool,
    writer: Option<&Writer>,
    user: &UserInfo,
) -> ApiResult<(Object, Option<KeyValue>)> {
    let generate_name = prepare(resource, namespace, &mut object)?;
    if let Some(namespace) = namespace.filter(|_| resource.namespaced) {
        admit_into_namespace(state, resource, namespace, object::name_of(&object)).await?;
    }
    // `customResourceStrategy.PrepareForCreate`: with a status subresource, a create cannot
    // set the status.
    if resource.is_custom() && resource.subresource("status").is_some() {
        object.shift_remove("status");
    }
    crd::admit(resource, None, &mut object)?;
    // The writer owns what decoding defaults (as upstream), not what admission adds after.
    admission::apply_defaults(resource, &mut object)?;
    if let Some(writer) = writer {
        managedfields::record_update(resource, writer, None, &mut object);
    }
    let name = if generate_name.is_some() {
        String::new()
    } else {
        object::name_of(&object).to_owned()
    };
    let request = crate::dispatch::Request {
        resource,
        subresource: None,
        namespace,
        name: &name,
        operation: crate::dispatch::Operation::Create,
        user,
        dry_run,
        options: crate::dispatch::options(
            "CreateOptions",
            dry_run,
            writer.map(|w| w.manager.as_str()),
        ),
    };
    crate::dispatch::mutate(state, &request, &mut object, None).await?;
    let reservation = admission::admit_create(state, resource, &mut object, dry_run, user).await?;
    crate::dispatch::validate(state, &request, Some(&object), None).await?;
    // ResourceQuota runs last, as upstream orders its validating plugins.
    admission::quota::charge_create(state, resource, namespace, &object, dry_run).await?;
    let attempts = if generate_name.is_some() {
        GENERATE_NAME_ATTEMPTS
    } else {
        1
    };
    for attempt in 1..=attempts {
        let name = object::name_of(&object).to_owned();
        let key = keys::object_key(resource, namespace, &name);
        let bytes = match crate::dispatch::conversion::for_storage(state, resource, &object).await?
        {
            Some(converted) => object::to_stored(&converted)?,
            None => object::to_stored(&admission::to_storage(resource, &object))?,
        };
        if dry_run {
            return Ok((object, None));
        }
        match state
            .store()
            .create(key.into(), bytes)
            .await
            .map_err(ApiError::from_storage)?
        {
            CreateOutcome::Created(kv) => {
                reservation.commit().await;
                object::set_resource_version(&mut object, kv.mod_revision);
                if resource.group.is_empty() && resource.plural == "namespaces" {
                    ensure_default_service_account(state, &name).await?;
                }
                return Ok((object, Some(kv)));
            }
            CreateOutcome::AlreadyExists(existing) => {
                if let Some(prefix) = &generate_name
                    && attempt < attempts
                {
                    object::metadata_mut(&mut object).insert(
                        "name".to_owned(),
                        Value::String(meta::generate_name(prefix)),
                    );
                    continue;
                }
                let existing = object::parse_stored(&existing.value)?;
                let deleting = object::meta_str(&existing, "deletionTimestamp").is_some();
                let prefix = if deleting {
                    "object is being deleted: "
                } else {
                    ""
                };
                let mut error = if generate_name.is_some() {
                    ApiError::already_exists(
                        resource,
                        &name,
                        prefix,
                        ", the server was not able to generate a unique name for the object",
                    )
                } else {
                    ApiError::already_exists(resource, &name, prefix, "")
                };
                if generate_name.is_some()
                    && let Some(details) = error.details.as_mut()
                {
                    details.retry_after_seconds = Some(1);
                }
                return Err(error);
            }
        }
    }
    Err(ApiError::internal("generateName retries exhausted"))
}

/// Applies the create-time metadata rules to `object`; returns the generateName prefix if the
/// name was generated.
fn prepare(
    resource: &Resource,
    namespace: Option<&str>,
    object: &mut Object,
) -> ApiResult<Option<String>> {
    let metadata = object::metadata_mut(object);
    let body_namespace = metadata
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty());
    if resource.namespaced {
        if body_namespace.is_some_and(|ns| Some(ns) != namespace) {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if let Some(namespace) = namespace {
            metadata.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
        }
    } else {
        metadata.shift_remove("namespace");
    }
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "generation",
    ] {
        metadata.shift_remove(field);
    }
    // Upstream's store (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`, `Create`)
    // refuses only a resourceVersion that `strconv.ParseUint` reads as more than zero, with an
    // error that is not a Status (so a 500 without a reason); anything else is ignored.
    if let Some(Value::String(rv)) = metadata.shift_remove("resourceVersion")
        && meta::parse_uint(&rv).is_some_and(|rv| rv != 0)
    {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "",
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let name = metadata
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let prefix = metadata
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let invalid = |name: &str, field: &str, details: Vec<String>| {
        let errors = details
            .into_iter()
            .map(|detail| FieldError {
                field: field.to_owned(),
                reason: "FieldValueInvalid",
                detail,
            })
            .collect();
        meta::invalid(
            &resource.qualified_kind(),
            &resource.group,
            &resource.kind,
            name,
            errors,
        )
    };
    let generated = if !name.is_empty() {
        let errors = meta::name_errors(&name, resource.behaviour.names, false);
        if !errors.is_empty() {
            return Err(invalid(&name, "metadata.name", errors));
        }
        None
    } else if !prefix.is_empty() {
        let errors = meta::name_errors(&prefix, resource.behaviour.names, true);
        if !errors.is_empty() {
            return Err(invalid("", "metadata.generateName", errors));
        }
        metadata.insert(
            "name".to_owned(),
            Value::String(meta::generate_name(&prefix)),
        );
        Some(prefix)
    } else {
        return Err(meta::invalid(
            &resource.qualified_kind(),
            &resource.group,
            &resource.kind,
            "",
            vec![FieldError {
                field: "metadata.name".to_owned(),
                reason: "FieldValueRequired",
                detail: "Required value: name or generateName is required".to_owned(),
            }],
        ));
    };
    metadata.insert("uid".to_owned(), Value::String(meta::new_uid()));
    metadata.insert(
        "creationTimestamp".to_owned(),
        Value::String(meta::now_rfc3339()),
    );
    if resource.behaviour.generation != GenerationPolicy::None {
        metadata.insert("generation".to_owned(), json!(1));
    }
    meta::canonicalize_metadata(object::metadata_mut(object));
    Ok(generated)
}

/// NamespaceLifecycle admission for a create (docs/api-behaviour.md#namespace-lifecycle): the namespace must exist and not be
/// terminating.
async fn admit_into_namespace(
    state: &AppState,
    resource: &Resource,
    namespace: &str,
    name: &str,
) -> ApiResult<()> {
    let namespaces = state
        .registry()
        .lookup("", "v1", "namespaces")
        .ok_or_else(|| ApiError::internal("the namespaces resource is not registered"))?;
    let key = keys::object_key(&namespaces, None, namespace);
    let revision = state
        .store()
        .mod_revision(key.as_bytes())
        .await
        .map_err(ApiError::from_storage)?;
    let Some(revision) = revision else {
        return Err(ApiError::not_found(&namespaces, namespace));
    };
    let terminating = match state.namespace_terminating(namespace, revision) {
        Some(terminating) => terminating,
        None => namespace_terminating(state, &namespaces, &key, namespace).await?,
    };
    if terminating {
        return Err(ApiError::forbidden(
            resource,
            name,
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
            vec![Cause {
                reason: "NamespaceTerminating".to_owned(),
                message: format!("namespace {namespace} is being terminated"),
                field: "metadata.namespace".to_owned(),
            }],
        ));
    }
    Ok(())
}

/// Reads whether `namespace` is Terminating from the store, and remembers it.
async fn namespace_terminating(
    state: &AppState,
    namespaces: &Resource,
    key: &str,
    namespace: &str,
) -> ApiResult<bool> {
    let Some(kv) = state.fetch(key).await? else {
        return Err(ApiError::not_found(namespaces, namespace));
    };
    // Only the phase matters: read just that.
    #[derive(serde::Deserialize)]
    struct Phase<'a> {
        #[serde(borrow)]
        phase: Option<std::borrow::Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct NamespaceStatus<'a> {
        #[serde(borrow)]
        status: Option<Phase<'a>>,
    }
    let ns: NamespaceStatus<'_> = serde_json::from_slice(&kv.value)
        .map_err(|err| ApiError::internal(format!("stored namespace is not JSON: {err}")))?;
    let terminating = ns
        .status
        .and_then(|s| s.phase)
        .is_some_and(|phase| phase == "Terminating");
    state.record_namespace_phase(namespace, kv.mod_revision, terminating);
    Ok(terminating)
}

/// Creates the `default` ServiceAccount of a new namespace (the API server does it here, in
/// place of kube-controller-manager's serviceaccounts controller, so that every namespace has
/// one from its first moment).
pub(crate) async fn ensure_default_service_account(
    state: &AppState,
    namespace: &str,
) -> ApiResult<()> {
    let Some(accounts) = state.registry().lookup("", "v1", "serviceaccounts") else {
        return Ok(());
    };
    let account = object::with_type_meta(
        json!({"metadata": {"name": "default", "namespace": namespace}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        &accounts,
    );
    // kube-controller-manager's serviceaccounts controller creates it on a real cluster.
    let writer = Writer::server("kube-controller-manager", &accounts);
    match Box::pin(create_object(
        state,
        &accounts,
        Some(namespace),
        account,
        false,
        Some(&writer),
        UserInfo::apiserver(),
    ))
    .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.reason == "AlreadyExists" => Ok(()),
        Err(err) => Err(err),
    }
}
