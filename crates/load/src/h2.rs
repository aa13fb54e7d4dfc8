//! The HTTP/2 side of a client connection (RFC 9113), whatever moves its bytes: the
//! streams in flight, the frames coming in, the frames going out. The epoll connection
//! (`epoll::conn`) owns one when the connection speaks h2 — chosen by ALPN over TLS,
//! or h2c with prior knowledge on `http://` with `--http2` — and feeds it the bytes it
//! reads; the worker sees it through the same [`Connection`](crate::conn::Connection)
//! seam as HTTP/1.1, with [`H2::free`] streams instead of one idle slot.
//!
//! Why the framing is perflab's own (`perflab-h2`) rather than the `h2` crate: `h2`
//! runs on tokio's reactor and wakes a task per stream, while this engine is one mio
//! loop per thread that copies pre-serialised request bytes and parses in place.
//! Here a request is one copy of its pre-framed HEADERS frame (HPACK block encoded once
//! per target, see `perflab_h2::hpack`) with the stream id patched in; the frames of
//! one turn of the loop go out in one write ([`H2::flush`]); a response is its HEADERS
//! (decoded for `:status`, the HPACK table kept in step) and its DATA frames counted,
//! never copied. `bench/http-vs-peers.sh` measures it against h2load.
//!
//! Flow control: the receive window this side advertises (`--h2-window`, per stream
//! and for the connection) is given back with a WINDOW_UPDATE once half of it is used,
//! so a large window costs one small frame per many responses and a tiny one still
//! never stalls. Request bodies are sent within the server's windows; what does not
//! fit waits for its WINDOW_UPDATE (or a SETTINGS that grows the initial window).
//!
//! Errors: a RST_STREAM fails its request ([`ErrorKind::StreamReset`]) and the
//! connection goes on; a GOAWAY fails the requests it did not process
//! ([`ErrorKind::GoAway`]), lets the others finish, and the connection is replaced once
//! they have; a frame that breaks the protocol fails the connection as
//! [`ErrorKind::Malformed`]. SETTINGS_MAX_CONCURRENT_STREAMS caps [`H2::free`]. Server
//! push is refused (SETTINGS_ENABLE_PUSH = 0), so a PUSH_PROMISE is a protocol error.
//!
//! Bounds against a hostile server (`perflab http` is pointed at servers nobody here
//! controls), so that memory stays bounded whatever it sends:
//! - a header block — HEADERS and its CONTINUATIONs — is held until it is whole, so it
//!   is bounded: [`MAX_HEADER_LIST`] bytes (advertised as SETTINGS_MAX_HEADER_LIST_SIZE;
//!   an encoded block is never larger than the list it encodes) and [`MAX_BLOCK_FRAMES`]
//!   frames (empty CONTINUATIONs add no bytes). More is a connection error,
//!   [`ErrorKind::HeaderBlockTooLarge`] (the gathering and decoding of blocks is the
//!   child module `headers`);
//! - the replies this side owes — PING and SETTINGS acknowledgements, WINDOW_UPDATEs,
//!   RST_STREAMs — queue while the socket cannot take them; past [`MAX_CONTROL_QUEUE`]
//!   bytes (the server's bound too) [`H2::process`] stops, the connection tries to
//!   write, and if that does not bring the queue back under the bound it is closed,
//!   [`ErrorKind::OutputQueueFull`];
//! - a WINDOW_UPDATE (or a SETTINGS_INITIAL_WINDOW_SIZE change) that takes a window
//!   past 2^31-1 is a FLOW_CONTROL_ERROR (RFC 9113 §6.9.1, §6.9.2): a stream error
//!   (RST_STREAM, its request fails) for a stream's window, a connection error for the
//!   connection's, both [`ErrorKind::FlowControl`].
//!
//! A connection error queues a GOAWAY with its code ([`H2::goaway_code`]), which the
//! connection writes if it can before it closes.

use crate::conn::{ErrorKind, Progress, Sent};
use crate::parse::Completed;
use crate::request::Prepared;
use perflab_h2::{flag, frame, hpack, kind, settings, Head, Settings, HEAD_LEN};
use std::io;

