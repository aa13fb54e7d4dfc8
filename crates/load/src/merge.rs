//! Reports of one load run by several generators (a distributed load's agents) added
//! into one, and the histogram codec they travel with.
//!
//! Counts add (requests, bytes, errors by kind, statuses, connections); rates are
//! recomputed over the longest part's duration (the parts ran side by side, started on
//! one signal); latency percentiles come from the parts' latency histograms *added* —
//! a percentile is never averaged, since the mean of two p99s is the p99 of no
//! distribution. The CPU figures keep the worst part: a saturated agent makes the
//! whole measurement suspect ([`Report::client_saturated`]). Histograms travel as
//! HdrHistogram's compressed V2 encoding (`V2DeflateSerializer`) in base64, the form
//! every HdrHistogram implementation reads and the interval log uses.

use crate::record::{new_histogram, Totals};
use crate::report::{Report, SATURATED_WARNING};
use crate::series::SecondPoint;
use crate::siege::Siege;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// A histogram as base64 of its compressed V2 encoding.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut out = Vec::new();
    // Serializing into a Vec cannot fail for the histograms the engine makes.
    let _ = V2DeflateSerializer::new().serialize(h, &mut out);
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// Reads back what [`encode_histogram`] wrote (or any V2 / compressed V2 encoding).
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("a histogram that is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("a histogram that is not HdrHistogram V2: {e:?}"))
}

impl Report {
    /// This report with its latency histograms (a report read back from JSON has
    /// empty ones: they travel apart, [`encode_histogram`]).
    pub fn with_histograms(
        mut self,
        corrected: Histogram<u64>,
        uncorrected: Option<Histogram<u64>>,
    ) -> Report {
        self.histogram = corrected;
        self.histogram_uncorrected = uncorrected;
        self
    }

    /// The parts of one run, made side by side by several generators, as one report
    /// (see the module doc for how each figure combines). `None` for no parts.
    pub fn merge(parts: &[Report]) -> Option<Report> {
        let first = parts.first()?;
        let mut hist = new_histogram();
        let mut unc: Option<Histogram<u64>> = None;
        let mut r = first.clone();
        r.requests = 0;
        r.bytes = 0;
        r.connections = 0;
        r.threads = 0;
        r.cancelled_at_end = 0;
        r.late = 0;
        r.reconnects = 0;
        r.connections_opened = 0;
        r.errors = Default::default();
        r.error_kinds = Default::default();
        r.status = BTreeMap::new();
        r.protocols = BTreeMap::new();
        r.warnings = Vec::new();
        r.targets = Vec::new();
        r.steps = Vec::new();
        r.target_rate = None;
        let (mut cpu_s, mut failed_status, mut duration) = (0.0, 0u64, 0f64);
        for p in parts {
            let _ = hist.add(&p.histogram);
            if let Some(u) = &p.histogram_uncorrected {
                let _ = unc.get_or_insert_with(new_histogram).add(u);
            }
            r.requests += p.requests;
            r.bytes += p.bytes;
            r.connections += p.connections;
            r.threads += p.threads;
            r.cancelled_at_end += p.cancelled_at_end;
            r.late += p.late;
            r.reconnects += p.reconnects;
            r.connections_opened += p.connections_opened;
            add_errors(&mut r, p);
            for (k, v) in &p.status {
                *r.status.entry(k.clone()).or_default() += v;
            }
            for (k, v) in &p.protocols {
                *r.protocols.entry(k.clone()).or_default() += v;
            }
            for w in &p.warnings {
                if !r.warnings.contains(w) {
                    r.warnings.push(w.clone());
                }
            }
            if let Some(t) = p.target_rate {
                *r.target_rate.get_or_insert(0.0) += t;
            }
            cpu_s += p.client_cpu_per_req_us * p.requests as f64 / 1e6;
            failed_status += p.failed().saturating_sub(p.errors.total);
            duration = duration.max(p.duration_s);
            r.client_busy = r.client_busy.max(p.client_busy);
            r.client_wait = r.client_wait.max(p.client_wait);
            r.interrupted |= p.interrupted;
            if r.tls_failure.is_none() {
                r.tls_failure.clone_from(&p.tls_failure);
            }
        }
        let per_sec = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
        r.duration_s = duration;
        r.rps = per_sec(r.requests as f64);
        r.mbps = per_sec(r.bytes as f64) / 1e6;
        r.client_cpu_per_req_us = if r.requests > 0 {
            cpu_s * 1e6 / r.requests as f64
        } else {
            0.0
        };
        r.client_saturated = parts.iter().any(|p| p.client_saturated);
        if r.client_saturated && !r.warnings.iter().any(|w| w == SATURATED_WARNING) {
            r.warnings.push(SATURATED_WARNING.to_string());
        }
        r.latency_ms = crate::Latency::from_histogram(&hist);
        r.effective_concurrency = r.little();
        r.latency_uncorrected_ms = unc.as_ref().map(crate::Latency::from_histogram);
        let totals = Totals {
            requests: r.requests,
            bytes: r.bytes,
            ..Totals::default()
        };
        r.siege = Siege::compute(&totals, &hist, r.errors.total, failed_status, duration);
        r.failed = crate::report::Failed::new(failed_status, r.errors.total);
        engines_differ(&mut r, parts);
        r.series = merge_series(parts.iter().map(|p| p.series.as_slice()));
        r.histogram = hist;
        r.histogram_uncorrected = unc;
        Some(r)
    }
}

