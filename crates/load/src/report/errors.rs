//! What failed: the JSON contract's error classes ([`Errors`]), the finer kinds the
//! engine tells apart ([`ErrorKinds`]), the one "did anything fail?" answer
//! ([`Failed`]), and the requests still waiting at the end counted as stalled.

use crate::conn::ErrorKind;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Failed requests by kind, as in the JSON contract.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    /// All failed requests.
    pub total: u64,
    /// Connect failures (refused, unreachable) and TLS failures (`error_kinds.tls`).
    pub connect: u64,
    /// Connect timeouts, request (read) timeouts and requests stalled at the end
    /// (`error_kinds.stalled`).
    pub timeout: u64,
    /// Connections reset by the server.
    pub reset: u64,
    /// Responses that broke the protocol: HTTP/1.1's grammar, HTTP/2's framing, or
    /// the client's HTTP/2 bounds (`error_kinds.header_block_too_large`,
    /// `output_queue_full`, `flow_control`).
    pub malformed: u64,
    /// Server closed the connection before the response was complete.
    pub closed: u64,
}

/// "Did anything fail?", answered once: failed requests, split into responses that
/// came back with an HTTP error status (400 or more) and requests that got no response
/// at all (transport errors: [`Errors::total`]). The text, the JSON (`failed`), the
/// siege block (`Failed transactions`), the per-target table (its HTTP errors add up
/// to `http_errors`), the stored metrics (`errors`, `http_errors`,
/// `transport_errors`) and a failed trial's message all carry these three numbers
/// under these names. Threshold verdicts are a third, separate answer (the gate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failed {
    /// Every failed request: `http_errors + transport_errors`.
    pub requests: u64,
    /// Responses with a status of 400 or more.
    pub http_errors: u64,
    /// Requests that got no response (connect, timeout, reset, malformed, closed).
    pub transport_errors: u64,
}

impl Failed {
    /// The counts, from the two kinds.
    pub fn new(http_errors: u64, transport_errors: u64) -> Failed {
        Failed {
            requests: http_errors + transport_errors,
            http_errors,
            transport_errors,
        }
    }

    /// `200 failed requests (HTTP errors 200, transport errors 0)`.
    pub fn summary(&self) -> String {
        format!(
            "{} failed requests (HTTP errors {}, transport errors {})",
            self.requests, self.http_errors, self.transport_errors
        )
    }
}

/// The finer split of [`Errors`]: the thirteen kinds the engine tells apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorKinds {
    pub connect_refused: u64,
    pub connect_timeout: u64,
    pub read_timeout: u64,
    pub reset: u64,
    pub malformed: u64,
    pub closed_early: u64,
    /// TLS handshakes that failed (certificate verification included) and TLS records
    /// that broke on open connections; counted under [`Errors::connect`].
    pub tls: u64,
    /// HTTP/2 streams the server reset (RST_STREAM); counted under [`Errors::reset`].
    pub rst_stream: u64,
    /// HTTP/2 requests a GOAWAY left unprocessed; counted under [`Errors::closed`].
    pub goaway: u64,
    /// HTTP/2 requests on a connection whose server sent a header block over the
    /// client's bound (bytes or CONTINUATION frames); under [`Errors::malformed`].
    #[serde(default)]
    pub header_block_too_large: u64,
    /// HTTP/2 requests on a connection closed because its control-frame replies (PING
    /// and SETTINGS acknowledgements) queued past their bound while the socket did not
    /// drain; under [`Errors::malformed`].
    #[serde(default)]
    pub output_queue_full: u64,
    /// HTTP/2 requests failed by a window taken past 2^31-1 (FLOW_CONTROL_ERROR: the
    /// stream's request, or every request of the connection); under
    /// [`Errors::malformed`].
    #[serde(default)]
    pub flow_control: u64,
    /// Requests still unanswered at the end of the run after more than
    /// [`stalled_after`] (the ones under it stay `cancelled_at_end`), and one for each
    /// connection still connecting for that long (TCP made, the TLS or HTTP/2 opening
    /// never finished); under [`Errors::timeout`].
    #[serde(default)]
    pub stalled: u64,
}

/// The least a request still in flight at the end must have waited to count as
/// stalled: max(1 s, 10 × the run's p99), `p99_us` in µs (0 when nothing completed).
pub fn stalled_after(p99_us: u64) -> std::time::Duration {
    std::time::Duration::from_micros(p99_us.saturating_mul(10)).max(STALLED_FLOOR)
}

/// The floor of [`stalled_after`].
const STALLED_FLOOR: std::time::Duration = std::time::Duration::from_secs(1);

/// How many of the requests (or connects) cut off by the end waited past
/// [`stalled_after`] the run's p99 (`ages` and `hist` in µs).
pub(super) fn stalled(ages: &Histogram<u64>, hist: &Histogram<u64>) -> u64 {
    let p99 = if hist.is_empty() {
        0
    } else {
        hist.value_at_quantile(0.99)
    };
    let bound = stalled_after(p99).as_micros() as u64;
    ages.iter_recorded()
        .filter(|v| ages.lowest_equivalent(v.value_iterated_to()) > bound)
        .map(|v| v.count_at_value())
        .sum()
}

impl ErrorKinds {
    /// The per-kind error counters, by name.
    pub(super) fn from_counts(e: &[u64]) -> ErrorKinds {
        let k = |kind: ErrorKind| e[kind as usize];
        ErrorKinds {
            connect_refused: k(ErrorKind::Connect),
            connect_timeout: k(ErrorKind::ConnectTimeout),
            read_timeout: k(ErrorKind::Timeout),
            reset: k(ErrorKind::Reset),
            malformed: k(ErrorKind::Malformed),
            closed_early: k(ErrorKind::Closed),
            tls: k(ErrorKind::Tls),
            rst_stream: k(ErrorKind::StreamReset),
            goaway: k(ErrorKind::GoAway),
            header_block_too_large: k(ErrorKind::HeaderBlockTooLarge),
            output_queue_full: k(ErrorKind::OutputQueueFull),
            flow_control: k(ErrorKind::FlowControl),
            stalled: k(ErrorKind::Stalled),
        }
    }
}

impl Errors {
    /// The contract's coarser classes, folded from the kinds.
    pub(super) fn from_kinds(k: &ErrorKinds, total: u64) -> Errors {
        Errors {
            total,
            connect: k.connect_refused + k.tls,
            timeout: k.connect_timeout + k.read_timeout + k.stalled,
            reset: k.reset + k.rst_stream,
            malformed: k.malformed
                + k.header_block_too_large
                + k.output_queue_full
                + k.flow_control,
            closed: k.closed_early + k.goaway,
        }
    }
}
