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

use kubemock_storage::{Kv, Revision};
use parking_lot::RwLock;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use config::{Hook, Kind};
use policies::{Binding, Policy};

/// The webhooks of a stored configuration.
fn hooks(kind: Kind, object: &Value) -> Vec<Arc<Hook>> {
    config::hooks_of(kind, object)
        .into_iter()
        .map(Arc::new)
        .collect()
}

use crate::status::ApiResult;

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
    /// How far it has caught up with the store (`store_index`).
    progress: crate::store_index::Progress,
    /// The pooled HTTPS clients.
    pub(crate) clients: client::Clients,
}

impl Default for Webhooks {
    fn default() -> Self {
        Webhooks {
            stored: RwLock::new(BTreeMap::new()),
            current: RwLock::new(Arc::new(Current::default())),
            progress: crate::store_index::Progress::default(),
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

    /// Waits (a bounded time) until the index reflects every change up to `revision`.
    pub(crate) async fn synced(&self, revision: Revision) {
        self.progress
            .synced(revision, <Webhooks as crate::store_index::StoreIndex>::NAME)
            .await;
    }
}

/// Loads the index from the store, then follows it on a task of `tasks` until `shutdown`
/// (`store_index`).
pub(crate) async fn start(
    webhooks: &Arc<Webhooks>,
    store: &Arc<dyn Kv>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> ApiResult<()> {
    crate::store_index::start(webhooks, store, shutdown, tasks).await
}

impl crate::store_index::StoreIndex for Webhooks {
    const NAME: &'static str = "webhook index";
    const PREFIX: &'static str = PREFIX;

    fn replace(&self, items: &[kubemock_storage::KeyValue]) {
        self.stored.write().clear();
        Webhooks::apply(self, b"", None);
        for kv in items {
            Webhooks::apply(self, &kv.key, Some(&kv.value));
        }
    }

    fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        Webhooks::apply(self, key, value);
    }

    fn progress(&self) -> &crate::store_index::Progress {
        &self.progress
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
