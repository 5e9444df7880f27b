//! Helpers of the client's integration tests: an in-process kubemock server, a client for it,
//! namespaces, condition waits, and a TCP proxy that can cut the client off the server.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_apiserver::TestServer;
use kubemock_client::{Api, Client, Config, PostParams};
use parking_lot::Mutex;
use tokio::task::JoinSet;

/// Starts a server and a client for it.
pub async fn server() -> (TestServer, Client) {
    let server = TestServer::start().await.expect("server starts");
    let client = client_for(server.url());
    (server, client)
}

/// A client for `url`.
pub fn client_for(url: &str) -> Client {
    Client::new(Config::new(url)).expect("client builds")
}

/// Creates namespace `name`.
pub async fn namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

/// A ConfigMap `name` with one data entry.
pub fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// Creates `count` ConfigMaps `prefix-N` in `api`'s namespace, `concurrency` at a time.
pub async fn create_configmaps(
    api: &Api<ConfigMap>,
    prefix: &str,
    count: usize,
    concurrency: usize,
) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        let api = api.clone();
        let next = next.clone();
        let prefix = prefix.to_owned();
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count {
                    break;
                }
                api.create(
                    &PostParams::default(),
                    &configmap(&format!("{prefix}-{i}"), "0"),
                )
                .await
                .expect("create");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("creator task");
    }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
pub async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if condition().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A TCP proxy in front of a server whose connections can be cut: while cut, open
/// connections are closed and new ones refused (closed at once).
pub struct Proxy {
    url: String,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<JoinSet<()>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// A proxy to `target` (`127.0.0.1:port`).
    pub async fn start(target: std::net::SocketAddr) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let open = Arc::new(AtomicBool::new(true));
        let connections = Arc::new(Mutex::new(JoinSet::new()));
        let accept = tokio::spawn({
            let open = open.clone();
            let connections = connections.clone();
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    connections.lock().spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                }
            }
        });
        Proxy {
            url,
            open,
            connections,
            accept,
        }
    }

    /// The proxy's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.connections.lock().abort_all();
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.connections.lock().abort_all();
    }
}

/// Installs a log subscriber honouring `RUST_LOG` (once per test binary).
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}
