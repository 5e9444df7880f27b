//! The exec and attach sessions: a simulated process (a built-in program, or the container's
//! simulated output for attach) joined to the client's channels, over WebSocket
//! (`v5.channel.k8s.io`, `v4.channel.k8s.io`: channel bytes stdin 0, stdout 1, stderr 2,
//! error 3, resize 4, and v5's close 255, `wsstream/conn.go`) or SPDY (one stream per
//! `streamType`: error, stdin, stdout, stderr, resize; upstream
//! `staging/src/k8s.io/kubelet/pkg/cri/streaming/remotecommand/httpstream.go`). Both end the
//! same way: all output, then the exit `Status` on the error channel, then the connection
//! closes (a WebSocket close 1000, which clients read as the end of every channel; SPDY FINs
//! and GOAWAY).

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{mpsc, oneshot};

use super::builtins::{self, Output, Stdio};
use super::{Session, Wire, spdy, websocket};

/// How many chunks wait between the client and the program, each way.
const CHANNEL_DEPTH: usize = 64;

/// How many bytes one read off the connection takes at most.
const READ_CHUNK: usize = 32 << 10;

/// WebSocket channel numbers (`staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go`).
mod channel {
    pub(super) const STDIN: u8 = 0;
    pub(super) const STDOUT: u8 = 1;
    pub(super) const STDERR: u8 = 2;
    pub(super) const ERROR: u8 = 3;
    /// v5: the next byte names a channel the sender closes.
    pub(super) const CLOSE: u8 = 255;
}

/// What the session runs.
pub(crate) enum Program {
    /// exec: a command line.
    Command(Vec<String>),
    /// attach: the container's simulated output until it ends.
    Attach,
}

/// A running simulated process: where stdin goes, where output comes from, and its exit code
/// once the output has ended.
struct Process {
    stdin: StdinPipe,
    output: mpsc::Receiver<Output>,
    exit: oneshot::Receiver<i32>,
    task: tokio::task::JoinHandle<()>,
    argv: Vec<String>,
}

/// How many stdin chunks the session holds for a program that is not reading; past it the
/// session stops reading the connection (TCP's backpressure then slows the client) while it
/// still forwards output, so that a program blocked on its output never waits on its input.
const PENDING_STDIN: usize = 16;

/// Stdin on its way to the program: queued here, never awaited in the frame loop.
struct StdinPipe {
    sender: Option<mpsc::Sender<Bytes>>,
    pending: std::collections::VecDeque<Bytes>,
    /// The client closed stdin: the program gets end of file once `pending` is delivered.
    closing: bool,
}

impl StdinPipe {
    fn push(&mut self, data: &[u8]) {
        if self.sender.is_some() && !self.closing && !data.is_empty() {
            self.pending.push_back(Bytes::copy_from_slice(data));
        }
    }

    fn close(&mut self) {
        self.closing = true;
        if self.pending.is_empty() {
            self.sender = None;
        }
    }

    /// Whether the session may read more of the connection.
    fn has_room(&self) -> bool {
        self.pending.len() < PENDING_STDIN
    }

    /// A sender to deliver the next pending chunk with, if there is one.
    fn ready_sender(&self) -> Option<mpsc::Sender<Bytes>> {
        if self.pending.is_empty() {
            None
        } else {
            self.sender.clone()
        }
    }

    /// Delivers the next pending chunk through `permit` (`None`: the program stopped reading).
    fn deliver(&mut self, permit: Option<mpsc::OwnedPermit<Bytes>>) {
        match (permit, self.pending.pop_front()) {
            (Some(permit), Some(chunk)) => {
                permit.send(chunk);
            }
            (None, _) => {
                self.sender = None;
                self.pending.clear();
            }
            (Some(_), None) => {}
        }
        if self.closing && self.pending.is_empty() {
            self.sender = None;
        }
    }
}

/// Waits for room in the program's stdin (never, without a sender).
async fn stdin_room(sender: Option<mpsc::Sender<Bytes>>) -> Option<mpsc::OwnedPermit<Bytes>> {
    match sender {
        Some(sender) => sender.reserve_owned().await.ok(),
        None => std::future::pending().await,
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // A client that leaves ends its process (a shell's SIGHUP).
        self.task.abort();
    }
}

