//! Every request under `/api/v1/...` and `/apis/{g}/{v}/...`: parse the target (docs/api-behaviour.md#url-layout), check
//! the verb, and hand over to the verb's handler.

use axum::body::Body;
use std::sync::Arc;

use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;

use super::{create, delete, get, list, patch, update, watch};
use crate::fieldvalidation::{self, FieldValidation, Refusal};
use crate::identity::{self, UserInfo};
use crate::managedfields::Writer;
use crate::meta::{self, FieldError};
use crate::negotiate::Negotiated;
use crate::object;
use crate::object::Object;
use crate::openapi::SCHEMAS;
use crate::query::Query;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult, MAX_BODY_BYTES};
use crate::target::{self, RequestInfo, Target};

/// Where a write's object came from: it decides how a decoding refusal is worded.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// The request body of a create or update.
    Body,
    /// The result of a JSON or merge patch, with the unknown members of a JSON patch's
    /// operations.
    Patched(&'a [String]),
    /// The result of this strategic merge patch.
    Strategic(&'a Value),
    /// Server-side apply's configuration.
    Applied,
}

/// Upstream's refusal of a patch whose result does not decode: 422 with one `patch` cause
/// whose value is the patched object (JSON and merge patch) or the patch (strategic).
pub(crate) fn patch_invalid(value: String, refusal: &Refusal) -> ApiError {
    meta::invalid(
        "",
        "",
        "",
        "",
        vec![FieldError {
            field: "patch".to_owned(),
            reason: "FieldValueInvalid",
            detail: format!(
                "Invalid value: {}: {}",
                Value::String(value),
                refusal.message()
            ),
        }],
    )
}

/// Everything a verb handler gets.
pub(crate) struct Call {
    pub(crate) state: AppState,
    pub(crate) target: Arc<Target>,
    pub(crate) query: Query,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// Who makes the request.
    pub(crate) user: Arc<UserInfo>,
    /// What responses are (serializer, conversion, indentation), negotiated from `Accept`.
    pub(crate) negotiated: Negotiated,
}

impl Call {
    /// Refuses the call with 405 unless the resource (or the subresource the call targets)
    /// serves `verb`.
    pub(crate) fn require_verb(&self, verb: &str) -> ApiResult<()> {
        let resource = &self.target.resource;
        match self.target.subresource.as_deref() {
            None if resource.has_verb(verb) => Ok(()),
            None => Err(ApiError::verb_not_supported(resource, verb)),
            Some(name) => {
                let served = resource
                    .subresource(name)
                    .is_some_and(|s| s.verbs.iter().any(|v| v == verb));
                if served {
                    Ok(())
                } else {
                    Err(ApiError::route_method_not_allowed())
                }
            }
        }
    }

    /// docs/api-behaviour.md#field-validation, #content-types: decodes `object` into its kind as upstream's typed decoding does
    /// (`fieldvalidation`): depth and types checked, canonical forms written, the fields the
    /// kind does not have dropped and reported as `?fieldValidation` asks. Returns the
    /// warnings to send; a refusal is worded as upstream words it where `origin` says the
    /// object came from.
    pub(crate) fn decode_object(
        &self,
        object: &mut Object,
        origin: Origin<'_>,
    ) -> ApiResult<Vec<String>> {
        self.decode_typed(object, origin)
    }

    /// [`Call::decode_object`]'s typed decoding.
    fn decode_typed(&self, object: &mut Object, origin: Origin<'_>) -> ApiResult<Vec<String>> {
        let mode = FieldValidation::from_query(&self.query)?;
        let resource = &self.target.resource;
        // A JSON patch's own unknown members come first, as upstream lists them.
        let patch_unknown = match origin {
            Origin::Patched(unknown) if mode != FieldValidation::Ignore => unknown,
            _ => &[],
        };
        let refusal = match fieldvalidation::decode(&SCHEMAS, resource, mode, object) {
            Ok(warnings) if patch_unknown.is_empty() => return Ok(warnings),
            Ok(warnings) if mode == FieldValidation::Warn => {
                return Ok(patch_unknown.iter().cloned().chain(warnings).collect());
            }
            Ok(_) => Refusal::Strict(patch_unknown.to_vec()),
            Err(Refusal::Strict(unknown)) => {
                Refusal::Strict(patch_unknown.iter().cloned().chain(unknown).collect())
            }
            Err(refusal) => refusal,
        };
        Err(match (origin, &refusal) {
            (Origin::Body, _) | (Origin::Applied, Refusal::Strict(_)) => {
                ApiError::bad_request(format!(
                    "{kind} in version \"{version}\" cannot be handled as a {kind}: {}",
                    refusal.message(),
                    kind = resource.kind,
                    version = resource.version,
                ))
            }
            // `staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go`
            // (upstream answers 500 here, a known bug, kubernetes#139253; the fix makes it the
            // 400 it is here).
            (Origin::Applied, Refusal::Decode(err)) => ApiError::bad_request(format!(
                "failed to create typed patch object ({}/{}; {}/{}, Kind={}): {}",
                object::meta_str(object, "namespace").unwrap_or(""),
                object::name_of(object),
                resource.group,
                resource.version,
                resource.kind,
                err.apply_message(),
            )),
            // `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`: the patched
            // object does not decode (`applyPatchToCurrentObject`, `applyPatchToObject`).
            (Origin::Patched(_), _) => patch_invalid(
                serde_json::to_string(&Value::Object(object.clone())).unwrap_or_default(),
                &refusal,
            ),
            (Origin::Strategic(patch), _) => {
                patch_invalid(fieldvalidation::go_print(patch), &refusal)
            }
        })
    }

    /// The admission webhooks' view of this call: `operation` on `name`, with `options` of
    /// the kind `options_kind` (`CreateOptions`, ...) and the field manager of `writer`.
    pub(crate) fn admission_request<'a>(
        &'a self,
        operation: crate::dispatch::Operation,
        name: &'a str,
        dry_run: bool,
        options_kind: &str,
        writer: Option<&Writer>,
    ) -> crate::dispatch::Request<'a> {
        crate::dispatch::Request {
            resource: &self.target.resource,
            subresource: self.target.subresource.as_deref(),
            namespace: self.target.namespace.as_deref(),
            name,
            operation,
            user: &self.user,
            dry_run,
            options: crate::dispatch::options(
                options_kind,
                dry_run,
                writer.map(|w| w.manager.as_str()),
            ),
        }
    }

    /// The field manager of a write (docs/api-behaviour.md#server-side-apply), `options` naming the options kind in errors.
    pub(crate) fn writer(&self, options: &str) -> ApiResult<Writer> {
        Writer::of_request(
            self.query.get("fieldManager"),
            self.headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok()),
            &self.target.resource,
            self.target.subresource.as_deref(),
            options,
        )
    }

    /// The response with `body` (an object or a Status), as negotiated: converted when the
    /// client asked for a conversion, then encoded.
    pub(crate) fn respond(&self, status: StatusCode, body: &Value) -> Response {
        self.answer(status, body, false)
    }

    /// [`Call::respond`] for a list.
    pub(crate) fn respond_list(&self, status: StatusCode, body: &Value) -> Response {
        self.answer(status, body, true)
    }

    fn answer(&self, status: StatusCode, body: &Value, list: bool) -> Response {
        let negotiated = &self.negotiated;
        let converted = match negotiated.conversion {
            None => None,
            Some(conversion) => match conversion.apply(
                body,
                list,
                &self.target.resource,
                self.target.subresource.as_deref(),
                &self.query,
            ) {
                Ok(converted) => converted,
                Err(err) => return negotiated.encoding.error(err),
            },
        };
        negotiated.encoding.respond(
            status,
            converted.as_ref().unwrap_or(body),
            negotiated.pretty,
        )
    }

    /// `?dryRun`: only `All` is valid (docs/api-behaviour.md#dry-run); `options` names the options kind in the error.
    pub(crate) fn dry_run(&self, options: &str) -> ApiResult<bool> {
        let values = self.query.all("dryRun");
        if values.iter().all(|v| *v == "All") {
            return Ok(!values.is_empty());
        }
        let bad = values.iter().find(|v| **v != "All").copied().unwrap_or("");
        Err(crate::meta::invalid(
            &format!("{options}.meta.k8s.io"),
            "meta.k8s.io",
            options,
            "",
            vec![crate::meta::FieldError {
                field: "dryRun".to_owned(),
                reason: "FieldValueNotSupported",
                detail: format!("Unsupported value: {bad:?}: supported values: \"All\""),
            }],
        ))
    }
}

