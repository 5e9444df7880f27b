//! The state every handler shares: the store behind its trait, the server's configuration and
//! its shutdown token. A cheap-clone handle over `Arc<Inner>`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kubemock_storage::Kv;

use crate::admission::{NodePortRange, ServiceAllocator, ServiceCidr};
use crate::status::ApiResult;

use crate::limits::{
    DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT, DEFAULT_MAX_REQUESTS_INFLIGHT, InFlight,
};
use crate::metrics::Metrics;
use crate::openapi::Documents;
use crate::registry::Registry;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Bookmarks are sent about once a minute, like the real server's watch cache (§8.6).
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// How the API server behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Interval between BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Read-only requests (GET, HEAD) in flight at most; more are answered 429. Watches are
    /// not counted. 0 is unlimited. Default [`DEFAULT_MAX_REQUESTS_INFLIGHT`].
    pub max_requests_inflight: usize,
    /// Other requests in flight at most; more are answered 429. 0 is unlimited. Default
    /// [`DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT`].
    pub max_mutating_requests_inflight: usize,
    /// Where Services get their cluster IPs (`--service-cluster-ip-range`); the `kubernetes`
    /// Service has the first address. Default 10.96.0.0/12.
    pub service_cluster_ip_range: ServiceCidr,
    /// Where NodePort and LoadBalancer Services get their node ports
    /// (`--service-node-port-range`). Default 30000-32767.
    pub service_node_port_range: NodePortRange,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bookmark_interval: DEFAULT_BOOKMARK_INTERVAL,
            max_requests_inflight: DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight: DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            service_cluster_ip_range: ServiceCidr::default(),
            service_node_port_range: NodePortRange::default(),
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
    /// The OpenAPI documents, built on first use.
    openapi: OnceLock<Arc<Documents>>,
    /// Request metrics, written by the pipeline's metrics layer, read by `/metrics`.
    metrics: Metrics,
    /// The in-flight limit's slots, taken by the pipeline's limit layer, read by `/metrics`.
    in_flight: InFlight,
    /// Who holds which Service cluster IP and node port: loaded from the stored Services on
    /// first use (by the first Service write or delete), then kept by admission.
    service_allocator: tokio::sync::OnceCell<Arc<ServiceAllocator>>,
}

impl AppState {
    /// State over `store`, stopped by `shutdown`.
    pub fn new(store: Arc<dyn Kv>, config: ServerConfig, shutdown: CancellationToken) -> Self {
        let in_flight = InFlight::new(
            config.max_requests_inflight,
            config.max_mutating_requests_inflight,
        );
        AppState {
            inner: Arc::new(Inner {
                store,
                registry: Registry::builtin(),
                config,
                shutdown,
                tasks: TaskTracker::new(),
                openapi: OnceLock::new(),
                metrics: Metrics::new(),
                in_flight,
                service_allocator: tokio::sync::OnceCell::new(),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Kv> {
        &self.inner.store
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

    /// The OpenAPI documents of the served resources (built on first use: tens of
    /// milliseconds, so not on the startup path).
    pub(crate) fn openapi(&self) -> Arc<Documents> {
        self.inner
            .openapi
            .get_or_init(|| Arc::new(Documents::build(&self.inner.registry)))
            .clone()
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

    /// The Service address allocator, loaded from the store on first use.
    pub(crate) async fn service_allocator(&self) -> ApiResult<Arc<ServiceAllocator>> {
        let inner = &self.inner;
        inner
            .service_allocator
            .get_or_try_init(|| async {
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
}
