//! RFC 6455 WebSocket framing, server side, as kubectl ≥ 1.30 speaks it for `pods/exec`,
//! `pods/attach` (the `v5.channel.k8s.io` / `v4.channel.k8s.io` subprotocols) and, from 1.31,
//! `pods/portforward` (SPDY tunnelled in binary messages, `SPDY/3.1+portforward.k8s.io`).
//! Upstream's server side is `golang.org/x/net/websocket` under
//! `staging/src/k8s.io/apimachinery/pkg/util/httpstream/wsstream/conn.go`; the client is
//! gorilla/websocket under `staging/src/k8s.io/client-go/tools/remotecommand/websocket.go`.
//!
//! The decoder is fed bytes as they arrive and hands out whole messages; nothing it is given
//! can make it panic, and a frame larger than [`MAX_MESSAGE_BYTES`] is refused.

use base64::Engine as _;
use sha1::{Digest as _, Sha1};

/// RFC 6455 section 1.3: the GUID appended to the client's key for `Sec-WebSocket-Accept`.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The largest message kubemock accepts from a client (a stdin chunk or a tunnelled SPDY
/// frame; client-go writes 32 KiB at most).
pub(crate) const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// The largest control frame payload (RFC 6455 section 5.5).
const MAX_CONTROL_BYTES: usize = 125;

/// Close code 1000, normal closure (RFC 6455 section 7.4.1): the clients read it as the end of
/// every channel.
pub(crate) const CLOSE_NORMAL: u16 = 1000;

/// Close code 1002, protocol error.
pub(crate) const CLOSE_PROTOCOL_ERROR: u16 = 1002;

/// The `Sec-WebSocket-Accept` answer to a `Sec-WebSocket-Key`.
pub(crate) fn accept_key(key: &str) -> String {
    let mut hasher = Sha1::new();
    hasher.update(key.trim().as_bytes());
    hasher.update(ACCEPT_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(hasher.finalize())
}

/// Frame opcodes (RFC 6455 section 5.2).
mod opcode {
    pub(super) const CONTINUATION: u8 = 0x0;
    pub(super) const TEXT: u8 = 0x1;
    pub(super) const BINARY: u8 = 0x2;
    pub(super) const CLOSE: u8 = 0x8;
    pub(super) const PING: u8 = 0x9;
    pub(super) const PONG: u8 = 0xA;
}

/// A whole message from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    Binary(Vec<u8>),
    Text(Vec<u8>),
    Ping(Vec<u8>),
    Pong,
    /// The client closes, with its close code if it gave one.
    Close(Option<u16>),
}

/// Why a client's bytes are not a WebSocket stream kubemock accepts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum FrameError {
    #[error("reserved bits set in a frame")]
    Reserved,
    #[error("unknown opcode {0}")]
    Opcode(u8),
    #[error("client frames must be masked")]
    Unmasked,
    #[error("frame of {0} bytes is larger than the {MAX_MESSAGE_BYTES} kubemock accepts")]
    TooLarge(u64),
    #[error("fragmented or oversized control frame")]
    BadControl,
    #[error("continuation without a message, or a new message inside a fragmented one")]
    Continuation,
}

/// Reassembles client messages from the bytes read off the connection.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    buffer: Vec<u8>,
    /// The opcode and the payload so far of a fragmented message.
    partial: Option<(u8, Vec<u8>)>,
}

impl Decoder {
    /// Appends bytes read from the connection.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole message, `None` if more bytes are needed.
    pub(crate) fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        loop {
            let Some((fin, code, payload)) = self.next_frame()? else {
                return Ok(None);
            };
            match code {
                opcode::CLOSE => {
                    let code = payload.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]));
                    return Ok(Some(Message::Close(code)));
                }
                opcode::PING => return Ok(Some(Message::Ping(payload))),
                opcode::PONG => return Ok(Some(Message::Pong)),
                opcode::CONTINUATION => {
                    let Some((first, mut so_far)) = self.partial.take() else {
                        return Err(FrameError::Continuation);
                    };
                    if so_far.len() + payload.len() > MAX_MESSAGE_BYTES {
                        return Err(FrameError::TooLarge((so_far.len() + payload.len()) as u64));
                    }
                    so_far.extend_from_slice(&payload);
                    if fin {
                        return Ok(Some(data_message(first, so_far)));
                    }
                    self.partial = Some((first, so_far));
                }
                _ => {
                    if self.partial.is_some() {
                        return Err(FrameError::Continuation);
                    }
                    if fin {
                        return Ok(Some(data_message(code, payload)));
                    }
                    self.partial = Some((code, payload));
                }
            }
        }
    }

    /// One frame off the buffer: (fin, opcode, unmasked payload).
    fn next_frame(&mut self) -> Result<Option<(bool, u8, Vec<u8>)>, FrameError> {
        let buffer = &self.buffer;
        let (Some(&first), Some(&second)) = (buffer.first(), buffer.get(1)) else {
            return Ok(None);
        };
        if first & 0x70 != 0 {
            return Err(FrameError::Reserved);
        }
        let fin = first & 0x80 != 0;
        let code = first & 0x0F;
        if !matches!(
            code,
            opcode::CONTINUATION
                | opcode::TEXT
                | opcode::BINARY
                | opcode::CLOSE
                | opcode::PING
                | opcode::PONG
        ) {
            return Err(FrameError::Opcode(code));
        }
        if second & 0x80 == 0 {
            return Err(FrameError::Unmasked);
        }
        let (length, mut at) = match second & 0x7F {
            126 => match buffer.get(2..4) {
                Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
                None => return Ok(None),
            },
            127 => match buffer.get(2..10) {
                Some(b) => {
                    let mut eight = [0u8; 8];
                    eight.copy_from_slice(b);
                    (u64::from_be_bytes(eight), 10)
                }
                None => return Ok(None),
            },
            short => (u64::from(short), 2),
        };
        if code >= opcode::CLOSE && (!fin || length > MAX_CONTROL_BYTES as u64) {
            return Err(FrameError::BadControl);
        }
        if length > MAX_MESSAGE_BYTES as u64 {
            return Err(FrameError::TooLarge(length));
        }
        // Bounded by MAX_MESSAGE_BYTES just above.
        let length = usize::try_from(length).map_err(|_| FrameError::TooLarge(length))?;
        let Some(mask) = buffer.get(at..at + 4) else {
            return Ok(None);
        };
        let mask = [mask[0], mask[1], mask[2], mask[3]];
        at += 4;
        let Some(masked) = buffer.get(at..at + length) else {
            return Ok(None);
        };
        let payload = masked
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        self.buffer.drain(..at + length);
        Ok(Some((fin, code, payload)))
    }
}

