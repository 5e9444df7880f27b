//! An in-process server for tests: starts on port 0 over an ephemeral store, hands out its URL
//! and a kubeconfig, and stops when dropped. Every test in the workspace that needs a server
//! uses this or the binary on port 0; none uses a fixed port. With a configuration in the
//! secure mode (`ServerConfig::secure`) it serves TLS, and its [`Security`] issues client
//! certificates that authenticate.

use std::net::SocketAddr;
use std::sync::Arc;

use kubemock_storage::{Config, SledStore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::security::Security;
use crate::state::ServerConfig;

/// A running in-process kubemock API server.
pub struct TestServer {
    addr: SocketAddr,
    url: String,
    store: SledStore,
    security: Option<Security>,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// Starts a server with the default configuration.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(ServerConfig::default(), Config::ephemeral()).await
    }

    /// Starts a server with the given server and store configuration.
    pub async fn start_with(config: ServerConfig, store: Config) -> std::io::Result<Self> {
        let store = SledStore::open(store).map_err(std::io::Error::other)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let security = config.security.clone();
        let scheme = if security.is_some() { "https" } else { "http" };
        let task = tokio::spawn(crate::serve(
            listener,
            Arc::new(store.clone()),
            config,
            shutdown.clone(),
        ));
        Ok(TestServer {
            addr,
            url: format!("{scheme}://{addr}"),
            store,
            security,
            shutdown,
            task: Some(task),
        })
    }

    /// The server's base URL, `http://127.0.0.1:PORT` (`https://` in the secure mode).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store behind the server (to compact it, or read its revision, in tests).
    pub fn store(&self) -> &SledStore {
        &self.store
    }

    /// A kubeconfig pointing at this server (in the secure mode, as the admin: the CA and an
    /// admin client certificate; empty if issuing it fails).
    pub fn kubeconfig(&self) -> String {
        match &self.security {
            Some(security) => security.admin_kubeconfig(&self.url).unwrap_or_default(),
            None => crate::kubeconfig(&self.url),
        }
    }

    /// The secure mode's keys and authenticators, when the server is in it.
    pub fn security(&self) -> Option<&Security> {
        self.security.as_ref()
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) -> std::io::Result<()> {
        self.shutdown.cancel();
        let result = match self.task.take() {
            Some(task) => task.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        };
        self.store.close();
        result
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.store.close();
    }
}