/// `/api/v1/{*rest}`.
pub(crate) async fn core(
    State(state): State<AppState>,
    Path(rest): Path<String>,
    request: RequestParts,
) -> Response {
    handle(state, "", "v1", &rest, request).await
}

/// `/apis/{group}/{version}/{*rest}`.
pub(crate) async fn grouped(
    State(state): State<AppState>,
    Path((group, version, rest)): Path<(String, String, String)>,
    request: RequestParts,
) -> Response {
    handle(state, &group, &version, &rest, request).await
}

/// The parts of a resource request the handlers need.
pub(crate) struct RequestParts {
    method: Method,
    query: Option<String>,
    /// The target as the classifying middleware parsed it, when it could.
    known: Option<Arc<Target>>,
    /// Who makes the request (`identity::requester`).
    user: Arc<UserInfo>,
    /// The audit log's record of the request, if it is audited (webhooks annotate it).
    audit: Option<crate::audit::AuditHandle>,
    headers: HeaderMap,
    body: Body,
    /// The connection's upgrade, for the streaming subresources (`podio`).
    upgrade: Option<hyper::upgrade::OnUpgrade>,
}

impl<S: Send + Sync> FromRequest<S> for RequestParts {
    type Rejection = std::convert::Infallible;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        Ok(RequestParts {
            query: parts.uri.query().map(str::to_owned),
            known: parts
                .extensions
                .remove::<RequestInfo>()
                .and_then(|info| info.target),
            user: identity::requester(&parts.extensions),
            audit: crate::audit::AuditHandle::of(&parts.extensions).cloned(),
            upgrade: parts.extensions.remove::<hyper::upgrade::OnUpgrade>(),
            method: parts.method,
            headers: parts.headers,
            body,
        })
    }
}

