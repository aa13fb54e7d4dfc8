//! The result of a run: [`Report`], which serializes (serde) to the JSON contract of
//! `perflab http --json` (documented in `docs/json.md`): `requests`, `duration_s`,
//! `rps`, `mbps`, `errors{total,connect,timeout,reset,malformed,closed}`, `status{}`,
//! `latency_ms{mean,sd,p50,p75,p90,p99,p999,p9999,max}`, `latency_uncorrected_ms`
//! (open loop only), `client_cpu_per_req_us`, `client_saturated`, `siege{...}`,
//! `steps[...]`, `max_rate` — followed by extra, additive fields, among them
//! `failed{requests,http_errors,transport_errors}`, the one answer to "did anything
//! fail?" ([`Failed`]). The merged latency
//! histogram is kept whole ([`Report::histogram`], [`Report::histogram_bytes`]) so
//! percentiles can be recomputed across trials.

use crate::conn::ErrorKind;
use crate::cpu::SATURATION;
use crate::io::Io;
use crate::record::{new_histogram, Totals, STATUS_SLOTS};
use crate::series::PhaseResult;
use crate::series::SecondPoint;
use crate::siege::Siege;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use perflab_units::Phrase;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use errors::stalled;
pub use errors::{stalled_after, ErrorKinds, Errors, Failed};

/// How every engine times a request (the report's `latency_clock`): the user-space
/// monotonic clock, from the reading at which its connection was found free (the send)
/// to the reading after the wait or read that handed the response over.
pub const LATENCY_CLOCK: &str = "user-space monotonic";

/// Below this share of the requests asked to be in flight, a closed loop warns
/// ([`Report::check_concurrency`]).
pub const CONCURRENCY_FLOOR: f64 = 0.9;

/// The warning printed when the generator's threads are saturated.
pub const SATURATED_WARNING: &str =
    "the load generator is saturated: this measures the client, not the server";

/// Above this p99 of the generator's own lateness (µs), a run warns.
pub const GENERATOR_LATE_WARN_US: u64 = 1_000;

/// Latency summary in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub sd: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

impl Latency {
    /// Summarizes a histogram of microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let q = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        Latency {
            mean: h.mean() / 1e3,
            sd: h.stdev() / 1e3,
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: h.max() as f64 / 1e3,
        }
    }
}

/// One step of a ramp or of a knee search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The step's target: a rate (requests/s) or a number of connections.
    pub target: f64,
    /// Achieved responses per second.
    pub rps: f64,
    /// Latency (corrected in open loop).
    pub latency_ms: Latency,
    /// Failed / attempted requests.
    pub error_rate: f64,
    /// Responses completed.
    pub requests: u64,
    /// Recorded seconds.
    pub duration_s: f64,
    /// Find-max only: whether the step met the SLO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    /// The generator's worker threads over the step: mean fraction of wall time on a
    /// CPU ([`Report::client_busy`]) ...
    #[serde(default)]
    pub client_busy: f64,
    /// ... and runnable but waiting for one ([`Report::client_wait`]).
    #[serde(default)]
    pub client_wait: f64,
    /// Requests written later than `open::LATE_AFTER` after their intended time.
    #[serde(default)]
    pub late: u64,
    /// Find-max: which search (from 1) the step belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<u32>,
    /// Find-max: a rerun of the rate before it, which broke the SLO or landed within
    /// 10 % of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retest: bool,
}

/// One target of a run with several: its own rate, latency and statuses.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TargetReport {
    pub name: String,
    pub method: String,
    pub url: String,
    pub requests: u64,
    pub rps: f64,
    /// Responses with a status of 400 or more (transport errors are counted for the
    /// run as a whole: a failed connection has no target).
    pub errors: u64,
    pub status: BTreeMap<String, u64>,
    pub latency_ms: Latency,
}

/// What kind of run produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Closed,
    Open,
    Ramp,
    FindMax,
}

