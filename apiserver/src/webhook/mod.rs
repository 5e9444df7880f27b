//! Admission webhooks' configurations and calls (`staging/src/k8s.io/apiserver/pkg/admission/
//! plugin/webhook/`), below the request pipeline: the in-memory index of the stored
//! Mutating/ValidatingWebhookConfigurations, the HTTPS client that calls webhooks (admission
//! and CRD conversion ones), AdmissionReview building and checking, and the notes (warnings,
//! audit annotations) a request's webhooks leave for its response. The dispatch itself, which
//! reads the store and the registry, is `admission::webhooks`.
//!
//! The index is loaded at startup and followed by a watch of the configurations' keys; a
//! write of a configuration answers once the index has caught up with it
//! ([`Webhooks::synced`]), so the next request sees it (as `authz::rbac` does for roles).
//!
//! # Layout
//! - `config`: the configurations' webhooks and the matching of rules and selectors.
//! - `policies`: ValidatingAdmissionPolicies and their bindings, compiled (the same index
//!   follows them: they live under the same key prefix).
//! - `client`: the HTTPS client, pooled per client configuration.
//! - `review`: AdmissionReview requests, the verification of answers, denial Statuses.
//! - `trust`: the verification of a webhook's serving certificate against its `caBundle`.

pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod policies;
pub(crate) mod review;
pub(crate) mod trust;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use kubemock_storage::{EventKind, Kv, RangeRequest, Revision, WatchItem};
use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use config::{Hook, Kind};
use policies::{Binding, Policy};

/// The webhooks of a stored configuration.
fn hooks(kind: Kind, object: &Value) -> Vec<Arc<Hook>> {
    config::hooks_of(kind, object)
        .into_iter()
        .map(Arc::new)
        .collect()
}

use crate::status::{ApiError, ApiResult};

/// The API group of webhook configurations.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";

/// The storage key prefix of every webhook configuration (and admission policy).
const PREFIX: &str = "/registry/admissionregistration.k8s.io/";
/// The key prefix of the mutating configurations.
const MUTATING_PREFIX: &str =
    "/registry/admissionregistration.k8s.io/mutatingwebhookconfigurations/";
/// The key prefix of the validating configurations.
const VALIDATING_PREFIX: &str =
    "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/";
/// The key prefix of the ValidatingAdmissionPolicies.
const POLICY_PREFIX: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/";
/// The key prefix of their bindings.
const BINDING_PREFIX: &str =
    "/registry/admissionregistration.k8s.io/validatingadmissionpolicybindings/";

/// How long a configuration write waits for the index to catch up before answering anyway
/// (as `authz::rbac`'s `SYNC_WAIT`).
const SYNC_WAIT: Duration = Duration::from_secs(5);
/// How long the index waits before listing again after its watch failed.
const RELIST_DELAY: Duration = Duration::from_millis(100);

/// The audit annotation prefix of a mutating webhook's call (`MutationAuditAnnotationPrefix`).
pub(crate) const MUTATION_ANNOTATION: &str = "mutation.webhook.admission.k8s.io/";
/// The audit annotation prefix of a mutating webhook's patch (`PatchAuditAnnotationPrefix`).
pub(crate) const PATCH_ANNOTATION: &str = "patch.webhook.admission.k8s.io/";
/// The audit annotation prefix of a mutating webhook that failed open.
pub(crate) const MUTATION_FAILED_OPEN: &str = "failed-open.mutation.webhook.admission.k8s.io/";
/// The audit annotation prefix of a validating webhook that failed open.
pub(crate) const VALIDATION_FAILED_OPEN: &str = "failed-open.validating.webhook.admission.k8s.io/";

/// The webhooks and policies in use, in call order.
#[derive(Debug, Default)]
pub(crate) struct Current {
    /// The mutating webhooks.
    pub(crate) mutating: Vec<Arc<Hook>>,
    /// The validating webhooks.
    pub(crate) validating: Vec<Arc<Hook>>,
    /// The ValidatingAdmissionPolicies that have bindings, in name order, each with its
    /// bindings in name order.
    pub(crate) policies: Vec<(Arc<Policy>, Vec<Arc<Binding>>)>,
}