async fn start(session: &Session, program: Program) -> Process {
    let (stdin_tx, stdin_rx) = mpsc::channel(CHANNEL_DEPTH);
    let (out_tx, output) = mpsc::channel(CHANNEL_DEPTH);
    let (exit_tx, exit) = oneshot::channel();
    let mut io = Stdio {
        stdin: session.streams.stdin.then_some(stdin_rx),
        output: out_tx,
    };
    let state = session.state.clone();
    let (task, argv) = match program {
        Program::Command(argv) => {
            let container = super::container::resolve(
                &session.state,
                &session.pod,
                &session.container,
                session.streams.tty,
            )
            .await;
            let run_argv = argv.clone();
            let task = tokio::spawn(async move {
                let code = builtins::run(&container, &run_argv, &mut io, state.clock()).await;
                drop(io);
                let _ = exit_tx.send(code);
            });
            (task, argv)
        }
        Program::Attach => {
            let lines = crate::handlers::logs::log_lines(&session.pod, &session.container);
            let key = session.pod_key.clone();
            let revision = session.revision;
            let container = session.container.clone();
            let tty = session.streams.tty;
            let task = tokio::spawn(async move {
                let mut text = String::new();
                for line in lines {
                    text.push_str(&line);
                    text.push_str(if tty { "\r\n" } else { "\n" });
                }
                let _ = io.output.send(Output::Stdout(Bytes::from(text))).await;
                // Attach holds until the container ends (or the pod goes); what the client
                // types reaches no process and is read and dropped.
                let mut stdin = io.stdin.take();
                let drain = async {
                    while let Some(stdin) = stdin.as_mut() {
                        if stdin.recv().await.is_none() {
                            break;
                        }
                    }
                    std::future::pending::<()>().await;
                };
                tokio::select! {
                    () = crate::handlers::logs::until_ended(&state, key, revision, container) => {}
                    () = drain => {}
                }
                drop(io);
                let _ = exit_tx.send(0);
            });
            (task, Vec::new())
        }
    };
    Process {
        stdin: StdinPipe {
            sender: session.streams.stdin.then_some(stdin_tx),
            pending: std::collections::VecDeque::new(),
            closing: false,
        },
        output,
        exit,
        task,
        argv,
    }
}

/// Serves one exec or attach session on the upgraded connection.
pub(crate) async fn serve<Io>(session: Session, wire: Wire, program: Program, io: Io)
where
    Io: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let process = start(&session, program).await;
    let shutdown = session.state.shutdown().clone();
    let result = match wire {
        Wire::WebSocket { v5 } => websocket_session(io, v5, process, &session, shutdown).await,
        Wire::Spdy => spdy_session(io, process, &session, shutdown).await,
        Wire::TunneledSpdy => Ok(()),
    };
    if let Err(err) = result {
        tracing::debug!(%err, "exec session ended");
    }
}

/// The exit status once the process's output has ended.
async fn exit_status(process: &mut Process) -> Vec<u8> {
    let code = (&mut process.exit).await.unwrap_or(builtins::NOT_FOUND);
    super::exit_status(code, &process.argv)
}

async fn websocket_session<Io>(
    io: Io,
    v5: bool,
    mut process: Process,
    session: &Session,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()>
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let mut decoder = websocket::Decoder::default();
    let mut buffer = Vec::with_capacity(READ_CHUNK);
    let streams = &session.streams;
    loop {
        while let Some(message) = match decoder.next_message() {
            Ok(message) => message,
            Err(err) => {
                writer
                    .write_all(&websocket::close(websocket::CLOSE_PROTOCOL_ERROR))
                    .await?;
                return Err(std::io::Error::other(err));
            }
        } {
            match message {
                websocket::Message::Binary(data) => match data.first() {
                    Some(&channel::CLOSE) if v5 && data.get(1) == Some(&channel::STDIN) => {
                        process.stdin.close();
                    }
                    Some(&channel::STDIN) => {
                        process.stdin.push(data.get(1..).unwrap_or_default());
                    }
                    // Resize (4) and anything else: a simulated terminal has no size.
                    _ => {}
                },
                websocket::Message::Ping(payload) => {
                    writer.write_all(&websocket::pong(&payload)).await?;
                }
                websocket::Message::Close(_) => {
                    writer
                        .write_all(&websocket::close(websocket::CLOSE_NORMAL))
                        .await?;
                    return Ok(());
                }
                websocket::Message::Text(_) | websocket::Message::Pong => {}
            }
        }
        let room = process.stdin.has_room();
        let stdin = process.stdin.ready_sender();
        let delivering = stdin.is_some();
        tokio::select! {
            read = reader.read_buf(&mut buffer), if room => {
                if read? == 0 {
                    return Ok(());
                }
                decoder.push(&buffer);
                buffer.clear();
            }
            permit = stdin_room(stdin), if delivering => process.stdin.deliver(permit),
            chunk = process.output.recv() => match chunk {
                Some(Output::Stdout(bytes)) if streams.stdout => {
                    writer.write_all(&websocket::channel(channel::STDOUT, &bytes)).await?;
                }
                Some(Output::Stderr(bytes)) if streams.stderr => {
                    writer.write_all(&websocket::channel(channel::STDERR, &bytes)).await?;
                }
                Some(_) => {}
                None => {
                    let status = exit_status(&mut process).await;
                    writer.write_all(&websocket::channel(channel::ERROR, &status)).await?;
                    writer.write_all(&websocket::close(websocket::CLOSE_NORMAL)).await?;
                    writer.flush().await?;
                    let _ = writer.shutdown().await;
                    return Ok(());
                }
            },
            () = shutdown.cancelled() => {
                // 1001: going away.
                writer.write_all(&websocket::close(1001)).await?;
                return Ok(());
            }
        }
    }
}

