//! Resource URLs (docs/api-behaviour.md#url-layout, #query-parameters): what a path under `/api/v1` or `/apis/{g}/{v}` names — a
//! resource, optionally a namespace, a name and a subresource — or a route-level 404.
//!
//! The same parse also classifies every request before any handler runs ([`RequestInfo`], the
//! real server's `RequestInfo`, left in the request by `handlers::classify`): the metrics
//! count it under its verb, resource and scope, and the in-flight limit tells watches and
//! mutating requests apart. One parser, so the labels can never disagree with what the
//! handlers serve. It knows the registry, not the server's state, so that the metrics and the
//! limits below the handlers can read it.

use std::sync::Arc;

use axum::http::{HeaderMap, Method, Uri, header};

use crate::query::Query;
use crate::registry::{Registry, Resource};
use crate::status::{ApiError, ApiResult};

/// What a resource path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) resource: Arc<Resource>,
    /// The namespace in the path (namespaced resources only).
    pub(crate) namespace: Option<String>,
    /// The object name (item paths).
    pub(crate) name: Option<String>,
    /// The subresource (`status`, `scale`, ...).
    pub(crate) subresource: Option<String>,
    /// The path used the legacy `/watch/` prefix.
    pub(crate) legacy_watch: bool,
}

/// Parses the path after `/api/v1/` or `/apis/{group}/{version}/`.
pub(crate) fn parse(
    registry: &Registry,
    group: &str,
    version: &str,
    rest: &str,
) -> ApiResult<Target> {
    let mut segments: Vec<&str> = rest.split('/').collect();
    if segments.last() == Some(&"") {
        segments.pop();
    }
    let legacy_watch = segments.first() == Some(&"watch");
    if legacy_watch {
        segments.remove(0);
    }
    if segments.is_empty() || segments.iter().any(|s| s.is_empty()) {
        return Err(ApiError::route_not_found());
    }
    let lookup = |plural: &str| registry.lookup(group, version, plural);
    // `namespaces/{ns}/{resource}...` names a namespaced collection, except
    // `namespaces/{name}/{subresource}` of the namespace itself (`status`, `finalize`).
    let namespace_subresource = segments.len() == 3
        && segments[0] == "namespaces"
        && lookup(segments[2]).is_none()
        && lookup("namespaces").is_some_and(|ns| ns.subresource(segments[2]).is_some());
    let (namespace, rest) =
        if segments.len() >= 3 && segments[0] == "namespaces" && !namespace_subresource {
            (Some(segments[1].to_owned()), &segments[2..])
        } else {
            (None, &segments[..])
        };
    let resource = lookup(rest[0]).ok_or_else(ApiError::route_not_found)?;
    if namespace.is_some() && !resource.namespaced {
        return Err(ApiError::route_not_found());
    }
    let (name, subresource) = match rest {
        [_] => (None, None),
        [_, name] => (Some((*name).to_owned()), None),
        [_, name, sub] => (Some((*name).to_owned()), Some((*sub).to_owned())),
        _ => return Err(ApiError::route_not_found()),
    };
    // A namespaced item needs its namespace in the path.
    if resource.namespaced && namespace.is_none() && name.is_some() {
        return Err(ApiError::route_not_found());
    }
    if let Some(sub) = &subresource
        && resource.subresource(sub).is_none()
    {
        return Err(ApiError::route_not_found());
    }
    Ok(Target {
        resource,
        namespace,
        name,
        subresource,
        legacy_watch,
    })
}

impl Target {
    /// The request asks for a watch: `?watch` (a boolean, docs/api-behaviour.md#query-parameters) or the legacy `/watch/` prefix.
    pub(crate) fn watches(&self, query: &Query) -> bool {
        self.legacy_watch || query.flag("watch")
    }

    /// The metrics scope, as the real server's installer assigns it: `resource` for an item
    /// or a create, `namespace` for a collection in a namespace, `cluster` otherwise (cluster
    /// resources and lists across all namespaces).
    fn scope(&self, method: &Method) -> &'static str {
        if self.name.is_some() || method == Method::POST {
            "resource"
        } else if self.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        }
    }
}

/// Subresources the real server serves as CONNECT requests; they are long-running, too.
const CONNECT_SUBRESOURCES: [&str; 5] = ["attach", "exec", "log", "portforward", "proxy"];

