//! The bridge between an HTTP/2 stream and the server's one request handler.
//!
//! A request arrives as an HPACK header block; it leaves as the HTTP/1.1 request head
//! that means the same thing (`GET /path HTTP/1.1`, `host:` from `:authority`, the
//! regular fields as lines), which goes through `parse::parse` and
//! `dispatch::respond` exactly like a request read from an HTTP/1.1 connection. So
//! the hello page, the handler, the file cache, validators and 304s, ranges, listings,
//! every status code and error page are the HTTP/1.1 path's, by construction; there is
//! no second implementation of any of it to keep in step. Before the head is written,
//! the fields are checked against RFC 9113 §8.2–8.3 (lower-case names, no CR/LF/NUL,
//! no connection-specific fields, pseudo-fields first, once each, the required ones
//! present): a malformed request is a stream error, never a header injected into the
//! synthesized head.
//!
//! The response `dispatch` writes (an HTTP/1.1 head, maybe a body, maybe a file body
//! to send after it) is turned back into a HEADERS block: `:status` from the status
//! line, each header lower-cased, the connection-specific ones dropped. Encoding uses
//! `perflab_h2::hpack`'s static-table encoder (no dynamic table), so a block depends
//! only on the head's bytes — and the worker keeps the last few heads with their
//! blocks ([`Memo`]): a file answered from the cache produces the same head bytes,
//! `Date` included, for a whole second, so the hot path compares ~250 bytes and copies
//! a ready block instead of encoding. Every buffer here is the worker's ([`Scratch`]),
//! reused for every request of every connection: nothing is allocated per request
//! once they have grown (HPACK decoding is `loona-hpack`'s and may allocate for
//! Huffman-coded strings).

use std::net::SocketAddr;

use perflab_h2::hpack::{self, CompressionError};

use crate::conn::Io;
use crate::dispatch::{self, Reply};
use crate::files::FileBody;
use crate::parse::{self, Version};
use crate::response::{write_error, Wire};

/// How many response heads the worker remembers with their encoded blocks.
const MEMO_ENTRIES: usize = 8;

/// Buffers of one worker, shared by all its HTTP/2 connections.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// The synthesized HTTP/1.1 request head.
    pub req: Vec<u8>,
    method: Vec<u8>,
    path: Vec<u8>,
    authority: Vec<u8>,
    /// Regular fields as `name: value\r\n` lines.
    fields: Vec<u8>,
    /// What `dispatch` wrote: an HTTP/1.1 head and maybe a body.
    resp: Vec<u8>,
    memo: Memo,
}

/// Recent response heads and their HPACK blocks.
#[derive(Debug, Default)]
struct Memo {
    entries: [(Vec<u8>, Vec<u8>); MEMO_ENTRIES],
    next: usize,
}

impl Memo {
    /// The block for `head`, encoded now unless it was seen recently.
    fn block(&mut self, head: &[u8]) -> &[u8] {
        let i = match self.entries.iter().position(|(h, _)| h == head) {
            Some(i) => i,
            None => {
                let i = self.next;
                self.next = (i + 1) % MEMO_ENTRIES;
                let (h, b) = &mut self.entries[i];
                h.clear();
                h.extend_from_slice(head);
                encode_head(head, b);
                i
            }
        };
        &self.entries[i].1
    }
}

/// What decoding a request's header block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// A well-formed request: its head is in `Scratch::req`; `declared` is its
    /// `content-length`, if it sent one.
    Request { declared: Option<u64> },
    /// Breaks RFC 9113 §8: answered with RST_STREAM(PROTOCOL_ERROR).
    Malformed,
    /// Fields beyond the header limit: answered 431.
    TooLarge,
}

/// Fields that HTTP/2 forbids (RFC 9113 §8.2.2).
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

fn name_ok(name: &[u8]) -> bool {
    !name.is_empty()
        && name
            .iter()
            .all(|&b| b > 0x20 && b < 0x7f && b != b':' && !b.is_ascii_uppercase())
}

fn value_ok(v: &[u8]) -> bool {
    !v.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0)
}

