//! The controller manager: one [`InformerFactory`] (one shared informer per resource across
//! all controllers), the enabled controllers on it, each with its own credentials
//! ([`crate::credentials`]), and an orderly stop: controllers drain their queues, then the
//! informers end. Optionally behind leader election, so that of
//! several managers against one server exactly one acts.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kubemock_client::leader::{LeaderElectionConfig, LeaderElector, LeaderEvent};
use kubemock_client::{Api, Client, InformerFactory, Transform};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::clusterroleaggregation::ClusterRoleAggregationController;
use crate::credentials::{
    CONTROLLER_MANAGER_COMMAND, ControllerClients, Credentials, KUBELET_COMMAND,
    LEADER_ELECTION_AGENT, SCHEDULER_AGENT, SCHEDULER_COMMAND, SHARED_INFORMERS_AGENT,
    TTL_AFTER_FINISHED_ACCOUNT, as_component,
};
use crate::cronjob::CronJobController;
use crate::daemonset::DaemonSetController;
use crate::deployment::DeploymentController;
use crate::disruption::DisruptionController;
use crate::endpoints::{EndpointSliceController, EndpointsController};
use crate::error::{Error, Result};
use crate::gc::GarbageCollector;
use crate::job::JobController;
use crate::kubelet::{Kubelet, KubeletConfig};
use crate::namespace::NamespaceController;
use crate::nodelifecycle::NodeLifecycleController;
use crate::podautoscaler::HorizontalController;
use crate::replicaset::ReplicaSetController;
use crate::resourcequota::ResourceQuotaController;
use crate::rootca::RootCaPublisher;
use crate::scheduler::Scheduler;
use crate::statefulset::StatefulSetController;
use crate::tainteviction::TaintEvictionController;
use crate::validatingadmissionpolicystatus::ValidatingAdmissionPolicyStatusController;
use crate::volume::binder::VolumeBinder;
use crate::volume::protection::{ClaimProtectionController, VolumeProtectionController};
use crate::volume::provisioner::Provisioner;

/// The ClusterRole aggregation controller's name (kube-controller-manager's, with its old
/// alias).
pub const CLUSTERROLE_AGGREGATION: &str = "clusterrole-aggregation-controller";

/// The namespace controller's name (kube-controller-manager's, with its old alias).
pub const NAMESPACE: &str = "namespace-controller";

/// The garbage collector's name (kube-controller-manager's, with its old alias).
pub const GARBAGE_COLLECTOR: &str = "garbage-collector-controller";

/// The DaemonSet controller's name (kube-controller-manager's, with its old alias).
pub const DAEMONSET: &str = "daemonset-controller";

/// The Deployment controller's name (kube-controller-manager's, with its old alias).
pub const DEPLOYMENT: &str = "deployment-controller";

/// The Endpoints controller's name (kube-controller-manager's, with its old alias).
pub const ENDPOINTS: &str = "endpoints-controller";

/// The EndpointSlice controller's name (kube-controller-manager's, with its old alias).
pub const ENDPOINTSLICE: &str = "endpointslice-controller";

/// The scheduler's name (kube-scheduler's component name).
pub const SCHEDULER: &str = "scheduler";

/// The simulated nodes and kubelet.
pub const KUBELET: &str = "kubelet";

/// The HorizontalPodAutoscaler controller's name (kube-controller-manager's, with its old
/// alias).
pub const HORIZONTAL_POD_AUTOSCALER: &str = "horizontal-pod-autoscaler-controller";

/// The Job controller's name (kube-controller-manager's, with its old alias).
pub const JOB: &str = "job-controller";

/// The CronJob controller's name (kube-controller-manager's, with its old alias).
pub const CRONJOB: &str = "cronjob-controller";

/// The ReplicaSet controller's name (kube-controller-manager's, with its old alias).
pub const REPLICASET: &str = "replicaset-controller";

/// The StatefulSet controller's name (kube-controller-manager's, with its old alias).
pub const STATEFULSET: &str = "statefulset-controller";

/// The disruption controller's name (kube-controller-manager's, with its old alias).
pub const DISRUPTION: &str = "disruption-controller";

/// The root CA certificate publisher's name (kube-controller-manager's, with its old alias).
pub const ROOT_CA_PUBLISHER: &str = "root-ca-certificate-publisher-controller";

/// The PersistentVolume binder's name (kube-controller-manager's, with its old alias).
pub const PERSISTENTVOLUME_BINDER: &str = "persistentvolume-binder-controller";

