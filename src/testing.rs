//! `kubemock::testing::Cluster`: an in-process, ephemeral kubemock (the API server on port 0
//! over a temporary store, and by default the controllers) for one Rust test, with a
//! kubeconfig file, a `kube::Client`, a `kubemock_client::Client`, and helpers over the test
//! powers of `testing.kubemock.dev/v1` (docs/test-powers.md): Faults, the request
//! log, fixtures, reset and the clock. Every helper goes through the HTTP API, as a test in
//! another language would. Dropping the cluster stops the controllers and the server.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use kubemock::testing::Cluster;
//! let cluster = Cluster::builder().controllers(false).start().await?;
//! let creates = cluster.requests().verb("create").resource("configmaps").list().await?;
//! assert!(creates.is_empty());
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use jiff::Timestamp;
use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_client::{
    Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::clock::Clock;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The group of the test powers.
const GROUP: &str = "testing.kubemock.dev";
/// How long [`Cluster::start`] waits for the server's bootstrap and fixtures.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the waiting helpers ([`Fault::wait_exhausted`], [`Requests::wait_for`]) look
/// again.
const POLL: Duration = Duration::from_millis(20);

/// A running in-process cluster (see the module documentation).
pub struct Cluster {
    /// Cancelled on drop: stops the controllers.
    controllers: CancellationToken,
    /// Stopped on drop.
    server: TestServer,
    /// Holds the kubeconfig file.
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    client: kubemock_client::Client,
    kube: kube::Client,
    clock: Clock,
}

/// How to start a [`Cluster`].
#[derive(Debug, Default)]
pub struct ClusterBuilder {
    no_controllers: bool,
    manager: Option<ManagerConfig>,
    virtual_clock: Option<Timestamp>,
    load: Vec<PathBuf>,
}

impl ClusterBuilder {
    /// Whether the in-process controllers run (default: yes).
    #[must_use]
    pub fn controllers(mut self, on: bool) -> Self {
        self.no_controllers = !on;
        self
    }

    /// Which controllers run and how the simulated nodes behave (default: all, three nodes).
    #[must_use]
    pub fn manager(mut self, config: ManagerConfig) -> Self {
        self.manager = Some(config);
        self
    }

    /// Runs the server and the controllers on a virtual clock standing at `start`
    /// (`kubemock serve --virtual-clock=START`): [`Cluster::advance`] and [`Cluster::set_time`]
    /// move it.
    #[must_use]
    pub fn virtual_clock(mut self, start: Timestamp) -> Self {
        self.virtual_clock = Some(start);
        self
    }

    /// Creates the objects of `path` (a file or a folder) at startup, as `kubemock serve
    /// --load PATH` does; repeatable.
    #[must_use]
    pub fn load(mut self, path: impl Into<PathBuf>) -> Self {
        self.load.push(path.into());
        self
    }

    /// Starts the cluster: once this returns, the server has its startup objects and
    /// fixtures, and the controllers are starting.
    pub async fn start(self) -> anyhow::Result<Cluster> {
        let fixtures =
            kubemock_apiserver::fixtures::read(&self.load).context("reading the fixtures")?;
        let clock = match self.virtual_clock {
            Some(start) => Clock::virtual_at(start),
            None => Clock::system(),
        };
        let ready = Arc::new(tokio::sync::Notify::new());
        let config = ServerConfig {
            fixtures,
            clock: clock.clone(),
            ready: Some(Arc::clone(&ready)),
            ..ServerConfig::default()
        };
        let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
            .await
            .context("starting the server")?;
        tokio::time::timeout(START_TIMEOUT, ready.notified())
            .await
            .context("the server did not become ready (a bad fixture?)")?;
        let dir = tempfile::tempdir().context("a directory for the kubeconfig")?;
        let kubeconfig = dir.path().join("kubeconfig");
        let text = server.kubeconfig();
        std::fs::write(&kubeconfig, &text).context("writing the kubeconfig")?;
        let client = kubemock_client::Client::new(kubemock_client::Config::new(server.url()))
            .context("the kubemock client")?;
        let kube_config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::from_yaml(&text)?,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .context("kube-rs reading the kubeconfig")?;
        let kube = kube::Client::try_from(kube_config).context("the kube-rs client")?;
        let controllers = CancellationToken::new();
        if !self.no_controllers {
            let manager = self.manager.unwrap_or_default().with_clock(clock.clone());
            tokio::spawn(kubemock_controllers::run(
                client.clone(),
                manager,
                controllers.clone(),
            ));
        }
        Ok(Cluster {
            controllers,
            server,
            _dir: dir,
            kubeconfig,
            client,
            kube,
            clock,
        })
    }
}

impl Cluster {
    /// Starts a cluster with the controllers, on the system clock.
    pub async fn start() -> anyhow::Result<Cluster> {
        Self::builder().start().await
    }

    /// A builder, to choose controllers, the clock and fixtures.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// The server's URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// A kubeconfig file pointing at the server (for kubectl, client-go, ...).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A kube-rs client of the server.
    pub fn kube_client(&self) -> kube::Client {
        self.kube.clone()
    }

    /// A kubemock client of the server.
    pub fn client(&self) -> kubemock_client::Client {
        self.client.clone()
    }

    /// The clock the server and the in-process controllers share (the system clock unless
    /// [`ClusterBuilder::virtual_clock`]).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    fn api(&self, kind: &str, plural: &str) -> Api<DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &ApiResource::new(GROUP, "v1", kind, plural, false),
        )
    }

    /// Creates the Fault `name` with `spec` (docs/test-powers.md#faults), and returns a handle on it.
    pub async fn fault(&self, name: &str, spec: Value) -> anyhow::Result<Fault> {
        let api = self.api("Fault", "faults");
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "Fault",
            "metadata": {"name": name}, "spec": spec,
        }))?;
        api.create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating the Fault {name}"))?;
        Ok(Fault {
            api,
            name: name.to_owned(),
        })
    }

    /// A query of the request log; narrow it, then [`Requests::list`] or
    /// [`Requests::wait_for`].
    pub fn requests(&self) -> Requests {
        Requests {
            api: self.api("Request", "requests"),
            fields: Vec::new(),
        }
    }

    /// Empties the request log.
    pub async fn clear_requests(&self) -> anyhow::Result<()> {
        self.api("Request", "requests")
            .delete_collection(&Default::default(), &ListParams::default())
            .await
            .context("clearing the request log")?;
        Ok(())
    }

    /// Brings the cluster back to its startup state (docs/test-powers.md#fixtures-reset-and-snapshots); answers the reset's `status` (what changed).
    pub async fn reset(&self) -> anyhow::Result<Value> {
        let reset =
            DynamicObject::new("", &ApiResource::new(GROUP, "v1", "Reset", "resets", false));
        let done = self
            .api("Reset", "resets")
            .create(&PostParams::default(), &reset)
            .await
            .context("resetting")?;
        Ok(done.data.get("status").cloned().unwrap_or(Value::Null))
    }

    /// The time of the server's clock, read through the API.
    pub async fn now(&self) -> anyhow::Result<Timestamp> {
        let clock = self.api("Clock", "clocks").get("cluster").await?;
        clock_time(&clock)
    }

    /// Advances the virtual clock by `by` (through the API); answers the new time.
    pub async fn advance(&self, by: Duration) -> anyhow::Result<Timestamp> {
        let nanos = i64::try_from(by.as_nanos()).context("the duration is too long")?;
        let advance = kubemock_apimachinery::duration::format_duration(nanos);
        self.move_clock(json!({"spec": {"advance": advance}})).await
    }

    /// Sets the virtual clock to `time` (backwards too; through the API); answers it.
    pub async fn set_time(&self, time: Timestamp) -> anyhow::Result<Timestamp> {
        let text = kubemock_apimachinery::time::rfc3339_micro_of(time);
        self.move_clock(json!({"spec": {"time": text}})).await
    }

    async fn move_clock(&self, patch: Value) -> anyhow::Result<Timestamp> {
        let clock = self
            .api("Clock", "clocks")
            .patch("cluster", &PatchParams::default(), &Patch::Merge(patch))
            .await
            .context("moving the clock")?;
        clock_time(&clock)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.controllers.cancel();
    }
}

