//! Kubernetes' CEL authorizer library (`staging/src/k8s.io/apiserver/pkg/cel/library/authz.go`):
//! the `authorizer` variable of admission expressions and its builder calls
//! (`authorizer.path(...)`, `.group(...).resource(...)...`, `.serviceAccount(ns, name)`),
//! ending in `.check(verb)`, which asks the server's authorizer through the [`Authorize`]
//! hook and yields a `kubernetes.authorization.Decision`.
//!
//! The hook exists because this crate has no server: the API server passes its authorizer
//! (RBAC and the rest) into the admission activation. With no hook, every call on
//! `authorizer` fails with [`NO_AUTHORIZER`], never a silent allow.
//!
//! The selector calls (`fieldSelector`, `labelSelector`, upstream's `AuthzSelectors`
//! library) are declared as in 1.32, where the `AuthorizeWithSelectors` gate is beta and on:
//! the selector is parsed at `check` time and handed to the authorizer with its parse error,
//! as upstream's `resourceCheckVal.Authorize` does; the authorizer decides what that means.

use std::fmt;
use std::sync::Arc;

use kubemock_apimachinery::{fields, labels, validation};

use crate::error::EvalError;
use crate::library::{Library, err, no_such_overload, unit_cost};
use crate::types::Type;
use crate::value::Value;

/// `kubernetes.authorization.Authorizer`.
pub const AUTHORIZER_TYPE: &str = "kubernetes.authorization.Authorizer";
/// `kubernetes.authorization.PathCheck`.
pub const PATH_CHECK_TYPE: &str = "kubernetes.authorization.PathCheck";
/// `kubernetes.authorization.GroupCheck`.
pub const GROUP_CHECK_TYPE: &str = "kubernetes.authorization.GroupCheck";
/// `kubernetes.authorization.ResourceCheck`.
pub const RESOURCE_CHECK_TYPE: &str = "kubernetes.authorization.ResourceCheck";
/// `kubernetes.authorization.Decision`.
pub const DECISION_TYPE: &str = "kubernetes.authorization.Decision";

/// The error of any authorizer call when the activation has no [`Authorize`] hook.
pub const NO_AUTHORIZER: &str =
    "no authorizer is configured for this evaluation: the `authorizer` variable cannot be used";

/// upstream's fixed runtime and estimated cost of `check` (`library/cost.go`): two checks per
/// expression fit the per-call limit.
pub const CHECK_COST: u64 = 350_000;

/// The user a check is made for (`user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// `username`.
    pub name: String,
    /// `uid`.
    pub uid: String,
    /// `groups`.
    pub groups: Vec<String>,
    /// `extra`.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user of a service account as upstream's `ServiceAccountInfo.UserInfo()` builds
    /// it (`authentication/serviceaccount/util.go`): `system:serviceaccount:<ns>:<name>`, in
    /// `system:serviceaccounts` and `system:serviceaccounts:<ns>`.
    pub fn service_account(namespace: &str, name: &str) -> UserInfo {
        UserInfo {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            uid: String::new(),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
            ],
            extra: Default::default(),
        }
    }
}

/// What is asked: a non-resource path or a resource (`authorizer.AttributesRecord`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthzTarget {
    /// A non-resource request: its path.
    Path(String),
    /// A resource request (`APIVersion` is always `*`, as upstream's library sets it).
    Resource(ResourceAttributes),
}

/// The resource part of a check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// API group (`""` for core).
    pub group: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource, or `""`.
    pub subresource: String,
    /// Namespace, or `""`.
    pub namespace: String,
    /// Name, or `""`.
    pub name: String,
    /// The field selector as written (`""`: none).
    pub field_selector: String,
    /// Why the field selector does not parse (upstream's `FieldSelectorParsingErr`).
    pub field_selector_error: Option<String>,
    /// The label selector as written (`""`: none).
    pub label_selector: String,
    /// Why the label selector does not parse (upstream's `LabelSelectorParsingErr`).
    pub label_selector_error: Option<String>,
}

/// One authorization question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthzRequest {
    /// Who asks (the requester, or the service account of `serviceAccount()`).
    pub user: UserInfo,
    /// The verb (an HTTP verb for a path, an API verb for a resource).
    pub verb: String,
    /// What is asked about.
    pub target: AuthzTarget,
}

