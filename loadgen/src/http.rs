//! A minimal HTTP/1.1 keep-alive client over one `TcpStream`, or over TLS on one (kubemock's
//! secure mode, with the CA and client certificate of the kubeconfig it writes): the load
//! generator must cost far less per request than the cheapest server it measures, so a request
//! is a prebuilt byte buffer written in one call, and a response is parsed in place
//! (`httparse`) without copying its body. It understands exactly what the servers it measures
//! send: `Content-Length` or chunked bodies, `Connection: close`, and bodiless statuses.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use base64::Engine as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Most headers a response may carry; more is treated as malformed.
const MAX_HEADERS: usize = 32;
/// Room reserved in the read buffer before each read: a typical response fits in one read.
const READ_CHUNK: usize = 16 * 1024;
/// Largest response accepted; a server sending more is broken for our purposes.
const MAX_RESPONSE: usize = 256 * 1024 * 1024;

/// Where a server listens, and how to speak TLS to it when it is secure.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// The socket address.
    pub(crate) addr: SocketAddr,
    /// TLS settings (`https://`), `None` for plain HTTP.
    tls: Option<Arc<TlsSettings>>,
}

/// A TLS client for one server.
struct TlsSettings {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme(), self.addr)
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme(), self.addr)
    }
}

impl Endpoint {
    /// Plain HTTP to `addr`.
    pub(crate) fn plain(addr: SocketAddr) -> Self {
        Endpoint { addr, tls: None }
    }

    /// HTTPS to `addr`, trusting and authenticating with what the kubeconfig at `path` holds
    /// (`certificate-authority-data`, `client-certificate-data`, `client-key-data`: the
    /// kubeconfig `kubemock serve --secure --kubeconfig-out` writes).
    pub(crate) fn tls_from_kubeconfig(addr: SocketAddr, path: &Path) -> anyhow::Result<Self> {
        Self::tls(addr, path, true)
    }

    /// HTTPS to `addr`, trusting the CA of the kubeconfig at `path` and presenting no client
    /// certificate: for requests that authenticate otherwise (a bearer token), since the
    /// server takes a client certificate before any token, as kube-apiserver does.
    pub(crate) fn tls_without_client_certificate(
        addr: SocketAddr,
        path: &Path,
    ) -> anyhow::Result<Self> {
        Self::tls(addr, path, false)
    }

    fn tls(addr: SocketAddr, path: &Path, client_certificate: bool) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the kubeconfig {}", path.display()))?;
        let field = |name: &str| -> anyhow::Result<Vec<u8>> {
            let value = text
                .lines()
                .find_map(|line| line.trim().strip_prefix(name))
                .ok_or_else(|| anyhow!("{} has no {name}", path.display()))?;
            base64::engine::general_purpose::STANDARD
                .decode(value.trim())
                .with_context(|| format!("{name} of {}", path.display()))
        };
        let blocks = |pem: &[u8]| pem::parse_many(pem).context("PEM in the kubeconfig");
        let mut roots = rustls::RootCertStore::empty();
        for block in blocks(&field("certificate-authority-data:")?)? {
            roots.add(CertificateDer::from(block.into_contents()))?;
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
        let mut config = if client_certificate {
            let chain: Vec<CertificateDer<'static>> = blocks(&field("client-certificate-data:")?)?
                .into_iter()
                .map(|block| CertificateDer::from(block.into_contents()))
                .collect();
            let key = blocks(&field("client-key-data:")?)?
                .into_iter()
                .next()
                .ok_or_else(|| anyhow!("no client key in {}", path.display()))?;
            let key = PrivateKeyDer::Pkcs8(key.into_contents().into());
            builder.with_client_auth_cert(chain, key)?
        } else {
            builder.with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Endpoint {
            addr,
            tls: Some(Arc::new(TlsSettings {
                connector: TlsConnector::from(Arc::new(config)),
                name: ServerName::IpAddress(addr.ip().into()),
            })),
        })
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

/// The byte stream of a connection.
enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(stream) => stream.write_all(bytes).await,
            Stream::Tls(stream) => {
                stream.write_all(bytes).await?;
                stream.flush().await
            }
        }
    }

    async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Stream::Plain(stream) => stream.read_buf(buf).await,
            Stream::Tls(stream) => stream.read_buf(buf).await,
        }
    }
}

