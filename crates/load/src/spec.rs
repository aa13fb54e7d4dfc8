//! [`LoadSpec`]: everything that describes one load test, independent of where it came
//! from — `perflab http` flags or an experiment file's `[workload] kind = "http"` table.
//!
//! The same option names serve both: the CLI builds the struct field by field, and
//! `serde::Deserialize` reads a TOML/JSON table with durations as strings (`"10s"`,
//! `"500ms"`) or numbers of seconds, rates as numbers or strings (`"2.5k"`), and fractions
//! as `"0.1%"` or numbers. Unknown keys are rejected (a typo must not silently run a
//! different test). [`LoadSpec::validate`] checks every value before anything is sent.

use crate::error::SpecError;
use crate::slo::Slo;
use crate::threshold::Threshold;
use crate::units::{check_rate, parse_rate};
use crate::url::{Scheme, Target};
use perflab_units::Phrase;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// What a ramp varies from step to step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RampOver {
    /// The open-loop arrival rate (requests/s).
    #[default]
    Rate,
    /// The number of closed-loop connections.
    Connections,
}

/// `--ramp START:END:STEPS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ramp {
    /// First step's target.
    pub start: f64,
    /// Last step's target.
    pub end: f64,
    /// Number of steps (≥ 1); targets are evenly spaced from `start` to `end`.
    pub steps: u32,
    /// What the targets are.
    pub over: RampOver,
}

impl Ramp {
    /// Parses `START:END:STEPS`.
    pub fn parse(s: &str, over: RampOver) -> Result<Ramp, SpecError> {
        let err = || SpecError::value("ramp", s, "START:END:STEPS, like 100:1000:10");
        let parts: Vec<&str> = s.split(':').collect();
        let [a, b, n] = parts.as_slice() else {
            return Err(err());
        };
        let start = parse_rate("ramp", a).map_err(|_| err())?;
        let end = parse_rate("ramp", b).map_err(|_| err())?;
        let steps: u32 = n.trim().parse().ok().filter(|n| *n >= 1).ok_or_else(err)?;
        Ok(Ramp {
            start,
            end,
            steps,
            over,
        })
    }

    /// The target of each step.
    pub fn targets(&self) -> Vec<f64> {
        if self.steps == 1 {
            return vec![self.start];
        }
        let n = f64::from(self.steps - 1);
        (0..self.steps)
            .map(|i| self.start + (self.end - self.start) * f64::from(i) / n)
            .collect()
    }
}

