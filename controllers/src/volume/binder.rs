//! The PersistentVolume binder (kube-controller-manager's `persistentvolume-binder-controller`,
//! upstream `pkg/controller/volume/persistentvolume/pv_controller.go`): binds each claim to a
//! volume and keeps both phases. A claim is bound to the volume already meant for it, or the
//! smallest fitting Available one; without one, a claim with a class is handed to that class's
//! provisioner (the `volume.kubernetes.io/storage-provisioner` annotation and an
//! `ExternalProvisioning` event: every provisioner is external here), one without a class
//! gets the default class retroactively, and a `WaitForFirstConsumer` claim waits until the
//! scheduler names a node. A volume whose claim is gone is `Released` and reclaimed by its
//! policy: `Retain` keeps it, `Delete` leaves it to its provisioner (a volume nobody
//! provisioned fails, as upstream's with no deleter plugin does), `Recycle` fails with a
//! message (not simulated).
//!
//! Like upstream, a binding writes the volume (claimRef), its phase, the claim (volumeName,
//! `pv.kubernetes.io/bind-completed`), then its status, each from the answer of the last, and
//! a failed step is finished by the next sync.

use crate::clock::Clock;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus, PersistentVolumeStatus,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource,
    SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use super::{
    ANN_BETA_STORAGE_CLASS, ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER, ANN_PROVISIONED_BY, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER,
    annotation, claim_class, claim_phase, claim_ref, claim_volume_name, find_matching_volume,
    is_delay_binding, is_volume_bound_to_claim, pod_claim_names, reference_to, set_annotation,
    volume_phase,
};
use crate::error::Result;

/// The name events carry as their source (upstream's recorder component).
pub const COMPONENT: &str = "persistentvolume-controller";
/// Concurrent syncs of each queue (upstream runs one claim worker and one volume worker).
const WORKERS: usize = 1;

/// What a sync needs.
struct Context {
    client: Client,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
    pods: Store<k8s_openapi::api::core::v1::Pod>,
    recorder: Recorder,
}

impl Context {
    async fn claim_event(
        &self,
        claim: &PersistentVolumeClaim,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        let reference = object_reference(claim, &ApiResource::of::<PersistentVolumeClaim>());
        self.recorder
            .publish(&reference, kind, reason, message)
            .await;
    }

    async fn volume_event(
        &self,
        volume: &PersistentVolume,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        let reference = object_reference(volume, &ApiResource::of::<PersistentVolume>());
        self.recorder
            .publish(&reference, kind, reason, message)
            .await;
    }
}

/// The PersistentVolume binder.
pub struct VolumeBinder {
    client: Client,
    claims: SharedInformer<PersistentVolumeClaim>,
    volumes: SharedInformer<PersistentVolume>,
    classes: SharedInformer<StorageClass>,
    pods: SharedInformer<k8s_openapi::api::core::v1::Pod>,
    /// Where event timestamps come from (the system clock unless set).
    clock: Clock,
}

impl VolumeBinder {
    /// A binder on `factory`'s shared informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        VolumeBinder {
            client,
            claims: factory.informer(),
            volumes: factory.informer(),
            classes: factory.informer(),
            pods: factory.informer(),
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

    /// Runs until `token` is cancelled: one queue of claims, one of volumes.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            recorder: Recorder::new(self.client.clone(), COMPONENT).with_clock(self.clock.clone()),
            client: self.client,
            claims: self.claims.store(),
            volumes: self.volumes.store(),
            classes: self.classes.store(),
            pods: self.pods.store(),
        });
        let claims_store = self.claims.store();
        // A volume that changes may satisfy a waiting claim, or be the one a claim names.
        let claims = Controller::new("persistentvolume-binder-claims", self.claims.clone())
            .workers(WORKERS)
            .watches(
                &self.volumes,
                move |volume: &PersistentVolume| match claim_ref(volume) {
                    Some(reference) => vec![ObjectKey::new(
                        reference.namespace.as_deref(),
                        reference.name.as_deref().unwrap_or(""),
                    )],
                    None => claims_store
                        .list()
                        .iter()
                        .filter(|c| claim_volume_name(c).is_empty())
                        .map(|c| c.key())
                        .collect(),
                },
            )
            .watches(&self.classes, {
                let claims = self.claims.store();
                move |_: &StorageClass| {
                    claims
                        .list()
                        .iter()
                        .filter(|c| claim_phase(c) != "Bound")
                        .map(|c| c.key())
                        .collect()
                }
            });
        let volumes_store = self.volumes.store();
        // A claim that changes or goes may change what its volume is.
        let volumes = Controller::new("persistentvolume-binder-volumes", self.volumes.clone())
            .workers(WORKERS)
            .watches(&self.claims, move |claim: &PersistentVolumeClaim| {
                volumes_store
                    .list()
                    .iter()
                    .filter(|v| {
                        claim_ref(v).is_some_and(|r| {
                            r.name == claim.metadata.name && r.namespace == claim.metadata.namespace
                        })
                    })
                    .map(|v| v.key())
                    .collect()
            });
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

