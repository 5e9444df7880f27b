//! The aggregator's controllers over APIServices, in one loop: every group-version the server
//! serves has a local APIService (`v1.apps`, `v1.` for the core group), created at startup
//! (`autoregister`, labelled `kube-aggregator.kubernetes.io/automanaged: onstart`) and for each
//! served version of a CustomResourceDefinition (`crdregistration`, labelled `true`, removed
//! with the version), and every APIService has its `Available` condition
//! (`apiservice/available_controller.go`): local ones are always available; kubemock proxies
//! to no aggregated API server, so one backed by a Service is not (`ServiceNotFound` when the
//! Service is missing, `FailedDiscoveryCheck` otherwise).
//!
//! It runs once before the server serves, then on every change of the APIServices or of the
//! custom resources.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use kubemock_storage::{Guard, RangeRequest, UpdateOutcome};
use serde_json::{Value, json};
use tracing::warn;

use crate::handlers::create::{create_object, create_system_object};
use crate::identity::UserInfo;
use crate::keys;
use crate::managedfields::{self, Writer};
use crate::meta;
use crate::object::{self, Object};
use crate::registry::{PRIORITIES, Resource};
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// The label the aggregator puts on the APIServices it manages.
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";
/// Its value on built-in group-versions (registered once at startup).
const ON_START: &str = "onstart";
/// Its value on custom resources' (kept in step with the definitions).
const SYNCED: &str = "true";
/// A custom resource's group priority (`crdregistration_controller.go`: "CRDs should have
/// relatively low priority").
const CRD_GROUP_PRIORITY: i64 = 1000;
/// A custom resource's version priority (sorted by version name among equals).
const CRD_VERSION_PRIORITY: i64 = 100;
/// The field manager of the aggregator's writes.
const MANAGER: &str = "kube-apiserver";
/// How soon a pass that failed is tried again.
const RETRY: Duration = Duration::from_millis(200);

/// Registers the served group-versions (written together, complete with their status, before
/// the server serves: a client that asks first finds them), then keeps them and the
/// APIServices' status in step in the background until the server shuts down.
pub(crate) async fn start(state: &AppState) -> ApiResult<()> {
    register(state).await?;
    let background = state.clone();
    state
        .tasks()
        .spawn(crate::meta::keep_clock(run(background)));
    Ok(())
}

