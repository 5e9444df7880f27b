//! The resources that are never stored (`Storage::Virtual`): the reviews, created and answered
//! at once (`pkg/registry/authentication/{tokenreview,selfsubjectreview}`,
//! `pkg/registry/authorization/*`), `componentstatuses` (computed on every read,
//! `pkg/registry/core/componentstatus/rest.go`) and `bindings` (a write to a pod).
//!
//! The access reviews ask the server's authorizer (`authz`: AlwaysAllow, or RBAC), exactly as
//! the requests they describe are asked. Authentication knows the service-account tokens this
//! server issued (`tokens`); who makes a request is `identity`'s to say.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::resource::{Call, Origin};
use crate::authz::rule::PolicyRule;
use crate::authz::{Attributes, Decision};
use crate::identity::UserInfo;
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult};
use crate::tokens::{self, Rejected};
use kubemock_apimachinery::time;

/// The components `componentstatuses` reports, with the port of their health check (what a
/// failing probe's error names, as kube-apiserver's probe of `127.0.0.1:PORT/healthz` does).
const COMPONENTS: [(&str, Option<u16>); 3] = [
    ("controller-manager", Some(10257)),
    ("etcd-0", None),
    ("scheduler", Some(10259)),
];

/// A request to a virtual resource.
pub(crate) async fn serve(call: &Call, method: Method) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let watch = call.target.watches(&call.query);
    match (method, resource.plural.as_str(), call.target.name.is_some()) {
        (Method::GET, "componentstatuses", _) if watch => {
            Err(ApiError::verb_not_supported(resource, "watch"))
        }
        (Method::GET, "componentstatuses", named) => component_statuses(call, named).await,
        (Method::POST, _, false) => {
            call.require_verb("create")?;
            if resource.namespaced && call.target.namespace.is_none() {
                return Err(ApiError::route_method_not_allowed());
            }
            call.dry_run("CreateOptions")?;
            let mut body = object::decode_body(&call.headers, &call.body, resource)?;
            let warnings = call.decode_object(&mut body, Origin::Body)?;
            let answer = match resource.plural.as_str() {
                "bindings" => return super::update::bind_from_collection(call, body).await,
                "tokenreviews" => token_review(call, body).await?,
                "selfsubjectreviews" => self_subject_review(&call.user, body),
                "subjectaccessreviews" => access_review(call, body, Review::Subject)?,
                "selfsubjectaccessreviews" => access_review(call, body, Review::SelfSubject)?,
                "localsubjectaccessreviews" => access_review(call, body, Review::Local)?,
                "selfsubjectrulesreviews" => rules_review(call, body)?,
                _ => return Err(ApiError::route_method_not_allowed()),
            };
            let response = call.respond(StatusCode::CREATED, &Value::Object(answer));
            Ok(crate::fieldvalidation::with_warnings(response, &warnings))
        }
        (Method::GET | Method::PUT | Method::PATCH | Method::DELETE, _, _) => {
            let verb = match call.target.name.is_some() {
                true => "get",
                false => "list",
            };
            Err(ApiError::verb_not_supported(resource, verb))
        }
        _ => Err(ApiError::route_method_not_allowed()),
    }
}

/// `metadata` as a review answers it: what the body had, and a null creation timestamp
/// (Go's zero `metav1.Time`).
fn echoed_metadata(review: &mut Object) {
    let metadata = object::metadata_mut(review);
    if !metadata.contains_key("creationTimestamp") {
        metadata.insert("creationTimestamp".to_owned(), Value::Null);
    }
}