/// A Clock object's `status.now`.
fn clock_time(clock: &DynamicObject) -> anyhow::Result<Timestamp> {
    let now = clock
        .data
        .get("status")
        .and_then(|s| s.get("now"))
        .and_then(Value::as_str)
        .context("a Clock without status.now")?;
    let nanos = kubemock_apimachinery::time::parse_rfc3339(now).context("status.now")?;
    Timestamp::from_nanosecond(nanos).context("status.now out of range")
}

/// A Fault a test created ([`Cluster::fault`]).
pub struct Fault {
    api: Api<DynamicObject>,
    name: String,
}

impl Fault {
    /// Its `status` as the server last wrote it (it writes at most every 200 ms).
    pub async fn status(&self) -> anyhow::Result<Value> {
        let fault = self.api.get(&self.name).await?;
        Ok(fault.data.get("status").cloned().unwrap_or(Value::Null))
    }

    /// Waits until the fault's `count` is used up (`status.exhausted`), up to `timeout`.
    pub async fn wait_exhausted(&self, timeout: Duration) -> anyhow::Result<Value> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let status = self.status().await?;
            if status.get("exhausted") == Some(&Value::Bool(true)) {
                return Ok(status);
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the Fault {} is not exhausted after {timeout:?}: {status}",
                self.name
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Deletes it.
    pub async fn delete(self) -> anyhow::Result<()> {
        self.api.delete(&self.name, &Default::default()).await?;
        Ok(())
    }
}

/// A query of the request log ([`Cluster::requests`]): field selectors, oldest first.
#[derive(Clone)]
pub struct Requests {
    api: Api<DynamicObject>,
    fields: Vec<(&'static str, String)>,
}

impl Requests {
    fn field(mut self, field: &'static str, value: impl Into<String>) -> Self {
        self.fields.push((field, value.into()));
        self
    }

