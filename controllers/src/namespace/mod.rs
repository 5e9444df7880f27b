//! The namespace controller: a deleted namespace stays `Terminating` (docs/api-behaviour.md#namespace-deletion) until this
//! controller has deleted every namespaced object in it (custom resources included), then it
//! removes the `kubernetes` finalizer through `PUT /api/v1/namespaces/{name}/finalize`, the
//! write with which the API server removes the namespace. While content remains, the
//! namespace's conditions say what and why, as kube-controller-manager's do.

mod conditions;
mod deleter;

pub use conditions::{CONDITION_TYPES, ContentReport, update_conditions};

use crate::clock::Clock;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, NamespaceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::request::RequestBuilder;
use kubemock_client::{
    Action, Api, Client, Controller, InformerFactory, ObjectKey, PostParams, SharedInformer,
};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// The finalizer this controller owns in `spec.finalizers`.
pub const FINALIZER: &str = "kubernetes";

/// Concurrent namespace syncs (kube-controller-manager's `--concurrent-namespace-syncs`
/// defaults to 10; namespaces are few here).
const WORKERS: usize = 4;

/// How soon a namespace whose content is still going away is looked at again. Upstream waits
/// half its estimate plus a second (8 s for objects held by finalizers); kubemock's users wait
/// on tests, so it looks again sooner. Only polling requests are spent.
const RECHECK: Duration = Duration::from_millis(250);

/// The namespace controller.
pub struct NamespaceController {
    client: Client,
    namespaces: SharedInformer<Namespace>,
    /// Where event timestamps and condition times come from (the system clock unless set).
    clock: Clock,
}

impl NamespaceController {
    /// A controller reading namespaces through `factory`'s shared informer.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        NamespaceController {
            client,
            namespaces: factory.informer::<Namespace>(),
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

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let client = Arc::new(self.client);
        let clock = self.clock;
        Controller::new("namespace", self.namespaces)
            .workers(WORKERS)
            .run(
                move |key| sync(key, client.clone(), clock.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// One step for one namespace (upstream `namespacedResourcesDeleter.Delete`). Reads the
/// namespace from the server, not the cache: other controllers edit it while it terminates.
async fn sync(key: ObjectKey, client: Arc<Client>, clock: Clock) -> Result<Action> {
    let api: Api<Namespace> = Api::all((*client).clone());
    let Some(mut namespace) = api.get_opt(&key.name).await? else {
        return Ok(Action::AwaitChange);
    };
    if namespace.metadata.deletion_timestamp.is_none() {
        return Ok(Action::AwaitChange);
    }
    if phase(&namespace) != Some("Terminating") {
        namespace.status.get_or_insert_with(Default::default).phase =
            Some("Terminating".to_owned());
        namespace = api
            .replace_status(&key.name, &PostParams::default(), &namespace)
            .await?;
    }
    if spec_finalizers(&namespace).is_empty() {
        return Ok(Action::AwaitChange);
    }
    let pass = deleter::delete_all_content(&client, &key.name).await;
    let now = Time(clock.now());
    let failures = pass.report.failures(&now);
    let status = namespace.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if update_conditions(conditions, &failures, &now) {
        // The conditions explain; failing to write them must not stop the deletion.
        match api
            .replace_status(&key.name, &PostParams::default(), &namespace)
            .await
        {
            Ok(updated) => namespace = updated,
            Err(err) if err.is_not_found() => return Ok(Action::AwaitChange),
            Err(err) => {
                tracing::debug!(namespace = %key.name, error = %err, "updating the namespace conditions failed");
            }
        }
    }
    if !pass.report.delete_errors.is_empty() {
        let mut errors = pass.report.delete_errors;
        errors.sort();
        return Err(Error::NamespaceContent {
            namespace: key.name,
            errors,
        });
    }
    if let Some(message) = pass.report.discovery_failure {
        // Content of the undiscovered groups may remain: not finished.
        return Err(Error::NamespaceContent {
            namespace: key.name,
            errors: vec![message],
        });
    }
    if pass.report.content_remains() || pass.estimate_seconds > 0 {
        tracing::debug!(namespace = %key.name, estimate = pass.estimate_seconds, "content remains");
        return Ok(Action::RequeueAfter(RECHECK));
    }
    finalize(&client, &namespace).await?;
    tracing::info!(namespace = %key.name, "namespace emptied and finalized");
    Ok(Action::AwaitChange)
}

fn phase(namespace: &Namespace) -> Option<&str> {
    namespace.status.as_ref()?.phase.as_deref()
}

fn spec_finalizers(namespace: &Namespace) -> Vec<String> {
    namespace
        .spec
        .as_ref()
        .and_then(|s| s.finalizers.clone())
        .unwrap_or_default()
}

/// Removes [`FINALIZER`] from `spec.finalizers` through `/finalize` (conditional on the
/// namespace's resourceVersion: a Conflict requeues). A namespace already gone is fine.
async fn finalize(client: &Client, namespace: &Namespace) -> Result<()> {
    let mut finalized = namespace.clone();
    let mut rest: Vec<String> = spec_finalizers(namespace)
        .into_iter()
        .filter(|f| f != FINALIZER)
        .collect();
    rest.sort();
    rest.dedup();
    finalized.spec = Some(NamespaceSpec {
        finalizers: Some(rest),
    });
    let name = namespace.metadata.name.clone().unwrap_or_default();
    let body = serde_json::to_vec(&finalized).map_err(kubemock_client::Error::Encode)?;
    let request = RequestBuilder::new("/api/v1/namespaces".to_owned()).replace(
        &name,
        Some("finalize"),
        &PostParams::default(),
        body,
    )?;
    match client.request::<serde_json::Value>(&request).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(err.into()),
    }
}
