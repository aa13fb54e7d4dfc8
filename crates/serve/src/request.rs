//! The request a dynamic [`Handler`] sees.
//!
//! It borrows everything from the connection's read buffer (method, target, headers,
//! body), so calling a handler costs no copy; only the decoded path may allocate, and
//! only when the target held percent escapes.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::parse::{Head, Version};
use crate::response::Response;

/// A dynamic request handler: `Some(response)` answers, `None` falls back to static
/// files. Called concurrently from every worker thread, so it must be `Sync`.
pub type Handler = Arc<dyn Fn(&Request<'_>) -> Option<Response> + Send + Sync>;

/// One HTTP request, as given to a [`Handler`].
#[derive(Debug)]
pub struct Request<'a> {
    pub(crate) head: &'a Head<'a>,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) body: &'a [u8],
    pub(crate) peer: SocketAddr,
}

impl<'a> Request<'a> {
    /// The method as sent (`GET`, `POST`, ...).
    pub fn method(&self) -> &'a str {
        self.head.method_str
    }
    /// The percent-decoded, normalized path, always starting with `/` (`/a/b`, `/dir/`).
    pub fn path(&self) -> &'a str {
        self.path
    }
    /// The raw (still encoded) query string, without the `?`.
    pub fn query(&self) -> Option<&'a str> {
        self.query
    }
    /// The request target exactly as sent.
    pub fn target(&self) -> &'a str {
        self.head.target
    }
    /// `"HTTP/1.0"`, `"HTTP/1.1"` or `"HTTP/2"`.
    pub fn version(&self) -> &'static str {
        match self.head.version {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2",
        }
    }
    /// The first header of this name (case-insensitive), if its value is UTF-8.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.head
            .header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
    }
    /// All headers in order, values as raw bytes.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> {
        self.head.headers()
    }
    /// The value of a cookie sent in `Cookie` headers.
    pub fn cookie(&self, name: &str) -> Option<&'a str> {
        self.head
            .headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
    /// The request body (`Content-Length` bytes; empty when none).
    pub fn body(&self) -> &'a [u8] {
        self.body
    }
    /// The client's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
}
