//! The state every handler shares: the store behind its trait, the server's configuration and
//! its shutdown token. A cheap-clone handle over `Arc<Inner>`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kubemock_storage::{KeyValue, Kv, Revision};
use parking_lot::{Mutex, RwLock};
use tokio::sync::{Notify, watch};
use tracing::warn;

use crate::allocator::{NodePortRange, ServiceAllocator, ServiceCidr};
use crate::status::{ApiError, ApiResult};

use crate::limits::{
    DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT, DEFAULT_MAX_REQUEST_BODY_BYTES_INFLIGHT,
    DEFAULT_MAX_REQUESTS_INFLIGHT, InFlight,
};
use crate::metrics::Metrics;
use crate::openapi::Documents;
use crate::registry::Registry;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long a definition's write waits for the definition to be served.
const CRD_SYNC_WAIT: Duration = Duration::from_secs(5);

/// Namespaces whose phase admission remembers; beyond that the memory starts over.
const NAMESPACE_PHASES_KEPT: usize = 4096;

/// Bookmarks are sent about once a minute, like the real server's watch cache (docs/api-behaviour.md#bookmarks).
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// How the API server behaves.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Interval between BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Read-only requests (GET, HEAD) in flight at most; more are answered 429. Watches are
    /// not counted. 0 is unlimited. Default [`DEFAULT_MAX_REQUESTS_INFLIGHT`].
    pub max_requests_inflight: usize,
    /// Other requests in flight at most; more are answered 429. 0 is unlimited. Default
    /// [`DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT`].
    pub max_mutating_requests_inflight: usize,
    /// Bytes of request bodies in flight at most (each body counted by its `Content-Length`, or
    /// as the 3 MiB body limit when its length is unknown); a request that would go past it is
    /// answered 429. 0 is unlimited. Default [`DEFAULT_MAX_REQUEST_BODY_BYTES_INFLIGHT`].
    pub max_request_body_bytes_inflight: usize,
    /// Where Services get their cluster IPs (`--service-cluster-ip-range`); the `kubernetes`
    /// Service has the first address. Default 10.96.0.0/12.
    pub service_cluster_ip_range: ServiceCidr,
    /// Where NodePort and LoadBalancer Services get their node ports
    /// (`--service-node-port-range`). Default 30000-32767.
    pub service_node_port_range: NodePortRange,
    /// Which of the cluster's other components run in this process, for `componentstatuses`
    /// (the binary marks the controller manager and the scheduler when it runs them).
    pub components: ComponentHealth,
    /// Whether the ServiceAccount admission plugin acts (a created pod gets the account
    /// `default` and its token volume); false with `--disable-admission-plugins=ServiceAccount`,
    /// as envtest starts kube-apiserver. Default true (upstream's default plugins).
    pub service_account_admission: bool,
    /// TLS serving and authentication (`--secure` and kube-apiserver's flags: `security`);
    /// `None` is the open mode: plain HTTP, every request `system:admin`. Default `None`.
    pub security: Option<crate::security::Security>,
    /// The cluster CA and the service-account keys (the same as `security`'s). Default: both
    /// generated in memory on first use.
    pub pki: Arc<crate::pki::Pki>,
    /// The issuer of service-account tokens (`--service-account-issuer`). Default
    /// `https://kubernetes.default.svc.cluster.local`, as kubeadm and kind set it.
    pub service_account_issuer: String,
    /// The audiences the API server accepts tokens for (`--api-audiences`); upstream's default,
    /// the issuer, when empty.
    pub api_audiences: Vec<String>,
    /// Who decides what a request may do (`--authorization-mode`, `authz`): `AlwaysAllow`
    /// (the default; `ServerConfig::secure`'s is `RBAC`), `AlwaysDeny`, `RBAC`, or a chain of
    /// them (also with `Node`, which is not enforced). Requests by members of
    /// `system:masters` (the open mode's user) are allowed whatever the mode.
    pub authorization_mode: crate::authz::AuthorizationMode,
    /// Audit logging (`--audit-log-path` with `--audit-policy-file`: `audit`); `None` logs
    /// nothing and costs nothing. Default `None`.
    pub audit: Option<crate::audit::AuditConfig>,
    /// The request log of `testing.kubemock.dev/v1` `requests` (`requestlog`): its size
    /// (`--request-log-size`, 0 turns it off) and whether it keeps bodies
    /// (`--request-log-bodies`). Default: 100,000 entries, no bodies.
    pub request_log: crate::requestlog::RequestLogConfig,
    /// Objects created at startup (`--load`, `fixtures`), before the first connection is
    /// accepted. Default none.
    pub fixtures: Vec<crate::fixtures::Fixture>,
    /// A snapshot (`kubemock snapshot save`, `reset::snapshot`) written into the store before
    /// the bootstrap (`--restore`); the store must be empty. Default none.
    pub restore: Option<Arc<serde_json::Value>>,
    /// Notified once the server accepts connections (after the bootstrap, the restore and the
    /// fixtures), so that the binary announces itself only then. Default none.
    pub ready: Option<Arc<tokio::sync::Notify>>,
    /// Filled with the server's [`crate::LocalApi`] before `ready` is notified: how callers in
    /// this process reach it without a socket. Default none.
    pub local: Option<crate::LocalSlot>,
    /// Where the server's timestamps come from (`creationTimestamp`, `deletionTimestamp`,
    /// managed fields' times, conditions it writes, ages in tables): the system clock, or a
    /// virtual one (`--virtual-clock`) that `testing.kubemock.dev/v1` `clocks/cluster`
    /// moves, shared with the in-process controllers. The audit log, the request log, token
    /// and certificate lifetimes stay on real time. Default: the system clock.
    pub clock: kubemock_apimachinery::clock::Clock,
    /// The bytes the process's allocations hold now, for `/metrics`'
    /// `kubemock_heap_in_use_bytes`: only a binary whose allocator counts them has it (the
    /// `kubemock` binary built with its `heap-count` feature). `None` leaves the gauge out.
    pub heap_in_use: Option<fn() -> usize>,
}

