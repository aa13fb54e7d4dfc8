//! The receiving half of an HTTP/2 connection: the preface, then frame by frame —
//! SETTINGS, PING, WINDOW_UPDATE, RST_STREAM, GOAWAY, HEADERS + CONTINUATION, DATA —
//! with the checks of RFC 9113 that keep the connection's state sound.
//!
//! [`Session::recv`] takes the bytes read so far, handles every whole frame in them
//! and says how many it used; replies (SETTINGS ACK, PING ACK, WINDOW_UPDATE,
//! RST_STREAM, GOAWAY, responses) are appended to the caller's output buffer. It stops
//! at `room` bytes of output, so a client that sends requests faster than it reads
//! responses is held back by TCP, as on HTTP/1.1. A connection error writes GOAWAY
//! with its code and stops reading ([`Session::failed`]): the connection flushes and
//! closes. Stream errors reset the one stream. Frames for streams that are no longer
//! open are answered by how the stream closed (RFC 9113 §5.1, remembered per stream by
//! `Streams`): after both END_STREAMs a connection error STREAM_CLOSED, after the
//! client's reset a stream error STREAM_CLOSED, after ours nothing (their DATA still
//! counts against the connection window); a HEADERS frame on an id never used and
//! not above the last is a PROTOCOL_ERROR (§5.1.1).
//!
//! Every frame is also weighed against the connection's budgets (`guard`): resets
//! and frames that are no request draw on token buckets, CONTINUATION frames per
//! block are counted, and past any of them the answer is GOAWAY(ENHANCE_YOUR_CALM).
//!
//! HEADERS and CONTINUATION frames, and the requests their blocks open, are
//! `headers`' (the same `Session`, split by concept); DATA and the end of a request
//! are here.

use std::net::SocketAddr;
use std::time::Instant;

use perflab_h2::frame::{self, FrameError, Head};
use perflab_h2::{code, flag, hpack, kind, Settings, DEFAULT_WINDOW, MAX_WINDOW, PREFACE};

use super::guard::{Bucket, Closed};
use super::headers::Continuation;
use super::stream::Streams;
use super::{Limits, CONN_WINDOW, MAX_FRAME, STREAM_WINDOW};
use crate::conn::Io;

/// One HTTP/2 connection's state.
#[derive(Debug)]
pub(crate) struct Session {
    pub(super) limits: Limits,
    /// The client's settings.
    pub(super) peer: Settings,
    /// The client preface is still expected.
    preface: bool,
    /// The client's first SETTINGS is still expected.
    first_settings: bool,
    pub(super) decoder: hpack::Decoder,
    pub(super) streams: Streams,
    /// The highest stream id the client opened.
    pub(super) last_id: u32,
    /// The client's window for the whole connection.
    pub(super) send_window: i64,
    /// Ours for the whole connection, and what arrived since we last widened it.
    recv_window: i64,
    recv_unacked: u32,
    pub(super) cont: Option<Continuation>,
    /// The header block being assembled from CONTINUATION frames.
    pub(super) block: Vec<u8>,
    pub(super) goaway_sent: bool,
    goaway_received: bool,
    failed: bool,
    /// The budget of stream resets (`--h2-reset-burst`, `--h2-resets-per-sec`).
    resets: Bucket,
    /// The budget of frames that are no request (`--h2-control-burst`, `--h2-control-per-sec`).
    control: Bucket,
    /// Stream errors of the frame being handled, charged to `resets` after it.
    pub(super) unpaid_resets: u32,
    /// Where the round-robin over streams with queued data resumes.
    pub(super) cursor: usize,
    /// Response DATA frames queued so far (see [`Session::sending_mark`]).
    pub(super) data_frames: u64,
}

pub(super) fn err(code: u32, reason: &'static str) -> FrameError {
    FrameError { code, reason }
}

/// Whether a frame does no work towards a request: control frames (PING, SETTINGS,
/// PRIORITY), unknown types, and DATA / HEADERS / CONTINUATION that carry nothing and
/// end nothing. These are what a flood is made of (see `guard`).
fn is_noise(h: &Head, p: &[u8]) -> bool {
    let empty = || frame::unpad(h, p).is_ok_and(|f| f.is_empty());
    match h.kind {
        kind::PING | kind::SETTINGS | kind::PRIORITY => true,
        kind::DATA => !h.has(flag::END_STREAM) && empty(),
        kind::HEADERS => !h.has(flag::END_HEADERS) && empty(),
        kind::CONTINUATION => !h.has(flag::END_HEADERS) && p.is_empty(),
        kind::RST_STREAM | kind::GOAWAY | kind::WINDOW_UPDATE | kind::PUSH_PROMISE => false,
        _ => true,
    }
}

