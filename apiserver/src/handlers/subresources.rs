//! The subresources that create something other than their parent: `serviceaccounts/token`
//! (TokenRequest, `pkg/registry/core/serviceaccount/storage/token.go`) and `pods/eviction`
//! (`pkg/registry/core/pod/storage/eviction.go`).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::resource::Call;
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult, Cause, Details};
use crate::target::Target;
use crate::tokens::{self, Bound};
use kubemock_apimachinery::time;

/// A TokenRequest's default lifetime (`SetDefaults_TokenRequestSpec`: one hour).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a TokenRequest may ask for (ten minutes).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 seconds).
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// The 422 of a TokenRequest.
fn invalid_token_request(name: &str, errors: Vec<FieldError>) -> ApiError {
    meta::invalid(
        "TokenRequest.authentication.k8s.io",
        "authentication.k8s.io",
        "TokenRequest",
        name,
        errors,
    )
}

/// A resource of the core group, from the registry.
fn core(call: &Call, plural: &str) -> ApiResult<Arc<crate::registry::Resource>> {
    call.state
        .registry()
        .lookup("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not registered")))
}

/// `POST .../serviceaccounts/{name}/token`: a signed token for the service account, bound to
/// the object `spec.boundObjectRef` names, for `spec.audiences` (the API server's by
/// default), valid for `spec.expirationSeconds`.
pub(crate) async fn token_request(call: &Call) -> ApiResult<Response> {
    call.require_verb("create")?;
    call.dry_run("CreateOptions")?;
    let name = call.target.name.clone().unwrap_or_default();
    let namespace = call.target.namespace.clone().unwrap_or_default();
    // A TokenRequest (JSON, YAML, or protobuf as client-go sends it), typed as upstream's
    // decoder reads it.
    let body = crate::codec::Syntax::of_body(&call.headers)?
        .parse(&call.body)
        .map_err(|err| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type TokenRequest): {err}"
            ))
        })?;
    let Value::Object(mut request) = body else {
        return Err(ApiError::bad_request(
            "the object provided is unrecognized (must be of type TokenRequest)",
        ));
    };
    let kind = request.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "TokenRequest" {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a TokenRequest: the kind does not match the endpoint"
        )));
    }
    request.insert("kind".to_owned(), json!("TokenRequest"));
    request.insert("apiVersion".to_owned(), json!("authentication.k8s.io/v1"));
    if let Err(err) = crate::fieldvalidation::decode_kind(
        &crate::openapi::SCHEMAS,
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        &mut request,
    ) {
        return Err(ApiError::bad_request(format!(
            "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: {}",
            err.message()
        )));
    }
    let body_name = object::name_of(&request).to_owned();
    if !body_name.is_empty() && body_name != name {
        return Err(invalid_token_request(
            &name,
            vec![FieldError {
                field: "metadata.name".to_owned(),
                reason: "FieldValueInvalid",
                detail: format!(
                    "Invalid value: {}: must match the service account name if specified",
                    serde_json::to_string(&body_name).unwrap_or_default()
                ),
            }],
        ));
    }
    let body_namespace = object::meta_str(&request, "namespace")
        .unwrap_or("")
        .to_owned();
    if !body_namespace.is_empty() && body_namespace != namespace {
        return Err(invalid_token_request(
            &name,
            vec![FieldError {
                field: "metadata.namespace".to_owned(),
                reason: "FieldValueInvalid",
                detail: format!(
                    "Invalid value: {}: must match the service account namespace if specified",
                    serde_json::to_string(&body_namespace).unwrap_or_default()
                ),
            }],
        ));
    }
    let accounts = core(call, "serviceaccounts")?;
    let Some(account) =
        tokens::lookup(&call.state, "serviceaccounts", Some(&namespace), &name).await?
    else {
        return Err(ApiError::not_found(&accounts, &name));
    };
    let spec = request.get("spec").cloned().unwrap_or(Value::Null);
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = call.state.config().audiences();
    }
    let expiration = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let mut errors = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        errors.push(FieldError {
            field: "spec.expirationSeconds".to_owned(),
            reason: "FieldValueInvalid",
            detail: format!(
                "Invalid value: {expiration}: may not specify a duration less than 10 minutes"
            ),
        });
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        errors.push(FieldError {
            field: "spec.expirationSeconds".to_owned(),
            reason: "FieldValueInvalid",
            detail: format!(
                "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
            ),
        });
    }
    if !errors.is_empty() {
        return Err(invalid_token_request("", errors));
    }
    let bound = bound_object(call, &name, &namespace, spec.get("boundObjectRef")).await?;
    let now = tokens::unix_now();
    let account_uid = object::meta_str(&account, "uid").unwrap_or("").to_owned();
    let claims = tokens::claims(
        &call.state.config().service_account_issuer,
        (&namespace, &name, &account_uid),
        &bound,
        now,
        expiration,
        &audiences,
    );
    let token = call
        .state
        .pki()
        .sign_jwt(&claims)
        .map_err(|err| ApiError::internal(format!("failed to generate token: {err}")))?;
    let metadata = object::metadata_mut(&mut request);
    metadata.insert("name".to_owned(), json!(name));
    metadata.insert("namespace".to_owned(), json!(namespace));
    metadata.insert("creationTimestamp".to_owned(), json!(time::rfc3339(now)));
    meta::canonicalize_metadata(metadata);
    let mut spec_out = spec.as_object().cloned().unwrap_or_default();
    spec_out.insert("audiences".to_owned(), json!(audiences));
    spec_out.insert("expirationSeconds".to_owned(), json!(expiration));
    if !spec_out.contains_key("boundObjectRef") {
        spec_out.insert("boundObjectRef".to_owned(), Value::Null);
    }
    request.insert("spec".to_owned(), Value::Object(spec_out));
    request.insert(
        "status".to_owned(),
        json!({"token": token, "expirationTimestamp": time::rfc3339(now.saturating_add(expiration))}),
    );
    Ok(call.respond(StatusCode::CREATED, &Value::Object(request)))
}