/// The read buffer of an h2 connection: room for several whole frames of the largest
/// size this side accepts ([`MAX_FRAME`], the protocol's default).
pub(crate) const READ_BUF: usize = 64 * 1024;
/// The largest frame this side accepts (SETTINGS_MAX_FRAME_SIZE left at its default).
const MAX_FRAME: u32 = perflab_h2::MIN_FRAME_SIZE;
/// The highest stream id a client may open.
const LAST_ID: u32 = (1 << 31) - 1;
/// The largest header block accepted, in bytes (HEADERS and CONTINUATION payloads), and
/// the SETTINGS_MAX_HEADER_LIST_SIZE advertised: 64 KiB, far above a real response
/// head and small enough to hold for every connection of a run.
pub(crate) const MAX_HEADER_LIST: u32 = 64 * 1024;
/// The most frames one header block may take (HEADERS + CONTINUATIONs): a 64 KiB
/// block in frames of the default 16 KiB takes 4; 64 leaves room for servers that
/// split finer and still stops a stream of empty CONTINUATIONs at once.
pub(crate) const MAX_BLOCK_FRAMES: u32 = 64;
/// The most bytes of control-frame replies that may wait for a socket that does not
/// drain (the server's bound too).
pub(crate) const MAX_CONTROL_QUEUE: usize = 128 * 1024;

/// A request in flight.
#[derive(Debug)]
struct Stream {
    id: u32,
    sent: Sent,
    /// The final `:status` (0 until its HEADERS).
    status: u16,
    /// Frame bytes received for it (heads included).
    bytes: u64,
    /// Received and not yet given back by a WINDOW_UPDATE.
    unacked: u32,
    /// What it may still send (the server's window for it).
    window: i64,
    /// Request body bytes already sent, while some are left.
    body_sent: Option<usize>,
}

/// One connection's HTTP/2 state.
#[derive(Debug)]
pub(crate) struct H2 {
    /// Frames waiting to be written: `out[out_pos..]`.
    out: Vec<u8>,
    out_pos: usize,
    /// Unparsed bytes are `buf[start..end]` of the connection's read buffer.
    pub start: usize,
    pub end: usize,
    peer: Settings,
    /// The server's first SETTINGS arrived: requests may go.
    settled: bool,
    decoder: hpack::Decoder,
    /// In flight, oldest first.
    streams: Vec<Stream>,
    next_id: u32,
    /// The connection's send window (request bodies).
    send_window: i64,
    /// Received on the connection and not yet given back.
    unacked: u32,
    /// The window this side advertises.
    window: u32,
    /// `--streams`.
    max_streams: usize,
    /// GOAWAY received or ids used up: no new streams.
    pub closing: bool,
    /// A header block waiting for its CONTINUATION frames: stream, END_STREAM.
    partial: Option<(u32, bool)>,
    block: Vec<u8>,
    /// Frames of the header block in `partial` so far.
    block_frames: u32,
    /// Bytes of control-frame replies in `out[out_pos..]` (at most: after a partial
    /// write, the bytes left), bounded by [`MAX_CONTROL_QUEUE`].
    control: usize,
    /// The error code of the GOAWAY a connection error queued.
    pub goaway_code: Option<u32>,
    /// Some stream still has body bytes to send.
    bodies_pending: bool,
}

fn protocol_error(_: impl std::fmt::Debug) -> ErrorKind {
    ErrorKind::Malformed
}

