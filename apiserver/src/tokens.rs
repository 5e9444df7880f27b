//! Service-account tokens: what TokenRequest (`serviceaccounts/{name}/token`) issues and
//! TokenReview checks, as kube-apiserver's `pkg/serviceaccount` does. A token is a JWT signed
//! with the cluster's service-account key (`pki`) carrying upstream's claims (`claims.go`:
//! `iss`, `sub` `system:serviceaccount:NS:NAME`, `aud`, `exp`, `iat`, `nbf`, `jti`, and the
//! `kubernetes.io` claim naming the namespace, the service account and the object the token is
//! bound to). A token authenticates while it has not expired (one minute of leeway, go-jose's
//! `DefaultLeeway`), its service account exists with the same uid and is not being deleted,
//! and the object it is bound to likewise (`validator.Validate`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::identity::{SYSTEM_AUTHENTICATED, UserInfo};
use crate::keys;
use crate::object::{self, Object};
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// Seconds a token stays valid past its expiry, and may be used before `nbf` (go-jose's
/// `jwt.DefaultLeeway`).
const LEEWAY_SECONDS: i64 = 60;
/// The claim of Kubernetes' private claims.
const PRIVATE_CLAIM: &str = "kubernetes.io";
/// The `extra` keys of a service account user (`apiserverserviceaccount`).
const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// Now, in Unix seconds.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// What a token is bound to, besides its service account.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bound {
    /// `pod`: name and uid.
    pub(crate) pod: Option<(String, String)>,
    /// `node`: name and uid (the pod's node for a pod-bound token).
    pub(crate) node: Option<(String, String)>,
    /// `secret`: name and uid.
    pub(crate) secret: Option<(String, String)>,
}

/// The claims of a token of `issuer` for `account` (namespace, name, uid), issued at `now`,
/// expiring after `expiration` seconds, for `audiences` (`claims.go`, `Claims`; keys in the
/// order go-jose's builder writes them, sorted).
pub(crate) fn claims(
    issuer: &str,
    account: (&str, &str, &str),
    bound: &Bound,
    now: i64,
    expiration: i64,
    audiences: &[String],
) -> Value {
    let (namespace, name, uid) = account;
    let reference = |(name, uid): &(String, String)| json!({"name": name, "uid": uid});
    let mut private = Map::new();
    private.insert("namespace".to_owned(), json!(namespace));
    if let Some(node) = &bound.node {
        private.insert("node".to_owned(), reference(node));
    }
    if let Some(pod) = &bound.pod {
        private.insert("pod".to_owned(), reference(pod));
    }
    if let Some(secret) = &bound.secret {
        private.insert("secret".to_owned(), reference(secret));
    }
    private.insert(
        "serviceaccount".to_owned(),
        json!({"name": name, "uid": uid}),
    );
    json!({
        "aud": audiences,
        "exp": now.saturating_add(expiration),
        "iat": now,
        "iss": issuer,
        "jti": crate::meta::new_uid(),
        PRIVATE_CLAIM: private,
        "nbf": now,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    })
}

/// A successful authentication.
#[derive(Debug, Clone)]
pub(crate) struct Authenticated {
    /// Who the token is.
    pub(crate) user: UserInfo,
    /// The audiences both the token and the review have.
    pub(crate) audiences: Vec<String>,
}

/// Why a token does not authenticate: `NotOurs` when it is not a service-account token of
/// this cluster (another authenticator's business: TokenReview says only that it is not
/// authenticated), `Invalid` with upstream's reason otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// Not a JWT of this issuer.
    NotOurs,
    /// A token of this issuer that does not authenticate, with upstream's error.
    Invalid(String),
    /// A token whose audiences miss every audience asked for.
    Audience(String),
}