fn data_message(code: u8, payload: Vec<u8>) -> Message {
    if code == opcode::TEXT {
        Message::Text(payload)
    } else {
        Message::Binary(payload)
    }
}

/// A server frame (unmasked, final) of `code` carrying `payload`.
fn frame(code: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x80 | code);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A binary message.
pub(crate) fn binary(payload: &[u8]) -> Vec<u8> {
    frame(opcode::BINARY, payload)
}

/// A binary message of one channel.k8s.io channel: the channel's byte, then the data
/// (`wsstream/conn.go` `write`).
pub(crate) fn channel(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(data.len() + 1);
    payload.push(channel);
    payload.extend_from_slice(data);
    binary(&payload)
}

/// The answer to a ping.
pub(crate) fn pong(payload: &[u8]) -> Vec<u8> {
    frame(
        opcode::PONG,
        payload.get(..MAX_CONTROL_BYTES).unwrap_or(payload),
    )
}

/// A close frame with `code`.
pub(crate) fn close(code: u16) -> Vec<u8> {
    frame(opcode::CLOSE, &code.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client frame as gorilla/websocket writes it: masked.
    fn client_frame(first: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut out = vec![first];
        match payload.len() {
            n if n < 126 => out.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    #[test]
    fn accept_key_is_rfc_6455s_example() {
        // RFC 6455 section 1.3's worked example.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn decoder_reassembles_messages_split_anywhere() {
        let mut bytes = client_frame(0x82, b"\x00hello", [1, 2, 3, 4]);
        let long = vec![7u8; 70_000];
        bytes.extend(client_frame(0x82, &long, [9, 8, 7, 6]));
        bytes.extend(client_frame(0x02, b"\x00ab", [5, 5, 5, 5]));
        bytes.extend(client_frame(0x89, b"hb", [1, 1, 1, 1]));
        bytes.extend(client_frame(0x80, b"cd", [2, 2, 2, 2]));
        bytes.extend(client_frame(0x88, &1000u16.to_be_bytes(), [3, 3, 3, 3]));
        // Fed one byte at a time, the messages come out whole and in order; a ping may come
        // between a fragmented message's frames (RFC 6455 section 5.4).
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for byte in bytes {
            decoder.push(&[byte]);
            while let Some(message) = decoder.next_message().expect("valid stream") {
                out.push(message);
            }
        }
        assert_eq!(
            out,
            vec![
                Message::Binary(b"\x00hello".to_vec()),
                Message::Binary(long),
                Message::Ping(b"hb".to_vec()),
                Message::Binary(b"\x00abcd".to_vec()),
                Message::Close(Some(1000)),
            ]
        );
    }

    #[test]
    fn decoder_refuses_bad_frames_without_panicking() {
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (
                vec![0x82, 0x05, b'h', b'e', b'l', b'l', b'o'],
                FrameError::Unmasked,
            ),
            (vec![0xC2, 0x80, 0, 0, 0, 0], FrameError::Reserved),
            (vec![0x83, 0x80, 0, 0, 0, 0], FrameError::Opcode(3)),
            (
                vec![0x82, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
                FrameError::TooLarge(u64::MAX),
            ),
            (client_frame(0x09, b"x", [0; 4]), FrameError::BadControl),
            (client_frame(0x80, b"x", [0; 4]), FrameError::Continuation),
        ];
        for (bytes, expected) in cases {
            let mut decoder = Decoder::default();
            decoder.push(&bytes);
            assert_eq!(decoder.next_message(), Err(expected));
        }
        // Every prefix of a valid frame asks for more instead of failing.
        let valid = client_frame(0x82, &[1u8; 300], [1, 2, 3, 4]);
        for end in 0..valid.len() {
            let mut decoder = Decoder::default();
            decoder.push(&valid[..end]);
            assert_eq!(decoder.next_message(), Ok(None), "prefix of {end} bytes");
        }
    }

    #[test]
    fn server_frames_are_unmasked_with_the_channel_byte_first() {
        assert_eq!(channel(1, b"hi"), vec![0x82, 3, 1, b'h', b'i']);
        let long = channel(2, &[0u8; 200]);
        assert_eq!(&long[..5], &[0x82, 126, 0, 201, 2]);
        let huge = binary(&vec![0u8; 70_000]);
        assert_eq!(&huge[..2], &[0x82, 127]);
        assert_eq!(&huge[2..10], &70_000u64.to_be_bytes());
        assert_eq!(close(CLOSE_NORMAL), vec![0x88, 2, 0x03, 0xE8]);
        assert_eq!(pong(b"x"), vec![0x8A, 1, b'x']);
    }
}