/// The verdict (`authorizer.Decision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `DecisionAllow`.
    Allow,
    /// `DecisionDeny`.
    Deny,
    /// `DecisionNoOpinion`.
    NoOpinion,
}

/// An authorizer's answer: `allowed()` is true only for [`Verdict::Allow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthzDecision {
    /// The verdict.
    pub verdict: Verdict,
    /// The reason (`reason()`).
    pub reason: String,
    /// The authorizer's error (`error()`; `errored()` when set).
    pub error: Option<String>,
}

/// The server's authorizer, as the library asks it.
pub trait Authorize: Send + Sync {
    /// Decides `request`.
    fn authorize(&self, request: &AuthzRequest) -> AuthzDecision;
}

/// The authorizer and the user of a check.
#[derive(Clone)]
pub struct Principal {
    authorizer: Arc<dyn Authorize>,
    user: Arc<UserInfo>,
}

/// The values of the library's types.
#[derive(Clone)]
pub enum AuthzValue {
    /// `authorizer` when the activation has no hook: every call fails with [`NO_AUTHORIZER`].
    Unavailable,
    /// `kubernetes.authorization.Authorizer`.
    Authorizer(Principal),
    /// `kubernetes.authorization.PathCheck`.
    PathCheck(Principal, String),
    /// `kubernetes.authorization.GroupCheck`.
    GroupCheck(Principal, String),
    /// `kubernetes.authorization.ResourceCheck` (its selectors not parsed yet).
    ResourceCheck(Principal, ResourceAttributes),
    /// `kubernetes.authorization.Decision`.
    Decision(AuthzDecision),
}

impl fmt::Debug for AuthzValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthzValue::Unavailable => write!(f, "authorizer (none)"),
            AuthzValue::Authorizer(p) => write!(f, "authorizer({})", p.user.name),
            AuthzValue::PathCheck(p, path) => write!(f, "path({}, {path})", p.user.name),
            AuthzValue::GroupCheck(p, g) => write!(f, "group({}, {g})", p.user.name),
            AuthzValue::ResourceCheck(p, r) => write!(f, "resource({}, {r:?})", p.user.name),
            AuthzValue::Decision(d) => write!(f, "{d:?}"),
        }
    }
}

impl AuthzValue {
    /// The CEL type name of the value (`Unavailable` is named an Authorizer, and matches
    /// any of the library's parameters, so that it reaches the call that reports
    /// [`NO_AUTHORIZER`]).
    pub fn type_name(&self) -> &'static str {
        match self {
            AuthzValue::Unavailable | AuthzValue::Authorizer(_) => AUTHORIZER_TYPE,
            AuthzValue::PathCheck(..) => PATH_CHECK_TYPE,
            AuthzValue::GroupCheck(..) => GROUP_CHECK_TYPE,
            AuthzValue::ResourceCheck(..) => RESOURCE_CHECK_TYPE,
            AuthzValue::Decision(_) => DECISION_TYPE,
        }
    }
}

/// The request's resource, for `authorizer.requestResource`.
#[derive(Clone, Debug, Default)]
pub struct RequestResource {
    /// API group.
    pub group: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// The value of `authorizer` (upstream's `NewAuthorizerVal`), or one whose calls fail with
/// [`NO_AUTHORIZER`] when `authorizer` is `None`.
pub fn authorizer_value(authorizer: Option<Arc<dyn Authorize>>, user: UserInfo) -> Value {
    Value::Authz(Arc::new(match authorizer {
        Some(authorizer) => AuthzValue::Authorizer(Principal {
            authorizer,
            user: Arc::new(user),
        }),
        None => AuthzValue::Unavailable,
    }))
}

/// The value of `authorizer.requestResource` (upstream's `NewResourceAuthorizerVal`): a
/// ResourceCheck of the request's group, resource, subresource, namespace and name.
pub fn request_resource_value(
    authorizer: Option<Arc<dyn Authorize>>,
    user: UserInfo,
    resource: &RequestResource,
) -> Value {
    Value::Authz(Arc::new(match authorizer {
        Some(authorizer) => AuthzValue::ResourceCheck(
            Principal {
                authorizer,
                user: Arc::new(user),
            },
            ResourceAttributes {
                group: resource.group.clone(),
                resource: resource.resource.clone(),
                subresource: resource.subresource.clone(),
                namespace: resource.namespace.clone(),
                name: resource.name.clone(),
                ..Default::default()
            },
        ),
        None => AuthzValue::Unavailable,
    }))
}

fn authz_arg(v: &Value) -> Result<&AuthzValue, EvalError> {
    match v {
        Value::Authz(a) => match &**a {
            AuthzValue::Unavailable => Err(err(NO_AUTHORIZER)),
            other => Ok(other),
        },
        _ => Err(no_such_overload()),
    }
}

fn str_arg(v: &Value) -> Result<&str, EvalError> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(no_such_overload()),
    }
}