/// `POST tokenreviews`: the token authenticated as the API server's authenticators would.
async fn token_review(call: &Call, mut review: Object) -> ApiResult<Object> {
    if let Some(namespace) = &call.target.namespace {
        return Err(ApiError::bad_request(format!(
            "namespace is not allowed on this type: {namespace}"
        )));
    }
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut status = Map::new();
    match tokens::authenticate(&call.state, token, &audiences, tokens::unix_now()).await? {
        Ok(authenticated) => {
            status.insert("authenticated".to_owned(), json!(true));
            status.insert("user".to_owned(), authenticated.user.to_json());
            status.insert("audiences".to_owned(), json!(authenticated.audiences));
        }
        Err(Rejected::NotOurs) => {
            status.insert("user".to_owned(), json!({}));
            status.insert("error".to_owned(), json!("invalid bearer token"));
        }
        Err(Rejected::Invalid(error) | Rejected::Audience(error)) => {
            status.insert("user".to_owned(), json!({}));
            status.insert(
                "error".to_owned(),
                json!(format!("[invalid bearer token, {error}]")),
            );
        }
    }
    echoed_metadata(&mut review);
    review.insert("status".to_owned(), Value::Object(status));
    Ok(review)
}

/// `POST selfsubjectreviews` (`kubectl auth whoami`): who the request is made by.
fn self_subject_review(user: &UserInfo, mut review: Object) -> Object {
    object::metadata_mut(&mut review)
        .insert("creationTimestamp".to_owned(), json!(meta::now_rfc3339()));
    review.shift_remove("spec");
    review.insert("status".to_owned(), json!({"userInfo": user.to_json()}));
    review
}

/// Which access review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Review {
    /// `subjectaccessreviews`: any user's access.
    Subject,
    /// `selfsubjectaccessreviews` (`kubectl auth can-i`): the requester's.
    SelfSubject,
    /// `localsubjectaccessreviews`: any user's, within the URL's namespace.
    Local,
}

