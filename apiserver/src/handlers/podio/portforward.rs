//! `pods/portforward` sessions: SPDY `portforward.k8s.io` (upstream
//! `staging/src/k8s.io/kubelet/pkg/cri/streaming/portforward/httpstream.go`), on the connection
//! or tunnelled in WebSocket binary messages (`SPDY/3.1+portforward.k8s.io`, client-go
//! `tools/portforward/tunneling_connection.go`). For each forwarded connection the client
//! opens an error stream and a data stream with the same `requestID` and `port`.
//!
//! Simulated containers listen on no ports, so each connection is answered by the pod's
//! responder: with the annotation `kubemock.dev/port.<PORT>`, its value is written back once
//! the client has sent its first bytes (a request), then the data stream ends, as a server
//! that answers one request and closes; without it, the error stream says the pod serves
//! nothing on that port, as the kubelet reports a refused connection (kubectl ≥ 1.29 then
//! ends the forward, as it does on a real cluster).

use std::collections::HashMap;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use super::{PORT_ANNOTATION, Session, Wire, spdy, websocket};
use crate::object;

/// How many bytes one read off the connection takes at most.
const READ_CHUNK: usize = 32 << 10;

/// The buffer between the WebSocket tunnel and the SPDY session, each way.
const TUNNEL_BUFFER: usize = 64 << 10;

/// Serves one port-forward session on the upgraded connection.
pub(crate) async fn serve<Io>(session: Session, wire: Wire, io: Io)
where
    Io: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let shutdown = session.state.shutdown().clone();
    let result = match wire {
        Wire::Spdy => forward(io, &session, &shutdown).await,
        Wire::TunneledSpdy => {
            let (inner, outer) = tokio::io::duplex(TUNNEL_BUFFER);
            tokio::select! {
                result = forward(inner, &session, &shutdown) => result,
                result = tunnel(io, outer) => result,
            }
        }
        Wire::WebSocket { .. } => Ok(()),
    };
    if let Err(err) = result {
        tracing::debug!(%err, "port-forward session ended");
    }
}

