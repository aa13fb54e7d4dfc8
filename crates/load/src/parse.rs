//! Incremental, zero-copy HTTP/1.1 response parsing.
//!
//! The parser is fed the bytes sitting in a connection's read buffer and says how many
//! it consumed; it never copies them. Heads are parsed by `httparse` (SIMD-accelerated,
//! no allocation); bodies are only *counted* and skipped, since a load generator has no
//! use for their content. Framing follows RFC 9112 §6: no body for HEAD, 1xx, 204 and
//! 304; chunked (with trailers) wins over Content-Length; otherwise Content-Length;
//! otherwise the body runs until the server closes. Heads may have any number of header
//! lines up to 64 KiB in total.

/// Largest response head accepted.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Header slots tried first (on the stack); more fall back to a heap array (rare).
const FAST_HEADERS: usize = 64;
/// Smallest header line is `a:\r\n`, so 64 KiB hold at most this many.
const MAX_HEADERS: usize = MAX_HEAD / 4;
/// A chunk-size line longer than this is malformed.
const MAX_CHUNK_LINE: usize = 4096;

/// Why a response is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed response: {0}")]
pub(crate) struct Malformed(pub &'static str);

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completed {
    /// Status code of the final (non-1xx) head.
    pub status: u16,
    /// The server will close the connection after this response.
    pub close: bool,
    /// Bytes on the wire: heads, framing and body.
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Fixed(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkCrlf,
    Trailers,
    UntilClose,
}

/// Parser of a stream of responses on one connection.
#[derive(Debug)]
pub(crate) struct ResponseParser {
    state: State,
    status: u16,
    close: bool,
    bytes: u64,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser {
            state: State::Head,
            status: 0,
            close: false,
            bytes: 0,
        }
    }
}

struct Head {
    len: usize,
    status: u16,
    close: bool,
    chunked: bool,
    content_length: Option<u64>,
}

impl ResponseParser {
    /// Feeds `buf`; returns the bytes consumed and the response if it completed. Bytes
    /// not consumed (a partial head or chunk line) must be fed again with more behind them.
    pub fn feed(
        &mut self,
        buf: &[u8],
        head_request: bool,
    ) -> Result<(usize, Option<Completed>), Malformed> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.state {
                State::Head => {
                    let Some(h) = parse_head(rest)? else {
                        return Ok((pos, None));
                    };
                    pos += h.len;
                    self.bytes += h.len as u64;
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue; // informational: the real head follows
                    }
                    self.status = h.status;
                    self.close = h.close;
                    if head_request || h.status < 200 || h.status == 204 || h.status == 304 {
                        return Ok((pos, Some(self.finish())));
                    }
                    self.state = if h.chunked {
                        State::ChunkSize
                    } else {
                        match h.content_length {
                            Some(0) => return Ok((pos, Some(self.finish()))),
                            Some(n) => State::Fixed(n),
                            None => {
                                self.close = true;
                                State::UntilClose
                            }
                        }
                    };
                }
                State::Fixed(rem) | State::ChunkData(rem) => {
                    let take = rem.min(rest.len() as u64);
                    pos += take as usize;
                    self.bytes += take;
                    let left = rem - take;
                    match (self.state, left) {
                        (State::Fixed(_), 0) => return Ok((pos, Some(self.finish()))),
                        (State::Fixed(_), n) => self.state = State::Fixed(n),
                        (_, 0) => self.state = State::ChunkCrlf,
                        (_, n) => self.state = State::ChunkData(n),
                    }
                    if left > 0 {
                        return Ok((pos, None));
                    }
                }
                State::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        pos += n;
                        self.bytes += n as u64;
                        self.state = if size == 0 {
                            State::Trailers
                        } else {
                            State::ChunkData(size)
                        };
                    }
                    Ok(httparse::Status::Partial) if rest.len() > MAX_CHUNK_LINE => {
                        return Err(Malformed("chunk size line too long"))
                    }
                    Ok(httparse::Status::Partial) => return Ok((pos, None)),
                    Err(_) => return Err(Malformed("invalid chunk size")),
                },
                State::ChunkCrlf => {
                    if rest.len() < 2 {
                        return Ok((pos, None));
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(Malformed("chunk not followed by CRLF"));
                    }
                    pos += 2;
                    self.bytes += 2;
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    let Some(i) = rest.windows(2).position(|w| w == b"\r\n") else {
                        if rest.len() > MAX_HEAD {
                            return Err(Malformed("trailers exceed 64 KiB"));
                        }
                        return Ok((pos, None));
                    };
                    pos += i + 2;
                    self.bytes += i as u64 + 2;
                    if i == 0 {
                        return Ok((pos, Some(self.finish())));
                    }
                }
                State::UntilClose => {
                    self.bytes += rest.len() as u64;
                    return Ok((buf.len(), None));
                }
            }
        }
    }

    /// The connection reached end-of-file: completes a body delimited by the close.
    pub fn eof(&mut self) -> Option<Completed> {
        (self.state == State::UntilClose).then(|| self.finish())
    }

    /// Forgets any partial response (the connection was dropped).
    pub fn reset(&mut self) {
        *self = ResponseParser::default();
    }

    fn finish(&mut self) -> Completed {
        let c = Completed {
            status: self.status,
            close: self.close,
            bytes: self.bytes,
        };
        self.reset();
        c
    }
}

