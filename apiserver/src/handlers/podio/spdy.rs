//! SPDY/3.1 framing, server side, as kubectl speaks it for `pods/exec`, `pods/attach` (up to
//! 1.29, and as the fallback after) and `pods/portforward` (up to 1.30, and tunnelled in
//! WebSocket messages after). The wire format is the SPDY/3 draft's (section 2.2 frames, section 2.6 control
//! frames, section 2.6.10 header blocks compressed with zlib and the spec's dictionary, one zlib stream
//! per direction for the life of the connection). Kubernetes' implementation is
//! `github.com/moby/spdystream` (`spdy/read.go`, `spdy/write.go`) under
//! `staging/src/k8s.io/apimachinery/pkg/util/httpstream/spdy/connection.go`.
//!
//! The decoder is fed bytes as they arrive and hands out whole frames; nothing it is given
//! can make it panic: a frame longer than [`MAX_FRAME_BYTES`] or a header block inflating
//! past [`MAX_HEADER_BYTES`] is refused.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// SPDY/3 section 2.6.10.1: the dictionary both zlib streams start from.
pub(crate) const DICTIONARY: &[u8] = include_bytes!("spdy_dictionary.bin");

/// The protocol version in every control frame.
const VERSION: u16 = 3;

/// The largest frame kubemock accepts (client-go writes 32 KiB of data at most; spdystream
/// allows 16 MiB, which would let one client hold that much of our memory per frame).
pub(crate) const MAX_FRAME_BYTES: usize = 1 << 20;

/// The largest inflated header block kubemock accepts (kubectl's are a few dozen bytes).
const MAX_HEADER_BYTES: usize = 64 << 10;

/// The most headers one block may claim.
const MAX_HEADERS: u32 = 256;

/// Control frame types (SPDY/3 section 2.6).
mod kind {
    pub(super) const SYN_STREAM: u16 = 1;
    pub(super) const SYN_REPLY: u16 = 2;
    pub(super) const RST_STREAM: u16 = 3;
    pub(super) const SETTINGS: u16 = 4;
    pub(super) const PING: u16 = 6;
    pub(super) const GOAWAY: u16 = 7;
    pub(super) const HEADERS: u16 = 8;
    pub(super) const WINDOW_UPDATE: u16 = 9;
}

/// FLAG_FIN of data frames and of SYN_STREAM / SYN_REPLY.
const FLAG_FIN: u8 = 0x01;

/// RST_STREAM's status for a stream the server refuses (SPDY/3 section 2.4.2).
pub(crate) const RST_REFUSED_STREAM: u32 = 3;

/// A header block: lowercase names, each value on its own (SPDY joins repeats with NUL).
pub(crate) type Headers = Vec<(String, String)>;

/// A frame from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    SynStream {
        stream: u32,
        fin: bool,
        headers: Headers,
    },
    Data {
        stream: u32,
        fin: bool,
        data: Vec<u8>,
    },
    RstStream {
        stream: u32,
        status: u32,
    },
    Ping {
        id: u32,
    },
    GoAway,
    /// SETTINGS, WINDOW_UPDATE, HEADERS, SYN_REPLY and unknown control frames: read (the
    /// header blocks inflated, to keep the zlib stream in step) and ignored, as spdystream
    /// implements no flow control either.
    Ignored,
}

/// Why a client's bytes are not a SPDY/3 stream kubemock accepts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum SpdyError {
    #[error("frame of {0} bytes is larger than the {MAX_FRAME_BYTES} kubemock accepts")]
    TooLarge(usize),
    #[error("SPDY version {0}, expected 3")]
    Version(u16),
    #[error("control frame {0} too short")]
    Short(u16),
    #[error("header block: {0}")]
    HeaderBlock(String),
    #[error("stream id 0")]
    ZeroStream,
}

