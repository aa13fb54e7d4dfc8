//! `kind = "http"`: perflab's load engine (`perflab-load`) as a trial's workload —
//! its report becomes metrics, the merged latency histogram is kept whole, the
//! per-second rate is a series and the whole report an artifact. `perflab http` (a
//! one-trial run whose workload the CLI builds to draw its live line) and its
//! distributed load (`--agents`, recorded outside the runner) make their measurement
//! through [`measurement`] too, so all have the same metrics.

use perflab_load::LoadSpec;
use perflab_units::Phrase;

use crate::{
    ArtifactData, HistogramData, Measurement, MetricValue, SeriesData, TrialContext, Workload,
    WorkloadError,
};

/// Metrics the `http` workload records.
pub const METRICS: &[&str] = &[
    "rps",
    "requests",
    "mbps",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_mean_ms",
    "errors",
    "http_errors",
    "transport_errors",
    "error_rate",
    "client_cpu_per_req_us",
    "max_rate",
    "max_rate_ci_low",
    "max_rate_ci_high",
    "generator_late_p99_ms",
];

/// The metrics an http run is compared on unless the experiment names others.
pub const PRIMARY: &[&str] = &["rps", "latency_p50_ms", "latency_p99_ms"];

/// A checked load specification, ready to run.
#[derive(Debug, Clone)]
pub struct HttpWorkload {
    pub spec: LoadSpec,
}

impl HttpWorkload {
    /// Reads and checks the options of a `kind = "http"` table (the `perflab_load::LoadSpec`
    /// fields); the error names the field.
    ///
    /// A table with `agents` is refused here: its load runs from those hosts, which
    /// only a run over an inventory can reach (crate fleet reads [`split_agents`]).
    pub fn from_options(options: &serde_json::Value) -> Result<HttpWorkload, String> {
        let (rest, agents) = split_agents(options)?;
        if let Some(a) = agents {
            return Err(format!(
                "`agents` ({}): a distributed load runs from inventory hosts, and this run has no inventory (`perflab run` reads the inventory its command line names, hosts.toml beside the experiment, or the file's own [[hosts]])",
                a.names.join(", ")
            ));
        }
        Self::checked(rest)
    }

    /// The load options without `agents`, checked.
    pub fn checked(options: serde_json::Value) -> Result<HttpWorkload, String> {
        Self::check(options).map_err(String::from)
    }

    /// As [`HttpWorkload::checked`], the error naming its option as a field.
    pub fn check(options: serde_json::Value) -> Result<HttpWorkload, Phrase> {
        let spec = LoadSpec::from_json(options).map_err(|e| e.phrase())?;
        Ok(HttpWorkload { spec })
    }
}

/// `agents = ["a", "b"]` in an http table (and `agent_weights = [1, 3]`): the inventory
/// hosts a distributed load runs from, and each one's share (default: by cores).
#[derive(Debug, Clone, PartialEq)]
pub struct Agents {
    pub names: Vec<String>,
    pub weights: Option<Vec<f64>>,
}

/// An http table's options without `agents` and `agent_weights`, and those (checked:
/// names unique and non-empty, one positive weight per agent). The error names the key.
pub fn split_agents(
    options: &serde_json::Value,
) -> Result<(serde_json::Value, Option<Agents>), String> {
    let mut rest = options.clone();
    let Some(map) = rest.as_object_mut() else {
        return Ok((rest, None));
    };
    let (names, weights) = (map.remove("agents"), map.remove("agent_weights"));
    let Some(names) = names else {
        return match weights {
            Some(_) => Err("`agent_weights` without `agents`: name the agents too".into()),
            None => Ok((rest, None)),
        };
    };
    let names: Vec<String> = match names.as_array() {
        Some(a) if !a.is_empty() => a
            .iter()
            .map(|v| match v.as_str().map(str::trim) {
                Some(n) if !n.is_empty() && !n.contains(char::is_whitespace) => Ok(n.to_string()),
                _ => Err(format!("`agents`: {v} is not a host name")),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(
                "`agents`: expected a list of inventory host names, e.g. agents = [\"a\", \"b\"]"
                    .into(),
            )
        }
    };
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(format!("`agents`: {n} is named twice"));
        }
    }
    let weights = weights
        .map(|w| {
            let w: Vec<f64> = w
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .filter(|v: &Vec<f64>| v.len() == w.as_array().map_or(0, Vec::len))
                .ok_or("`agent_weights`: expected a list of numbers")?;
            if w.len() != names.len() {
                return Err(format!(
                    "`agent_weights` has {} weights for {} agents: give one per agent, in the order of `agents`",
                    w.len(),
                    names.len()
                ));
            }
            if w.iter().any(|x| !x.is_finite() || *x <= 0.0) {
                return Err("`agent_weights`: every weight must be a positive number".into());
            }
            Ok(w)
        })
        .transpose()?;
    Ok((rest, Some(Agents { names, weights })))
}

