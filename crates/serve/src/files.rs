//! Static files: lookup, conditional requests (ETag / Last-Modified → 304), single
//! byte ranges (206 / 416), `index.html`, directory redirects and listings.
//!
//! A found file becomes an [`Entry`] (validators, the 200 head precomputed, the body
//! in memory when small and cached, else the open descriptor), which [`answer`]
//! answers from — the same code whether the entry was just opened or came from the
//! worker's `filecache`. The head goes into the connection's output buffer; a body
//! kept open is handed back as a [`FileBody`] that the connection sends with
//! `sendfile` (zero copy) after the head. Validators follow nginx: ETag `"<mtime hex>-<size hex>"`, and
//! `If-None-Match` takes precedence over `If-Modified-Since` (RFC 9110 §13.2.2).

use std::fs::{File, Metadata};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::dispatch::Reply;
use crate::filecache::{Body, Entry, FileCache, FileId};
use crate::listing;
use crate::mime;
use crate::parse::Head;
use crate::path::{self, ResolveError};
use crate::response::{end_head, start_head, write_error, write_error_with, Wire};

/// A body still to be sent after the buffered head: `[offset, end)` of `src`.
#[derive(Debug)]
pub(crate) struct FileBody {
    pub src: Source,
    pub offset: u64,
    pub end: u64,
}

/// Where a pending body's bytes are (both shared with the cache).
#[derive(Debug)]
pub(crate) enum Source {
    /// Sent with `sendfile`.
    File(Rc<File>),
    /// Sent from memory together with the head (`sendmsg` of two buffers).
    Memory(Rc<[u8]>),
}

/// In-memory bodies up to this size are copied after the head (one buffer, one
/// `send`); larger ones are sent from the cache's copy without copying.
const COPY_MAX: u64 = 16 << 10;

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

/// Where the cache (if any) keeps what this request finds: under `key` (the path as
/// sent), checked at `now`.
pub(crate) struct CacheSlot<'a> {
    pub cache: &'a mut FileCache,
    pub key: &'a str,
    pub now: Instant,
}

/// Where a normalized path leads, after every check.
enum Located {
    File(PathBuf),
    /// A directory asked for without its trailing slash.
    Redirect,
    /// A directory without an index file.
    Listing(PathBuf),
}

fn locate(st: &Static<'_>, normalized: &str) -> Result<Located, ResolveError> {
    let resolved = path::resolve(st.root, normalized, st.follow_outside)?;
    let meta = std::fs::metadata(&resolved)?;
    if meta.is_dir() {
        if !normalized.ends_with('/') {
            return Ok(Located::Redirect);
        }
        let index = format!("{normalized}index.html");
        if let Ok(index) = path::resolve(st.root, &index, st.follow_outside) {
            if index.is_file() {
                return Ok(Located::File(index));
            }
        }
        if !st.listings {
            return Err(ResolveError::Forbidden);
        }
        return Ok(Located::Listing(resolved));
    }
    if !meta.is_file() {
        return Err(ResolveError::Forbidden);
    }
    Ok(Located::File(resolved))
}

/// Re-makes the checks that led to `e` and `stat`s the file: true when the same
/// path still leads to the same, unchanged file.
pub(crate) fn still_valid(st: &Static<'_>, e: &Entry) -> bool {
    match locate(st, &e.normalized) {
        Ok(Located::File(p)) if p == e.canon => {
            std::fs::metadata(&p).is_ok_and(|m| FileId::of(&m) == e.id)
        }
        _ => false,
    }
}

