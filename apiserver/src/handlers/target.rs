//! Resource URLs (§1.2, §1.4): what a path under `/api/v1` or `/apis/{g}/{v}` names — a
//! resource, optionally a namespace, a name and a subresource — or a route-level 404.

use std::sync::Arc;

use crate::registry::{Registry, Resource};
use crate::status::{ApiError, ApiResult};

/// What a resource path addresses.
#[derive(Debug, Clone)]
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
