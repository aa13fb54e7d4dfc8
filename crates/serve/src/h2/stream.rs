//! One HTTP/2 stream's state, and the connection's set of open streams.
//!
//! A stream lives from the client's HEADERS until our END_STREAM (or a reset); the
//! states of RFC 9113 §5.1 collapse to two flags because the server never pushes and
//! answers only a complete request: `recv_open` (the client may still send DATA — the
//! request is incomplete, or it was answered early with 413) and `sending` (a response
//! body is still queued behind flow control). What is queued is either bytes
//! (`pending`, the rest of a body `dispatch` wrote) or a [`FileBody`] (a cached
//! in-memory body or an open file, read as the windows open).
//!
//! [`Streams`] is a small vector searched by id: a connection has at most
//! `--h2-max-streams` (128 by default, h2load's `-m 10` uses ten) open at once, and a
//! scan of a few cache lines beats hashing. Closed streams go to a pool and come back
//! with their buffers' capacity, so a long connection stops allocating.

use super::guard::{Closed, Recent};
use crate::files::FileBody;

#[derive(Debug, Default)]
pub(super) struct Stream {
    pub id: u32,
    /// The client may still send (no END_STREAM received).
    pub recv_open: bool,
    /// The request was answered (HEADERS sent).
    pub answered: bool,
    /// A response body is still to send (END_STREAM not sent).
    pub sending: bool,
    /// The request body went over the limit: answered 413, the rest is discarded.
    pub discard: bool,
    /// The request's HTTP/1.1 head, kept while its body arrives.
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    /// The request's `content-length`, checked against the DATA received.
    pub declared: Option<u64>,
    /// Our receive window for this stream, and what was received since we last
    /// widened it.
    pub recv_window: i64,
    pub recv_unacked: u32,
    /// The client's window for this stream (may go negative on a SETTINGS change).
    pub send_window: i64,
    /// Body bytes queued behind flow control, from `pending_pos`.
    pub pending: Vec<u8>,
    pub pending_pos: usize,
    /// A body to send after `pending`.
    pub file: Option<FileBody>,
}

impl Stream {
    /// Bytes still queued for this stream's response body.
    pub fn queued(&self) -> u64 {
        let bytes = (self.pending.len() - self.pending_pos) as u64;
        bytes + self.file.as_ref().map_or(0, |f| f.end - f.offset)
    }
}

/// The open streams of one connection, plus a pool of closed ones to reuse, and how
/// the last few closed (for frames that arrive late, §5.1).
#[derive(Debug, Default)]
pub(super) struct Streams {
    open: Vec<Stream>,
    pool: Vec<Stream>,
    recent: Recent,
}

impl Streams {
    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    pub fn find(&self, id: u32) -> Option<usize> {
        self.open.iter().position(|s| s.id == id)
    }

    pub fn get(&mut self, i: usize) -> &mut Stream {
        &mut self.open[i]
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Stream> {
        self.open.iter_mut()
    }

    /// Opens stream `id` with the given windows; returns its index.
    pub fn open(&mut self, id: u32, recv_window: i64, send_window: i64) -> usize {
        let mut s = self.pool.pop().unwrap_or_default();
        s.id = id;
        s.recv_open = true;
        s.answered = false;
        s.sending = false;
        s.discard = false;
        s.declared = None;
        s.recv_window = recv_window;
        s.recv_unacked = 0;
        s.send_window = send_window;
        s.pending_pos = 0;
        self.open.push(s);
        self.open.len() - 1
    }

    /// Records that stream `id` closed without ever being open here (refused, or
    /// ignored after our GOAWAY).
    pub fn closed_unopened(&mut self, id: u32, how: Closed) {
        self.recent.record(id, how);
    }

    /// How a stream no longer open closed, if it closed recently.
    pub fn closed(&self, id: u32) -> Option<Closed> {
        self.recent.get(id)
    }

    /// Closes the stream at `i` (indices of later streams may change).
    pub fn close(&mut self, i: usize, how: Closed) {
        let mut s = self.open.swap_remove(i);
        self.recent.record(s.id, how);
        s.head.clear();
        s.body.clear();
        s.pending.clear();
        s.file = None;
        // Keep a bounded pool of reasonably sized buffers.
        if self.pool.len() < 16 && s.body.capacity() <= 64 << 10 && s.pending.capacity() <= 64 << 10
        {
            self.pool.push(s);
        }
    }

    /// The next stream at or after `from` (wrapping) with queued bytes it may send.
    pub fn next_sendable(&self, from: usize) -> Option<usize> {
        let n = self.open.len();
        (0..n)
            .map(|k| (from + k) % n)
            .find(|&i| self.open[i].sending && self.open[i].send_window > 0)
    }

    /// Whether any stream still has a response body to send.
    pub fn any_sending(&self) -> bool {
        self.open.iter().any(|s| s.sending)
    }

    /// Whether any stream has queued bytes and window to send them.
    pub fn any_sendable(&self) -> bool {
        self.open.iter().any(|s| s.sending && s.send_window > 0)
    }
}