    /// Requests with this verb (`get`, `list`, `watch`, `create`, `update`, `patch`, ...).
    #[must_use]
    pub fn verb(self, verb: &str) -> Self {
        self.field("verb", verb)
    }

    /// Of this resource (plural).
    #[must_use]
    pub fn resource(self, resource: &str) -> Self {
        self.field("resource", resource)
    }

    /// Of this subresource (`status`, `scale`).
    #[must_use]
    pub fn subresource(self, subresource: &str) -> Self {
        self.field("subresource", subresource)
    }

    /// In this namespace.
    #[must_use]
    pub fn namespace(self, namespace: &str) -> Self {
        self.field("namespace", namespace)
    }

    /// Naming this object.
    #[must_use]
    pub fn name(self, name: &str) -> Self {
        self.field("name", name)
    }

    /// With this `fieldManager`.
    #[must_use]
    pub fn field_manager(self, manager: &str) -> Self {
        self.field("fieldManager", manager)
    }

    /// With exactly this User-Agent.
    #[must_use]
    pub fn user_agent(self, agent: &str) -> Self {
        self.field("userAgent", agent)
    }

    /// Tagged with this `X-Kubemock-Test` header.
    #[must_use]
    pub fn test(self, test: &str) -> Self {
        self.field("test", test)
    }

    /// Answered with this HTTP status code.
    #[must_use]
    pub fn code(self, code: u16) -> Self {
        self.field("code", code.to_string())
    }

    fn params(&self) -> ListParams {
        let selector = self
            .fields
            .iter()
            .map(|(field, value)| {
                kubemock_client::FieldSelector::one_term_equal(*field, value.as_str()).to_string()
            })
            .collect::<Vec<_>>()
            .join(",");
        ListParams::default().fields(selector)
    }

    /// The matching requests the log holds, oldest first, as JSON (docs/test-powers.md#the-request-log: `verb`, `code`, `fieldManager`, `userAgent`, ...).
    pub async fn list(&self) -> anyhow::Result<Vec<Value>> {
        let list = self
            .api
            .list(&self.params())
            .await
            .context("listing the request log")?;
        list.items
            .into_iter()
            .map(|item| serde_json::to_value(item).map_err(Into::into))
            .collect()
    }

    /// Waits until at least `count` requests match, up to `timeout`; answers them.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> anyhow::Result<Vec<Value>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let found = self.list().await?;
            if found.len() >= count {
                return Ok(found);
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "{} of {count} requests after {timeout:?}: {found:?}",
                found.len()
            );
            tokio::time::sleep(POLL).await;
        }
    }
}