impl Scratch {
    /// Decodes a request block into `self.req` (HPACK state advances even when the
    /// request turns out malformed, as it must). `limit` bounds the head's size.
    pub fn decode_request(
        &mut self,
        dec: &mut hpack::Decoder,
        block: &[u8],
        limit: usize,
    ) -> Result<Decoded, CompressionError> {
        self.method.clear();
        self.path.clear();
        self.authority.clear();
        self.fields.clear();
        let (mut has_method, mut has_path, mut has_scheme, mut has_authority) =
            (false, false, false, false);
        let (mut regular, mut malformed, mut too_large) = (false, false, false);
        let mut declared = None;
        // The size of the whole list, every field counted (as it would stand in an
        // HTTP/1.1 head), pseudo-fields and a dropped `host` included.
        let mut list = 0usize;
        let fields = &mut self.fields;
        let (method, path, authority) = (&mut self.method, &mut self.path, &mut self.authority);
        // Once the request is known to be malformed or too large, no more fields are
        // looked at: the rest of the block costs only its HPACK upkeep (an attacker's
        // block of references to one large table entry would otherwise be validated
        // and copied field by field, its cost set by the decoded size, not the block).
        dec.decode_while(block, |name, value| {
            list += name.len() + value.len() + 4;
            if list > limit {
                too_large = true;
                return false;
            }
            if !value_ok(value) {
                malformed = true;
                return false;
            }
            if let Some(pseudo) = name.strip_prefix(b":") {
                let (seen, dst) = match pseudo {
                    b"method" => (&mut has_method, Some(&mut *method)),
                    b"path" => (&mut has_path, Some(&mut *path)),
                    b"authority" => (&mut has_authority, Some(&mut *authority)),
                    b"scheme" => (&mut has_scheme, None),
                    _ => {
                        malformed = true;
                        return false;
                    }
                };
                malformed |= regular || *seen;
                *seen = true;
                if let Some(d) = dst {
                    d.extend_from_slice(value);
                }
                return !malformed;
            }
            regular = true;
            if !name_ok(name)
                || connection_specific(name)
                || (name == b"te" && value != b"trailers")
            {
                malformed = true;
                return false;
            }
            if name == b"host" && has_authority {
                return true; // :authority wins (RFC 9113 §8.3.1)
            }
            if name == b"content-length" {
                declared = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            fields.extend_from_slice(name);
            fields.extend_from_slice(b": ");
            fields.extend_from_slice(value);
            fields.extend_from_slice(b"\r\n");
            true
        })?;
        if too_large && !malformed {
            // Fields after the limit were not read: the pseudo-fields may be unseen.
            return Ok(Decoded::TooLarge);
        }
        let connect = self.method == b"CONNECT";
        let path_ok = self.path.iter().all(|&b| b > 0x20 && b != 0x7f);
        if malformed
            || !has_method
            || (!connect && (!has_scheme || self.path.is_empty()))
            || !path_ok
            || !self.method.iter().all(|&b| b > 0x20 && b < 0x7f)
        {
            return Ok(Decoded::Malformed);
        }
        let req = &mut self.req;
        req.clear();
        req.extend_from_slice(&self.method);
        req.push(b' ');
        req.extend_from_slice(if connect { &self.authority } else { &self.path });
        req.extend_from_slice(b" HTTP/1.1\r\n");
        if has_authority || !contains_host(&self.fields) {
            req.extend_from_slice(b"host: ");
            req.extend_from_slice(&self.authority);
            req.extend_from_slice(b"\r\n");
        }
        req.extend_from_slice(&self.fields);
        req.extend_from_slice(b"\r\n");
        Ok(Decoded::Request { declared })
    }
}

fn contains_host(fields: &[u8]) -> bool {
    fields
        .split(|&b| b == b'\n')
        .any(|line| line.starts_with(b"host:"))
}

/// A response ready to frame: its HEADERS block, the body bytes `dispatch` wrote, and
/// a body still to read from the file cache or a file.
pub(crate) struct Answer<'a> {
    pub block: &'a [u8],
    pub inline: &'a [u8],
    pub file: Option<FileBody>,
}

/// Answers the request whose HTTP/1.1 head is `req` (complete, from
/// [`Scratch::decode_request`]) and whose body is `body` — or, with `status`, answers
/// that error page instead (431, 413).
pub(crate) fn respond<'s>(
    io: &'s mut Io<'_, '_>,
    peer: SocketAddr,
    req: &[u8],
    body: &[u8],
    status: Option<u16>,
) -> Answer<'s> {
    let sc = &mut *io.scratch;
    sc.resp.clear();
    let w = Wire {
        date: io.env.date,
        keep_alive: true,
        version: Version::Http2,
    };
    let parsed = match status {
        Some(s) => Err(s),
        None => match parse::parse(req, io.env.config.max_header_bytes) {
            Ok(Some(h)) => Ok(h),
            Ok(None) => Err(400),
            Err(e) => Err(e.status()),
        },
    };
    let reply = match parsed {
        Ok(mut head) => {
            head.version = Version::Http2;
            head.keep_alive = true;
            let cache = io.cache.as_deref_mut();
            let r = dispatch::respond(io.env, &head, body, peer, true, io.now, cache, &mut sc.resp);
            if let Some(log) = io.log.as_deref_mut() {
                log.record(peer, io.env.date, Some(&head), r.status, r.bytes);
            }
            r
        }
        Err(s) => {
            let r = Reply::status(s, write_error(&mut sc.resp, s, false, &w));
            if let Some(log) = io.log.as_deref_mut() {
                log.record(peer, io.env.date, None, r.status, r.bytes);
            }
            r
        }
    };
    *io.requests += 1;
    let head_len = sc
        .resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(sc.resp.len(), |p| p + 4);
    let (head, inline) = sc.resp.split_at(head_len);
    Answer {
        block: sc.memo.block(head),
        inline,
        file: reply.file,
    }
}

