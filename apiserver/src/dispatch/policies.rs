//! The ValidatingAdmissionPolicy plugin's dispatch
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go`,
//! `validator.go`; matching from `.../policy/matching/matching.go` and
//! `.../policy/generic/policy_matcher.go`; params from `.../policy/generic/
//! policy_dispatcher.go` `CollectParams`) over the compiled policies of the webhook index.
//!
//! For each policy whose `matchConstraints` match the request, each binding whose
//! `matchResources` match too, and each param the binding selects: the match conditions, then
//! the validations (with their message expressions) and the audit annotations, in one cost
//! budget per param. A failed validation is acted on as the binding's `validationActions`
//! say: `Deny` refuses the request (the first denial in policy and binding order is the
//! answer), `Warn` adds a `Warning` header, `Audit` an audit annotation. An expression that
//! fails to evaluate, and a binding that cannot find its params, follow the policy's
//! `failurePolicy`.
//!
//! Runs before the validating webhooks, as in upstream's plugin order
//! (`pkg/kubeapiserver/options/plugins.go`: ValidatingAdmissionPolicy, then
//! ValidatingAdmissionWebhook).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::StatusCode;
use kubemock_cel::RUNTIME_CEL_COST_BUDGET;
use kubemock_cel::admission::{
    AdmissionActivation, Expression, Inputs, evaluate, match_conditions,
};
use kubemock_cel::value::Value as CelValue;
use serde_json::{Value, json};

use super::{NamespaceLabels, Request, cel_request, conversion, requested};
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult, Cause};
use crate::webhook::config::{Matched, selected_by, selector_matches};
use crate::webhook::policies::{Binding, MatchResources, NamedRule, ParamKind, Policy};
use crate::webhook::review::Gvr;
use crate::webhook::{Current, annotate, note};

/// Upstream's `MaxEvaluatedMessageExpressionSizeBytes`: a longer message is not used.
const MAX_EVALUATED_MESSAGE_BYTES: usize = 5 * 1024;
/// `maxAuditAnnotationValueLength`: longer values are cut.
const MAX_AUDIT_ANNOTATION_VALUE_BYTES: usize = 10 * 1024;
/// The audit annotation of a failed validation under the `Audit` action.
const VALIDATION_FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";
/// The metadata fields `namespaceObject` keeps (`CreateNamespaceObject`).
const NAMESPACE_METADATA: [&str; 12] = [
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
];

/// One validation's decision (`PolicyDecision`).
#[derive(Debug)]
struct Decision {
    /// `ActionDeny` (else admit).
    deny: bool,
    /// Its message.
    message: String,
    /// Its status reason; empty for `Invalid`.
    reason: String,
}

/// What one audit annotation's expression gave (`PolicyAuditAnnotation`).
#[derive(Debug)]
enum AuditOutcome {
    /// Published under the policy's name.
    Publish(String, String),
    /// A failure that denies the request (failurePolicy Fail).
    Error(String),
    /// Null, empty, or a failure under failurePolicy Ignore.
    Exclude,
}

/// A denial waiting to become the answer: the policy, the binding (none for a policy's own
/// configuration error), the message and reason.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

/// The match of a request against a policy's or binding's resources: the resource it
/// matched (another version of the request's for an equivalent match).
struct Match {
    matched: Gvr,
    equivalent: Option<Arc<Resource>>,
}

fn rule_matches(rule: &NamedRule, request: &Request<'_>, resource: &Resource) -> bool {
    let matched = rule.rule.matches(&Matched {
        operation: request.operation,
        group: &resource.group,
        version: &resource.version,
        resource: &resource.plural,
        subresource: request.subresource.unwrap_or(""),
        namespace: request.namespace.unwrap_or(""),
    });
    matched && (rule.names.is_empty() || rule.names.iter().any(|n| n == request.name))
}

