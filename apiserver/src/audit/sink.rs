//! Where audit events go (upstream's log backend, `plugin/pkg/audit/log/backend.go`, one JSON
//! object a line): request tasks must never wait on the disk, so each event, encoded on the
//! task that made it, goes with `try_send` into a bounded channel that one writer thread
//! drains into a buffered file, flushing whenever the channel is empty. When the channel is
//! full the event is dropped and counted (`apiserver_audit_error_total{plugin="log"}`, as
//! upstream counts events its backends fail to take), with a warning at most every
//! [`DROP_WARNING_INTERVAL`]. This is upstream's batch mode's shape (a buffer in front of
//! the writer) without its blocking mode: upstream's log backend defaults to blocking, which
//! would make a slow disk slow every request.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tracing::{error, warn};

use super::policy::Level;

/// Events waiting for the writer at most; more are dropped. Upstream's batch backend buffers
/// 10000 events by default (`--audit-log-batch-buffer-size`).
const BUFFERED_EVENTS: usize = 10_000;

/// The writer's output buffer: one write(2) per this many bytes or per empty channel.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// Warnings about dropped events (and write failures) at most this often.
const DROP_WARNING_INTERVAL: Duration = Duration::from_secs(10);

/// Where the events are written (`--audit-log-path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditLog {
    /// Standard output (`-`).
    Stdout,
    /// A file, created (mode 0600, its directory 0700) or appended to.
    File(PathBuf),
}

impl AuditLog {
    /// `-` is standard output, anything else a file.
    pub fn from_path(path: &str) -> AuditLog {
        if path == "-" {
            AuditLog::Stdout
        } else {
            AuditLog::File(PathBuf::from(path))
        }
    }
}

enum Message {
    /// One encoded event, its newline included.
    Line(Vec<u8>),
    /// Flush what came before, then answer.
    Flush(oneshot::Sender<()>),
}

/// The counters `/metrics` reports (upstream's `pkg/audit/metrics.go`).
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Events handed to the writer (`apiserver_audit_event_total`).
    pub(crate) events: AtomicU64,
    /// Events dropped: the channel was full or writing failed (`apiserver_audit_error_total`).
    pub(crate) errors: AtomicU64,
    /// Requests by the level the policy gave them (`apiserver_audit_level_total`), in
    /// [`Level`] order.
    pub(crate) levels: [AtomicU64; 4],
    /// When a drop was last warned about (milliseconds since `started`), for the rate limit.
    last_warning_ms: AtomicU64,
}

impl Counts {
    /// Counts a request at `level`.
    pub(crate) fn level(&self, level: Level) {
        self.levels[level as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// The sending end: cheap to clone, shared by every request task.
#[derive(Clone)]
pub(crate) struct Sink {
    sender: mpsc::Sender<Message>,
    counts: Arc<Counts>,
    started: Instant,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").finish_non_exhaustive()
    }
}

impl Sink {
    /// Opens `log` and starts its writer thread, which ends once every `Sink` is dropped.
    pub(crate) fn start(log: &AuditLog) -> std::io::Result<Sink> {
        let out: Box<dyn Write + Send> = match log {
            AuditLog::Stdout => Box::new(std::io::stdout()),
            AuditLog::File(path) => Box::new(open(path)?),
        };
        Sink::start_writing(out)
    }

    fn start_writing(out: Box<dyn Write + Send>) -> std::io::Result<Sink> {
        let (sender, receiver) = mpsc::channel(BUFFERED_EVENTS);
        let counts = Arc::new(Counts::default());
        let sink = Sink {
            sender,
            counts: Arc::clone(&counts),
            started: Instant::now(),
        };
        let writer = sink.clone_counts_only();
        std::thread::Builder::new()
            .name("audit-log".to_owned())
            .spawn(move || {
                write_events(
                    receiver,
                    BufWriter::with_capacity(WRITE_BUFFER_BYTES, out),
                    &writer,
                )
            })?;
        Ok(sink)
    }

    /// A handle on the counters and the clock alone (for the writer thread, which must not
    /// hold a sender: the thread ends when the last sender drops).
    fn clone_counts_only(&self) -> WarnLimit {
        WarnLimit {
            counts: Arc::clone(&self.counts),
            started: self.started,
        }
    }

    /// The counters.
    pub(crate) fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Hands one encoded event to the writer without waiting; dropped (and counted) when the
    /// writer is behind by [`BUFFERED_EVENTS`].
    pub(crate) fn send(&self, line: Vec<u8>) {
        match self.sender.try_send(Message::Line(line)) {
            Ok(()) => {
                self.counts.events.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.counts.errors.fetch_add(1, Ordering::Relaxed);
                self.clone_counts_only().warn(|dropped| {
                    warn!(
                        dropped,
                        "audit log writer is behind: events dropped (apiserver_audit_error_total)"
                    );
                });
            }
        }
    }

    /// Waits until every event sent before has been written and flushed (at shutdown).
    pub(crate) async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.sender.send(Message::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }
}

/// The rate limit of the drop warnings.
struct WarnLimit {
    counts: Arc<Counts>,
    started: Instant,
}

impl WarnLimit {
    /// Calls `warn` with the number of events dropped so far, unless a warning was given in
    /// the last [`DROP_WARNING_INTERVAL`].
    fn warn(&self, warn: impl FnOnce(u64)) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let interval = u64::try_from(DROP_WARNING_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        let last = self.counts.last_warning_ms.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= interval)
            && self
                .counts
                .last_warning_ms
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            warn(self.counts.errors.load(Ordering::Relaxed));
        }
    }
}

