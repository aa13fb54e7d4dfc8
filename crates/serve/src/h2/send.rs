//! The sending half of an HTTP/2 connection: a response's HEADERS, then its body as
//! DATA frames within the client's flow-control windows.
//!
//! HEADERS are not flow-controlled and go out at once. The body goes out in the same
//! breath as far as the stream's and the connection's windows allow — with the large
//! windows benchmark clients open (h2load's are 1 GiB) that is all of it, so the common
//! response is one HEADERS and one DATA frame written straight from the worker's
//! scratch, nothing queued. What does not fit waits in the stream (bytes in `pending`,
//! or the file body itself), and [`Session::fill`] sends it round-robin, one frame per
//! stream per turn, as WINDOW_UPDATEs and SETTINGS changes open the windows — up to
//! `room` bytes of output at a time, so a 1 GiB file is read as the socket takes it,
//! never into memory. Cached bodies are copied from the cache's memory; large files
//! are read with `pread` into the output buffer (no `sendfile`: DATA frame heads must
//! sit between the chunks). DATA frames are at most the client's SETTINGS_MAX_FRAME_SIZE.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;

use perflab_h2::frame::{self, Head};
use perflab_h2::{code, flag, kind};

use super::exchange;
use super::guard::Closed;
use super::session::Session;
use super::stream::Stream;
use crate::conn::Io;
use crate::files::Source;

impl Session {
    /// Answers stream `i` (its request is complete, or `status` is an early error) and
    /// sends what the windows allow.
    pub(super) fn answer(
        &mut self,
        i: usize,
        out: &mut Vec<u8>,
        io: &mut Io<'_, '_>,
        peer: SocketAddr,
        status: Option<u16>,
    ) {
        let max_frame = self.peer.max_frame_size;
        let s = self.streams.get(i);
        s.answered = true;
        let own_head = !s.head.is_empty();
        let req = if own_head {
            std::mem::take(&mut s.head)
        } else {
            std::mem::take(&mut io.scratch.req)
        };
        let body = std::mem::take(&mut s.body);
        let id = s.id;
        let ans = exchange::respond(io, peer, &req, &body, status);
        let has_body = !ans.inline.is_empty() || ans.file.is_some();
        frame::headers(out, id, ans.block, !has_body, max_frame);
        let s = self.streams.get(i);
        if has_body {
            let window = s.send_window.min(self.send_window).max(0) as usize;
            let n = window.min(ans.inline.len());
            let last = n == ans.inline.len() && ans.file.is_none();
            frame::data(out, id, &ans.inline[..n], last, max_frame);
            s.send_window -= n as i64;
            self.send_window -= n as i64;
            if !last {
                s.pending.clear();
                s.pending.extend_from_slice(&ans.inline[n..]);
                s.pending_pos = 0;
                s.file = ans.file;
                s.sending = true;
            }
        }
        // Give the buffers back, for the next request.
        s.body = body;
        s.body.clear();
        if own_head {
            s.head = req;
            s.head.clear();
        } else {
            io.scratch.req = req;
        }
        if !s.sending {
            self.finish(i, out);
        }
    }

    /// The response on stream `i` is complete (END_STREAM sent): the stream closes — and
    /// is reset with NO_ERROR if the client is still sending a request we answered
    /// early (RFC 9113 §8.1).
    fn finish(&mut self, i: usize, out: &mut Vec<u8>) {
        let s = self.streams.get(i);
        s.sending = false;
        let how = if s.recv_open {
            frame::rst_stream(out, s.id, code::NO_ERROR);
            Closed::ByUs
        } else {
            Closed::Ended
        };
        self.streams.close(i, how);
    }

    /// Response DATA frames queued so far, and whether a response is still being
    /// sent: the connection extends its deadline only when such bytes are written
    /// (control frames and partial input never do).
    pub fn sending_mark(&self) -> (u64, bool) {
        (self.data_frames, self.streams.any_sending())
    }

    /// Whether queued body bytes could be sent now.
    pub fn can_send(&self) -> bool {
        self.send_window > 0 && self.streams.any_sendable()
    }

    /// Sends queued body bytes as the windows allow, one frame per stream per turn,
    /// until `out` holds `room` bytes.
    pub fn fill(&mut self, out: &mut Vec<u8>, room: usize) {
        let max_frame = i64::from(self.peer.max_frame_size);
        while out.len() < room && self.send_window > 0 {
            let Some(i) = self.streams.next_sendable(self.cursor) else {
                break;
            };
            let s = self.streams.get(i);
            let queued = s.queued();
            let n = s
                .send_window
                .min(self.send_window)
                .min(max_frame)
                .min(queued as i64) as usize;
            let last = n as u64 == queued;
            let start = out.len();
            Head {
                len: n as u32,
                kind: kind::DATA,
                flags: if last { flag::END_STREAM } else { 0 },
                stream: s.id,
            }
            .write(out);
            if copy_body(s, out, n).is_err() {
                // The file shrank or can't be read: this response can't be completed.
                out.truncate(start);
                let id = s.id;
                self.reset(out, id, code::INTERNAL_ERROR);
                continue;
            }
            s.send_window -= n as i64;
            self.send_window -= n as i64;
            self.data_frames += 1;
            if last {
                self.finish(i, out);
                self.cursor = i;
            } else {
                self.cursor = i + 1;
            }
        }
    }
}

/// Appends the next `n` queued body bytes of `s` to `out`.
fn copy_body(s: &mut Stream, out: &mut Vec<u8>, n: usize) -> std::io::Result<()> {
    let mut left = n;
    if s.pending_pos < s.pending.len() {
        let k = left.min(s.pending.len() - s.pending_pos);
        out.extend_from_slice(&s.pending[s.pending_pos..s.pending_pos + k]);
        s.pending_pos += k;
        left -= k;
    }
    if left == 0 {
        return Ok(());
    }
    let Some(f) = &mut s.file else {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    };
    match &f.src {
        Source::Memory(bytes) => {
            let from = f.offset as usize;
            out.extend_from_slice(&bytes[from..from + left]);
        }
        Source::File(file) => {
            let at = out.len();
            out.resize(at + left, 0);
            file.read_exact_at(&mut out[at..], f.offset)?;
        }
    }
    f.offset += left as u64;
    if f.offset >= f.end {
        s.file = None;
    }
    Ok(())
}