/// `syncClaim`.
async fn sync_claim(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(claim) = ctx.claims.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    if annotation(&claim.metadata, ANN_BIND_COMPLETED).is_none() {
        sync_unbound_claim(&claim, &ctx).await?;
    } else {
        sync_bound_claim(&claim, &ctx).await?;
    }
    Ok(Action::AwaitChange)
}

/// `syncUnboundClaim`.
async fn sync_unbound_claim(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<()> {
    let volume_name = claim_volume_name(claim);
    if volume_name.is_empty() {
        let classes = ctx.classes.list();
        let delay = is_delay_binding(claim, &classes);
        let volumes = ctx.volumes.list();
        if let Some(volume) = find_matching_volume(claim, &volumes, None, delay) {
            return bind(volume, claim, ctx).await;
        }
        if assign_default_class(claim, &classes, ctx).await? {
            return Ok(());
        }
        let class = claim_class(claim);
        if delay && annotation(&claim.metadata, ANN_SELECTED_NODE).is_none() {
            wait_for_first_consumer_event(claim, ctx).await;
        } else if !class.is_empty() {
            return provision(claim, &classes, ctx).await;
        } else {
            ctx.claim_event(
                claim,
                EventType::Normal,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
            .await;
        }
        return update_claim_status(claim, "Pending", None, ctx)
            .await
            .map(drop);
    }
    let Some(volume) = ctx.volumes.get(&ObjectKey::new(None, volume_name)) else {
        // The volume asked for does not exist (yet).
        return update_claim_status(claim, "Pending", None, ctx)
            .await
            .map(drop);
    };
    if claim_ref(&volume).is_none() {
        if let Err(why) = volume_satisfies_claim(&volume, claim) {
            let message = format!("Cannot bind to requested volume \"{volume_name}\": {why}");
            ctx.claim_event(claim, EventType::Warning, "VolumeMismatch", &message)
                .await;
            return update_claim_status(claim, "Pending", None, ctx)
                .await
                .map(drop);
        }
        return bind(&volume, claim, ctx).await;
    }
    if is_volume_bound_to_claim(&volume, claim) {
        return bind(&volume, claim, ctx).await;
    }
    let message = format!("volume \"{volume_name}\" already bound to a different claim.");
    ctx.claim_event(claim, EventType::Warning, "FailedBinding", &message)
        .await;
    update_claim_status(claim, "Pending", None, ctx)
        .await
        .map(drop)
}

/// `syncBoundClaim`: a claim bound before stays bound to its volume, or is `Lost`.
async fn sync_bound_claim(claim: &PersistentVolumeClaim, ctx: &Context) -> Result<()> {
    let volume_name = claim_volume_name(claim);
    let lost = |message: &'static str, reason: &'static str| (message, reason);
    let outcome = if volume_name.is_empty() {
        Some(lost(
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            "ClaimLost",
        ))
    } else {
        match ctx.volumes.get(&ObjectKey::new(None, volume_name)) {
            None => Some(lost(
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                "ClaimLost",
            )),
            Some(volume) => {
                let same = claim_ref(&volume)
                    .is_none_or(|r| r.uid.is_some() && r.uid == claim.metadata.uid);
                if same {
                    return bind(&volume, claim, ctx).await;
                }
                Some(lost(
                    "Two claims are bound to the same volume, this one is bound incorrectly",
                    "ClaimMisbound",
                ))
            }
        }
    };
    if let Some((message, reason)) = outcome
        && claim_phase(claim) != "Lost"
    {
        update_claim_status(claim, "Lost", None, ctx).await?;
        ctx.claim_event(claim, EventType::Warning, reason, message)
            .await;
    }
    Ok(())
}

/// Why `volume` cannot serve `claim`, which asked for it by name (`checkVolumeSatisfyClaim`).
fn volume_satisfies_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> std::result::Result<(), String> {
    let requested = super::requested_storage(claim);
    let size = super::volume_storage(volume);
    if let (Some(requested), Some(size)) = (&requested, &size)
        && size < requested
    {
        return Err("requested PV is too small".to_owned());
    }
    if super::volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".to_owned());
    }
    if super::volume_mode_mismatch(claim, volume) {
        return Err("incompatible volumeMode".to_owned());
    }
    if !super::access_modes_fit(claim, volume) {
        return Err("incompatible accessMode".to_owned());
    }
    Ok(())
}

/// `assignDefaultStorageClass` (RetroactiveDefaultStorageClass): a claim with no class at all
/// (not even `""`) gets the default class, once there is one. Whether it was updated.
async fn assign_default_class(
    claim: &PersistentVolumeClaim,
    classes: &[Arc<StorageClass>],
    ctx: &Context,
) -> Result<bool> {
    let unset = annotation(&claim.metadata, ANN_BETA_STORAGE_CLASS).is_none()
        && claim
            .spec
            .as_ref()
            .is_none_or(|s| s.storage_class_name.is_none());
    if !unset {
        return Ok(false);
    }
    let values: Vec<serde_json::Value> = classes
        .iter()
        .filter_map(|c| serde_json::to_value(c.as_ref()).ok())
        .collect();
    let Some(default) = kubemock_apimachinery::volume::default_class_name(&values) else {
        return Ok(false);
    };
    let mut updated = claim.clone();
    updated
        .spec
        .get_or_insert_with(Default::default)
        .storage_class_name = Some(default);
    let api = claims_api(ctx, claim);
    match api
        .replace(&name_of(claim), &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(true),
        Err(err) if err.is_not_found() => Ok(true),
        Err(err) => Err(err.into()),
    }
}

/// `emitEventForUnboundDelayBindingClaim`.
async fn wait_for_first_consumer_event(claim: &PersistentVolumeClaim, ctx: &Context) {
    let name = claim.metadata.name.as_deref().unwrap_or("");
    let mut waiting: Vec<String> = ctx
        .pods
        .list()
        .iter()
        .filter(|p| p.metadata.namespace == claim.metadata.namespace)
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_none_or(str::is_empty)
        })
        .filter(|p| pod_claim_names(p).iter().any(|c| c == name))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    waiting.sort();
    let (reason, message) = match waiting.as_slice() {
        [] => (
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding".to_owned(),
        ),
        [one] => (
            "WaitForPodScheduled",
            format!("waiting for pod {one} to be scheduled"),
        ),
        many => (
            "WaitForPodScheduled",
            format!("waiting for pods {} to be scheduled", many.join(",")),
        ),
    };
    ctx.claim_event(claim, EventType::Normal, reason, &message)
        .await;
}