/// One keep-alive connection.
pub(crate) struct Connection {
    stream: Stream,
    /// Bytes read and not yet consumed; the last response's bytes until the next request.
    buf: Vec<u8>,
    /// Length of the last response in `buf`, dropped before the next request is sent.
    consumed: usize,
    /// The last response's body when it came chunked (decoded), else empty.
    decoded: Vec<u8>,
    /// A stream's last chunk has been read (`read_stream`).
    stream_ended: bool,
}

/// A response, borrowed from the connection until its next request.
#[derive(Debug)]
pub(crate) struct Response<'a> {
    /// The status code.
    pub(crate) status: u16,
    /// The body (decoded if it came chunked).
    pub(crate) body: &'a [u8],
    /// The server will close the connection after this response.
    pub(crate) close: bool,
}

/// What `parse_head` found: where the body starts and how it is framed.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    status: u16,
    len: usize,
    framing: Framing,
    close: bool,
}

#[derive(Debug, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    /// Until the server closes the connection.
    UntilClose,
}

impl Connection {
    /// Connects to `endpoint` (with its TLS handshake when secure), with Nagle's algorithm off
    /// (requests are single writes).
    pub(crate) async fn connect(endpoint: &Endpoint) -> io::Result<Self> {
        let stream = TcpStream::connect(endpoint.addr).await?;
        stream.set_nodelay(true)?;
        let stream = match &endpoint.tls {
            None => Stream::Plain(stream),
            Some(tls) => Stream::Tls(Box::new(
                tls.connector.connect(tls.name.clone(), stream).await?,
            )),
        };
        Ok(Connection {
            stream,
            buf: Vec::with_capacity(READ_CHUNK),
            consumed: 0,
            decoded: Vec::new(),
            stream_ended: false,
        })
    }

