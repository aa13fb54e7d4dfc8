//! Parsing of an HTTP/1.x request head (request line + headers) into a [`Head`].
//!
//! The tokenizing is `httparse` (fast, fuzzed, zero-copy); this module adds the parts
//! of RFC 9112 that decide framing and connection handling: the size limit (431), the
//! keep-alive rules of 1.0 and 1.1, `Content-Length` validation (one value, digits
//! only, duplicates must agree), refusal of `Transfer-Encoding` (the server never reads
//! chunked bodies, and CL+TE together is the request-smuggling shape), and `Host` being
//! mandatory in 1.1. Everything borrows from the read buffer: no allocation.

/// Headers a request may carry before it is refused with 431.
pub const MAX_HEADERS: usize = 64;

/// Request methods the server knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Trace,
    Connect,
    /// A syntactically valid method the server has never heard of (501).
    Other,
}

impl Method {
    fn from_token(m: &str) -> Method {
        match m {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            "PATCH" => Method::Patch,
            "TRACE" => Method::Trace,
            "CONNECT" => Method::Connect,
            _ => Method::Other,
        }
    }
}

/// HTTP version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
    /// A request that came on an HTTP/2 stream (the parser never produces it: the
    /// `h2` module sets it on the head it synthesizes).
    Http2,
}

/// Why a request head was refused; each maps to one status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// 400 Bad Request.
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    /// 431 Request Header Fields Too Large.
    #[error("request head too large")]
    TooLarge,
    /// 501 Not Implemented (transfer codings).
    #[error("transfer-encoding not supported")]
    Unsupported,
}

impl ParseError {
    /// The status code this error is answered with.
    pub fn status(self) -> u16 {
        match self {
            ParseError::Malformed(_) => 400,
            ParseError::TooLarge => 431,
            ParseError::Unsupported => 501,
        }
    }
}

/// A parsed request head. All slices borrow from the buffer given to [`parse`].
#[derive(Debug, Clone)]
pub struct Head<'a> {
    pub method: Method,
    pub method_str: &'a str,
    /// The request target as sent (not decoded).
    pub target: &'a str,
    pub version: Version,
    /// Whether the connection stays open after the response (per version and `Connection`).
    pub keep_alive: bool,
    /// Body length from `Content-Length` (0 when absent).
    pub content_length: u64,
    /// `Expect: 100-continue` was sent.
    pub expect_continue: bool,
    pub host: Option<&'a str>,
    pub if_none_match: Option<&'a str>,
    pub if_modified_since: Option<&'a str>,
    pub range: Option<&'a str>,
    pub if_range: Option<&'a str>,
    /// Bytes taken by the head, including the blank line.
    pub len: usize,
    /// The raw header lines (validated by httparse), for [`Head::headers`].
    raw_headers: &'a [u8],
}

impl<'a> Head<'a> {
    /// All headers, in order, as (name, value) with the value's outer whitespace trimmed.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> {
        self.raw_headers.split(|&b| b == b'\n').filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?;
            Some((name, trim(&line[colon + 1..])))
        })
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b" \t".contains(b))
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b" \t".contains(b))
        .map_or(start, |e| e + 1);
    &v[start..end]
}

/// Parses the head at the start of `buf`. `Ok(None)`: incomplete, read more.
pub fn parse(buf: &[u8], max_head: usize) -> Result<Option<Head<'_>>, ParseError> {
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut storage);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > max_head => return Err(ParseError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::TooLarge),
        Err(httparse::Error::Version) => return Err(ParseError::Malformed("version")),
        Err(_) => return Err(ParseError::Malformed("syntax")),
    };
    if len > max_head {
        return Err(ParseError::TooLarge);
    }
    let (Some(method_str), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(ParseError::Malformed("request line"));
    };
    let version = if minor == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let mut head = Head {
        method: Method::from_token(method_str),
        method_str,
        target,
        version,
        keep_alive: version == Version::Http11,
        content_length: 0,
        expect_continue: false,
        host: None,
        if_none_match: None,
        if_modified_since: None,
        range: None,
        if_range: None,
        len,
        raw_headers: raw_header_block(&buf[..len]),
    };
    apply_headers(&mut head, req.headers)?;
    if head.version == Version::Http11 && head.host.is_none() {
        return Err(ParseError::Malformed("missing Host"));
    }
    Ok(Some(head))
}

/// The bytes between the request line and the blank line.
fn raw_header_block(head: &[u8]) -> &[u8] {
    let start = head
        .iter()
        .position(|&b| b == b'\n')
        .map_or(head.len(), |i| i + 1);
    &head[start..]
}

