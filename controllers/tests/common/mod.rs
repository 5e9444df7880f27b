//! An in-process API server (port 0, ephemeral store) with the controller manager running
//! against it in the test process, and deterministic waits: poll a condition until it holds
//! or a deadline passes.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_apiserver::TestServer;
use kubemock_client::{Api, Client, Config, PostParams};
use kubemock_controllers::ManagerConfig;
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
