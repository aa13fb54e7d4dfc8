//! Deciding the answer to one complete request: hello page, dynamic handler, static
//! file, or an error — written into the connection's output buffer.
//!
//! The order is fixed: `hello` mode answers everything without looking at the path
//! (it is the benchmark path, so it does nothing else); otherwise the target is
//! decoded and normalized first (so a handler never sees `..` or bad escapes), then
//! the handler may answer, then GET/HEAD fall back to static files — first the
//! worker's open-file cache, keyed by the path as sent (see `filecache`), then the
//! full path; other known methods get 405, unknown ones 501.

use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

use crate::config::Config;
use crate::filecache::{FileCache, Lookup};
use crate::files::{self, CacheSlot, FileBody, Static, Target};
use crate::hello::HelloPages;
use crate::parse::{Head, Method};
use crate::path;
use crate::request::{Handler, Request};
use crate::response::{write_error, write_error_with, write_response, Wire};

/// The outcome of one request, for the connection and the access log.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    /// Body bytes (written to the buffer or still to send from `file`).
    pub bytes: u64,
    /// A file body to send after the buffered head.
    pub file: Option<FileBody>,
}

impl Reply {
    pub fn status(status: u16, bytes: u64) -> Reply {
        Reply {
            status,
            bytes,
            file: None,
        }
    }
}

/// What a worker knows that every request needs.
#[derive(Debug)]
pub(crate) struct Env<'a> {
    pub config: &'a Config,
    /// Canonical document root.
    pub root: Option<&'a Path>,
    pub date: &'a [u8],
    pub hello: &'a HelloPages,
}

/// Answers one request whose head and body are complete; `cache` is the worker's
/// open-file cache (none when it is off) and `now` the event loop's clock.
#[allow(clippy::too_many_arguments)]
pub(crate) fn respond(
    env: &Env<'_>,
    head: &Head<'_>,
    body: &[u8],
    peer: SocketAddr,
    keep_alive: bool,
    now: Instant,
    cache: Option<&mut FileCache>,
    out: &mut Vec<u8>,
) -> Reply {
    let head_only = head.method == Method::Head;
    if env.config.hello {
        return hello(env, head, keep_alive, out);
    }
    let w = Wire {
        date: env.date,
        keep_alive,
        version: head.version,
    };
    let (encoded_path, query) = match path::split_target(head.target) {
        Ok(t) => t,
        Err(e) => return error(out, e.status(), head_only, &w),
    };
    let mut normalized = None;
    if let Some(handler) = &env.config.handler {
        let n = match path::normalize(encoded_path) {
            Ok(n) => n,
            Err(e) => return error(out, e.status(), head_only, &w),
        };
        let req = Request {
            head,
            path: &n,
            query,
            body,
            peer,
        };
        if let Some(reply) = run_handler(handler, &req, head_only, &w, out) {
            return reply;
        }
        normalized = Some(n);
    }
    let get_or_head = matches!(head.method, Method::Get | Method::Head);
    let st = env.root.map(|root| Static {
        root,
        follow_outside: env.config.follow_outside_symlinks,
        listings: env.config.listings,
    });
    let mut cache = cache;
    if let (Some(st), Some(c), true) = (&st, cache.as_deref_mut(), get_or_head) {
        if let Some(reply) = from_cache(st, c, encoded_path, now, head, &w, out) {
            return reply;
        }
    }
    let normalized = match normalized {
        Some(n) => n,
        None => match path::normalize(encoded_path) {
            Ok(n) => n,
            Err(e) => return error(out, e.status(), head_only, &w),
        },
    };
    if let Some(reply) = refuse_method(head.method, &w, out) {
        return reply;
    }
    let Some(st) = st else {
        return error(out, 404, head_only, &w);
    };
    let t = Target {
        query,
        normalized: &normalized,
    };
    let slot = cache.map(|cache| CacheSlot {
        cache,
        key: encoded_path,
        now,
    });
    files::serve(&st, &t, head, &w, out, slot)
}

/// `hello` mode: the prepared page, whatever the request (the benchmark path).
fn hello(env: &Env<'_>, head: &Head<'_>, keep_alive: bool, out: &mut Vec<u8>) -> Reply {
    let head_only = head.method == Method::Head;
    let page = env.hello.page(keep_alive, head.version, head_only);
    out.extend_from_slice(page);
    let bytes = if head_only {
        0
    } else {
        crate::hello::HELLO_BODY.len()
    };
    Reply::status(200, bytes as u64)
}

/// An error page with `status`.
fn error(out: &mut Vec<u8>, status: u16, head_only: bool, w: &Wire<'_>) -> Reply {
    Reply::status(status, write_error(out, status, head_only, w))
}

/// The dynamic handler's answer, if it gives one (a panic in it is a 500).
fn run_handler(
    handler: &Handler,
    req: &Request<'_>,
    head_only: bool,
    w: &Wire<'_>,
    out: &mut Vec<u8>,
) -> Option<Reply> {
    match catch_unwind(AssertUnwindSafe(|| handler(req))) {
        Ok(Some(resp)) => {
            let bytes = write_response(out, &resp, head_only, w);
            Some(Reply::status(resp.status, bytes))
        }
        Ok(None) => None,
        Err(_) => Some(error(out, 500, head_only, w)),
    }
}

/// The answer from the worker's open-file cache, when it holds a valid entry. The
/// path as sent is the key: a hit skips decoding and every file-system call.
fn from_cache(
    st: &Static<'_>,
    c: &mut FileCache,
    encoded_path: &str,
    now: Instant,
    head: &Head<'_>,
    w: &Wire<'_>,
    out: &mut Vec<u8>,
) -> Option<Reply> {
    match c.get(encoded_path, now) {
        Lookup::Fresh(e) => return Some(files::answer(e, head, w, out)),
        Lookup::Stale(e) => {
            if files::still_valid(st, e) {
                c.confirm(encoded_path, now);
                if let Some(e) = c.peek(encoded_path) {
                    return Some(files::answer(e, head, w, out));
                }
            } else {
                c.remove(encoded_path);
            }
        }
        Lookup::Miss => {}
    }
    None
}

/// Files answer GET and HEAD only: 405 for the other known methods, 501 for the rest.
fn refuse_method(method: Method, w: &Wire<'_>, out: &mut Vec<u8>) -> Option<Reply> {
    match method {
        Method::Get | Method::Head => None,
        Method::Other => Some(error(out, 501, false, w)),
        _ => {
            let allow: &[u8] = b"Allow: GET, HEAD\r\n";
            Some(Reply::status(
                405,
                write_error_with(out, 405, false, w, &[allow]),
            ))
        }
    }
}
