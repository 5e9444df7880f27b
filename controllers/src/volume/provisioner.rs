//! kubemock's simulated dynamic provisioner, `kubemock.dev/hostpath`, and the cluster's default
//! StorageClass `standard` that names it, as kind ships `rancher.io/local-path` (hostPath
//! volumes, `WaitForFirstConsumer`, reclaim `Delete`). It acts as an external provisioner
//! built on `sig-storage-lib-external-provisioner` does (`controller/controller.go`): a claim
//! the binder annotated with this provisioner (and, for a `WaitForFirstConsumer` class, given
//! a node by the scheduler) gets a volume `pvc-<claim uid>` of its size, access modes and
//! mode, pre-bound to it (the binder completes the binding), with `Provisioning` and
//! `ProvisioningSucceeded` events; a volume it provisioned that is `Released` under reclaim
//! policy `Delete` is deleted. Volumes of a node-bound claim carry that node's affinity, so
//! their pods return to it. Nothing is written to any disk: the hostPath is a name.

use crate::clock::Clock;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, DeleteParams, InformerFactory, ObjectKey,
    PostParams, SharedInformer, Store,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{
    ANN_BETA_STORAGE_PROVISIONER, ANN_PROVISIONED_BY, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER, annotation, claim_class, claim_volume_name, reference_to,
    volume_phase,
};
use crate::error::Result;

/// The provisioner's name, as StorageClasses name it.
pub const PROVISIONER: &str = "kubemock.dev/hostpath";
/// The default StorageClass's name (kind's).
pub const DEFAULT_CLASS: &str = "standard";
/// Where the simulated volumes "live" on their node (a name only).
const VOLUME_ROOT: &str = "/var/lib/kubemock/volumes";
/// Concurrent syncs.
const WORKERS: usize = 2;
/// The label a node's affinity term selects it by.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The default StorageClass: `standard`, marked default, this provisioner, reclaim `Delete`,
/// `WaitForFirstConsumer`.
pub fn default_class() -> StorageClass {
    serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_CLASS,
            "annotations": {kubemock_apimachinery::volume::DEFAULT_CLASS_ANNOTATIONS[0]: "true"},
            "labels": {"app.kubernetes.io/managed-by": "kubemock"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": WAIT_FOR_FIRST_CONSUMER,
    }))
    .expect("the default class is a valid StorageClass")
}

/// Creates the default StorageClass with `client` unless one of that name exists (an existing
/// one, perhaps changed by a test on purpose, is left alone).
pub async fn ensure_default_class(client: &Client) -> kubemock_client::Result<()> {
    let classes: Api<StorageClass> = Api::all(client.clone());
    match classes
        .create(&PostParams::default(), &default_class())
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.is_already_exists() => Ok(()),
        Err(err) => Err(err),
    }
}

/// What a sync needs.
struct Context {
    client: Client,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
    nodes: Store<Node>,
    recorder: Recorder,
}

/// The simulated provisioner.
pub struct Provisioner {
    client: Client,
    claims: SharedInformer<PersistentVolumeClaim>,
    volumes: SharedInformer<PersistentVolume>,
    classes: SharedInformer<StorageClass>,
    nodes: SharedInformer<Node>,
    /// Where event timestamps come from (the system clock unless set).
    clock: Clock,
}

impl Provisioner {
    /// A provisioner on `factory`'s shared informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        Provisioner {
            client,
            claims: factory.informer(),
            volumes: factory.informer(),
            classes: factory.informer(),
            nodes: factory.informer(),
            clock: Clock::system(),
        }
    }

    /// Reads the time from `clock` (the server's virtual clock in tests and with
    /// `--virtual-clock`).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Creates the default class (a refusal is logged: in the secure mode kubemock's
    /// administrator creates it), then provisions and deletes volumes until `token` is
    /// cancelled.
    pub async fn run(self, token: CancellationToken) {
        match ensure_default_class(&self.client).await {
            Ok(()) => {}
            // The secure mode's ServiceAccount may not; kubemock's administrator did.
            Err(err) if err.is_forbidden() => {
                tracing::debug!(error = %err, class = DEFAULT_CLASS, "default StorageClass left to the administrator");
            }
            Err(err) => {
                tracing::warn!(error = %err, class = DEFAULT_CLASS, "default StorageClass not created");
            }
        }
        let ctx = Arc::new(Context {
            recorder: Recorder::new(self.client.clone(), PROVISIONER)
                .with_clock(self.clock.clone()),
            client: self.client,
            claims: self.claims.store(),
            volumes: self.volumes.store(),
            classes: self.classes.store(),
            nodes: self.nodes.store(),
        });
        let claims = Controller::new("storage-provisioner-claims", self.claims.clone())
            .workers(WORKERS)
            .watches(&self.classes, {
                let claims = self.claims.store();
                move |_: &StorageClass| {
                    claims
                        .list()
                        .iter()
                        .filter(|c| claim_volume_name(c).is_empty())
                        .map(|c| kubemock_client::Resource::key(c.as_ref()))
                        .collect()
                }
            });
        let volumes =
            Controller::new("storage-provisioner-volumes", self.volumes.clone()).workers(WORKERS);
        let claim_ctx = ctx.clone();
        tokio::join!(
            claims.run(
                move |key| sync_claim(key, claim_ctx.clone()),
                crate::error::error_policy,
                token.clone(),
            ),
            volumes.run(
                move |key| sync_volume(key, ctx.clone()),
                crate::error::error_policy,
                token,
            ),
        );
    }
}