/// Parses a response head; `Ok(None)` when incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Malformed> {
    let mut fast = [httparse::EMPTY_HEADER; FAST_HEADERS];
    let mut resp = httparse::Response::new(&mut fast);
    match resp.parse(buf) {
        Ok(status) => head_from(&resp, status, buf.len()),
        Err(httparse::Error::TooManyHeaders) => {
            // Rare path: a head with more than 64 header lines. One allocation.
            let mut many = vec![httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut many);
            match resp.parse(buf) {
                Ok(status) => head_from(&resp, status, buf.len()),
                Err(_) => Err(Malformed("invalid response head")),
            }
        }
        Err(_) => Err(Malformed("invalid response head")),
    }
}

fn head_from(
    resp: &httparse::Response<'_, '_>,
    status: httparse::Status<usize>,
    avail: usize,
) -> Result<Option<Head>, Malformed> {
    let len = match status {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial if avail >= MAX_HEAD => {
            return Err(Malformed("response head exceeds 64 KiB"))
        }
        httparse::Status::Partial => return Ok(None),
    };
    if len > MAX_HEAD {
        return Err(Malformed("response head exceeds 64 KiB"));
    }
    let code = resp.code.ok_or(Malformed("no status code"))?;
    let http10 = resp.version == Some(0);
    let mut head = Head {
        len,
        status: code,
        close: http10,
        chunked: false,
        content_length: None,
    };
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = parse_u64(h.value).ok_or(Malformed("invalid Content-Length"))?;
            if head.content_length.is_some_and(|m| m != n) {
                return Err(Malformed("conflicting Content-Length headers"));
            }
            head.content_length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let last = h.value.rsplit(|b| *b == b',').next().unwrap_or(b"");
            head.chunked = trim(last).eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|b| *b == b',').map(trim) {
                if token.eq_ignore_ascii_case(b"close") {
                    head.close = true;
                } else if http10 && token.eq_ignore_ascii_case(b"keep-alive") {
                    head.close = false;
                }
            }
        }
    }
    Ok(Some(head))
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    let b = trim(b);
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter().try_fold(0u64, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + u64::from(c - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` split into pieces of `step` bytes, like reads would deliver it.
    fn run(input: &[u8], step: usize, head: bool) -> Result<Vec<Completed>, Malformed> {
        let mut p = ResponseParser::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                let (n, done) = p.feed(&buf, head)?;
                buf.drain(..n);
                match done {
                    Some(c) => out.push(c),
                    None => break,
                }
            }
        }
        out.extend(p.eof());
        Ok(out)
    }

    #[test]
    fn content_length_keepalive_any_split() {
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        for step in [1, 3, 7, one.len()] {
            let r = run(one, step, false).unwrap();
            assert_eq!(r.len(), 2, "step {step}");
            assert_eq!((r[0].status, r[0].bytes, r[0].close), (200, 43, false));
            assert_eq!(r[1].status, 404);
        }
    }

    #[test]
    fn chunked_with_trailers_and_extensions() {
        let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n";
        for step in [1, 2, 5, msg.len()] {
            let r = run(msg, step, false).unwrap();
            assert_eq!(r.len(), 1, "step {step}");
            assert_eq!(r[0].bytes, msg.len() as u64);
        }
    }

    #[test]
    fn no_body_cases_and_informational() {
        let r = run(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 4, true).unwrap();
        assert_eq!(r.len(), 1);
        let r = run(b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", 5, false).unwrap();
        assert_eq!(
            r.iter().map(|c| c.status).collect::<Vec<_>>(),
            vec![204, 304]
        );
        let r = run(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
            3,
            false,
        )
        .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].status, 200);
    }

    #[test]
    fn close_delimited_and_connection_close() {
        let r = run(b"HTTP/1.0 200 OK\r\n\r\nbody until close", 4, false).unwrap();
        assert_eq!((r.len(), r[0].close), (1, true));
        let r = run(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            64,
            false,
        )
        .unwrap();
        assert!(r[0].close);
        let r = run(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            64,
            false,
        )
        .unwrap();
        assert!(!r[0].close);
    }

    #[test]
    fn many_headers_up_to_64k() {
        let mut msg = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".to_vec();
        for i in 0..3000 {
            msg.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        msg.extend_from_slice(b"\r\nok");
        assert!(msg.len() < MAX_HEAD);
        let r = run(&msg, 1000, false).unwrap();
        assert_eq!(r.len(), 1);
        let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
        huge.extend(
            std::iter::repeat_n(
                b"X-Pad: 0123456789012345678901234567890123456789\r\n".as_slice(),
                2000,
            )
            .flatten(),
        );
        assert!(run(&huge, 4096, false).is_err());
    }

    #[test]
    fn malformed_inputs_are_errors_not_panics() {
        for bad in [
            b"GARBAGE\r\n\r\n".as_slice(),
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc",
        ] {
            assert!(
                run(bad, 3, false).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
