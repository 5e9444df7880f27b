//! Impersonation: a request may act as another user with the `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-KEY` headers, when its own
//! user may `impersonate` each of them (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/
//! impersonation.go`). Each impersonated attribute is one authorization check, through the
//! same authorizer as every request: `users` (or `serviceaccounts` NAMESPACE/NAME for a
//! `system:serviceaccount:NS:NAME` user) and `groups` in the core group, `uids` and
//! `userextras/KEY` in `authentication.k8s.io`. The first refusal is a 403 in upstream's words;
//! groups, extras or a uid without a user are a 400 (upstream answers that with a 500, which a
//! client cannot tell from a server failure). The impersonated user is in
//! `system:authenticated` (`system:unauthenticated` for `system:anonymous`), as upstream
//! adds them, and a ServiceAccount user without groups asked for gets its ServiceAccount
//! groups.

use axum::http::{HeaderMap, HeaderName};
use serde_json::{Map, Value, json};
use tracing::debug;

use crate::authz::{Attributes, Authorizer, Decision};
use crate::identity::{ANONYMOUS_USER, SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED, UserInfo};
use crate::status::ApiError;

/// The headers (`authenticationv1.Impersonate*Header`), lowercase as HTTP/2 and hyper spell
/// them.
const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
/// The common prefix of the headers.
const PREFIX: &str = "impersonate-";
/// The prefix of a ServiceAccount's user name (`serviceaccount.ServiceAccountUsernamePrefix`).
pub(crate) const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
/// The group of every ServiceAccount (`serviceaccount.AllServiceAccountsGroup`).
pub(crate) const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The group of the `authentication.k8s.io` kinds of impersonation.
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// What one impersonation header asks for (upstream's `v1.ObjectReference` per request).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wanted {
    /// A ServiceAccount user: namespace and name.
    ServiceAccount(String, String),
    /// A user.
    User(String),
    /// A group.
    Group(String),
    /// An extra value: key and value.
    Extra(String, String),
    /// A uid.
    Uid(String),
}

impl Wanted {
    /// As Go's `%v` prints the `v1.ObjectReference` upstream makes of it (`{Kind Namespace
    /// Name UID APIVersion ResourceVersion FieldPath}`).
    fn go_value(&self) -> String {
        let (kind, namespace, name, api_version, field_path) = match self {
            Wanted::ServiceAccount(namespace, name) => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Wanted::User(name) => ("User", "", name.as_str(), "", ""),
            Wanted::Group(name) => ("Group", "", name.as_str(), "", ""),
            Wanted::Extra(key, value) => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
            Wanted::Uid(uid) => ("UID", "", uid.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
    }

    /// The authorization check of impersonating it.
    fn attributes(&self, requester: &UserInfo) -> Attributes {
        let core = |resource: &str, namespace: &str, name: &str| Attributes {
            user: requester.clone(),
            verb: "impersonate".to_owned(),
            resource_request: true,
            namespace: namespace.to_owned(),
            resource: resource.to_owned(),
            name: name.to_owned(),
            ..Attributes::default()
        };
        let authentication = |resource: &str, subresource: &str, name: &str| Attributes {
            api_group: AUTHENTICATION_GROUP.to_owned(),
            api_version: "v1".to_owned(),
            subresource: subresource.to_owned(),
            ..core(resource, "", name)
        };
        match self {
            Wanted::ServiceAccount(namespace, name) => core("serviceaccounts", namespace, name),
            Wanted::User(name) => core("users", "", name),
            Wanted::Group(name) => core("groups", "", name),
            Wanted::Extra(key, value) => authentication("userextras", key, value),
            Wanted::Uid(uid) => authentication("uids", "", uid),
        }
    }
}

/// Whether `headers` ask for impersonation at all (the fast path of every request).
pub(crate) fn asked(headers: &HeaderMap) -> bool {
    headers.keys().any(|name| name.as_str().starts_with(PREFIX))
}

/// The user `requester` impersonates with `headers`, checked with `authorizer`, and the
/// headers removed; `Ok(None)` when the headers ask for no impersonation.
pub(crate) fn impersonate(
    headers: &mut HeaderMap,
    requester: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Result<Option<UserInfo>, ApiError> {
    let wanted = wanted(headers)?;
    if wanted.is_empty() {
        return Ok(None);
    }
    let groups_given = headers.contains_key(GROUP_HEADER);
    let mut user = UserInfo::default();
    let mut extra: Map<String, Value> = Map::new();
    for request in &wanted {
        match request {
            Wanted::ServiceAccount(namespace, name) => {
                user.name = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        ALL_SERVICE_ACCOUNTS.to_owned(),
                        format!("{ALL_SERVICE_ACCOUNTS}:{namespace}"),
                    ];
                }
            }
            Wanted::User(name) => user.name.clone_from(name),
            Wanted::Group(name) => user.groups.push(name.clone()),
            Wanted::Extra(key, value) => {
                if let Value::Array(values) = extra.entry(key.clone()).or_insert_with(|| json!([]))
                {
                    values.push(json!(value));
                }
            }
            Wanted::Uid(uid) => user.uid.clone_from(uid),
        }
        let attributes = request.attributes(requester);
        let reason = match authorizer.authorize(&attributes) {
            Decision::Allow(_) => continue,
            Decision::Deny(reason) | Decision::NoOpinion(reason) => reason,
        };
        debug!(user = %requester.name, attempted = %request.go_value(), %reason, "impersonation forbidden");
        return Err(crate::authz::request::forbidden(&attributes, &reason));
    }
    if user.name == ANONYMOUS_USER {
        if !user.groups.iter().any(|g| g == SYSTEM_UNAUTHENTICATED) {
            user.groups.push(SYSTEM_UNAUTHENTICATED.to_owned());
        }
    } else if !user
        .groups
        .iter()
        .any(|g| g == SYSTEM_AUTHENTICATED || g == SYSTEM_UNAUTHENTICATED)
    {
        user.groups.push(SYSTEM_AUTHENTICATED.to_owned());
    }
    user.extra = extra;
    debug!(user = %requester.name, impersonated = %user.name, "impersonating");
    let names: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with(PREFIX))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
    Ok(Some(user))
}

