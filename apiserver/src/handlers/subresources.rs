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
    matches!(phase_of(pod), "Succeeded" | "Failed" | "Pending")
        || object::meta_str(pod, "deletionTimestamp").is_some()
}

/// Whether a delete of `pod` must not race a change of it (`shouldEnforceResourceVersion`):
/// a running pod that is not going away already.
fn enforce_resource_version(pod: &Object) -> bool {
    !matches!(phase_of(pod), "Succeeded" | "Failed")
        && object::meta_str(pod, "deletionTimestamp").is_none()
}

/// The pod's `status.phase`, `""` without one.
fn phase_of(pod: &Object) -> &str {
    pod.get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether the pod's `Ready` condition is `True` (`podutil.IsPodReady`).
fn is_ready(pod: &Object) -> bool {
    pod.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// How often the eviction reads a budget (or a pod) again after losing a race to update it
/// (`EvictionsRetry`: 20 steps).
const BUDGET_UPDATE_ATTEMPTS: usize = 20;

/// More disrupted pods than this in a budget's status refuse further evictions
/// (`MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// `POST .../pods/{name}/eviction` (`pkg/registry/core/pod/storage/eviction.go`): the pod is
/// deleted (with the Eviction's `deleteOptions`, after a `DisruptionTarget` condition is added
/// to its status) unless the PodDisruptionBudget covering it has no disruption left. A
/// budget that allows one is charged first: its `disruptionsAllowed` goes down by one and the
/// pod enters its `disruptedPods`, until the disruption controller sees the pod gone.
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
    let mut options = match eviction.get("deleteOptions") {
        Some(Value::Object(options)) => options.clone(),
        _ => Object::new(),
    };
    // `propagateDryRun`: the request's dryRun, unless the options carry their own.
    let dry_run = call.dry_run("CreateOptions")?;
    if dry_run && !options.contains_key("dryRun") {
        options.insert("dryRun".to_owned(), json!(["All"]));
    }
    let dry_run = dry_run || options.get("dryRun").is_some_and(|d| d != &json!([]));
    let user_precondition = options
        .get("preconditions")
        .and_then(|p| p.get("resourceVersion"))
        .is_some_and(|rv| !rv.is_null());
    // Upstream retries a conflict (the pod changed under the eviction) when the caller set no
    // resourceVersion precondition of its own.
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(pod) = read(call, &pods, &namespace, &name).await? else {
            return Err(ApiError::not_found(&pods, &name));
        };
        let ignored = can_ignore_budget(&pod);
        let (guard_version, unhealthy) = if ignored {
            (enforce_resource_version(&pod), false)
        } else {
            match charge_budget(call, &namespace, &pod, dry_run).await? {
                Budget::Charged => (false, false),
                Budget::Unhealthy => (true, true),
                Budget::Refused((code, status)) => return Ok(call.respond(code, &status)),
            }
        };
        let mut options = options.clone();
        if guard_version && !user_precondition {
            let version = object::meta_str(&pod, "resourceVersion").unwrap_or_default();
            options.insert(
                "preconditions".to_owned(),
                json!({"resourceVersion": version}),
            );
        }
        let result = if dry_run {
            Ok(())
        } else {
            mark_disruption_target(call, &pods, &namespace, &name, &mut options).await
        };
        let result = match result {
            Ok(()) => delete_pod(call, Arc::clone(&pods), &namespace, &name, &options).await,
            Err(err) => Err(err),
        };
        match result {
            Ok(()) => {
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201});
                return Ok(call.respond(StatusCode::CREATED, &status));
            }
            // The unhealthy pod changed since it was read: it may count as healthy now.
            Err(err) if err.code == StatusCode::CONFLICT && unhealthy && !user_precondition => {
                return Err(budget_processing(
                    &budget_name_of(call, &namespace, &pod).await,
                ));
            }
            Err(err)
                if err.code == StatusCode::CONFLICT
                    && ignored
                    && !user_precondition
                    && attempt < BUDGET_UPDATE_ATTEMPTS => {}
            Err(err) => return Err(err),
        }
    }
}