/// `provisionClaim` for an external provisioner: the claim is annotated with the class's
/// provisioner, which does the rest.
async fn provision(
    claim: &PersistentVolumeClaim,
    classes: &[Arc<StorageClass>],
    ctx: &Context,
) -> Result<()> {
    let class_name = claim_class(claim);
    let Some(class) = classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(class_name))
    else {
        let message = format!("storageclass.storage.k8s.io \"{class_name}\" not found");
        ctx.claim_event(claim, EventType::Warning, "ProvisioningFailed", &message)
            .await;
        return Ok(());
    };
    let provisioner = class.provisioner.clone();
    let mut updated = claim.clone();
    let changed = set_annotation(&mut updated.metadata, ANN_STORAGE_PROVISIONER, &provisioner)
        | set_annotation(
            &mut updated.metadata,
            ANN_BETA_STORAGE_PROVISIONER,
            &provisioner,
        );
    let claim = if changed {
        let api = claims_api(ctx, claim);
        match api
            .replace(&name_of(claim), &PostParams::default(), &updated)
            .await
        {
            Ok(claim) => claim,
            Err(err) if err.is_not_found() => return Ok(()),
            Err(err) => {
                let message = format!("Error saving claim: {err}");
                ctx.claim_event(claim, EventType::Warning, "ProvisioningFailed", &message)
                    .await;
                return Err(err.into());
            }
        }
    } else {
        claim.clone()
    };
    let message = format!(
        "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
    );
    ctx.claim_event(&claim, EventType::Normal, "ExternalProvisioning", &message)
        .await;
    Ok(())
}

