//! `Api<K>`: every verb on one resource type, in one namespace or across all, typed for
//! k8s-openapi kinds and untyped for [`DynamicObject`]s. Builds requests with
//! [`crate::request`] and sends them through the [`Client`].

use std::marker::PhantomData;

use futures_util::Stream;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

use crate::error::{Error, Result};
use crate::request::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, Request, RequestBuilder, WatchParams,
};
use crate::resource::{ApiResource, DynamicObject, ObjectList, Resource, TypedResource};
use crate::transport::{Client, WatchEvent};

/// Page size of [`Api::list_all`] and of the reflector's lists (client-go's pager and kube-rs
/// both use 500).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// The answer of a delete: the object when its deletion is pending (finalizers, grace period;
/// also pods and a few kinds deleted at once, docs/api-behaviour.md#delete-responses), else the server's `Status`.
#[derive(Debug, Clone)]
pub enum Deleted<K> {
    /// The object, possibly with a `deletionTimestamp`.
    Object(K),
    /// A success `Status`: the object is gone.
    Status(Box<Status>),
}

/// Access to one resource type, in one namespace or cluster-wide.
///
/// ```no_run
/// # async fn demo() -> kubemock_client::Result<()> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubemock_client::{Api, Client, ListParams};
/// let client = Client::try_default()?;
/// let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
/// for cm in configmaps.list(&ListParams::default()).await?.items {
///     println!("{:?}", cm.metadata.name);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Api<K> {
    client: Client,
    resource: ApiResource,
    namespace: Option<String>,
    requests: RequestBuilder,
    _kind: PhantomData<fn() -> K>,
}

impl<K: TypedResource> Api<K> {
    /// Objects of a namespaced kind in `namespace`.
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Self::namespaced_with(client, namespace, &K::api_resource())
    }

    /// Objects of a kind across all namespaces (or a cluster-scoped kind).
    pub fn all(client: Client) -> Self {
        Self::all_with(client, &K::api_resource())
    }

    /// Objects in the client's default namespace.
    pub fn default_namespaced(client: Client) -> Self {
        let namespace = client.default_namespace().to_owned();
        Self::namespaced(client, &namespace)
    }
}

impl<K: Resource> Api<K> {
    /// Objects of `resource` in `namespace` (for cluster-scoped resources the namespace is
    /// ignored).
    pub fn namespaced_with(client: Client, namespace: &str, resource: &ApiResource) -> Self {
        let namespace = resource.namespaced.then(|| namespace.to_owned());
        Self::build(client, resource, namespace)
    }

    /// Objects of `resource` across all namespaces.
    pub fn all_with(client: Client, resource: &ApiResource) -> Self {
        Self::build(client, resource, None)
    }

    /// Lists and watches return each object's metadata alone, as `PartialObjectMetadata`
    /// (client-go's metadata client, `k8s.io/client-go/metadata`): for readers of nothing
    /// else, such as a metadata-only informer ([`crate::InformerFactory::metadata`]). The
    /// other verbs are unchanged.
    #[must_use]
    pub fn metadata_only(mut self) -> Self {
        self.requests = self.requests.metadata_only();
        self
    }

    fn build(client: Client, resource: &ApiResource, namespace: Option<String>) -> Self {
        let requests = RequestBuilder::new(resource.collection_path(namespace.as_deref()));
        Api {
            client,
            resource: resource.clone(),
            namespace,
            requests,
            _kind: PhantomData,
        }
    }

