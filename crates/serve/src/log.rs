//! The optional access log: one line per request, to stderr.
//!
//! Off by default (it costs a formatted line per request). Each worker formats into
//! its own buffer and writes it with one `write` per event-loop turn, so workers never
//! contend for the stderr lock per request. The format is Common-Log-like, with the
//! HTTP date the responses carry:
//! `127.0.0.1:50412 - - [Tue, 05 May 2026 10:00:00 GMT] "GET / HTTP/1.1" 200 14`.

use std::io::Write;
use std::net::SocketAddr;

use crate::parse::{Head, Version};

#[derive(Debug, Default)]
pub(crate) struct AccessLog {
    buf: Vec<u8>,
}

impl AccessLog {
    /// Records one answered request; `head` is `None` when it could not be parsed.
    pub fn record(
        &mut self,
        peer: SocketAddr,
        date_line: &[u8],
        head: Option<&Head<'_>>,
        status: u16,
        bytes: u64,
    ) {
        // date_line is "Date: <http-date>\r\n".
        let date = date_line
            .get(6..date_line.len().saturating_sub(2))
            .unwrap_or_default();
        let _ = write!(self.buf, "{peer} - - [");
        self.buf.extend_from_slice(date);
        match head {
            Some(h) => {
                let v = match h.version {
                    Version::Http10 => "HTTP/1.0",
                    Version::Http11 => "HTTP/1.1",
                    Version::Http2 => "HTTP/2.0",
                };
                let _ = writeln!(
                    self.buf,
                    "] \"{} {} {v}\" {status} {bytes}",
                    h.method_str, h.target
                );
            }
            None => {
                let _ = writeln!(self.buf, "] \"-\" {status} {bytes}");
            }
        }
    }

    /// Writes the buffered lines to stderr.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            let _ = std::io::stderr().lock().write_all(&self.buf);
            self.buf.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format() {
        let mut log = AccessLog::default();
        let head = crate::parse::parse(b"GET /x HTTP/1.0\r\n\r\n", 1024)
            .unwrap()
            .unwrap();
        let peer: SocketAddr = "127.0.0.1:5".parse().unwrap();
        log.record(
            peer,
            b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
            Some(&head),
            200,
            14,
        );
        log.record(
            peer,
            b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
            None,
            400,
            0,
        );
        assert_eq!(
            String::from_utf8(log.buf).unwrap(),
            "127.0.0.1:5 - - [Sun, 06 Nov 1994 08:49:37 GMT] \"GET /x HTTP/1.0\" 200 14\n\
             127.0.0.1:5 - - [Sun, 06 Nov 1994 08:49:37 GMT] \"-\" 400 0\n"
        );
    }
}