/// Authenticates `token` at `now` (Unix seconds) for `audiences` (the API server's when
/// empty), as the service-account authenticator and its validator do.
pub(crate) async fn authenticate(
    state: &AppState,
    token: &str,
    audiences: &[String],
    now: i64,
) -> ApiResult<Result<Authenticated, Rejected>> {
    // `jwt.go`: a token that does not parse or whose issuer is another's is not ours.
    let Some(unverified) = unverified_claims(token) else {
        return Ok(Err(Rejected::NotOurs));
    };
    let issuer = state.config().service_account_issuer.as_str();
    if unverified.get("iss").and_then(Value::as_str) != Some(issuer) {
        return Ok(Err(Rejected::NotOurs));
    }
    let claims = match state.pki().verify_jwt(token) {
        Ok(claims) => claims,
        Err(err) => return Ok(Err(Rejected::Invalid(err.to_string()))),
    };
    let wanted: Vec<String> = if audiences.is_empty() {
        state.config().audiences()
    } else {
        audiences.to_vec()
    };
    let token_audiences = audience_list(claims.get("aud"));
    let common: Vec<String> = wanted
        .iter()
        .filter(|a| token_audiences.contains(a))
        .cloned()
        .collect();
    if common.is_empty() {
        return Ok(Err(Rejected::Audience(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_quoted_list(&token_audiences),
            go_quoted_list(&wanted)
        ))));
    }
    let number = |key: &str| claims.get(key).and_then(Value::as_i64);
    if number("exp").is_some_and(|exp| now > exp.saturating_add(LEEWAY_SECONDS)) {
        return Ok(Err(Rejected::Invalid(
            "service account token has expired".to_owned(),
        )));
    }
    if number("nbf").is_some_and(|nbf| now < nbf.saturating_sub(LEEWAY_SECONDS)) {
        return Ok(Err(Rejected::Invalid(
            "service account token is not valid yet".to_owned(),
        )));
    }
    if number("iat").is_some_and(|iat| now < iat.saturating_sub(LEEWAY_SECONDS)) {
        return Ok(Err(Rejected::Invalid(
            "service account token is issued in the future".to_owned(),
        )));
    }
    let private = claims.get(PRIVATE_CLAIM).cloned().unwrap_or(Value::Null);
    let text = |value: &Value, path: &[&str]| {
        path.iter()
            .try_fold(value, |v, key| v.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let namespace = text(&private, &["namespace"]);
    let account_name = text(&private, &["serviceaccount", "name"]);
    let account_uid = text(&private, &["serviceaccount", "uid"]);
    let account = match lookup(state, "serviceaccounts", Some(&namespace), &account_name).await? {
        Some(account) => account,
        None => {
            return Ok(Err(Rejected::Invalid(format!(
                "serviceaccounts {account_name:?} not found"
            ))));
        }
    };
    if object::meta_str(&account, "uid").unwrap_or("") != account_uid {
        return Ok(Err(Rejected::Invalid(format!(
            "service account UID ({}) does not match claim ({account_uid})",
            object::meta_str(&account, "uid").unwrap_or("")
        ))));
    }
    if object::meta_str(&account, "deletionTimestamp").is_some() {
        return Ok(Err(Rejected::Invalid(format!(
            "service account {namespace}/{account_name} has been deleted"
        ))));
    }
    let invalidated = || {
        Ok(Err(Rejected::Invalid(
            "service account token has been invalidated".to_owned(),
        )))
    };
    let mut extra = Map::new();
    for (kind, plural, namespaced) in [
        ("secret", "secrets", true),
        ("pod", "pods", true),
        ("node", "nodes", false),
    ] {
        let Some(reference) = private.get(kind).filter(|r| r.is_object()) else {
            continue;
        };
        let (name, uid) = (text(reference, &["name"]), text(reference, &["uid"]));
        // A pod-bound token's node claim is information, not a binding.
        if kind == "node" && private.get("pod").is_some_and(Value::is_object) {
            extra.insert(NODE_NAME_KEY.to_owned(), json!([name]));
            extra.insert(NODE_UID_KEY.to_owned(), json!([uid]));
            continue;
        }
        let scope = namespaced.then_some(namespace.as_str());
        let Some(found) = lookup(state, plural, scope, &name).await? else {
            return invalidated();
        };
        let found_uid = object::meta_str(&found, "uid").unwrap_or("").to_owned();
        if found_uid != uid {
            return Ok(Err(Rejected::Invalid(format!(
                "{kind} UID ({found_uid}) does not match service account {kind} ref claim ({uid})"
            ))));
        }
        if object::meta_str(&found, "deletionTimestamp").is_some() {
            return invalidated();
        }
        match kind {
            "pod" => {
                extra.insert(POD_NAME_KEY.to_owned(), json!([name]));
                extra.insert(POD_UID_KEY.to_owned(), json!([uid]));
            }
            "node" => {
                extra.insert(NODE_NAME_KEY.to_owned(), json!([name]));
                extra.insert(NODE_UID_KEY.to_owned(), json!([uid]));
            }
            _ => {}
        }
    }
    if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
        extra.insert(CREDENTIAL_ID_KEY.to_owned(), json!([format!("JTI={jti}")]));
    }
    extra.sort_keys();
    let user = UserInfo {
        name: format!("system:serviceaccount:{namespace}:{account_name}"),
        uid: account_uid,
        groups: vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{namespace}"),
            SYSTEM_AUTHENTICATED.to_owned(),
        ],
        extra,
    };
    Ok(Ok(Authenticated {
        user,
        audiences: common,
    }))
}