/// What the pod's disruption budget said.
enum Budget {
    /// No budget, or one that allowed the disruption and was charged for it.
    Charged,
    /// The pod is not ready and its budget lets it go uncharged (`AlwaysAllow`, or the budget
    /// is met without it): deleted only if it did not change meanwhile.
    Unhealthy,
    /// The eviction's answer instead (more than one budget: upstream's 500 Status).
    Refused((StatusCode, Value)),
}

/// The 429 of a budget the disruption controller has not caught up with
/// (`createTooManyRequestsError`).
fn budget_processing(budget: &str) -> ApiError {
    too_many(
        10,
        format!("The disruption budget {budget} is still being processed by the server."),
    )
}

/// `Cannot evict pod as it would violate the pod's disruption budget.`, 429, with a
/// `DisruptionBudget` cause.
fn too_many(retry_after: u64, cause: String) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_details(Details {
        causes: vec![Cause {
            reason: "DisruptionBudget".to_owned(),
            message: cause,
            field: String::new(),
        }],
        retry_after_seconds: (retry_after > 0).then_some(retry_after),
        ..Details::default()
    })
}

/// The PodDisruptionBudgets of `namespace` whose selector matches `pod`, as stored.
async fn budgets_of(call: &Call, namespace: &str, pod: &Object) -> ApiResult<Vec<Object>> {
    let Some(budgets) = call
        .state
        .registry()
        .lookup("policy", "v1", "poddisruptionbudgets")
    else {
        return Ok(Vec::new());
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
        let budget = object::from_stored(kv)?;
        let selector = budget.get("spec").and_then(|s| s.get("selector"));
        let matches = selector.is_some_and(|selector| {
            !crate::admission::selector_is_empty(selector)
                && crate::admission::selector_matches(selector, labels) == Some(true)
        });
        if matches {
            matching.push(budget);
        }
    }
    Ok(matching)
}

/// The name of the one budget covering `pod`, for a message; `""` if that changed.
async fn budget_name_of(call: &Call, namespace: &str, pod: &Object) -> String {
    match budgets_of(call, namespace, pod).await {
        Ok(budgets) if budgets.len() == 1 => object::name_of(&budgets[0]).to_owned(),
        _ => String::new(),
    }
}

/// Asks the budget covering `pod` for a disruption and charges it (`checkAndDecrement`,
/// retried with the budget read again when its update loses a race).
async fn charge_budget(
    call: &Call,
    namespace: &str,
    pod: &Object,
    dry_run: bool,
) -> ApiResult<Budget> {
    let mut matching = budgets_of(call, namespace, pod).await?;
    if matching.len() > 1 {
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "code": 500,
            "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."});
        return Ok(Budget::Refused((StatusCode::INTERNAL_SERVER_ERROR, status)));
    }
    let Some(mut budget) = matching.pop() else {
        return Ok(Budget::Charged);
    };
    let budget_name = object::name_of(&budget).to_owned();
    let int = |budget: &Object, path: &[&str]| {
        let (first, rest) = path.split_first()?;
        rest.iter()
            .try_fold(budget.get(*first)?, |v, key| v.get(key))
            .and_then(Value::as_i64)
    };
    if !is_ready(pod) {
        let always = budget
            .get("spec")
            .and_then(|s| s.get("unhealthyPodEvictionPolicy"))
            .and_then(Value::as_str)
            == Some("AlwaysAllow");
        let desired = int(&budget, &["status", "desiredHealthy"]).unwrap_or(0);
        let current = int(&budget, &["status", "currentHealthy"]).unwrap_or(0);
        if always || (current >= desired && desired > 0) {
            return Ok(Budget::Unhealthy);
        }
    }
    let budgets = call
        .state
        .registry()
        .lookup("policy", "v1", "poddisruptionbudgets")
        .ok_or_else(|| ApiError::internal("poddisruptionbudgets are not registered"))?;
    let pod_name = object::name_of(pod).to_owned();
    for _ in 0..BUDGET_UPDATE_ATTEMPTS {
        let generation = int(&budget, &["metadata", "generation"]).unwrap_or(0);
        if int(&budget, &["status", "observedGeneration"]).unwrap_or(0) < generation {
            return Err(budget_processing(&budget_name));
        }
        let allowed = int(&budget, &["status", "disruptionsAllowed"]).unwrap_or(0);
        if allowed < 0 {
            return Err(ApiError::forbidden_with(
                "policy",
                "poddisruptionbudget",
                &budget_name,
                "pdb disruptions allowed is negative",
            ));
        }
        let disrupted = budget
            .get("status")
            .and_then(|s| s.get("disruptedPods"))
            .and_then(Value::as_object)
            .map_or(0, serde_json::Map::len);
        if disrupted > MAX_DISRUPTED_PODS {
            return Err(ApiError::forbidden_with(
                "policy",
                "poddisruptionbudget",
                &budget_name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            ));
        }
        if allowed == 0 {
            return Err(too_many(
                0,
                format!(
                    "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                    int(&budget, &["status", "desiredHealthy"]).unwrap_or(0),
                    int(&budget, &["status", "currentHealthy"]).unwrap_or(0)
                ),
            ));
        }
        if dry_run {
            return Ok(Budget::Charged);
        }
        let status = object::child_object(&mut budget, "status");
        status.insert("disruptionsAllowed".to_owned(), json!(allowed - 1));
        if allowed == 1 {
            let generation = status.get("observedGeneration").cloned();
            set_disruption_allowed_false(status, generation);
        }
        object::child_object(status, "disruptedPods")
            .insert(pod_name.clone(), json!(meta::now_rfc3339()));
        match put_status(call, &budgets, namespace, &budget_name, &budget, true).await {
            Ok(()) => return Ok(Budget::Charged),
            Err(err) if err.code == StatusCode::CONFLICT => {
                let Some(fresh) = read(call, &budgets, namespace, &budget_name).await? else {
                    return Err(ApiError::not_found(&budgets, &budget_name));
                };
                budget = fresh;
            }
            Err(err) => return Err(err),
        }
    }
    // `errors.NewTimeoutError(..., 10)`.
    Err(ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "Timeout",
        format!("Timeout: couldn't update PodDisruptionBudget \"{budget_name}\" due to conflicts"),
    )
    .with_details(Details {
        retry_after_seconds: Some(10),
        ..Details::default()
    }))
}

