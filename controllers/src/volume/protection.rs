//! The storage object in-use protection controllers (kube-controller-manager's
//! `persistentvolumeclaim-protection-controller` and `persistentvolume-protection-controller`,
//! upstream `pkg/controller/volume/pvcprotection/pvc_protection_controller.go` and
//! `pkg/controller/volume/pvprotection/pv_protection_controller.go`). The API server adds
//! `kubernetes.io/pvc-protection` to every new claim and `kubernetes.io/pv-protection` to every
//! new volume; these controllers add them where missing, and remove them from a deleted claim
//! once no running pod uses it, and from a deleted volume once it is not `Bound`. Deleting a
//! claim a pod uses therefore leaves it `Terminating` until the pod is gone, as on a cluster.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kubemock_apimachinery::volume::{PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER};
use kubemock_client::{
    Action, Api, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource,
    SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use super::{pod_claim_names, pod_finished, volume_phase};
use crate::error::Result;

/// Concurrent syncs (upstream starts each with one worker).
const WORKERS: usize = 1;

/// Adds or removes `finalizer`, returning the object to write when it changes.
fn with_finalizer<K: Resource + Clone>(object: &K, finalizer: &str, wanted: bool) -> Option<K> {
    let finalizers = object.meta().finalizers.as_deref().unwrap_or_default();
    let present = finalizers.iter().any(|f| f == finalizer);
    if present == wanted {
        return None;
    }
    let mut updated = object.clone();
    let list = updated.meta_mut().finalizers.get_or_insert_with(Vec::new);
    if wanted {
        list.push(finalizer.to_owned());
    } else {
        list.retain(|f| f != finalizer);
    }
    Some(updated)
}

/// The claim protection controller.
pub struct ClaimProtectionController {
    client: Client,
    claims: SharedInformer<PersistentVolumeClaim>,
    pods: SharedInformer<Pod>,
}

impl ClaimProtectionController {
    /// A controller on `factory`'s shared claim and pod informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        ClaimProtectionController {
            client,
            claims: factory.informer(),
            pods: factory.informer(),
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let claims = self.claims.store();
        let pods = self.pods.store();
        let client = self.client;
        // A pod that changes or goes may free its claims.
        Controller::new("pvc-protection", self.claims)
            .workers(WORKERS)
            .watches(&self.pods, |pod: &Pod| {
                pod_claim_names(pod)
                    .into_iter()
                    .map(|claim| ObjectKey::new(pod.metadata.namespace.as_deref(), &claim))
                    .collect()
            })
            .run(
                move |key| sync_claim(key, client.clone(), claims.clone(), pods.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// Whether a pod of the claim's namespace that has not finished uses it (`isBeingUsed`,
/// from the cache; upstream asks the server too when the cache says no).
fn claim_in_use(claim: &PersistentVolumeClaim, pods: &Store<Pod>) -> bool {
    let name = claim.metadata.name.as_deref().unwrap_or("");
    pods.list().iter().any(|pod| {
        pod.metadata.namespace == claim.metadata.namespace
            && !pod_finished(pod)
            && pod_claim_names(pod).iter().any(|c| c == name)
    })
}

async fn sync_claim(
    key: ObjectKey,
    client: Client,
    claims: Store<PersistentVolumeClaim>,
    pods: Store<Pod>,
) -> Result<Action> {
    let Some(claim) = claims.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let deleting = claim.metadata.deletion_timestamp.is_some();
    let wanted = !deleting || claim_in_use(&claim, &pods);
    let Some(updated) = with_finalizer(claim.as_ref(), PVC_PROTECTION_FINALIZER, wanted) else {
        return Ok(Action::AwaitChange);
    };
    let api: Api<PersistentVolumeClaim> =
        Api::namespaced(client, key.namespace.as_deref().unwrap_or(""));
    match api
        .replace(&key.name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(Action::AwaitChange),
        Err(err) if err.is_not_found() => Ok(Action::AwaitChange),
        Err(err) => Err(err.into()),
    }
}

/// The volume protection controller.
pub struct VolumeProtectionController {
    client: Client,
    volumes: SharedInformer<PersistentVolume>,
}

impl VolumeProtectionController {
    /// A controller on `factory`'s shared volume informer.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        VolumeProtectionController {
            client,
            volumes: factory.informer(),
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let volumes = self.volumes.store();
        let client = self.client;
        Controller::new("pv-protection", self.volumes)
            .workers(WORKERS)
            .run(
                move |key| sync_volume(key, client.clone(), volumes.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

async fn sync_volume(
    key: ObjectKey,
    client: Client,
    volumes: Store<PersistentVolume>,
) -> Result<Action> {
    let Some(volume) = volumes.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let deleting = volume.metadata.deletion_timestamp.is_some();
    // `isBeingUsed`: a volume is in use while Bound.
    let wanted = !deleting || volume_phase(&volume) == "Bound";
    let Some(updated) = with_finalizer(volume.as_ref(), PV_PROTECTION_FINALIZER, wanted) else {
        return Ok(Action::AwaitChange);
    };
    let api: Api<PersistentVolume> = Api::all(client);
    match api
        .replace(&key.name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(Action::AwaitChange),
        Err(err) if err.is_not_found() => Ok(Action::AwaitChange),
        Err(err) => Err(err.into()),
    }
}
