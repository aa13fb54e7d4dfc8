//! HTTP/2 (RFC 9113) on the server's own event loop: h2c with prior knowledge on a
//! plain listener, and h2 over TLS chosen by ALPN.
//!
//! A connection starts as HTTP/1.1 and `conn` decides per connection: a client whose
//! first bytes are the HTTP/2 preface (or that negotiated `h2` by ALPN) gets a
//! [`Session`], anything else stays HTTP/1.1 on the same port. The session is a pure
//! state machine over bytes — frames in from the connection's read buffer, frames out
//! into its output buffer — so the connection keeps doing all I/O (plain or TLS) and
//! the unit tests (`tests`) feed frames and read frames without a socket.
//!
//! - `session`: the receiving half — preface, SETTINGS (ACKed; a new initial window
//!   applies to open streams), PING, WINDOW_UPDATE, RST_STREAM (the stream is
//!   dropped), GOAWAY (open streams finish, then the connection closes), HEADERS +
//!   CONTINUATION (HPACK-decoded with `perflab_h2::hpack::Decoder`), DATA (counted
//!   against our windows, which are widened with WINDOW_UPDATE as bodies arrive);
//!   streams over `--h2-max-streams` are refused with RST_STREAM(REFUSED_STREAM);
//!   connection errors are GOAWAY with their code, then close.
//! - `headers`: HEADERS + CONTINUATION into one block, and what the block is for (a
//!   new request, trailers, a frame on a stream no longer open).
//! - `exchange`: a complete request becomes the equivalent HTTP/1.1 head and goes
//!   through the same `parse` and `dispatch` as HTTP/1.1, so every answer (files,
//!   cache, 304, ranges, listings, hello, handler, errors) is the HTTP/1.1 path's; the
//!   response head is turned into an HPACK block, memoized per worker.
//! - `send`: HEADERS, then DATA within the client's windows, the rest queued per
//!   stream and sent round-robin as the windows open.
//! - `stream`: one stream's state, the set of open streams, how recent ones closed.
//! - `guard`: the per-connection budgets against hostile clients (rapid reset,
//!   control-frame floods) and the record of how streams closed.
//!
//! Not supported: server push (never sent), priorities (PRIORITY frames and HEADERS
//! priority fields are parsed and ignored; streams are served round-robin), request
//! trailers (decoded and dropped), response trailers, the dynamic table when encoding
//! (responses use the static table and literals; decoding is full HPACK), h2c upgrade
//! from HTTP/1.1 (`Upgrade: h2c`, removed by RFC 9113), CONNECT tunnels (answered
//! 405 like any method other than GET and HEAD), and SETTINGS_MAX_HEADER_LIST_SIZE
//! from the client (our heads are small).
//!
//! Why not the `h2` crate: it runs on tokio's `AsyncRead`/`AsyncWrite`, while this
//! server is a hand-written level-triggered epoll loop with a C ABI; the frames and
//! HPACK are the shared `perflab-h2` crate's (also used by the load engine).

mod exchange;
mod guard;
mod headers;
mod send;
mod session;
mod stream;
#[cfg(test)]
mod tests;

pub(crate) use exchange::Scratch;
pub(crate) use session::Session;

use crate::config::{Config, Rate};

/// Our SETTINGS_INITIAL_WINDOW_SIZE: how much of a request body a client may send
/// on one stream before we widen the window (we do as the body arrives, up to the
/// body limit, 413 beyond).
pub(crate) const STREAM_WINDOW: u32 = 1 << 20;
/// Our connection receive window (widened from 65,535 right after SETTINGS).
pub(crate) const CONN_WINDOW: u32 = 16 << 20;
/// The largest frame we accept: the default SETTINGS_MAX_FRAME_SIZE, not raised.
pub(crate) const MAX_FRAME: u32 = perflab_h2::MIN_FRAME_SIZE;
/// The default of `--h2-max-streams` (SETTINGS_MAX_CONCURRENT_STREAMS): nginx's and
/// the RFC's recommended minimum of 100, rounded to a power of two.
pub const DEFAULT_MAX_STREAMS: u32 = 128;
/// The default stream-reset budget: nghttp2's since 1.57 (a burst of 1,000, then 33
/// per second). h2load, curl and browsers reset a handful of streams per connection.
pub const DEFAULT_RESET_RATE: Rate = Rate {
    burst: 1000,
    per_sec: 33,
};
/// The default budget of frames that are no request (PING, SETTINGS, PRIORITY, empty
/// frames, unknown types): far above a client's keep-alive PINGs and its few SETTINGS
/// and PRIORITY frames, far below a flood.
pub const DEFAULT_CONTROL_RATE: Rate = Rate {
    burst: 1000,
    per_sec: 100,
};
/// The default bound of CONTINUATION frames per header block: a block at the byte
/// limit needs at most a handful of full-size frames.
pub const DEFAULT_MAX_CONTINUATIONS: u32 = 32;

/// The server's limits that a session enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_streams: u32,
    pub max_header_bytes: usize,
    pub max_body_bytes: usize,
    pub reset_rate: Rate,
    pub control_rate: Rate,
    pub max_continuations: u32,
}

impl Limits {
    pub fn of(c: &Config) -> Limits {
        Limits {
            max_streams: c.h2_max_streams,
            max_header_bytes: c.max_header_bytes,
            max_body_bytes: c.max_body_bytes,
            reset_rate: c.h2_reset_rate,
            control_rate: c.h2_control_rate,
            max_continuations: c.h2_max_continuations,
        }
    }
}
