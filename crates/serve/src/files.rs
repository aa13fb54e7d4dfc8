//! Static files: lookup, conditional requests (ETag / Last-Modified → 304), single
//! byte ranges (206 / 416), `index.html`, directory redirects and listings.
//!
//! The head goes into the connection's output buffer; the body is not read here but
//! handed back as a [`FileBody`] that the connection sends with `sendfile` (zero copy)
//! after the head. Validators follow nginx: ETag `"<mtime hex>-<size hex>"`, and
//! `If-None-Match` takes precedence over `If-Modified-Since` (RFC 9110 §13.2.2).

use std::fs::{File, Metadata};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::dispatch::Reply;
use crate::listing;
use crate::mime;
use crate::parse::Head;
use crate::path::{self, ResolveError};
use crate::response::{end_head, start_head, write_error, write_error_with, Wire};

/// A file body still to be sent: `[offset, end)` of `file`.
#[derive(Debug)]
pub(crate) struct FileBody {
    pub file: File,
    pub offset: u64,
    pub end: u64,
}

/// Settings the static part needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Static<'a> {
    /// Canonical root directory.
    pub root: &'a Path,
    pub follow_outside: bool,
    pub listings: bool,
}

/// What the request asked for, already split and normalized.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub query: Option<&'a str>,
    pub normalized: &'a str,
}

/// Serves a GET or HEAD for a static path.
pub(crate) fn serve(
    st: &Static<'_>,
    t: &Target<'_>,
    head: &Head<'_>,
    w: &Wire<'_>,
    out: &mut Vec<u8>,
) -> Reply {
    let head_only = head.method == crate::parse::Method::Head;
    let resolved = match path::resolve(st.root, t.normalized, st.follow_outside) {
        Ok(p) => p,
        Err(e) => return error(e, head_only, w, out),
    };
    let meta = match std::fs::metadata(&resolved) {
        Ok(m) => m,
        Err(e) => return error(e.into(), head_only, w, out),
    };
    if meta.is_dir() {
        if !t.normalized.ends_with('/') {
            return redirect_to_dir(t, head_only, w, out);
        }
        let index = format!("{}index.html", t.normalized);
        if let Ok(index) = path::resolve(st.root, &index, st.follow_outside) {
            if index.is_file() {
                return file(&index, head, w, out);
            }
        }
        if !st.listings {
            return error(ResolveError::Forbidden, head_only, w, out);
        }
        return match listing::render(&resolved, t.normalized) {
            Ok(html) => html_page(html.as_bytes(), head_only, w, out),
            Err(e) => error(e.into(), head_only, w, out),
        };
    }
    if !meta.is_file() {
        return error(ResolveError::Forbidden, head_only, w, out);
    }
    file(&resolved, head, w, out)
}

fn error(e: ResolveError, head_only: bool, w: &Wire<'_>, out: &mut Vec<u8>) -> Reply {
    Reply::status(e.status(), write_error(out, e.status(), head_only, w))
}

fn redirect_to_dir(t: &Target<'_>, head_only: bool, w: &Wire<'_>, out: &mut Vec<u8>) -> Reply {
    // Built from the normalized path, re-encoded: the raw target could start with
    // `//`, which a browser reads as another host (an open redirect).
    let mut loc = String::from("Location: ");
    for seg in t.normalized.split('/').filter(|s| !s.is_empty()) {
        loc.push('/');
        listing::percent_encode(seg.as_bytes(), &mut loc);
    }
    loc.push('/');
    if let Some(q) = t.query {
        loc.push('?');
        loc.push_str(q);
    }
    loc.push_str("\r\n");
    Reply::status(
        301,
        write_error_with(out, 301, head_only, w, &[loc.as_bytes()]),
    )
}

fn html_page(body: &[u8], head_only: bool, w: &Wire<'_>, out: &mut Vec<u8>) -> Reply {
    start_head(out, 200, w);
    out.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n");
    end_head(out, Some(body.len() as u64), w);
    if head_only {
        return Reply::status(200, 0);
    }
    out.extend_from_slice(body);
    Reply::status(200, body.len() as u64)
}

/// Validators of a file: (ETag, Last-Modified as HTTP date, mtime in whole seconds).
fn validators(meta: &Metadata) -> (String, String, SystemTime) {
    let secs = u64::try_from(meta.mtime()).unwrap_or(0);
    let mtime = UNIX_EPOCH + Duration::from_secs(secs);
    let etag = format!("\"{:x}-{:x}\"", secs, meta.len());
    (etag, httpdate::fmt_http_date(mtime), mtime)
}