/// The SPDY stream types of remote commands (`k8s.io/api/core/v1` `StreamType*`).
#[derive(Debug, Default)]
struct SpdyStreams {
    error: Option<u32>,
    stdin: Option<u32>,
    stdout: Option<u32>,
    stderr: Option<u32>,
    resize: Option<u32>,
    last: u32,
}

async fn spdy_session<Io>(
    io: Io,
    mut process: Process,
    session: &Session,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()>
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let mut decoder = spdy::Decoder::default();
    let mut deflater = spdy::Deflater::default();
    let mut buffer = Vec::with_capacity(READ_CHUNK);
    let mut ids = SpdyStreams::default();
    let wanted = &session.streams;
    // Upstream's `waitForStreams`: error always; stdin, stdout as asked; stderr unless a
    // terminal; resize with a terminal.
    let ready = |ids: &SpdyStreams| {
        ids.error.is_some()
            && (!wanted.stdin || ids.stdin.is_some())
            && (!wanted.stdout || ids.stdout.is_some())
            && (!wanted.stderr || wanted.tty || ids.stderr.is_some())
            && (!wanted.tty || ids.resize.is_some())
    };
    loop {
        while let Some(frame) = decoder.next_frame().map_err(std::io::Error::other)? {
            match frame {
                spdy::Frame::SynStream {
                    stream,
                    fin,
                    headers,
                } => {
                    ids.last = ids.last.max(stream);
                    let slot = match spdy::header(&headers, "streamtype") {
                        Some("error") => &mut ids.error,
                        Some("stdin") => &mut ids.stdin,
                        Some("stdout") => &mut ids.stdout,
                        Some("stderr") => &mut ids.stderr,
                        Some("resize") => &mut ids.resize,
                        _ => {
                            writer
                                .write_all(&spdy::rst_stream(stream, spdy::RST_REFUSED_STREAM))
                                .await?;
                            continue;
                        }
                    };
                    *slot = Some(stream);
                    writer
                        .write_all(&spdy::syn_reply(&mut deflater, stream))
                        .await?;
                    if fin && ids.stdin == Some(stream) {
                        process.stdin.close();
                    }
                }
                spdy::Frame::Data { stream, fin, data } => {
                    if ids.stdin == Some(stream) {
                        process.stdin.push(&data);
                        if fin {
                            process.stdin.close();
                        }
                    }
                }
                spdy::Frame::RstStream { stream, .. } => {
                    if ids.stdin == Some(stream) {
                        process.stdin.close();
                    }
                }
                spdy::Frame::Ping { id } => writer.write_all(&spdy::ping(id)).await?,
                spdy::Frame::GoAway => return Ok(()),
                spdy::Frame::Ignored => {}
            }
        }
        let streams_ready = ready(&ids);
        let room = process.stdin.has_room();
        let stdin = process.stdin.ready_sender();
        let delivering = stdin.is_some();
        tokio::select! {
            permit = stdin_room(stdin), if delivering => process.stdin.deliver(permit),
            read = reader.read_buf(&mut buffer), if room => {
                if read? == 0 {
                    return Ok(());
                }
                decoder.push(&buffer);
                buffer.clear();
            }
            chunk = process.output.recv(), if streams_ready => match chunk {
                Some(Output::Stdout(bytes)) => {
                    if let Some(id) = ids.stdout {
                        writer.write_all(&spdy::data(id, false, &bytes)).await?;
                    }
                }
                Some(Output::Stderr(bytes)) => {
                    if let Some(id) = ids.stderr {
                        writer.write_all(&spdy::data(id, false, &bytes)).await?;
                    }
                }
                None => {
                    let status = exit_status(&mut process).await;
                    for id in [ids.stdout, ids.stderr].into_iter().flatten() {
                        writer.write_all(&spdy::data(id, true, &[])).await?;
                    }
                    if let Some(id) = ids.error {
                        writer.write_all(&spdy::data(id, false, &status)).await?;
                        writer.write_all(&spdy::data(id, true, &[])).await?;
                    }
                    writer.write_all(&spdy::goaway(ids.last)).await?;
                    writer.flush().await?;
                    let _ = writer.shutdown().await;
                    return Ok(());
                }
            },
            () = shutdown.cancelled() => {
                writer.write_all(&spdy::goaway(ids.last)).await?;
                return Ok(());
            }
        }
    }
}