fn wrap(v: AuthzValue) -> Value {
    Value::Authz(Arc::new(v))
}

fn path(a: &[Value]) -> Result<Value, EvalError> {
    let AuthzValue::Authorizer(p) = authz_arg(&a[0])? else {
        return Err(no_such_overload());
    };
    let path = str_arg(&a[1])?;
    if path.trim().is_empty() {
        return Err(err("path must not be empty"));
    }
    Ok(wrap(AuthzValue::PathCheck(p.clone(), path.to_owned())))
}

fn group(a: &[Value]) -> Result<Value, EvalError> {
    let AuthzValue::Authorizer(p) = authz_arg(&a[0])? else {
        return Err(no_such_overload());
    };
    Ok(wrap(AuthzValue::GroupCheck(
        p.clone(),
        str_arg(&a[1])?.to_owned(),
    )))
}

fn service_account(a: &[Value]) -> Result<Value, EvalError> {
    let AuthzValue::Authorizer(p) = authz_arg(&a[0])? else {
        return Err(no_such_overload());
    };
    let namespace = str_arg(&a[1])?;
    let name = str_arg(&a[2])?;
    // `ValidateServiceAccountName` is a DNS subdomain; `ValidateNamespaceName` a DNS label.
    if !validation::is_dns1123_subdomain(name).is_empty() {
        return Err(err("Invalid service account name"));
    }
    if !validation::is_dns1123_label(namespace).is_empty() {
        return Err(err("Invalid service account namespace"));
    }
    Ok(wrap(AuthzValue::Authorizer(Principal {
        authorizer: p.authorizer.clone(),
        user: Arc::new(UserInfo::service_account(namespace, name)),
    })))
}

fn resource(a: &[Value]) -> Result<Value, EvalError> {
    let AuthzValue::GroupCheck(p, group) = authz_arg(&a[0])? else {
        return Err(no_such_overload());
    };
    let resource = str_arg(&a[1])?;
    if resource.trim().is_empty() {
        return Err(err("resource must not be empty"));
    }
    Ok(wrap(AuthzValue::ResourceCheck(
        p.clone(),
        ResourceAttributes {
            group: group.clone(),
            resource: resource.to_owned(),
            ..Default::default()
        },
    )))
}

/// A ResourceCheck with one attribute set.
fn with_attr(a: &[Value], set: fn(&mut ResourceAttributes, String)) -> Result<Value, EvalError> {
    let AuthzValue::ResourceCheck(p, r) = authz_arg(&a[0])? else {
        return Err(no_such_overload());
    };
    let mut r = r.clone();
    set(&mut r, str_arg(&a[1])?.to_owned());
    Ok(wrap(AuthzValue::ResourceCheck(p.clone(), r)))
}

fn subresource(a: &[Value]) -> Result<Value, EvalError> {
    with_attr(a, |r, v| r.subresource = v)
}

fn namespace(a: &[Value]) -> Result<Value, EvalError> {
    with_attr(a, |r, v| r.namespace = v)
}

fn name(a: &[Value]) -> Result<Value, EvalError> {
    with_attr(a, |r, v| r.name = v)
}

fn field_selector(a: &[Value]) -> Result<Value, EvalError> {
    with_attr(a, |r, v| r.field_selector = v)
}

fn label_selector(a: &[Value]) -> Result<Value, EvalError> {
    with_attr(a, |r, v| r.label_selector = v)
}

fn decide(p: &Principal, verb: &str, target: AuthzTarget) -> Value {
    let request = AuthzRequest {
        user: (*p.user).clone(),
        verb: verb.to_owned(),
        target,
    };
    wrap(AuthzValue::Decision(p.authorizer.authorize(&request)))
}

