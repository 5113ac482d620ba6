//! `--ws`: the general lobby modes (`lobby-join`, `lobby-idle`, `lobby-chat`) over lobbyd's
//! WebSocket port (docs/protocols/general-lobby.md, "WebSocket transport"), a minimal client
//! side of RFC 6455 under the modes' byte streams.
//!
//! [`WsCodec`] sits between a connection and a mode that reads and writes general lobby
//! frames as a stream: [`WsCodec::start`] queues the upgrade request (the RFC's sample key,
//! path `/lobby`), [`WsCodec::write`] sends each whole frame it is given as one masked binary
//! message, and [`WsCodec::read`] checks the 101 and its accept value, then hands back the
//! payloads of the binary messages as one stream of frames (a ping is answered, a close is
//! the end of the stream). The framing is `lobbyd::wire::websocket`'s, the server's own.

use std::io::{self, Read, Write};

use lobbyd::wire::general::{next_frame, Next};
use lobbyd::wire::websocket::frame::{emit_client_frame, next_server_frame, OpCode};
use lobbyd::wire::websocket::handshake::{check_response, emit_client_request};

/// The key of every upgrade (RFC 6455 section 1.3's sample; the server only hashes it).
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
/// The masking key of every frame the tool sends (a load tool needs no secrecy).
const MASK: [u8; 4] = [0x6c, 0x6f, 0x61, 0x64];
/// Bytes read per call from the socket.
const CHUNK: usize = 16 * 1024;
/// Most raw bytes kept undecoded (a frame split across reads): a server frame of any
/// legitimate size and its header.
const MAX_RAW: usize = 2 * 1024 * 1024;

/// One connection's WebSocket state.
#[derive(Debug, Default)]
pub struct WsCodec {
    /// The 101 was read and checked.
    upgraded: bool,
    /// Bytes read and not yet decoded (the response head, a split frame).
    raw: Vec<u8>,
    /// Decoded payload bytes not yet handed to the mode.
    plain: Vec<u8>,
    /// Framed bytes not yet written.
    wire_out: Vec<u8>,
    /// The server sent a close frame.
    closed: bool,
}

impl WsCodec {
    /// Queues the upgrade request for `host` and tries to write it.
    pub fn start(&mut self, stream: &mut impl Write, host: &str) -> io::Result<()> {
        emit_client_request(host, "/lobby", KEY, None, &mut self.wire_out);
        self.flush(stream)
    }

    /// Writes what is framed and waiting, until done or `WouldBlock`.
    fn flush(&mut self, stream: &mut impl Write) -> io::Result<()> {
        while !self.wire_out.is_empty() {
            match stream.write(&self.wire_out) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.wire_out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.wire_out.capacity() > 0 {
            self.wire_out = Vec::new();
        }
        Ok(())
    }

    /// Frames the whole general lobby frames at the front of `buf`, one binary message each,
    /// and writes them; returns the bytes of `buf` taken. `WouldBlock` while earlier framed
    /// bytes still wait (the caller keeps `buf` and tries again when writable).
    pub fn write(&mut self, stream: &mut impl Write, buf: &[u8]) -> io::Result<usize> {
        self.flush(stream)?;
        if !self.wire_out.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut at = 0;
        while let Next::Frame { consumed, .. } = next_frame(&buf[at..], usize::MAX) {
            let frame = &buf[at..at + consumed];
            emit_client_frame(&mut self.wire_out, true, OpCode::Binary, MASK, frame);
            at += consumed;
        }
        self.flush(stream)?;
        Ok(at)
    }

    /// Reads into `buf` the next bytes of the frame stream the server's binary messages
    /// carry: `Ok(0)` at the end (the socket's or a close frame), `WouldBlock` when nothing
    /// is decoded yet. Fails on a refused upgrade or a bad frame.
    pub fn read(&mut self, stream: &mut (impl Read + Write), buf: &mut [u8]) -> io::Result<usize> {
        let mut chunk = [0u8; CHUNK];
        loop {
            if !self.plain.is_empty() {
                let n = self.plain.len().min(buf.len());
                buf[..n].copy_from_slice(&self.plain[..n]);
                self.plain.drain(..n);
                return Ok(n);
            }
            if self.closed {
                return Ok(0);
            }
            self.flush(stream)?;
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(0);
            }
            self.raw.extend_from_slice(&chunk[..n]);
            self.decode(stream)?;
            if self.raw.len() > MAX_RAW {
                return Err(io::Error::other("oversized_ws_frame"));
            }
        }
    }

