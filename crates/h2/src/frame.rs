//! Frame heads and the frames perflab writes. Readers find whole frames in a buffer
//! ([`next`]) and take their payloads apart ([`unpad`], [`rst_code`], [`goaway`],
//! [`window_increment`]); writers append to a `Vec<u8>` that the caller flushes.

use crate::{flag, kind, HEAD_LEN};

/// A frame's 9-byte head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Payload length.
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

/// A frame that breaks the framing rules: a connection error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    /// The error code to send in GOAWAY.
    pub code: u32,
    pub reason: &'static str,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.reason, crate::code_name(self.code))
    }
}

impl std::error::Error for FrameError {}

fn err(code: u32, reason: &'static str) -> FrameError {
    FrameError { code, reason }
}

impl Head {
    /// Reads a head from the first 9 bytes of `b`.
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    /// Appends the head to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let l = self.len.to_be_bytes();
        out.extend_from_slice(&[l[1], l[2], l[3], self.kind, self.flags]);
        out.extend_from_slice(&(self.stream & 0x7fff_ffff).to_be_bytes());
    }

    /// Whether a flag is set.
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// The next whole frame at the start of `buf`: its head and its total length (head and
/// payload), `None` while it is incomplete. A frame longer than `max_frame` (what this
/// side advertised) is a FRAME_SIZE_ERROR.
pub fn next(buf: &[u8], max_frame: u32) -> Result<Option<(Head, usize)>, FrameError> {
    if buf.len() < HEAD_LEN {
        return Ok(None);
    }
    let h = Head::parse(buf);
    if h.len > max_frame {
        return Err(err(
            crate::code::FRAME_SIZE_ERROR,
            "frame larger than SETTINGS_MAX_FRAME_SIZE",
        ));
    }
    let total = HEAD_LEN + h.len as usize;
    Ok((buf.len() >= total).then_some((h, total)))
}

/// The content of a DATA or HEADERS payload: padding (and a HEADERS frame's priority
/// fields) removed.
pub fn unpad<'a>(h: &Head, payload: &'a [u8]) -> Result<&'a [u8], FrameError> {
    let mut p = payload;
    let mut pad = 0usize;
    if h.has(flag::PADDED) {
        let (&n, rest) = p.split_first().ok_or(err(
            crate::code::FRAME_SIZE_ERROR,
            "padded frame without its pad length",
        ))?;
        pad = n as usize;
        p = rest;
    }
    if h.kind == kind::HEADERS && h.has(flag::PRIORITY) {
        if p.len() < 5 {
            return Err(err(
                crate::code::FRAME_SIZE_ERROR,
                "HEADERS priority fields cut short",
            ));
        }
        p = &p[5..];
    }
    if pad > p.len() {
        return Err(err(
            crate::code::PROTOCOL_ERROR,
            "padding longer than the frame",
        ));
    }
    Ok(&p[..p.len() - pad])
}

/// A 4-byte payload as a big-endian number, or a FRAME_SIZE_ERROR naming the frame.
fn be32(payload: &[u8], what: &'static str) -> Result<u32, FrameError> {
    <[u8; 4]>::try_from(payload)
        .map(u32::from_be_bytes)
        .map_err(|_| err(crate::code::FRAME_SIZE_ERROR, what))
}

/// The error code of a RST_STREAM payload.
pub fn rst_code(payload: &[u8]) -> Result<u32, FrameError> {
    be32(payload, "RST_STREAM payload is not 4 bytes")
}

/// The increment of a WINDOW_UPDATE payload (zero is the caller's protocol error).
pub fn window_increment(payload: &[u8]) -> Result<u32, FrameError> {
    be32(payload, "WINDOW_UPDATE payload is not 4 bytes").map(|v| v & 0x7fff_ffff)
}

/// A GOAWAY payload: the last stream the peer processed and the error code.
pub fn goaway(payload: &[u8]) -> Result<(u32, u32), FrameError> {
    if payload.len() < 8 {
        return Err(err(
            crate::code::FRAME_SIZE_ERROR,
            "GOAWAY payload shorter than 8 bytes",
        ));
    }
    let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
    let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
    Ok((last, code))
}

/// Appends a frame whose payload is `payload`.
pub fn write(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    Head {
        len: payload.len() as u32,
        kind,
        flags,
        stream,
    }
    .write(out);
    out.extend_from_slice(payload);
}

/// Appends a SETTINGS frame with `(identifier, value)` pairs.
pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    Head {
        len: 6 * pairs.len() as u32,
        kind: kind::SETTINGS,
        flags: 0,
        stream: 0,
    }
    .write(out);
    for (id, v) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends a SETTINGS acknowledgement.
pub fn settings_ack(out: &mut Vec<u8>) {
    write(out, kind::SETTINGS, flag::ACK, 0, &[]);
}

/// Appends a WINDOW_UPDATE for `stream` (0: the connection).
pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write(
        out,
        kind::WINDOW_UPDATE,
        0,
        stream,
        &increment.to_be_bytes(),
    );
}

/// Appends a PING (or its acknowledgement) carrying `data`.
pub fn ping(out: &mut Vec<u8>, ack: bool, data: [u8; 8]) {
    write(out, kind::PING, if ack { flag::ACK } else { 0 }, 0, &data);
}

