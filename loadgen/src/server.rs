//! A server under test as a separate process: started with `--port 0`, its address read from the
//! one ready line it prints (`NAME: serving on http://HOST:PORT`), stopped with SIGTERM. Its
//! stderr goes to a temporary file that is shown when it fails to start. A secure kubemock
//! (`https://` in its ready line) is spoken to with the kubeconfig of its `--kubeconfig-out`.

use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::Instant;

use crate::http::Endpoint;

/// How long a server may take to print its ready line (generous: a debug build or a cold disk).
const READY_LINE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// What precedes the URL in the ready line.
const READY_MARKER: &str = ": serving on ";
/// The signal number of SIGTERM on Linux.
const SIGTERM: i32 = 15;

/// Flags of `kubemock serve` that turn its in-flight limits off, as kube-apiserver's
/// `--max-requests-inflight 0`: a benchmark's burst of requests would otherwise be answered
/// 429 in part, and the figures would measure the client's retries.
pub(crate) const NO_INFLIGHT_LIMITS: [&str; 4] = [
    "--max-requests-inflight",
    "0",
    "--max-mutating-requests-inflight",
    "0",
];

/// A running server process; killed if dropped without `stop`.
pub(crate) struct ServerProcess {
    binary: PathBuf,
    child: Child,
    endpoint: Endpoint,
    /// When `spawn` was called: the start of "process start" in the startup figures.
    spawned_at: Instant,
    /// When the ready line had been read.
    ready_line_at: Instant,
    /// Kept open so that the server never writes to a closed pipe.
    _stdout: Lines<BufReader<ChildStdout>>,
    /// The server's stderr.
    log: tempfile::NamedTempFile,
}

impl ServerProcess {
    /// Starts `binary ARGS...` and waits for its ready line.
    pub(crate) async fn start(binary: &Path, args: &[OsString]) -> anyhow::Result<Self> {
        let log = tempfile::NamedTempFile::new().context("creating the server log file")?;
        let stderr = log.reopen().context("opening the server log file")?;
        let mut command = Command::new(binary);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        let spawned_at = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("no stdout pipe"))?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(READY_LINE_TIMEOUT, lines.next_line()).await;
        let ready_line_at = Instant::now();
        let line = match line {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => bail!(
                "{} exited before its ready line; stderr:\n{}",
                binary.display(),
                tail(log.path())
            ),
            Ok(Err(err)) => return Err(err).context("reading the ready line"),
            Err(_) => bail!(
                "{} printed no ready line within {READY_LINE_TIMEOUT:?}; stderr:\n{}",
                binary.display(),
                tail(log.path())
            ),
        };
        let (secure, addr) = parse_ready_line(&line)?;
        let endpoint = if secure {
            let kubeconfig = kubeconfig_out(args)
                .ok_or_else(|| anyhow!("a secure server needs --kubeconfig-out for its clients"))?;
            Endpoint::tls_from_kubeconfig(addr, &kubeconfig)?
        } else {
            Endpoint::plain(addr)
        };
        Ok(ServerProcess {
            binary: binary.to_owned(),
            child,
            endpoint,
            spawned_at,
            ready_line_at,
            _stdout: lines,
            log,
        })
    }

    /// Starts `binary ARGS...`, runs `measure` against it and stops it. A failed measurement
    /// carries the server's state and stderr. A stop that fails after a measurement that
    /// worked only warns: the figures stand however long the shutdown takes (a server holding
    /// 100,000 pods and their watches may take more than the stop timeout).
    pub(crate) async fn measured<T>(
        binary: &Path,
        args: &[OsString],
        measure: impl AsyncFnOnce(&ServerProcess) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut server = ServerProcess::start(binary, args).await?;
        let result = match measure(&server).await {
            Ok(value) => Ok(value),
            Err(err) => Err(err.context(server.diagnose())),
        };
        let stopped = server.stop().await;
        let value = result?;
        if let Err(err) = stopped {
            eprintln!("kubemock-loadgen: warning: after the measurement: {err:#}");
        }
        Ok(value)
    }

    /// The address the server listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.endpoint.addr
    }

    /// How to reach the server (its address, and TLS when it is secure).
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// When the process was spawned.
    pub(crate) fn spawned_at(&self) -> Instant {
        self.spawned_at
    }

    /// When its ready line had been read.
    pub(crate) fn ready_line_at(&self) -> Instant {
        self.ready_line_at
    }

    /// Whether the server still runs, and the end of its stderr: what to add to an error.
    pub(crate) fn diagnose(&mut self) -> String {
        let state = match self.child.try_wait() {
            Ok(Some(status)) => format!("the server has exited ({status})"),
            Ok(None) => "the server is still running".to_owned(),
            Err(err) => format!("the server's state is unknown ({err})"),
        };
        format!("{state}; its stderr ends:\n{}", self.log_tail())
    }

    /// The file the server's stderr goes to.
    pub(crate) fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// The end of the server's stderr, for error messages.
    pub(crate) fn log_tail(&self) -> String {
        tail(self.log.path())
    }

    /// Sends SIGTERM and waits for the exit (SIGKILL after [`STOP_TIMEOUT`]); fails if the
    /// server had already died or exits unsuccessfully.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "the server had exited ({status}); stderr:\n{}",
                self.log_tail()
            );
        }
        if let Some(pid) = self.child.id() {
            // `kill(1)` rather than a libc binding: this crate forbids unsafe code.
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        match tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if status.signal() == Some(SIGTERM) {
                    // Killed by the default action: the SIGTERM came before the server had
                    // installed its handler. Stopped all the same; say so, it is a server bug.
                    eprintln!(
                        "kubemock-loadgen: warning: {} died of SIGTERM instead of shutting down \
                         (signal handler not installed yet when it was sent)",
                        self.binary.display()
                    );
                    return Ok(());
                }
                if !status.success() {
                    bail!(
                        "the server exited with {status}; stderr:\n{}",
                        self.log_tail()
                    );
                }
                Ok(())
            }
            Err(_) => {
                self.child.kill().await?;
                bail!("the server did not stop within {STOP_TIMEOUT:?} of SIGTERM")
            }
        }
    }
}