/// The `(subresource, component)` labels of a non-resource path the real server instruments:
/// the health checks (`healthz.go`), the discovery roots (`aggregated/handler.go`; upstream
/// counts only their aggregated form, kubemock both) and OpenAPI v3 (the aggregator's
/// `openapiv3/aggregator.go`, without the leading slash). Everything else outside the resource
/// paths (`/version`, `/openapi/v2`, `/metrics`, route-level 404s) is not counted.
fn instrumented_path(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/healthz" => Some(("/healthz", "")),
        "/livez" => Some(("/livez", "")),
        "/readyz" => Some(("/readyz", "")),
        "/api" => Some(("/api", APISERVER)),
        "/apis" => Some(("/apis", APISERVER)),
        "/openapi/v3" => Some(("openapi/v3", "")),
        _ if path.starts_with("/openapi/v3/") => Some(("openapi/v3/", "")),
        _ => None,
    }
}

/// The `component` label of requests the API server handles itself.
const APISERVER: &str = "apiserver";

/// The labels a request is counted under, as kube-apiserver's `apiserver_request_total` and
/// `apiserver_request_duration_seconds` carry them (k8s.io/apiserver
/// `pkg/endpoints/metrics/metrics.go`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `CONNECT` or
    /// `other`. A delete of a collection is `DELETE` with a collection scope, as upstream
    /// reports it.
    pub(crate) verb: &'static str,
    /// `dryRun` values, sorted and deduplicated (`All`), `invalid`, or empty.
    pub(crate) dry_run: String,
    /// API group; empty for core and non-resource requests.
    pub(crate) group: String,
    /// API version; empty for non-resource requests.
    pub(crate) version: String,
    /// The plural resource; empty for non-resource requests.
    pub(crate) resource: String,
    /// The subresource; for instrumented non-resource requests, the path (`/healthz`).
    pub(crate) subresource: String,
    /// `resource`, `namespace`, `cluster`, or empty for non-resource requests.
    pub(crate) scope: &'static str,
    /// `apiserver`, or empty for the health checks.
    pub(crate) component: &'static str,
}

/// What the request pipeline knows about a request before any handler runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// The labels the request is counted under.
    pub(crate) labels: RequestLabels,
    /// The real server instruments this request (every resource request and a few
    /// non-resource paths). Requests it does not instrument are counted only when the
    /// in-flight limit turns them away, under their verb alone.
    pub(crate) instrumented: bool,
    /// A watch or CONNECT request: open for long, counted apart from the in-flight limit.
    pub(crate) long_running: bool,
    /// A read (GET or HEAD): counted against the read-only limit, else the mutating one.
    pub(crate) read_only: bool,
    /// The parsed resource path, handed on to the resource handlers so that a request's path
    /// is parsed once.
    pub(crate) target: Option<Arc<Target>>,
}

impl RequestInfo {
    /// Classifies a request by its method, URI and headers.
    pub(crate) fn classify(
        registry: &Registry,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Self {
        let query = Query::parse(uri.query());
        let read_only = method == Method::GET || method == Method::HEAD;
        let mut labels = RequestLabels {
            dry_run: dry_run_label(&query),
            component: APISERVER,
            ..RequestLabels::default()
        };
        let path = uri.path();
        if let Some((group, version, rest)) = split_resource_path(path)
            && let Ok(target) = parse(registry, &group, &version, &rest)
        {
            let scope = target.scope(method);
            let subresource = target.subresource.clone().unwrap_or_default();
            let connect = CONNECT_SUBRESOURCES.contains(&subresource.as_str());
            let watch = method == Method::GET && target.watches(&query);
            labels.verb = if connect {
                "CONNECT"
            } else if watch {
                "WATCH"
            } else if method == Method::PATCH
                && headers
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes() == b"application/apply-patch+yaml")
            {
                "APPLY"
            } else {
                canonical_verb(method, scope)
            };
            labels.group = group;
            labels.version = version;
            labels.resource = target.resource.plural.clone();
            labels.subresource = subresource;
            labels.scope = scope;
            return RequestInfo {
                labels,
                instrumented: true,
                long_running: watch || connect,
                read_only,
                target: Some(Arc::new(target)),
            };
        }
        labels.verb = canonical_verb(method, "");
        let instrumented = instrumented_path(path);
        if let Some((subresource, component)) = instrumented {
            labels.subresource = subresource.to_owned();
            labels.component = component;
        }
        RequestInfo {
            labels,
            instrumented: instrumented.is_some(),
            long_running: false,
            read_only,
            target: None,
        }
    }
}