/// `matchesResourceRules`: the resource a rule matches, the request's own first, then (for
/// `Equivalent`) its other versions.
fn matches_rules(
    state: &AppState,
    rules: &[NamedRule],
    equivalent: bool,
    request: &Request<'_>,
) -> Option<Match> {
    if rules
        .iter()
        .any(|r| rule_matches(r, request, request.resource))
    {
        return Some(Match {
            matched: requested(request.resource),
            equivalent: None,
        });
    }
    if !equivalent {
        return None;
    }
    let others = conversion::equivalents(state, request.resource);
    for rule in rules {
        for other in &others {
            if rule_matches(rule, request, other) {
                return Some(Match {
                    matched: requested(other),
                    equivalent: Some(Arc::clone(other)),
                });
            }
        }
    }
    None
}

/// `Matcher.Matches` (`policy/matching/matching.go`).
async fn matches(
    state: &AppState,
    criteria: &MatchResources,
    request: &Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    namespace_labels: &mut NamespaceLabels,
) -> ApiResult<Option<Match>> {
    let namespace = request.namespace.unwrap_or("");
    if let Some(selector) = &criteria.namespace_selector
        && (!namespace.is_empty() || request.resource.plural == "namespaces")
    {
        let labels = namespace_labels.get(state, request, object.or(old)).await?;
        if !selector_matches(selector, labels.as_ref()) {
            return Ok(None);
        }
    }
    if !selected_by(criteria.object_selector.as_ref(), object, old) {
        return Ok(None);
    }
    if matches_rules(state, &criteria.exclude_rules, criteria.equivalent, request).is_some() {
        return Ok(None);
    }
    if criteria.resource_rules.is_empty() {
        return Ok(Some(Match {
            matched: requested(request.resource),
            equivalent: None,
        }));
    }
    Ok(matches_rules(
        state,
        &criteria.resource_rules,
        criteria.equivalent,
        request,
    ))
}

/// The resource a `paramKind` names, or upstream's configuration error.
fn param_resource(state: &AppState, kind: &ParamKind) -> Result<Arc<Resource>, String> {
    let (group, version) = kind
        .api_version
        .split_once('/')
        .unwrap_or(("", kind.api_version.as_str()));
    state
        .registry()
        .resources_in(group, version)
        .into_iter()
        .find(|r| r.kind == kind.kind)
        .ok_or_else(|| {
            format!(
                "failed to find resource referenced by paramKind: '{group}/{version}, Kind={}'",
                kind.kind
            )
        })
}

/// `CollectParams`: the params a binding selects (`[None]` when the policy or the binding
/// uses none), or why the binding cannot be configured.
async fn collect_params(
    state: &AppState,
    param_resource: Option<&Arc<Resource>>,
    binding: &Binding,
    namespace: &str,
) -> Result<Vec<Option<Value>>, String> {
    let (Some(resource), Some(param_ref)) = (param_resource, &binding.param_ref) else {
        return Ok(vec![None]);
    };
    let param_namespace = if resource.namespaced {
        let chosen = if param_ref.namespace.is_empty() {
            namespace
        } else {
            param_ref.namespace.as_str()
        };
        if chosen.is_empty() {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .to_owned(),
            );
        }
        Some(chosen)
    } else {
        if !param_ref.namespace.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                    .to_owned(),
            );
        }
        None
    };
    let parse = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).ok();
    let mut params = Vec::new();
    if !param_ref.name.is_empty() {
        let key = crate::keys::object_key(resource, param_namespace, &param_ref.name);
        let found = state.fetch(&key).await.map_err(|e| e.message)?;
        params.extend(found.and_then(|kv| parse(&kv.value)));
    } else if let Some(selector) = &param_ref.selector {
        let prefix = crate::keys::collection_prefix(resource, param_namespace);
        let page = state
            .store()
            .range(kubemock_storage::RangeRequest::prefix(prefix))
            .await
            .map_err(|e| ApiError::from_storage(e).message)?;
        params.extend(
            page.items
                .iter()
                .filter_map(|kv| parse(&kv.value))
                .filter(|o| {
                    selector_matches(selector, o.get("metadata").and_then(|m| m.get("labels")))
                }),
        );
    } else {
        return Err("one of name or selector must be provided".to_owned());
    }
    if params.is_empty() && param_ref.deny_not_found {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".to_owned(),
        );
    }
    // Params are seen in the version the paramKind names, with their type meta.
    let mut seen = Vec::with_capacity(params.len());
    for param in params {
        let mut param = if resource.custom.is_some() {
            conversion::convert_value(state, &param, resource)
                .await
                .map_err(|e| e.message)?
        } else {
            param
        };
        if let Some(fields) = param.as_object_mut() {
            fields
                .entry("apiVersion")
                .or_insert_with(|| json!(resource.group_version()));
            fields.entry("kind").or_insert_with(|| json!(resource.kind));
        }
        seen.push(Some(param));
    }
    Ok(seen)
}

