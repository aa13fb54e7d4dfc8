//! Header blocks, the part of the receiving half that turns them into requests:
//! HEADERS and CONTINUATION frames assembled into one block (CONTINUATION frames
//! counted against `--h2-max-continuations`, bytes against four times the header
//! limit), then — by the stream the block is for — a new request (decoded into the
//! worker's scratch, refused, reset, or answered 431), trailers on an open stream, or
//! a block on a stream that is no longer open, answered by how it closed (§5.1).
//!
//! Split from `session` because these are the frames with HPACK state behind them:
//! every block is decoded, also one that is refused or ignored, since the table is the
//! connection's — but only for the table once nobody looks at its fields.

use std::net::SocketAddr;
use std::time::Instant;

use perflab_h2::frame::{self, FrameError, Head};
use perflab_h2::{code, flag};

use super::exchange::Decoded;
use super::guard::Closed;
use super::session::{dependency, err, Session};
use super::{MAX_FRAME, STREAM_WINDOW};
use crate::conn::Io;

/// A header block spread over HEADERS and CONTINUATION frames.
#[derive(Debug, Clone, Copy)]
pub(super) struct Continuation {
    pub stream: u32,
    pub end_stream: bool,
    /// CONTINUATION frames so far (bounded by `Limits::max_continuations`).
    pub frames: u32,
    /// The HEADERS frame made the stream depend on itself (§5.3.1).
    pub self_dependent: bool,
}

