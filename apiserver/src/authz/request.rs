//! What the authorization step of the request pipeline (`crate::authorize`) asks about a
//! request: every request is described as [`Attributes`] from its method, path and query
//! alone, exactly as upstream's `RequestInfoFactory` does
//! (`pkg/endpoints/request/requestinfo.go`) — before routing, so that a request for something
//! that does not exist is refused the same way as one for something that does — and a
//! refusal is upstream's 403 (`responsewriters.Forbidden`).
//!
//! The parse is deliberately not `handlers::target`'s: that one knows the served resources and
//! answers 404s; this one knows only URL shapes, as the attributes an RBAC rule is matched
//! against must be the same whatever is served.

use axum::http::{Method, Uri};
use kubemock_apimachinery::{fields, go};

use super::Attributes;
use crate::identity::UserInfo;
use crate::query::Query;
use crate::status::ApiError;
use crate::target;

/// Path prefixes of resource requests (`APIPrefixes`); `api` has no group
/// (`GrouplessAPIPrefixes`).
const API_PREFIXES: [&str; 2] = ["api", "apis"];

/// Verbs given as the first path segment after the version (`specialVerbs`); `proxy` takes
/// no subresource (`specialVerbsNoSubresources`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];

/// What may follow `namespaces/{name}` and still be the namespace's own subresource, not a
/// resource in it (`namespaceSubresources`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// The attributes of a request by `user` (`RequestInfoFactory.NewRequestInfo`, then
/// `GetAuthorizerAttributes`).
pub(crate) fn attributes_of(method: &Method, uri: &Uri, user: UserInfo) -> Attributes {
    // Go's `URL.Path` is decoded; a path that does not decode is read as sent.
    let path = target::decode(uri.path()).unwrap_or_else(|| uri.path().to_owned());
    let mut attributes = Attributes {
        user,
        verb: method.as_str().to_lowercase(),
        path: path.clone(),
        ..Attributes::default()
    };
    let trimmed = path.trim_matches('/');
    let mut parts: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    if parts.len() < 3 || !API_PREFIXES.contains(&parts[0]) {
        return attributes;
    }
    let grouped = parts[0] != "api";
    parts.remove(0);
    if grouped {
        if parts.len() < 3 {
            return attributes;
        }
        attributes.api_group = parts.remove(0).to_owned();
    }
    attributes.resource_request = true;
    attributes.api_version = parts.remove(0).to_owned();
    if SPECIAL_VERBS.contains(&parts[0]) {
        if parts.len() < 2 {
            // Upstream fails the request info here, and the authorization filter answers
            // with a 500; such a path serves nothing, so it is described as a resource
            // request of that verb and no resource, which no rule but `*` allows.
            attributes.verb = parts[0].to_owned();
            return attributes;
        }
        attributes.verb = parts.remove(0).to_owned();
    } else {
        attributes.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_owned();
    }
    if parts[0] == "namespaces" && parts.len() > 1 {
        attributes.namespace = parts[1].to_owned();
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts.drain(..2);
        }
    }
    let subresources = attributes.verb != "proxy";
    if parts.len() >= 3 && subresources {
        attributes.subresource = parts[2].to_owned();
    }
    if parts.len() >= 2 {
        attributes.name = parts[1].to_owned();
    }
    attributes.resource = parts[0].to_owned();
    if attributes.name.is_empty() && attributes.verb == "get" {
        let query = Query::parse(uri.query());
        let options = ListOptions::decode(&query);
        attributes.verb = if options.watch { "watch" } else { "list" }.to_owned();
        if let Some(name) = options.name.filter(|n| is_valid_path_segment_name(n)) {
            attributes.name = name;
        }
    }
    if attributes.name.is_empty() && attributes.verb == "delete" {
        attributes.verb = "deletecollection".to_owned();
    }
    attributes
}

