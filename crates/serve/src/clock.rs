//! The `Date:` header line, formatted once per second per worker.
//!
//! Formatting an HTTP date costs far more than the rest of a hello response; the
//! worker refreshes this cache when its loop sees a new second and every response
//! copies the 37 ready bytes. The [`DateCache::tick`] return value tells the worker
//! to rebuild the precomputed hello pages too.

use std::time::{SystemTime, UNIX_EPOCH};

/// `Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n`
#[derive(Debug)]
pub(crate) struct DateCache {
    second: u64,
    line: Vec<u8>,
}

impl DateCache {
    pub fn new() -> DateCache {
        let mut c = DateCache {
            second: u64::MAX,
            line: Vec::with_capacity(40),
        };
        c.tick();
        c
    }

    /// Refreshes the line if the second changed; true when it did.
    pub fn tick(&mut self) -> bool {
        let now = SystemTime::now();
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if second == self.second {
            return false;
        }
        self.second = second;
        self.line.clear();
        self.line.extend_from_slice(b"Date: ");
        self.line
            .extend_from_slice(httpdate::fmt_http_date(now).as_bytes());
        self.line.extend_from_slice(b"\r\n");
        true
    }

    pub fn line(&self) -> &[u8] {
        &self.line
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_shape() {
        let c = super::DateCache::new();
        let s = std::str::from_utf8(c.line()).unwrap();
        assert!(s.starts_with("Date: ") && s.ends_with(" GMT\r\n"), "{s}");
        assert_eq!(s.len(), 37);
    }
}