/// What the headers ask for, in upstream's order (`buildImpersonationRequests`).
fn wanted(headers: &HeaderMap) -> Result<Vec<Wanted>, ApiError> {
    let text = |name: &str, value: &axum::http::HeaderValue| {
        std::str::from_utf8(value.as_bytes())
            .map(str::to_owned)
            .map_err(|_| ApiError::bad_request(format!("the {name} header is not UTF-8")))
    };
    let mut wanted = Vec::new();
    let user = match headers.get(USER_HEADER) {
        Some(value) => text(USER_HEADER, value)?,
        None => String::new(),
    };
    let has_user = !user.is_empty();
    if has_user {
        wanted.push(match split_service_account(&user) {
            Some((namespace, name)) => Wanted::ServiceAccount(namespace, name),
            None => Wanted::User(user),
        });
    }
    let mut others = false;
    for value in headers.get_all(GROUP_HEADER) {
        others = true;
        wanted.push(Wanted::Group(text(GROUP_HEADER, value)?));
    }
    for name in headers.keys() {
        let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) else {
            continue;
        };
        others = true;
        let key = path_unescape(key);
        for value in headers.get_all(name) {
            wanted.push(Wanted::Extra(key.clone(), text(name.as_str(), value)?));
        }
    }
    if let Some(value) = headers.get(UID_HEADER) {
        let uid = text(UID_HEADER, value)?;
        if !uid.is_empty() {
            others = true;
            wanted.push(Wanted::Uid(uid));
        }
    }
    if others && !has_user {
        let listed: Vec<String> = wanted.iter().map(Wanted::go_value).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            listed.join(" ")
        )));
    }
    Ok(wanted)
}

/// `serviceaccount.SplitUsername`: the namespace and name of a ServiceAccount user name, when
/// both are valid names.
pub(crate) fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let mut parts = rest.split(':');
    let (Some(namespace), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    use kubemock_apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
    (is_dns1123_label(namespace).is_empty() && is_dns1123_subdomain(name).is_empty())
        .then(|| (namespace.to_owned(), name.to_owned()))
}