/// A complete description of one load test. See the module doc for the file form.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "crate::rawspec::RawSpec")]
pub struct LoadSpec {
    /// Target URLs (at least one).
    pub urls: Vec<String>,
    /// A file with one URL per line (siege's URL file: `#` comments, blank lines skipped).
    pub urls_file: Option<PathBuf>,
    /// Pick URLs at random instead of round-robin.
    pub random: bool,
    /// A request mix: each target its own method, URL, headers and body
    /// (`crate::targets`); the URLs above then are not used.
    pub targets: Option<PathBuf>,
    /// The targets file's format (`None`: detected from its first line).
    pub targets_format: Option<crate::targets::TargetsFormat>,
    /// `weighted`: targets picked at random in proportion to their `# weight:`
    /// (`random` picks uniformly; the default goes round-robin).
    pub weighted: bool,
    /// Request method.
    pub method: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Option<Vec<u8>>,
    /// Read the request body from this file.
    pub body_file: Option<PathBuf>,
    /// Closed-loop connections, or the initial connections of an open loop (default 10).
    pub connections: usize,
    /// Worker threads (default: [`default_threads`]: half the usable cores, at least
    /// one, at most one per connection).
    pub threads: Option<usize>,
    /// Recorded duration (default 10 s unless `requests` is set).
    pub duration: Option<Duration>,
    /// Stop after this many requests (closed loop).
    pub requests: Option<u64>,
    /// Unrecorded load before the recorded part.
    pub warmup: Duration,
    /// Open-loop arrival rate, requests/s.
    pub rate: Option<f64>,
    /// Open loop: most connections to open when all are busy (default 10 × connections).
    pub max_connections: Option<usize>,
    /// Stepwise ramp.
    pub ramp: Option<Ramp>,
    /// Duration of each ramp / find-max step (default: duration / steps, else 5 s).
    pub step_duration: Option<Duration>,
    /// Knee search: the highest rate that meets `slo`.
    pub find_max: bool,
    /// How many times the knee search runs (default 1); `max_rate` is then their mean
    /// with a 95 % confidence interval.
    pub find_max_repetitions: u32,
    /// Add knee searches after `find_max_repetitions` (the minimum), up to
    /// [`crate::findmax::MAX_FACTOR`] times as many, until `max_rate`'s interval is
    /// within this fraction of it (0.10: ±10 %).
    pub find_max_precision: Option<f64>,
    /// The SLO of the knee search.
    pub slo: Option<Slo>,
    /// Pass/fail thresholds judged on the finished run (`p99<20ms`, `rps>5000`).
    pub thresholds: Vec<Threshold>,
    /// Connect to this unix-domain socket instead of the URLs' host and port (which
    /// still give the `Host` header and the path): plain HTTP/1.1, on epoll.
    pub unix_socket: Option<PathBuf>,
    /// Highest error rate a find-max step may have and still pass (default 0.1 %).
    pub max_error_rate: f64,
    /// Reuse connections (default true).
    pub keepalive: bool,
    /// Requests in flight per connection (closed loop; default 1).
    pub pipeline: usize,
    /// Per-request timeout (default 10 s).
    pub timeout: Duration,
    /// Connect timeout (default 5 s).
    pub connect_timeout: Duration,
    /// Write an HdrHistogram interval log here.
    pub hdr_log: Option<PathBuf>,
    /// `https://`: accept any server certificate (no verification of issuer or name).
    pub insecure: bool,
    /// `https://`: also trust the CA certificates of this PEM file.
    pub cacert: Option<PathBuf>,
    /// The I/O engine (default: io_uring for plain-http closed loops where the kernel
    /// allows it, epoll otherwise; see `io`).
    pub io: IoChoice,
    /// The HTTP version: by ALPN for `https://` (h2 offered first), HTTP/1.1 for
    /// `http://` (default); forced with `--http1.1` or `--http2` (h2c with prior
    /// knowledge on `http://`).
    pub http: HttpVersion,
    /// HTTP/2: concurrent streams per connection (h2load's `-m`; default 1).
    pub streams: usize,
    /// HTTP/2: the flow-control window this side advertises, per stream and per
    /// connection (default 2^30 - 1, as h2load's; smaller ones make the server wait
    /// for WINDOW_UPDATEs).
    pub h2_window: u32,
}

/// The default HTTP/2 receive window: large enough never to throttle a benchmark.
pub const DEFAULT_H2_WINDOW: u32 = (1 << 30) - 1;

/// Which HTTP version a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersion {
    /// `https://`: ALPN offers `h2` then `http/1.1`; `http://`: HTTP/1.1.
    #[default]
    Auto,
    /// HTTP/1.1 only (ALPN offers `http/1.1` only).
    Http1,
    /// HTTP/2 only: ALPN offers `h2` only; `http://` speaks h2c with prior knowledge.
    Http2,
}

impl HttpVersion {
    /// `auto`, `1.1` or `2` (also `http/1.1`, `h2`, `h2c`).
    pub fn parse(s: &str) -> Result<HttpVersion, SpecError> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(HttpVersion::Auto),
            "1.1" | "http/1.1" | "http1.1" => Ok(HttpVersion::Http1),
            "2" | "h2" | "h2c" | "http2" => Ok(HttpVersion::Http2),
            _ => Err(SpecError::value("http", s, "\"auto\", \"1.1\" or \"2\"")),
        }
    }
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            urls: Vec::new(),
            urls_file: None,
            random: false,
            targets: None,
            targets_format: None,
            weighted: false,
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            body_file: None,
            connections: 10,
            threads: None,
            duration: None,
            requests: None,
            warmup: Duration::ZERO,
            rate: None,
            max_connections: None,
            ramp: None,
            step_duration: None,
            find_max: false,
            find_max_repetitions: 1,
            find_max_precision: None,
            slo: None,
            thresholds: Vec::new(),
            unix_socket: None,
            max_error_rate: 0.001,
            keepalive: true,
            pipeline: 1,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            hdr_log: None,
            insecure: false,
            cacert: None,
            io: IoChoice::Auto,
            http: HttpVersion::Auto,
            streams: 1,
            h2_window: DEFAULT_H2_WINDOW,
        }
    }
}