/// The claim protection controller's name (kube-controller-manager's, with its old alias).
pub const PVC_PROTECTION: &str = "persistentvolumeclaim-protection-controller";

/// The volume protection controller's name (kube-controller-manager's, with its old alias).
pub const PV_PROTECTION: &str = "persistentvolume-protection-controller";

/// The node lifecycle controller's name (kube-controller-manager's, with its old alias).
pub const NODE_LIFECYCLE: &str = "node-lifecycle-controller";

/// The taint eviction controller's name (kube-controller-manager's; it has no alias).
pub const TAINT_EVICTION: &str = "taint-eviction-controller";

/// The resource quota controller's name (kube-controller-manager's, with its old alias).
pub const RESOURCEQUOTA: &str = "resourcequota-controller";

/// The ValidatingAdmissionPolicy status controller's name (kube-controller-manager's; it has
/// no alias).
pub const VALIDATING_ADMISSION_POLICY_STATUS: &str = "validatingadmissionpolicy-status-controller";

/// kubemock's simulated dynamic provisioner and default StorageClass (an add-on on a real
/// cluster, as kind's local-path provisioner; not a kube-controller-manager controller).
pub const STORAGE_PROVISIONER: &str = "storage-provisioner";

/// Every controller this manager knows, with the old short aliases kube-controller-manager
/// still accepts.
pub const CONTROLLERS: &[(&str, &str)] = &[
    (CLUSTERROLE_AGGREGATION, "clusterrole-aggregation"),
    (CRONJOB, "cronjob"),
    (DAEMONSET, "daemonset"),
    (DEPLOYMENT, "deployment"),
    (DISRUPTION, "disruption"),
    (ENDPOINTS, "endpoint"),
    (ENDPOINTSLICE, "endpointslice"),
    (GARBAGE_COLLECTOR, "garbagecollector"),
    (HORIZONTAL_POD_AUTOSCALER, "horizontalpodautoscaling"),
    (JOB, "job"),
    (KUBELET, "nodes"),
    (NAMESPACE, "namespace"),
    (NODE_LIFECYCLE, "nodelifecycle"),
    (PERSISTENTVOLUME_BINDER, "persistentvolume-binder"),
    (PV_PROTECTION, "pv-protection"),
    (PVC_PROTECTION, "pvc-protection"),
    (REPLICASET, "replicaset"),
    (RESOURCEQUOTA, "resourcequota"),
    (ROOT_CA_PUBLISHER, "root-ca-cert-publisher"),
    (SCHEDULER, "default-scheduler"),
    (STATEFULSET, "statefulset"),
    (STORAGE_PROVISIONER, STORAGE_PROVISIONER),
    (TAINT_EVICTION, TAINT_EVICTION),
    (
        VALIDATING_ADMISSION_POLICY_STATUS,
        VALIDATING_ADMISSION_POLICY_STATUS,
    ),
];

/// Which controllers run, and how the simulated nodes behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerConfig {
    /// The enabled controllers, by canonical name.
    pub enabled: BTreeSet<String>,
    /// The simulated nodes (when [`KUBELET`] is enabled).
    pub kubelet: KubeletConfig,
    /// Where time-driven controllers read the time (CronJob schedules, Job deadlines and
    /// TTLs, progress deadlines, `minReadySeconds`, the kubelet's [`KubeletConfig::clock`],
    /// Events): the system clock unless a test or `--virtual-clock` sets a fake one (the
    /// API server's, in one process).
    pub clock: Clock,
    /// The cluster's CA bundle (PEM) that [`ROOT_CA_PUBLISHER`] publishes in every namespace
    /// (kube-controller-manager's `--root-ca-file`, else its kubeconfig's CA); without it
    /// that controller does not run, and says so at startup.
    pub root_ca: Option<String>,
}

impl Default for ManagerConfig {
    /// Every controller, three nodes, pods Ready at once.
    fn default() -> Self {
        ManagerConfig {
            enabled: CONTROLLERS
                .iter()
                .map(|(name, _)| (*name).to_owned())
                .collect(),
            kubelet: KubeletConfig::default(),
            clock: Clock::system(),
            root_ca: None,
        }
    }
}