impl Session {
    pub(super) fn on_headers(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> Result<(), FrameError> {
        if h.stream == 0 || h.stream.is_multiple_of(2) {
            return Err(err(
                code::PROTOCOL_ERROR,
                "HEADERS on stream 0 or an even stream",
            ));
        }
        let fragment = frame::unpad(&h, p)?;
        let padded = usize::from(h.has(flag::PADDED));
        let self_dependent = h.has(flag::PRIORITY) && dependency(&p[padded..]) == Some(h.stream);
        let c = Continuation {
            stream: h.stream,
            end_stream: h.has(flag::END_STREAM),
            frames: 0,
            self_dependent,
        };
        if h.has(flag::END_HEADERS) {
            return self.header_block(c, fragment, out, io, peer);
        }
        self.block.clear();
        self.block.extend_from_slice(fragment);
        self.cont = Some(c);
        Ok(())
    }

    pub(super) fn on_continuation(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> Result<(), FrameError> {
        let Some(c) = &mut self.cont else {
            return Err(err(code::PROTOCOL_ERROR, "CONTINUATION without HEADERS"));
        };
        c.frames += 1;
        let c = *c;
        if c.frames > self.limits.max_continuations {
            return Err(err(code::ENHANCE_YOUR_CALM, "too many CONTINUATION frames"));
        }
        self.block.extend_from_slice(p);
        if self.block.len() > 4 * self.limits.max_header_bytes + MAX_FRAME as usize {
            return Err(err(code::ENHANCE_YOUR_CALM, "header block too large"));
        }
        if !h.has(flag::END_HEADERS) {
            return Ok(());
        }
        self.cont = None;
        let block = std::mem::take(&mut self.block);
        let r = self.header_block(c, &block, out, io, peer);
        self.block = block;
        r
    }

    /// Decodes a block only for the HPACK state: no field is looked at.
    fn decode_discard(&mut self, block: &[u8]) -> Result<(), FrameError> {
        self.decoder
            .decode_while(block, |_, _| false)
            .map_err(|_| err(code::COMPRESSION_ERROR, "undecodable header block"))
    }

    /// A complete header block: a new request, trailers, or a frame on a stream that
    /// is no longer open.
    fn header_block(
        &mut self,
        c: Continuation,
        block: &[u8],
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> Result<(), FrameError> {
        let id = c.stream;
        if let Some(i) = self.streams.find(id) {
            return self.trailers(i, block, c.end_stream, out, io, peer);
        }
        if id <= self.last_id {
            return self.late_headers(id, block, out);
        }
        if self.goaway_sent {
            // Opened after our GOAWAY: ignored (§6.8).
            self.streams.closed_unopened(id, Closed::ByUs);
            return self.decode_discard(block);
        }
        self.last_id = id;
        let refused = if c.self_dependent {
            Some(code::PROTOCOL_ERROR) // §5.3.1: a stream error
        } else if self.streams.len() >= self.limits.max_streams as usize {
            Some(code::REFUSED_STREAM)
        } else {
            None
        };
        if let Some(why) = refused {
            self.decode_discard(block)?;
            return self.refuse(id, why, out, io.now);
        }
        let decoded = io
            .scratch
            .decode_request(&mut self.decoder, block, self.limits.max_header_bytes)
            .map_err(|_| err(code::COMPRESSION_ERROR, "undecodable header block"))?;
        let declared = match decoded {
            Decoded::Malformed => return self.refuse(id, code::PROTOCOL_ERROR, out, io.now),
            Decoded::TooLarge => None,
            Decoded::Request { declared } => declared,
        };
        self.start_request(c, decoded, declared, out, io, peer);
        Ok(())
    }

    /// Resets a stream that never opened here; a stream error costs the client a
    /// reset from its budget (REFUSED_STREAM excepted: that one is our doing).
    fn refuse(
        &mut self,
        id: u32,
        why: u32,
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), FrameError> {
        frame::rst_stream(out, id, why);
        self.streams.closed_unopened(id, Closed::ByUs);
        if why == code::REFUSED_STREAM {
            return Ok(());
        }
        self.charge_reset(now)
    }

    /// Opens the stream of a well-formed (or too large) request and answers it if it
    /// is complete.
    fn start_request(
        &mut self,
        c: Continuation,
        decoded: Decoded,
        declared: Option<u64>,
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) {
        let (id, end_stream) = (c.stream, c.end_stream);
        let i = self.streams.open(
            id,
            i64::from(STREAM_WINDOW),
            i64::from(self.peer.initial_window_size),
        );
        let s = self.streams.get(i);
        s.declared = declared;
        if decoded == Decoded::TooLarge {
            s.recv_open = !end_stream;
            s.discard = true;
            self.answer(i, out, io, peer, Some(431));
            return;
        }
        if end_stream {
            s.recv_open = false;
            if declared.is_some_and(|n| n != 0) {
                self.reset(out, id, code::PROTOCOL_ERROR); // content-length without body
                return;
            }
            // The common case, a GET: answered from the worker's scratch, no copy.
            self.answer(i, out, io, peer, None);
        } else {
            s.head.extend_from_slice(&io.scratch.req);
        }
    }

    /// A header block on open stream `i`: trailers, decoded (for the HPACK state) and
    /// dropped; they must end the request and carry no pseudo-field (§8.1).
    fn trailers(
        &mut self,
        i: usize,
        block: &[u8],
        end_stream: bool,
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> Result<(), FrameError> {
        let mut pseudo = false;
        self.decoder
            .decode_while(block, |n, _| {
                pseudo = n.starts_with(b":");
                !pseudo
            })
            .map_err(|_| err(code::COMPRESSION_ERROR, "undecodable header block"))?;
        let s = self.streams.get(i);
        let id = s.id;
        if !s.recv_open {
            self.reset(out, id, code::STREAM_CLOSED); // half-closed (remote)
        } else if !end_stream || pseudo {
            self.reset(out, id, code::PROTOCOL_ERROR);
        } else {
            self.end_of_request(i, out, io, peer);
        }
        Ok(())
    }

    /// A header block for a stream id at or below the last one opened, not open now
    /// (§5.1, §5.1.1): after both END_STREAMs a connection error STREAM_CLOSED; after
    /// the client's reset a stream error STREAM_CLOSED; after ours ignored; an id
    /// never used a connection error PROTOCOL_ERROR (ids must increase).
    fn late_headers(&mut self, id: u32, block: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
        self.decode_discard(block)?;
        match self.streams.closed(id) {
            Some(Closed::Ended) => Err(err(code::STREAM_CLOSED, "HEADERS on a closed stream")),
            Some(Closed::ByPeer) => {
                frame::rst_stream(out, id, code::STREAM_CLOSED);
                self.unpaid_resets += 1;
                Ok(())
            }
            Some(Closed::ByUs) => Ok(()),
            None => Err(err(
                code::PROTOCOL_ERROR,
                "stream id not above the last one",
            )),
        }
    }
}