/// `bind`: the volume's claimRef, its phase, the claim's volumeName and annotations, its
/// status, in that order.
async fn bind(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
    ctx: &Context,
) -> Result<()> {
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    let volume_name = name_of(volume);
    // `GetBindVolumeToClaim`.
    let mut updated = volume.clone();
    let mut dirty = false;
    let reference = claim_ref(volume);
    let same = reference.is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    if !same {
        if !is_volume_bound_to_claim(volume, claim) {
            set_annotation(&mut updated.metadata, ANN_BOUND_BY_CONTROLLER, "yes");
        }
        updated.spec.get_or_insert_with(Default::default).claim_ref = Some(reference_to(claim));
        dirty = true;
    }
    let volume = if dirty {
        match volumes
            .replace(&volume_name, &PostParams::default(), &updated)
            .await
        {
            Ok(volume) => volume,
            Err(err) if err.is_not_found() => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    } else {
        volume.clone()
    };
    let volume = update_volume_phase(&volume, "Bound", ctx).await?;

    // `bindClaimToVolume`.
    let mut updated = claim.clone();
    let mut dirty = false;
    if claim_volume_name(claim) != volume_name {
        updated
            .spec
            .get_or_insert_with(Default::default)
            .volume_name = Some(volume_name.clone());
        set_annotation(&mut updated.metadata, ANN_BOUND_BY_CONTROLLER, "yes");
        dirty = true;
    }
    dirty |= set_annotation(&mut updated.metadata, ANN_BIND_COMPLETED, "yes");
    let claim = if dirty {
        match claims_api(ctx, claim)
            .replace(&name_of(claim), &PostParams::default(), &updated)
            .await
        {
            Ok(claim) => claim,
            Err(err) if err.is_not_found() => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    } else {
        claim.clone()
    };
    update_claim_status(&claim, "Bound", Some(&volume), ctx).await?;
    Ok(())
}

/// `updateClaimStatus`: the phase, and with a volume its access modes and (when becoming
/// bound) its capacity; without one, neither.
async fn update_claim_status(
    claim: &PersistentVolumeClaim,
    phase: &str,
    volume: Option<&PersistentVolume>,
    ctx: &Context,
) -> Result<PersistentVolumeClaim> {
    let mut updated = claim.clone();
    let status = updated
        .status
        .get_or_insert_with(PersistentVolumeClaimStatus::default);
    let becoming = status.phase.as_deref() != Some(phase);
    status.phase = Some(phase.to_owned());
    match volume.and_then(|v| v.spec.as_ref()) {
        None => {
            status.access_modes = None;
            status.capacity = None;
        }
        Some(spec) => {
            status.access_modes.clone_from(&spec.access_modes);
            if becoming {
                status.capacity.clone_from(&spec.capacity);
            }
        }
    }
    if updated.status == claim.status {
        return Ok(claim.clone());
    }
    match claims_api(ctx, claim)
        .replace_status(&name_of(claim), &PostParams::default(), &updated)
        .await
    {
        Ok(claim) => Ok(claim),
        Err(err) if err.is_not_found() => Ok(claim.clone()),
        Err(err) => Err(err.into()),
    }
}

/// `updateVolumePhase`.
async fn update_volume_phase(
    volume: &PersistentVolume,
    phase: &str,
    ctx: &Context,
) -> Result<PersistentVolume> {
    if volume_phase(volume) == phase {
        return Ok(volume.clone());
    }
    let mut updated = volume.clone();
    let status = updated
        .status
        .get_or_insert_with(PersistentVolumeStatus::default);
    status.phase = Some(phase.to_owned());
    status.message = None;
    status.reason = None;
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match volumes
        .replace_status(&name_of(volume), &PostParams::default(), &updated)
        .await
    {
        Ok(volume) => Ok(volume),
        Err(err) if err.is_not_found() => Ok(volume.clone()),
        Err(err) => Err(err.into()),
    }
}

/// `syncVolume`.
async fn sync_volume(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(volume) = ctx.volumes.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let Some(reference) = claim_ref(&volume).cloned() else {
        update_volume_phase(&volume, "Available", &ctx).await?;
        return Ok(Action::AwaitChange);
    };
    if reference.uid.as_deref().is_none_or(str::is_empty) {
        // Reserved for a claim that has not bound to it yet: the claim's sync binds it.
        update_volume_phase(&volume, "Available", &ctx).await?;
        return Ok(Action::AwaitChange);
    }
    let namespace = reference.namespace.as_deref().unwrap_or("");
    let name = reference.name.as_deref().unwrap_or("");
    let mut claim = ctx.claims.get(&ObjectKey::new(Some(namespace), name));
    if claim.is_none() && !matches!(volume_phase(&volume), "Released" | "Failed") {
        // The cache may lag behind a provisioner's new volume: ask the server before
        // releasing it.
        let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), namespace);
        claim = api.get_opt(name).await?.map(Arc::new);
    }
    let claim = claim.filter(|c| c.metadata.uid == reference.uid);
    let Some(claim) = claim else {
        let volume = if matches!(volume_phase(&volume), "Released" | "Failed") {
            (*volume).clone()
        } else {
            update_volume_phase(&volume, "Released", &ctx).await?
        };
        reclaim(&volume, &ctx).await?;
        return Ok(Action::AwaitChange);
    };
    let bound_to = claim_volume_name(&claim);
    let volume_name = name_of(volume.as_ref());
    if bound_to.is_empty() {
        // The claim's sync finishes the binding (the controllers' queues are separate: the
        // claim queue hears of this volume through its watch).
        return Ok(Action::AwaitChange);
    }
    if bound_to == volume_name {
        update_volume_phase(&volume, "Bound", &ctx).await?;
        return Ok(Action::AwaitChange);
    }
    // The claim is bound to another volume.
    if annotation(&volume.metadata, ANN_PROVISIONED_BY).is_some()
        && reclaim_policy(&volume) == "Delete"
    {
        let volume = update_volume_phase(&volume, "Released", &ctx).await?;
        reclaim(&volume, &ctx).await?;
    } else if annotation(&volume.metadata, ANN_BOUND_BY_CONTROLLER).is_some() {
        // `unbindVolume`: the binder's own reservation, undone.
        let mut updated = (*volume).clone();
        if let Some(spec) = updated.spec.as_mut() {
            spec.claim_ref = None;
        }
        if let Some(annotations) = updated.metadata.annotations.as_mut() {
            annotations.remove(ANN_BOUND_BY_CONTROLLER);
        }
        let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
        let updated = volumes
            .replace(&volume_name, &PostParams::default(), &updated)
            .await?;
        update_volume_phase(&updated, "Available", &ctx).await?;
    }
    Ok(Action::AwaitChange)
}