fn check(a: &[Value]) -> Result<Value, EvalError> {
    let verb = str_arg(&a[1])?;
    match authz_arg(&a[0])? {
        AuthzValue::PathCheck(p, path) => Ok(decide(p, verb, AuthzTarget::Path(path.clone()))),
        AuthzValue::ResourceCheck(p, r) => {
            let mut r = r.clone();
            // Parsed only when set, as upstream does; the error goes to the authorizer.
            if !r.field_selector.is_empty() {
                r.field_selector_error = fields::Selector::parse(&r.field_selector)
                    .err()
                    .map(|e| e.to_string());
            }
            if !r.label_selector.is_empty() {
                r.label_selector_error = labels::Selector::parse(&r.label_selector).err();
            }
            Ok(decide(p, verb, AuthzTarget::Resource(r)))
        }
        _ => Err(no_such_overload()),
    }
}

fn decision(a: &[Value]) -> Result<&AuthzDecision, EvalError> {
    match authz_arg(&a[0])? {
        AuthzValue::Decision(d) => Ok(d),
        _ => Err(no_such_overload()),
    }
}

fn allowed(a: &[Value]) -> Result<Value, EvalError> {
    Ok(Value::Bool(decision(a)?.verdict == Verdict::Allow))
}

fn reason(a: &[Value]) -> Result<Value, EvalError> {
    Ok(Value::string(decision(a)?.reason.as_str()))
}

fn errored(a: &[Value]) -> Result<Value, EvalError> {
    Ok(Value::Bool(decision(a)?.error.is_some()))
}

fn error(a: &[Value]) -> Result<Value, EvalError> {
    Ok(Value::string(
        decision(a)?.error.as_deref().unwrap_or_default(),
    ))
}

fn check_cost(_: &[Value]) -> u64 {
    CHECK_COST
}

/// upstream's `selectorCostEstimate` for a selector of `length` characters: a list, 0.1
/// per character parsed, and a requirement (a list and a struct) per two characters.
pub(crate) fn selector_cost(length: u64) -> u64 {
    let ceil = |x: f64| x.ceil() as u64;
    let parse = ceil(length as f64 * 0.1);
    let requirements = ceil(length as f64 * 0.5);
    10u64
        .saturating_add(parse)
        .saturating_add(ceil(requirements as f64 * 50.0))
}

fn selector_runtime_cost(a: &[Value]) -> u64 {
    match a.get(1) {
        Some(Value::String(s)) => selector_cost(s.chars().count() as u64),
        _ => 1,
    }
}

/// Registers the library's functions (`authzLibraryDecls`, `authzSelectorsLibraryDecls`).
pub(crate) fn register(lib: &mut Library) {
    let t = Type::Opaque;
    let s = || Type::String;
    lib.member(
        "path",
        vec![t(AUTHORIZER_TYPE), s()],
        t(PATH_CHECK_TYPE),
        path,
    );
    lib.member(
        "group",
        vec![t(AUTHORIZER_TYPE), s()],
        t(GROUP_CHECK_TYPE),
        group,
    );
    lib.member(
        "serviceAccount",
        vec![t(AUTHORIZER_TYPE), s(), s()],
        t(AUTHORIZER_TYPE),
        service_account,
    );
    lib.member(
        "resource",
        vec![t(GROUP_CHECK_TYPE), s()],
        t(RESOURCE_CHECK_TYPE),
        resource,
    );
    for (n, f) in [
        ("subresource", subresource as crate::library::Impl),
        ("namespace", namespace),
        ("name", name),
    ] {
        lib.member(
            n,
            vec![t(RESOURCE_CHECK_TYPE), s()],
            t(RESOURCE_CHECK_TYPE),
            f,
        );
    }
    for (n, f) in [
        ("fieldSelector", field_selector as crate::library::Impl),
        ("labelSelector", label_selector),
    ] {
        lib.add(
            n,
            true,
            vec![t(RESOURCE_CHECK_TYPE), s()],
            t(RESOURCE_CHECK_TYPE),
            f,
            selector_runtime_cost,
        );
    }
    for receiver in [PATH_CHECK_TYPE, RESOURCE_CHECK_TYPE] {
        lib.add(
            "check",
            true,
            vec![t(receiver), s()],
            t(DECISION_TYPE),
            check,
            check_cost,
        );
    }
    for (n, result, f) in [
        ("allowed", Type::Bool, allowed as crate::library::Impl),
        ("errored", Type::Bool, errored),
        ("reason", Type::String, reason),
        ("error", Type::String, error),
    ] {
        lib.add(n, true, vec![t(DECISION_TYPE)], result, f, unit_cost);
    }
}
