//! The resource quota controller (kube-controller-manager's `resourcequota-controller`,
//! upstream `pkg/controller/resourcequota/resource_quota_controller.go`): keeps each
//! ResourceQuota's `status.hard` equal to its `spec.hard` and its `status.used` to what its
//! namespace holds, counted as the ResourceQuota admission counts a new object
//! ([`kubemock_apimachinery::quota`], one definition for both). The admission charges a
//! create at once; this controller gives back what deletes, terminal pods and expired
//! terminations free, and recounts every [`RESYNC_PERIOD`].
//!
//! A quota is recounted when it changes and when an object of a kind it may count changes in
//! its namespace (pods, Services, claims, ConfigMaps, Secrets, and the workload kinds); the
//! objects are listed from the API at that moment, so `count/<resource>.<group>` of any
//! served kind (custom ones too, through discovery) is counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota, Secret, Service,
};
use kubemock_apimachinery::quota::{self, ResourceList};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, DynamicObject, InformerFactory, ListParams,
    ObjectKey, PostParams, Resource, SharedInformer, Store,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::Result;

/// How often every quota is recounted (`--resource-quota-sync-period` default).
pub const RESYNC_PERIOD: Duration = Duration::from_secs(300);
/// Concurrent quota syncs (`--concurrent-resource-quota-syncs` default).
const WORKERS: usize = 5;

/// What a sync needs.
struct Context {
    client: Client,
    quotas: Store<ResourceQuota>,
    clock: Clock,
}

/// The resource quota controller.
pub struct ResourceQuotaController {
    client: Client,
    quotas: SharedInformer<ResourceQuota>,
    factory: Arc<InformerFactory>,
    clock: Clock,
}

