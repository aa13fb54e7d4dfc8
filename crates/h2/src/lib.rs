//! perflab-h2: the HTTP/2 wire format (RFC 9113) shared by perflab's load engine
//! (`perflab-load`, the client) and its server (`perflab-serve`): frame heads, the
//! frames both sides write, SETTINGS, error codes, and HPACK header blocks (`hpack`).
//!
//! Only the wire format lives here, no I/O and no connection state machine: each side
//! keeps its own, inside its own event loop. Why not the `h2` crate: it is built on
//! tokio's `AsyncRead`/`AsyncWrite` and its own task wake-ups, while the load engine is
//! one mio (epoll) loop per thread that writes pre-serialised request bytes and parses
//! responses in place, and the server is a hand-written epoll loop with a C ABI. Putting
//! either on a tokio runtime would bring back the per-request allocations and wake-ups
//! the engine exists to avoid (oha, on hyper and h2, is the comparison:
//! `bench/http-vs-peers.sh`). The frames are a few hundred lines, and so is HPACK:
//! `loona-hpack` was tried first and built a hash map of the Huffman code for every
//! Huffman string it decoded — 65 % of the client's CPU against nginx (perf), 9.4 k
//! req/s where h2load did 57 k — so decoding is ours too, and skips the fields nobody
//! asked for.

pub mod frame;
pub mod hpack;
pub mod huffman;
pub mod settings;

pub use frame::{FrameError, Head};
pub use settings::Settings;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The frame header's length.
pub const HEAD_LEN: usize = 9;

/// Frame types.
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Error codes (RFC 9113 §7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const INTERNAL_ERROR: u32 = 0x2;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const SETTINGS_TIMEOUT: u32 = 0x4;
    pub const STREAM_CLOSED: u32 = 0x5;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const CANCEL: u32 = 0x8;
    pub const COMPRESSION_ERROR: u32 = 0x9;
    pub const CONNECT_ERROR: u32 = 0xa;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
    pub const INADEQUATE_SECURITY: u32 = 0xc;
    pub const HTTP_1_1_REQUIRED: u32 = 0xd;
}

/// The name of an error code, as the RFC spells it (`UNKNOWN` for others).
pub fn code_name(c: u32) -> &'static str {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(c as usize).copied().unwrap_or("UNKNOWN")
}

/// The largest flow-control window (2^31 - 1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The initial flow-control window of a connection and of every stream.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The smallest (and default) SETTINGS_MAX_FRAME_SIZE.
pub const MIN_FRAME_SIZE: u32 = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE (2^24 - 1).
pub const MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
