//! A real etcd for tests: the `etcd` binary started as a process on free loopback ports with a
//! data directory of its own, stopped (killed) when dropped. The binary is
//! `KUBEMOCK_ETCD_BIN`, else what `scripts/install-etcd.sh` installed
//! (`.tools/etcd-3.4.23/etcd` in the workspace), else `etcd` on `PATH`.
//!
//! Without a binary, [`EtcdServer::start`] returns `None` after printing a loud SKIPPED
//! banner, so that `cargo test` works on a machine without etcd, unless `CI` or
//! `KUBEMOCK_REQUIRE_ETCD` is set (as `.ci/run` sets it): then it panics, so that CI can never
//! pass without running the etcd tests.

#![allow(clippy::print_stderr)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{EtcdConfig, EtcdStore, Tls};

/// etcd's own TLS files (PEM paths): its serving certificate and key, and the CA its clients'
/// certificates must chain to (`--cert-file`, `--key-file`, `--trusted-ca-file` with
/// `--client-cert-auth`).
pub struct ServerTls {
    /// `--cert-file`.
    pub cert: PathBuf,
    /// `--key-file`.
    pub key: PathBuf,
    /// `--trusted-ca-file`.
    pub client_ca: PathBuf,
}

/// The binary's environment variable.
pub const ETCD_BIN_ENV: &str = "KUBEMOCK_ETCD_BIN";
/// Set (to anything) to make a missing binary fail the tests instead of skipping them.
pub const REQUIRE_ETCD_ENV: &str = "KUBEMOCK_REQUIRE_ETCD";
/// Where `scripts/install-etcd.sh` installs etcd, from the workspace root.
pub const INSTALLED: &str = ".tools/etcd-3.4.23/etcd";
/// How long etcd may take to start answering: it elects itself leader first (about a second).
const START_WAIT: Duration = Duration::from_secs(30);
/// Pause between readiness probes while etcd starts.
const PROBE_PAUSE: Duration = Duration::from_millis(50);

/// A running etcd process.
pub struct EtcdServer {
    child: Option<Child>,
    /// The client URL (`http://127.0.0.1:port`).
    pub url: String,
    client_port: u16,
    peer_port: u16,
    data: tempfile::TempDir,
    binary: PathBuf,
    /// TLS on the client URL, and what this server's stores present.
    tls: Option<(ServerTls, Tls)>,
}

/// The etcd binary to run, if any.
pub fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(ETCD_BIN_ENV) {
        return Some(PathBuf::from(path));
    }
    let installed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(INSTALLED);
    if installed.exists() {
        return Some(installed);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("etcd"))
            .find(|path| path.is_file())
    })
}

/// A free loopback port (bound then released: etcd binds it right after).
fn free_port() -> u16 {
    TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

impl EtcdServer {
    /// Starts etcd and waits until it answers. `None` (after a loud message) when there is no
    /// binary and neither `CI` nor `KUBEMOCK_REQUIRE_ETCD` is set; panics when it is required,
    /// or when etcd does not start.
    pub async fn start(test: &str) -> Option<EtcdServer> {
        Self::start_with(test, None).await
    }

    /// [`EtcdServer::start`], serving `https://` with `server`'s files and requiring client
    /// certificates; its stores connect with `client`.
    pub async fn start_tls(test: &str, server: ServerTls, client: Tls) -> Option<EtcdServer> {
        Self::start_with(test, Some((server, client))).await
    }

    async fn start_with(test: &str, tls: Option<(ServerTls, Tls)>) -> Option<EtcdServer> {
        let Some(binary) = binary() else {
            let required =
                std::env::var_os("CI").is_some() || std::env::var_os(REQUIRE_ETCD_ENV).is_some();
            if required {
                panic!(
                    "{test}: no etcd binary ({ETCD_BIN_ENV} unset, {INSTALLED} missing, none on \
                     PATH) and CI or {REQUIRE_ETCD_ENV} is set: run scripts/install-etcd.sh"
                );
            }
            eprintln!(
                "\n*** SKIPPED {test}: no etcd binary. Run scripts/install-etcd.sh (or set \
                 {ETCD_BIN_ENV}) to run the etcd backend's tests. ***\n"
            );
            return None;
        };
        // tmpfs when there is one: etcd fsyncs every write.
        let shm = Path::new("/dev/shm");
        let data = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("kubemock-etcd-")
                .tempdir_in(shm)
        } else {
            tempfile::Builder::new().prefix("kubemock-etcd-").tempdir()
        }
        .expect("etcd's data directory");
        let mut server = EtcdServer {
            child: None,
            url: String::new(),
            client_port: free_port(),
            peer_port: free_port(),
            data,
            binary,
            tls,
        };
        let scheme = if server.tls.is_some() {
            "https"
        } else {
            "http"
        };
        server.url = format!("{scheme}://127.0.0.1:{}", server.client_port);
        server.spawn();
        server.wait_ready(test).await;
        Some(server)
    }

    fn spawn(&mut self) {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.data.path().join("etcd.log")).expect("etcd's log");
        let mut command = Command::new(&self.binary);
        if let Some((files, _)) = &self.tls {
            command
                .arg(format!("--cert-file={}", files.cert.display()))
                .arg(format!("--key-file={}", files.key.display()))
                .arg(format!("--trusted-ca-file={}", files.client_ca.display()))
                .arg("--client-cert-auth");
        }
        let child = command
            .arg("--name=kubemock-test")
            .arg(format!(
                "--data-dir={}",
                self.data.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={}", self.url))
            .arg(format!("--advertise-client-urls={}", self.url))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=kubemock-test={peer}"))
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("starting {}: {err}", self.binary.display()));
        self.child = Some(child);
    }

    async fn wait_ready(&mut self, test: &str) {
        let deadline = Instant::now() + START_WAIT;
        loop {
            let config = self
                .config()
                .request_timeout(Duration::from_secs(1))
                .compaction_interval(None);
            if EtcdStore::connect(config).await.is_ok() {
                return;
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("{test}: etcd exited with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "{test}: etcd did not answer within {START_WAIT:?}: {}",
                self.log()
            );
            tokio::time::sleep(PROBE_PAUSE).await;
        }
    }

    /// etcd's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("etcd.log")).unwrap_or_default()
    }

    /// A store config for this etcd (no background compaction, keys under `/registry`).
    pub fn config(&self) -> EtcdConfig {
        let config = EtcdConfig::new(vec![self.url.clone()]).compaction_interval(None);
        match &self.tls {
            Some((_, client)) => config.tls(client.clone()),
            None => config,
        }
    }

    /// Connects a store with [`EtcdServer::config`].
    pub async fn store(&self) -> EtcdStore {
        EtcdStore::connect(self.config())
            .await
            .expect("connecting to the test etcd")
    }

    /// Kills etcd (SIGKILL) and waits for it; its data stays for [`EtcdServer::restart`].
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data, and waits until it answers.
    pub async fn restart(&mut self, test: &str) {
        self.kill();
        self.spawn();
        self.wait_ready(test).await;
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}