impl ResourceQuotaController {
    /// A controller on `factory`'s shared informers, reading the time (for pods whose
    /// termination grace period is over) from `clock`.
    pub fn new(client: Client, factory: &Arc<InformerFactory>, clock: Clock) -> Self {
        ResourceQuotaController {
            client,
            quotas: factory.informer(),
            factory: factory.clone(),
            clock,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client,
            quotas: self.quotas.store(),
            clock: self.clock,
        });
        let quotas = self.quotas.store();
        let in_namespace = move |namespace: Option<&str>| -> Vec<ObjectKey> {
            quotas
                .list()
                .iter()
                .filter(|q| q.metadata.namespace.as_deref() == namespace)
                .map(|q| q.key())
                .collect()
        };
        let f = &self.factory;
        let controller = Controller::new("resourcequota", self.quotas)
            .workers(WORKERS)
            .resync(RESYNC_PERIOD);
        let controller = watch_kind::<Pod>(controller, f, &in_namespace);
        let controller = watch_kind::<Service>(controller, f, &in_namespace);
        let controller = watch_kind::<PersistentVolumeClaim>(controller, f, &in_namespace);
        let controller = watch_kind::<ConfigMap>(controller, f, &in_namespace);
        let controller = watch_kind::<Secret>(controller, f, &in_namespace);
        let controller = watch_kind::<ReplicationController>(controller, f, &in_namespace);
        let controller = watch_kind::<Deployment>(controller, f, &in_namespace);
        let controller = watch_kind::<ReplicaSet>(controller, f, &in_namespace);
        let controller = watch_kind::<StatefulSet>(controller, f, &in_namespace);
        let controller = watch_kind::<DaemonSet>(controller, f, &in_namespace);
        let controller = watch_kind::<Job>(controller, f, &in_namespace);
        let controller = watch_kind::<CronJob>(controller, f, &in_namespace);
        controller
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// `controller` also recounting the quotas of a namespace when an object of kind `K` in it
/// changes.
fn watch_kind<K: kubemock_client::TypedResource>(
    controller: Controller<ResourceQuota>,
    factory: &InformerFactory,
    in_namespace: &(impl Fn(Option<&str>) -> Vec<ObjectKey> + Clone + Send + Sync + 'static),
) -> Controller<ResourceQuota> {
    let in_namespace = in_namespace.clone();
    controller.watches(&factory.informer::<K>(), move |obj: &K| {
        in_namespace(obj.meta().namespace.as_deref())
    })
}

/// The kinds (group, plural) whose objects a quota tracking `names` counts.
fn kinds_of(names: &BTreeSet<String>) -> BTreeSet<(String, String)> {
    let mut kinds = BTreeSet::new();
    let fixed = [
        ("", "pods"),
        ("", "services"),
        ("", "persistentvolumeclaims"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "replicationcontrollers"),
        ("", "resourcequotas"),
    ];
    for name in names {
        for (group, plural) in fixed {
            if quota::tracks(group, plural, name) {
                kinds.insert((group.to_owned(), plural.to_owned()));
            }
        }
        if let Some(counted) = name.strip_prefix("count/") {
            let (plural, group) = counted.split_once('.').unwrap_or((counted, ""));
            kinds.insert((group.to_owned(), plural.to_owned()));
        }
    }
    kinds
}

/// Where the kind `group`/`plural` is served: the core kinds known here, others found by
/// discovery (`None`: not served, so nothing of it exists).
async fn served(
    client: &Client,
    group: &str,
    plural: &str,
    discovered: &mut Option<crate::discovery::Discovered>,
) -> Result<Option<ApiResource>> {
    if group.is_empty() {
        let kind = match plural {
            "pods" => "Pod",
            "services" => "Service",
            "persistentvolumeclaims" => "PersistentVolumeClaim",
            "configmaps" => "ConfigMap",
            "secrets" => "Secret",
            "replicationcontrollers" => "ReplicationController",
            "resourcequotas" => "ResourceQuota",
            _ => "",
        };
        if !kind.is_empty() {
            return Ok(Some(ApiResource::new("", "v1", kind, plural, true)));
        }
    }
    if discovered.is_none() {
        *discovered = Some(crate::discovery::preferred_resources(client).await?);
    }
    Ok(discovered
        .iter()
        .flat_map(|d| d.resources.iter())
        .find_map(|r| {
            (r.resource.group == group && r.resource.plural == plural && r.resource.namespaced)
                .then(|| r.resource.clone())
        }))
}

/// One quota: `status.hard` from `spec.hard`, `status.used` recounted (upstream
/// `syncResourceQuota`); written only when it changes.
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(current) = ctx.quotas.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let namespace = key.namespace.clone().unwrap_or_default();
    let quota_value = serde_json::to_value(current.as_ref()).unwrap_or(Value::Null);
    let hard = quota::from_json(quota_value.pointer("/spec/hard"));
    let names: BTreeSet<String> = hard.keys().cloned().collect();
    // Scopes are matched against `status.hard`: use the spec's for this count.
    let mut scoped = quota_value.clone();
    if let Some(status) = scoped.as_object_mut() {
        status.insert(
            "status".to_owned(),
            serde_json::json!({"hard": quota::to_json(&hard)}),
        );
    }
    let now_nanos = ctx.clock.now().as_nanosecond();
    let mut used = ResourceList::new();
    let mut discovered = None;
    for (group, plural) in kinds_of(&names) {
        let Some(resource) = served(&ctx.client, &group, &plural, &mut discovered).await? else {
            continue;
        };
        let api: Api<DynamicObject> = Api::dynamic(ctx.client.clone(), &resource, Some(&namespace));
        let items = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(err) if err.is_not_found() => Vec::new(),
            Err(err) => return Err(err.into()),
        };
        for item in items {
            let value = serde_json::to_value(&item).unwrap_or(Value::Null);
            if !quota::scopes_of(&scoped)
                .iter()
                .all(|scope| quota::in_scope(&group, &plural, &value, scope))
            {
                continue;
            }
            used = quota::add(&used, &quota::usage(&group, &plural, &value, now_nanos));
        }
    }
    // Every tracked resource is reported, zero when nothing uses it.
    let used: BTreeMap<String, _> = names
        .iter()
        .map(|name| {
            let quantity = used.get(name).cloned().unwrap_or_default();
            (name.clone(), quantity)
        })
        .collect();
    let wanted_hard = quota::to_json(&hard);
    let wanted_used = quota::to_json(&used);
    let status = quota_value.get("status");
    let same = |field: &str, wanted: &Value| {
        quota::from_json(status.and_then(|s| s.get(field))) == quota::from_json(Some(wanted))
            && status.and_then(|s| s.get(field)).is_some()
    };
    if same("hard", &wanted_hard) && same("used", &wanted_used) {
        return Ok(Action::AwaitChange);
    }
    let mut updated = (*current).clone();
    updated.status = Some(
        serde_json::from_value(serde_json::json!({"hard": wanted_hard, "used": wanted_used}))
            .unwrap_or_default(),
    );
    let api: Api<ResourceQuota> = Api::namespaced(ctx.client.clone(), &namespace);
    match api
        .replace_status(&key.name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(Action::AwaitChange),
        Err(err) if err.is_not_found() => Ok(Action::AwaitChange),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_counts_the_kinds_its_resources_name() {
        let names: BTreeSet<String> = [
            "pods",
            "requests.storage",
            "count/deployments.apps",
            "secrets",
            "count/widgets.example.com",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let kinds: Vec<(String, String)> = kinds_of(&names).into_iter().collect();
        let expected: Vec<(String, String)> = [
            ("", "persistentvolumeclaims"),
            ("", "pods"),
            ("", "secrets"),
            ("apps", "deployments"),
            ("example.com", "widgets"),
        ]
        .into_iter()
        .map(|(g, p)| (g.to_owned(), p.to_owned()))
        .collect();
        assert_eq!(kinds, expected);
    }
}
