//! The ClusterRole aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation-controller`, upstream
//! `pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`): a ClusterRole
//! with an `aggregationRule` holds the rules of the ClusterRoles its selectors match
//! (`aggregate`), written by server-side apply as the field manager
//! `clusterrole-aggregation-controller` (forced), and only when they differ. That is how the
//! bootstrap `admin`, `edit` and `view` get their rules (each from its `system:aggregate-to-*`
//! role, `edit` from `view`, `admin` from `edit`), and how a ClusterRole labelled
//! `rbac.authorization.k8s.io/aggregate-to-edit: "true"` adds to them.
//!
//! Which role depends on which is not tracked: as upstream, any change to any ClusterRole
//! queues every aggregated one (the set is small), and a chain settles in as many syncs as it
//! is long.

mod aggregate;

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::ClusterRole;
use kubemock_client::controller::Action;
use kubemock_client::informer::Handlers;
use kubemock_client::{
    Api, Client, Controller, InformerFactory, ObjectKey, Patch, PatchParams, Resource,
    SharedInformer, Store, WorkQueue,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// Concurrent syncs (kube-controller-manager runs this controller with 5 workers).
const WORKERS: usize = 5;
/// The field manager of the aggregated rules (upstream's).
pub const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// What a sync needs.
struct Context {
    client: Client,
    roles: Store<ClusterRole>,
}

/// The ClusterRole aggregation controller.
pub struct ClusterRoleAggregationController {
    client: Client,
    roles: SharedInformer<ClusterRole>,
}

impl ClusterRoleAggregationController {
    /// A controller on `factory`'s shared ClusterRole informer.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        ClusterRoleAggregationController {
            client,
            roles: factory.informer::<ClusterRole>(),
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            roles: self.roles.store(),
        });
        let controller =
            Controller::new("clusterrole-aggregation", self.roles.clone()).workers(WORKERS);
        // Any change may change what an aggregated role selects: queue them all.
        let (queue, roles) = (controller.queue(), self.roles.store());
        let queue_all = move || queue_aggregated(&queue, &roles);
        let (on_add, on_update, on_delete) = (queue_all.clone(), queue_all.clone(), queue_all);
        self.roles.add_handler(
            Handlers::new()
                .on_add(move |_: &Arc<ClusterRole>| on_add())
                .on_update(move |_: &Arc<ClusterRole>, _: &Arc<ClusterRole>| on_update())
                .on_delete(move |_: &Arc<ClusterRole>| on_delete()),
        );
        controller
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// Queues every cached ClusterRole that has an aggregation rule (upstream's `enqueue`).
fn queue_aggregated(queue: &WorkQueue<ObjectKey>, roles: &Store<ClusterRole>) {
    for role in roles.list() {
        if role.aggregation_rule.is_some() {
            queue.add(role.key());
        }
    }
}

/// Brings one aggregated role's rules up to date (upstream's `syncClusterRole`).
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(role) = ctx.roles.get(&key) else {
        return Ok(Action::await_change());
    };
    let Some(rules) = aggregate::aggregated_rules(&role, &ctx.roles.list())? else {
        return Ok(Action::await_change());
    };
    if aggregate::same_rules(role.rules.as_ref(), &rules) {
        return Ok(Action::await_change());
    }
    let name = role.metadata.name.as_deref().unwrap_or_default();
    // Upstream applies `ClusterRole(name).WithRules(...)`: no rules, no field.
    let mut config = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                            "metadata": {"name": name}});
    if !rules.is_empty() {
        config["rules"] = serde_json::to_value(&rules).unwrap_or_default();
    }
    tracing::debug!(
        role = name,
        rules = rules.len(),
        "aggregating cluster role rules"
    );
    Api::<ClusterRole>::all(ctx.client.clone())
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(config),
        )
        .await?;
    Ok(Action::await_change())
}