/// Which components (`controller-manager`, `scheduler`) run alongside this server, as
/// `componentstatuses` reports them. A cheap-clone handle: the binary marks what it starts.
#[derive(Debug, Clone, Default)]
pub struct ComponentHealth {
    running: Arc<parking_lot::RwLock<std::collections::BTreeSet<String>>>,
}

impl ComponentHealth {
    /// Marks `component` as running (`true`) or stopped.
    pub fn set(&self, component: &str, running: bool) {
        let mut set = self.running.write();
        if running {
            set.insert(component.to_owned());
        } else {
            set.remove(component);
        }
    }

    /// Whether `component` was marked running.
    pub fn is_running(&self, component: &str) -> bool {
        self.running.read().contains(component)
    }
}

impl PartialEq for ComponentHealth {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.running, &other.running)
    }
}

impl Eq for ComponentHealth {}

impl ServerConfig {
    /// The default configuration in the secure mode of `options`, with cluster keys generated
    /// in memory (`Security::load`).
    pub fn secure(
        options: &crate::security::SecurityOptions,
    ) -> Result<ServerConfig, crate::security::SecurityError> {
        let pki = Arc::new(crate::pki::Pki::new());
        let security = crate::security::Security::load(options, Arc::clone(&pki))?;
        Ok(ServerConfig {
            security: Some(security),
            pki,
            authorization_mode: crate::authz::AuthorizationMode::rbac(),
            ..ServerConfig::default()
        })
    }

    /// The audiences the API server accepts tokens for, and TokenRequest's default:
    /// `api_audiences`, else the issuer (upstream's default of `--api-audiences`).
    pub fn audiences(&self) -> Vec<String> {
        if self.api_audiences.is_empty() {
            vec![self.service_account_issuer.clone()]
        } else {
            self.api_audiences.clone()
        }
    }
}