/// The result of a run. See the module doc for the JSON form. It reads back from that
/// JSON too (an agent's report, `crate::merge`), without its histograms, which travel
/// apart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub requests: u64,
    pub duration_s: f64,
    pub rps: f64,
    /// Megabytes (10^6 bytes) per second received, heads included.
    pub mbps: f64,
    pub errors: Errors,
    pub status: BTreeMap<String, u64>,
    pub latency_ms: Latency,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ms: Option<Latency>,
    pub client_cpu_per_req_us: f64,
    pub client_saturated: bool,
    pub siege: Siege,
    pub steps: Vec<Step>,
    pub max_rate: Option<f64>,
    // Additive fields beyond the contract.
    pub mode: Mode,
    pub connections: usize,
    pub threads: usize,
    pub target_rate: Option<f64>,
    pub bytes: u64,
    pub cancelled_at_end: u64,
    pub late: u64,
    /// Open loop: how late the generator itself wrote requests whose connection was
    /// free (its timer or its loop; not charged to the latency: module `open`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_late_ms: Option<Latency>,
    pub reconnects: u64,
    pub connections_opened: u64,
    /// Connections opened per negotiated protocol: `{"h2": 10}`, `{"http/1.1": 4}`.
    pub protocols: BTreeMap<String, u64>,
    /// HTTP/2 streams per connection asked for (`--streams`).
    pub streams: usize,
    /// Stopped early from outside (Ctrl-C): the figures cover what ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub error_kinds: ErrorKinds,
    /// Failed requests: HTTP errors and transport errors apart ([`Failed`]).
    #[serde(default)]
    pub failed: Failed,
    /// Mean fraction of wall time the worker threads spent on CPU.
    pub client_busy: f64,
    /// Mean fraction of wall time the worker threads were runnable but waited for a
    /// CPU (run delay, /proc/thread-self/schedstat): a generator sharing its CPU is
    /// saturated at a `client_busy` well under 1.
    #[serde(default)]
    pub client_wait: f64,
    /// Find-max: the lowest rate that broke the SLO.
    pub broke_at: Option<f64>,
    /// Find-max repeated (`--find-max-repetitions N`): `max_rate` is the mean of the
    /// searches, this the low end of its 95 % confidence interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_ci_low: Option<f64>,
    /// The high end of `max_rate`'s 95 % confidence interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_ci_high: Option<f64>,
    /// Find-max: how many searches `max_rate` comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// Find-max with a precision target (`--find-max-precision`): the target, as a
    /// fraction of `max_rate` (0.1: ±10 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_precision: Option<f64>,
    /// Whether the interval came within the target before the cap on searches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_precision_met: Option<bool>,
    /// The confidence `max_rate_ci_low`/`_high` were computed at: 0.95, or
    /// [`perflab_stats::STOP_ON_PRECISION_CONFIDENCE`] when searches were added until the
    /// interval was narrow (so that it still covers at least 95 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_ci_level: Option<f64>,
    /// Find-max: what ran out at the knee, with its evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::limit::Limit>,
    pub slo: Option<String>,
    pub series: Vec<SecondPoint>,
    pub warnings: Vec<String>,
    /// Why the first TLS failure happened, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_failure: Option<String>,
    /// The I/O engine that ran the connections: `epoll` or `uring`.
    pub io: Io,
    /// Requests in flight on average, by Little's law on the run's own figures:
    /// `rps × mean latency` (see [`Report::little`]).
    #[serde(default)]
    pub effective_concurrency: f64,
    /// The clock latency is taken on ([`LATENCY_CLOCK`], the same on every engine).
    #[serde(default = "latency_clock")]
    pub latency_clock: String,
    /// Per target, when the run has more than one (a request mix or several URLs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetReport>,
    #[serde(skip, default = "new_histogram")]
    pub(crate) histogram: Histogram<u64>,
    #[serde(skip)]
    pub(crate) histogram_uncorrected: Option<Histogram<u64>>,
    /// The first TLS and connect failures with their options as fields, for a command
    /// that names options its own way ([`Report::name_fields`]). Not in the JSON, whose
    /// `tls_failure` and `warnings` name them as an experiment file does; a report read
    /// back from JSON has none.
    #[serde(skip)]
    pub(crate) failures: Vec<Phrase>,
}

impl Report {
    /// Names the options in the failure messages by `name` (a command's flag for a
    /// field) instead of the experiment file's key form they are stored in: in
    /// `tls_failure` and at the end of the warning that tells each. A report read back
    /// from JSON keeps the key form.
    pub fn name_fields(&mut self, name: &dyn Fn(&str) -> String) {
        for p in &self.failures {
            let stored = p.to_string();
            let named = p.render(name);
            if self.tls_failure.as_deref() == Some(stored.as_str()) {
                self.tls_failure = Some(named.clone());
            }
            for w in &mut self.warnings {
                if let Some(head) = w.strip_suffix(stored.as_str()) {
                    *w = format!("{head}{named}");
                }
            }
        }
    }