/// The stream a PRIORITY payload (or a HEADERS frame's priority fields) depends on.
pub(super) fn dependency(fields: &[u8]) -> Option<u32> {
    let b: [u8; 4] = fields.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(b) & 0x7fff_ffff)
}

impl Session {
    /// A session whose server preface (SETTINGS, then a connection WINDOW_UPDATE) is
    /// appended to `out`: it must be the first thing sent.
    pub fn new(limits: Limits, out: &mut Vec<u8>) -> Session {
        use perflab_h2::settings::{INITIAL_WINDOW_SIZE, MAX_CONCURRENT_STREAMS};
        frame::settings(
            out,
            &[
                (MAX_CONCURRENT_STREAMS, limits.max_streams),
                (INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            ],
        );
        frame::window_update(out, 0, CONN_WINDOW - DEFAULT_WINDOW);
        Session {
            limits,
            peer: Settings::default(),
            preface: true,
            first_settings: true,
            decoder: hpack::Decoder::default(),
            streams: Streams::default(),
            last_id: 0,
            send_window: i64::from(DEFAULT_WINDOW),
            recv_window: i64::from(CONN_WINDOW),
            recv_unacked: 0,
            cont: None,
            block: Vec::new(),
            goaway_sent: false,
            goaway_received: false,
            failed: false,
            resets: Bucket::new(limits.reset_rate),
            control: Bucket::new(limits.control_rate),
            unpaid_resets: 0,
            cursor: 0,
            data_frames: 0,
        }
    }

    /// Streams open now (received, being answered or sending).
    pub fn active(&self) -> usize {
        self.streams.len()
    }

    /// A connection error was sent: flush and close.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Nothing more will happen on this connection once the output is written: it
    /// failed, or a GOAWAY went either way and every stream is finished.
    pub fn done(&self) -> bool {
        self.failed
            || ((self.goaway_sent || self.goaway_received)
                && self.streams.is_empty()
                && self.cont.is_none())
    }

    /// A graceful GOAWAY (server stopping, idle timeout): streams open now finish,
    /// new ones are ignored.
    pub fn goaway(&mut self, out: &mut Vec<u8>) {
        if !self.goaway_sent && !self.failed {
            frame::goaway_frame(out, self.last_id, code::NO_ERROR);
            self.goaway_sent = true;
        }
    }

    /// A connection error: GOAWAY with its code, then nothing more is read.
    fn fail(&mut self, out: &mut Vec<u8>, e: &FrameError) {
        if !self.failed {
            frame::goaway_frame(out, self.last_id, e.code);
            self.failed = true;
        }
    }

    /// Handles every whole frame at the start of `input` (stopping once `out` holds
    /// `room` bytes); returns how many bytes were used.
    pub fn recv(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        room: usize,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> usize {
        let mut pos = 0;
        if self.preface {
            let n = input.len().min(PREFACE.len());
            if input[..n] != PREFACE[..n] {
                self.fail(out, &err(code::PROTOCOL_ERROR, "bad connection preface"));
                return input.len();
            }
            if n < PREFACE.len() {
                return 0;
            }
            self.preface = false;
            pos = PREFACE.len();
        }
        while !self.failed && out.len() < room {
            let (h, len) = match frame::next(&input[pos..], MAX_FRAME) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    self.fail(out, &e);
                    return input.len();
                }
            };
            let payload = &input[pos + perflab_h2::HEAD_LEN..pos + len];
            pos += len;
            let now = io.now;
            let r = self.frame(h, payload, out, io, peer);
            if let Err(e) = r.and_then(|()| self.settle_resets(now)) {
                self.fail(out, &e);
                return input.len();
            }
        }
        pos
    }