/// The volume's reclaim policy (`Retain` when unset, the API's default).
fn reclaim_policy(volume: &PersistentVolume) -> &str {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
        .unwrap_or("Retain")
}

/// `reclaimVolume`.
async fn reclaim(volume: &PersistentVolume, ctx: &Context) -> Result<()> {
    match reclaim_policy(volume) {
        "Retain" => Ok(()),
        // Its provisioner deletes it (`provisioner`), as an external one would.
        "Delete" if annotation(&volume.metadata, ANN_PROVISIONED_BY).is_some() => Ok(()),
        policy => {
            let (reason, message) = if policy == "Delete" {
                (
                    "VolumeFailedDelete",
                    format!(
                        "error getting deleter volume plugin for volume \"{}\": no deletable volume plugin matched",
                        name_of(volume)
                    ),
                )
            } else if policy == "Recycle" {
                (
                    "VolumeFailedRecycle",
                    "kubemock does not simulate recycling volumes".to_owned(),
                )
            } else {
                (
                    "VolumeUnknownReclaimPolicy",
                    "Volume has unrecognized PersistentVolumeReclaimPolicy".to_owned(),
                )
            };
            if volume_phase(volume) != "Failed" {
                update_volume_phase(volume, "Failed", ctx).await?;
                ctx.volume_event(volume, EventType::Warning, reason, &message)
                    .await;
            }
            Ok(())
        }
    }
}

fn claims_api(ctx: &Context, claim: &PersistentVolumeClaim) -> Api<PersistentVolumeClaim> {
    Api::namespaced(
        ctx.client.clone(),
        claim.metadata.namespace.as_deref().unwrap_or(""),
    )
}

fn name_of<K: Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}