/// The object a TokenRequest's `boundObjectRef` names (a Pod, with its node; a Node; a
/// Secret), checked as `token.go` checks it.
async fn bound_object(
    call: &Call,
    account: &str,
    namespace: &str,
    reference: Option<&Value>,
) -> ApiResult<Bound> {
    let Some(reference) = reference.filter(|r| !r.is_null()) else {
        return Ok(Bound::default());
    };
    let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name, uid) =
        (text("apiVersion"), text("kind"), text("name"), text("uid"));
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let version = api_version.rsplit('/').next().unwrap_or("");
    let (plural, namespaced) = match (group, kind) {
        ("", "Pod") => ("pods", true),
        ("", "Node") => ("nodes", false),
        ("", "Secret") => ("secrets", true),
        _ => {
            let gvk = if group.is_empty() {
                format!("/{version}, Kind={kind}")
            } else {
                format!("{group}/{version}, Kind={kind}")
            };
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {gvk}"
            )));
        }
    };
    let resource = core(call, plural)?;
    let scope = namespaced.then_some(namespace);
    let Some(found) = tokens::lookup(&call.state, plural, scope, name).await? else {
        return Err(ApiError::not_found(&resource, name));
    };
    let found_uid = object::meta_str(&found, "uid").unwrap_or("").to_owned();
    if !uid.is_empty() && uid != found_uid {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {kind} \"{name}\": the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        )
        .with_details(Details {
            name: Some(name.to_owned()),
            kind: Some(kind.to_owned()),
            ..Details::default()
        }));
    }
    let mut bound = Bound::default();
    let pair = (name.to_owned(), found_uid);
    match kind {
        "Pod" => {
            let service_account = found
                .get("spec")
                .and_then(|s| s.get("serviceAccountName"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if service_account != account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
                )));
            }
            let node = found
                .get("spec")
                .and_then(|s| s.get("nodeName"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !node.is_empty()
                && let Some(node_object) = tokens::lookup(&call.state, "nodes", None, node).await?
            {
                let node_uid = object::meta_str(&node_object, "uid")
                    .unwrap_or("")
                    .to_owned();
                bound.node = Some((node.to_owned(), node_uid));
            }
            bound.pod = Some(pair);
        }
        "Node" => bound.node = Some(pair),
        _ => bound.secret = Some(pair),
    }
    Ok(bound)
}

/// Whether a pod may be evicted without asking its disruption budget (`canIgnorePDB`).
fn can_ignore_budget(pod: &Object) -> bool {
    let phase = pod
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or("");
    matches!(phase, "Succeeded" | "Failed" | "Pending")
        || object::meta_str(pod, "deletionTimestamp").is_some()
}

