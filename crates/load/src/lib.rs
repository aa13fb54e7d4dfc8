//! perflab-load: the HTTP load engine of perflab, usable as a library.
//!
//! ```no_run
//! let mut spec = perflab_load::LoadSpec::new("http://127.0.0.1:8080/");
//! spec.connections = 10;
//! spec.duration = Some(std::time::Duration::from_secs(5));
//! let report = perflab_load::run(&spec).expect("load test ran");
//! println!("{} req/s, p99 {} ms", report.rps, report.latency_ms.p99);
//! let _whole_histogram: Vec<u8> = report.histogram_bytes();
//! ```
//!
//! Shape: a [`LoadSpec`] (flags or an experiment table) is validated and turned into
//! pre-serialized requests (`request`); each *phase* (`engine`) runs one event loop per
//! thread (`worker`), driven by a load model — closed loop (`closed`) or open loop with
//! coordinated-omission correction (`open`), whose schedule is kept by a nanosecond
//! `timerfd` (`timer`). The loop's I/O is a driver picked per run in one place (`io`):
//! epoll readiness over non-blocking sockets (`epoll`), or, for plain-http closed
//! loops, io_uring completions, one `io_uring_enter` per turn (`uring`); both take
//! latency on the same user-space clock, and the report checks by Little's law that a
//! closed loop kept its requests in flight (`Report::effective_concurrency`).
//! Ramps (`ramp`) and the knee search (`findmax`) are sequences of phases. Connections
//! sit behind a trait (`conn`) so an HTTP/2 client can join the HTTP/1.1 one; their
//! bytes travel over plain TCP or, for `https://`, over rustls (`transport`), set up
//! once per run with its trust roots and session cache (`tls`). Workers record into
//! thread-local histograms (`record`) merged once a second (`series`) into the
//! [`Report`], the per-second series and the interval log (`hdrlog`). Thresholds are
//! parsed with the spec (`threshold`) and judged on the finished report (`judge`), so
//! the spec's side never reaches the report's.

mod closed;
mod conn;
mod cpu;
mod engine;
mod epoll;
mod error;
mod findmax;
mod h2;
mod hdrlog;
mod http1;
mod io;
mod judge;
pub mod limit;
mod merge;
mod observe;
mod open;
mod parse;
mod ramp;
mod rawspec;
mod reach;
mod record;
mod report;
mod request;
mod series;
mod siege;
mod slo;
mod spec;
pub mod targets;
pub mod text;
mod threshold;
mod timer;
mod tls;
mod transport;
mod units;
mod uring;
mod url;
mod worker;

pub use cpu::SATURATION;
pub use error::{LoadError, SpecError};
pub use findmax::DEFAULT_START_RATE;
pub use io::{uring_support, Io};
pub use limit::{Limit, LimitResource};
pub use merge::{decode_histogram, encode_histogram, merge_series, second_p99};
pub use observe::{NoObserver, Observer};
pub use open::LATE_AFTER;
pub use reach::{ConnectCause, Reached};
pub use report::{
    stalled_after, ErrorKinds, Errors, Failed, Latency, Mode, Report, Step, TargetReport,
    CONCURRENCY_FLOOR, LATENCY_CLOCK, SATURATED_WARNING,
};
pub use series::SecondPoint;
pub use siege::Siege;
pub use slo::{Condition, Slo, Statistic};
pub use spec::{
    default_threads, parse_header, HttpVersion, IoChoice, LoadSpec, Ramp, RampOver,
    DEFAULT_H2_WINDOW,
};
pub use threshold::{Op, Quantity, Threshold, Verdict};
pub use units::{parse_duration, parse_fraction, parse_rate};
pub use url::{Scheme, Target};

use engine::{run_phase, Phase, RunContext};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// Runs the load test described by `spec`.
pub fn run(spec: &LoadSpec) -> Result<Report, LoadError> {
    run_with(spec, &mut NoObserver)
}

/// A spec's URLs parsed and resolved, its files read and its requests serialised:
/// what [`check`] found, ready for [`run_checked`] (nothing is done twice).
#[derive(Debug, Clone)]
pub struct Checked(Arc<request::Prepared>);