/// `UpdateDisruptionAllowedCondition` with no disruption left: `DisruptionAllowed` False,
/// reason `InsufficientPods` (`k8s.io/component-helpers/apps/poddisruptionbudget`).
fn set_disruption_allowed_false(status: &mut Object, observed_generation: Option<Value>) {
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Value::Array(conditions) = conditions else {
        return;
    };
    let now = json!(meta::now_rfc3339());
    match conditions
        .iter_mut()
        .find(|c| c["type"] == "DisruptionAllowed")
    {
        Some(condition) => {
            if condition["status"] != "False" {
                condition["lastTransitionTime"] = now;
            }
            condition["status"] = json!("False");
            condition["reason"] = json!("InsufficientPods");
            condition["message"] = json!("");
            if let Some(generation) = observed_generation {
                condition["observedGeneration"] = generation;
            }
        }
        None => {
            let mut condition = json!({"type": "DisruptionAllowed", "status": "False",
                "reason": "InsufficientPods", "message": "", "lastTransitionTime": now});
            if let Some(generation) = observed_generation {
                condition["observedGeneration"] = generation;
            }
            conditions.push(condition);
        }
    }
}

/// Adds the `DisruptionTarget` condition to the pod's status (`addConditionAndDeletePod`),
/// and points the delete's resourceVersion precondition, if any, at the write it made.
async fn mark_disruption_target(
    call: &Call,
    pods: &Arc<crate::registry::Resource>,
    namespace: &str,
    name: &str,
    options: &mut Object,
) -> ApiResult<()> {
    let Some(mut pod) = read(call, pods, namespace, name).await? else {
        return Err(ApiError::not_found(pods, name));
    };
    let current = object::meta_str(&pod, "resourceVersion")
        .unwrap_or_default()
        .to_owned();
    let precondition = |key: &str| {
        options
            .get("preconditions")
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    if let Some(uid) = precondition("uid")
        && object::meta_str(&pod, "uid") != Some(uid.as_str())
    {
        return Err(pod_conflict(
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                object::meta_str(&pod, "uid").unwrap_or_default()
            ),
        ));
    }
    if let Some(version) = precondition("resourceVersion")
        && version != current
    {
        return Err(pod_conflict(
            name,
            &format!(
                "the ResourceVersion in the precondition ({version}) does not match the ResourceVersion in record ({current}). The object might have been modified"
            ),
        ));
    }
    let status = object::child_object(&mut pod, "status");
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if let Value::Array(conditions) = conditions {
        let condition = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
            "lastProbeTime": null, "lastTransitionTime": meta::now_rfc3339()});
        match conditions
            .iter_mut()
            .find(|c| c["type"] == "DisruptionTarget")
        {
            Some(existing) => *existing = condition,
            None => conditions.push(condition),
        }
    }
    put_status(call, pods, namespace, name, &pod, false).await?;
    if precondition("resourceVersion").is_some()
        && let Some(fresh) = read(call, pods, namespace, name).await?
        && let Some(Value::Object(preconditions)) = options.get_mut("preconditions")
    {
        preconditions.insert(
            "resourceVersion".to_owned(),
            json!(object::meta_str(&fresh, "resourceVersion").unwrap_or_default()),
        );
    }
    Ok(())
}