/// Reads frames off the bytes of a connection.
pub(crate) struct Decoder {
    buffer: Vec<u8>,
    inflater: Inflater,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            buffer: Vec::new(),
            inflater: Inflater::new(),
        }
    }
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl Decoder {
    /// Appends bytes read from the connection.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole frame, `None` if more bytes are needed.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, SpdyError> {
        let (Some(first), Some(second)) = (be32(&self.buffer, 0), be32(&self.buffer, 4)) else {
            return Ok(None);
        };
        let flags = (second >> 24) as u8;
        let length = (second & 0x00FF_FFFF) as usize;
        if length > MAX_FRAME_BYTES {
            return Err(SpdyError::TooLarge(length));
        }
        let Some(payload) = self.buffer.get(8..8 + length) else {
            return Ok(None);
        };
        let payload = payload.to_vec();
        self.buffer.drain(..8 + length);
        if first & 0x8000_0000 == 0 {
            let stream = first & 0x7FFF_FFFF;
            if stream == 0 {
                return Err(SpdyError::ZeroStream);
            }
            return Ok(Some(Frame::Data {
                stream,
                fin: flags & FLAG_FIN != 0,
                data: payload,
            }));
        }
        let version = ((first >> 16) & 0x7FFF) as u16;
        if version != VERSION {
            return Err(SpdyError::Version(version));
        }
        let kind = (first & 0xFFFF) as u16;
        let short = || SpdyError::Short(kind);
        let stream_of = |at: usize| {
            be32(&payload, at)
                .map(|s| s & 0x7FFF_FFFF)
                .ok_or_else(short)
        };
        Ok(Some(match kind {
            kind::SYN_STREAM => {
                let stream = stream_of(0)?;
                let block = payload.get(10..).ok_or_else(short)?;
                let headers = parse_headers(&self.inflater.inflate(block)?)?;
                if stream == 0 {
                    return Err(SpdyError::ZeroStream);
                }
                Frame::SynStream {
                    stream,
                    fin: flags & FLAG_FIN != 0,
                    headers,
                }
            }
            kind::SYN_REPLY | kind::HEADERS => {
                let block = payload.get(4..).ok_or_else(short)?;
                parse_headers(&self.inflater.inflate(block)?)?;
                Frame::Ignored
            }
            kind::RST_STREAM => Frame::RstStream {
                stream: stream_of(0)?,
                status: be32(&payload, 4).ok_or_else(short)?,
            },
            kind::PING => Frame::Ping {
                id: be32(&payload, 0).ok_or_else(short)?,
            },
            kind::GOAWAY => Frame::GoAway,
            kind::SETTINGS | kind::WINDOW_UPDATE => Frame::Ignored,
            _ => Frame::Ignored,
        }))
    }
}

/// Parses an inflated header block (SPDY/3 section 2.6.10).
fn parse_headers(block: &[u8]) -> Result<Headers, SpdyError> {
    let bad = |what: &str| SpdyError::HeaderBlock(what.to_owned());
    let count = be32(block, 0).ok_or_else(|| bad("no count"))?;
    if count > MAX_HEADERS {
        return Err(bad("too many headers"));
    }
    let mut at = 4;
    let read = |at: &mut usize| -> Result<String, SpdyError> {
        let length = be32(block, *at).ok_or_else(|| bad("truncated length"))? as usize;
        let bytes = block
            .get(*at + 4..*at + 4 + length)
            .ok_or_else(|| bad("truncated string"))?;
        *at += 4 + length;
        String::from_utf8(bytes.to_vec()).map_err(|_| bad("not UTF-8"))
    };
    let mut headers = Vec::new();
    for _ in 0..count {
        let name = read(&mut at)?.to_ascii_lowercase();
        let value = read(&mut at)?;
        for part in value.split('\0') {
            headers.push((name.clone(), part.to_owned()));
        }
    }
    Ok(headers)
}

/// The first value of header `name`.
pub(crate) fn header<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The client's header compression: one zlib stream for the connection.
struct Inflater {
    zlib: Decompress,
}

impl Inflater {
    fn new() -> Self {
        Inflater {
            zlib: Decompress::new(true),
        }
    }