/// The default issuer of the tokens (`--service-account-issuer`, as kubeadm and kind set it),
/// and so the API server's audience (`--api-audiences` defaults to the issuer).
pub(crate) const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bookmark_interval: DEFAULT_BOOKMARK_INTERVAL,
            max_requests_inflight: DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight: DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            max_request_body_bytes_inflight: DEFAULT_MAX_REQUEST_BODY_BYTES_INFLIGHT,
            service_cluster_ip_range: ServiceCidr::default(),
            service_node_port_range: NodePortRange::default(),
            components: ComponentHealth::default(),
            service_account_admission: true,
            security: None,
            pki: Arc::new(crate::pki::Pki::new()),
            service_account_issuer: DEFAULT_ISSUER.to_owned(),
            api_audiences: Vec::new(),
            authorization_mode: crate::authz::AuthorizationMode::default(),
            audit: None,
            request_log: crate::requestlog::RequestLogConfig::default(),
            fixtures: Vec::new(),
            restore: None,
            ready: None,
            local: None,
            clock: kubemock_apimachinery::clock::Clock::system(),
            heap_in_use: None,
        }
    }
}

/// Shared server state.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    /// The revisioned store: the only way this crate reaches storage.
    store: Arc<dyn Kv>,
    /// Every served resource.
    registry: Registry,
    config: ServerConfig,
    /// Cancelled when the server shuts down; long-running requests (watches) select on it.
    shutdown: CancellationToken,
    /// The tasks that feed watch streams; `serve` waits for them on shutdown.
    tasks: TaskTracker,
    /// The OpenAPI documents, built on first use and again when the registry's custom
    /// resources changed (with the registry generation they were built for).
    openapi: Mutex<Option<(u64, Arc<Documents>)>>,
    /// The store revision the CustomResourceDefinitions controller has caught up with.
    crd_progress: watch::Sender<Revision>,
    /// Wakes the CustomResourceDefinitions controller to ask its watch for progress: a
    /// definition's write that changed nothing has no event to wait for, so the controller
    /// learns from the store's progress answer that it has seen everything up to now.
    crd_progress_wanted: Notify,
    /// Definition writes that gave up waiting for the controller ([`CRD_SYNC_WAIT`]).
    crd_sync_timeouts: AtomicU64,
    /// Watches that fell behind the store's live events and went on from its history
    /// (`handlers/watch.rs`).
    watch_catch_ups: AtomicU64,
    /// Request metrics, written by the pipeline's metrics layer, read by `/metrics`.
    metrics: Metrics,
    /// The in-flight limit's slots, taken by the pipeline's limit layer, read by `/metrics`.
    in_flight: InFlight,
    /// Who holds which Service cluster IP and node port: records in the store, repaired from
    /// the stored Services on first use (by the first Service write or delete).
    service_allocator: parking_lot::RwLock<Arc<tokio::sync::OnceCell<Arc<ServiceAllocator>>>>,
    /// Whether each namespace admission has read is Terminating, with the mod revision of the
    /// namespace it was read from: a create checks the revision (an index lookup) instead of
    /// reading and parsing the namespace every time.
    namespace_phases: Mutex<HashMap<String, (Revision, bool)>>,
    /// The cluster CA and the service-account key (`ServerConfig::pki`).
    pki: Arc<crate::pki::Pki>,
    /// What decides whether a user may do what a request asks (`authz`), built from the
    /// configuration's authorization mode.
    authorizer: Arc<dyn crate::authz::Authorizer>,
    /// The RBAC authorizer of that chain, if it has one: its index is loaded and followed by
    /// `authz::rbac::start`, and escalation prevention resolves rules with it.
    rbac: Option<Arc<crate::authz::rbac::Rbac>>,
    /// The admission webhook configurations in use and the clients that call webhooks
    /// (`webhook`), loaded and followed by `webhook::start`.
    webhooks: Arc<crate::webhook::Webhooks>,
    /// The request log (`requestlog`), `None` when it is off; pushed to by the pipeline's
    /// layer, read and cleared by `handlers::testing`.
    request_log: Option<crate::requestlog::RequestLog>,
    /// The Faults in force (`faults`), loaded and followed by `faults::start`; read by the
    /// pipeline's fault step.
    faults: Arc<crate::faults::Faults>,
    /// The store as it was once the server started (`reset`), what a reset goes back to;
    /// written once by `serve`.
    baseline: RwLock<Option<Arc<crate::reset::Baseline>>>,
    /// Recent events' watch lines, encoded once for every plain watch (`event_lines`).
    event_lines: crate::event_lines::EventLines,
}