async fn handle(
    state: AppState,
    group: &str,
    version: &str,
    rest: &str,
    request: RequestParts,
) -> Response {
    // The body is read before anything can be answered: an answer that leaves it unread
    // makes hyper close the kept-alive connection under a client still using it. Its size is
    // judged later, so that a missing resource is still a 404 and a bad Accept a 406.
    let body = axum::body::to_bytes(request.body, MAX_BODY_BYTES).await;
    let oversized = body.is_err();
    let request = RequestParts {
        body: Body::empty(),
        ..request
    };
    let mut response = answer(state, group, version, rest, request, body).await;
    if oversized {
        crate::status::close_connection(&mut response);
    }
    response
}

async fn answer(
    state: AppState,
    group: &str,
    version: &str,
    rest: &str,
    request: RequestParts,
    body: Result<Bytes, axum::Error>,
) -> Response {
    let target = match request.known {
        Some(target) => target,
        None => match target::parse(state.registry(), group, version, rest) {
            Ok(target) => Arc::new(target),
            Err(err) => return err.into_response(),
        },
    };
    let query = Query::parse(request.query.as_deref());
    let negotiated = match Negotiated::negotiate(&request.headers, &query, &target.resource) {
        Ok(negotiated) => negotiated,
        Err(err) => return err.into_response(),
    };
    let encoding = negotiated.encoding;
    let audit = request.audit;
    let request_future = async {
        let body = body.map_err(|_| ApiError::too_large())?;
        let writes = request.method != Method::GET && request.method != Method::HEAD;
        // A definition's write answers once the definition is served (docs/api-behaviour.md#crd-served).
        let definitions = crate::crd::is_definitions(&target.resource) && writes;
        // A role's or binding's write answers once the authorizer sees it (`authz::rbac`).
        let rbac = state
            .rbac()
            .filter(|_| writes && target.resource.group == crate::authz::rbac::GROUP)
            .cloned();
        // A webhook configuration's write answers once admission sees it (`webhook`).
        let webhooks = writes && target.resource.group == crate::webhook::GROUP;
        // A Fault's write answers once the pipeline sees it (`faults`).
        let faults = writes
            && target.resource.plural == "faults"
            && target.resource.group == crate::registry::testing::GROUP;
        let call = Call {
            state: state.clone(),
            target,
            query,
            headers: request.headers,
            body,
            user: request.user,
            negotiated,
        };
        let response = dispatch(call, request.method, request.upgrade).await;
        if definitions
            && response.as_ref().is_ok_and(|r| r.status().is_success())
            && let Ok(revision) = state.store().current_revision().await
        {
            state.crd_synced(revision).await;
        }
        if let Some(rbac) = rbac
            && response.as_ref().is_ok_and(|r| r.status().is_success())
            && let Ok(revision) = state.store().current_revision().await
        {
            rbac.synced(revision).await;
        }
        if webhooks
            && response.as_ref().is_ok_and(|r| r.status().is_success())
            && let Ok(revision) = state.store().current_revision().await
        {
            state.webhooks().synced(revision).await;
        }
        if faults
            && response.as_ref().is_ok_and(|r| r.status().is_success())
            && let Ok(revision) = state.store().current_revision().await
        {
            state.faults().synced(revision).await;
        }
        response
    };
    let (result, notes) = crate::webhook::collecting(request_future).await;
    if let Some(audit) = &audit {
        for (key, value) in &notes.annotations {
            audit.annotate(key, value);
        }
    }
    let response = result.unwrap_or_else(|err| encoding.error(err));
    fieldvalidation::with_warnings(response, &notes.warnings)
}