/// What upstream reads of a list's query (`metainternalversion.ListOptions` decoded by its
/// parameter codec): whether it watches, and the name a field selector pins.
struct ListOptions {
    watch: bool,
    name: Option<String>,
}

impl ListOptions {
    /// Decodes as the parameter codec does. When any option does not decode (a selector that
    /// does not parse, a `limit` or `timeoutSeconds` that is no integer), upstream keeps only
    /// `watch`, read from its raw value, and no name.
    fn decode(query: &Query) -> ListOptions {
        let watch = query.flag("watch");
        let integer = |key: &str| query.get(key).is_none_or(|v| v.parse::<i64>().is_ok());
        let labels = query
            .get("labelSelector")
            .is_none_or(|text| kubemock_apimachinery::labels::Selector::parse(text).is_ok());
        // `RequiresExactMatch("metadata.name")` of the parsed selector: its first term
        // `metadata.name=` (or `==`) in sorted order.
        let name =
            fields::Selector::parse(query.get("fieldSelector").unwrap_or("")).map(|selector| {
                selector
                    .requires_exact_match("metadata.name")
                    .map(str::to_owned)
            });
        match name {
            Ok(name) if integer("limit") && integer("timeoutSeconds") && labels => {
                ListOptions { watch, name }
            }
            _ => ListOptions { watch, name: None },
        }
    }
}

/// `path.IsValidPathSegmentName`: not `.` or `..`, and neither `/` nor `%` in it.
fn is_valid_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains(['/', '%'])
}