/// Creates or opens the log file as upstream's `ensureLogFile` does.
fn open(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The writer thread: writes what arrives, flushes whenever nothing more is waiting, ends
/// when every sender is gone.
fn write_events(
    mut receiver: mpsc::Receiver<Message>,
    mut out: BufWriter<Box<dyn Write + Send>>,
    limit: &WarnLimit,
) {
    let failed = |err: std::io::Error| {
        limit.counts.errors.fetch_add(1, Ordering::Relaxed);
        limit.warn(|_| error!(error = %err, "writing the audit log failed"));
    };
    while let Some(message) = receiver.blocking_recv() {
        let mut next = Some(message);
        while let Some(message) = next {
            match message {
                Message::Line(line) => {
                    if let Err(err) = out.write_all(&line) {
                        failed(err);
                    }
                }
                Message::Flush(done) => {
                    if let Err(err) = out.flush() {
                        failed(err);
                    }
                    let _ = done.send(());
                }
            }
            next = receiver.try_recv().ok();
        }
        if let Err(err) = out.flush() {
            failed(err);
        }
    }
    if let Err(err) = out.flush() {
        failed(err);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc as std_mpsc;

    use super::*;

    /// A writer that blocks until told to go on, then keeps what it is given.
    struct Stalled {
        go: std_mpsc::Receiver<()>,
        written: Arc<parking_lot::Mutex<Vec<u8>>>,
        waited: bool,
    }

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if !self.waited {
                let _ = self.go.recv();
                self.waited = true;
            }
            self.written.lock().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_writer_that_falls_behind_loses_events_counted_and_blocks_no_sender() {
        let (go, wait) = std_mpsc::channel();
        let written = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let out = Stalled {
            go: wait,
            written: Arc::clone(&written),
            waited: false,
        };
        // A line longer than the write buffer reaches the stalled writer at once.
        let sink = Sink::start_writing(Box::new(out)).expect("a writer thread");
        let total = BUFFERED_EVENTS + 10;
        sink.send(vec![b'x'; WRITE_BUFFER_BYTES + 1]);
        for _ in 1..total {
            sink.send(b"{}\n".to_vec());
        }
        let (events, errors) = (
            sink.counts().events.load(Ordering::Relaxed),
            sink.counts().errors.load(Ordering::Relaxed),
        );
        assert_eq!(events + errors, total as u64);
        assert!(errors >= 9, "errors {errors}");
        go.send(()).expect("the writer waits");
        sink.flush().await;
        let lines = written.lock().iter().filter(|b| **b == b'\n').count();
        assert_eq!(lines as u64, events - 1);
    }
}