/// The access reviews: validated as `pkg/apis/authorization/validation` does, then answered
/// by the authorizer (`pkg/registry/authorization/*accessreview/rest.go`): `allowed`,
/// `denied` for an explicit denial, and the authorizer's reason.
fn access_review(call: &Call, mut review: Object, kind: Review) -> ApiResult<Object> {
    let resource = &call.target.resource;
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let present = |key: &str| spec.get(key).is_some_and(|v| !v.is_null());
    let (resource_attributes, non_resource) = (
        present("resourceAttributes"),
        present("nonResourceAttributes"),
    );
    let mut errors = Vec::new();
    let invalid = |field: &str, value: String, detail: &str| FieldError {
        field: field.to_owned(),
        reason: "FieldValueInvalid",
        detail: format!("Invalid value: {value}: {detail}"),
    };
    let non_resource_value = if non_resource {
        go_struct(
            "authorization.NonResourceAttributes",
            spec.get("nonResourceAttributes"),
            &["path", "verb"],
        )
    } else {
        "\"null\"".to_owned()
    };
    if kind == Review::Local {
        let namespace = call.target.namespace.clone().unwrap_or_default();
        let metadata_namespace = object::meta_str(&review, "namespace").unwrap_or("");
        if !metadata_namespace.is_empty() && metadata_namespace != namespace {
            return Err(ApiError::bad_request(format!(
                "spec.resourceAttributes.namespace must match namespace: {namespace}"
            )));
        }
        object::metadata_mut(&mut review).insert("namespace".to_owned(), json!(namespace));
        let attributes_namespace = spec
            .get("resourceAttributes")
            .and_then(|a| a.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if resource_attributes && attributes_namespace != namespace {
            errors.push(invalid(
                "spec.resourceAttributes.namespace",
                serde_json::to_string(attributes_namespace).unwrap_or_default(),
                "must match metadata.namespace",
            ));
        }
        if non_resource {
            errors.push(invalid(
                "spec.nonResourceAttributes",
                non_resource_value.clone(),
                "disallowed on this kind of request",
            ));
        }
    }
    if resource_attributes && non_resource {
        errors.push(invalid(
            "spec.nonResourceAttributes",
            non_resource_value.clone(),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !resource_attributes && !non_resource {
        errors.push(invalid(
            "spec.resourceAttributes",
            non_resource_value,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if kind != Review::SelfSubject {
        let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
        let groups = spec
            .get("groups")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if user.is_empty() && !groups {
            errors.push(invalid(
                "spec.user",
                "\"\"".to_owned(),
                "at least one of user or group must be specified",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(meta::invalid(
            &resource.qualified_kind(),
            &resource.group,
            &resource.kind,
            "",
            errors,
        ));
    }
    let mut attributes = review_attributes(review.get("spec"));
    if kind == Review::SelfSubject {
        // `selfsubjectaccessreview/rest.go`: the review is of the requester (whose spec has no
        // user to echo).
        attributes.user = UserInfo::clone(&call.user);
    }
    let decision = call.state.authorizer().authorize(&attributes);
    echoed_metadata(&mut review);
    let mut status = Map::new();
    status.insert("allowed".to_owned(), json!(decision.allowed()));
    if matches!(decision, Decision::Deny(_)) {
        status.insert("denied".to_owned(), json!(true));
    }
    if !decision.reason().is_empty() {
        status.insert("reason".to_owned(), json!(decision.reason()));
    }
    review.insert("status".to_owned(), Value::Object(status));
    Ok(review)
}

/// The attributes an access review's `spec` describes (`pkg/registry/authorization/util`,
/// `AuthorizationAttributesFrom`).
fn review_attributes(spec: Option<&Value>) -> Attributes {
    let text = |value: Option<&Value>, key: &str| {
        value
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let extra = spec
        .and_then(|s| s.get("extra"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let user = UserInfo {
        name: text(spec, "user"),
        uid: text(spec, "uid"),
        groups: spec
            .and_then(|s| s.get("groups"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        extra,
    };
    match spec
        .and_then(|s| s.get("resourceAttributes"))
        .filter(|a| !a.is_null())
    {
        Some(resource) => Attributes {
            user,
            verb: text(Some(resource), "verb"),
            resource_request: true,
            namespace: text(Some(resource), "namespace"),
            api_group: text(Some(resource), "group"),
            api_version: text(Some(resource), "version"),
            resource: text(Some(resource), "resource"),
            subresource: text(Some(resource), "subresource"),
            name: text(Some(resource), "name"),
            path: String::new(),
        },
        None => {
            let non_resource = spec.and_then(|s| s.get("nonResourceAttributes"));
            Attributes {
                user,
                verb: text(non_resource, "verb"),
                path: text(non_resource, "path"),
                ..Attributes::default()
            }
        }
    }
}

/// A struct of string fields as Go's `%#v` prints it (`authorization.NonResourceAttributes{
/// Path:"/api", Verb:"get"}`), from the JSON object's `fields`.
fn go_struct(name: &str, value: Option<&Value>, fields: &[&str]) -> String {
    let rendered: Vec<String> = fields
        .iter()
        .map(|field| {
            let text = value
                .and_then(|v| v.get(field))
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut go_name = field.to_owned().to_owned();
            if let Some(first) = go_name.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            format!(
                "{go_name}:{}",
                serde_json::to_string(text).unwrap_or_default()
            )
        })
        .collect();
    format!("{name}{{{}}}", rendered.join(", "))
}

/// `POST selfsubjectrulesreviews` (`kubectl auth can-i --list`): the rules the authorizer
/// lists for the requester in the namespace (`selfsubjectrulesreview/rest.go`: RBAC's rules,
/// or an AlwaysAllow server's `*`), in a review of nothing else (upstream answers a new
/// object, neither metadata nor spec echoed).
fn rules_review(call: &Call, review: Object) -> ApiResult<Object> {
    let namespace = review
        .get("spec")
        .and_then(|s| s.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let mut answer = Object::new();
    answer.insert("kind".to_owned(), json!("SelfSubjectRulesReview"));
    answer.insert("apiVersion".to_owned(), json!("authorization.k8s.io/v1"));
    answer.insert("metadata".to_owned(), json!({"creationTimestamp": null}));
    answer.insert("spec".to_owned(), json!({}));
    let rules = call.state.authorizer().rules_for(&call.user, namespace);
    let mut status = Map::new();
    status.insert(
        "resourceRules".to_owned(),
        rules
            .resource_rules
            .iter()
            .map(PolicyRule::to_resource_rule)
            .collect(),
    );
    status.insert(
        "nonResourceRules".to_owned(),
        rules
            .non_resource_rules
            .iter()
            .map(PolicyRule::to_non_resource_rule)
            .collect(),
    );
    status.insert("incomplete".to_owned(), json!(rules.incomplete));
    if !rules.evaluation_error.is_empty() {
        status.insert("evaluationError".to_owned(), json!(rules.evaluation_error));
    }
    answer.insert("status".to_owned(), Value::Object(status));
    Ok(answer)
}

/// One component's status: healthy when it runs in this process, or (the controller manager,
/// run apart) when it holds its leader-election lease.
async fn component_status(call: &Call, name: &str, port: Option<u16>) -> ApiResult<Value> {
    let healthy = match port {
        None => true,
        Some(_) => {
            call.state.config().components.is_running(name)
                || (name == "controller-manager"
                    && lease_held(call, "kube-controller-manager").await?)
        }
    };
    let condition = if healthy {
        json!({"type": "Healthy", "status": "True", "message": "ok"})
    } else {
        let port = port.unwrap_or_default();
        json!({"type": "Healthy", "status": "False",
               "error": format!("Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused")})
    };
    Ok(json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [condition],
    }))
}

/// Whether the lease `kube-system/name` is held and was renewed within its duration.
async fn lease_held(call: &Call, name: &str) -> ApiResult<bool> {
    let Some(leases) = call
        .state
        .registry()
        .lookup("coordination.k8s.io", "v1", "leases")
    else {
        return Ok(false);
    };
    let key = crate::keys::object_key(&leases, Some("kube-system"), name);
    let Some(kv) = call.state.fetch(&key).await? else {
        return Ok(false);
    };
    let lease = object::parse_stored(&kv.value)?;
    let spec = lease.get("spec").cloned().unwrap_or(Value::Null);
    let holder = spec
        .get("holderIdentity")
        .and_then(Value::as_str)
        .unwrap_or("");
    let duration = spec
        .get("leaseDurationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let renewed = spec
        .get("renewTime")
        .and_then(Value::as_str)
        .and_then(time::parse_rfc3339);
    // The server's clock (virtual with `--virtual-clock`): kubemock's candidates stamp
    // `renewTime` from the same clock (in process, or following the server's from their own
    // process), so a lease nobody renews expires when the clock passes its duration.
    let now = call.state.clock().unix_nanos();
    Ok(!holder.is_empty()
        && renewed.is_some_and(|at| now <= at + i128::from(duration) * 1_000_000_000))
}

/// `GET componentstatuses[/{name}]`.
async fn component_statuses(call: &Call, named: bool) -> ApiResult<Response> {
    let resource = &call.target.resource;
    if named {
        call.require_verb("get")?;
        let name = call.target.name.as_deref().unwrap_or("");
        let Some((name, port)) = COMPONENTS.iter().find(|(n, _)| *n == name) else {
            return Err(ApiError::not_found(resource, name));
        };
        let status = component_status(call, name, *port).await?;
        return Ok(call.respond(StatusCode::OK, &status));
    }
    call.require_verb("list")?;
    let mut items = Vec::new();
    for (name, port) in COMPONENTS {
        let mut status = component_status(call, name, port).await?;
        if let Value::Object(item) = &mut status {
            item.shift_remove("kind");
            item.shift_remove("apiVersion");
        }
        items.push(status);
    }
    let list = json!({
        "kind": "ComponentStatusList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    });
    Ok(call.respond_list(StatusCode::OK, &list))
}