/// One `kind = "http"` trial: the load engine, its report as metrics, the merged
/// latency histogram kept whole and the per-second series.
impl Workload for HttpWorkload {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let spec = &self.spec;
        if ctx.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(WorkloadError::Interrupted);
        }
        // The engine runs in this process: its worker threads inherit the pinning, and its
        // default thread count follows the pinned CPUs.
        let pin = ctx.pin_this_thread()?;
        // Ctrl-C ends the load within milliseconds (the engine checks the flag each turn).
        // A target no connection can reach fails the trial at once with the cause
        // (refused, TLS handshake, ...), not after a load of failed connects.
        let (report, knee) = perflab_load::check(spec)
            .map_err(perflab_load::LoadError::from)
            .and_then(|c| c.reach(spec).map(|_| c))
            .and_then(|c| {
                let mut none = perflab_load::NoObserver;
                let mut watch = crate::knee::KneeWatch::new(&mut none, first_url(spec));
                let mut r = perflab_load::run_until(spec, &c, &mut watch, ctx.interrupted.clone())?;
                r.limit = watch.limit(&r);
                Ok((r, watch.artifact()))
            })
            .map_err(|e| WorkloadError::Setup(format!("http load: {e}")))?;
        drop(pin);
        if report.interrupted {
            return Err(WorkloadError::Interrupted);
        }
        let mut m = measurement(&report);
        add_thresholds(&mut m, spec, &report);
        m.artifacts.extend(knee);
        if report.requests == 0 {
            return Err(WorkloadError::Failed {
                message: format!(
                    "no request completed ({} errors; first kinds: {})",
                    report.errors.total,
                    serde_json::to_string(&report.errors).unwrap_or_default()
                ),
                partial: Box::new(m),
            });
        }
        Ok(m)
    }
}

/// The URL whose port names the service a find-max knee is judged on: the first of
/// `urls` (a targets file's are not read here: no service facts then).
pub fn first_url(spec: &LoadSpec) -> Option<&str> {
    spec.urls.first().map(String::as_str)
}

/// `thresholds`: each one's metric (a percentile the report does not store, `max`), the
/// count that failed on this trial as `thresholds_failed`, and the verdicts as the
/// `thresholds.json` artifact. The run judges them again on each config's interval.
pub fn add_thresholds(m: &mut Measurement, spec: &LoadSpec, report: &perflab_load::Report) {
    if spec.thresholds.is_empty() {
        return;
    }
    let mut verdicts = Vec::new();
    for t in &spec.thresholds {
        let v = t.judge(report);
        if !m.metrics.iter().any(|x| x.name == v.metric) && v.value.is_finite() {
            let better = if t.op.upper() { "lower" } else { "higher" };
            m.metrics
                .push(MetricValue::new(&v.metric, v.unit, v.value, better));
        }
        verdicts.push(v);
    }
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    m.metrics.push(MetricValue::new(
        "thresholds_failed",
        "",
        failed as f64,
        "lower",
    ));
    m.artifacts.push(ArtifactData {
        name: perflab_store::vocab::ARTIFACT_THRESHOLDS.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec_pretty(&verdicts).unwrap_or_default(),
    });
}

