//! Upstream's `ControllerRefManager` (`ClaimPods`, `ClaimReplicaSets`): which of the candidate
//! objects an owner controls. Owned objects that still match the selector are kept (all of
//! them while the owner is being deleted); owned ones that no longer match are released (the
//! owner's reference removed); matching orphans are adopted (a controller reference added),
//! after checking the owner afresh once, since a cached owner may already be gone. The
//! ReplicaSet controller claims pods with it, the Deployment controller ReplicaSets.
//! Candidates are the informer's shared objects (`Arc`), never copies: a sync of a controller
//! with many pods reads them all, and copying each one per sync made that quadratic in pods.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubemock_client::controller::{controller_of, controller_reference};
use kubemock_client::{Api, Client, Patch, PatchParams, Selector, TypedResource};
use serde_json::json;

use crate::error::Result;

/// The objects among `candidates` that `owner` controls once the claim is settled.
pub(crate) async fn claim<O: TypedResource, D: TypedResource>(
    client: &Client,
    owner: &O,
    selector: &Selector,
    candidates: Vec<Arc<D>>,
) -> Result<Vec<Arc<D>>> {
    static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
    let meta = owner.meta();
    let uid = meta.uid.clone().unwrap_or_default();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let api: Api<D> = Api::namespaced(client.clone(), &namespace);
    let deleting = meta.deletion_timestamp.is_some();
    let mut owned = Vec::new();
    // Adoption checks the owner afresh once (it may be being deleted already).
    let mut may_adopt: Option<bool> = None;
    for candidate in candidates {
        let matches = selector.matches(candidate.meta().labels.as_ref().unwrap_or(&NO_LABELS));
        // Named only where a patch needs it: most candidates are kept as they are.
        let name = || candidate.meta().name.clone().unwrap_or_default();
        match controller_of(candidate.meta()) {
            Some(reference) if reference.uid == uid => {
                if matches || deleting {
                    owned.push(candidate);
                    continue;
                }
                let patch = json!({"metadata": {
                    "ownerReferences": [{"$patch": "delete", "uid": uid}],
                    "uid": candidate.meta().uid,
                }});
                let name = name();
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                {
                    Ok(_) => tracing::info!(object = %name, "released: no longer matches"),
                    Err(err) if err.is_not_found() || err.is_conflict() => {}
                    Err(err) => return Err(err.into()),
                }
            }
            Some(_) => {} // another controller's
            None => {
                if deleting || !matches || candidate.meta().deletion_timestamp.is_some() {
                    continue;
                }
                let allowed = match may_adopt {
                    Some(allowed) => allowed,
                    None => {
                        let owners: Api<O> = Api::namespaced(client.clone(), &namespace);
                        let fresh = owners.get_opt(meta.name.as_deref().unwrap_or("")).await?;
                        let allowed = fresh.is_some_and(|f| {
                            f.meta().uid.as_deref() == Some(uid.as_str())
                                && f.meta().deletion_timestamp.is_none()
                        });
                        may_adopt = Some(allowed);
                        allowed
                    }
                };
                if !allowed {
                    continue;
                }
                let Some(reference) = controller_reference(owner) else {
                    continue;
                };
                let patch = json!({"metadata": {
                    "ownerReferences": [reference],
                    "uid": candidate.meta().uid,
                }});
                let name = name();
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                {
                    Ok(adopted) => {
                        tracing::info!(object = %name, "adopted an orphan");
                        owned.push(Arc::new(adopted));
                    }
                    Err(err) if err.is_not_found() => {}
                    Err(err) => return Err(err.into()),
                }
            }
        }
    }
    Ok(owned)
}