async fn dispatch(
    call: Call,
    method: Method,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
) -> ApiResult<Response> {
    if call.target.resource.group == crate::registry::testing::GROUP
        && call.target.resource.behaviour.storage == crate::registry::Storage::Virtual
    {
        return super::testing::serve(&call, method).await;
    }
    if call.target.resource.group == crate::registry::resource_metrics::GROUP
        && call.target.resource.behaviour.storage == crate::registry::Storage::Virtual
    {
        return super::resource_metrics::serve(&call, method).await;
    }
    if call.target.resource.behaviour.storage == crate::registry::Storage::Virtual {
        return super::reviews::serve(&call, method).await;
    }
    let item = call.target.name.is_some();
    let subresource = call.target.subresource.clone();
    let watch = call.target.watches(&call.query);
    match (method.clone(), item, subresource.as_deref()) {
        (_, true, Some("exec" | "attach" | "portforward"))
            if call.target.resource.plural == "pods" =>
        {
            crate::handlers::podio::serve(&call, &method, upgrade).await
        }
        (_, true, Some("exec" | "attach" | "portforward" | "proxy")) => {
            super::logs::not_simulated(&call)
        }
        (Method::GET, true, Some("log")) => super::logs::log(&call).await,
        (Method::GET, _, None) if watch => watch::watch(&call).await,
        (Method::GET, false, None) => list::list(&call).await,
        (Method::GET, true, _) => get::get(&call).await,
        (Method::POST, false, None) => create::create(&call).await,
        (Method::POST, true, Some("binding")) => update::bind(&call).await,
        (Method::POST, true, Some("token")) => super::subresources::token_request(&call).await,
        (Method::POST, true, Some("eviction")) => super::subresources::evict(&call).await,
        (Method::PUT, true, _) => update::update(&call).await,
        (Method::DELETE, true, None) => delete::delete(&call).await,
        (Method::DELETE, false, None) => delete::delete_collection(&call).await,
        (Method::PATCH, true, _) => patch::patch(&call).await,
        _ => Err(ApiError::route_method_not_allowed()),
    }
}
