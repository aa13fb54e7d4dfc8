//! Workloads described by a table (`kind = "http"`, `kind = "scimark"`): the table is
//! kept as written, checked once when the file is read (placeholders known, the
//! options deserialize and validate with sample values), and rendered per trial.

use std::collections::BTreeMap;

use perflab_load::LoadSpec;
use perflab_store::{HistogramData, MetricValue, SeriesData};
use perflab_workloads::disk::DiskSpec;
use perflab_workloads::scimark::ScimarkSpec;
use perflab_workloads::{Measurement, TrialContext, Workload, WorkloadError};
use toml::Spanned;

use crate::error::FileError;
use crate::experiment::{Checker, WorkloadSpec};
use crate::template::{Template, BUILTINS};

/// Metrics the `http` workload records.
pub const HTTP_METRICS: &[&str] = &[
    "rps",
    "requests",
    "mbps",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_mean_ms",
    "errors",
    "error_rate",
    "client_cpu_per_req_us",
];

/// Checks a table workload and keeps it.
pub(crate) fn table_spec(
    c: &Checker,
    kind: &str,
    w: Spanned<toml::Table>,
) -> Result<WorkloadSpec, FileError> {
    let span = w.span();
    let mut table = w.into_inner();
    table.remove("kind");
    let known = |n: &str| BUILTINS.contains(&n) || c.names.iter().any(|m| m == n);
    // The table's span may cover only its header: search from there to the end.
    let region = &c.loc.text[span.start.min(c.loc.text.len())..];
    let locate = |needle: &str| span.start + region.find(needle).unwrap_or(0);
    // Every string's placeholders must name something.
    let mut strings = Vec::new();
    collect_strings(&toml::Value::Table(table.clone()), &mut strings);
    for s in &strings {
        if let Err(u) = Template::parse(s, &known) {
            let at = locate(s) + u.offset;
            return Err(c.loc.at(
                at,
                format!(
                    "unknown placeholder {{{}}}: expected a matrix parameter or a built-in ({})",
                    u.name,
                    c.names
                        .iter()
                        .map(String::as_str)
                        .chain(BUILTINS.iter().copied())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    // The options must make sense once rendered.
    let sample = render(&table, &c.sample);
    let check = match kind {
        "http" => to_load_spec(&sample).map(|_| ()),
        "disk" => to_disk_spec(&sample).map(|_| ()),
        _ => to_scimark_spec(&sample).map(|_| ()),
    };
    if let Err(msg) = check {
        // Point at the key the message names: `field` (serde) or its first word.
        let key = msg
            .split('`')
            .nth(1)
            .or_else(|| msg.split([' ', ':']).next())
            .unwrap_or("")
            // A CLI-flavoured message (`--bs 0`) names the TOML key `bs`.
            .trim_start_matches('-')
            .replace('-', "_");
        let key = key.as_str();
        let at = [format!("\n{key} "), format!("\n{key}=")]
            .iter()
            .find_map(|k| region.find(k.as_str()).map(|i| span.start + i + 1))
            .or_else(|| (!key.is_empty() && region.contains(key)).then(|| locate(key)))
            .unwrap_or(span.start);
        return Err(c.loc.at(at, format!("[workload] kind = \"{kind}\": {msg}")));
    }
    Ok(match kind {
        "http" => WorkloadSpec::Http(table),
        "disk" => WorkloadSpec::Disk(table),
        _ => WorkloadSpec::Scimark(table),
    })
}

fn collect_strings(v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::String(s) => out.push(s.clone()),
        toml::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        toml::Value::Table(t) => t.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Renders every string of a table.
pub fn render(t: &toml::Table, vars: &BTreeMap<String, String>) -> toml::Table {
    fn go(v: &toml::Value, vars: &BTreeMap<String, String>) -> toml::Value {
        match v {
            toml::Value::String(s) => toml::Value::String(
                Template::parse(s, &|_| true)
                    .map(|t| t.render(vars))
                    .unwrap_or_else(|_| s.clone()),
            ),
            toml::Value::Array(a) => toml::Value::Array(a.iter().map(|x| go(x, vars)).collect()),
            toml::Value::Table(t) => {
                toml::Value::Table(t.iter().map(|(k, x)| (k.clone(), go(x, vars))).collect())
            }
            other => other.clone(),
        }
    }
    t.iter().map(|(k, v)| (k.clone(), go(v, vars))).collect()
}

fn to_load_spec(t: &toml::Table) -> Result<LoadSpec, String> {
    let spec: LoadSpec = toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    spec.validate().map_err(|e| e.to_string())?;
    Ok(spec)
}

fn to_scimark_spec(t: &toml::Table) -> Result<ScimarkSpec, String> {
    let spec: ScimarkSpec = toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    spec.validate()?;
    Ok(spec)
}

fn to_disk_spec(t: &toml::Table) -> Result<DiskSpec, String> {
    let spec: DiskSpec = toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    spec.validate().map_err(|e| e.to_string())?;
    Ok(spec)
}

/// One `kind = "disk"` trial.
pub fn run_disk(
    t: &toml::Table,
    vars: &BTreeMap<String, String>,
    ctx: &TrialContext,
) -> Result<Measurement, WorkloadError> {
    let spec = to_disk_spec(&render(t, vars)).map_err(WorkloadError::Setup)?;
    spec.run(ctx)
}

/// One `kind = "scimark"` trial.
pub fn run_scimark(
    t: &toml::Table,
    vars: &BTreeMap<String, String>,
    ctx: &TrialContext,
) -> Result<Measurement, WorkloadError> {
    let spec = to_scimark_spec(&render(t, vars)).map_err(WorkloadError::Setup)?;
    spec.run(ctx)
}

/// One `kind = "http"` trial: the load engine, its report as metrics, the merged
/// latency histogram kept whole and the per-second series.
pub fn run_http(
    t: &toml::Table,
    vars: &BTreeMap<String, String>,
    ctx: &TrialContext,
) -> Result<Measurement, WorkloadError> {
    let spec = to_load_spec(&render(t, vars)).map_err(WorkloadError::Setup)?;
    if ctx.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(WorkloadError::Interrupted);
    }
    // The engine runs in this process: its worker threads inherit the pinning, and its
    // default thread count follows the pinned CPUs.
    let pin = ctx.pin_this_thread()?;
    let report =
        perflab_load::run(&spec).map_err(|e| WorkloadError::Setup(format!("http load: {e}")))?;
    drop(pin);
    let m = http_measurement(&report);
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

/// The store's view of an HTTP load report.
pub fn http_measurement(r: &perflab_load::Report) -> Measurement {
    let l = &r.latency_ms;
    let metrics = vec![
        MetricValue::new("rps", "req/s", r.rps, "higher"),
        MetricValue::new("requests", "", r.requests as f64, "higher"),
        MetricValue::new("mbps", "MB/s", r.mbps, "higher"),
        MetricValue::new("latency_p50_ms", "ms", l.p50, "lower"),
        MetricValue::new("latency_p90_ms", "ms", l.p90, "lower"),
        MetricValue::new("latency_p99_ms", "ms", l.p99, "lower"),
        MetricValue::new("latency_p999_ms", "ms", l.p999, "lower"),
        MetricValue::new("latency_mean_ms", "ms", l.mean, "lower"),
        // Failed as siege counts them: transport errors and statuses >= 400.
        MetricValue::new("errors", "", r.failed() as f64, "lower"),
        MetricValue::new("error_rate", "", r.error_rate(), "lower"),
        MetricValue::new(
            "client_cpu_per_req_us",
            "µs",
            r.client_cpu_per_req_us,
            "lower",
        ),
    ];
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
        artifacts: vec![perflab_store::ArtifactData {
            name: "http-report.json".into(),
            media_type: "application/json".into(),
            content: serde_json::to_vec(r).unwrap_or_default(),
        }],
        method: None,
    }
}