/// What one stored object of the index holds.
#[derive(Debug)]
enum Stored {
    /// A webhook configuration's webhooks.
    Hooks(Vec<Arc<Hook>>),
    /// A policy, compiled.
    Policy(Arc<Policy>),
    /// A binding.
    Binding(Arc<Binding>),
}

/// The index of webhook configurations, and the clients that call them.
#[derive(Debug)]
pub(crate) struct Webhooks {
    /// Each stored configuration's webhooks, policy or binding, by storage key (so in name
    /// order per kind): written by [`start`]'s task only, held for one event's span, never
    /// across `.await`.
    stored: RwLock<BTreeMap<Vec<u8>, Stored>>,
    /// What `stored` amounts to, rebuilt on each change: a request clones the `Arc`.
    current: RwLock<Arc<Current>>,
    /// The store revision the index reflects every change up to.
    caught_up: watch::Sender<Revision>,
    /// Wakes the watch task to ask for progress (see `authz::rbac`).
    progress_wanted: Notify,
    /// The pooled HTTPS clients.
    pub(crate) clients: client::Clients,
}

impl Default for Webhooks {
    fn default() -> Self {
        Webhooks {
            stored: RwLock::new(BTreeMap::new()),
            current: RwLock::new(Arc::new(Current::default())),
            caught_up: watch::Sender::new(0),
            progress_wanted: Notify::new(),
            clients: client::Clients::default(),
        }
    }
}

impl Webhooks {
    /// The webhooks in use now.
    pub(crate) fn current(&self) -> Arc<Current> {
        Arc::clone(&self.current.read())
    }

    /// Applies a stored configuration, policy or binding (a put) or its removal.
    fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        let object = value.and_then(|v| serde_json::from_slice::<Value>(v).ok());
        let entry = if key.starts_with(MUTATING_PREFIX.as_bytes()) {
            object.map(|o| Stored::Hooks(hooks(Kind::Mutating, &o)))
        } else if key.starts_with(VALIDATING_PREFIX.as_bytes()) {
            object.map(|o| Stored::Hooks(hooks(Kind::Validating, &o)))
        } else if key.starts_with(POLICY_PREFIX.as_bytes()) {
            object.map(|o| Stored::Policy(Arc::new(policies::policy_of(&o))))
        } else if key.starts_with(BINDING_PREFIX.as_bytes()) {
            object.map(|o| Stored::Binding(Arc::new(policies::binding_of(&o))))
        } else if key.is_empty() {
            None
        } else {
            return;
        };
        let mut stored = self.stored.write();
        match entry {
            Some(entry) => stored.insert(key.to_vec(), entry),
            None => stored.remove(key),
        };
        let mut current = Current::default();
        let mut bindings: Vec<&Arc<Binding>> = Vec::new();
        for (key, entry) in stored.iter() {
            match entry {
                Stored::Hooks(hooks) if key.starts_with(MUTATING_PREFIX.as_bytes()) => {
                    current.mutating.extend(hooks.iter().cloned());
                }
                Stored::Hooks(hooks) => current.validating.extend(hooks.iter().cloned()),
                Stored::Policy(policy) => current.policies.push((Arc::clone(policy), Vec::new())),
                Stored::Binding(binding) => bindings.push(binding),
            }
        }
        for (policy, policy_bindings) in &mut current.policies {
            policy_bindings.extend(
                bindings
                    .iter()
                    .filter(|b| b.policy_name == policy.name)
                    .map(|b| Arc::clone(b)),
            );
        }
        current
            .policies
            .retain(|(_, bindings)| !bindings.is_empty());
        *self.current.write() = Arc::new(current);
    }

    fn caught_up(&self, revision: Revision) {
        self.caught_up.send_if_modified(|current| {
            let moved = revision > *current;
            if moved {
                *current = revision;
            }
            moved
        });
    }

    /// Waits (a bounded time) until the index reflects every change up to `revision`.
    pub(crate) async fn synced(&self, revision: Revision) {
        let mut progress = self.caught_up.subscribe();
        if *progress.borrow_and_update() >= revision {
            return;
        }
        self.progress_wanted.notify_one();
        let caught_up = progress.wait_for(|seen| *seen >= revision);
        if tokio::time::timeout(SYNC_WAIT, caught_up).await.is_err() {
            warn!(revision, "the webhook index did not catch up in time");
        }
    }
}

