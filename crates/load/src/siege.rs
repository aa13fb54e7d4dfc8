//! The siege summary, computed with siege's own definitions so numbers can be compared
//! with published siege studies (`siege -c10 -t10S -b`):
//!
//! - Transactions: responses received (any status).
//! - Availability: transactions / (transactions + socket failures) × 100; 4xx/5xx
//!   responses do not lower it.
//! - Elapsed time: duration of the (recorded) test, s.
//! - Data transferred: bytes received, heads included, in MB of 10^6 bytes — the MB of
//!   the report's `Transfer` / `mbps`, so the two rates agree (siege itself divides by
//!   2^20, which made this block say 8.69 where the report said 8.29 for one run).
//! - Response time: mean time per transaction, s.
//! - Transaction rate: transactions / elapsed time.
//! - Throughput: data transferred / elapsed time, MB/s.
//! - Concurrency: total transaction time / elapsed time (Little's law: the average
//!   number of transactions in progress).
//! - Successful: responses with status < 400. Failed: socket failures + status ≥ 400 —
//!   the report's `failed.requests` (HTTP errors + transport errors), the same number.
//! - Longest / Shortest transaction, s.

use crate::record::Totals;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The report's megabyte (see the module doc).
const MB: f64 = 1e6;

/// Siege's summary fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Siege {
    pub transactions: u64,
    pub availability: f64,
    pub elapsed_time_s: f64,
    pub data_transferred_mb: f64,
    pub response_time_s: f64,
    pub transaction_rate: f64,
    pub throughput_mbps: f64,
    pub concurrency: f64,
    pub successful_transactions: u64,
    pub failed_transactions: u64,
    pub longest_transaction_s: f64,
    pub shortest_transaction_s: f64,
}

impl Siege {
    pub(crate) fn compute(
        t: &Totals,
        hist: &Histogram<u64>,
        socket_failures: u64,
        failed_status: u64,
        elapsed: f64,
    ) -> Siege {
        let trans = t.requests;
        let per_sec = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
        let (mean_s, min_s, max_s) = if hist.is_empty() {
            (0.0, 0.0, 0.0)
        } else {
            (
                hist.mean() / 1e6,
                hist.min() as f64 / 1e6,
                hist.max() as f64 / 1e6,
            )
        };
        let attempts = trans + socket_failures;
        Siege {
            transactions: trans,
            availability: if attempts == 0 {
                0.0
            } else {
                100.0 * trans as f64 / attempts as f64
            },
            elapsed_time_s: elapsed,
            data_transferred_mb: t.bytes as f64 / MB,
            response_time_s: mean_s,
            transaction_rate: per_sec(trans as f64),
            throughput_mbps: per_sec(t.bytes as f64 / MB),
            concurrency: per_sec(mean_s * trans as f64),
            successful_transactions: trans.saturating_sub(failed_status),
            failed_transactions: socket_failures + failed_status,
            longest_transaction_s: max_s,
            shortest_transaction_s: min_s,
        }
    }
}

impl fmt::Display for Siege {
    /// The block siege prints at the end of a run.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Transactions:              {:>12} hits",
            self.transactions
        )?;
        writeln!(
            f,
            "Availability:              {:>12.2} %",
            self.availability
        )?;
        writeln!(
            f,
            "Elapsed time:              {:>12.2} secs",
            self.elapsed_time_s
        )?;
        writeln!(
            f,
            "Data transferred:          {:>12.2} MB",
            self.data_transferred_mb
        )?;
        writeln!(
            f,
            "Response time:             {:>12.4} secs",
            self.response_time_s
        )?;
        writeln!(
            f,
            "Transaction rate:          {:>12.2} trans/sec",
            self.transaction_rate
        )?;
        writeln!(
            f,
            "Throughput:                {:>12.2} MB/sec",
            self.throughput_mbps
        )?;
        writeln!(f, "Concurrency:               {:>12.2}", self.concurrency)?;
        writeln!(
            f,
            "Successful transactions:   {:>12}",
            self.successful_transactions
        )?;
        writeln!(
            f,
            "Failed transactions:       {:>12}",
            self.failed_transactions
        )?;
        writeln!(
            f,
            "Longest transaction:       {:>12.4}",
            self.longest_transaction_s
        )?;
        write!(
            f,
            "Shortest transaction:      {:>12.4}",
            self.shortest_transaction_s
        )
    }
}