    /// Decodes what `raw` holds: the 101 first, then whole frames.
    fn decode(&mut self, stream: &mut impl Write) -> io::Result<()> {
        if !self.upgraded {
            match check_response(&self.raw, KEY.as_bytes()) {
                Ok(None) => return Ok(()),
                Ok(Some(head_len)) => {
                    self.raw.drain(..head_len);
                    self.upgraded = true;
                }
                Err(status) => {
                    return Err(io::Error::other(format!("ws_upgrade_refused_{status}")));
                }
            }
        }
        let mut at = 0;
        while let Some((header, range, end)) =
            next_server_frame(&self.raw[at..]).map_err(|_| io::Error::other("bad_ws_frame"))?
        {
            let payload = &self.raw[at + range.start..at + range.end];
            match header.opcode {
                OpCode::Binary | OpCode::Continuation => self.plain.extend_from_slice(payload),
                OpCode::Ping => {
                    emit_client_frame(&mut self.wire_out, true, OpCode::Pong, MASK, payload)
                }
                OpCode::Close => self.closed = true,
                _ => {}
            }
            at += end;
        }
        self.raw.drain(..at);
        if self.raw.is_empty() && self.raw.capacity() > CHUNK {
            self.raw = Vec::new();
        }
        self.flush(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lobbyd::wire::websocket::frame::server_header;
    use lobbyd::wire::websocket::handshake::{accept_key, emit_switching};

    /// A socket stand-in: reads what `input` holds, records what is written.
    struct Pipe {
        input: Vec<u8>,
        output: Vec<u8>,
    }

    impl Read for Pipe {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.input.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = self.input.len().min(buf.len()).min(7);
            buf[..n].copy_from_slice(&self.input[..n]);
            self.input.drain(..n);
            Ok(n)
        }
    }

    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frames_go_out_masked_and_come_back_as_a_stream() {
        let mut input = Vec::new();
        emit_switching(&accept_key(KEY.as_bytes()), &mut input);
        for frame in [&b"\x0b\0\0\0\x01\0\0\0A"[..], b"\x0b\0\0\0\x01\0\0\0B"] {
            let (head, n) = server_header(OpCode::Binary, frame.len());
            input.extend_from_slice(&head[..n]);
            input.extend_from_slice(frame);
        }
        let mut pipe = Pipe {
            input,
            output: Vec::new(),
        };
        let mut ws = WsCodec::default();
        ws.start(&mut pipe, "127.0.0.1:4244").unwrap();
        assert!(pipe.output.starts_with(b"GET /lobby HTTP/1.1\r\n"));
        pipe.output.clear();
        let two_frames = b"\x0b\0\0\0\x01\0\0\0A\x0b\0\0\0\x01\0\0\0B\x0b\0\0";
        assert_eq!(ws.write(&mut pipe, two_frames).unwrap(), 18);
        let mut want = Vec::new();
        emit_client_frame(&mut want, true, OpCode::Binary, MASK, &two_frames[..9]);
        emit_client_frame(&mut want, true, OpCode::Binary, MASK, &two_frames[9..18]);
        assert_eq!(pipe.output, want);
        let mut stream = Vec::new();
        let mut buf = [0u8; 5];
        loop {
            match ws.read(&mut pipe, &mut buf) {
                Ok(n) => stream.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(stream, &two_frames[..18]);
    }
}