impl AppState {
    /// State over `store`, stopped by `shutdown`.
    pub fn new(store: Arc<dyn Kv>, config: ServerConfig, shutdown: CancellationToken) -> Self {
        let in_flight = InFlight::new(
            config.max_requests_inflight,
            config.max_mutating_requests_inflight,
            config.max_request_body_bytes_inflight,
        );
        let pki = Arc::clone(&config.pki);
        let (authorizer, rbac) = crate::authz::build(&config.authorization_mode);
        let request_log = crate::requestlog::RequestLog::new(config.request_log);
        AppState {
            inner: Arc::new(Inner {
                store,
                registry: Registry::builtin(),
                config,
                shutdown,
                tasks: TaskTracker::new(),
                openapi: Mutex::new(None),
                crd_progress: watch::Sender::new(0),
                crd_progress_wanted: Notify::new(),
                crd_sync_timeouts: AtomicU64::new(0),
                watch_catch_ups: AtomicU64::new(0),
                metrics: Metrics::new(),
                in_flight,
                service_allocator: parking_lot::RwLock::new(Arc::default()),
                namespace_phases: Mutex::new(HashMap::new()),
                pki,
                authorizer,
                rbac,
                webhooks: Arc::default(),
                request_log,
                faults: Arc::default(),
                baseline: RwLock::new(None),
                event_lines: crate::event_lines::EventLines::default(),
            }),
        }
    }

    /// The server's clock ([`ServerConfig::clock`]).
    pub fn clock(&self) -> &kubemock_apimachinery::clock::Clock {
        &self.inner.config.clock
    }

    /// The cluster CA and the service-account signing key.
    pub fn pki(&self) -> &crate::pki::Pki {
        &self.inner.pki
    }

    /// The authorizer every request and access review asks.
    pub(crate) fn authorizer(&self) -> &dyn crate::authz::Authorizer {
        self.inner.authorizer.as_ref()
    }

    /// The same authorizer, shared (for the CEL authorizer library's checks).
    pub(crate) fn shared_authorizer(&self) -> Arc<dyn crate::authz::Authorizer> {
        Arc::clone(&self.inner.authorizer)
    }

    /// The RBAC authorizer, when the authorization mode has one.
    pub(crate) fn rbac(&self) -> Option<&Arc<crate::authz::rbac::Rbac>> {
        self.inner.rbac.as_ref()
    }

    /// The startup state a reset goes back to (`None` until the server has started).
    pub(crate) fn baseline(&self) -> Option<Arc<crate::reset::Baseline>> {
        self.inner.baseline.read().clone()
    }

    /// Records the startup state.
    pub(crate) fn set_baseline(&self, baseline: crate::reset::Baseline) {
        *self.inner.baseline.write() = Some(Arc::new(baseline));
    }

    /// The Faults in force.
    pub(crate) fn faults(&self) -> &Arc<crate::faults::Faults> {
        &self.inner.faults
    }

    /// The admission webhooks and the webhook clients.
    pub(crate) fn webhooks(&self) -> &Arc<crate::webhook::Webhooks> {
        &self.inner.webhooks
    }