/// `forbiddenMessage`, with `&`, `<` and `>` escaped as upstream's sanitizer does.
pub(crate) fn forbidden_message(attributes: &Attributes) -> String {
    let user = go::quote(&attributes.user.name);
    let verb = &attributes.verb;
    let message = if !attributes.resource_request {
        format!(
            "User {user} cannot {verb} path {}",
            go::quote(&attributes.path)
        )
    } else {
        let mut resource = attributes.resource.clone();
        if !attributes.subresource.is_empty() {
            resource.push('/');
            resource.push_str(&attributes.subresource);
        }
        let (resource, group) = (go::quote(&resource), go::quote(&attributes.api_group));
        if attributes.namespace.is_empty() {
            format!(
                "User {user} cannot {verb} resource {resource} in API group {group} at the cluster scope"
            )
        } else {
            format!(
                "User {user} cannot {verb} resource {resource} in API group {group} in the namespace {}",
                go::quote(&attributes.namespace)
            )
        }
    };
    message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `ForbiddenStatusError`: the 403 of a request the authorizer did not allow, with the
/// authorizer's reason after the message when it gave one.
pub(crate) fn forbidden(attributes: &Attributes, reason: &str) -> ApiError {
    let message = forbidden_message(attributes);
    let why = if reason.is_empty() {
        message
    } else {
        format!("{message}: {reason}")
    };
    ApiError::forbidden_with(
        &attributes.api_group,
        &attributes.resource,
        &attributes.name,
        &why,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(method: Method, uri: &str) -> String {
        let a = attributes_of(&method, &uri.parse().unwrap(), UserInfo::default());
        if !a.resource_request {
            return format!("nonresource {} {}", a.verb, a.path);
        }
        format!(
            "{} ns={} group={} version={} resource={} sub={} name={}",
            a.verb, a.namespace, a.api_group, a.api_version, a.resource, a.subresource, a.name
        )
    }

    /// `requestinfo_test.go`, `TestGetAPIRequestInfo` (its successful cases) and
    /// `TestGetNonAPIRequestInfo`, plus the query-driven verbs.
    #[test]
    fn requests_are_described_as_upstreams_request_info_factory_does() {
        let cases = [
            // resource paths
            (
                "GET",
                "/api/v1/namespaces",
                "list ns= group= version=v1 resource=namespaces sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other",
                "get ns=other group= version=v1 resource=namespaces sub= name=other",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo",
                "get ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "HEAD",
                "/api/v1/namespaces/other/pods/foo",
                "get ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "GET",
                "/api/v1/pods",
                "list ns= group= version=v1 resource=pods sub= name=",
            ),
            (
                "HEAD",
                "/api/v1/pods",
                "list ns= group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo",
                "get ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            // special verbs
            (
                "GET",
                "/api/v1/proxy/namespaces/other/pods/foo",
                "proxy ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "GET",
                "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
                "proxy ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "GET",
                "/api/v1/watch/pods",
                "watch ns= group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/pods?watch=true",
                "watch ns= group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/pods?watch=false",
                "list ns= group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/other/pods",
                "watch ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=1",
                "watch ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=0",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            // subresource identification
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/status",
                "get ns=other group= version=v1 resource=pods sub=status name=foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo/proxy/subpath",
                "get ns=other group= version=v1 resource=pods sub=proxy name=foo",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/finalize",
                "update ns=other group= version=v1 resource=namespaces sub=finalize name=other",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/status",
                "update ns=other group= version=v1 resource=namespaces sub=status name=other",
            ),
            // verb identification
            (
                "PATCH",
                "/api/v1/namespaces/other/pods/foo",
                "patch ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods/foo",
                "delete ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "POST",
                "/api/v1/namespaces/other/pods",
                "create ns=other group= version=v1 resource=pods sub= name=",
            ),
            // deletecollection verb identification
            (
                "DELETE",
                "/api/v1/nodes",
                "deletecollection ns= group= version=v1 resource=nodes sub= name=",
            ),
            (
                "DELETE",
                "/api/v1/namespaces",
                "deletecollection ns= group= version=v1 resource=namespaces sub= name=",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods",
                "deletecollection ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "DELETE",
                "/apis/extensions/v1/namespaces/other/pods",
                "deletecollection ns=other group=extensions version=v1 resource=pods sub= name=",
            ),
            // api group identification
            (
                "POST",
                "/apis/extensions/v1/namespaces/other/pods",
                "create ns=other group=extensions version=v1 resource=pods sub= name=",
            ),
            // api version identification
            (
                "POST",
                "/apis/extensions/v1beta3/namespaces/other/pods",
                "create ns=other group=extensions version=v1beta3 resource=pods sub= name=",
            ),
            // a field selector pins the name of a list or watch
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo",
                "list ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=true&fieldSelector=metadata.name%3D%3Dfoo",
                "watch ns=other group= version=v1 resource=pods sub= name=foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%21%3Dfoo",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3D..",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            // ... unless another option does not decode
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo&limit=x",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo&labelSelector=a%20in",
                "list ns=other group= version=v1 resource=pods sub= name=",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=true&limit=x",
                "watch ns=other group= version=v1 resource=pods sub= name=",
            ),
            // percent-encoded paths are read decoded
            (
                "GET",
                "/api/v1/namespaces/other/config%6Daps",
                "list ns=other group= version=v1 resource=configmaps sub= name=",
            ),
        ];
        for (method, uri, want) in cases {
            assert_eq!(
                described(method.parse().unwrap(), uri),
                want,
                "{method} {uri}"
            );
        }
        for (method, uri, want) in [
            ("GET", "/api", "nonresource get /api"),
            ("GET", "/api/v1", "nonresource get /api/v1"),
            ("GET", "/apis", "nonresource get /apis"),
            ("GET", "/apis/apps", "nonresource get /apis/apps"),
            ("GET", "/apis/apps/v1", "nonresource get /apis/apps/v1"),
            ("GET", "/healthz", "nonresource get /healthz"),
            ("GET", "/", "nonresource get /"),
            ("POST", "/version", "nonresource post /version"),
            (
                "GET",
                "/openapi/v3/apis/apps/v1",
                "nonresource get /openapi/v3/apis/apps/v1",
            ),
            ("GET", "/foo/bar/baz", "nonresource get /foo/bar/baz"),
        ] {
            assert_eq!(
                described(method.parse().unwrap(), uri),
                want,
                "{method} {uri}"
            );
        }
    }

    /// The authorization step's own cost, without HTTP: describing a request and deciding it,
    /// per request, with one binding and with 5000 others (4000 RoleBindings in the namespace,
    /// 1000 ClusterRoleBindings) that name other users and groups. Prints nanoseconds per
    /// request; run with `cargo test --release -p kubemock-apiserver --lib -- --ignored
    /// authorization_step_cost --nocapture` (in a debug build the figures mean little).
    #[test]
    #[ignore = "prints figures; run in release"]
    fn authorization_step_cost() {
        use crate::authz::rbac::tests::{cluster_role_binding, fill, new_rule, role, role_binding};
        use crate::authz::{AuthorizationMode, build};
        const REQUESTS: u32 = 200_000;
        let uri: Uri = "/api/v1/namespaces/bench/configmaps/c0".parse().unwrap();
        let user = UserInfo {
            name: "alice".to_owned(),
            groups: vec!["developers".to_owned(), "system:authenticated".to_owned()],
            ..UserInfo::default()
        };
        for others in [0usize, 5000] {
            let (authorizer, rbac) = build(&AuthorizationMode::rbac());
            let rbac = rbac.unwrap();
            let mut objects = vec![
                role(
                    "bench",
                    "cm",
                    &[new_rule("get,create", "", "configmaps", "")],
                ),
                role_binding("bench", "alice", "Role", "cm", &["User:alice"]),
            ];
            for i in 0..others {
                objects.push(if i % 5 == 4 {
                    cluster_role_binding(&format!("crb{i}"), "cm", &[&format!("Group:g{i}")])
                } else {
                    role_binding(
                        "bench",
                        &format!("rb{i}"),
                        "Role",
                        "cm",
                        &[&format!("User:u{i}")],
                    )
                });
            }
            fill(&rbac, &objects);
            let started = std::time::Instant::now();
            for _ in 0..REQUESTS {
                let attributes = attributes_of(&Method::GET, &uri, user.clone());
                assert!(authorizer.allows(&attributes));
            }
            let per_request = started.elapsed().as_nanos() / u128::from(REQUESTS);
            println!("authorization step, {others} other bindings: {per_request} ns per request");
        }
    }

    fn alice(verb: &str, resource: &str, sub: &str, namespace: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo {
                name: "alice".to_owned(),
                ..UserInfo::default()
            },
            verb: verb.to_owned(),
            resource_request: true,
            namespace: namespace.to_owned(),
            resource: resource.to_owned(),
            subresource: sub.to_owned(),
            name: name.to_owned(),
            ..Attributes::default()
        }
    }

    #[test]
    fn refusals_are_worded_as_upstream() {
        let list = alice("list", "configmaps", "", "default", "");
        let error = forbidden(&list, "");
        assert_eq!(error.code.as_u16(), 403);
        assert_eq!(error.reason, "Forbidden");
        assert_eq!(
            error.message,
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        assert_eq!(
            error.to_json()["details"],
            serde_json::json!({"kind": "configmaps"})
        );
        let mut get = alice("get", "deployments", "scale", "ns", "web");
        get.api_group = "apps".to_owned();
        let error = forbidden(&get, "RBAC: oops");
        assert_eq!(
            error.message,
            r#"deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns": RBAC: oops"#
        );
        assert_eq!(
            error.to_json()["details"],
            serde_json::json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
        let nodes = alice("list", "nodes", "", "", "");
        assert_eq!(
            forbidden(&nodes, "").message,
            r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
        );
        let path = Attributes {
            user: list.user,
            verb: "get".to_owned(),
            path: "/foo<b>".to_owned(),
            ..Attributes::default()
        };
        let error = forbidden(&path, "");
        assert_eq!(
            error.message,
            r#"forbidden: User "alice" cannot get path "/foo&lt;b&gt;""#
        );
        assert_eq!(error.to_json()["details"], serde_json::json!({}));
    }
}