/// Encodes an HTTP/1.1 response head as an HPACK block: `:status`, then each header
/// lower-cased, without the fields HTTP/2 forbids.
fn encode_head(head: &[u8], block: &mut Vec<u8>) {
    block.clear();
    let mut lines = head.split(|&b| b == b'\n');
    let status = lines
        .next()
        .and_then(|l| l.get(9..12))
        .unwrap_or(b"500".as_slice());
    hpack::encode_field(block, b":status", status);
    let mut lower = [0u8; 64];
    let mut long = Vec::new();
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue; // the blank line ending the head
        };
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        let name: &[u8] = if name.len() <= lower.len() {
            let l = &mut lower[..name.len()];
            l.copy_from_slice(name);
            l.make_ascii_lowercase();
            l
        } else {
            long.clear();
            long.extend(name.iter().map(u8::to_ascii_lowercase));
            &long
        };
        if !connection_specific(name) {
            hpack::encode_field(block, name, value);
        }
    }
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| b != b' ').unwrap_or(v.len());
    let end = v.iter().rposition(|&b| b != b' ').map_or(start, |e| e + 1);
    &v[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_block(block: &[u8]) -> Vec<(String, String)> {
        let mut d = hpack::Decoder::default();
        let mut v = Vec::new();
        d.decode(block, |n, val| {
            v.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(val).into_owned(),
            ))
        })
        .unwrap();
        v
    }

    fn request(fields: &[(&str, &str)]) -> (Decoded, String) {
        let block = hpack::encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        let mut s = Scratch::default();
        let d = s
            .decode_request(&mut hpack::Decoder::default(), &block, 16 << 10)
            .unwrap();
        (d, String::from_utf8_lossy(&s.req).into_owned())
    }

    const GET: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/a?b=1"),
        (":authority", "x:1"),
    ];

    #[test]
    fn a_request_becomes_the_equivalent_http1_head() {
        let mut f = GET.to_vec();
        f.extend([("accept", "*/*"), ("host", "ignored"), ("cookie", "a=1")]);
        let (d, head) = request(&f);
        assert_eq!(d, Decoded::Request { declared: None });
        assert_eq!(
            head,
            "GET /a?b=1 HTTP/1.1\r\nhost: x:1\r\naccept: */*\r\ncookie: a=1\r\n\r\n"
        );
        let (_, no_authority) = request(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("host", "h"),
        ]);
        assert_eq!(no_authority, "GET / HTTP/1.1\r\nhost: h\r\n\r\n");
    }

    #[test]
    fn malformed_requests_are_refused_not_synthesized() {
        let with = |extra: (&str, &str)| {
            let mut f = GET.to_vec();
            f.push(extra);
            request(&f).0
        };
        assert_eq!(with(("x", "a\r\nevil: 1")), Decoded::Malformed);
        assert_eq!(with(("X-Upper", "1")), Decoded::Malformed);
        assert_eq!(with(("connection", "close")), Decoded::Malformed);
        assert_eq!(with(("te", "gzip")), Decoded::Malformed);
        assert_eq!(with((":method", "GET")), Decoded::Malformed, "duplicate");
        assert_eq!(with((":protocol", "ws")), Decoded::Malformed);
        assert_eq!(
            with(("te", "trailers")),
            Decoded::Request { declared: None }
        );
        assert_eq!(
            request(&[("accept", "*"), (":method", "GET")]).0,
            Decoded::Malformed,
            "pseudo after regular"
        );
        assert_eq!(request(&GET[..2]).0, Decoded::Malformed, "no :path");
        let (d, _) = request(&[(":method", "GET"), (":scheme", "http"), (":path", "/a b")]);
        assert_eq!(d, Decoded::Malformed);
        assert_eq!(
            with(("content-length", "12")),
            Decoded::Request { declared: Some(12) }
        );
        assert_eq!(with(("x", &"y".repeat(20_000))), Decoded::TooLarge);
    }

    #[test]
    fn response_heads_encode_lower_case_without_connection_fields() {
        let mut b = Vec::new();
        encode_head(
            b"HTTP/1.1 404 Not Found\r\nDate: x\r\nContent-Type: text/html\r\n\
              Connection: close\r\nX-Long-Header-Name-That-Goes-On-And-On-Well-Beyond-Sixty-Four-Bytes: 1\r\n\r\n",
            &mut b,
        );
        let got = decode_block(&b);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                ":status",
                "date",
                "content-type",
                "x-long-header-name-that-goes-on-and-on-well-beyond-sixty-four-bytes"
            ]
        );
        assert_eq!(got[0].1, "404");
        assert_eq!(got[2].1, "text/html");
    }

    #[test]
    fn the_memo_returns_the_same_block_for_the_same_head() {
        let mut m = Memo::default();
        let a = m.block(b"HTTP/1.1 200 OK\r\nA: 1\r\n\r\n").to_vec();
        let b = m.block(b"HTTP/1.1 304 Not Modified\r\n\r\n").to_vec();
        assert_ne!(a, b);
        assert_eq!(m.block(b"HTTP/1.1 200 OK\r\nA: 1\r\n\r\n"), a);
        assert_eq!(m.next, 2, "a hit encodes nothing");
    }
}
