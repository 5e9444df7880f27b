//! The server under test as a child process: `kubemock serve --port 0 --no-controllers`, its
//! URL read from the ready line, its stderr in a temporary file that the fuzzer scans for
//! panics, stopped with SIGTERM at the end (and killed if the fuzzer itself stops first).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// How long the server may take to print its ready line (a debug build on a busy machine).
const READY_LINE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the server may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// What precedes the URL in the ready line.
const READY_MARKER: &str = "kubemock: serving on ";
/// What Rust's default panic hook writes first.
const PANIC_MARKER: &str = "panicked at";

/// A running server.
pub(crate) struct ServerProcess {
    child: Child,
    url: String,
    /// Kept open so that the server never writes to a closed pipe.
    _stdout: Lines<BufReader<ChildStdout>>,
    log: tempfile::NamedTempFile,
    /// How much of the log has been scanned for panics.
    scanned: u64,
}

impl ServerProcess {
    /// Starts `binary serve --port 0 --no-controllers ARGS...`.
    pub(crate) async fn start(binary: &Path, extra: &[String]) -> anyhow::Result<Self> {
        let log = tempfile::NamedTempFile::new().context("creating the server log file")?;
        let stderr = log.reopen().context("opening the server log file")?;
        let mut child = Command::new(binary)
            .args(["serve", "--port", "0", "--no-controllers"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("no stdout pipe"))?;
        let mut lines = BufReader::new(stdout).lines();
        let line = match tokio::time::timeout(READY_LINE_TIMEOUT, lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => bail!("the server exited before its ready line"),
            Ok(Err(err)) => return Err(err).context("reading the ready line"),
            Err(_) => bail!("no ready line within {READY_LINE_TIMEOUT:?}"),
        };
        let url = line
            .strip_prefix(READY_MARKER)
            .ok_or_else(|| anyhow!("unexpected ready line {line:?}"))?
            .trim()
            .trim_end_matches('/')
            .to_owned();
        Ok(ServerProcess {
            child,
            url,
            _stdout: lines,
            log,
            scanned: 0,
        })
    }

    /// Its URL, `http://HOST:PORT`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// `Some(how)` if it has exited.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(err) => Some(format!("unknown ({err})")),
        }
    }

    /// Panic lines logged since the last call.
    pub(crate) fn new_panics(&mut self) -> Vec<String> {
        let mut text = String::new();
        let read = self
            .log
            .reopen()
            .and_then(|mut file| {
                file.seek(SeekFrom::Start(self.scanned))?;
                file.read_to_string(&mut text)
            })
            .unwrap_or(0);
        // Scan whole lines only; a partial last line waits for the next call.
        let complete = text.rfind('\n').map_or(0, |at| at + 1);
        let _ = read;
        self.scanned += complete as u64;
        text[..complete]
            .lines()
            .filter(|line| line.contains(PANIC_MARKER))
            .map(|line| line.chars().take(400).collect())
            .collect()
    }

    /// The last lines of its stderr.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log.path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM, then waits; `Err` if it had died or exits unsuccessfully.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(status) = self.exited() {
            bail!("the server had exited ({status})");
        }
        if let Some(pid) = self.child.id() {
            // `kill(1)` rather than a libc binding: the workspace forbids unsafe code.
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        match tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("the server exited with {status}");
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