/// Loads the index from the store, then follows it on a task of `tasks` until `shutdown`.
pub(crate) async fn start(
    webhooks: &Arc<Webhooks>,
    store: &Arc<dyn Kv>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> ApiResult<()> {
    let revision = load(store.as_ref(), webhooks).await?;
    tasks.spawn(follow(
        Arc::clone(store),
        shutdown.clone(),
        Arc::clone(webhooks),
        revision,
    ));
    Ok(())
}

async fn load(store: &dyn Kv, webhooks: &Webhooks) -> ApiResult<Revision> {
    let listed = store
        .range(RangeRequest::prefix(PREFIX))
        .await
        .map_err(ApiError::from_storage)?;
    webhooks.stored.write().clear();
    webhooks.apply(b"", None);
    for kv in &listed.items {
        webhooks.apply(&kv.key, Some(&kv.value));
    }
    webhooks.caught_up(listed.revision);
    debug!(revision = listed.revision, "webhook index loaded");
    Ok(listed.revision)
}

async fn follow(
    store: Arc<dyn Kv>,
    shutdown: CancellationToken,
    webhooks: Arc<Webhooks>,
    mut revision: Revision,
) {
    loop {
        match store.watch(PREFIX.into(), revision).await {
            Ok(mut watch) => loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = webhooks.progress_wanted.notified() => watch.request_progress(),
                    item = watch.next() => match item {
                        Some(Ok(WatchItem::Event(event))) => {
                            let value = match event.kind {
                                EventKind::Put => Some(event.kv.value.as_ref()),
                                EventKind::Delete => None,
                            };
                            webhooks.apply(&event.kv.key, value);
                            revision = event.revision();
                            webhooks.caught_up(revision);
                        }
                        Some(Ok(WatchItem::Progress(seen))) => webhooks.caught_up(seen),
                        Some(Err(err)) => {
                            warn!(error = %err, "webhook index watch failed; listing again");
                            break;
                        }
                        None => break,
                    },
                }
            },
            Err(err) => warn!(error = %err, "webhook index cannot watch; listing again"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RELIST_DELAY) => {}
        }
        match load(store.as_ref(), &webhooks).await {
            Ok(listed) => revision = listed,
            Err(err) => warn!(error = %err.message, "webhook index cannot list"),
        }
    }
}

/// What a request's webhooks leave for its response: `Warning` headers and audit
/// annotations.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    /// Warnings, in order.
    pub(crate) warnings: Vec<String>,
    /// Audit annotations, in order.
    pub(crate) annotations: Vec<(String, String)>,
}

tokio::task_local! {
    /// The notes of the request the task serves (borrowed for one push at a time).
    static NOTES: RefCell<Notes>;
}

/// Runs `request`, collecting what webhooks note on the way.
pub(crate) async fn collecting<F: Future>(request: F) -> (F::Output, Notes) {
    NOTES
        .scope(RefCell::new(Notes::default()), async move {
            let output = request.await;
            let notes = NOTES.with(RefCell::take);
            (output, notes)
        })
        .await
}

/// Records something in the request's notes, if the task serves a request.
pub(crate) fn note(record: impl FnOnce(&mut Notes)) {
    // Outside a request (the server's own writes at startup) there is nobody to tell.
    let _ = NOTES.try_with(|notes| record(&mut notes.borrow_mut()));
}

/// Adds an audit annotation to the request's notes.
pub(crate) fn annotate(key: String, value: String) {
    note(|notes| notes.annotations.push((key, value)));
}