    fn frame(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> Result<(), FrameError> {
        if let Some(c) = self.cont {
            if h.kind != kind::CONTINUATION || h.stream != c.stream {
                return Err(err(code::PROTOCOL_ERROR, "expected CONTINUATION"));
            }
        }
        if self.first_settings {
            if h.kind != kind::SETTINGS || h.has(flag::ACK) {
                return Err(err(
                    code::PROTOCOL_ERROR,
                    "preface not followed by SETTINGS",
                ));
            }
            self.first_settings = false;
        }
        if is_noise(&h, p) && !self.control.take(io.now) {
            return Err(err(code::ENHANCE_YOUR_CALM, "too many control frames"));
        }
        match h.kind {
            kind::DATA => self.on_data(h, p, out, io, peer),
            kind::HEADERS => self.on_headers(h, p, out, io, peer),
            kind::PRIORITY => match (h.stream, p.len()) {
                (0, _) => Err(err(code::PROTOCOL_ERROR, "PRIORITY on stream 0")),
                (id, 5) if dependency(p) == Some(id) => {
                    self.reset(out, id, code::PROTOCOL_ERROR); // §5.3.1
                    Ok(())
                }
                (_, 5) => Ok(()), // priorities are ignored (RFC 9113 deprecates them)
                (id, _) => {
                    self.reset(out, id, code::FRAME_SIZE_ERROR);
                    Ok(())
                }
            },
            kind::RST_STREAM => self.on_rst(h, p, io.now),
            kind::SETTINGS => self.on_settings(h, p, out),
            kind::PUSH_PROMISE => Err(err(code::PROTOCOL_ERROR, "PUSH_PROMISE from a client")),
            kind::PING => self.on_ping(h, p, out),
            kind::GOAWAY => {
                if h.stream != 0 {
                    return Err(err(code::PROTOCOL_ERROR, "GOAWAY on a stream"));
                }
                frame::goaway(p)?;
                self.goaway_received = true;
                Ok(())
            }
            kind::WINDOW_UPDATE => self.on_window_update(h, p, out),
            kind::CONTINUATION => self.on_continuation(h, p, out, io, peer),
            _ => Ok(()), // unknown frame types are ignored (§4.1)
        }
    }

    fn on_settings(&mut self, h: Head, p: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
        if h.stream != 0 {
            return Err(err(code::PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if h.has(flag::ACK) {
            if !p.is_empty() {
                return Err(err(code::FRAME_SIZE_ERROR, "SETTINGS ACK with a payload"));
            }
            return Ok(());
        }
        let delta = self.peer.apply(p)?;
        if delta != 0 {
            // §6.9.2: the change applies to every open stream's window.
            for s in self.streams.iter_mut() {
                s.send_window += delta;
                if s.send_window > i64::from(MAX_WINDOW) {
                    return Err(err(code::FLOW_CONTROL_ERROR, "stream window above 2^31-1"));
                }
            }
        }
        frame::settings_ack(out);
        Ok(())
    }

    fn on_ping(&mut self, h: Head, p: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
        if h.stream != 0 {
            return Err(err(code::PROTOCOL_ERROR, "PING on a stream"));
        }
        let data: [u8; 8] = p
            .try_into()
            .map_err(|_| err(code::FRAME_SIZE_ERROR, "PING payload is not 8 bytes"))?;
        if !h.has(flag::ACK) {
            frame::ping(out, true, data);
        }
        Ok(())
    }

    fn on_rst(&mut self, h: Head, p: &[u8], now: Instant) -> Result<(), FrameError> {
        frame::rst_code(p)?;
        if h.stream == 0 || h.stream > self.last_id {
            return Err(err(code::PROTOCOL_ERROR, "RST_STREAM on an idle stream"));
        }
        // Every reset counts, also of a stream already answered: a request answered
        // at once and then reset is the rapid-reset attack on this server.
        self.charge_reset(now)?;
        if let Some(i) = self.streams.find(h.stream) {
            self.streams.close(i, Closed::ByPeer); // its queued response is dropped
        }
        Ok(())
    }

    /// Takes one stream reset from the connection's budget; past it the connection is
    /// told to calm down.
    pub(super) fn charge_reset(&mut self, now: Instant) -> Result<(), FrameError> {
        if self.resets.take(now) {
            Ok(())
        } else {
            Err(err(code::ENHANCE_YOUR_CALM, "too many streams reset"))
        }
    }

    fn on_window_update(&mut self, h: Head, p: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
        let inc = i64::from(frame::window_increment(p)?);
        if h.stream == 0 {
            if inc == 0 {
                return Err(err(code::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"));
            }
            self.send_window += inc;
            if self.send_window > i64::from(MAX_WINDOW) {
                return Err(err(
                    code::FLOW_CONTROL_ERROR,
                    "connection window above 2^31-1",
                ));
            }
            return Ok(());
        }
        if h.stream > self.last_id {
            return Err(err(code::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream"));
        }
        let Some(i) = self.streams.find(h.stream) else {
            // Closed: a WINDOW_UPDATE may cross our END_STREAM or the client's reset
            // (ignored, as before: an existing test pins it after a client reset).
            return Ok(());
        };
        let s = self.streams.get(i);
        s.send_window += inc;
        if inc == 0 {
            self.reset(out, h.stream, code::PROTOCOL_ERROR);
        } else if s.send_window > i64::from(MAX_WINDOW) {
            self.reset(out, h.stream, code::FLOW_CONTROL_ERROR);
        }
        Ok(())
    }

    /// A stream error: RST_STREAM and forget the stream. One the client caused (any
    /// code but INTERNAL_ERROR, ours) is charged to its reset budget after the frame:
    /// making the server reset streams is the same attack as resetting them.
    pub(super) fn reset(&mut self, out: &mut Vec<u8>, id: u32, c: u32) {
        frame::rst_stream(out, id, c);
        if let Some(i) = self.streams.find(id) {
            self.streams.close(i, Closed::ByUs);
        }
        if c != code::INTERNAL_ERROR {
            self.unpaid_resets += 1;
        }
    }

    /// Charges the stream errors of the last frame to the reset budget.
    fn settle_resets(&mut self, now: Instant) -> Result<(), FrameError> {
        while self.unpaid_resets > 0 {
            self.unpaid_resets -= 1;
            self.charge_reset(now)?;
        }
        Ok(())
    }

    /// The request on stream `i` is complete (END_STREAM seen): answer it.
    pub(super) fn end_of_request(
        &mut self,
        i: usize,
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) {
        let s = self.streams.get(i);
        s.recv_open = false;
        if s.answered {
            // Answered early (413/431): the rest was discarded.
            if !s.sending {
                self.streams.close(i, Closed::Ended);
            }
            return;
        }
        if s.declared.is_some_and(|n| n != s.body.len() as u64) {
            let id = s.id;
            self.reset(out, id, code::PROTOCOL_ERROR); // §8.1.1: malformed
            return;
        }
        self.answer(i, out, io, peer, None);
    }

    fn on_data(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
    ) -> Result<(), FrameError> {
        if h.stream == 0 {
            return Err(err(code::PROTOCOL_ERROR, "DATA on stream 0"));
        }
        // The whole payload, padding included, counts against the windows (§6.9.1).
        let len = i64::from(h.len);
        if len > self.recv_window {
            return Err(err(
                code::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.recv_window -= len;
        self.recv_unacked += h.len;
        if self.recv_unacked >= CONN_WINDOW / 2 {
            frame::window_update(out, 0, self.recv_unacked);
            self.recv_window += i64::from(self.recv_unacked);
            self.recv_unacked = 0;
        }
        let data = frame::unpad(&h, p)?;
        let Some(i) = self.streams.find(h.stream) else {
            if h.stream > self.last_id {
                return Err(err(code::PROTOCOL_ERROR, "DATA on an idle stream"));
            }
            return match self.streams.closed(h.stream) {
                // §5.1: after END_STREAM both ways, a connection error.
                Some(Closed::Ended) => Err(err(code::STREAM_CLOSED, "DATA on a closed stream")),
                Some(Closed::ByPeer) => {
                    frame::rst_stream(out, h.stream, code::STREAM_CLOSED);
                    self.unpaid_resets += 1;
                    Ok(())
                }
                _ => Ok(()), // a stream we reset, refused, or forgot
            };
        };
        let max_body = self.limits.max_body_bytes;
        let s = self.streams.get(i);
        if !s.recv_open {
            self.reset(out, h.stream, code::STREAM_CLOSED);
            return Ok(());
        }
        if len > s.recv_window {
            self.reset(out, h.stream, code::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        s.recv_window -= len;
        s.recv_unacked += h.len;
        let mut too_large = false;
        if !s.discard {
            if s.body.len() + data.len() > max_body {
                s.discard = true;
                s.body.clear();
                too_large = true;
            } else {
                s.body.extend_from_slice(data);
            }
        }
        if h.has(flag::END_STREAM) {
            if too_large {
                s.recv_open = false;
                self.answer(i, out, io, peer, Some(413));
            } else {
                self.end_of_request(i, out, io, peer);
            }
            return Ok(());
        }
        if s.recv_unacked >= STREAM_WINDOW / 2 {
            frame::window_update(out, h.stream, s.recv_unacked);
            s.recv_window += i64::from(s.recv_unacked);
            s.recv_unacked = 0;
        }
        if too_large {
            // Answered now; the rest of the body is read and dropped (§8.1).
            self.answer(i, out, io, peer, Some(413));
        }
        Ok(())
    }
}
