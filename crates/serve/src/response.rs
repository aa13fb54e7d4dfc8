//! Responses: the public [`Response`] a handler returns, and the crate's helpers that
//! write status lines and headers straight into a connection's output buffer.
//!
//! The writers append to a reused `Vec<u8>` (no per-request allocation once the
//! buffer has grown) and always frame with `Content-Length`; user headers that would
//! break framing (`Content-Length`, `Transfer-Encoding`, `Connection`) or that carry
//! CR/LF (header injection) are dropped.

use std::io::Write;

use crate::parse::Version;

/// A response from a dynamic handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// An empty response with this status.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
    /// 200 with an HTML body.
    pub fn html(body: impl Into<Vec<u8>>) -> Response {
        Response::new(200)
            .header("Content-Type", "text/html; charset=utf-8")
            .body(body)
    }
    /// 200 with a plain-text body.
    pub fn text(body: impl Into<Vec<u8>>) -> Response {
        Response::new(200)
            .header("Content-Type", "text/plain; charset=utf-8")
            .body(body)
    }
    /// A redirect (301, 302, 303, 307, 308) to `location`.
    pub fn redirect(status: u16, location: &str) -> Response {
        Response::new(status).header("Location", location)
    }
    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Response {
        self.body = body.into();
        self
    }
}

/// The reason phrase of a status code.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// What every response head needs from its connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wire<'a> {
    /// A full `Date: ...\r\n` line (see `clock`).
    pub date: &'a [u8],
    pub keep_alive: bool,
    pub version: Version,
}

/// Writes the status line, `Date` and `Server`.
pub(crate) fn start_head(out: &mut Vec<u8>, status: u16, w: &Wire<'_>) {
    match status {
        200 => out.extend_from_slice(b"HTTP/1.1 200 OK\r\n"), // the hot path formats nothing
        _ => {
            let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
        }
    }
    out.extend_from_slice(w.date);
    out.extend_from_slice(b"Server: perflab\r\n");
}

/// Writes `Content-Length` (if given), `Connection` as needed, and the blank line.
pub(crate) fn end_head(out: &mut Vec<u8>, content_length: Option<u64>, w: &Wire<'_>) {
    if let Some(n) = content_length {
        let _ = write!(out, "Content-Length: {n}\r\n");
    }
    out.extend_from_slice(connection_line(w.keep_alive, w.version));
    out.extend_from_slice(b"\r\n");
}

pub(crate) fn connection_line(keep_alive: bool, version: Version) -> &'static [u8] {
    match (keep_alive, version) {
        (false, _) => b"Connection: close\r\n",
        (true, Version::Http10) => b"Connection: keep-alive\r\n",
        (true, Version::Http11 | Version::Http2) => b"",
    }
}

/// Writes a small HTML error page (no body for HEAD). Returns body bytes written.
pub(crate) fn write_error(out: &mut Vec<u8>, status: u16, head_only: bool, w: &Wire<'_>) -> u64 {
    write_error_with(out, status, head_only, w, &[])
}

/// Like [`write_error`], with extra raw header lines (each ending in CRLF).
pub(crate) fn write_error_with(
    out: &mut Vec<u8>,
    status: u16,
    head_only: bool,
    w: &Wire<'_>,
    extra: &[&[u8]],
) -> u64 {
    let reason = reason(status);
    // "<!DOCTYPE html><title>" + code + " " + reason + "</title><h1>" ... "</h1>\n"
    let len = 22 + 3 + 1 + reason.len() + 12 + 3 + 1 + reason.len() + 6;
    start_head(out, status, w);
    out.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n");
    for line in extra {
        out.extend_from_slice(line);
    }
    end_head(out, Some(len as u64), w);
    if head_only {
        return 0;
    }
    let start = out.len();
    let _ = writeln!(
        out,
        "<!DOCTYPE html><title>{status} {reason}</title><h1>{status} {reason}</h1>"
    );
    debug_assert_eq!(out.len() - start, len);
    len as u64
}

fn header_ok(name: &str, value: &str) -> bool {
    let framing = [
        "content-length",
        "transfer-encoding",
        "connection",
        "date",
        "server",
    ];
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
        && !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
        && !framing.iter().any(|f| name.eq_ignore_ascii_case(f))
}

/// Writes a handler's response. Returns body bytes written.
pub(crate) fn write_response(
    out: &mut Vec<u8>,
    r: &Response,
    head_only: bool,
    w: &Wire<'_>,
) -> u64 {
    let status = if (100..1000).contains(&r.status) && r.status / 100 != 1 {
        r.status
    } else {
        500
    };
    start_head(out, status, w);
    for (name, value) in r.headers.iter().filter(|(n, v)| header_ok(n, v)) {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let bodiless = status == 204 || status == 304;
    end_head(out, (!bodiless).then_some(r.body.len() as u64), w);
    if head_only || bodiless {
        return 0;
    }
    out.extend_from_slice(&r.body);
    r.body.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Wire<'static> = Wire {
        date: b"Date: x\r\n",
        keep_alive: true,
        version: Version::Http11,
    };

    #[test]
    fn error_page_length_matches() {
        for status in [400, 404, 408, 431, 501] {
            let mut out = Vec::new();
            let n = write_error(&mut out, status, false, &W);
            let text = String::from_utf8(out).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert_eq!(body.len() as u64, n);
            assert!(head.contains(&format!("Content-Length: {n}")));
        }
    }

    #[test]
    fn injected_headers_are_dropped() {
        let r = Response::text("x")
            .header("X-Ok", "1")
            .header("X-Bad", "a\r\nSet-Cookie: evil")
            .header("Content-Length", "99");
        let mut out = Vec::new();
        write_response(&mut out, &r, false, &W);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("X-Ok: 1\r\n"));
        assert!(!text.contains("evil"));
        assert!(text.contains("Content-Length: 1\r\n"));
        assert!(!text.contains("99"));
    }
}