/// True when the client's cached copy is current (answer 304).
fn not_modified(head: &Head<'_>, etag: &str, mtime: SystemTime) -> bool {
    if let Some(inm) = head.if_none_match {
        let weak = |t: &str| t.trim().trim_start_matches("W/").to_string();
        let ours = weak(etag);
        return inm.trim() == "*" || inm.split(',').any(|t| weak(t) == ours);
    }
    match head.if_modified_since.map(httpdate::parse_http_date) {
        Some(Ok(since)) => mtime <= since,
        _ => false,
    }
}

/// A single byte range resolved against the file size.
#[derive(Debug, PartialEq, Eq)]
enum Range {
    /// Ignore the header and send everything.
    Full,
    /// `[start, end]` inclusive.
    Part(u64, u64),
    Unsatisfiable,
}

fn parse_range(value: &str, size: u64) -> Range {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return Range::Full;
    };
    if spec.contains(',') {
        return Range::Full; // multiple ranges: allowed to answer with the whole file
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return Range::Full;
    };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())).then(|| s.parse().ok())?
    };
    match (a.is_empty(), num(a), num(b)) {
        (true, _, Some(0)) => Range::Unsatisfiable,
        (true, _, Some(_)) if size == 0 => Range::Unsatisfiable,
        (true, _, Some(n)) => Range::Part(size - n.min(size), size - 1),
        (false, Some(start), _) if start >= size => Range::Unsatisfiable,
        (false, Some(start), None) if b.is_empty() => Range::Part(start, size - 1),
        (false, Some(start), Some(end)) if end >= start => Range::Part(start, end.min(size - 1)),
        _ => Range::Full,
    }
}

fn file(p: &Path, head: &Head<'_>, w: &Wire<'_>, out: &mut Vec<u8>) -> Reply {
    let head_only = head.method == crate::parse::Method::Head;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(p);
    let f = match opened {
        Ok(f) => f,
        Err(e) => return error(e.into(), head_only, w, out),
    };
    let meta = match f.metadata() {
        Ok(m) if m.is_file() => m,
        Ok(_) => return error(ResolveError::Forbidden, head_only, w, out),
        Err(e) => return error(e.into(), head_only, w, out),
    };
    let size = meta.len();
    let (etag, last_modified, mtime) = validators(&meta);
    let validator_lines = format!("ETag: {etag}\r\nLast-Modified: {last_modified}\r\n");
    if not_modified(head, &etag, mtime) {
        start_head(out, 304, w);
        out.extend_from_slice(validator_lines.as_bytes());
        end_head(out, None, w);
        return Reply::status(304, 0);
    }
    let if_range_ok = head
        .if_range
        .is_none_or(|v| v.trim() == etag || v.trim() == last_modified);
    let range = match head.range {
        Some(r) if if_range_ok => parse_range(r, size),
        _ => Range::Full,
    };
    let (status, start, end) = match range {
        Range::Full => (200, 0, size),
        Range::Part(a, b) => (206, a, b + 1),
        Range::Unsatisfiable => {
            let cr = format!("Content-Range: bytes */{size}\r\n");
            return Reply::status(
                416,
                write_error_with(out, 416, head_only, w, &[cr.as_bytes()]),
            );
        }
    };
    start_head(out, status, w);
    let _ = write!(out, "Content-Type: {}\r\n", mime::content_type(p));
    out.extend_from_slice(validator_lines.as_bytes());
    out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
    if status == 206 {
        let _ = write!(out, "Content-Range: bytes {start}-{}/{size}\r\n", end - 1);
    }
    end_head(out, Some(end - start), w);
    if head_only || start == end {
        return Reply::status(status, 0);
    }
    Reply {
        status,
        bytes: end - start,
        file: Some(FileBody {
            file: f,
            offset: start,
            end,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use Range::*;
        assert_eq!(parse_range("bytes=0-0", 10), Part(0, 0));
        assert_eq!(parse_range("bytes=2-", 10), Part(2, 9));
        assert_eq!(parse_range("bytes=-3", 10), Part(7, 9));
        assert_eq!(parse_range("bytes=-30", 10), Part(0, 9));
        assert_eq!(parse_range("bytes=5-100", 10), Part(5, 9));
        assert_eq!(parse_range("bytes=10-", 10), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 10), Unsatisfiable);
        assert_eq!(parse_range("bytes=-1", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-2", 10), Full);
        assert_eq!(parse_range("bytes=0-1,3-4", 10), Full);
        assert_eq!(parse_range("items=0-1", 10), Full);
        assert_eq!(parse_range("bytes=x-1", 10), Full);
        assert_eq!(parse_range("bytes=+1-2", 10), Full);
    }
}