/// Go's `url.PathUnescape`, keeping the text as it is when it does not decode (upstream's
/// `unescapeExtraKey`).
fn path_unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |b: u8| (b as char).to_digit(16);
            match (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            ) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    i += 3;
                    continue;
                }
                _ => return text.to_owned(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderValue, StatusCode};

    use super::*;
    use crate::authz::{AlwaysAllow, RulesInfo};

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..UserInfo::default()
        }
    }

    /// Allows only what `allowed` says.
    struct Only(fn(&Attributes) -> bool);

    impl Authorizer for Only {
        fn authorize(&self, attributes: &Attributes) -> Decision {
            if (self.0)(attributes) {
                Decision::Allow(String::new())
            } else {
                Decision::NoOpinion(String::new())
            }
        }

        fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> RulesInfo {
            RulesInfo::default()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn a_service_account_user_gets_its_groups_and_the_headers_go() {
        let mut h = headers(&[
            ("Impersonate-User", "system:serviceaccount:ns:builder"),
            ("Accept", "application/json"),
        ]);
        let admin = user("admin", &["system:masters"]);
        let impersonated = impersonate(&mut h, &admin, &AlwaysAllow).unwrap().unwrap();
        assert_eq!(impersonated.name, "system:serviceaccount:ns:builder");
        assert_eq!(
            impersonated.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        assert_eq!(h.len(), 1, "only Accept is left");
    }

    #[test]
    fn groups_extras_and_uid_are_taken_as_given() {
        let mut h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Extra-Scopes", "edit"),
            ("Impersonate-Extra-Example.com%2fteam", "a"),
            ("Impersonate-Uid", "1234"),
        ]);
        let admin = user("admin", &[]);
        let jane = impersonate(&mut h, &admin, &AlwaysAllow).unwrap().unwrap();
        assert_eq!(jane.name, "jane");
        assert_eq!(jane.uid, "1234");
        assert_eq!(jane.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(
            Value::Object(jane.extra),
            json!({"scopes": ["view", "edit"], "example.com/team": ["a"]})
        );
        assert!(h.is_empty());
        let mut h = headers(&[("Impersonate-User", "system:anonymous")]);
        let anonymous = impersonate(&mut h, &admin, &AlwaysAllow).unwrap().unwrap();
        assert_eq!(anonymous.groups, ["system:unauthenticated"]);
        assert!(
            impersonate(&mut headers(&[]), &admin, &AlwaysAllow)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn each_attribute_is_authorized_and_the_first_refusal_is_upstreams_403() {
        let alice = user("alice", &["system:authenticated"]);
        let users_only = Only(|a| a.verb == "impersonate" && a.resource == "users");
        let mut h = headers(&[("Impersonate-User", "bob"), ("Impersonate-Group", "admins")]);
        let err = impersonate(&mut h, &alice, &users_only).unwrap_err();
        assert_eq!(err.code, StatusCode::FORBIDDEN);
        assert_eq!(
            err.message,
            r#"groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope"#
        );
        assert_eq!(h.len(), 2, "headers stay on a refusal");
        let nothing = Only(|_| false);
        let err = impersonate(
            &mut headers(&[("Impersonate-User", "system:serviceaccount:ns:sa")]),
            &alice,
            &nothing,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            r#"serviceaccounts "sa" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns""#
        );
        let err = impersonate(
            &mut headers(&[("Impersonate-User", "x"), ("Impersonate-Extra-scopes", "v")]),
            &alice,
            &users_only,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            r#"userextras.authentication.k8s.io "v" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope"#
        );
        let details = err.details.unwrap();
        assert_eq!(details.group.as_deref(), Some("authentication.k8s.io"));
        assert_eq!(details.kind.as_deref(), Some("userextras"));
        let uid_only = Only(|a| a.resource != "uids");
        let err = impersonate(
            &mut headers(&[("Impersonate-User", "x"), ("Impersonate-Uid", "<7>")]),
            &alice,
            &uid_only,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            r#"uids.authentication.k8s.io "<7>" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope"#
        );
    }

    #[test]
    fn groups_without_a_user_are_a_bad_request_in_upstreams_words() {
        let admin = user("admin", &[]);
        let err = impersonate(
            &mut headers(&[("Impersonate-Group", "dev"), ("Impersonate-Uid", "7")]),
            &admin,
            &AlwaysAllow,
        )
        .unwrap_err();
        assert_eq!(err.code, StatusCode::BAD_REQUEST);
        assert_eq!(
            err.message,
            "requested [{Group  dev    } {UID  7  authentication.k8s.io/v1  }] without impersonating a user"
        );
        let mut bad = HeaderMap::new();
        bad.insert(
            "impersonate-user",
            HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        let err = impersonate(&mut bad, &admin, &AlwaysAllow).unwrap_err();
        assert_eq!(err.code, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn service_account_names_split_only_when_valid() {
        assert_eq!(
            split_service_account("system:serviceaccount:ns:sa"),
            Some(("ns".to_owned(), "sa".to_owned()))
        );
        assert_eq!(split_service_account("system:serviceaccount:ns:sa:x"), None);
        assert_eq!(split_service_account("system:serviceaccount:NS:sa"), None);
        assert_eq!(split_service_account("system:serviceaccount::sa"), None);
        assert_eq!(split_service_account("alice"), None);
        assert_eq!(path_unescape("a%2Fb"), "a/b");
        assert_eq!(path_unescape("a%zzb"), "a%zzb");
    }
}