/// Appends a RST_STREAM.
pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write(out, kind::RST_STREAM, 0, stream, &code.to_be_bytes());
}

/// Appends a GOAWAY naming the last stream processed.
pub fn goaway_frame(out: &mut Vec<u8>, last: u32, code: u32) {
    let mut p = [0u8; 8];
    p[..4].copy_from_slice(&last.to_be_bytes());
    p[4..].copy_from_slice(&code.to_be_bytes());
    write(out, kind::GOAWAY, 0, 0, &p);
}

/// Appends a header block as HEADERS (and CONTINUATION frames when it is longer than
/// `max_frame`), with END_STREAM when `end_stream`.
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: u32) {
    let max = max_frame.max(1) as usize;
    let mut chunks = block.chunks(max).peekable();
    let first = chunks.next().unwrap_or(&[]);
    let es = if end_stream { flag::END_STREAM } else { 0 };
    let eh = if chunks.peek().is_none() {
        flag::END_HEADERS
    } else {
        0
    };
    write(out, kind::HEADERS, es | eh, stream, first);
    while let Some(c) = chunks.next() {
        let eh = if chunks.peek().is_none() {
            flag::END_HEADERS
        } else {
            0
        };
        write(out, kind::CONTINUATION, eh, stream, c);
    }
}

/// Appends `data` as DATA frames of at most `max_frame` bytes; the last has END_STREAM
/// when `end_stream` (an empty `data` with `end_stream` is one empty frame).
pub fn data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool, max_frame: u32) {
    let max = max_frame.max(1) as usize;
    if data.is_empty() {
        if end_stream {
            write(out, kind::DATA, flag::END_STREAM, stream, &[]);
        }
        return;
    }
    let mut chunks = data.chunks(max).peekable();
    while let Some(c) = chunks.next() {
        let last = chunks.peek().is_none();
        let f = if last && end_stream {
            flag::END_STREAM
        } else {
            0
        };
        write(out, kind::DATA, f, stream, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_round_trip_and_clear_the_reserved_bit() {
        let mut out = Vec::new();
        Head {
            len: 0x01_02_03,
            kind: kind::DATA,
            flags: flag::END_STREAM,
            stream: 0x8000_0005,
        }
        .write(&mut out);
        assert_eq!(out, [1, 2, 3, 0, 1, 0, 0, 0, 5]);
        let h = Head::parse(&out);
        assert_eq!((h.len, h.stream), (0x01_02_03, 5));
    }

    #[test]
    fn next_waits_for_whole_frames_and_refuses_oversized_ones() {
        let mut out = Vec::new();
        write(&mut out, kind::PING, 0, 0, &[7; 8]);
        assert_eq!(next(&out[..5], 16_384).unwrap(), None);
        assert_eq!(next(&out[..16], 16_384).unwrap(), None);
        let (h, n) = next(&out, 16_384).unwrap().unwrap();
        assert_eq!((h.kind, h.len, n), (kind::PING, 8, 17));
        assert_eq!(
            next(&out, 4).unwrap_err().code,
            crate::code::FRAME_SIZE_ERROR
        );
    }

    #[test]
    fn padding_and_priority_are_removed() {
        let h = Head {
            len: 0,
            kind: kind::HEADERS,
            flags: flag::PADDED | flag::PRIORITY,
            stream: 1,
        };
        let payload = [2, 0, 0, 0, 0, 16, b'a', b'b', 0, 0];
        assert_eq!(unpad(&h, &payload).unwrap(), b"ab");
        assert!(unpad(&h, &[9, 0, 0, 0, 0, 16]).is_err());
    }

    #[test]
    fn long_blocks_split_into_continuations_and_data_into_frames() {
        let mut out = Vec::new();
        headers(&mut out, 3, &[1; 10], true, 4);
        let kinds: Vec<(u8, u8)> = {
            let mut v = Vec::new();
            let mut b = &out[..];
            while let Some((h, n)) = next(b, 16).unwrap() {
                v.push((h.kind, h.flags));
                b = &b[n..];
            }
            v
        };
        assert_eq!(
            kinds,
            [
                (kind::HEADERS, flag::END_STREAM),
                (kind::CONTINUATION, 0),
                (kind::CONTINUATION, flag::END_HEADERS)
            ]
        );
        let mut out = Vec::new();
        data(&mut out, 1, &[0; 5], true, 4);
        assert_eq!(out.len(), 9 + 4 + 9 + 1);
        assert_eq!(Head::parse(&out[13..]).flags, flag::END_STREAM);
    }

    #[test]
    fn control_payloads_parse() {
        assert_eq!(rst_code(&[0, 0, 0, 8]).unwrap(), crate::code::CANCEL);
        assert!(rst_code(&[0, 0, 8]).is_err());
        assert_eq!(window_increment(&[0x80, 0, 1, 0]).unwrap(), 256);
        let mut out = Vec::new();
        goaway_frame(&mut out, 7, crate::code::NO_ERROR);
        assert_eq!(goaway(&out[9..]).unwrap(), (7, 0));
        assert_eq!(
            crate::code_name(crate::code::REFUSED_STREAM),
            "REFUSED_STREAM"
        );
        assert_eq!(crate::code_name(99), "UNKNOWN");
    }
}
