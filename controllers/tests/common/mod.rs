//! An in-process API server (port 0, ephemeral store) with the controller manager running
//! against it in the test process, and deterministic waits: poll a condition until it holds
//! or a deadline passes.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_apiserver::TestServer;
use kubemock_client::{Api, Client, Config, DynamicObject, ListParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::kubelet::stages::{LOADED_REASON, resource};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long any awaited condition may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// How often a condition is checked.
const POLL: Duration = Duration::from_millis(20);

/// A server and the controllers acting on it.
pub struct Cluster {
    pub server: TestServer,
    pub client: Client,
    token: CancellationToken,
    manager: Option<JoinHandle<()>>,
}

impl Cluster {
    /// A server with every controller running.
    pub async fn start() -> Self {
        Self::start_with(ManagerConfig::default()).await
    }

    /// A server with the controllers of `config` running.
    pub async fn start_with(config: ManagerConfig) -> Self {
        let server = TestServer::start().await.expect("start the server");
        let client = Client::new(Config::new(server.url())).expect("client");
        let token = CancellationToken::new();
        let manager = tokio::spawn(kubemock_controllers::run(
            client.clone(),
            config,
            token.clone(),
        ));
        Cluster {
            server,
            client,
            token,
            manager: Some(manager),
        }
    }

    /// Creates the namespace `name`.
    pub async fn namespace(&self, name: &str) {
        Api::<Namespace>::all(self.client.clone())
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                },
            )
            .await
            .expect("create the namespace");
    }

    /// Stops the controllers, then the server.
    pub async fn stop(mut self) {
        self.token.cancel();
        if let Some(manager) = self.manager.take() {
            tokio::time::timeout(DEADLINE, manager)
                .await
                .expect("the manager stops in time")
                .expect("the manager task");
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// Polls `check` until it returns `Some`, failing the test with `what` after [`DEADLINE`].
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// The repository's `examples/stages`.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/stages")
}

/// The documents of a YAML file (several, `---`-separated).
pub fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| {
            let value: Value = serde::Deserialize::deserialize(doc).expect("a YAML document");
            value
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// Creates the Stages of `text` and waits until the kubelet announced each.
pub async fn apply_stages(cluster: &Cluster, text: &str) -> Vec<String> {
    let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource());
    let mut names = Vec::new();
    for doc in documents(text) {
        let stage: DynamicObject = serde_json::from_value(doc).expect("a Stage");
        let created = api
            .create(&PostParams::default(), &stage)
            .await
            .unwrap_or_else(|e| panic!("create Stage {:?}: {e:?}", stage.metadata.name));
        names.push(created.metadata.name.unwrap_or_default());
    }
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), "default");
    for name in &names {
        wait_for(&format!("the kubelet to take up Stage {name}"), || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some(LOADED_REASON)
                        && e.involved_object.name.as_deref() == Some(name.as_str())
                })
                .then_some(())
        })
        .await;
    }
    names
}

pub async fn apply_dir(cluster: &Cluster, dir: &Path) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read the file");
        apply_stages(cluster, &text).await;
    }
}
