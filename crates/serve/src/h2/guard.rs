//! What one HTTP/2 connection may cost the server: per-connection budgets for the
//! frames that cost us work without being a request.
//!
//! Current practice after the 2023 rapid-reset attacks (CVE-2023-44487) and the
//! 2024 CONTINUATION floods is the same in nghttp2, Go's net/http, Envoy and HAProxy:
//! a connection may do a little of what a hostile client does a lot of — reset
//! streams, send PINGs, SETTINGS, PRIORITY, empty frames — and one that does too
//! much is told GOAWAY(ENHANCE_YOUR_CALM) and closed, so its cost stays a small
//! multiple of a well-behaved client's. The budgets are token buckets ([`Bucket`]):
//! a burst a browser or a load generator never reaches, refilled at a steady rate
//! (nghttp2's stream-reset limit is a burst of 1,000 refilled at 33/s; ours defaults
//! to the same). A bucket per connection needs no clock of its own: the worker's
//! `now` of the event is enough.

use std::time::Instant;

use crate::config::Rate;

/// A token bucket: `burst` tokens, refilled at `per_sec`.
#[derive(Debug, Clone)]
pub(super) struct Bucket {
    tokens: f64,
    burst: f64,
    per_sec: f64,
    last: Option<Instant>,
}

impl Bucket {
    pub fn new(rate: Rate) -> Bucket {
        Bucket {
            tokens: f64::from(rate.burst),
            burst: f64::from(rate.burst),
            per_sec: f64::from(rate.per_sec),
            last: None,
        }
    }

    /// Takes one token at `now`: `false` when the budget is spent.
    pub fn take(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.per_sec).min(self.burst);
        }
        self.last = Some(now);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

/// How a stream ended, which decides what a late frame on it means (RFC 9113 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closed {
    /// Both sides sent END_STREAM: more DATA or HEADERS is a connection error
    /// STREAM_CLOSED.
    Ended,
    /// The client reset it: more DATA, HEADERS or WINDOW_UPDATE is a stream error
    /// STREAM_CLOSED.
    ByPeer,
    /// We reset it (or refused or ignored it): what the client had in flight is
    /// ignored, as §5.1 requires.
    ByUs,
}

/// How many recently closed streams are remembered with how they closed. Older ones
/// are treated as [`Closed::ByUs`] (frames ignored), the lenient reading.
const RECENT: usize = 256;

/// The last [`RECENT`] streams that closed, and how.
#[derive(Debug, Default)]
pub(super) struct Recent {
    ring: Vec<(u32, Closed)>,
    next: usize,
}

impl Recent {
    pub fn record(&mut self, id: u32, how: Closed) {
        if self.ring.len() < RECENT {
            self.ring.push((id, how));
        } else {
            self.ring[self.next] = (id, how);
            self.next = (self.next + 1) % RECENT;
        }
    }

    /// How stream `id` closed, if it is one of the recent ones.
    pub fn get(&self, id: u32) -> Option<Closed> {
        self.ring
            .iter()
            .rev()
            .find(|(i, _)| *i == id)
            .map(|&(_, h)| h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let t0 = Instant::now();
        let mut b = Bucket::new(Rate {
            burst: 3,
            per_sec: 10,
        });
        assert!((0..3).all(|_| b.take(t0)));
        assert!(!b.take(t0));
        assert!(
            b.take(t0 + Duration::from_millis(100)),
            "one token in 100 ms"
        );
        assert!(!b.take(t0 + Duration::from_millis(100)));
        assert!(
            (0..3).all(|_| b.take(t0 + Duration::from_secs(60))),
            "capped"
        );
        assert!(!b.take(t0 + Duration::from_secs(60)));
    }

    #[test]
    fn recent_streams_remember_how_they_closed() {
        let mut r = Recent::default();
        for id in (1..2 * RECENT as u32).step_by(2) {
            r.record(id, Closed::Ended);
        }
        r.record(1001, Closed::ByPeer);
        assert_eq!(r.get(1001), Some(Closed::ByPeer));
        assert_eq!(r.get(1), None, "forgotten");
        assert_eq!(r.get(511), Some(Closed::Ended));
    }
}