/// `(group, version, rest)` of a path the resource routes serve (`/api/v1/{*rest}`,
/// `/apis/{group}/{version}/{*rest}`), percent-decoded as the router decodes its captures.
fn split_resource_path(path: &str) -> Option<(String, String, String)> {
    let (group, version, rest) = if let Some(rest) = path.strip_prefix("/api/v1/") {
        ("", "v1", rest)
    } else {
        let mut parts = path.strip_prefix("/apis/")?.splitn(3, '/');
        (parts.next()?, parts.next()?, parts.next()?)
    };
    Some((decode(group)?, decode(version)?, decode(rest)?))
}

/// Percent-decodes a path component; `None` if it does not decode to UTF-8 (the router
/// refuses those, too).
pub(crate) fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// GET and HEAD are `LIST` on collections and `GET` on items (and on non-resource paths);
/// other methods report as themselves, unknown ones as `other` (upstream `CanonicalVerb`,
/// `cleanVerb`).
fn canonical_verb(method: &Method, scope: &str) -> &'static str {
    match *method {
        Method::GET | Method::HEAD if scope == "resource" || scope.is_empty() => "GET",
        Method::GET | Method::HEAD => "LIST",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// The `dry_run` label: empty without `dryRun`, `invalid` unless every value is `All`, else
/// the values sorted and deduplicated, joined by commas (upstream `cleanDryRun`).
fn dry_run_label(query: &Query) -> String {
    let mut values = query.all("dryRun");
    if values.iter().any(|v| *v != "All") {
        return "invalid".to_owned();
    }
    values.sort_unstable();
    values.dedup();
    values.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(group: &str, version: &str, rest: &str) -> ApiResult<Target> {
        parse(&Registry::builtin(), group, version, rest)
    }

    #[test]
    fn paths_map_to_collections_items_and_subresources() {
        let t = target("", "v1", "namespaces/default/configmaps").unwrap();
        assert_eq!(
            (
                t.resource.plural.as_str(),
                t.namespace.as_deref(),
                t.name.as_deref()
            ),
            ("configmaps", Some("default"), None)
        );
        let t = target("", "v1", "namespaces/default/configmaps/c1").unwrap();
        assert_eq!(t.name.as_deref(), Some("c1"));
        let t = target("apps", "v1", "namespaces/ns/deployments/web/scale").unwrap();
        assert_eq!(t.subresource.as_deref(), Some("scale"));
        let t = target("", "v1", "pods").unwrap();
        assert_eq!((t.namespace, t.name), (None, None));
        let t = target("", "v1", "namespaces/kube-system").unwrap();
        assert_eq!(
            (t.resource.plural.as_str(), t.name.as_deref()),
            ("namespaces", Some("kube-system"))
        );
        let t = target("", "v1", "namespaces/ns1/finalize").unwrap();
        assert_eq!(
            (t.name.as_deref(), t.subresource.as_deref()),
            (Some("ns1"), Some("finalize"))
        );
        let t = target("", "v1", "nodes/n1/status").unwrap();
        assert_eq!(t.subresource.as_deref(), Some("status"));
        let t = target("", "v1", "watch/namespaces/default/pods/p").unwrap();
        assert!(t.legacy_watch);
        assert_eq!(t.name.as_deref(), Some("p"));
    }

    fn classify(method: Method, uri: &str) -> RequestInfo {
        RequestInfo::classify(
            &Registry::builtin(),
            &method,
            &uri.parse().unwrap(),
            &HeaderMap::new(),
        )
    }

    #[test]
    fn requests_are_labelled_as_the_real_server_reports_them() {
        // method, URI, then the labels: verb, group/version, resource[/subresource], scope.
        let cases = [
            "GET /api/v1/namespaces/d/pods/p GET v1 pods resource",
            "HEAD /api/v1/namespaces/d/pods/p GET v1 pods resource",
            "GET /api/v1/namespaces/d/pods LIST v1 pods namespace",
            "GET /api/v1/pods LIST v1 pods cluster",
            "GET /api/v1/nodes LIST v1 nodes cluster",
            "GET /api/v1/namespaces/d GET v1 namespaces resource",
            "GET /api/v1/namespaces/d/pods?watch=1 WATCH v1 pods namespace",
            "GET /api/v1/namespaces/d/pods?watch=false LIST v1 pods namespace",
            "GET /api/v1/watch/namespaces/d/pods/p WATCH v1 pods resource",
            "POST /api/v1/namespaces/d/pods POST v1 pods resource",
            "POST /api/v1/namespaces/d/pods/p/binding POST v1 pods/binding resource",
            "PUT /apis/apps/v1/namespaces/d/deployments/w/scale PUT apps/v1 deployments/scale resource",
            "PATCH /apis/apps/v1/namespaces/d/deployments/w PATCH apps/v1 deployments resource",
            "DELETE /api/v1/namespaces/d/pods/p DELETE v1 pods resource",
            "DELETE /api/v1/namespaces/d/pods DELETE v1 pods namespace",
            "OPTIONS /api/v1/namespaces/d/pods other v1 pods namespace",
            "GET /api/v1/namespaces/d/config%6Daps LIST v1 configmaps namespace",
        ];
        for case in cases {
            let [method, uri, verb, group_version, resource, scope] = case
                .split_whitespace()
                .collect::<Vec<_>>()
                .try_into()
                .unwrap();
            let method: Method = method.parse().unwrap();
            let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
            let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
            let info = classify(method.clone(), uri);
            assert_eq!(
                info.labels,
                RequestLabels {
                    verb: info.labels.verb,
                    dry_run: String::new(),
                    group: group.to_owned(),
                    version: version.to_owned(),
                    resource: resource.to_owned(),
                    subresource: subresource.to_owned(),
                    scope: info.labels.scope,
                    component: "apiserver",
                },
                "{case}"
            );
            assert_eq!(
                (info.labels.verb, info.labels.scope),
                (verb, scope),
                "{case}"
            );
            assert!(info.instrumented, "{uri}");
            assert_eq!(info.long_running, verb == "WATCH", "{uri}");
            assert_eq!(
                info.read_only,
                method == Method::GET || method == Method::HEAD,
                "{uri}"
            );
        }
    }

    #[test]
    fn apply_patches_dry_runs_and_non_resource_paths_get_their_labels() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "application/apply-patch+yaml".parse().unwrap(),
        );
        let info = RequestInfo::classify(
            &Registry::builtin(),
            &Method::PATCH,
            &"/api/v1/namespaces/d/configmaps/c?dryRun=All&dryRun=All"
                .parse()
                .unwrap(),
            &headers,
        );
        assert_eq!(
            (info.labels.verb, info.labels.dry_run.as_str()),
            ("APPLY", "All")
        );
        let info = classify(Method::POST, "/api/v1/namespaces/d/configmaps?dryRun=Some");
        assert_eq!(info.labels.dry_run, "invalid");

        let health = classify(Method::GET, "/healthz");
        assert!(health.instrumented && !health.long_running && health.read_only);
        assert_eq!(
            health.labels,
            RequestLabels {
                verb: "GET",
                subresource: "/healthz".to_owned(),
                ..RequestLabels::default()
            }
        );
        let discovery = classify(Method::GET, "/apis");
        assert!(discovery.instrumented);
        assert_eq!(
            (
                discovery.labels.subresource.as_str(),
                discovery.labels.component
            ),
            ("/apis", "apiserver")
        );
        for (uri, subresource) in [
            ("/openapi/v3", "openapi/v3"),
            ("/openapi/v3/apis/apps/v1", "openapi/v3/"),
        ] {
            let info = classify(Method::GET, uri);
            assert!(info.instrumented, "{uri}");
            assert_eq!(
                (info.labels.subresource.as_str(), info.labels.component),
                (subresource, ""),
                "{uri}"
            );
        }
        for uri in [
            "/version",
            "/openapi/v2",
            "/metrics",
            "/api/v1/foos",
            "/apis/apps/v1/pods",
            "/nonsense",
        ] {
            let info = classify(Method::GET, uri);
            assert!(!info.instrumented, "{uri}");
            assert_eq!(
                info.labels,
                RequestLabels {
                    verb: "GET",
                    component: "apiserver",
                    ..RequestLabels::default()
                },
                "{uri}"
            );
        }
        assert!(!classify(Method::POST, "/version").read_only);
    }

    #[test]
    fn paths_that_do_not_exist_are_route_level_404s() {
        for (group, version, rest) in [
            ("", "v1", "foos"),
            ("", "v1", "pods/p"),
            ("", "v1", "namespaces/default/nodes"),
            ("", "v1", "namespaces/default/pods/p/nonsense"),
            ("", "v1", "namespaces/default/pods/p/status/x"),
            ("", "v1", "namespaces//pods"),
            ("apps", "v1", "pods"),
        ] {
            let err = target(group, version, rest).unwrap_err();
            assert_eq!(err.code.as_u16(), 404, "{rest}");
        }
    }
}