    /// Inflates one frame's header block (each ends with a zlib sync flush).
    fn inflate(&mut self, input: &[u8]) -> Result<Vec<u8>, SpdyError> {
        let bad = |what: String| SpdyError::HeaderBlock(what);
        let mut out = Vec::with_capacity(256);
        let mut consumed = 0usize;
        loop {
            out.reserve(1024);
            let (before_in, before_out) = (self.zlib.total_in(), out.len());
            let rest = input.get(consumed..).unwrap_or_default();
            let result = self
                .zlib
                .decompress_vec(rest, &mut out, FlushDecompress::Sync);
            let used = usize::try_from(self.zlib.total_in() - before_in).unwrap_or(usize::MAX);
            consumed = consumed.saturating_add(used);
            if out.len() > MAX_HEADER_BYTES {
                return Err(bad(format!("inflates past {MAX_HEADER_BYTES} bytes")));
            }
            match result {
                Ok(Status::StreamEnd) => return Ok(out),
                Ok(_) => {
                    let spare = out.len() < out.capacity();
                    if consumed >= input.len() && spare {
                        return Ok(out);
                    }
                    if used == 0 && out.len() == before_out {
                        return Err(bad("truncated zlib data".to_owned()));
                    }
                }
                Err(err) if err.needs_dictionary().is_some() => {
                    self.zlib
                        .set_dictionary(DICTIONARY)
                        .map_err(|e| bad(e.to_string()))?;
                }
                Err(err) => return Err(bad(err.to_string())),
            }
        }
    }
}

/// The server's header compression: one zlib stream for the connection.
pub(crate) struct Deflater {
    zlib: Compress,
}

impl Default for Deflater {
    fn default() -> Self {
        let mut zlib = Compress::new(Compression::default(), true);
        // A fresh stream always takes a dictionary: this cannot fail.
        let _ = zlib.set_dictionary(DICTIONARY);
        Deflater { zlib }
    }
}

impl Deflater {
    /// Deflates one header block, ending with a sync flush as spdystream's `Flush`.
    fn deflate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len() + 64);
        let mut consumed = 0usize;
        loop {
            out.reserve(256);
            let before_in = self.zlib.total_in();
            let rest = input.get(consumed..).unwrap_or_default();
            if self
                .zlib
                .compress_vec(rest, &mut out, FlushCompress::Sync)
                .is_err()
            {
                return out;
            }
            consumed += usize::try_from(self.zlib.total_in() - before_in).unwrap_or(usize::MAX);
            if consumed >= input.len() && out.len() < out.capacity() {
                return out;
            }
        }
    }
}

