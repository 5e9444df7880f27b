//! Discovery (docs/api-behaviour.md#discovery): what groups, versions and resources the server has, generated from
//! the registry. `/api` and `/apis` answer aggregated discovery (`apidiscovery.k8s.io/v2`, or
//! v2beta1) when the client's `Accept` asks for it — kubectl 1.32, client-go and kube-rs do,
//! saving one request per group version — and the legacy `APIVersions`/`APIGroupList`
//! otherwise; clients recognise which by the `Content-Type`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::accept;
use crate::registry::{Group, Resource};
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// The aggregated discovery versions served, in the server's preference order.
const AGGREGATED_VERSIONS: [&str; 2] = ["v2", "v2beta1"];

/// The aggregated discovery version the client's `Accept` asks for, negotiated as the real
/// server does (the first range it can answer wins; a plain JSON range first means legacy).
fn aggregated_version(headers: &HeaderMap) -> Option<&'static str> {
    let offered = |version: &str| AGGREGATED_VERSIONS.into_iter().find(|v| *v == version);
    let asked = accept::conversion(headers, |asked| {
        asked.group == "apidiscovery.k8s.io"
            && asked.kind == "APIGroupDiscoveryList"
            && offered(&asked.version).is_some()
    })?;
    offered(&asked.version)
}

fn aggregated_response(version: &str, items: Vec<Value>) -> Response {
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    });
    let content_type =
        format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    let mut response = Json(body).into_response();
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// One group in aggregated form.
fn aggregated_group(state: &AppState, group: &Group) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|version| {
            let resources: Vec<Value> = state
                .registry()
                .resources_in(&group.name, version)
                .iter()
                .map(|r| aggregated_resource(r))
                .collect();
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut metadata = serde_json::Map::new();
    if !group.name.is_empty() {
        metadata.insert("name".to_owned(), json!(group.name));
    }
    metadata.insert("creationTimestamp".to_owned(), Value::Null);
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_resource(r: &Resource) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("resource".to_owned(), json!(r.plural));
    out.insert(
        "responseKind".to_owned(),
        json!({"group": r.group, "version": r.version, "kind": r.kind}),
    );
    out.insert(
        "scope".to_owned(),
        json!(if r.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    out.insert("singularResource".to_owned(), json!(r.singular));
    out.insert("verbs".to_owned(), json!(r.verbs));
    if !r.short_names.is_empty() {
        out.insert("shortNames".to_owned(), json!(r.short_names));
    }
    if !r.categories.is_empty() {
        out.insert("categories".to_owned(), json!(r.categories));
    }
    if !r.subresources.is_empty() {
        let subresources: Vec<Value> = r
            .subresources
            .iter()
            .map(|s| {
                let kind = match &s.response {
                    Some(gvk) => {
                        json!({"group": gvk.group, "version": gvk.version, "kind": gvk.kind})
                    }
                    None => json!({"group": r.group, "version": r.version, "kind": r.kind}),
                };
                json!({"subresource": s.name, "responseKind": kind, "verbs": s.verbs})
            })
            .collect();
        out.insert("subresources".to_owned(), Value::Array(subresources));
    }
    Value::Object(out)
}

/// `GET /api`.
pub(crate) async fn core_versions(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let core = state.registry().group("");
    if let Some(version) = aggregated_version(&headers) {
        let items = core.iter().map(|g| aggregated_group(&state, g)).collect();
        return aggregated_response(version, items);
    }
    let server = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1:6443")
        .to_owned();
    Json(json!({
        "kind": "APIVersions",
        "versions": core.map(|g| g.versions).unwrap_or_default(),
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
    }))
    .into_response()
}

fn legacy_group(group: &Group) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|v| json!({"groupVersion": group_version(&group.name, v), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group.name, "versions": versions, "preferredVersion": preferred})
}

/// `GET /apis`.
pub(crate) async fn groups(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let named: Vec<Group> = state
        .registry()
        .groups()
        .into_iter()
        .filter(|g| !g.name.is_empty())
        .collect();
    if let Some(version) = aggregated_version(&headers) {
        let items = named.iter().map(|g| aggregated_group(&state, g)).collect();
        return aggregated_response(version, items);
    }
    let groups: Vec<Value> = named.iter().map(legacy_group).collect();
    Json(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})).into_response()
}

/// `GET /apis/{group}`.
pub(crate) async fn group(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let group = state
        .registry()
        .group(&name)
        .filter(|g| !g.name.is_empty())
        .ok_or_else(ApiError::route_not_found)?;
    let mut body = legacy_group(&group);
    if let Value::Object(fields) = &mut body {
        let mut out = serde_json::Map::new();
        out.insert("kind".to_owned(), json!("APIGroup"));
        out.insert("apiVersion".to_owned(), json!("v1"));
        out.extend(std::mem::take(fields));
        body = Value::Object(out);
    }
    Ok(Json(body))
}

/// The `APIResourceList` of one group/version.
fn resource_list(state: &AppState, group: &str, version: &str) -> ApiResult<Json<Value>> {
    let resources = state.registry().resources_in(group, version);
    if resources.is_empty() {
        return Err(ApiError::route_not_found());
    }
    let mut entries = Vec::new();
    for r in &resources {
        let mut entry = serde_json::Map::new();
        entry.insert("name".to_owned(), json!(r.plural));
        entry.insert("singularName".to_owned(), json!(r.singular));
        entry.insert("namespaced".to_owned(), json!(r.namespaced));
        entry.insert("kind".to_owned(), json!(r.kind));
        entry.insert("verbs".to_owned(), json!(r.verbs));
        if !r.short_names.is_empty() {
            entry.insert("shortNames".to_owned(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            entry.insert("categories".to_owned(), json!(r.categories));
        }
        entries.push(Value::Object(entry));
        for s in &r.subresources {
            let mut entry = serde_json::Map::new();
            entry.insert("name".to_owned(), json!(format!("{}/{}", r.plural, s.name)));
            entry.insert("singularName".to_owned(), json!(""));
            entry.insert("namespaced".to_owned(), json!(r.namespaced));
            if let Some(gvk) = &s.response
                && gvk.group != r.group
            {
                entry.insert("group".to_owned(), json!(gvk.group));
                entry.insert("version".to_owned(), json!(gvk.version));
            }
            let kind = s.response.as_ref().map_or(&r.kind, |gvk| &gvk.kind);
            entry.insert("kind".to_owned(), json!(kind));
            entry.insert("verbs".to_owned(), json!(s.verbs));
            entries.push(Value::Object(entry));
        }
    }
    Ok(Json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": entries,
    })))
}

/// `GET /api/v1`.
pub(crate) async fn core_resources(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    resource_list(&state, "", "v1")
}

/// `GET /apis/{group}/{version}`.
pub(crate) async fn group_resources(
    State(state): State<AppState>,
    Path((group, version)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    resource_list(&state, &group, &version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn aggregated_discovery_is_negotiated_from_accept() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_version(&accept(kubectl)), Some("v2"));
        let beta = "application/json;as=APIGroupDiscoveryList;v=v2beta1;g=apidiscovery.k8s.io";
        assert_eq!(aggregated_version(&accept(beta)), Some("v2beta1"));
        assert_eq!(aggregated_version(&accept("application/json, */*")), None);
        assert_eq!(aggregated_version(&HeaderMap::new()), None);
        let unknown = "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList";
        assert_eq!(aggregated_version(&accept(unknown)), None);
        let plain_first =
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(
            aggregated_version(&accept(plain_first)),
            None,
            "the first range wins"
        );
    }
}