    /// Sends one complete request (head and body) and reads its response.
    pub(crate) async fn round_trip(&mut self, request: &[u8]) -> io::Result<Response<'_>> {
        let head = self.send(request).await?;
        let body = match head.framing {
            Framing::Length(len) => {
                let end = head.len + len;
                if end > MAX_RESPONSE {
                    return Err(invalid("response too large"));
                }
                while self.buf.len() < end {
                    self.read_more().await?;
                }
                self.consumed = end;
                head.len..end
            }
            Framing::Chunked => loop {
                if let Some(end) = decode_chunked(&self.buf[head.len..], &mut self.decoded)? {
                    self.consumed = head.len + end;
                    break 0..0;
                }
                self.read_more().await?;
            },
            Framing::UntilClose => loop {
                match self.read_some().await? {
                    0 => {
                        self.consumed = self.buf.len();
                        break head.len..self.buf.len();
                    }
                    _ => continue,
                }
            },
        };
        let body = match head.framing {
            Framing::Chunked => &self.decoded[..],
            _ => &self.buf[body],
        };
        Ok(Response {
            status: head.status,
            body,
            close: head.close || head.framing == Framing::UntilClose,
        })
    }

    /// Sends a request whose answer is a stream that does not end by itself (a watch), and
    /// reads its head: the status. Its body then comes from [`Connection::read_stream`]; the
    /// connection is good for nothing else afterwards.
    pub(crate) async fn start_stream(&mut self, request: &[u8]) -> io::Result<u16> {
        let head = self.send(request).await?;
        if head.framing != Framing::Chunked {
            return Err(invalid("a stream must come chunked"));
        }
        self.buf.drain(..head.len);
        self.stream_ended = false;
        Ok(head.status)
    }

    /// Appends to `out` the body bytes of every complete chunk received, waiting for one if
    /// none is; `false` once the stream has ended (its last chunk, or the server closed it).
    pub(crate) async fn read_stream(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        if self.stream_ended {
            return Ok(false);
        }
        loop {
            let mut pos = 0;
            let mut took = false;
            loop {
                let (header, size) = match httparse::parse_chunk_size(&self.buf[pos..]) {
                    Ok(httparse::Status::Complete(found)) => found,
                    Ok(httparse::Status::Partial) => break,
                    Err(_) => return Err(invalid("malformed chunk size")),
                };
                let size = usize::try_from(size).map_err(|_| invalid("chunk too large"))?;
                if size == 0 {
                    self.buf.clear();
                    self.stream_ended = true;
                    return Ok(took);
                }
                if size > MAX_RESPONSE {
                    return Err(invalid("chunk too large"));
                }
                let start = pos + header;
                if self.buf.len() < start + size + 2 {
                    break;
                }
                out.extend_from_slice(&self.buf[start..start + size]);
                pos = start + size + 2;
                took = true;
            }
            self.buf.drain(..pos);
            if took {
                return Ok(true);
            }
            if self.read_some().await? == 0 {
                return Ok(false);
            }
        }
    }

    /// Drops the last response, sends `request` and reads the head of its response.
    async fn send(&mut self, request: &[u8]) -> io::Result<Head> {
        self.buf.drain(..self.consumed);
        self.consumed = 0;
        self.stream.write_all(request).await?;
        loop {
            if let Some(head) = parse_head(&self.buf)? {
                return Ok(head);
            }
            self.read_more().await?;
        }
    }

    /// Reads at least one byte, or fails on end of stream.
    async fn read_more(&mut self) -> io::Result<()> {
        match self.read_some().await? {
            0 => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed mid-response",
            )),
            _ => Ok(()),
        }
    }

    async fn read_some(&mut self) -> io::Result<usize> {
        if self.buf.len() > MAX_RESPONSE {
            return Err(invalid("response too large"));
        }
        self.buf.reserve(READ_CHUNK);
        self.stream.read_buf(&mut self.buf).await
    }
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Parses a response head at the start of `data`; `None` if it is not complete yet.
fn parse_head(data: &[u8]) -> io::Result<Option<Head>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(data) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(invalid("malformed response head")),
    };
    let status = response.code.unwrap_or(0);
    let mut length = None;
    let mut chunked = false;
    let mut close = response.version == Some(0);
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| invalid("bad content-length"))?;
            length = Some(value);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = header
                .value
                .split(|b| *b == b',')
                .any(|v| v.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if header.name.eq_ignore_ascii_case("connection") {
            close = header
                .value
                .split(|b| *b == b',')
                .any(|v| v.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    let framing = if matches!(status, 100..=199 | 204 | 304) {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else if let Some(length) = length {
        Framing::Length(length)
    } else {
        Framing::UntilClose
    };
    Ok(Some(Head {
        status,
        len,
        framing,
        close,
    }))
}

/// Decodes a chunked body at the start of `data` into `body`; returns how many bytes of `data`
/// it spans, or `None` if it is not complete yet (then `body` holds nothing of use).
fn decode_chunked(data: &[u8], body: &mut Vec<u8>) -> io::Result<Option<usize>> {
    body.clear();
    let mut pos = 0;
    loop {
        let (header, size) = match httparse::parse_chunk_size(&data[pos..]) {
            Ok(httparse::Status::Complete(found)) => found,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(invalid("malformed chunk size")),
        };
        pos += header;
        let size = usize::try_from(size).map_err(|_| invalid("chunk too large"))?;
        if size == 0 {
            // No trailers: an empty line ends the body; else skip to the empty line after them.
            let rest = &data[pos..];
            if rest.starts_with(b"\r\n") {
                return Ok(Some(pos + 2));
            }
            return Ok(rest
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map(|at| pos + at + 4));
        }
        if size > MAX_RESPONSE {
            return Err(invalid("chunk too large"));
        }
        if data.len() < pos + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[pos..pos + size]);
        pos += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_head_needs_more_bytes() {
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-le").unwrap(), None);
    }

    #[test]
    fn content_length_frames_the_body() {
        let data = b"HTTP/1.1 201 Created\r\ncontent-length: 5\r\n\r\nhello";
        let head = parse_head(data).unwrap().unwrap();
        assert_eq!(
            head,
            Head {
                status: 201,
                len: data.len() - 5,
                framing: Framing::Length(5),
                close: false
            }
        );
    }

    #[test]
    fn connection_close_and_http_1_0_are_noticed() {
        let head = parse_head(b"HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(head.close);
        let head = parse_head(b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(head.close);
    }

    #[test]
    fn bodiless_statuses_have_no_body_and_unframed_bodies_run_to_close() {
        let head = parse_head(b"HTTP/1.1 204 No Content\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.framing, Framing::Length(0));
        let head = parse_head(b"HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!(head.framing, Framing::UntilClose);
    }

    /// A stream's chunks are delivered as they complete, whatever the reads split them at, and
    /// its last chunk ends it even though the connection stays open.
    #[tokio::test]
    async fn a_stream_delivers_its_chunks_as_they_complete() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (go_on, mut wait) = tokio::sync::mpsc::channel::<()>(1);
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await.unwrap();
            let pieces: [&[u8]; 4] = [
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nline1\n\r\n6\r",
                b"\nline2\n\r\n",
                b"3\r\nab",
                b"\n\r\n0\r\n\r\n",
            ];
            for piece in pieces {
                socket.write_all(piece).await.unwrap();
                socket.flush().await.unwrap();
                wait.recv().await.unwrap();
            }
            // Kept open: the last chunk alone must end the stream.
            wait.recv().await;
        });
        let mut connection = Connection::connect(&Endpoint::plain(addr)).await.unwrap();
        let status = connection
            .start_stream(b"GET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(status, 200);
        let mut out = Vec::new();
        assert!(connection.read_stream(&mut out).await.unwrap());
        assert_eq!(out, b"line1\n");
        go_on.send(()).await.unwrap();
        assert!(connection.read_stream(&mut out).await.unwrap());
        assert_eq!(out, b"line1\nline2\n");
        go_on.send(()).await.unwrap();
        go_on.send(()).await.unwrap();
        assert!(connection.read_stream(&mut out).await.unwrap());
        assert_eq!(out, b"line1\nline2\nab\n");
        go_on.send(()).await.unwrap();
        assert!(!connection.read_stream(&mut out).await.unwrap());
        assert!(!connection.read_stream(&mut out).await.unwrap());
        drop(go_on);
        server.await.unwrap();
    }

    #[test]
    fn chunked_bodies_are_decoded_once_complete() {
        let head = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.framing, Framing::Chunked);
        let mut body = Vec::new();
        let data = b"5\r\nhello\r\n1;ext=1\r\n!\r\n0\r\n\r\nNEXT";
        assert_eq!(
            decode_chunked(data, &mut body).unwrap(),
            Some(data.len() - 4)
        );
        assert_eq!(body, b"hello!");
        assert_eq!(decode_chunked(&data[..12], &mut body).unwrap(), None);
        let trailers = b"2\r\nhi\r\n0\r\nx-trailer: 1\r\n\r\n";
        assert_eq!(
            decode_chunked(trailers, &mut body).unwrap(),
            Some(trailers.len())
        );
        assert_eq!(body, b"hi");
    }

    #[test]
    fn malformed_heads_are_errors() {
        assert!(parse_head(b"NOT HTTP\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").is_err());
    }
}