    /// Builds a report from the phases of a run (one for a plain run).
    pub(crate) fn from_phases(
        phases: &[&PhaseResult],
        mode: Mode,
        connections: usize,
        threads: usize,
    ) -> Report {
        let Merged {
            mut totals,
            hist,
            unc,
            series,
            elapsed,
        } = Merged::of(phases);
        let stalled_requests = stalled(&totals.end_ages, &hist);
        let stalled_connects = stalled(&totals.connect_ages, &hist);
        totals.errors[ErrorKind::Stalled as usize] += stalled_requests + stalled_connects;
        totals.cancelled_at_end = totals.cancelled_at_end.saturating_sub(stalled_requests);
        let error_kinds = ErrorKinds::from_counts(&totals.errors);
        let errors = Errors::from_kinds(&error_kinds, totals.errors.iter().sum());
        let per_sec = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
        let share = |d: std::time::Duration| {
            if totals.wall.is_zero() {
                0.0
            } else {
                d.as_secs_f64() / totals.wall.as_secs_f64()
            }
        };
        let (busy, wait) = (share(totals.cpu), share(totals.wait));
        let saturated = busy >= SATURATION;
        let failed_status: u64 = (400..STATUS_SLOTS).map(|s| totals.status[s]).sum();
        let siege = Siege::compute(&totals, &hist, errors.total, failed_status, elapsed);
        let failed = Failed::new(failed_status, errors.total);
        Report {
            targets: target_reports(&totals, per_sec),
            requests: totals.requests,
            duration_s: elapsed,
            rps: per_sec(totals.requests as f64),
            mbps: per_sec(totals.bytes as f64) / 1e6,
            errors,
            status: status_counts(&totals),
            latency_ms: Latency::from_histogram(&hist),
            latency_uncorrected_ms: unc.as_ref().map(Latency::from_histogram),
            client_cpu_per_req_us: if totals.requests > 0 {
                totals.cpu.as_secs_f64() * 1e6 / totals.requests as f64
            } else {
                0.0
            },
            client_saturated: saturated,
            siege,
            steps: Vec::new(),
            max_rate: None,
            mode,
            connections,
            threads,
            target_rate: None,
            bytes: totals.bytes,
            cancelled_at_end: totals.cancelled_at_end,
            late: totals.late,
            generator_late_ms: unc
                .is_some()
                .then(|| Latency::from_histogram(&totals.generator_late)),
            reconnects: totals.reconnects,
            connections_opened: totals.connections_opened,
            protocols: protocol_counts(&totals),
            streams: 1,
            interrupted: false,
            warnings: warnings(&totals, &error_kinds, saturated),
            error_kinds,
            failed,
            client_busy: busy,
            client_wait: wait,
            broke_at: None,
            max_rate_ci_low: None,
            max_rate_ci_high: None,
            repetitions: None,
            max_rate_precision: None,
            max_rate_precision_met: None,
            max_rate_ci_level: None,
            limit: None,
            slo: None,
            series,
            tls_failure: totals.tls_failure.as_ref().map(ToString::to_string),
            failures: totals
                .tls_failure
                .iter()
                .chain(&totals.connect_failure)
                .cloned()
                .collect(),
            io: Io::Epoll,
            effective_concurrency: 0.0,
            latency_clock: latency_clock(),
            histogram: hist,
            histogram_uncorrected: unc,
        }
    }

    /// Little's law on this report's own figures: req/s × mean latency, the mean
    /// number of requests in flight (0 when nothing completed).
    pub fn little(&self) -> f64 {
        self.rps * self.latency_ms.mean / 1e3
    }

    /// Sets [`Report::effective_concurrency`] and, for a closed loop without transport
    /// errors that kept fewer than [`CONCURRENCY_FLOOR`] × `asked` requests in flight
    /// (`asked`: connections × pipeline depth or streams), warns that the generator,
    /// not the server, limited the load.
    pub fn check_concurrency(&mut self, asked: usize) {
        self.effective_concurrency = self.little();
        if let Some(w) = concurrency_warning(self, asked) {
            self.warnings.push(w);
        }
    }

    /// The merged latency histogram, in microseconds (corrected in open loop).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// The merged uncorrected latency histogram (open loop only), in microseconds.
    pub fn histogram_uncorrected(&self) -> Option<&Histogram<u64>> {
        self.histogram_uncorrected.as_ref()
    }

    /// [`Report::histogram`] in HdrHistogram's V2 encoding (readable by every
    /// HdrHistogram implementation's decoder).
    pub fn histogram_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Serializing into a Vec cannot fail for a histogram of this size.
        let _ = V2Serializer::new().serialize(&self.histogram, &mut out);
        out
    }

    /// Failed requests in siege's sense: transport errors plus responses with status ≥ 400
    /// ([`Failed::requests`]; from the siege block, which reports read back from an
    /// older JSON also carry).
    pub fn failed(&self) -> u64 {
        self.siege.failed_transactions
    }

    /// Failed / attempted requests (0 when nothing was attempted).
    pub fn error_rate(&self) -> f64 {
        let attempted = self.requests + self.errors.total;
        if attempted == 0 {
            0.0
        } else {
            self.failed() as f64 / attempted as f64
        }
    }

    /// As a [`Step`] with the given target.
    pub(crate) fn as_step(&self, target: f64, passed: Option<bool>) -> Step {
        Step {
            target,
            rps: self.rps,
            latency_ms: self.latency_ms.clone(),
            error_rate: self.error_rate(),
            requests: self.requests,
            duration_s: self.duration_s,
            passed,
            client_busy: self.client_busy,
            client_wait: self.client_wait,
            late: self.late,
            repetition: None,
            retest: false,
        }
    }
}

