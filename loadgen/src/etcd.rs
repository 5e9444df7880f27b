//! A real etcd for the suite's "etcd backend" rows: started here from the binary
//! `--etcd` names (`scripts/install-etcd.sh` installs one), on free loopback ports with a
//! temporary data directory, killed when dropped. The load generator depends on no kubemock
//! crate, so this is its own small launcher (kubemock's tests use
//! `kubemock_storage_etcd::testing`).

use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How long etcd may take to answer `/health`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running etcd.
pub(crate) struct EtcdProcess {
    child: Child,
    /// Its client URL (`http://127.0.0.1:PORT`).
    pub(crate) url: String,
    _data: tempfile::TempDir,
}

/// A loopback port nothing listens on now (bound and released: another process could take it
/// before etcd does, which then fails to start and says so).
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

impl EtcdProcess {
    /// Starts `binary` and waits until `/health` answers 200.
    pub(crate) async fn start(binary: &Path) -> anyhow::Result<Self> {
        Self::start_with(binary, &[]).await
    }

    /// Whether `binary` knows `--unsafe-no-fsync` (etcd 3.5 and later; 3.4 does not).
    pub(crate) async fn supports_no_fsync(binary: &Path) -> bool {
        match Command::new(binary).arg("--help").output().await {
            Ok(out) => {
                String::from_utf8_lossy(&out.stdout).contains("unsafe-no-fsync")
                    || String::from_utf8_lossy(&out.stderr).contains("unsafe-no-fsync")
            }
            Err(_) => false,
        }
    }

    /// Its client address.
    pub(crate) fn addr(&self) -> anyhow::Result<std::net::SocketAddr> {
        let hostport = self.url.trim_start_matches("http://");
        hostport
            .parse()
            .with_context(|| format!("etcd client URL {}", self.url))
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Starts `binary` with `extra` arguments and waits until `/health` answers 200.
    pub(crate) async fn start_with(binary: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        let data = tempfile::tempdir().context("creating etcd's data directory")?;
        let (client, peer) = (free_port()?, free_port()?);
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut child = Command::new(binary)
            .arg("--data-dir")
            .arg(data.path())
            .args([
                "--listen-client-urls",
                &url,
                "--advertise-client-urls",
                &url,
            ])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("default={peer_url}")])
            .args(["--log-level", "error"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let http = reqwest::Client::new();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(response) = http.get(format!("{url}/health")).send().await
                && response.status().is_success()
            {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                bail!(
                    "{} exited before it was healthy: {status}",
                    binary.display()
                );
            }
            if Instant::now() > deadline {
                bail!("etcd at {url} not healthy within {READY_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(EtcdProcess {
            child,
            url,
            _data: data,
        })
    }

    /// Kills it.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        self.child.kill().await.context("stopping etcd")
    }
}
