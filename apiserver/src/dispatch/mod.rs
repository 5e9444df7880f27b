//! The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins' dispatch
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go`,
//! `mutating/dispatcher.go`, `validating/dispatcher.go`) over the index of `webhook`.
//!
//! The write handlers call [`mutate`] once the built-in mutating admission has run (decoding
//! defaults, a custom resource's defaults) and before the kind's own preparation and
//! validation, and [`validate`] once the object is validated, just before it is stored, as
//! upstream's chain orders them (mutating plugins with the webhooks last; validation;
//! validating plugins with the webhooks last).
//!
//! - Mutating webhooks are called one at a time in configuration name order, their JSON
//!   patches applied; with `reinvocationPolicy: IfNeeded` a webhook is called once more when
//!   a later one changed the object (`reinvocationcontext.go`). Validating webhooks are called
//!   concurrently; the first failure in webhook order is the answer.
//! - Webhook configurations and admission policies are never sent to webhooks
//!   (`rules.IsExemptAdmissionConfigurationResource`).
//! - A `service` reference is resolved through the Service's Endpoints
//!   (`staging/src/k8s.io/apiserver/pkg/util/proxy/proxy.go`, `ResolveEndpoint`).
//!
//! `policies` is the ValidatingAdmissionPolicy plugin, run by [`validate`] before the
//! validating webhooks.
//!
//! `conversion` converts custom objects between the versions of their definition (`None`, or
//! the definition's conversion webhook), for the handlers' reads and writes and for webhooks
//! matched through an equivalent version.
//!
//! A module of its own above `admission` and `fieldvalidation` (a webhook's patched object is
//! decoded and defaulted again), under `handlers`.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tracing::warn;

pub(crate) mod conversion;
mod policies;
use crate::identity::UserInfo;
use crate::object::Object;
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};
pub(crate) use crate::webhook::config::Operation;
use crate::webhook::config::{Hook, Kind, Matched};
use crate::webhook::review::{self, Gvr, ReviewRequest};
use crate::webhook::{
    GROUP, MUTATION_ANNOTATION, MUTATION_FAILED_OPEN, PATCH_ANNOTATION, VALIDATION_FAILED_OPEN,
    annotate, client, config, note,
};

/// The request an admission webhook is asked about.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// The resource the request addresses.
    pub(crate) resource: &'a Resource,
    /// The subresource, if any.
    pub(crate) subresource: Option<&'a str>,
    /// The namespace, for a namespaced resource.
    pub(crate) namespace: Option<&'a str>,
    /// The object's name (empty for a create with generateName, as upstream).
    pub(crate) name: &'a str,
    /// The operation.
    pub(crate) operation: Operation,
    /// Who makes it.
    pub(crate) user: &'a UserInfo,
    /// `dryRun=All`.
    pub(crate) dry_run: bool,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    pub(crate) options: Value,
}

/// The `options` of an admission request: `kind` (`CreateOptions`, ...) with `dryRun` and
/// `fieldManager` as given.
pub(crate) fn options(kind: &str, dry_run: bool, field_manager: Option<&str>) -> Value {
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        options["fieldManager"] = json!(manager);
    }
    options
}

/// `rules.IsExemptAdmissionConfigurationResource`.
fn exempt(resource: &Resource) -> bool {
    resource.group == GROUP
        && matches!(
            resource.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// Why a call did not produce a verdict.
enum CallFailure {
    /// `ErrCallingWebhook`: failurePolicy decides.
    Calling(String),
    /// Any other error: the request fails with it whatever the policy.
    Other(ApiError),
}

/// A matched webhook: the resource and kind it is called with.
struct Invocation {
    matched: Gvr,
    /// The matched resource, when it is another version than the request's.
    equivalent: Option<Arc<Resource>>,
}

/// The request's own resource and kind.
fn requested(resource: &Resource) -> Gvr {
    Gvr {
        group: resource.group.clone(),
        version: resource.version.clone(),
        resource: resource.plural.clone(),
        kind: resource.kind.clone(),
    }
}

/// Labels of the request's namespace, read once per dispatch.
struct NamespaceLabels(Option<Option<Value>>);

impl NamespaceLabels {
    async fn get(
        &mut self,
        state: &AppState,
        request: &Request<'_>,
        object: Option<&Value>,
    ) -> ApiResult<Option<Value>> {
        if let Some(labels) = &self.0 {
            return Ok(labels.clone());
        }
        let resource = request.resource;
        let namespace_itself = resource.group.is_empty()
            && resource.plural == "namespaces"
            && request.subresource.is_none()
            && matches!(request.operation, Operation::Create | Operation::Update);
        let labels = if namespace_itself {
            object.and_then(|o| o.get("metadata")?.get("labels").cloned())
        } else {
            let name = if resource.group.is_empty() && resource.plural == "namespaces" {
                request.name
            } else {
                request.namespace.unwrap_or("")
            };
            let namespaces = state
                .registry()
                .lookup("", "v1", "namespaces")
                .ok_or_else(|| ApiError::internal("the namespaces resource is not registered"))?;
            let key = crate::keys::object_key(&namespaces, None, name);
            let Some(kv) = state.fetch(&key).await? else {
                return Err(ApiError::not_found(&namespaces, name));
            };
            let stored: Value = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
            stored
                .get("metadata")
                .and_then(|m| m.get("labels"))
                .cloned()
        };
        self.0 = Some(labels.clone());
        Ok(labels)
    }
}

/// `ShouldCallHook`: whether `hook` is called for `request`, and with which resource.
async fn should_call(
    state: &AppState,
    hook: &Hook,
    request: &Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    namespace_labels: &mut NamespaceLabels,
) -> ApiResult<Option<Invocation>> {
    let resource = request.resource;
    let namespace = request.namespace.unwrap_or("");
    let subresource = request.subresource.unwrap_or("");
    let matched = |group: &'_ str, version: &'_ str, plural: &'_ str| {
        hook.rules.iter().any(|rule| {
            rule.matches(&Matched {
                operation: request.operation,
                group,
                version,
                resource: plural,
                subresource,
                namespace,
            })
        })
    };
    let mut invocation = None;
    if matched(&resource.group, &resource.version, &resource.plural) {
        invocation = Some(Invocation {
            matched: requested(resource),
            equivalent: None,
        });
    } else if hook.equivalent {
        for other in conversion::equivalents(state, resource) {
            if matched(&other.group, &other.version, &other.plural) {
                invocation = Some(Invocation {
                    matched: requested(&other),
                    equivalent: Some(other),
                });
                break;
            }
        }
    }
    let Some(invocation) = invocation else {
        return Ok(None);
    };
    if !config::object_selected(hook, object, old) {
        return Ok(None);
    }
    if let Some(selector) = &hook.namespace_selector
        && (!namespace.is_empty() || resource.plural == "namespaces")
    {
        let labels = namespace_labels.get(state, request, object).await?;
        if !config::selector_matches(selector, labels.as_ref()) {
            return Ok(None);
        }
    }
    if !hook.match_conditions.is_empty() {
        // The conditions see the object in the version the webhook matched.
        let (object, old) = match &invocation.equivalent {
            None => (object.cloned(), old.cloned()),
            Some(target) => (
                convert_for(state, object, target).await?,
                convert_for(state, old, target).await?,
            ),
        };
        if !conditions_match(
            state,
            hook,
            &invocation,
            request,
            object.as_ref(),
            old.as_ref(),
        )? {
            return Ok(None);
        }
    }
    Ok(Some(invocation))
}

async fn convert_for(
    state: &AppState,
    object: Option<&Value>,
    target: &Resource,
) -> ApiResult<Option<Value>> {
    match object {
        None => Ok(None),
        Some(object) => conversion::convert_value(state, object, target)
            .await
            .map(Some),
    }
}

/// The AdmissionRequest admission expressions see as `request`.
pub(crate) fn cel_request(request: &Request<'_>, matched: &Gvr) -> Value {
    review::cel_request(&ReviewRequest {
        uid: "",
        matched,
        requested: &requested(request.resource),
        subresource: request.subresource.unwrap_or(""),
        name: request.name,
        namespace: request.namespace.unwrap_or(""),
        operation: request.operation.as_str(),
        user: request.user,
        object: None,
        old: None,
        dry_run: request.dry_run,
        options: &request.options,
    })
}

/// What admission expressions' `authorizer` asks and `authorizer.requestResource` describes:
/// the server's authorizer, the requester and the resource the request addresses (upstream's
/// `NewAuthorizerVal` and `NewResourceAuthorizerVal` of `admission.Attributes`).
pub(crate) fn authz_inputs(
    state: &AppState,
    request: &Request<'_>,
) -> kubemock_cel::admission::AuthzInputs {
    crate::authz::cel::admission_inputs(
        state.shared_authorizer(),
        request.user,
        kubemock_cel::authz::RequestResource {
            group: request.resource.group.clone(),
            resource: request.resource.plural.clone(),
            subresource: request.subresource.unwrap_or("").to_owned(),
            namespace: request.namespace.unwrap_or("").to_owned(),
            name: request.name.to_owned(),
        },
    )
}

/// A webhook's `matchConditions` (`ShouldCallHook` in
/// `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go`): whether
/// they all hold; an evaluation error skips the webhook under `failurePolicy: Ignore` and
/// refuses the request (403) under `Fail`. `namespaceObject` is null for webhooks, as
/// upstream's matcher passes none.
fn conditions_match(
    state: &AppState,
    hook: &Hook,
    invocation: &Invocation,
    request: &Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> ApiResult<bool> {
    let cel_request = cel_request(request, &invocation.matched);
    let authz = authz_inputs(state, request);
    let inputs = kubemock_cel::admission::Inputs {
        object,
        old_object: old,
        request: &cel_request,
        namespace: None,
        params: None,
        authz: Some(&authz),
    };
    let activation = kubemock_cel::admission::AdmissionActivation::new(&inputs, Arc::from([]));
    match kubemock_cel::admission::match_conditions(&hook.match_conditions, &activation) {
        Ok(matches) => Ok(matches),
        Err(why) if hook.ignore_failures => {
            warn!(webhook = %hook.name, error = %why, "failed evaluating match conditions, skipping the webhook");
            Ok(false)
        }
        Err(why) => {
            warn!(webhook = %hook.name, error = %why, "failed evaluating match conditions, failing closed");
            let resource = request.resource;
            Err(ApiError::forbidden_with(
                &resource.group,
                &resource.plural,
                request.name,
                &why,
            ))
        }
    }
}

/// The mutating admission webhooks for `request`: each matching webhook is called and its
/// patch applied to `object`.
pub(crate) async fn mutate(
    state: &AppState,
    request: &Request<'_>,
    object: &mut Object,
    old: Option<&Object>,
) -> ApiResult<()> {
    let current = state.webhooks().current();
    if current.mutating.is_empty() || exempt(request.resource) {
        return Ok(());
    }
    let mut namespace_labels = NamespaceLabels(None);
    let mut previously_invoked: HashSet<&str> = HashSet::new();
    let mut reinvoke: HashSet<&str> = HashSet::new();
    let mut should_reinvoke = false;
    let old_value = old.map(|o| Value::Object(o.clone()));
    for round in 0..2 {
        if round == 1 && !should_reinvoke {
            break;
        }
        for (index, hook) in current.mutating.iter().enumerate() {
            let value = Value::Object(object.clone());
            let Some(invocation) = should_call(
                state,
                hook,
                request,
                Some(&value),
                old_value.as_ref(),
                &mut namespace_labels,
            )
            .await?
            else {
                continue;
            };
            if round == 1 && !reinvoke.contains(hook.uid.as_str()) {
                continue;
            }
            let outcome = call_mutating(
                state,
                hook,
                &invocation,
                request,
                object,
                old_value.as_ref(),
                (round, index),
            )
            .await;
            let changed = matches!(outcome, Ok(true));
            if changed {
                reinvoke.extend(previously_invoked.drain());
                should_reinvoke = true;
            }
            if hook.reinvoke {
                previously_invoked.insert(&hook.uid);
            }
            match outcome {
                Ok(_) => {}
                Err(CallFailure::Calling(why)) if hook.ignore_failures => {
                    warn!(webhook = %hook.name, error = %why, "failed calling webhook, failing open");
                    annotate(
                        format!("{MUTATION_FAILED_OPEN}round_{round}_index_{index}"),
                        hook.name.clone(),
                    );
                }
                Err(CallFailure::Calling(why)) => {
                    return Err(ApiError::internal(format!(
                        "failed calling webhook {:?}: {why}",
                        hook.name
                    )));
                }
                Err(CallFailure::Other(error)) => return Err(error),
            }
        }
    }
    Ok(())
}

/// The ValidatingAdmissionPolicies (`policies`), then the validating admission webhooks for
/// `request` (`object` is none for a delete), called concurrently; the first failure in call
/// order is the answer.
pub(crate) async fn validate(
    state: &AppState,
    request: &Request<'_>,
    object: Option<&Object>,
    old: Option<&Object>,
) -> ApiResult<()> {
    let current = state.webhooks().current();
    let nothing = current.validating.is_empty() && current.policies.is_empty();
    if nothing || exempt(request.resource) {
        return Ok(());
    }
    let object = object.map(|o| Value::Object(o.clone()));
    let old = old.map(|o| Value::Object(o.clone()));
    let mut namespace_labels = NamespaceLabels(None);
    // ValidatingAdmissionPolicy runs before ValidatingAdmissionWebhook (upstream's order).
    if !current.policies.is_empty() {
        policies::validate(
            state,
            &current,
            request,
            object.as_ref(),
            old.as_ref(),
            &mut namespace_labels,
        )
        .await?;
    }
    let mut relevant = Vec::new();
    for (index, hook) in current.validating.iter().enumerate() {
        if let Some(invocation) = should_call(
            state,
            hook,
            request,
            object.as_ref(),
            old.as_ref(),
            &mut namespace_labels,
        )
        .await?
        {
            relevant.push((index, hook, invocation));
        }
    }
    let calls = relevant.iter().map(|(index, hook, invocation)| {
        let (object, old) = (object.as_ref(), old.as_ref());
        async move {
            let outcome = call_validating(state, hook, invocation, request, object, old).await;
            match outcome {
                Ok(()) => Ok(()),
                Err(CallFailure::Calling(why)) if hook.ignore_failures => {
                    warn!(webhook = %hook.name, error = %why, "failed calling webhook, failing open");
                    annotate(
                        format!("{VALIDATION_FAILED_OPEN}round_0_index_{index}"),
                        hook.name.clone(),
                    );
                    Ok(())
                }
                Err(CallFailure::Calling(why)) => Err(ApiError::internal(format!(
                    "failed calling webhook {:?}: {why}",
                    hook.name
                ))),
                Err(CallFailure::Other(error)) => Err(error),
            }
        }
    });
    for outcome in futures_util::future::join_all(calls).await {
        outcome?;
    }
    Ok(())
}

/// The dry-run check both dispatchers make before a call.
fn check_dry_run(hook: &Hook, request: &Request<'_>) -> Result<(), CallFailure> {
    if !request.dry_run {
        return Ok(());
    }
    match hook.side_effects.as_deref() {
        None => Err(CallFailure::Calling(
            "Webhook SideEffects is nil".to_owned(),
        )),
        Some("None" | "NoneOnDryRun") => Ok(()),
        Some(_) => Err(CallFailure::Other(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )))),
    }
}

/// Sends the review and verifies the answer.
async fn call(
    state: &AppState,
    hook: &Hook,
    invocation: &Invocation,
    request: &Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<review::Verdict, CallFailure> {
    check_dry_run(hook, request)?;
    let version = review::review_version(&hook.review_versions).map_err(|why| {
        CallFailure::Calling(format!("could not create admission objects: {why}"))
    })?;
    let endpoint = hook
        .endpoint
        .as_ref()
        .map_err(|why| CallFailure::Calling(format!("could not get REST client: {why}")))?;
    let uid = crate::meta::new_uid();
    let requested = requested(request.resource);
    let body = review::build(
        version,
        &ReviewRequest {
            uid: &uid,
            matched: &invocation.matched,
            requested: &requested,
            subresource: request.subresource.unwrap_or(""),
            name: request.name,
            namespace: request.namespace.unwrap_or(""),
            operation: request.operation.as_str(),
            user: request.user,
            object,
            old,
            dry_run: request.dry_run,
            options: &request.options,
        },
    );
    let bytes = serde_json::to_vec(&body).map_err(|err| {
        CallFailure::Calling(format!("could not create admission objects: {err}"))
    })?;
    let answer = post(state, endpoint, hook.timeout, bytes)
        .await
        .map_err(|why| CallFailure::Calling(format!("failed to call webhook: {why}")))?;
    let verdict = review::verify(&answer, version, &uid, hook.kind == Kind::Mutating)
        .map_err(CallFailure::Calling)?;
    for (key, value) in &verdict.audit_annotations {
        annotate(format!("{}/{key}", hook.name), value.clone());
    }
    note(|notes| notes.warnings.extend(verdict.warnings.iter().cloned()));
    if !verdict.allowed {
        return Err(CallFailure::Other(review::denial(
            &hook.name,
            verdict.result.as_ref(),
        )));
    }
    Ok(verdict)
}

/// POSTs `body` to `endpoint`, resolving a service first.
pub(crate) async fn post(
    state: &AppState,
    endpoint: &client::Endpoint,
    timeout: Duration,
    body: Vec<u8>,
) -> Result<client::Answer, String> {
    let addresses = match &endpoint.location {
        client::Location::Url(_) => Vec::new(),
        client::Location::Service {
            namespace,
            name,
            port,
            ..
        } => resolve(state, namespace, name, *port)
            .await
            .map_err(|why| format!("Post \"{}\": {why}", endpoint.location.shown(Some(timeout))))?,
    };
    state
        .webhooks()
        .clients
        .post(endpoint, addresses, timeout, body)
        .await
        .map_err(|err| err.0)
}

/// `ResolveEndpoint` (`staging/src/k8s.io/apiserver/pkg/util/proxy/proxy.go`): the addresses
/// of the Service's Endpoints at the port named as the Service's `port`.
async fn resolve(
    state: &AppState,
    namespace: &str,
    name: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, String> {
    let read = |plural: &'static str| async move {
        let resource = state.registry().lookup("", "v1", plural)?;
        let key = crate::keys::object_key(&resource, Some(namespace), name);
        let kv = state.fetch(&key).await.ok()??;
        serde_json::from_slice::<Value>(&kv.value).ok()
    };
    let service = read("services")
        .await
        .ok_or_else(|| format!("service {name:?} not found"))?;
    let kind = service
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if !matches!(kind, "ClusterIP" | "LoadBalancer" | "NodePort") {
        return Err(format!("unsupported service type {kind:?}"));
    }
    let port_name = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
        .map(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .ok_or_else(|| format!("no service port {port} found for service {name:?}"))?;
    let endpoints = read("endpoints")
        .await
        .ok_or_else(|| format!("endpoints {name:?} not found"))?;
    let mut found = Vec::new();
    for subset in endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(target) = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        for address in subset
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(ip) = address
                .get("ip")
                .and_then(Value::as_str)
                .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
            {
                found.push(SocketAddr::new(ip, target));
            }
        }
    }
    if found.is_empty() {
        return Err(format!("no endpoints available for service {name:?}"));
    }
    // Upstream picks one at random; the connector tries them in order.
    fastrand::shuffle(&mut found);
    Ok(found)
}

async fn call_validating(
    state: &AppState,
    hook: &Hook,
    invocation: &Invocation,
    request: &Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), CallFailure> {
    let (object, old) = match &invocation.equivalent {
        None => (object.cloned(), old.cloned()),
        Some(target) => (
            convert_opt(state, object, target).await?,
            convert_opt(state, old, target).await?,
        ),
    };
    call(
        state,
        hook,
        invocation,
        request,
        object.as_ref(),
        old.as_ref(),
    )
    .await?;
    Ok(())
}

async fn convert_opt(
    state: &AppState,
    object: Option<&Value>,
    target: &Resource,
) -> Result<Option<Value>, CallFailure> {
    match object {
        None => Ok(None),
        Some(object) => conversion::convert_value(state, object, target)
            .await
            .map(Some)
            .map_err(CallFailure::Other),
    }
}

/// Calls a mutating webhook and applies its patch; whether the object changed.
async fn call_mutating(
    state: &AppState,
    hook: &Hook,
    invocation: &Invocation,
    request: &Request<'_>,
    object: &mut Object,
    old: Option<&Value>,
    (round, index): (usize, usize),
) -> Result<bool, CallFailure> {
    let annotation = |mutated: bool| {
        annotate(
            format!("{MUTATION_ANNOTATION}round_{round}_index_{index}"),
            json!({"configuration": hook.configuration, "webhook": hook.name, "mutated": mutated})
                .to_string(),
        );
    };
    let has_object = request.operation != Operation::Delete;
    let mut sent = Value::Object(object.clone());
    let mut old_sent = old.cloned();
    if let Some(target) = &invocation.equivalent {
        sent = conversion::convert_value(state, &sent, target)
            .await
            .map_err(CallFailure::Other)?;
        old_sent = convert_opt(state, old, target).await?;
    }
    let verdict = match call(
        state,
        hook,
        invocation,
        request,
        has_object.then_some(&sent),
        old_sent.as_ref(),
    )
    .await
    {
        Ok(verdict) => verdict,
        Err(failure) => {
            annotation(false);
            return Err(failure);
        }
    };
    if verdict.patch.is_empty() {
        annotation(false);
        return Ok(false);
    }
    let internal = |err: String| CallFailure::Other(ApiError::internal(err));
    let patch: json_patch::Patch =
        serde_json::from_slice(&verdict.patch).map_err(|err| internal(err.to_string()))?;
    if patch.0.is_empty() {
        annotation(false);
        return Ok(false);
    }
    if !has_object {
        annotation(false);
        return Err(internal(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    }
    if verdict.patch_type != "JSONPatch" {
        annotation(false);
        return Err(CallFailure::Calling(format!(
            "unsupported patch type {:?}",
            verdict.patch_type
        )));
    }
    let mut patched = sent.clone();
    if let Err(err) = json_patch::patch(&mut patched, &patch) {
        annotation(false);
        return Err(internal(err.to_string()));
    }
    if let Some(target) = &invocation.equivalent {
        let _ = target;
        patched = conversion::convert_value(state, &patched, request.resource)
            .await
            .map_err(CallFailure::Other)?;
    }
    let Value::Object(mut patched) = patched else {
        annotation(false);
        return Err(internal(
            "the patched object is not a JSON object".to_owned(),
        ));
    };
    // The patched object is decoded as the kind (unknown fields dropped) and defaulted, as
    // upstream decodes it into its type and runs the defaulter.
    crate::fieldvalidation::decode(
        &crate::openapi::SCHEMAS,
        request.resource,
        crate::fieldvalidation::FieldValidation::Ignore,
        &mut patched,
    )
    .map_err(|refusal| internal(refusal.message()))?;
    crate::admission::apply_defaults(request.resource, &mut patched).map_err(CallFailure::Other)?;
    let changed = patched != *object;
    *object = patched;
    annotation(changed);
    if let Ok(patch) = serde_json::to_value(&patch) {
        annotate(
            format!("{PATCH_ANNOTATION}round_{round}_index_{index}"),
            json!({"configuration": hook.configuration, "webhook": hook.name, "patch": patch, "patchType": "JSONPatch"})
                .to_string(),
        );
    }
    Ok(changed)
}