impl ManagerConfig {
    /// From a `--controllers` list as kube-controller-manager reads it: `*` is every
    /// controller, `name` enables one, `-name` disables one (names or their short aliases).
    pub fn from_list(list: &str) -> Result<Self> {
        let mut enabled = BTreeSet::new();
        let mut disabled = BTreeSet::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if item == "*" {
                enabled.extend(Self::default().enabled);
                continue;
            }
            let (negated, name) = match item.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, item),
            };
            let canonical = CONTROLLERS
                .iter()
                .find(|(full, alias)| *full == name || *alias == name)
                .map(|(full, _)| (*full).to_owned())
                .ok_or_else(|| {
                    let known: Vec<&str> = CONTROLLERS.iter().map(|(n, _)| *n).collect();
                    Error::Config(format!(
                        "unknown controller {name:?} (known: {})",
                        known.join(", ")
                    ))
                })?;
            if negated {
                disabled.insert(canonical);
            } else {
                enabled.insert(canonical);
            }
        }
        enabled.retain(|name| !disabled.contains(name));
        Ok(ManagerConfig {
            enabled,
            kubelet: KubeletConfig::default(),
            clock: Clock::system(),
            root_ca: None,
        })
    }

    /// Sets the simulated nodes.
    #[must_use]
    pub fn with_kubelet(mut self, kubelet: KubeletConfig) -> Self {
        self.kubelet = kubelet;
        self
    }

    /// Sets the CA bundle (PEM) the root CA publisher publishes.
    #[must_use]
    pub fn with_root_ca(mut self, pem: impl Into<String>) -> Self {
        self.root_ca = Some(pem.into());
        self
    }

    /// Sets the clock of the time-driven controllers (a fake one in tests, the server's
    /// with `--virtual-clock`).
    #[must_use]
    pub fn with_clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = clock.into();
        self
    }

    /// Whether `name` runs.
    pub fn is_enabled(&self, name: &str) -> bool {
        self.enabled.contains(name)
    }
}

/// Runs the enabled controllers against `client`'s server until `token` is cancelled, every
/// one as `client`'s user ([`Credentials::shared`]).
pub async fn run(client: Client, config: ManagerConfig, token: CancellationToken) {
    run_as(Credentials::shared(client), config, token).await;
}

/// Runs the enabled controllers with `credentials` until `token` is cancelled: the shared
/// informers as the manager, each controller as itself (its ServiceAccount, with
/// [`Credentials::service_accounts`]), the scheduler and the simulated kubelets as theirs,
/// on informers of their own when their client is.
pub async fn run_as(credentials: Credentials, config: ManagerConfig, token: CancellationToken) {
    let factory = Arc::new(informer_factory(as_component(
        &credentials.root,
        CONTROLLER_MANAGER_COMMAND,
        Some(SHARED_INFORMERS_AGENT),
    )));
    let mut factories = vec![factory.clone()];
    let mut clients = ControllerClients::new(&credentials, token.child_token());
    let mut controllers = JoinSet::new();
    let started = start(
        &credentials,
        &config,
        &mut clients,
        &mut factories,
        &mut controllers,
        &token,
    )
    .await;
    let informers = token.child_token();
    if started.is_some() {
        for factory in &factories {
            factory.start(&informers);
        }
        tracing::info!(controllers = ?config.enabled, server = credentials.root.base_url(), "controller manager started");
    }
    token.cancelled().await;
    while controllers.join_next().await.is_some() {}
    clients.shutdown().await;
    informers.cancel();
    for factory in factories {
        factory.shutdown().await;
    }
    tracing::info!("controller manager stopped");
}