fn apply_headers<'a>(
    head: &mut Head<'a>,
    headers: &[httparse::Header<'a>],
) -> Result<(), ParseError> {
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    for h in headers {
        let name = h.name;
        let value = std::str::from_utf8(trim(h.value)).ok();
        if name.eq_ignore_ascii_case("content-length") {
            let n = parse_content_length(h.value)?;
            if content_length.is_some_and(|old| old != n) {
                return Err(ParseError::Malformed("conflicting Content-Length"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
        } else if name.eq_ignore_ascii_case("connection") {
            apply_connection(head, h.value);
        } else if name.eq_ignore_ascii_case("host") {
            if head.host.is_some() {
                return Err(ParseError::Malformed("duplicate Host"));
            }
            head.host = Some(value.ok_or(ParseError::Malformed("Host"))?);
        } else if name.eq_ignore_ascii_case("expect") {
            head.expect_continue = value.is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        } else if name.eq_ignore_ascii_case("if-none-match") {
            head.if_none_match = value;
        } else if name.eq_ignore_ascii_case("if-modified-since") {
            head.if_modified_since = value;
        } else if name.eq_ignore_ascii_case("range") {
            head.range = value;
        } else if name.eq_ignore_ascii_case("if-range") {
            head.if_range = value;
        }
    }
    if transfer_encoding {
        // With Content-Length too this is the request-smuggling shape: refuse outright.
        return Err(
            if content_length.is_some() || head.version == Version::Http10 {
                ParseError::Malformed("Transfer-Encoding")
            } else {
                ParseError::Unsupported
            },
        );
    }
    head.content_length = content_length.unwrap_or(0);
    Ok(())
}

fn parse_content_length(v: &[u8]) -> Result<u64, ParseError> {
    let v = trim(v);
    if v.is_empty() || v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return Err(ParseError::Malformed("Content-Length"));
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

fn apply_connection(head: &mut Head<'_>, value: &[u8]) {
    for token in value.split(|&b| b == b',') {
        let t = trim(token);
        if t.eq_ignore_ascii_case(b"close") {
            head.keep_alive = false;
        } else if t.eq_ignore_ascii_case(b"keep-alive") && head.version == Version::Http10 {
            head.keep_alive = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Head<'_> {
        parse(s.as_bytes(), 16384).unwrap().unwrap()
    }

    #[test]
    fn simple_get() {
        let h = ok("GET /a?b HTTP/1.1\r\nHost: x\r\nX-A:  1 \r\n\r\nrest");
        assert_eq!(
            (h.method, h.target, h.version),
            (Method::Get, "/a?b", Version::Http11)
        );
        assert!(h.keep_alive);
        assert_eq!(h.len, 40);
        assert_eq!(h.header("x-a"), Some(&b"1"[..]));
        assert_eq!(h.headers().count(), 2);
    }

    #[test]
    fn keep_alive_rules() {
        assert!(!ok("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!ok("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n").keep_alive);
    }

    #[test]
    fn framing_errors() {
        let e = |s: &str| parse(s.as_bytes(), 16384).unwrap_err();
        assert_eq!(e("GET / HTTP/1.1\r\n\r\n").status(), 400);
        assert_eq!(
            e("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
                .status(),
            400
        );
        assert_eq!(
            e("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n").status(),
            400
        );
        assert_eq!(
            e("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n").status(),
            501
        );
        assert_eq!(
            e("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n").status(),
            400
        );
        assert_eq!(e("GET / HTTP/2.0\r\n\r\n").status(), 400);
        assert_eq!(e("GET\0 / HTTP/1.1\r\n\r\n").status(), 400);
    }

    #[test]
    fn size_limits() {
        let big = format!(
            "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
            "a".repeat(20000)
        );
        assert_eq!(
            parse(big.as_bytes(), 16384).unwrap_err(),
            ParseError::TooLarge
        );
        assert_eq!(
            parse(&big.as_bytes()[..17000], 16384).unwrap_err(),
            ParseError::TooLarge
        );
        let many: String = (0..100).map(|i| format!("X{i}: y\r\n")).collect();
        let req = format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n");
        assert_eq!(
            parse(req.as_bytes(), 16384).unwrap_err(),
            ParseError::TooLarge
        );
    }

    #[test]
    fn incomplete_is_none() {
        assert!(parse(b"GET / HTTP/1.1\r\nHost: a\r\n", 16384)
            .unwrap()
            .is_none());
        assert!(parse(b"", 16384).unwrap().is_none());
    }
}