/// Whether a ready line `NAME: serving on http[s]://HOST:PORT` is secure, and its address.
fn parse_ready_line(line: &str) -> anyhow::Result<(bool, SocketAddr)> {
    let url = line
        .split_once(READY_MARKER)
        .map(|(_, url)| url.trim())
        .ok_or_else(|| anyhow!("unexpected ready line {line:?}"))?;
    let (secure, authority) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(authority), _) => (false, authority),
        (None, Some(authority)) => (true, authority),
        (None, None) => bail!("not an http(s) URL in the ready line: {url:?}"),
    };
    let authority = authority.trim_end_matches('/');
    let addr = authority
        .to_socket_addrs()
        .with_context(|| format!("resolving {authority}"))?
        .next()
        .ok_or_else(|| anyhow!("{authority} resolves to nothing"))?;
    Ok((secure, addr))
}

/// The value of `--kubeconfig-out` among `args`.
fn kubeconfig_out(args: &[OsString]) -> Option<PathBuf> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy();
        if arg == "--kubeconfig-out" {
            return args.next().map(PathBuf::from);
        }
        if let Some(path) = arg.strip_prefix("--kubeconfig-out=") {
            return Some(PathBuf::from(path));
        }
    }
    None
}

/// The last lines of a log file.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Arguments for `kubemock serve --port 0`, durable in `data_dir` when given, with `extra`
/// (`--no-controllers`, ...) appended.
pub(crate) fn kubemock_args(data_dir: Option<&Path>, extra: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["serve".into(), "--port".into(), "0".into()];
    if let Some(dir) = data_dir {
        args.push("--data-dir".into());
        args.push(PathBuf::from(dir).into_os_string());
    }
    args.extend(extra.iter().map(OsString::from));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_comes_from_the_ready_line() {
        let (secure, addr) =
            parse_ready_line("kubemock: serving on http://127.0.0.1:43210").unwrap();
        assert_eq!(addr, "127.0.0.1:43210".parse().unwrap());
        assert!(!secure);
        let (_, addr) = parse_ready_line("hello-baseline: serving on http://127.0.0.1:1/").unwrap();
        assert_eq!(addr.port(), 1);
        assert!(parse_ready_line("something else").is_err());
        assert!(
            parse_ready_line("x: serving on https://127.0.0.1:1")
                .unwrap()
                .0
        );
        assert!(parse_ready_line("x: serving on ftp://127.0.0.1:1").is_err());
        let args: Vec<OsString> = ["serve", "--kubeconfig-out", "/tmp/k"]
            .map(OsString::from)
            .into();
        assert_eq!(kubeconfig_out(&args), Some(PathBuf::from("/tmp/k")));
        let args: Vec<OsString> = ["--kubeconfig-out=/tmp/j"].map(OsString::from).into();
        assert_eq!(kubeconfig_out(&args), Some(PathBuf::from("/tmp/j")));
    }
}