impl H2 {
    /// A connection that will open up to `max_streams` streams and advertise `window`.
    pub fn new(max_streams: usize, window: u32) -> H2 {
        let mut h = H2 {
            out: Vec::with_capacity(4096),
            out_pos: 0,
            start: 0,
            end: 0,
            peer: Settings::default(),
            settled: false,
            decoder: hpack::Decoder::default(),
            streams: Vec::with_capacity(max_streams),
            next_id: 1,
            send_window: i64::from(perflab_h2::DEFAULT_WINDOW),
            unacked: 0,
            window,
            max_streams,
            closing: false,
            partial: None,
            block: Vec::new(),
            block_frames: 0,
            control: 0,
            goaway_code: None,
            bodies_pending: false,
        };
        h.out.extend_from_slice(perflab_h2::PREFACE);
        frame::settings(
            &mut h.out,
            &[
                (settings::ENABLE_PUSH, 0),
                (settings::INITIAL_WINDOW_SIZE, window),
                (settings::MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST),
            ],
        );
        if window > perflab_h2::DEFAULT_WINDOW {
            frame::window_update(&mut h.out, 0, window - perflab_h2::DEFAULT_WINDOW);
        }
        h
    }

    /// The server's SETTINGS arrived (the connection can carry requests).
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Streams it can open now.
    pub fn free(&self) -> usize {
        if self.closing || !self.settled {
            return 0;
        }
        let limit = match self.peer.max_concurrent_streams {
            Some(m) => self.max_streams.min(m as usize),
            None => self.max_streams,
        };
        limit.saturating_sub(self.streams.len())
    }

    pub fn in_flight(&self) -> usize {
        self.streams.len()
    }

    pub fn oldest(&self) -> Option<&Sent> {
        self.streams.first().map(|s| &s.sent)
    }

    pub fn each_in_flight(&self, f: &mut dyn FnMut(&Sent)) {
        self.streams.iter().for_each(|s| f(&s.sent));
    }

    /// Queues request `target` on a new stream.
    pub fn send(&mut self, prepared: &Prepared, target: usize, sent: Sent) {
        let t = &prepared.targets[target];
        let id = self.next_id;
        self.next_id += 2;
        if self.next_id > LAST_ID {
            self.closing = true;
        }
        if !t.h2_frame.is_empty() {
            let at = self.out.len();
            self.out.extend_from_slice(&t.h2_frame);
            self.out[at + 5..at + 9].copy_from_slice(&id.to_be_bytes());
        } else {
            frame::headers(
                &mut self.out,
                id,
                &t.h2_block,
                t.body.is_empty(),
                self.peer.max_frame_size,
            );
        }
        self.streams.push(Stream {
            id,
            sent,
            status: 0,
            bytes: 0,
            unacked: 0,
            window: i64::from(self.peer.initial_window_size),
            body_sent: (!t.body.is_empty()).then_some(0),
        });
        if !t.body.is_empty() {
            self.bodies_pending = true;
            self.send_bodies(prepared);
        }
    }

    /// Sends what the windows allow of the bodies still waiting.
    fn send_bodies(&mut self, prepared: &Prepared) {
        if !self.bodies_pending {
            return;
        }
        let mut pending = false;
        for s in &mut self.streams {
            let Some(done) = s.body_sent else { continue };
            let body = &prepared.targets[s.sent.target as usize].body;
            let room = self.send_window.min(s.window).max(0) as usize;
            let n = room.min(body.len() - done);
            let end = done + n == body.len();
            if n > 0 || end {
                frame::data(
                    &mut self.out,
                    s.id,
                    &body[done..done + n],
                    end,
                    self.peer.max_frame_size,
                );
            }
            self.send_window -= n as i64;
            s.window -= n as i64;
            s.body_sent = (!end).then_some(done + n);
            pending |= !end;
        }
        self.bodies_pending = pending;
    }

    /// Frames wait to be written.
    pub fn has_output(&self) -> bool {
        self.out_pos < self.out.len()
    }

    /// Writes queued frames with `write` until none is left or it would block.
    pub fn flush(&mut self, write: impl FnMut(&[u8]) -> io::Result<usize>) -> io::Result<()> {
        let r = self.write_out(write);
        // What is left holds at most that many bytes of control replies.
        self.control = self.control.min(self.out.len() - self.out_pos);
        r
    }

    /// The control-frame replies waiting are over [`MAX_CONTROL_QUEUE`]: the
    /// connection must write them before [`H2::process`] goes on, or close.
    pub fn control_over_bound(&self) -> bool {
        self.control > MAX_CONTROL_QUEUE
    }