    /// The resource this addresses.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace, when scoped to one.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn check_item_scope(&self) -> Result<()> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidRequest(format!(
                "{} are namespaced: use an Api scoped to a namespace for single objects",
                self.resource.plural
            )));
        }
        Ok(())
    }

    /// Reads an object.
    pub async fn get(&self, name: &str) -> Result<K> {
        self.check_item_scope()?;
        self.client.request(&self.requests.get(name, None)?).await
    }

    /// Reads an object, `None` when it does not exist.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>> {
        match self.get(name).await {
            Ok(obj) => Ok(Some(obj)),
            Err(err) if err.is_not_found() => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Lists one page (or everything without a limit).
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let mut list: ObjectList<K> = self.client.request(&self.requests.list(params)?).await?;
        for item in &mut list.items {
            item.fill_type(&self.resource);
        }
        Ok(list)
    }

    /// Lists everything, following `continue` tokens page by page (pages of
    /// [`DEFAULT_PAGE_SIZE`] unless `params` sets a limit). All pages come from the first
    /// page's snapshot; the result's resourceVersion is that snapshot's (docs/api-behaviour.md#pagination).
    pub async fn list_all(&self, params: &ListParams) -> Result<ObjectList<K>> {
        let mut params = params.clone();
        params.limit = Some(params.limit.unwrap_or(DEFAULT_PAGE_SIZE));
        let mut first = self.list(&params).await?;
        while let Some(token) = first.metadata.continue_.take().filter(|t| !t.is_empty()) {
            params.continue_token = Some(token);
            let page = self.list(&params).await?;
            first.items.extend(page.items);
            first.metadata.continue_ = page.metadata.continue_;
        }
        first.metadata.remaining_item_count = None;
        Ok(first)
    }

    /// Creates an object.
    pub async fn create(&self, params: &PostParams, object: &K) -> Result<K> {
        self.client
            .request(&self.create_request(params, object)?)
            .await
    }

    /// Creates an object and reads only its name from the server's answer (the name
    /// `generateName` made): for writers that need nothing else of it, as the ReplicaSet
    /// controller and the event recorder. Skipping the rest saves decoding the whole object
    /// (the event recorder's answers were 2.2 % of the server process's CPU in the 10,000-pod
    /// benchmark). Errors are reported as by [`Api::create`].
    pub async fn create_named(&self, params: &PostParams, object: &K) -> Result<String> {
        #[derive(serde::Deserialize)]
        struct Named {
            metadata: NamedMeta,
        }
        /// An answer without a name fails to decode (`Error::Decode`) rather than naming
        /// nothing: a created object always has one.
        #[derive(serde::Deserialize)]
        struct NamedMeta {
            name: String,
        }
        let named: Named = self
            .client
            .request(&self.create_request(params, object)?)
            .await?;
        Ok(named.metadata.name)
    }

    fn create_request(&self, params: &PostParams, object: &K) -> Result<Request> {
        if self.resource.namespaced && self.namespace.is_none() {
            return Err(Error::InvalidRequest(
                "create of a namespaced object needs a namespaced Api".into(),
            ));
        }
        let body = serde_json::to_vec(object).map_err(Error::Encode)?;
        Ok(self.requests.create(params, body))
    }

    /// Replaces an object (PUT); its `metadata.resourceVersion`, when set, makes the write
    /// conditional (a 409 Conflict if it changed, docs/api-behaviour.md#update-and-conflicts).
    pub async fn replace(&self, name: &str, params: &PostParams, object: &K) -> Result<K> {
        self.replace_sub(name, None, params, object).await
    }

    /// Replaces the status of an object (PUT `/status`, docs/api-behaviour.md#status-subresource).
    pub async fn replace_status(&self, name: &str, params: &PostParams, object: &K) -> Result<K> {
        self.replace_sub(name, Some("status"), params, object).await
    }

    /// [`Api::replace_status`] without decoding the server's answer: for writers that never
    /// read it (the simulated kubelet's pod status writes, about 2.5 % of the server process's
    /// CPU in the 10,000-pod benchmark). Errors are reported as by [`Api::replace_status`].
    pub async fn replace_status_unread(
        &self,
        name: &str,
        params: &PostParams,
        object: &K,
    ) -> Result<()> {
        self.client
            .request_bytes(&self.replace_request(name, Some("status"), params, object)?)
            .await
            .map(drop)
    }

    async fn replace_sub<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        name: &str,
        sub: Option<&str>,
        params: &PostParams,
        object: &T,
    ) -> Result<T> {
        self.client
            .request(&self.replace_request(name, sub, params, object)?)
            .await
    }

    fn replace_request<T: serde::Serialize>(
        &self,
        name: &str,
        sub: Option<&str>,
        params: &PostParams,
        object: &T,
    ) -> Result<Request> {
        self.check_item_scope()?;
        let body = serde_json::to_vec(object).map_err(Error::Encode)?;
        self.requests.replace(name, sub, params, body)
    }

    /// Patches an object.
    pub async fn patch(&self, name: &str, params: &PatchParams, patch: &Patch) -> Result<K> {
        self.check_item_scope()?;
        self.client
            .request(&self.requests.patch(name, None, params, patch)?)
            .await
    }

    /// Patches the status of an object.
    pub async fn patch_status(&self, name: &str, params: &PatchParams, patch: &Patch) -> Result<K> {
        self.check_item_scope()?;
        self.client
            .request(&self.requests.patch(name, Some("status"), params, patch)?)
            .await
    }

    /// Reads the status of an object (GET `/status`).
    pub async fn get_status(&self, name: &str) -> Result<K> {
        self.check_item_scope()?;
        self.client
            .request(&self.requests.get(name, Some("status"))?)
            .await
    }

    /// Reads the scale of an object (docs/api-behaviour.md#scale-subresource).
    pub async fn get_scale(&self, name: &str) -> Result<Scale> {
        self.check_item_scope()?;
        self.client
            .request(&self.requests.get(name, Some("scale"))?)
            .await
    }

    /// Replaces the scale of an object.
    pub async fn replace_scale(
        &self,
        name: &str,
        params: &PostParams,
        scale: &Scale,
    ) -> Result<Scale> {
        self.replace_sub(name, Some("scale"), params, scale).await
    }

    /// Patches the scale of an object.
    pub async fn patch_scale(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch,
    ) -> Result<Scale> {
        self.check_item_scope()?;
        self.client
            .request(&self.requests.patch(name, Some("scale"), params, patch)?)
            .await
    }

    /// Deletes an object.
    pub async fn delete(&self, name: &str, params: &DeleteParams) -> Result<Deleted<K>> {
        self.check_item_scope()?;
        let bytes = self
            .client
            .request_bytes(&self.requests.delete(name, params)?)
            .await?;
        decode_deleted(&bytes)
    }

    /// Deletes every object matching `list`'s selectors; the answer is the list of deleted
    /// objects, or a Status.
    pub async fn delete_collection(
        &self,
        params: &DeleteParams,
        list: &ListParams,
    ) -> Result<Deleted<ObjectList<K>>> {
        let bytes = self
            .client
            .request_bytes(&self.requests.delete_collection(params, list)?)
            .await?;
        decode_deleted(&bytes)
    }

    /// Watches from `resource_version` (`""`: from now with synthetic ADDED events for what
    /// exists, docs/api-behaviour.md#watch-starting-point). The stream ends when the server ends the watch.
    pub async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>>> + Send + use<K>> {
        self.client
            .request_events(&self.requests.watch(params, resource_version)?)
            .await
    }
}

impl Api<DynamicObject> {
    /// Untyped access to `resource` in `namespace` (`None`: all namespaces or cluster-scoped).
    pub fn dynamic(client: Client, resource: &ApiResource, namespace: Option<&str>) -> Self {
        match namespace {
            Some(ns) => Self::namespaced_with(client, ns, resource),
            None => Self::all_with(client, resource),
        }
    }
}

fn decode_deleted<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<Deleted<T>> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(default)]
        kind: String,
    }
    let kind: Kind = serde_json::from_slice(bytes).map_err(Error::Decode)?;
    if kind.kind == "Status" {
        Ok(Deleted::Status(Box::new(
            serde_json::from_slice(bytes).map_err(Error::Decode)?,
        )))
    } else {
        Ok(Deleted::Object(
            serde_json::from_slice(bytes).map_err(Error::Decode)?,
        ))
    }
}
