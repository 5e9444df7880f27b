//! The root CA certificate publisher (kube-controller-manager's
//! `root-ca-certificate-publisher-controller`, upstream
//! `pkg/controller/certificates/rootcacertpublisher/publisher.go`): every namespace holds the
//! ConfigMap `kube-root-ca.crt` with the cluster's CA bundle under `ca.crt`, which every pod's
//! `kube-api-access-*` projected volume mounts. Created when a namespace appears or becomes
//! Active, created again when deleted, and its data and description put back when edited.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kubemock_client::{
    Action, Api, Client, Controller, InformerFactory, ObjectKey, PostParams, SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// The ConfigMap's name in every namespace (`RootCACertConfigMapName`).
pub const CONFIG_MAP: &str = "kube-root-ca.crt";
/// The key of the CA bundle in its data.
pub const CA_KEY: &str = "ca.crt";
/// The annotation describing the ConfigMap (`DescriptionAnnotation`).
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Its value, upstream's words (`Description`).
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Concurrent syncs (kube-controller-manager starts the publisher with one worker).
const WORKERS: usize = 1;

/// What a sync needs.
struct Context {
    client: Client,
    config_maps: Store<ConfigMap>,
    root_ca: String,
}

/// The root CA certificate publisher.
pub struct RootCaPublisher {
    client: Client,
    namespaces: SharedInformer<Namespace>,
    config_maps: SharedInformer<ConfigMap>,
    root_ca: String,
}

impl RootCaPublisher {
    /// A publisher of `root_ca` (PEM) on `factory`'s shared namespace and ConfigMap informers.
    pub fn new(client: Client, factory: &InformerFactory, root_ca: String) -> Self {
        RootCaPublisher {
            client,
            namespaces: factory.informer::<Namespace>(),
            config_maps: factory.informer::<ConfigMap>(),
            root_ca,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client,
            config_maps: self.config_maps.store(),
            root_ca: self.root_ca,
        });
        // Upstream queues a namespace when it is added or updated while Active, and when its
        // ConfigMap is updated or deleted; a sync of a namespace that is not Active is a
        // create the server refuses as terminating, dropped.
        Controller::new("root-ca-cert-publisher", self.namespaces)
            .workers(WORKERS)
            .watches(&self.config_maps, |config_map: &ConfigMap| {
                let meta = &config_map.metadata;
                match (meta.name.as_deref(), meta.namespace.as_deref()) {
                    (Some(CONFIG_MAP), Some(namespace)) => vec![ObjectKey::new(None, namespace)],
                    _ => Vec::new(),
                }
            })
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// Puts the namespace's ConfigMap right (upstream's `syncNamespace`).
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let namespace = key.name;
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let data = [(CA_KEY.to_owned(), ctx.root_ca.clone())].into();
    let cached = ctx
        .config_maps
        .get(&ObjectKey::new(Some(&namespace), CONFIG_MAP));
    let Some(cached) = cached else {
        let mut config_map = ConfigMap::default();
        config_map.metadata.name = Some(CONFIG_MAP.to_owned());
        config_map.metadata.annotations =
            Some([(DESCRIPTION_ANNOTATION.to_owned(), DESCRIPTION.to_owned())].into());
        config_map.data = Some(data);
        return match api.create(&PostParams::default(), &config_map).await {
            Ok(_) => Ok(Action::await_change()),
            // The namespace is gone or going: nothing to publish into.
            Err(err) if err.is_not_found() || err.is_namespace_terminating() => {
                Ok(Action::await_change())
            }
            Err(err) => Err(err.into()),
        };
    };
    let described = cached
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    if cached.data.as_ref() == Some(&data) && described {
        return Ok(Action::await_change());
    }
    let mut config_map = (*cached).clone();
    config_map.data = Some(data);
    config_map
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(DESCRIPTION_ANNOTATION.to_owned(), DESCRIPTION.to_owned());
    // Upstream updates with the cached resourceVersion: a conflict requeues.
    api.replace(CONFIG_MAP, &PostParams::default(), &config_map)
        .await?;
    Ok(Action::await_change())
}