/// `POST .../pods/{name}/eviction`: the pod is deleted (with the Eviction's `deleteOptions`,
/// and a `DisruptionTarget` condition first) unless a PodDisruptionBudget forbids it. kubemock
/// runs no disruption controller, so a budget's status stays as written: a budget whose
/// status was never computed (observedGeneration behind) forbids every eviction it covers,
/// as on a cluster whose controller manager is down.
pub(crate) async fn evict(call: &Call) -> ApiResult<Response> {
    call.require_verb("create")?;
    let name = call.target.name.clone().unwrap_or_default();
    let namespace = call.target.namespace.clone().unwrap_or_default();
    let pods = core(call, "pods")?;
    let eviction: Value = crate::codec::Syntax::of_body(&call.headers)?
        .parse(&call.body)
        .map_err(|err| ApiError::bad_request(format!("the body is not a valid Eviction: {err}")))?;
    let mut eviction = match eviction {
        Value::Object(eviction) => eviction,
        _ => return Err(ApiError::bad_request("the body is not a valid Eviction")),
    };
    crate::fieldvalidation::decode_kind(
        &crate::openapi::SCHEMAS,
        "policy",
        "v1",
        "Eviction",
        &mut eviction,
    )
    .map_err(|err| {
        ApiError::bad_request(format!(
            "Eviction in version \"v1\" cannot be handled as a Eviction: {}",
            err.message()
        ))
    })?;
    if object::name_of(&eviction) != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let Some(pod) = tokens::lookup(&call.state, "pods", Some(&namespace), &name).await? else {
        return Err(ApiError::not_found(&pods, &name));
    };
    if !can_ignore_budget(&pod) {
        check_budgets(call, &namespace, &pod).await?;
    }
    let options = eviction
        .get("deleteOptions")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let delete_call = Call {
        state: call.state.clone(),
        target: Arc::new(Target {
            resource: pods,
            namespace: Some(namespace),
            name: Some(name),
            subresource: None,
            legacy_watch: false,
        }),
        user: call.user.clone(),
        query: call.query.clone(),
        headers: {
            let mut headers = call.headers.clone();
            headers.insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            );
            headers
        },
        body: bytes::Bytes::from(options.to_string()),
        negotiated: call.negotiated,
    };
    super::delete::delete(&delete_call).await?;
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success", "code": 201});
    Ok(call.respond(StatusCode::CREATED, &status))
}

/// The PodDisruptionBudgets of the pod's namespace whose selector matches it: none lets the
/// eviction go; more than one is upstream's 500; one must allow a disruption (a 429 when it
/// does not, with upstream's cause).
async fn check_budgets(call: &Call, namespace: &str, pod: &Object) -> ApiResult<()> {
    let Some(budgets) = call
        .state
        .registry()
        .lookup("policy", "v1", "poddisruptionbudgets")
    else {
        return Ok(());
    };
    let prefix = crate::keys::collection_prefix(&budgets, Some(namespace));
    let listed = call
        .state
        .store()
        .range(kubemock_storage::RangeRequest::prefix(prefix))
        .await
        .map_err(ApiError::from_storage)?;
    let labels = pod.get("metadata").and_then(|m| m.get("labels"));
    let mut matching = Vec::new();
    for kv in &listed.items {
        let budget = object::parse_stored(&kv.value)?;
        let selector = budget.get("spec").and_then(|s| s.get("selector"));
        let matches = selector.is_some_and(|selector| {
            !crate::admission::selector_is_empty(selector)
                && crate::admission::selector_matches(selector, labels) == Some(true)
        });
        if matches {
            matching.push(budget);
        }
    }
    if matching.len() > 1 {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    let Some(budget) = matching.pop() else {
        return Ok(());
    };
    let budget_name = object::name_of(&budget).to_owned();
    let budget = Value::Object(budget);
    let int = |path: &[&str]| {
        path.iter()
            .try_fold(&budget, |v, key| v.get(key))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let too_many = |message: String, causes: Vec<Cause>| {
        ApiError::new(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", message).with_details(
            Details {
                causes,
                retry_after_seconds: Some(10),
                ..Details::default()
            },
        )
    };
    if int(&["status", "observedGeneration"]) < int(&["metadata", "generation"]) {
        return Err(too_many(
            format!(
                "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {budget_name} is still being processed by the server."
            ),
            Vec::new(),
        ));
    }
    if int(&["status", "disruptionsAllowed"]) <= 0 {
        return Err(too_many(
            "Cannot evict pod as it would violate the pod's disruption budget.".to_owned(),
            vec![Cause {
                reason: "DisruptionBudget".to_owned(),
                message: format!(
                    "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                    int(&["status", "desiredHealthy"]),
                    int(&["status", "currentHealthy"])
                ),
                field: String::new(),
            }],
        ));
    }
    Ok(())
}