    /// Queues a control-frame reply with `frame` (counted against the bound).
    fn reply(&mut self, frame: impl FnOnce(&mut Vec<u8>)) {
        let before = self.out.len();
        frame(&mut self.out);
        self.control += self.out.len() - before;
    }

    fn write_out(&mut self, mut write: impl FnMut(&[u8]) -> io::Result<usize>) -> io::Result<()> {
        while self.out_pos < self.out.len() {
            match write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.out_pos = 0;
        Ok(())
    }

    /// Makes room at the end of `buf` (sized [`READ_BUF`]): moves a partial frame to
    /// the front. A whole frame always fits.
    pub fn make_room(&mut self, buf: &mut [u8]) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == buf.len() || buf.len() - self.end < HEAD_LEN + MAX_FRAME as usize {
            buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Handles every whole frame in `buf[start..end]`: completed responses go to
    /// `done`, failed requests to `failed`. An error fails the connection (and queues a
    /// GOAWAY saying why). Stops early, frames left unhandled, once the control replies
    /// waiting pass their bound ([`H2::control_over_bound`]).
    pub fn process(
        &mut self,
        buf: &[u8],
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        let r = self.frames(buf, prepared, done, failed);
        if let Err(k) = r {
            let code = match k {
                ErrorKind::FlowControl => perflab_h2::code::FLOW_CONTROL_ERROR,
                ErrorKind::HeaderBlockTooLarge => perflab_h2::code::ENHANCE_YOUR_CALM,
                _ => perflab_h2::code::PROTOCOL_ERROR,
            };
            self.goaway_code = Some(code);
            frame::goaway_frame(&mut self.out, 0, code);
        }
        r
    }

    fn frames(
        &mut self,
        buf: &[u8],
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        while !self.control_over_bound() {
            let Some((h, n)) =
                frame::next(&buf[self.start..self.end], MAX_FRAME).map_err(protocol_error)?
            else {
                break;
            };
            let payload = &buf[self.start + HEAD_LEN..self.start + n];
            self.start += n;
            self.frame(h, payload, prepared, done, failed)?;
        }
        Ok(())
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// One frame from the server, dispatched by type.
    fn frame(
        &mut self,
        h: Head,
        payload: &[u8],
        prepared: &Prepared,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        if self.partial.is_some() && h.kind != kind::CONTINUATION {
            return Err(ErrorKind::Malformed); // a header block must not be interrupted
        }
        match h.kind {
            kind::DATA => self.data(&h, payload, done, failed)?,
            kind::HEADERS => self.headers_frame(&h, payload, done, failed)?,
            kind::CONTINUATION => self.continuation(&h, payload, done, failed)?,
            kind::RST_STREAM => {
                frame::rst_code(payload).map_err(protocol_error)?;
                if let Some(k) = self.find(h.stream) {
                    let s = self.streams.remove(k);
                    failed.push((s.sent, ErrorKind::StreamReset));
                }
            }
            kind::SETTINGS => self.settings(&h, payload, prepared)?,
            kind::PING => {
                let data: [u8; 8] = payload.try_into().map_err(protocol_error)?;
                if !h.has(flag::ACK) {
                    self.reply(|out| frame::ping(out, true, data));
                }
            }
            kind::GOAWAY => {
                let (last, _code) = frame::goaway(payload).map_err(protocol_error)?;
                self.closing = true;
                self.streams.retain(|s| {
                    let lost = s.id > last;
                    if lost {
                        failed.push((s.sent, ErrorKind::GoAway));
                    }
                    !lost
                });
            }
            kind::WINDOW_UPDATE => self.window_update(&h, payload, prepared, failed)?,
            kind::PUSH_PROMISE => return Err(ErrorKind::Malformed), // push is disabled
            _ => {} // PRIORITY and unknown frame types are ignored
        }
        Ok(())
    }

    /// DATA: count the bytes, give the windows back, complete the stream at its end.
    fn data(
        &mut self,
        h: &Head,
        payload: &[u8],
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        if h.stream == 0 {
            return Err(ErrorKind::Malformed);
        }
        frame::unpad(h, payload).map_err(protocol_error)?;
        self.unacked += h.len;
        if self.unacked >= self.window / 2 {
            let n = self.unacked;
            self.reply(|out| frame::window_update(out, 0, n));
            self.unacked = 0;
        }
        if let Some(k) = self.find(h.stream) {
            let s = &mut self.streams[k];
            s.bytes += (HEAD_LEN as u32 + h.len) as u64;
            if h.has(flag::END_STREAM) {
                self.complete(k, done, failed);
            } else {
                s.unacked += h.len;
                if s.unacked >= self.window / 2 {
                    let (id, n) = (s.id, s.unacked);
                    s.unacked = 0;
                    self.reply(|out| frame::window_update(out, id, n));
                }
            }
        } // else: a stream no longer tracked (reset); its bytes only count above
        Ok(())
    }

    /// SETTINGS: apply the server's, acknowledge, and send what waited for them.
    fn settings(&mut self, h: &Head, payload: &[u8], prepared: &Prepared) -> Result<(), ErrorKind> {
        if h.stream != 0 {
            return Err(ErrorKind::Malformed);
        }
        if h.has(flag::ACK) {
            return Ok(());
        }
        let delta = self.peer.apply(payload).map_err(|e| {
            if e.code == perflab_h2::code::FLOW_CONTROL_ERROR {
                ErrorKind::FlowControl
            } else {
                ErrorKind::Malformed
            }
        })?;
        for s in &mut self.streams {
            s.window += delta;
            if s.window > i64::from(perflab_h2::MAX_WINDOW) {
                return Err(ErrorKind::FlowControl); // §6.9.2: a connection error
            }
        }
        self.reply(frame::settings_ack);
        self.settled = true;
        self.send_bodies(prepared);
        Ok(())
    }

    /// WINDOW_UPDATE: more room to send request bodies. Past 2^31-1 it is a
    /// FLOW_CONTROL_ERROR: of the connection for its window, of the stream for one
    /// stream's (reset, its request failed).
    fn window_update(
        &mut self,
        h: &Head,
        payload: &[u8],
        prepared: &Prepared,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        let inc = i64::from(frame::window_increment(payload).map_err(protocol_error)?);
        if inc == 0 {
            return Err(ErrorKind::Malformed);
        }
        let max = i64::from(perflab_h2::MAX_WINDOW);
        if h.stream == 0 {
            if self.send_window + inc > max {
                return Err(ErrorKind::FlowControl);
            }
            self.send_window += inc;
        } else if let Some(k) = self.find(h.stream) {
            if self.streams[k].window + inc > max {
                let s = self.streams.remove(k);
                failed.push((s.sent, ErrorKind::FlowControl));
                let id = s.id;
                self.reply(|out| frame::rst_stream(out, id, perflab_h2::code::FLOW_CONTROL_ERROR));
                return Ok(());
            }
            self.streams[k].window += inc;
        }
        self.send_bodies(prepared);
        Ok(())
    }

    /// Stream `k` ended: a response, or a malformed one when it had no status.
    fn complete(
        &mut self,
        k: usize,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) {
        let s = self.streams.remove(k);
        if s.status == 0 {
            failed.push((s.sent, ErrorKind::Malformed));
        } else {
            done.push((
                s.sent,
                Completed {
                    status: s.status,
                    close: false,
                    bytes: s.bytes,
                },
            ));
        }
    }

    /// The server closed the connection: fine with nothing in flight.
    pub fn on_eof(&mut self, done: &[(Sent, Completed)]) -> Result<Progress, ErrorKind> {
        self.closing = true;
        if !self.streams.is_empty() {
            return Err(ErrorKind::Closed);
        }
        Ok(if done.is_empty() {
            Progress::ClosedIdle
        } else {
            Progress::Moved
        })
    }
}

/// A one-frame header block's bytes on the wire.
fn n_bytes(h: &Head) -> u64 {
    (HEAD_LEN as u32 + h.len) as u64
}

mod headers;
#[cfg(test)]
mod tests;