/// Serves a GET or HEAD for a static path, caching the file it finds when `cache`.
pub(crate) fn serve(
    st: &Static<'_>,
    t: &Target<'_>,
    head: &Head<'_>,
    w: &Wire<'_>,
    out: &mut Vec<u8>,
    cache: Option<CacheSlot<'_>>,
) -> Reply {
    let head_only = head.method == crate::parse::Method::Head;
    match locate(st, t.normalized) {
        Err(e) => error(e, head_only, w, out),
        Ok(Located::Redirect) => redirect_to_dir(t, head_only, w, out),
        Ok(Located::Listing(dir)) => match listing::render(&dir, t.normalized) {
            Ok(html) => html_page(html.as_bytes(), head_only, w, out),
            Err(e) => error(e.into(), head_only, w, out),
        },
        Ok(Located::File(p)) => {
            let small = cache.as_ref().map(|c| c.cache.config().small);
            let entry = match open(&p, t.normalized, small) {
                Ok(e) => e,
                Err(e) => return error(e, head_only, w, out),
            };
            let reply = answer(&entry, head, w, out);
            if let Some(c) = cache {
                c.cache.insert(c.key, entry, c.now);
            }
            reply
        }
    }
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
        fn weak(t: &str) -> &str {
            let t = t.trim();
            t.strip_prefix("W/").unwrap_or(t)
        }
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

/// Opens a located file (refusing a symlink swapped in since) and builds its entry:
/// the body read into memory when it is at most `small` bytes (caching), else kept open.
fn open(p: &Path, normalized: &str, small: Option<u64>) -> Result<Entry, ResolveError> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(p)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(ResolveError::Forbidden);
    }
    let size = meta.len();
    let (etag, last_modified, mtime) = validators(&meta);
    let content_type = mime::content_type(p);
    let mut head200 = Vec::with_capacity(160);
    let _ = write!(
        head200,
        "Content-Type: {content_type}\r\nETag: {etag}\r\nLast-Modified: {last_modified}\r\n\
         Accept-Ranges: bytes\r\nContent-Length: {size}\r\n"
    );
    let body = match small {
        Some(limit) if size <= limit => {
            let mut bytes = vec![0; size as usize];
            match f.read_exact_at(&mut bytes, 0) {
                Ok(()) => Body::Memory(Rc::from(bytes)),
                Err(_) => Body::File(Rc::new(f)), // it shrank: sendfile will notice
            }
        }
        _ => Body::File(Rc::new(f)),
    };
    Ok(Entry {
        normalized: normalized.into(),
        canon: p.to_path_buf(),
        id: FileId::of(&meta),
        size,
        mtime,
        content_type,
        etag: etag.into(),
        last_modified: last_modified.into(),
        head200: head200.into_boxed_slice(),
        body,
    })
}

fn validator_lines(e: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(b"ETag: ");
    out.extend_from_slice(e.etag.as_bytes());
    out.extend_from_slice(b"\r\nLast-Modified: ");
    out.extend_from_slice(e.last_modified.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Answers GET/HEAD from a file's entry: 304, 206, 416 or 200. A plain 200 — the hot
/// path of a cached file — copies precomputed bytes and formats nothing.
pub(crate) fn answer(e: &Entry, head: &Head<'_>, w: &Wire<'_>, out: &mut Vec<u8>) -> Reply {
    let head_only = head.method == crate::parse::Method::Head;
    let size = e.size;
    if (head.if_none_match.is_some() || head.if_modified_since.is_some())
        && not_modified(head, &e.etag, e.mtime)
    {
        start_head(out, 304, w);
        validator_lines(e, out);
        end_head(out, None, w);
        return Reply::status(304, 0);
    }
    let if_range_ok = head
        .if_range
        .is_none_or(|v| v.trim() == &*e.etag || v.trim() == &*e.last_modified);
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
    if status == 200 {
        out.extend_from_slice(&e.head200);
        end_head(out, None, w);
    } else {
        let _ = write!(out, "Content-Type: {}\r\n", e.content_type);
        validator_lines(e, out);
        out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
        let _ = write!(out, "Content-Range: bytes {start}-{}/{size}\r\n", end - 1);
        end_head(out, Some(end - start), w);
    }
    if head_only || start == end {
        return Reply::status(status, 0);
    }
    let file = match &e.body {
        Body::Memory(bytes) if end - start <= COPY_MAX => {
            out.extend_from_slice(&bytes[start as usize..end as usize]);
            None
        }
        Body::Memory(bytes) => Some(FileBody {
            src: Source::Memory(Rc::clone(bytes)),
            offset: start,
            end,
        }),
        Body::File(f) => Some(FileBody {
            src: Source::File(Rc::clone(f)),
            offset: start,
            end,
        }),
    };
    Reply {
        status,
        bytes: end - start,
        file,
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