/// The phases of a run added up: counters, histograms, per-second series, time.
struct Merged {
    totals: Totals,
    hist: Histogram<u64>,
    unc: Option<Histogram<u64>>,
    series: Vec<SecondPoint>,
    elapsed: f64,
}

impl Merged {
    fn of(phases: &[&PhaseResult]) -> Merged {
        let mut m = Merged {
            totals: Totals::default(),
            hist: new_histogram(),
            unc: None,
            series: Vec::new(),
            elapsed: 0.0,
        };
        for p in phases {
            m.totals.merge(&p.totals);
            let _ = m.hist.add(&p.hist);
            if let Some(u) = &p.hist_uncorrected {
                let _ = m.unc.get_or_insert_with(new_histogram).add(u);
            }
            m.series.extend(p.series.iter().cloned());
            m.elapsed += p.elapsed.as_secs_f64();
        }
        m
    }
}

/// Connections by protocol, only those that were used.
fn protocol_counts(totals: &Totals) -> BTreeMap<String, u64> {
    [("http/1.1", 0), ("h2", 1)]
        .into_iter()
        .filter(|(_, i)| totals.protocols[*i] > 0)
        .map(|(name, i)| (name.to_string(), totals.protocols[i]))
        .collect()
}

/// Responses by status code (slot 0 is `other`), only those seen.
fn status_counts(totals: &Totals) -> BTreeMap<String, u64> {
    (0..STATUS_SLOTS)
        .filter(|s| totals.status[*s] > 0)
        .map(|s| {
            (
                if s == 0 {
                    "other".to_string()
                } else {
                    s.to_string()
                },
                totals.status[s],
            )
        })
        .collect()
}

fn latency_clock() -> String {
    LATENCY_CLOCK.to_string()
}

/// The warning for a closed loop that kept too few requests in flight (see
/// [`Report::check_concurrency`]); `None` for the other modes, a run with transport
/// errors (the server then limited it) or one with no response.
fn concurrency_warning(r: &Report, asked: usize) -> Option<String> {
    let floor = CONCURRENCY_FLOOR * asked as f64;
    if r.mode != Mode::Closed || r.errors.total > 0 || r.requests == 0 {
        return None;
    }
    (r.effective_concurrency < floor).then(|| {
        format!(
            "effective concurrency {:.2} is below {CONCURRENCY_FLOOR} × the {asked} requests \
             asked to be in flight: the generator, not the server, limited the offered load",
            r.effective_concurrency
        )
    })
}

/// The run's warnings: a saturated client, the first connect and TLS failures.
fn warnings(totals: &Totals, error_kinds: &ErrorKinds, saturated: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    if saturated {
        warnings.push(SATURATED_WARNING.to_string());
    }
    let late = &totals.generator_late;
    if !late.is_empty() && late.value_at_quantile(0.99) > GENERATOR_LATE_WARN_US {
        warnings.push(format!(
            "the generator wrote 1 % of its requests more than {:.3} ms after they were \
             due on a free connection (generator_late_ms): left out of the latency, but \
             the load offered was less punctual than asked",
            late.value_at_quantile(0.99) as f64 / 1e3
        ));
    }
    if let Some(why) = &totals.connect_failure {
        warnings.push(format!(
            "{} connect failure(s); the first with a reason: {why}",
            error_kinds.connect_refused
        ));
    }
    if let Some(why) = &totals.tls_failure {
        warnings.push(format!(
            "{} TLS failure(s); the first: {why}",
            error_kinds.tls
        ));
    }
    warnings
}

/// Per target counts and latency (names are filled in by the caller, who knows them).
fn target_reports(totals: &Totals, per_sec: impl Fn(f64) -> f64) -> Vec<TargetReport> {
    totals
        .per_target
        .iter()
        .map(|t| TargetReport {
            name: String::new(),
            method: String::new(),
            url: String::new(),
            requests: t.requests,
            rps: per_sec(t.requests as f64),
            errors: t.failed,
            status: t.status.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            latency_ms: Latency::from_histogram(&t.hist),
        })
        .collect()
}

/// A find-max report of no requests, for tests of what is concluded and printed.
#[cfg(test)]
pub(crate) fn empty_find_max() -> Report {
    let phase = PhaseResult {
        hist: new_histogram(),
        hist_uncorrected: None,
        series: Vec::new(),
        totals: Totals::default(),
        elapsed: std::time::Duration::from_secs(1),
    };
    Report::from_phases(&[&phase], Mode::FindMax, 1, 1)
}

mod errors;
#[cfg(test)]
mod tests;