/// The thresholds of a `kind = "http"` table's options (`thresholds = [...]`).
pub fn thresholds(options: &serde_json::Value) -> Result<Vec<perflab_load::Threshold>, String> {
    options
        .get("thresholds")
        .and_then(|t| t.as_array())
        .map(|a| {
            a.iter()
                .map(|t| {
                    perflab_load::Threshold::parse(t.as_str().unwrap_or_default())
                        .map_err(|e| e.to_string())
                })
                .collect()
        })
        .unwrap_or_else(|| Ok(Vec::new()))
}

/// The store's view of an HTTP load report.
pub fn measurement(r: &perflab_load::Report) -> Measurement {
    let l = &r.latency_ms;
    let mut metrics = vec![
        MetricValue::new("rps", "req/s", r.rps, "higher"),
        MetricValue::new("requests", "", r.requests as f64, "higher"),
        MetricValue::new("mbps", "MB/s", r.mbps, "higher"),
        MetricValue::new("latency_p50_ms", "ms", l.p50, "lower"),
        MetricValue::new("latency_p90_ms", "ms", l.p90, "lower"),
        MetricValue::new("latency_p99_ms", "ms", l.p99, "lower"),
        MetricValue::new("latency_p999_ms", "ms", l.p999, "lower"),
        MetricValue::new("latency_mean_ms", "ms", l.mean, "lower"),
        // Failed as siege counts them: transport errors and statuses >= 400; and the
        // two apart, named as the report's `failed` names them.
        MetricValue::new("errors", "", r.failed() as f64, "lower"),
        MetricValue::new("http_errors", "", r.failed.http_errors as f64, "lower"),
        MetricValue::new(
            "transport_errors",
            "",
            r.failed.transport_errors as f64,
            "lower",
        ),
        MetricValue::new("error_rate", "", r.error_rate(), "lower"),
        MetricValue::new(
            "client_cpu_per_req_us",
            "µs",
            r.client_cpu_per_req_us,
            "lower",
        ),
    ];
    // A mix or several URLs: each target's rate, p50, p99 and errors, so `perflab
    // show`, `compare` and the report list them.
    for t in &r.targets {
        let m = |what: &str| format!("target.{}.{what}", t.name);
        metrics.push(MetricValue::new(&m("rps"), "req/s", t.rps, "higher"));
        metrics.push(MetricValue::new(
            &m("latency_p50_ms"),
            "ms",
            t.latency_ms.p50,
            "lower",
        ));
        metrics.push(MetricValue::new(
            &m("latency_p99_ms"),
            "ms",
            t.latency_ms.p99,
            "lower",
        ));
        metrics.push(MetricValue::new(&m("errors"), "", t.errors as f64, "lower"));
    }
    // `find_max`: the highest rate that met the SLO.
    if let Some(max) = r.max_rate {
        metrics.push(MetricValue::new("max_rate", "req/s", max, "higher"));
    }
    // Repeated (`find_max_repetitions`): the knee's 95 % interval, in the same unit.
    if let (Some(lo), Some(hi)) = (r.max_rate_ci_low, r.max_rate_ci_high) {
        metrics.push(MetricValue::new("max_rate_ci_low", "req/s", lo, "higher"));
        metrics.push(MetricValue::new("max_rate_ci_high", "req/s", hi, "higher"));
    }
    // Open loop: the generator's own lateness, kept out of the latency.
    if let Some(g) = &r.generator_late_ms {
        metrics.push(MetricValue::new(
            "generator_late_p99_ms",
            "ms",
            g.p99,
            "lower",
        ));
    }
    let series = vec![SeriesData {
        name: "http.rps".into(),
        unit: "req/s".into(),
        points: r
            .series
            .iter()
            .map(|p| (p.second as f64, p.requests as f64 / p.duration_s.max(1e-9)))
            .collect(),
    }];
    Measurement {
        metrics,
        histograms: vec![HistogramData {
            name: "latency".into(),
            unit: "us".into(),
            data: r.histogram_bytes(),
        }],
        series,
        artifacts: vec![ArtifactData {
            name: perflab_store::vocab::ARTIFACT_HTTP_REPORT.into(),
            media_type: "application/json".into(),
            content: serde_json::to_vec(r).unwrap_or_default(),
        }],
        method: None,
    }
}