/// The request's namespace as `namespaceObject` sees it (`CreateNamespaceObject`); none for a
/// cluster-scoped request and for a Namespace itself.
async fn namespace_object(state: &AppState, request: &Request<'_>) -> ApiResult<Option<Value>> {
    let resource = request.resource;
    let is_namespace = resource.group.is_empty() && resource.kind == "Namespace";
    let Some(name) = request.namespace.filter(|n| !n.is_empty() && !is_namespace) else {
        return Ok(None);
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
    let metadata: serde_json::Map<String, Value> = stored
        .get("metadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| NAMESPACE_METADATA.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Some(json!({
        "metadata": metadata,
        "spec": stored.get("spec").cloned().unwrap_or_else(|| json!({})),
        "status": stored.get("status").cloned().unwrap_or_else(|| json!({})),
    })))
}

/// What one (binding, param) evaluation gives.
struct Validated {
    decisions: Vec<Decision>,
    annotations: Vec<AuditOutcome>,
}

/// The decision of an evaluation error under the policy's failurePolicy.
fn error_decision(policy: &Policy, message: String) -> Decision {
    Decision {
        deny: !policy.ignore_failures,
        message,
        reason: String::new(),
    }
}

/// `validator.Validate`: one policy for one param. Synchronous: the activations are not
/// `Send` and never cross an `.await`.
fn validate_with(policy: &Policy, inputs: &Inputs<'_>) -> Validated {
    let activation = |namespace: Option<&Value>| {
        AdmissionActivation::new(
            &Inputs {
                namespace,
                ..*inputs
            },
            Arc::clone(&policy.variables),
        )
    };
    let fatal = |message: String| Validated {
        decisions: vec![error_decision(policy, message)],
        annotations: Vec::new(),
    };
    if !policy.match_conditions.is_empty() {
        // Upstream's matcher passes no namespace.
        match match_conditions(&policy.match_conditions, &activation(None)) {
            Ok(true) => {}
            Ok(false) => {
                return Validated {
                    decisions: Vec::new(),
                    annotations: Vec::new(),
                };
            }
            Err(e) => return fatal(e),
        }
    }
    let expressions: Vec<Option<&Expression>> = policy
        .validations
        .iter()
        .map(|v| Some(&v.expression))
        .collect();
    let (outcomes, remaining) = match evaluate(
        &expressions,
        &activation(inputs.namespace),
        RUNTIME_CEL_COST_BUDGET,
    ) {
        Ok(done) => done,
        Err(e) => return fatal(e),
    };
    let messages: Vec<Option<&Expression>> = policy
        .validations
        .iter()
        .map(|v| v.message_expression.as_ref())
        .collect();
    let message_outcomes = evaluate(&messages, &activation(inputs.namespace), remaining);
    let mut decisions = Vec::with_capacity(outcomes.len());
    for (i, (validation, outcome)) in policy.validations.iter().zip(outcomes).enumerate() {
        let decision = match outcome {
            Some(Err(e)) => error_decision(policy, e),
            _ if message_outcomes.is_err() => error_decision(
                policy,
                format!(
                    "failed messageExpression: {}",
                    message_outcomes.as_ref().err().cloned().unwrap_or_default()
                ),
            ),
            Some(Ok(CelValue::Bool(true))) => Decision {
                deny: false,
                message: String::new(),
                reason: String::new(),
            },
            _ => {
                let evaluated = match &message_outcomes {
                    Ok((messages, _)) => match messages.get(i) {
                        Some(Some(Ok(CelValue::String(s)))) => {
                            let s = s.trim();
                            if s.len() > MAX_EVALUATED_MESSAGE_BYTES || s.contains('\n') {
                                String::new()
                            } else {
                                s.to_owned()
                            }
                        }
                        _ => String::new(),
                    },
                    Err(_) => String::new(),
                };
                let message = if !evaluated.is_empty() {
                    evaluated
                } else if !validation.message.trim().is_empty() {
                    validation.message.trim().to_owned()
                } else {
                    format!("failed expression: {}", validation.expression.source.trim())
                };
                Decision {
                    deny: true,
                    message,
                    reason: validation.reason.clone(),
                }
            }
        };
        decisions.push(decision);
    }
    let annotation_expressions: Vec<Option<&Expression>> = policy
        .audit_annotations
        .iter()
        .map(|(_, e)| Some(e))
        .collect();
    let annotation_outcomes = match evaluate(
        &annotation_expressions,
        &activation(inputs.namespace),
        RUNTIME_CEL_COST_BUDGET,
    ) {
        Ok((outcomes, _)) => outcomes,
        Err(e) => return fatal(e),
    };
    let annotations = policy
        .audit_annotations
        .iter()
        .zip(annotation_outcomes)
        .map(|((key, expression), outcome)| match outcome {
            Some(Err(_)) if policy.ignore_failures => AuditOutcome::Exclude,
            Some(Err(e)) => AuditOutcome::Error(e),
            Some(Ok(CelValue::String(s))) if s.trim().is_empty() => AuditOutcome::Exclude,
            Some(Ok(CelValue::String(s))) => AuditOutcome::Publish(key.clone(), s.trim().to_owned()),
            Some(Ok(CelValue::Null)) | None => AuditOutcome::Exclude,
            Some(Ok(other)) => AuditOutcome::Error(format!(
                "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                expression.source,
                other.type_name()
            )),
        })
        .collect();
    Validated {
        decisions,
        annotations,
    }
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The `Audit` action's annotation value (`ValidationFailureValue`, as a one-item list).
fn failure_annotation(binding: &Binding, index: usize, message: &str) -> String {
    json!([{
        "message": message,
        "policy": binding.policy_name,
        "binding": binding.name,
        "expressionIndex": index,
        "validationActions": binding.actions,
    }])
    .to_string()
}

/// The answer to a denial (`admission.NewForbidden`, then the decision's reason and code).
fn denial_error(request: &Request<'_>, object: Option<&Value>, denial: &Denial) -> ApiError {
    let message = match &denial.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            denial.policy, denial.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            denial.policy, denial.message
        ),
    };
    // `extractResourceName`: the request's name, else the object's (or its generateName).
    let meta = |key: &str| {
        object
            .and_then(|o| o.get("metadata"))
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let name = if request.name.is_empty() {
        meta("name")
            .or_else(|| meta("generateName"))
            .unwrap_or("Unknown")
    } else {
        request.name
    };
    let resource = request.resource;
    let mut error = ApiError::forbidden_with(&resource.group, &resource.plural, name, &message);
    let (code, reason) = match denial.reason.as_str() {
        "Forbidden" => (StatusCode::FORBIDDEN, "Forbidden"),
        "Unauthorized" => (StatusCode::UNAUTHORIZED, "Unauthorized"),
        "RequestEntityTooLarge" => (StatusCode::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge"),
        _ => (StatusCode::UNPROCESSABLE_ENTITY, "Invalid"),
    };
    error.code = code;
    error.reason = reason;
    if let Some(details) = error.details.as_mut() {
        details.causes.push(Cause {
            reason: String::new(),
            message,
            field: String::new(),
        });
    }
    error
}

/// The ValidatingAdmissionPolicies for `request` (`object` is none for a delete, `old` for
/// a create).
pub(super) async fn validate(
    state: &AppState,
    current: &Current,
    request: &Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    namespace_labels: &mut NamespaceLabels,
) -> ApiResult<()> {
    let mut denials: Vec<Denial> = Vec::new();
    let mut namespace: Option<Option<Value>> = None;
    let request_namespace = request.namespace.unwrap_or("");
    for (policy, bindings) in &current.policies {
        let config_error = |denials: &mut Vec<Denial>, binding: Option<&Binding>, why: String| {
            if policy.ignore_failures {
                return;
            }
            let message = match binding {
                None => format!("failed to configure policy: {why}"),
                Some(_) => format!("failed to configure binding: {why}"),
            };
            denials.push(Denial {
                policy: policy.name.clone(),
                binding: binding.map(|b| b.name.clone()),
                message,
                reason: String::new(),
            });
        };
        let Some(constraints) = &policy.constraints else {
            config_error(
                &mut denials,
                None,
                "policy contained no match constraints, a required field".to_owned(),
            );
            continue;
        };
        let Some(matched) =
            matches(state, constraints, request, object, old, namespace_labels).await?
        else {
            continue;
        };
        let param_resource = match &policy.param_kind {
            None => None,
            Some(kind) => match param_resource(state, kind) {
                Ok(resource) => Some(resource),
                Err(why) => {
                    config_error(&mut denials, None, why);
                    continue;
                }
            },
        };
        // The object as the matched version has it.
        let (object, old) = match &matched.equivalent {
            None => (object.cloned(), old.cloned()),
            Some(target) => (
                super::convert_for(state, object, target).await?,
                super::convert_for(state, old, target).await?,
            ),
        };
        let cel_request = cel_request(request, &matched.matched);
        let authz = super::authz_inputs(state, request);
        let mut collected: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for binding in bindings {
            if let Some(resources) = &binding.match_resources
                && matches(
                    state,
                    resources,
                    request,
                    object.as_ref(),
                    old.as_ref(),
                    namespace_labels,
                )
                .await?
                .is_none()
            {
                continue;
            }
            let params =
                match collect_params(state, param_resource.as_ref(), binding, request_namespace)
                    .await
                {
                    Ok(params) => params,
                    Err(why) => {
                        config_error(&mut denials, Some(binding), why);
                        continue;
                    }
                };
            if params.is_empty() {
                continue;
            }
            if namespace.is_none() {
                namespace = Some(namespace_object(state, request).await?);
            }
            let namespace_value = namespace.as_ref().and_then(Option::as_ref);
            for param in &params {
                let validated = validate_with(
                    policy,
                    &Inputs {
                        object: object.as_ref(),
                        old_object: old.as_ref(),
                        request: &cel_request,
                        namespace: namespace_value,
                        params: param.as_ref(),
                        authz: Some(&authz),
                    },
                );
                for (index, decision) in validated.decisions.iter().enumerate() {
                    if !decision.deny {
                        continue;
                    }
                    for action in &binding.actions {
                        match action.as_str() {
                            "Deny" => denials.push(Denial {
                                policy: policy.name.clone(),
                                binding: Some(binding.name.clone()),
                                message: decision.message.clone(),
                                reason: decision.reason.clone(),
                            }),
                            "Audit" => annotate(
                                VALIDATION_FAILURE_ANNOTATION.to_owned(),
                                failure_annotation(binding, index, &decision.message),
                            ),
                            "Warn" => {
                                let warning = format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                    policy.name, binding.name, decision.message
                                );
                                note(|notes| notes.warnings.push(warning));
                            }
                            _ => {}
                        }
                    }
                }
                for annotation in validated.annotations {
                    match annotation {
                        AuditOutcome::Publish(key, value) => {
                            let value = cut(&value, MAX_AUDIT_ANNOTATION_VALUE_BYTES).to_owned();
                            let values = collected.entry(key).or_default();
                            if !values.contains(&value) {
                                values.push(value);
                            }
                        }
                        AuditOutcome::Error(message) => denials.push(Denial {
                            policy: policy.name.clone(),
                            binding: Some(binding.name.clone()),
                            message,
                            reason: String::new(),
                        }),
                        AuditOutcome::Exclude => {}
                    }
                }
            }
        }
        for (key, values) in collected {
            annotate(format!("{}/{key}", policy.name), values.join(", "));
        }
    }
    match denials.first() {
        Some(denial) => Err(denial_error(request, object, denial)),
        None => Ok(()),
    }
}
