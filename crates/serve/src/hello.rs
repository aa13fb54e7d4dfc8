//! The `hello` mode: one fixed small page for every request, fully precomputed.
//!
//! Each worker keeps the three possible responses (1.1 keep-alive, 1.0 keep-alive,
//! close) as ready bytes, rebuilt only when the `Date` second changes; answering a
//! request is one `extend_from_slice` into the output buffer (HEAD takes the head
//! part only). This is what the serve-vs-nginx benchmark measures.

use crate::parse::Version;
use crate::response::{connection_line, end_head, start_head, Wire};

/// The page served in hello mode.
pub const HELLO_BODY: &[u8] = b"Hello, world!\n";

#[derive(Debug, Default)]
pub(crate) struct HelloPages {
    /// (bytes, head length) for: 1.1 keep-alive, 1.0 keep-alive, close.
    pages: [(Vec<u8>, usize); 3],
}

impl HelloPages {
    pub fn rebuild(&mut self, date: &[u8]) {
        let variants = [
            (true, Version::Http11),
            (true, Version::Http10),
            (false, Version::Http11),
        ];
        for (slot, (keep_alive, version)) in self.pages.iter_mut().zip(variants) {
            let out = &mut slot.0;
            out.clear();
            let w = Wire {
                date,
                keep_alive,
                version,
            };
            start_head(out, 200, &w);
            out.extend_from_slice(b"Content-Type: text/plain\r\n");
            end_head(out, Some(HELLO_BODY.len() as u64), &w);
            slot.1 = out.len();
            out.extend_from_slice(HELLO_BODY);
            debug_assert!(connection_line(keep_alive, version).len() < 30);
        }
    }

    /// The response bytes for one request.
    pub fn page(&self, keep_alive: bool, version: Version, head_only: bool) -> &[u8] {
        let i = match (keep_alive, version) {
            (true, Version::Http11 | Version::Http2) => 0,
            (true, Version::Http10) => 1,
            (false, _) => 2,
        };
        let (bytes, head_len) = &self.pages[i];
        if head_only {
            &bytes[..*head_len]
        } else {
            bytes
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_differ_by_connection() {
        let mut p = HelloPages::default();
        p.rebuild(b"Date: x\r\n");
        let ka = std::str::from_utf8(p.page(true, Version::Http11, false)).unwrap();
        assert!(ka.ends_with("\r\n\r\nHello, world!\n") && !ka.contains("Connection"));
        let c = std::str::from_utf8(p.page(false, Version::Http10, true)).unwrap();
        assert!(c.contains("Connection: close\r\n") && c.ends_with("\r\n\r\n"));
    }
}