/// Agents that ran different I/O engines measured differently (the engines' latency
/// clocks and in-flight behaviour differ): the merged report says so.
fn engines_differ(r: &mut Report, parts: &[Report]) {
    let mut engines: Vec<&str> = parts.iter().map(|p| p.io.name()).collect();
    engines.sort_unstable();
    engines.dedup();
    if engines.len() > 1 {
        r.warnings.push(format!(
            "the agents ran different I/O engines ({}): their latencies are not measured \
             the same way; set `io` to one of them for every agent",
            engines.join(", ")
        ));
    }
}

fn add_errors(r: &mut Report, p: &Report) {
    let (e, q) = (&mut r.errors, &p.errors);
    e.total += q.total;
    e.connect += q.connect;
    e.timeout += q.timeout;
    e.reset += q.reset;
    e.malformed += q.malformed;
    e.closed += q.closed;
    let (k, q) = (&mut r.error_kinds, &p.error_kinds);
    k.connect_refused += q.connect_refused;
    k.connect_timeout += q.connect_timeout;
    k.read_timeout += q.read_timeout;
    k.reset += q.reset;
    k.malformed += q.malformed;
    k.closed_early += q.closed_early;
    k.tls += q.tls;
    k.rst_stream += q.rst_stream;
    k.goaway += q.goaway;
    k.header_block_too_large += q.header_block_too_large;
    k.output_queue_full += q.output_queue_full;
    k.flow_control += q.flow_control;
    k.stalled += q.stalled;
}

/// The parts' per-second series, second by second: counts add, the rate is recomputed
/// over the second's longest length; the second's p99 is the highest of the parts'
/// (an upper bound: the parts' seconds' histograms are not here — a caller that has
/// them replaces it with [`second_p99`]).
pub fn merge_series<'a>(parts: impl Iterator<Item = &'a [SecondPoint]>) -> Vec<SecondPoint> {
    let mut by: BTreeMap<u64, SecondPoint> = BTreeMap::new();
    for series in parts {
        for p in series {
            let m = by.entry(p.second).or_insert(SecondPoint {
                second: p.second,
                duration_s: 0.0,
                requests: 0,
                errors: 0,
                rps: 0.0,
                p99_ms: 0.0,
            });
            m.duration_s = m.duration_s.max(p.duration_s);
            m.requests += p.requests;
            m.errors += p.errors;
            m.p99_ms = m.p99_ms.max(p.p99_ms);
        }
    }
    by.into_values()
        .map(|mut m| {
            m.rps = if m.duration_s > 0.0 {
                m.requests as f64 / m.duration_s
            } else {
                0.0
            };
            m
        })
        .collect()
}

/// The 99th percentile, in ms, of histograms (of µs) added together.
pub fn second_p99<'a>(hists: impl Iterator<Item = &'a Histogram<u64>>) -> f64 {
    let mut sum = new_histogram();
    for h in hists {
        let _ = sum.add(h);
    }
    if sum.is_empty() {
        0.0
    } else {
        sum.value_at_quantile(0.99) as f64 / 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(latencies_us: &[u64], secs: f64) -> Report {
        let mut h = new_histogram();
        for l in latencies_us {
            h.record(*l).unwrap();
        }
        let totals = Totals {
            requests: latencies_us.len() as u64,
            bytes: 100 * latencies_us.len() as u64,
            ..Totals::default()
        };
        let phase = crate::series::PhaseResult {
            hist: h,
            hist_uncorrected: None,
            series: Vec::new(),
            totals,
            elapsed: std::time::Duration::from_secs_f64(secs),
        };
        Report::from_phases(&[&phase], crate::Mode::Closed, 2, 1)
    }

    #[test]
    fn percentiles_come_from_the_added_histograms() {
        // 900 fast requests on one agent, 100 slow ones on the other: the merged p99
        // is a slow one; averaging the two p99s would say ~5 ms.
        let a = part(&[1_000; 900], 2.0);
        let b = part(&[9_000; 100], 2.0);
        let m = Report::merge(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(m.requests, 1000);
        assert_eq!(m.bytes, 100_000);
        assert_eq!(m.connections, 4);
        assert!((m.rps - 500.0).abs() < 1e-9);
        assert!(
            (m.latency_ms.p99 - 9.0).abs() < 0.01,
            "{}",
            m.latency_ms.p99
        );
        assert!((m.latency_ms.p50 - 1.0).abs() < 0.01);
        assert_eq!(m.siege.transactions, 1000);
    }

    #[test]
    fn agents_on_different_engines_are_reported_and_failures_add_up() {
        let mut a = part(&[1_000; 10], 1.0);
        let b = part(&[1_000; 10], 1.0);
        a.io = crate::Io::Uring;
        a.siege.failed_transactions = 3; // three 404s on a
        let same = Report::merge(&[b.clone(), b.clone()]).unwrap();
        assert!(same.warnings.iter().all(|w| !w.contains("engines")));
        let m = Report::merge(&[a, b]).unwrap();
        assert!(
            m.warnings
                .iter()
                .any(|w| w.contains("different I/O engines (epoll, uring)")),
            "{:?}",
            m.warnings
        );
        assert_eq!(m.failed, crate::report::Failed::new(3, 0));
        assert_eq!(m.siege.failed_transactions, m.failed.requests);
    }

    #[test]
    fn a_report_travels_as_json_and_a_histogram_as_base64() {
        let a = part(&[1_500, 2_500, 40_000], 1.0);
        let text = serde_json::to_string(&a).unwrap();
        let back: Report = serde_json::from_str(&text).unwrap();
        let h = decode_histogram(&encode_histogram(a.histogram())).unwrap();
        let back = back.with_histograms(h, None);
        assert_eq!(back.requests, 3);
        assert_eq!(back.histogram().len(), 3);
        assert_eq!(
            back.histogram().value_at_quantile(0.99),
            a.histogram().value_at_quantile(0.99)
        );
        assert!(decode_histogram("not base64!").is_err());
    }
}