/// An uncompressed header block.
fn header_block(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    block.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    for (name, value) in headers {
        for text in [name.to_ascii_lowercase().as_str(), value] {
            block.extend_from_slice(&(text.len() as u32).to_be_bytes());
            block.extend_from_slice(text.as_bytes());
        }
    }
    block
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&((u32::from(flags) << 24) | payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// SYN_REPLY accepting `stream` (spdystream's server answers every SYN_STREAM with one
/// carrying no headers).
pub(crate) fn syn_reply(deflater: &mut Deflater, stream: u32) -> Vec<u8> {
    let mut payload = stream.to_be_bytes().to_vec();
    payload.extend(deflater.deflate(&header_block(&[])));
    control(kind::SYN_REPLY, 0, &payload)
}

/// A data frame; `fin` half-closes the stream.
pub(crate) fn data(stream: u32, fin: bool, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 8);
    out.extend_from_slice(&(stream & 0x7FFF_FFFF).to_be_bytes());
    let flags = if fin { FLAG_FIN } else { 0 };
    out.extend_from_slice(&((u32::from(flags) << 24) | data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// RST_STREAM of `stream` with `status`.
pub(crate) fn rst_stream(stream: u32, status: u32) -> Vec<u8> {
    let mut payload = stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&status.to_be_bytes());
    control(kind::RST_STREAM, 0, &payload)
}

/// The answer to a PING: the same id.
pub(crate) fn ping(id: u32) -> Vec<u8> {
    control(kind::PING, 0, &id.to_be_bytes())
}

/// GOAWAY after the last stream seen, status OK.
pub(crate) fn goaway(last: u32) -> Vec<u8> {
    let mut payload = last.to_be_bytes().to_vec();
    payload.extend_from_slice(&0u32.to_be_bytes());
    control(kind::GOAWAY, 0, &payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SYN_STREAM as a client writes it, deflated by `deflater` (a client's stream).
    fn syn_stream(deflater: &mut Deflater, stream: u32, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut payload = stream.to_be_bytes().to_vec();
        payload.extend_from_slice(&0u32.to_be_bytes());
        payload.extend_from_slice(&[0, 0]);
        payload.extend(deflater.deflate(&header_block(headers)));
        control(kind::SYN_STREAM, 0, &payload)
    }

    #[test]
    fn dictionary_is_the_spdy3_one() {
        // SPDY/3 section 2.6.10.1: 1423 bytes; zlib announces it by its Adler-32 (0xE3C6A7C2, as in
        // every SPDY/3 stream's first header: 78 BB E3 C6 A7 C2 with the default level).
        assert_eq!(DICTIONARY.len(), 1423);
        assert!(DICTIONARY.starts_with(b"\x00\x00\x00\x07options"));
        let block = Deflater::default().deflate(&header_block(&[("streamtype", "error")]));
        assert_eq!(&block[2..6], &[0xE3, 0xC6, 0xA7, 0xC2]);
        assert_eq!(block[1] & 0x20, 0x20, "FDICT set");
    }

    /// Two SYN_STREAMs deflated by Go's `compress/zlib` with the dictionary (spdystream's
    /// framer, `BestCompression`, one zlib stream), as kubectl 1.27 opens its error and stdin
    /// streams (ids 1 and 3). Recorded from spdystream v0.5.0's
    /// `spdy.NewFramer(...).WriteFrame(&spdy.SynStreamFrame{...})`.
    const GO_SYN_STREAMS: &[u8] = &[
        0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x29, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x62, 0x60, 0x60, 0x60, 0x04, 0xa7,
        0xb3, 0x92, 0xa2, 0xd4, 0xc4, 0x5c, 0x68, 0x51, 0xc2, 0x9a, 0x0a, 0x0a, 0x68, 0x00, 0x00,
        0x00, 0x00, 0xff, 0xff, 0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00,
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc2, 0x2e, 0x55, 0x5c, 0x92, 0x92, 0x99, 0x07,
        0x00, 0x00, 0x00, 0xff, 0xff,
    ];

    #[test]
    fn decoder_reads_frames_split_anywhere_across_one_zlib_stream() {
        let mut client = Deflater::default();
        let mut bytes = syn_stream(
            &mut client,
            1,
            &[("streamType", "error"), ("port", "80\u{0}81")],
        );
        bytes.extend(syn_stream(&mut client, 3, &[("streamtype", "stdin")]));
        bytes.extend(data(3, false, b"hello"));
        bytes.extend(data(3, true, b""));
        bytes.extend(ping(7));
        bytes.extend(rst_stream(1, 5));
        bytes.extend(goaway(3));
        let mut decoder = Decoder::default();
        let mut frames = Vec::new();
        for byte in bytes {
            decoder.push(&[byte]);
            while let Some(frame) = decoder.next_frame().expect("valid stream") {
                frames.push(frame);
            }
        }
        let owned = |pairs: &[(&str, &str)]| -> Headers {
            pairs
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            frames,
            vec![
                Frame::SynStream {
                    stream: 1,
                    fin: false,
                    headers: owned(&[("streamtype", "error"), ("port", "80"), ("port", "81")]),
                },
                Frame::SynStream {
                    stream: 3,
                    fin: false,
                    headers: owned(&[("streamtype", "stdin")]),
                },
                Frame::Data {
                    stream: 3,
                    fin: false,
                    data: b"hello".to_vec()
                },
                Frame::Data {
                    stream: 3,
                    fin: true,
                    data: Vec::new()
                },
                Frame::Ping { id: 7 },
                Frame::RstStream {
                    stream: 1,
                    status: 5
                },
                Frame::GoAway,
            ]
        );
    }

    #[test]
    fn decoder_inflates_gos_header_compression() {
        let mut decoder = Decoder::default();
        decoder.push(GO_SYN_STREAMS);
        for (stream, kind) in [(1, "error"), (3, "stdin")] {
            assert_eq!(
                decoder.next_frame(),
                Ok(Some(Frame::SynStream {
                    stream,
                    fin: false,
                    headers: vec![("streamtype".to_owned(), kind.to_owned())],
                }))
            );
        }
        assert_eq!(decoder.next_frame(), Ok(None));
    }

    #[test]
    fn server_frames_round_trip_through_the_decoder() {
        // Our SYN_REPLY's header blocks inflate with the same dictionary, frame after frame.
        let mut server = Deflater::default();
        let mut bytes = syn_reply(&mut server, 1);
        bytes.extend(syn_reply(&mut server, 3));
        assert_eq!(&bytes[..4], &[0x80, 0x03, 0x00, 0x02]);
        let mut decoder = Decoder::default();
        decoder.push(&bytes);
        assert_eq!(decoder.next_frame(), Ok(Some(Frame::Ignored)));
        assert_eq!(decoder.next_frame(), Ok(Some(Frame::Ignored)));
        assert_eq!(decoder.next_frame(), Ok(None));
        assert_eq!(
            data(5, true, b"ab"),
            vec![0, 0, 0, 5, 0x01, 0, 0, 2, b'a', b'b']
        );
    }

    #[test]
    fn decoder_refuses_bad_frames_without_panicking() {
        let cases: Vec<(Vec<u8>, SpdyError)> = vec![
            (vec![0x80, 0x02, 0, 1, 0, 0, 0, 0], SpdyError::Version(2)),
            (
                vec![0, 0, 0, 1, 0x01, 0xFF, 0xFF, 0xFF],
                SpdyError::TooLarge(0xFF_FFFF),
            ),
            (vec![0, 0, 0, 0, 0, 0, 0, 0], SpdyError::ZeroStream),
            (
                control(kind::RST_STREAM, 0, &[0, 0, 0, 1]),
                SpdyError::Short(3),
            ),
            (
                control(
                    kind::SYN_STREAM,
                    0,
                    &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 2, 3],
                ),
                SpdyError::HeaderBlock("corrupt deflate stream".to_owned()),
            ),
        ];
        for (bytes, expected) in cases {
            let mut decoder = Decoder::default();
            decoder.push(&bytes);
            let result = decoder.next_frame();
            match (&result, &expected) {
                (Err(SpdyError::HeaderBlock(_)), SpdyError::HeaderBlock(_)) => {}
                _ => assert_eq!(result, Err(expected)),
            }
        }
        // A header block claiming more than it holds.
        let mut client = Deflater::default();
        let mut payload = 1u32.to_be_bytes().to_vec();
        payload.extend_from_slice(&[0; 6]);
        payload.extend(client.deflate(&[0, 0, 0, 2, 0, 0, 0, 9, b'a']));
        let mut decoder = Decoder::default();
        decoder.push(&control(kind::SYN_STREAM, 0, &payload));
        assert!(matches!(
            decoder.next_frame(),
            Err(SpdyError::HeaderBlock(_))
        ));
        // Random bytes never panic.
        let mut seed = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut decoder = Decoder::default();
            let mut bytes = Vec::new();
            for _ in 0..64 {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                bytes.push((seed >> 24) as u8);
            }
            // Control frames of version 3 with short lengths, to reach the parsers.
            bytes[0] = 0x80;
            bytes[1] = 3;
            bytes[5] = 0;
            bytes[6] = 0;
            decoder.push(&bytes);
            while let Ok(Some(_)) = decoder.next_frame() {}
        }
    }
}