/// `shouldProvision` then `provisionClaimOperation`.
async fn sync_claim(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(claim) = ctx.claims.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let ours = [ANN_STORAGE_PROVISIONER, ANN_BETA_STORAGE_PROVISIONER]
        .iter()
        .any(|a| annotation(&claim.metadata, a) == Some(PROVISIONER));
    if !ours || !claim_volume_name(&claim).is_empty() || claim.metadata.deletion_timestamp.is_some()
    {
        return Ok(Action::AwaitChange);
    }
    let class_name = claim_class(&claim);
    let Some(class) = ctx
        .classes
        .get(&ObjectKey::new(None, class_name))
        .filter(|c| c.provisioner == PROVISIONER)
    else {
        return Ok(Action::AwaitChange);
    };
    let selected = annotation(&claim.metadata, ANN_SELECTED_NODE);
    let waits = class.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER);
    if waits && selected.is_none() {
        return Ok(Action::AwaitChange);
    }
    let uid = claim.metadata.uid.clone().unwrap_or_default();
    let volume_name = format!("pvc-{uid}");
    if ctx
        .volumes
        .get(&ObjectKey::new(None, &volume_name))
        .is_some()
    {
        return Ok(Action::AwaitChange);
    }
    let namespace = key.namespace.clone().unwrap_or_default();
    let reference = object_reference(claim.as_ref(), &ApiResource::of::<PersistentVolumeClaim>());
    ctx.recorder
        .publish(
            &reference,
            EventType::Normal,
            "Provisioning",
            &format!(
                "External provisioner is provisioning volume for claim \"{namespace}/{}\"",
                key.name
            ),
        )
        .await;
    let volume = provisioned_volume(&claim, &class, &volume_name, selected, &ctx.nodes);
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match api.create(&PostParams::default(), &volume).await {
        Ok(_) => {}
        Err(err) if err.is_already_exists() => return Ok(Action::AwaitChange),
        Err(err) => {
            let message =
                format!("failed to provision volume with StorageClass \"{class_name}\": {err}");
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Warning,
                    "ProvisioningFailed",
                    &message,
                )
                .await;
            return Err(err.into());
        }
    }
    ctx.recorder
        .publish(
            &reference,
            EventType::Normal,
            "ProvisioningSucceeded",
            &format!("Successfully provisioned volume {volume_name}"),
        )
        .await;
    Ok(Action::AwaitChange)
}

/// The volume for `claim`: its size, access modes and mode, the class's reclaim policy and
/// mount options, pre-bound to the claim, pinned to the selected node when there is one.
fn provisioned_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    name: &str,
    selected_node: Option<&str>,
    nodes: &Store<Node>,
) -> PersistentVolume {
    let spec = claim.spec.clone().unwrap_or_default();
    let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
    let claim_name = claim.metadata.name.as_deref().unwrap_or("");
    let node_affinity = selected_node.map(|node| {
        // The node's hostname label, as local-path pins its volumes (the node's name when it
        // has none).
        let hostname = nodes
            .get(&ObjectKey::new(None, node))
            .and_then(|n| n.metadata.labels.as_ref()?.get(HOSTNAME_LABEL).cloned())
            .unwrap_or_else(|| node.to_owned());
        VolumeNodeAffinity {
            required: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: HOSTNAME_LABEL.to_owned(),
                        operator: "In".to_owned(),
                        values: Some(vec![hostname]),
                    }]),
                    match_fields: None,
                }],
            }),
        }
    });
    let mut volume = PersistentVolume::default();
    volume.metadata.name = Some(name.to_owned());
    volume.metadata.annotations =
        Some([(ANN_PROVISIONED_BY.to_owned(), PROVISIONER.to_owned())].into());
    volume.spec = Some(PersistentVolumeSpec {
        access_modes: spec.access_modes.clone(),
        capacity: spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.clone())
            .map(|requests| {
                requests
                    .into_iter()
                    .filter(|(resource, _)| resource == "storage")
                    .collect()
            }),
        claim_ref: Some(reference_to(claim)),
        host_path: Some(HostPathVolumeSource {
            path: format!("{VOLUME_ROOT}/{name}_{namespace}_{claim_name}"),
            type_: Some("DirectoryOrCreate".to_owned()),
        }),
        mount_options: class.mount_options.clone(),
        node_affinity,
        persistent_volume_reclaim_policy: Some(
            class
                .reclaim_policy
                .clone()
                .unwrap_or_else(|| "Delete".to_owned()),
        ),
        storage_class_name: class.metadata.name.clone(),
        volume_mode: spec.volume_mode.clone(),
        ..PersistentVolumeSpec::default()
    });
    volume
}

/// `shouldDelete` then `deleteVolumeOperation`: a Released volume of ours under `Delete`.
async fn sync_volume(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(volume) = ctx.volumes.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let ours = annotation(&volume.metadata, ANN_PROVISIONED_BY) == Some(PROVISIONER);
    let policy = volume
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref());
    if !ours
        || volume_phase(&volume) != "Released"
        || policy != Some("Delete")
        || volume.metadata.deletion_timestamp.is_some()
    {
        return Ok(Action::AwaitChange);
    }
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match api.delete(&key.name, &DeleteParams::default()).await {
        Ok(_) => Ok(Action::AwaitChange),
        Err(err) if err.is_not_found() => Ok(Action::AwaitChange),
        Err(err) => Err(err.into()),
    }
}