/// Creates the missing local APIServices of the served group-versions, available.
async fn register(state: &AppState) -> ApiResult<()> {
    let Some(services) = api_services(state) else {
        return Ok(());
    };
    let writer = Writer::server(MANAGER, &services);
    let creates = desired(state).into_iter().map(|(name, (spec, label))| {
        let (services, writer) = (&services, &writer);
        async move {
            let condition = json!({"type": "Available", "status": "True",
                "lastTransitionTime": meta::now_rfc3339(), "reason": "Local",
                "message": "Local APIServices are always available"});
            let service = object::with_type_meta(
                json!({"metadata": {"name": name, "labels": {AUTOMANAGED: label}},
                       "spec": spec, "status": {"conditions": [condition]}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
                services,
            );
            create_system_object(state, services, None, service, writer).await
        }
    });
    futures_util::future::try_join_all(creates).await?;
    Ok(())
}

async fn run(state: AppState) {
    let Some(services) = api_services(&state) else {
        return;
    };
    let prefix = keys::resource_prefix(&services);
    loop {
        // Created before the pass reads the registry, so no change in between is missed.
        let registry_changed = state.registry().changed();
        let revision = match pass(&state).await {
            Ok(revision) => revision,
            Err(err) => {
                warn!(error = %err.message, "APIService controller");
                tokio::select! {
                    () = state.shutdown().cancelled() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        let mut watch = match state.store().watch(prefix.clone().into(), revision).await {
            Ok(watch) => watch,
            Err(_) => {
                tokio::select! {
                    () = state.shutdown().cancelled() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        tokio::pin!(registry_changed);
        loop {
            tokio::select! {
                () = state.shutdown().cancelled() => return,
                () = &mut registry_changed => break,
                item = watch.next() => match item {
                    Some(Ok(kubemock_storage::WatchItem::Progress(_))) => {}
                    _ => break,
                },
            }
        }
    }
}

fn api_services(state: &AppState) -> Option<std::sync::Arc<Resource>> {
    state
        .registry()
        .lookup("apiregistration.k8s.io", "v1", "apiservices")
}

/// The name of a group-version's APIService.
fn service_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The local APIServices the registry's group-versions call for, by name: spec and the
/// `automanaged` label value.
fn desired(state: &AppState) -> BTreeMap<String, (Value, &'static str)> {
    let registry = state.registry();
    let custom: Vec<(String, String)> = registry
        .custom()
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect();
    let mut wanted = BTreeMap::new();
    for group in registry.groups() {
        for version in &group.versions {
            let builtin = PRIORITIES
                .iter()
                .find(|(g, v, _, _)| *g == group.name && *v == version);
            let (group_priority, version_priority, label) = match builtin {
                Some((_, _, group_priority, version_priority)) => {
                    (*group_priority, *version_priority, ON_START)
                }
                None if custom.contains(&(group.name.clone(), version.clone())) => {
                    (CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY, SYNCED)
                }
                None => continue,
            };
            wanted.insert(
                service_name(&group.name, version),
                (
                    json!({"group": group.name, "version": version,
                           "groupPriorityMinimum": group_priority,
                           "versionPriority": version_priority}),
                    label,
                ),
            );
        }
    }
    wanted
}

/// One pass: creates the missing local APIServices, removes the automanaged ones no longer
/// served, and sets every APIService's availability. Returns the revision it read at.
async fn pass(state: &AppState) -> ApiResult<u64> {
    let Some(services) = api_services(state) else {
        return Ok(0);
    };
    let prefix = keys::resource_prefix(&services);
    let listed = state
        .store()
        .range(RangeRequest::prefix(prefix.clone()))
        .await
        .map_err(ApiError::from_storage)?;
    let mut existing: BTreeMap<String, Object> = BTreeMap::new();
    for kv in &listed.items {
        let service = object::parse_stored(&kv.value)?;
        existing.insert(object::name_of(&service).to_owned(), service);
    }
    let wanted = desired(state);
    let writer = Writer::server(MANAGER, &services);
    // Together, so that a durable store flushes them in one group commit.
    let creates = wanted
        .iter()
        .filter(|(name, _)| !existing.contains_key(*name))
        .map(|(name, (spec, label))| {
            let service = object::with_type_meta(
                json!({"metadata": {"name": name, "labels": {AUTOMANAGED: label}}, "spec": spec})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                &services,
            );
            let (services, writer) = (&services, &writer);
            async move {
                let created = create_object(
                    state,
                    services,
                    None,
                    service,
                    false,
                    Some(writer),
                    UserInfo::apiserver(),
                );
                match created.await {
                    Ok(_) => Ok(()),
                    Err(err) if err.reason == "AlreadyExists" => Ok(()),
                    Err(err) => Err(err),
                }
            }
        });
    futures_util::future::try_join_all(creates).await?;
    for (name, service) in &existing {
        let managed = service
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(|l| l.get(AUTOMANAGED))
            .and_then(Value::as_str);
        if managed.is_some() && !wanted.contains_key(name) {
            let key = keys::object_key(&services, None, name);
            state
                .store()
                .delete(key.into(), Guard::Unconditional)
                .await
                .map_err(ApiError::from_storage)?;
        }
    }
    // Statuses, read again: the creates above have none yet.
    let listed = state
        .store()
        .range(RangeRequest::prefix(prefix))
        .await
        .map_err(ApiError::from_storage)?;
    let status_writes = listed.items.into_iter().map(|kv| {
        let (services, writer) = (&services, &writer);
        async move { write_availability(state, services, writer, kv).await }
    });
    futures_util::future::try_join_all(status_writes).await?;
    state
        .store()
        .current_revision()
        .await
        .map_err(ApiError::from_storage)
}

/// Sets the `Available` condition of the stored APIService `kv` when it is not what it should
/// be (a conflict means another write came in: the next pass looks again).
async fn write_availability(
    state: &AppState,
    services: &Resource,
    writer: &Writer,
    kv: kubemock_storage::KeyValue,
) -> ApiResult<()> {
    {
        let service = object::parse_stored(&kv.value)?;
        let available = availability(state, &service).await?;
        let current = service
            .get("status")
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
            .cloned();
        let same = current.as_ref().is_some_and(|c| {
            c["status"] == available["status"]
                && c["reason"] == available["reason"]
                && c["message"] == available["message"]
        });
        if same {
            return Ok(());
        }
        let mut updated = service.clone();
        let mut condition = available;
        condition["lastTransitionTime"] = json!(meta::now_rfc3339());
        updated.insert("status".to_owned(), json!({"conditions": [condition]}));
        managedfields::record_update(
            services,
            &writer.clone().on_subresource("status"),
            Some(&service),
            &mut updated,
        );
        let bytes = object::to_stored(&updated)?;
        match state
            .store()
            .update(kv.key.clone(), bytes, Guard::ModRevision(kv.mod_revision))
            .await
            .map_err(ApiError::from_storage)?
        {
            UpdateOutcome::Updated { .. }
            | UpdateOutcome::Conflict(_)
            | UpdateOutcome::NotFound => {}
        }
    }
    Ok(())
}

/// The `Available` condition `service` should have (without its transition time).
async fn availability(state: &AppState, service: &Object) -> ApiResult<Value> {
    let Some(reference) = service
        .get("spec")
        .and_then(|s| s.get("service"))
        .filter(|s| !s.is_null())
    else {
        return Ok(
            json!({"type": "Available", "status": "True", "reason": "Local",
                         "message": "Local APIServices are always available"}),
        );
    };
    let namespace = reference
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
    let exists = crate::tokens::lookup(state, "services", Some(namespace), name)
        .await?
        .is_some();
    Ok(if exists {
        json!({"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck",
               "message": "kubemock does not proxy to aggregated API servers"})
    } else {
        json!({"type": "Available", "status": "False", "reason": "ServiceNotFound",
               "message": format!("service/{name} in \"{namespace}\" is not present")})
    })
}