    /// The request log, when it is on.
    pub(crate) fn request_log(&self) -> Option<&crate::requestlog::RequestLog> {
        self.inner.request_log.as_ref()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Kv> {
        &self.inner.store
    }

    /// The latest stored state of `key`, if it exists: the one read of a single key that
    /// handlers, admission, tokens and the startup objects share.
    pub(crate) async fn fetch(&self, key: &str) -> ApiResult<Option<KeyValue>> {
        let found = self
            .store()
            .get(key.as_bytes(), None)
            .await
            .map_err(ApiError::from_storage)?;
        Ok(found.kv)
    }

    /// The resource registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The tracker of watch tasks.
    pub fn tasks(&self) -> &TaskTracker {
        &self.inner.tasks
    }

    /// Recent events' watch lines, shared by the watches that send them.
    pub(crate) fn event_lines(&self) -> &crate::event_lines::EventLines {
        &self.inner.event_lines
    }

    /// The OpenAPI documents of the served resources (built on first use: tens of
    /// milliseconds, so not on the startup path; rebuilt after custom resources changed).
    pub(crate) fn openapi(&self) -> Arc<Documents> {
        let generation = self.inner.registry.generation();
        if let Some((built, documents)) = &*self.inner.openapi.lock()
            && *built == generation
        {
            return Arc::clone(documents);
        }
        // Built outside the lock: concurrent first requests may both build, harmlessly.
        let documents = Arc::new(Documents::build(&self.inner.registry));
        *self.inner.openapi.lock() = Some((generation, Arc::clone(&documents)));
        documents
    }

    /// Records that the CustomResourceDefinitions controller has caught up with `revision`.
    pub(crate) fn crd_caught_up(&self, revision: Revision) {
        self.inner.crd_progress.send_if_modified(|current| {
            let moved = revision > *current;
            if moved {
                *current = revision;
            }
            moved
        });
    }

    /// Waits (a bounded time) until the CustomResourceDefinitions controller has seen every
    /// write up to `revision`: a definition's write answers once it is served.
    pub(crate) async fn crd_synced(&self, revision: Revision) {
        let mut progress = self.inner.crd_progress.subscribe();
        if *progress.borrow_and_update() >= revision {
            return;
        }
        self.inner.crd_progress_wanted.notify_one();
        let caught_up = progress.wait_for(|seen| *seen >= revision);
        if tokio::time::timeout(CRD_SYNC_WAIT, caught_up)
            .await
            .is_err()
        {
            self.inner.crd_sync_timeouts.fetch_add(1, Ordering::Relaxed);
            warn!(
                revision,
                "custom resource definitions controller did not catch up in time"
            );
        }
    }

    /// Resolves when a definition's write waits for the controller to report its progress.
    pub(crate) async fn crd_progress_wanted(&self) {
        self.inner.crd_progress_wanted.notified().await;
    }

    /// How many definition writes gave up waiting for the controller (`/metrics`).
    pub(crate) fn crd_sync_timeouts(&self) -> u64 {
        self.inner.crd_sync_timeouts.load(Ordering::Relaxed)
    }

    /// Counts a watch that fell behind the live events and catches up from history.
    pub(crate) fn note_watch_catch_up(&self) {
        self.inner.watch_catch_ups.fetch_add(1, Ordering::Relaxed);
    }

    /// How many watches caught up from history after falling behind (`/metrics`).
    pub(crate) fn watch_catch_ups(&self) -> u64 {
        self.inner.watch_catch_ups.load(Ordering::Relaxed)
    }

    /// The shutdown token.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// The request metrics.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The in-flight limit.
    pub(crate) fn in_flight(&self) -> &InFlight {
        &self.inner.in_flight
    }

    /// Whether `namespace` is Terminating, if it was recorded at exactly `revision`.
    pub(crate) fn namespace_terminating(
        &self,
        namespace: &str,
        revision: Revision,
    ) -> Option<bool> {
        match self.inner.namespace_phases.lock().get(namespace) {
            Some(&(seen, terminating)) if seen == revision => Some(terminating),
            _ => None,
        }
    }

    /// Records whether `namespace` at `revision` is Terminating.
    pub(crate) fn record_namespace_phase(
        &self,
        namespace: &str,
        revision: Revision,
        terminating: bool,
    ) {
        let mut phases = self.inner.namespace_phases.lock();
        if phases.len() >= NAMESPACE_PHASES_KEPT && !phases.contains_key(namespace) {
            phases.clear();
        }
        phases.insert(namespace.to_owned(), (revision, terminating));
    }

    /// The Service address allocator, its records repaired on first use.
    pub(crate) async fn service_allocator(&self) -> ApiResult<Arc<ServiceAllocator>> {
        let inner = &self.inner;
        let cell = Arc::clone(&inner.service_allocator.read());
        cell.get_or_try_init(|| async {
            ServiceAllocator::load(
                &inner.store,
                inner.config.service_cluster_ip_range,
                inner.config.service_node_port_range,
            )
            .await
            .map(Arc::new)
        })
        .await
        .cloned()
    }

    /// Forgets the Service allocator, so that the next Service write repairs its records and
    /// reads them again (after a reset rewrote the store under it: `reset`).
    pub(crate) fn reload_service_allocator(&self) {
        *self.inner.service_allocator.write() = Arc::default();
    }
}