/// The 409 of a failed precondition, as the eviction words it (`errors.NewConflict` of the
/// group resource `Pod`).
fn pod_conflict(name: &str, why: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "Conflict",
        format!("Operation cannot be fulfilled on Pod \"{name}\": {why}"),
    )
    .with_details(Details {
        name: Some(name.to_owned()),
        kind: Some("Pod".to_owned()),
        ..Details::default()
    })
}

/// The object `namespace/name` of `resource` as a client would read it (its
/// resourceVersion set), or `None`.
async fn read(
    call: &Call,
    resource: &crate::registry::Resource,
    namespace: &str,
    name: &str,
) -> ApiResult<Option<Object>> {
    let key = crate::keys::object_key(resource, Some(namespace), name);
    match call.state.fetch(&key).await? {
        Some(kv) => Ok(Some(crate::admission::from_storage(
            resource,
            object::from_stored(&kv)?,
        ))),
        None => Ok(None),
    }
}

/// A write of `object`'s status through the server's own update path, as upstream's eviction
/// does through its stores (the caller's resourceVersion is the precondition). `loopback`:
/// as upstream's eviction writes a budget, through the API server's own client, whose user
/// agent names the writer `kube-apiserver`; else as the evicting request.
async fn put_status(
    call: &Call,
    resource: &Arc<crate::registry::Resource>,
    namespace: &str,
    name: &str,
    object: &Object,
    loopback: bool,
) -> ApiResult<()> {
    let mut inner = internal_call(
        call,
        Arc::clone(resource),
        namespace,
        name,
        Some("status"),
        serde_json::to_vec(object).map_err(|err| ApiError::internal(err.to_string()))?,
    );
    if loopback {
        let agent = kubemock_apimachinery::version::user_agent("kube-apiserver");
        if let Ok(agent) = axum::http::HeaderValue::from_str(&agent) {
            inner.headers.insert(axum::http::header::USER_AGENT, agent);
        }
    }
    super::update::update(&inner).await.map(drop)
}

/// Deletes the pod with `options` (a DeleteOptions object).
async fn delete_pod(
    call: &Call,
    pods: Arc<crate::registry::Resource>,
    namespace: &str,
    name: &str,
    options: &Object,
) -> ApiResult<()> {
    let body = serde_json::to_vec(options).map_err(|err| ApiError::internal(err.to_string()))?;
    let mut inner = internal_call(call, pods, namespace, name, None, body);
    // The delete's own dryRun is in its options.
    inner.query = call.query.clone();
    super::delete::delete(&inner).await.map(drop)
}

/// A call of the eviction's user on `resource`'s object `namespace/name` (or its
/// `subresource`) with a JSON `body`.
fn internal_call(
    call: &Call,
    resource: Arc<crate::registry::Resource>,
    namespace: &str,
    name: &str,
    subresource: Option<&str>,
    body: Vec<u8>,
) -> Call {
    let mut headers = call.headers.clone();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    Call {
        state: call.state.clone(),
        target: Arc::new(Target {
            resource,
            namespace: Some(namespace.to_owned()),
            name: Some(name.to_owned()),
            subresource: subresource.map(str::to_owned),
            legacy_watch: false,
        }),
        user: call.user.clone(),
        query: crate::query::Query::default(),
        headers,
        body: bytes::Bytes::from(body),
        negotiated: call.negotiated,
    }
}