/// Checks `spec` and everything it names (URLs resolve, files are readable) without
/// sending anything; the result runs with [`run_checked`].
pub fn check(spec: &LoadSpec) -> Result<Checked, SpecError> {
    request::prepare(spec).map(|p| Checked(Arc::new(p)))
}

impl Checked {
    /// Makes the run's first connection alone (TCP, TLS, the protocol): what the run
    /// will speak, or [`LoadError::Unreachable`] with the cause when no connection can
    /// be made. The run itself does not: a library caller that runs against a target that
    /// may be down gets the failed connects counted in its report; a command that wants
    /// wrk's "stop at once, say why" (`perflab http`) calls this first.
    pub fn reach(&self, spec: &LoadSpec) -> Result<Reached, LoadError> {
        reach::reach(spec, &self.0)
    }

    /// The I/O engine the run will use here (what `io` auto resolves to on this host).
    pub fn io(&self, spec: &LoadSpec) -> Result<Io, LoadError> {
        io::select(spec, &self.0)
    }
}

/// Runs the load test, reporting progress to `observer`.
pub fn run_with(spec: &LoadSpec, observer: &mut dyn Observer) -> Result<Report, LoadError> {
    run_checked(spec, &check(spec)?, observer)
}

/// Runs the load test `check` prepared from `spec`, reporting progress to `observer`.
pub fn run_checked(
    spec: &LoadSpec,
    checked: &Checked,
    observer: &mut dyn Observer,
) -> Result<Report, LoadError> {
    run_until(spec, checked, observer, Arc::new(AtomicBool::new(false)))
}

/// [`run_checked`] that ends early when `stop` is set (a Ctrl-C handler sets it): the
/// workers end the current phase at their next turn (within milliseconds), what was
/// measured is reported, and the report says [`Report::interrupted`].
pub fn run_until(
    spec: &LoadSpec,
    checked: &Checked,
    observer: &mut dyn Observer,
    stop: Arc<AtomicBool>,
) -> Result<Report, LoadError> {
    let prepared = checked.0.clone();
    let hdr_log = match &spec.hdr_log {
        Some(p) => Some(hdrlog::HdrLog::create(p, SystemTime::now())?),
        None => None,
    };
    let mut ctx = RunContext {
        observer,
        hdr_log,
        origin: Instant::now(),
        second_offset: 0,
        stop: Arc::clone(&stop),
    };
    let base = Phase {
        connections: spec.connections,
        threads: spec.effective_threads(spec.connections),
        max_connections: spec.effective_max_connections(),
        rate: spec.rate,
        duration: spec.effective_duration(),
        requests: spec.requests,
        warmup: spec.warmup,
        timeout: spec.timeout,
        connect_timeout: spec.connect_timeout,
        io: io::select(spec, &prepared)?,
    };
    let report = if spec.find_max {
        findmax::run(spec, &prepared, &base, &mut ctx)?
    } else if let Some(ramp) = &spec.ramp {
        ramp::run(spec, ramp, &prepared, &base, &mut ctx)?
    } else {
        let res = run_phase(&prepared, &base, &mut ctx)?;
        let mode = if spec.rate.is_some() {
            Mode::Open
        } else {
            Mode::Closed
        };
        let mut r = Report::from_phases(&[&res], mode, base.connections, base.threads);
        r.target_rate = spec.rate;
        r
    };
    if let Some(log) = ctx.hdr_log.take() {
        log.finish()?;
    }
    let mut report = report;
    report.io = base.io;
    let per_connection = match spec.http {
        spec::HttpVersion::Http2 => spec.streams,
        _ => spec.pipeline,
    };
    report.check_concurrency(spec.connections * per_connection.max(1));
    report.interrupted = stop.load(Ordering::SeqCst);
    report.streams = spec.streams;
    for (r, t) in report.targets.iter_mut().zip(&prepared.targets) {
        r.name.clone_from(&t.name);
        r.method.clone_from(&t.method);
        r.url.clone_from(&t.url);
    }
    Ok(report)
}
