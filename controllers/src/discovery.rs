//! Which resources the server serves, read from legacy discovery (`/api`, `/apis`) the way
//! client-go's `ServerPreferredResources` does: the preferred version of every group, with
//! its verbs. The namespace controller and the garbage collector act on every served
//! resource, custom resources included, so they ask again on every pass rather than keep a
//! list that a new CustomResourceDefinition would make stale.

use std::collections::BTreeMap;

use kubemock_client::request::RequestBuilder;
use kubemock_client::{ApiResource, Client, ListParams};
use serde::Deserialize;

/// One served resource (preferred version of its group) and its verbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedResource {
    /// Where it is served.
    pub resource: ApiResource,
    /// Its verbs (`list`, `watch`, `delete`, `deletecollection`...).
    pub verbs: Vec<String>,
}

impl ServedResource {
    /// Whether every one of `verbs` is offered.
    pub fn supports(&self, verbs: &[&str]) -> bool {
        verbs
            .iter()
            .all(|v| self.verbs.iter().any(|have| have == v))
    }
}

/// What discovery found: the resources of every group version that answered, and the group
/// versions that failed (client-go's `ErrGroupDiscoveryFailed`).
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// Served resources, core group first, then groups in the server's order.
    pub resources: Vec<ServedResource>,
    /// Group versions whose resource list could not be read, with the error.
    pub failed: BTreeMap<String, String>,
}

impl Discovered {
    /// Resources offering all of `verbs`.
    pub fn supporting<'a>(
        &'a self,
        verbs: &'a [&'a str],
    ) -> impl Iterator<Item = &'a ServedResource> + 'a {
        self.resources.iter().filter(move |r| r.supports(verbs))
    }

    /// The message the namespace controller reports for a partial discovery failure
    /// (client-go's `ErrGroupDiscoveryFailed`), `None` when nothing failed.
    pub fn failure_message(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let groups: Vec<String> = self
            .failed
            .iter()
            .map(|(gv, err)| format!("{gv}: {err}"))
            .collect();
        Some(format!(
            "Discovery failed for some groups, {} failing: unable to retrieve the complete list of server APIs: {}",
            groups.len(),
            groups.join(", ")
        ))
    }
}

/// Failure of discovery as a whole (the group list itself could not be read).
#[derive(Debug, thiserror::Error)]
#[error("discovery of {path} failed")]
pub struct DiscoveryError {
    /// The path that failed.
    pub path: String,
    /// Why.
    #[source]
    pub source: kubemock_client::Error,
}

#[derive(Debug, Deserialize)]
struct ApiVersions {
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct GroupList {
    #[serde(default)]
    groups: Vec<Group>,
}

#[derive(Debug, Deserialize)]
struct Group {
    name: String,
    #[serde(default)]
    versions: Vec<GroupVersion>,
    #[serde(rename = "preferredVersion")]
    preferred_version: Option<GroupVersion>,
}

#[derive(Debug, Deserialize, Clone)]
struct GroupVersion {
    version: String,
}

#[derive(Debug, Deserialize)]
struct ResourceList {
    #[serde(default)]
    resources: Vec<ResourceEntry>,
}

#[derive(Debug, Deserialize)]
struct ResourceEntry {
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(default)]
    verbs: Vec<String>,
}

/// A plain GET of a discovery document.
async fn get<T: serde::de::DeserializeOwned>(
    client: &Client,
    path: &str,
) -> Result<T, DiscoveryError> {
    // A collection GET without parameters is exactly a GET of the path.
    let error = |source| DiscoveryError {
        path: path.to_owned(),
        source,
    };
    let request = RequestBuilder::new(path.to_owned())
        .list(&ListParams::default())
        .map_err(error)?;
    client.request(&request).await.map_err(error)
}

/// Reads the served resources (subresources excluded) of the preferred version of every
/// group. A group version that fails is recorded in [`Discovered::failed`]; only a failure
/// of `/api` or `/apis` fails the whole.
pub async fn preferred_resources(client: &Client) -> Result<Discovered, DiscoveryError> {
    let core: ApiVersions = get(client, "/api").await?;
    let groups: GroupList = get(client, "/apis").await?;
    let mut group_versions: Vec<(String, String)> = Vec::new();
    if let Some(version) = core.versions.first() {
        group_versions.push((String::new(), version.clone()));
    }
    for group in groups.groups {
        let preferred = group
            .preferred_version
            .or_else(|| group.versions.first().cloned());
        if let Some(preferred) = preferred {
            group_versions.push((group.name, preferred.version));
        }
    }
    let mut discovered = Discovered::default();
    for (group, version) in group_versions {
        let api_version = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        match group_version_resources(client, &group, &version).await {
            Ok(resources) => discovered.resources.extend(resources),
            Err(err) => {
                discovered
                    .failed
                    .insert(api_version, err.source.to_string());
            }
        }
    }
    Ok(discovered)
}

/// The resources (subresources excluded) that `/api/{version}` (the core group, `group`
/// empty) or `/apis/{group}/{version}` lists.
pub async fn group_version_resources(
    client: &Client,
    group: &str,
    version: &str,
) -> Result<Vec<ServedResource>, DiscoveryError> {
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let list: ResourceList = get(client, &path).await?;
    Ok(list
        .resources
        .into_iter()
        .filter(|entry| !entry.name.contains('/'))
        .map(|entry| ServedResource {
            resource: ApiResource::new(group, version, &entry.kind, &entry.name, entry.namespaced),
            verbs: entry.verbs,
        })
        .collect())
}