impl LoadSpec {
    /// A spec for one URL with every other option at its default.
    pub fn new(url: impl Into<String>) -> Self {
        LoadSpec {
            urls: vec![url.into()],
            ..LoadSpec::default()
        }
    }

    /// Effective recorded duration of a plain run (`None`: until `requests` are done).
    pub fn effective_duration(&self) -> Option<Duration> {
        match (self.duration, self.requests) {
            (Some(d), _) => Some(d),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs(10)),
        }
    }

    /// Whether every phase of the run is closed-loop (no rate, no knee search, no ramp
    /// over the rate).
    pub fn is_closed_loop(&self) -> bool {
        self.rate.is_none()
            && !self.find_max
            && !matches!(&self.ramp, Some(r) if r.over == RampOver::Rate)
    }

    /// Effective threads for `connections` connections.
    pub fn effective_threads(&self, connections: usize) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.threads
            .unwrap_or_else(|| default_threads(cores, connections))
            .clamp(1, connections.max(1))
    }

    /// Effective open-loop connection cap.
    pub fn effective_max_connections(&self) -> usize {
        self.max_connections
            .unwrap_or(self.connections.saturating_mul(10))
    }

    /// Duration of one ramp / find-max step.
    pub fn effective_step_duration(&self) -> Duration {
        if let Some(d) = self.step_duration {
            return d;
        }
        match (&self.ramp, self.duration) {
            (Some(r), Some(d)) => d / r.steps,
            _ => Duration::from_secs(5),
        }
    }

    /// Checks every value; the URLs are parsed too. Nothing is sent.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.check_request()?;
        self.check_concurrency()?;
        self.check_bounds()?;
        self.check_combinations()?;
        self.check_uring()
    }

    /// What is sent: the URLs, the method, the headers and the body.
    fn check_request(&self) -> Result<(), SpecError> {
        if self.urls.is_empty() && self.urls_file.is_none() && self.targets.is_none() {
            return Err(SpecError::Conflict(
                "no URL given (a URL, a URL file or a targets file is required)".into(),
            ));
        }
        for u in &self.urls {
            let t = Target::parse(u)?;
            if self.unix_socket.is_some() && t.scheme == crate::url::Scheme::Https {
                return Err(SpecError::Conflict(Phrase::field("unix_socket").then(
                    format!(" speaks plain HTTP: {u} asks for TLS (use http://)"),
                )));
            }
        }
        if self.method.is_empty() || !self.method.bytes().all(is_token) {
            return Err(SpecError::value(
                "method",
                &self.method,
                "an HTTP method token like GET or POST",
            ));
        }
        for (name, value) in &self.headers {
            if name.is_empty() || !name.bytes().all(is_token) {
                return Err(SpecError::value(
                    "headers",
                    name,
                    "a header name like X-Name",
                ));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(SpecError::value(
                    "headers",
                    value,
                    "a header value without CR or LF",
                ));
            }
        }
        if self.body.is_some() && self.body_file.is_some() {
            return Err(SpecError::Conflict(
                "give either a body or a body file, not both".into(),
            ));
        }
        Ok(())
    }

    /// How many connections, threads, pipelined requests and streams, and the HTTP
    /// version they fit.
    fn check_concurrency(&self) -> Result<(), SpecError> {
        positive("connections", self.connections)?;
        if let Some(t) = self.threads {
            positive("threads", t)?;
        }
        positive("pipeline", self.pipeline)?;
        positive("streams", self.streams)?;
        if self.h2_window == 0 || self.h2_window > perflab_h2::MAX_WINDOW {
            return Err(SpecError::value(
                "h2_window",
                self.h2_window.to_string(),
                "a window of 1 to 2^31-1 bytes",
            ));
        }
        if self.streams > 1 && self.http == HttpVersion::Http1 {
            return Err(conflict::streams_on_http1());
        }
        if self.pipeline > 1 && self.http == HttpVersion::Http2 {
            return Err(conflict::pipeline_on_http2());
        }
        Ok(())
    }

    /// Counts, durations, rates and fractions within their ranges.
    fn check_bounds(&self) -> Result<(), SpecError> {
        crate::findmax::check_spec(self)?;
        if self.requests == Some(0) {
            return Err(SpecError::value(
                "requests",
                "0",
                "a positive number of requests",
            ));
        }
        if self.duration == Some(Duration::ZERO) {
            return Err(SpecError::value("duration", "0", "a positive duration"));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(SpecError::value("timeout", "0", "a positive duration"));
        }
        if let Some(r) = self.rate {
            check_rate("rate", r)?;
        }
        if let Some(m) = self.max_connections {
            if m < self.connections {
                return Err(SpecError::value(
                    "max_connections",
                    m.to_string(),
                    "at least the number of connections",
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.max_error_rate) {
            return Err(SpecError::value(
                "max_error_rate",
                self.max_error_rate.to_string(),
                "a fraction in [0, 1]",
            ));
        }
        Ok(())
    }

    /// Options that exclude each other (closed vs open loop, ramps, TLS trust).
    fn check_combinations(&self) -> Result<(), SpecError> {
        if !self.is_closed_loop() && self.pipeline > 1 {
            return Err(conflict::pipeline_open_loop());
        }
        if self.rate.is_some() && self.requests.is_some() {
            return Err(conflict::requests_with_rate());
        }
        if self.find_max && self.slo.is_none() {
            return Err(conflict::needs_slo());
        }
        if (self.find_max || self.ramp.is_some()) && self.requests.is_some() {
            return Err(conflict::requests_with_ramp());
        }
        if self.insecure && self.cacert.is_some() {
            return Err(conflict::insecure_with_cacert());
        }
        if self.find_max && matches!(&self.ramp, Some(r) if r.over == RampOver::Connections) {
            return Err(SpecError::Conflict(
                Phrase::field("find_max").then(" searches a rate; it cannot ramp connections"),
            ));
        }
        Ok(())
    }

    /// io_uring runs only what its engine supports.
    fn check_uring(&self) -> Result<(), SpecError> {
        if self.io == IoChoice::Uring {
            // URLs of a URL file are checked once it is read (`request::prepare`).
            let tls = self
                .urls
                .iter()
                .any(|u| Target::parse(u).is_ok_and(|t| t.scheme == Scheme::Https));
            if let Some(why) = uring_misfit(self, tls) {
                return Err(SpecError::Conflict(why));
            }
        }
        Ok(())
    }
}

pub(crate) mod conflict;

fn positive(field: &'static str, v: usize) -> Result<(), SpecError> {
    if v == 0 {
        Err(SpecError::value(field, "0", "a positive number"))
    } else {
        Ok(())
    }
}

/// RFC 9110 token characters.
pub(crate) fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses `Name: value`.
pub fn parse_header(s: &str) -> Result<(String, String), SpecError> {
    let (n, v) = s
        .split_once(':')
        .ok_or_else(|| SpecError::value("header", s, "`Name: value`"))?;
    Ok((n.trim().to_string(), v.trim().to_string()))
}

/// The I/O engine asked for (`io`, or `io = "..."` in an experiment file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoChoice {
    /// io_uring where it can run and is allowed, epoll otherwise.
    #[default]
    Auto,
    /// Always epoll.
    Epoll,
    /// Always io_uring (plain-http closed loop only).
    Uring,
}

impl IoChoice {
    /// Parses `auto`, `epoll` or `uring`.
    pub fn parse(s: &str) -> Result<IoChoice, SpecError> {
        match s.trim() {
            "auto" => Ok(IoChoice::Auto),
            "epoll" => Ok(IoChoice::Epoll),
            "uring" | "io_uring" => Ok(IoChoice::Uring),
            _ => Err(SpecError::value("io", s, "auto, epoll or uring")),
        }
    }
}

/// Why a spec cannot run on io_uring whatever the kernel (`None`: it can).
pub(crate) fn uring_misfit(spec: &LoadSpec, tls: bool) -> Option<Phrase> {
    let uring = Phrase::setting("io", "uring");
    let why = if spec.http == HttpVersion::Http2 {
        uring.then(" speaks HTTP/1.1 only; HTTP/2 runs on epoll")
    } else if !spec.is_closed_loop() {
        uring
            .then(" runs closed-loop load only; the open loop (")
            .and_field("rate")
            .then(", ")
            .and_field("find_max")
            .then(", a ramp over the rate) runs on epoll")
    } else if tls {
        uring.then(" speaks plain http:// only; https:// runs on epoll")
    } else if spec.unix_socket.is_some() {
        uring
            .then(" connects over TCP only; a ")
            .and_field("unix_socket")
            .then(" runs on epoll")
    } else {
        return None;
    };
    Some(
        why.then(" (use ")
            .and_setting("io", "auto")
            .then(" or ")
            .and_setting("io", "epoll")
            .then(")"),
    )
}

/// The default worker threads on a machine with `cores` usable cores (the affinity
/// mask's, so a pinned run follows its CPUs): half of them, at least one, at most one
/// per connection.
///
/// Why half: a load generator is most often run beside the server it measures (a
/// laptop, a CI runner, one box of a lab), and every core the client takes is one the
/// server cannot use. One thread keeps dozens of connections busy at well under a
/// core (its work per request is a few µs, the rest is the server's and the kernel's):
/// on a 2-core machine against nginx with 2 workers, `-c 10` did as many or more req/s
/// with one thread as with two, at 0.7-0.8x the CPU per request (bench/http-vs-peers.sh,
/// docs/benchmarks.md); two threads each sleep and wake for half the responses. On a
/// bigger machine the rule still scales (8 threads on 16 cores), and `-t` overrides it
/// for a remote server that leaves the whole machine to the client.
pub fn default_threads(cores: usize, connections: usize) -> usize {
    (cores / 2).max(1).min(connections.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half the cores, at least one, at most one per connection: one thread on a
    /// 2-core machine, eight on 16 cores.
    #[test]
    fn default_threads_take_half_the_cores() {
        assert_eq!(default_threads(2, 10), 1);
        assert_eq!(default_threads(1, 10), 1);
        assert_eq!(default_threads(16, 10), 8);
        assert_eq!(default_threads(16, 4), 4);
        assert_eq!(default_threads(64, 1000), 32);
        assert_eq!(default_threads(8, 0), 1);
    }

    #[test]
    fn ramp_targets() {
        let r = Ramp::parse("100:400:4", RampOver::Rate).unwrap();
        assert_eq!(r.targets(), vec![100.0, 200.0, 300.0, 400.0]);
        assert_eq!(
            Ramp::parse("5:5:1", RampOver::Rate).unwrap().targets(),
            vec![5.0]
        );
        for bad in ["1:2", "0:10:2", "1:10:0", "a:b:c"] {
            assert!(Ramp::parse(bad, RampOver::Rate).is_err(), "{bad}");
        }
    }

    #[test]
    fn validation_rejects_bad_values() {
        let ok = LoadSpec::new("http://127.0.0.1:1/");
        ok.validate().unwrap();
        let bad = [
            LoadSpec {
                connections: 0,
                ..ok.clone()
            },
            LoadSpec {
                urls: vec!["nope".into()],
                ..ok.clone()
            },
            LoadSpec {
                rate: Some(-1.0),
                ..ok.clone()
            },
            LoadSpec {
                method: "G T".into(),
                ..ok.clone()
            },
            LoadSpec {
                headers: vec![("X".into(), "a\r\nb".into())],
                ..ok.clone()
            },
            LoadSpec {
                find_max: true,
                ..ok.clone()
            },
            LoadSpec {
                rate: Some(10.0),
                pipeline: 4,
                ..ok.clone()
            },
            LoadSpec {
                max_connections: Some(2),
                ..ok.clone()
            },
            LoadSpec {
                insecure: true,
                cacert: Some("ca.pem".into()),
                ..ok.clone()
            },
        ];
        for b in bad {
            assert!(b.validate().is_err(), "{b:?}");
        }
    }
}