/// Makes the enabled controllers, each with its client, on `factories` (the shared one
/// first), and spawns them into `controllers`; `None` when `token` was cancelled before all
/// had their clients.
async fn start(
    credentials: &Credentials,
    config: &ManagerConfig,
    clients: &mut ControllerClients,
    factories: &mut Vec<Arc<InformerFactory>>,
    controllers: &mut JoinSet<()>,
    token: &CancellationToken,
) -> Option<()> {
    let factory = factories[0].clone();
    if config.is_enabled(GARBAGE_COLLECTOR) {
        let client = clients.client(GARBAGE_COLLECTOR).await?;
        let collector = GarbageCollector::new(client, factory.clone());
        controllers.spawn(collector.run(token.child_token()));
    }
    if config.is_enabled(DEPLOYMENT) {
        let controller = DeploymentController::new(clients.client(DEPLOYMENT).await?, &factory)
            .with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(DAEMONSET) {
        let controller = DaemonSetController::new(clients.client(DAEMONSET).await?, &factory)
            .with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(REPLICASET) {
        let controller = ReplicaSetController::new(clients.client(REPLICASET).await?, &factory)
            .with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(STATEFULSET) {
        let client = clients.client(STATEFULSET).await?;
        let controller =
            StatefulSetController::new(client, &factory).with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(JOB) {
        let ttl = clients.account_client(TTL_AFTER_FINISHED_ACCOUNT).await?;
        let controller = JobController::new(clients.client(JOB).await?, &factory)
            .with_ttl_client(ttl)
            .with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(ENDPOINTS) {
        let controller = EndpointsController::new(clients.client(ENDPOINTS).await?, &factory)
            .with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(ENDPOINTSLICE) {
        let client = clients.client(ENDPOINTSLICE).await?;
        let controller =
            EndpointSliceController::new(client, &factory).with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(CRONJOB) {
        let client = clients.client(CRONJOB).await?;
        let controller = CronJobController::new(client, &factory, config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(SCHEDULER) {
        let agent =
            |client: &Client| as_component(client, SCHEDULER_COMMAND, Some(SCHEDULER_AGENT));
        let (client, informers) =
            own_or_shared(&credentials.scheduler.as_ref().map(agent), factories);
        let scheduler = Scheduler::new(
            client.unwrap_or_else(|| agent(&credentials.root)),
            &informers,
        )
        .with_clock(config.clock.clone());
        controllers.spawn(scheduler.run(token.child_token()));
    }
    if config.is_enabled(KUBELET) {
        let agent = |client: &Client| as_component(client, KUBELET_COMMAND, None);
        let (client, informers) =
            own_or_shared(&credentials.kubelet.as_ref().map(agent), factories);
        let client = client.unwrap_or_else(|| agent(&credentials.root));
        let kubelet = Kubelet::new(client, &informers, config.kubelet.clone())
            .with_clock(config.clock.clone());
        controllers.spawn(kubelet.run(token.child_token()));
    }
    if config.is_enabled(NAMESPACE) {
        let controller = NamespaceController::new(clients.client(NAMESPACE).await?, &factory)
            .with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(DISRUPTION) {
        let client = clients.client(DISRUPTION).await?;
        let controller = DisruptionController::new(client, &factory, config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(ROOT_CA_PUBLISHER) {
        match &config.root_ca {
            Some(root_ca) => {
                let client = clients.client(ROOT_CA_PUBLISHER).await?;
                let controller = RootCaPublisher::new(client, &factory, root_ca.clone());
                controllers.spawn(controller.run(token.child_token()));
            }
            None => tracing::warn!(
                controller = ROOT_CA_PUBLISHER,
                "not started: no CA bundle to publish (--root-ca-file, or a kubeconfig with the server's CA)"
            ),
        }
    }
    if config.is_enabled(PERSISTENTVOLUME_BINDER) {
        let client = clients.client(PERSISTENTVOLUME_BINDER).await?;
        let controller = VolumeBinder::new(client, &factory).with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(PVC_PROTECTION) {
        let client = clients.client(PVC_PROTECTION).await?;
        let controller = ClaimProtectionController::new(client, &factory);
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(VALIDATING_ADMISSION_POLICY_STATUS) {
        let client = clients.client(VALIDATING_ADMISSION_POLICY_STATUS).await?;
        let controller = ValidatingAdmissionPolicyStatusController::new(client, &factory);
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(PV_PROTECTION) {
        let client = clients.client(PV_PROTECTION).await?;
        let controller = VolumeProtectionController::new(client, &factory);
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(STORAGE_PROVISIONER) {
        // An external provisioner's permissions are the binder's (volumes: create, delete;
        // claims and classes: read; events), so it runs as the binder's account.
        let client = clients.client(PERSISTENTVOLUME_BINDER).await?;
        let controller = Provisioner::new(client, &factory).with_clock(config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(NODE_LIFECYCLE) {
        let client = clients.client(NODE_LIFECYCLE).await?;
        let controller = NodeLifecycleController::new(client, &factory, config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(TAINT_EVICTION) {
        let client = clients.client(TAINT_EVICTION).await?;
        let controller = TaintEvictionController::new(client, &factory, config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(RESOURCEQUOTA) {
        let client = clients.client(RESOURCEQUOTA).await?;
        let controller = ResourceQuotaController::new(client, &factory, config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(HORIZONTAL_POD_AUTOSCALER) {
        let client = clients.client(HORIZONTAL_POD_AUTOSCALER).await?;
        let controller = HorizontalController::new(client, &factory, config.clock.clone());
        controllers.spawn(controller.run(token.child_token()));
    }
    if config.is_enabled(CLUSTERROLE_AGGREGATION) {
        let client = clients.client(CLUSTERROLE_AGGREGATION).await?;
        let controller = ClusterRoleAggregationController::new(client, &factory);
        controllers.spawn(controller.run(token.child_token()));
    }
    Some(())
}

/// Informers as kube-controller-manager's and kube-scheduler's: without managed fields,
/// which no controller reads (the simulated kubelets share the choice: theirs never do).
fn informer_factory(client: Client) -> InformerFactory {
    InformerFactory::new(client).with_transform(Transform::DropManagedFields)
}

/// A component's own client with informers of its own (added to `factories`), or `None` and
/// the shared informers.
fn own_or_shared(
    own: &Option<Client>,
    factories: &mut Vec<Arc<InformerFactory>>,
) -> (Option<Client>, Arc<InformerFactory>) {
    match own {
        Some(client) => {
            let factory = Arc::new(informer_factory(client.clone()));
            factories.push(factory.clone());
            (Some(client.clone()), factory)
        }
        None => (None, factories[0].clone()),
    }
}

/// Where the leader-election lease lives, and who this candidate is.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Namespace of the Lease (`kube-system`).
    pub namespace: String,
    /// Name of the Lease (`kube-controller-manager`).
    pub name: String,
    /// Timings and this candidate's identity.
    pub config: LeaderElectionConfig,
}

impl LeaderElection {
    /// kube-controller-manager's lease (`kube-system/kube-controller-manager`) for `identity`.
    pub fn new(identity: &str) -> Self {
        LeaderElection {
            namespace: "kube-system".to_owned(),
            name: "kube-controller-manager".to_owned(),
            config: LeaderElectionConfig::new(identity),
        }
    }
}

/// Like [`run`], but only while this candidate holds the lease: it campaigns, runs the
/// controllers while leading, and stops them when leadership ends (then returns, as
/// kube-controller-manager exits, so a supervisor restarts it as a candidate).
pub async fn run_with_leader_election(
    credentials: Credentials,
    config: ManagerConfig,
    election: LeaderElection,
    token: CancellationToken,
) {
    // kube-controller-manager's `rootClientBuilder.ClientOrDie("leader-election")`.
    let client = as_component(
        &credentials.root,
        CONTROLLER_MANAGER_COMMAND,
        Some(LEADER_ELECTION_AGENT),
    );
    let leases: Api<Lease> = Api::namespaced(client, &election.namespace);
    let elector = LeaderElector::new(leases, &election.name, election.config)
        .with_clock(config.clock.clone());
    elector
        .run(
            token,
            move |leading| run_as(credentials, config, leading),
            |event| match event {
                LeaderEvent::NewLeader(holder) => tracing::info!(%holder, "new leader"),
                LeaderEvent::StartedLeading => tracing::info!("started leading"),
                LeaderEvent::StoppedLeading => tracing::info!("stopped leading"),
            },
        )
        .await;
}

/// [`run_with_leader_election`] again and again until `token` is cancelled: a candidate that
/// lost the lease stops its controllers and campaigns anew, for a process that has other work
/// than the controllers (`kubemock serve --leader-elect`, docs/etcd.md#leader-election).
pub async fn campaign(
    credentials: Credentials,
    config: ManagerConfig,
    election: LeaderElection,
    token: CancellationToken,
) {
    while !token.is_cancelled() {
        run_with_leader_election(
            credentials.clone(),
            config.clone(),
            election.clone(),
            token.clone(),
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_lists_enable_and_disable_by_name_or_alias() {
        assert_eq!(
            ManagerConfig::from_list("*").expect("valid"),
            ManagerConfig::default()
        );
        assert!(
            ManagerConfig::from_list("namespace")
                .expect("valid")
                .is_enabled(NAMESPACE)
        );
        assert!(
            !ManagerConfig::from_list("*,-namespace")
                .expect("valid")
                .is_enabled(NAMESPACE)
        );
        assert!(
            ManagerConfig::from_list("")
                .expect("valid")
                .enabled
                .is_empty()
        );
        let err = ManagerConfig::from_list("nope").expect_err("unknown");
        assert!(
            err.to_string().contains("unknown controller \"nope\""),
            "{err}"
        );
    }
}