/// A JWT's claims without checking its signature (to tell whose token it is).
fn unverified_claims(token: &str) -> Option<Value> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `aud` as a list (a single string is one audience).
fn audience_list(aud: Option<&Value>) -> Vec<String> {
    match aud {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A `[]string` as Go's `%q` prints it (`["a" "b"]`).
fn go_quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|item| serde_json::to_string(item).unwrap_or_default())
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// The stored object `plural` (core group) `name`, if it exists.
pub(crate) async fn lookup(
    state: &AppState,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> ApiResult<Option<Object>> {
    let resource = state
        .registry()
        .lookup("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not registered")))?;
    let key = keys::object_key(&resource, namespace, name);
    match state.fetch(&key).await? {
        Some(kv) => Ok(Some(object::parse_stored(&kv.value)?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::DEFAULT_ISSUER;

    #[test]
    fn claims_name_the_account_and_the_bound_object_in_upstreams_shape() {
        let bound = Bound {
            pod: Some(("web-0".to_owned(), "pod-uid".to_owned())),
            node: Some(("node-1".to_owned(), "node-uid".to_owned())),
            secret: None,
        };
        let claims = claims(
            DEFAULT_ISSUER,
            ("apps", "builder", "sa-uid"),
            &bound,
            1000,
            3600,
            &["https://kubernetes.default.svc.cluster.local".to_owned()],
        );
        assert_eq!(claims["sub"], "system:serviceaccount:apps:builder");
        assert_eq!(claims["exp"], 4600);
        assert_eq!(claims["nbf"], 1000);
        assert_eq!(claims["iss"], DEFAULT_ISSUER);
        assert_eq!(
            claims["kubernetes.io"],
            json!({"namespace": "apps", "node": {"name": "node-1", "uid": "node-uid"},
                   "pod": {"name": "web-0", "uid": "pod-uid"},
                   "serviceaccount": {"name": "builder", "uid": "sa-uid"}})
        );
        let keys: Vec<&String> = claims.as_object().unwrap().keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "go-jose writes the claims sorted");
    }

    #[test]
    fn audiences_are_quoted_as_go_prints_string_slices() {
        assert_eq!(
            go_quoted_list(&["a".to_owned(), "b c".to_owned()]),
            "[\"a\" \"b c\"]"
        );
        assert_eq!(audience_list(Some(&json!("one"))), ["one"]);
    }
}