/// Carries a byte stream (`inner`) in WebSocket binary messages on `io`, answering pings.
async fn tunnel<Io, Inner>(io: Io, inner: Inner) -> std::io::Result<()>
where
    Io: AsyncRead + AsyncWrite + Unpin,
    Inner: AsyncRead + AsyncWrite + Unpin,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let (mut inner_reader, mut inner_writer) = tokio::io::split(inner);
    let mut decoder = websocket::Decoder::default();
    let mut from_client = Vec::with_capacity(READ_CHUNK);
    let mut to_client = Vec::with_capacity(READ_CHUNK);
    loop {
        loop {
            let message = match decoder.next_message() {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(err) => {
                    writer
                        .write_all(&websocket::close(websocket::CLOSE_PROTOCOL_ERROR))
                        .await?;
                    return Err(std::io::Error::other(err));
                }
            };
            match message {
                websocket::Message::Binary(bytes) => inner_writer.write_all(&bytes).await?,
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
        tokio::select! {
            read = reader.read_buf(&mut from_client) => {
                if read? == 0 {
                    return Ok(());
                }
                decoder.push(&from_client);
                from_client.clear();
            }
            read = inner_reader.read_buf(&mut to_client) => {
                if read? == 0 {
                    writer.write_all(&websocket::close(websocket::CLOSE_NORMAL)).await?;
                    let _ = writer.shutdown().await;
                    return Ok(());
                }
                writer.write_all(&websocket::binary(&to_client)).await?;
                to_client.clear();
            }
        }
    }
}

/// One forwarded connection: its streams, and whether it has been answered.
#[derive(Debug, Default)]
struct Pair {
    port: String,
    error: Option<u32>,
    data: Option<u32>,
    done: bool,
}

/// The SPDY session: answers each forwarded connection.
async fn forward<Io>(
    io: Io,
    session: &Session,
    shutdown: &tokio_util::sync::CancellationToken,
) -> std::io::Result<()>
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let mut decoder = spdy::Decoder::default();
    let mut deflater = spdy::Deflater::default();
    let mut buffer = Vec::with_capacity(READ_CHUNK);
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let mut last = 0;
    loop {
        while let Some(frame) = decoder.next_frame().map_err(std::io::Error::other)? {
            let mut out = Vec::new();
            match frame {
                spdy::Frame::SynStream {
                    stream, headers, ..
                } => {
                    last = stream.max(last);
                    let kind = spdy::header(&headers, "streamtype").unwrap_or("");
                    let port = spdy::header(&headers, "port").unwrap_or("").to_owned();
                    // Clients before requestID paired streams by port.
                    let id = spdy::header(&headers, "requestid")
                        .map_or_else(|| format!("port {port}"), str::to_owned);
                    let pair = pairs.entry(id).or_default();
                    pair.port = port;
                    match kind {
                        "error" => pair.error = Some(stream),
                        "data" => pair.data = Some(stream),
                        _ => {
                            out.extend(spdy::rst_stream(stream, spdy::RST_REFUSED_STREAM));
                            writer.write_all(&out).await?;
                            continue;
                        }
                    }
                    out.extend(spdy::syn_reply(&mut deflater, stream));
                    if let (Some(error), Some(data), false) = (pair.error, pair.data, pair.done)
                        && responder(session, &pair.port).is_none()
                    {
                        out.extend(spdy::data(
                            error,
                            false,
                            refusal(session, &pair.port).as_bytes(),
                        ));
                        out.extend(spdy::data(error, true, &[]));
                        out.extend(spdy::data(data, true, &[]));
                        pair.done = true;
                    }
                }
                spdy::Frame::Data { stream, fin, data } => {
                    if let Some(pair) = pairs.values_mut().find(|p| p.data == Some(stream))
                        && !pair.done
                        && (!data.is_empty() || fin)
                        && let (Some(response), Some(error)) =
                            (responder(session, &pair.port), pair.error)
                    {
                        out.extend(spdy::data(stream, false, response.as_bytes()));
                        out.extend(spdy::data(stream, true, &[]));
                        out.extend(spdy::data(error, true, &[]));
                        pair.done = true;
                    }
                }
                spdy::Frame::RstStream { stream, .. } => {
                    // The client gave up on a connection: end its error stream so that its
                    // wait for the error ends too.
                    if let Some(pair) = pairs.values_mut().find(|p| p.data == Some(stream)) {
                        if !pair.done
                            && let Some(error) = pair.error
                        {
                            out.extend(spdy::data(error, true, &[]));
                        }
                        pair.done = true;
                    }
                    pairs.retain(|_, p| !(p.done && p.data == Some(stream)));
                }
                spdy::Frame::Ping { id } => out.extend(spdy::ping(id)),
                spdy::Frame::GoAway => return Ok(()),
                spdy::Frame::Ignored => {}
            }
            if !out.is_empty() {
                writer.write_all(&out).await?;
            }
        }
        tokio::select! {
            read = reader.read_buf(&mut buffer) => {
                if read? == 0 {
                    return Ok(());
                }
                decoder.push(&buffer);
                buffer.clear();
            }
            () = shutdown.cancelled() => {
                writer.write_all(&spdy::goaway(last)).await?;
                return Ok(());
            }
        }
    }
}

/// The pod's canned response on `port`, if it configures one.
fn responder(session: &Session, port: &str) -> Option<String> {
    session
        .pod
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(format!("{PORT_ANNOTATION}{port}")))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// The error stream's message for a port the pod serves nothing on (the kubelet's
/// `error forwarding port %d to pod %s, uid %v: %v`).
fn refusal(session: &Session, port: &str) -> String {
    let pod = &session.pod;
    let name = object::name_of(pod);
    let namespace = object::meta_str(pod, "namespace").unwrap_or("");
    let uid = object::meta_str(pod, "uid").unwrap_or("");
    format!(
        "error forwarding port {port} to pod {name}, uid {uid}: kubemock: pod {namespace}/{name} serves nothing on port {port}: its simulated containers listen on no ports (set the pod annotation {PORT_ANNOTATION}{port} to a canned response)"
    )
}
