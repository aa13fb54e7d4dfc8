//! Experiment files: read, check everything, and produce an [`Experiment`] — or a
//! [`FileError`] with file, line and column. Nothing runs from a file that did not
//! check out. The format is documented in `docs/experiment-file.md`.
//!
//! Parsing is two-pass: a lenient pass reads `workload.kind`, then the whole file is
//! read strictly with the structure of that kind, so every error carries the span the
//! TOML parser knows.

use std::path::{Path, PathBuf};
use std::time::Duration;

use perflab_workloads::command::Leftovers;
use perflab_workloads::cpuset::CpuSet;
use perflab_workloads::metrics::{MetricSpec, Source};
use perflab_workloads::spec::KindSpec;
use toml::Spanned;

use crate::error::{FileError, Locator};
use crate::raw::*;
use crate::template::{Template, BUILTINS};

/// Metrics every command trial records.
pub const BUILTIN_METRICS: &[&str] = &[
    "wall_s",
    "user_s",
    "sys_s",
    "peak_rss_bytes",
    "max_process_rss_bytes",
];

/// How trials are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Interleaved,
    Random,
    Sequential,
}

impl Order {
    pub fn as_str(&self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Random => "random",
            Order::Sequential => "sequential",
        }
    }
}

/// `[monitor]`: system telemetry sampled during every trial.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    pub interval: Duration,
    pub probes: Vec<perflab_telemetry::Probe>,
}

/// `[profile]`: a sampling profile of chosen trials.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// Profile the service under test (else the whole system).
    pub service: bool,
    /// Which repetitions of each config (empty: all).
    pub repetitions: Vec<u32>,
    pub frequency: u32,
    pub call_graph: bool,
    /// How many top functions become metrics.
    pub top: usize,
}

/// How many repetitions: fixed, or added round by round until precise enough.
#[derive(Debug, Clone, PartialEq)]
pub enum Repetitions {
    Fixed(u32),
    Auto {
        min: u32,
        max: u32,
        /// CI half-width / |mean| to reach, e.g. 0.02.
        target: f64,
    },
}

impl Repetitions {
    /// Repetitions planned up front (the minimum for `auto`).
    pub fn initial(&self) -> u32 {
        match self {
            Repetitions::Fixed(n) => *n,
            Repetitions::Auto { min, .. } => *min,
        }
    }
}

/// One matrix parameter and its values, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub values: Vec<serde_json::Value>,
}

/// The service under test.
#[derive(Debug, Clone)]
pub struct ServiceSpec {
    pub command: Template,
    pub shell: bool,
    pub files: Vec<(String, Template)>,
    pub cpus: Option<CpuSet>,
    pub env: Vec<(String, Template)>,
    pub cwd: Option<Template>,
    pub ready: Ready,
    pub ready_timeout: Duration,
    pub stop_signal: i32,
    pub grace: Duration,
}

/// How to tell the service is ready.
#[derive(Debug, Clone)]
pub enum Ready {
    /// Started is ready.
    Started,
    Tcp(Template),
    Http(Template),
    Log(regex::Regex),
}

/// The `command` workload, before rendering.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub command: Template,
    pub shell: bool,
    pub env: Vec<(String, Template)>,
    pub cwd: Option<Template>,
    pub allow_failure: bool,
    pub leftovers: Leftovers,
    pub metrics: Vec<MetricSpec>,
}

/// What each trial runs.
#[derive(Debug, Clone)]
pub enum WorkloadSpec {
    Command(CommandSpec),
    /// `kind = "http"`: a `perflab_load::LoadSpec` table, rendered per trial.
    Http(toml::Table),
    /// `kind = "scimark"`: a `perflab_workloads::scimark::ScimarkSpec` table.
    Scimark(toml::Table),
    /// `kind = "disk"`: a `perflab_workloads::disk::DiskSpec` table.
    Disk(toml::Table),
}

/// Workload kinds, as written in files.
pub use perflab_workloads::spec::KINDS;

impl WorkloadSpec {
    /// `command`, `http`, `scimark` or `disk`.
    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadSpec::Command(_) => "command",
            WorkloadSpec::Http(_) => "http",
            WorkloadSpec::Scimark(_) => "scimark",
            WorkloadSpec::Disk(_) => "disk",
        }
    }

    fn command_metrics(&self) -> Vec<String> {
        match self {
            WorkloadSpec::Command(c) => c.metrics.iter().map(|m| m.name.clone()).collect(),
            _ => Vec::new(),
        }
    }

    /// Named metrics this workload records (for `primary` and auto repetitions).
    pub fn metric_names(&self) -> Vec<String> {
        KindSpec::metric_names(self.kind(), &self.command_metrics())
    }

    /// The metrics runs of this workload are compared on when the file names no
    /// `primary` (the kind's own choice, `perflab_workloads::spec`).
    pub fn default_primary(&self) -> Vec<String> {
        KindSpec::primary(self.kind(), &self.command_metrics())
    }
}

/// A checked experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    pub description: Option<String>,
    pub path: PathBuf,
    /// The file, verbatim (stored with the run; `--resume` re-reads it from the store).
    pub text: String,
    pub repetitions: Repetitions,
    /// Metrics whose precision `repetitions = "auto"` watches (empty: the workload's
    /// named metrics, else `wall_s`).
    pub primary: Vec<String>,
    /// Measure machine noise before the run and warn when it is high.
    pub noise_check: bool,
    pub warmup: u32,
    pub order: Order,
    pub seed: Option<u64>,
    pub timeout: Option<Duration>,
    pub cpus: Option<CpuSet>,
    pub prepare: Option<Template>,
    pub cleanup: Option<Template>,
    pub setup: Option<Template>,
    pub teardown: Option<Template>,
    pub matrix: Vec<Param>,
    pub service: Option<ServiceSpec>,
    pub monitor: Option<MonitorConfig>,
    pub profile: Option<ProfileConfig>,
    pub workload: WorkloadSpec,
}

impl Experiment {
    /// Reads and checks an experiment file.
    pub fn from_path(path: &Path) -> Result<Experiment, FileError> {
        let text = std::fs::read_to_string(path).map_err(|e| FileError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            message: format!("cannot read the experiment file: {e}"),
        })?;
        Experiment::parse(path, &text)
    }

    /// Checks an experiment given as text (`path` is used in messages).
    pub fn parse(path: &Path, text: &str) -> Result<Experiment, FileError> {
        let loc = Locator { path, text };
        let probe: KindProbe = toml::from_str(text).map_err(|e| toml_error(&loc, &e))?;
        let kind = probe
            .workload
            .ok_or_else(|| loc.nowhere("missing [workload] table (what each trial runs)"))?
            .kind
            .ok_or_else(|| loc.nowhere("missing workload.kind: expected kind = \"command\""))?;
        match kind.get_ref().as_str() {
            "command" => {
                let raw: RawFile<RawCommandWorkload> =
                    toml::from_str(text).map_err(|e| toml_error(&loc, &e))?;
                build(&loc, raw, |c, w| {
                    Ok(WorkloadSpec::Command(command_spec(c, w)?))
                })
            }
            k @ ("http" | "scimark" | "disk") => {
                let raw: RawFile<Spanned<toml::Table>> =
                    toml::from_str(text).map_err(|e| toml_error(&loc, &e))?;
                build(&loc, raw, |c, w| crate::workload::table_spec(c, k, w))
            }
            other => Err(loc.at(
                kind.span().start,
                format!(
                    "unknown workload kind {other:?}: expected one of {}",
                    KINDS
                        .iter()
                        .map(|k| format!("\"{k}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Number of configurations (points of the matrix).
    pub fn config_count(&self) -> usize {
        self.matrix.iter().map(|p| p.values.len()).product()
    }
}

fn toml_error(loc: &Locator, e: &toml::de::Error) -> FileError {
    // serde names Rust types; say what a TOML writer would.
    let msg = e
        .message()
        .trim()
        .replace("expected i64", "expected an integer")
        .replace("expected u64", "expected a non-negative integer")
        .replace("expected a borrowed string", "expected a string")
        .replace("expected f64", "expected a number");
    match e.span() {
        Some(span) => loc.at(span.start, msg),
        None => loc.nowhere(msg),
    }
}

/// Shared checking context: the file and the names placeholders may use.
pub(crate) struct Checker<'a> {
    pub loc: Locator<'a>,
    pub names: Vec<String>,
    /// A value for every placeholder (first matrix values), to check rendered tables.
    pub sample: std::collections::BTreeMap<String, String>,
}

impl Checker<'_> {
    pub fn template(&self, s: &SStr) -> Result<Template, FileError> {
        let known = |n: &str| BUILTINS.contains(&n) || self.names.iter().any(|m| m == n);
        Template::parse(s.get_ref(), &known).map_err(|u| {
            let at = self.loc.inside_string(s.span(), s.get_ref(), u.offset);
            let mut known: Vec<&str> = self.names.iter().map(|s| s.as_str()).collect();
            known.extend(BUILTINS);
            self.loc.at(
                at,
                format!(
                    "unknown placeholder {{{}}}: expected a matrix parameter or a built-in ({}); write {{{{ for a literal brace",
                    u.name,
                    known.join(", ")
                ),
            )
        })
    }

    pub fn command(&self, s: &SStr, shell: bool) -> Result<Template, FileError> {
        if s.get_ref().trim().is_empty() {
            return Err(self.loc.at(s.span().start, "empty command"));
        }
        if !shell && shlex::split(s.get_ref()).is_none() {
            return Err(self.loc.at(
                s.span().start,
                "unbalanced quotes in the command (it is split like a shell splits words; set shell = true to run it with sh -c)",
            ));
        }
        self.template(s)
    }

    pub fn duration(&self, s: &SStr) -> Result<Duration, FileError> {
        // perflab's one duration grammar (crates/units), as every flag takes it.
        let d = perflab_units::parse_duration(s.get_ref()).map_err(|e| {
            self.loc.at(
                s.span().start,
                format!(
                    "bad duration {:?}: expected {}, e.g. \"30s\"",
                    e.value, e.expected
                ),
            )
        })?;
        if d.is_zero() {
            return Err(self
                .loc
                .at(s.span().start, "duration must be greater than zero"));
        }
        Ok(d)
    }

    pub fn cpus(&self, s: &SStr) -> Result<CpuSet, FileError> {
        let set = CpuSet::parse(s.get_ref()).map_err(|e| self.loc.at(s.span().start, e))?;
        set.check_online()
            .map_err(|e| self.loc.at(s.span().start, e))?;
        Ok(set)
    }

    pub fn env(
        &self,
        env: &std::collections::BTreeMap<String, SStr>,
    ) -> Result<Vec<(String, Template)>, FileError> {
        env.iter()
            .map(|(k, v)| Ok((k.clone(), self.template(v)?)))
            .collect()
    }
}

fn build<W>(
    loc: &Locator,
    raw: RawFile<W>,
    workload: impl FnOnce(&Checker, W) -> Result<WorkloadSpec, FileError>,
) -> Result<Experiment, FileError> {
    let matrix = matrix(loc, raw.matrix.unwrap_or_default())?;
    let c = Checker {
        loc: Locator {
            path: loc.path,
            text: loc.text,
        },
        names: matrix.iter().map(|p| p.name.clone()).collect(),
        sample: matrix
            .iter()
            .map(|p| (p.name.clone(), crate::plan::value_text(&p.values[0])))
            .chain(
                [
                    ("repetition", "1"),
                    ("trial", "1"),
                    ("run_dir", "/tmp"),
                    ("port", "8080"),
                    ("perflab", "perflab"),
                ]
                .map(|(a, b)| (a.to_string(), b.to_string())),
            )
            .collect(),
    };
    let e = raw.experiment;
    let positive = |v: &Option<Spanned<i64>>, what: &str, default: u32, min: i64| match v {
        None => Ok(default),
        Some(s) if *s.get_ref() < min || *s.get_ref() > 100_000 => Err(loc.at(
            s.span().start,
            format!(
                "{what} must be an integer from {min} to 100000, found {}",
                s.get_ref()
            ),
        )),
        Some(s) => Ok(*s.get_ref() as u32),
    };
    let order = match &e.order {
        None => Order::Interleaved,
        Some(o) => match o.get_ref().as_str() {
            "interleaved" => Order::Interleaved,
            "random" => Order::Random,
            "sequential" => Order::Sequential,
            other => {
                return Err(loc.at(
                    o.span().start,
                    format!("unknown order {other:?}: expected \"interleaved\", \"random\" or \"sequential\""),
                ))
            }
        },
    };
    let seed = match &e.seed {
        Some(s) if *s.get_ref() < 0 => {
            return Err(loc.at(s.span().start, "seed must be a non-negative integer"))
        }
        Some(s) => Some(*s.get_ref() as u64),
        None => None,
    };
    let name = match &e.name {
        Some(n) if n.get_ref().trim().is_empty() => {
            return Err(loc.at(n.span().start, "experiment name is empty"))
        }
        Some(n) => n.get_ref().clone(),
        None => loc
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "experiment".into()),
    };
    let opt_t = |s: &Option<SStr>| s.as_ref().map(|s| c.command(s, true)).transpose();
    let service = raw.service.map(|s| service(&c, s)).transpose()?;
    let monitor = raw
        .monitor
        .map(|m| monitor(loc, m, service.is_some()))
        .transpose()?;
    let profile = raw
        .profile
        .map(|p| profile(loc, p, service.is_some()))
        .transpose()?;
    let workload = workload(&c, raw.workload)?;
    if let Some(primary) = &e.primary {
        let named = workload.metric_names();
        for p in primary {
            let known = BUILTIN_METRICS.contains(&p.get_ref().as_str())
                || named.iter().any(|m| m == p.get_ref());
            if !known {
                return Err(loc.at(
                    p.span().start,
                    format!("primary metric {:?} is not measured: expected one of the workload's metrics or {}", p.get_ref(), BUILTIN_METRICS.join(", ")),
                ));
            }
        }
    }
    Ok(Experiment {
        name,
        description: e.description.clone(),
        path: loc.path.to_path_buf(),
        text: loc.text.to_string(),
        repetitions: repetitions(loc, &e, order)?,
        primary: e
            .primary
            .iter()
            .flatten()
            .map(|p| p.get_ref().clone())
            .collect(),
        noise_check: e.noise_check.unwrap_or(true),
        warmup: positive(&e.warmup, "warmup", 1, 0)?,
        order,
        seed,
        timeout: e.timeout.as_ref().map(|t| c.duration(t)).transpose()?,
        cpus: e.cpus.as_ref().map(|s| c.cpus(s)).transpose()?,
        prepare: opt_t(&e.prepare)?,
        cleanup: opt_t(&e.cleanup)?,
        setup: opt_t(&e.setup)?,
        teardown: opt_t(&e.teardown)?,
        matrix,
        service,
        monitor,
        profile,
        workload,
    })
}

fn profile(loc: &Locator, p: RawProfile, has_service: bool) -> Result<ProfileConfig, FileError> {
    let service = match &p.target {
        None => has_service,
        Some(t) => match t.get_ref().as_str() {
            "service" if has_service => true,
            "service" => {
                return Err(loc.at(
                    t.span().start,
                    "profile.target = \"service\" needs a [service]",
                ))
            }
            "system" => false,
            other => {
                return Err(loc.at(
                    t.span().start,
                    format!("unknown profile.target {other:?}: expected \"service\" or \"system\""),
                ))
            }
        },
    };
    let repetitions = match &p.repetitions {
        None => vec![1],
        Some(r) => match r.get_ref() {
            toml::Value::String(s) if s == "all" => Vec::new(),
            toml::Value::Integer(i) if *i >= 1 => vec![*i as u32],
            toml::Value::Array(a)
                if !a.is_empty() && a.iter().all(|v| v.as_integer().is_some_and(|i| i >= 1)) =>
            {
                a.iter()
                    .filter_map(|v| v.as_integer())
                    .map(|i| i as u32)
                    .collect()
            }
            _ => {
                return Err(loc.at(
                    r.span().start,
                    "profile.repetitions: expected a repetition number, a list of them, or \"all\"",
                ))
            }
        },
    };
    let frequency = match &p.frequency {
        None => 999,
        Some(f) if (1..=100_000).contains(f.get_ref()) => *f.get_ref() as u32,
        Some(f) => {
            return Err(loc.at(
                f.span().start,
                "profile.frequency: expected 1 to 100000 samples/s",
            ))
        }
    };
    let top = match &p.top {
        None => 10,
        Some(t) if (1..=1000).contains(t.get_ref()) => *t.get_ref() as usize,
        Some(t) => return Err(loc.at(t.span().start, "profile.top: expected 1 to 1000 functions")),
    };
    Ok(ProfileConfig {
        service,
        repetitions,
        frequency,
        call_graph: p.call_graph.unwrap_or(true),
        top,
    })
}

fn monitor(loc: &Locator, m: RawMonitor, has_service: bool) -> Result<MonitorConfig, FileError> {
    use perflab_telemetry::Probe;
    let interval = match &m.interval {
        None => Duration::from_secs(1),
        Some(i) => perflab_telemetry::parse_interval(i.get_ref()).map_err(|e| {
            loc.at(
                i.span().start,
                format!("monitor.interval: {e} (e.g. \"1s\", \"250ms\"; at least 50ms)"),
            )
        })?,
    };
    let probes = match &m.probes {
        None => {
            let mut p = vec!["cpu", "sched", "memory", "disk", "net", "sockets"];
            if has_service {
                p.push("process");
            }
            Probe::parse_list(&p).map_err(|e| loc.nowhere(e.to_string()))?
        }
        Some(list) => {
            let mut out = Vec::new();
            for p in list {
                let probe = Probe::parse_list(&[p.get_ref()]).map_err(|e| {
                    loc.at(
                        p.span().start,
                        format!("monitor.probes: {e} (expected cpu, sched, memory, disk, net, sockets, nfs, process)"),
                    )
                })?;
                if probe.contains(&Probe::Process) && !has_service {
                    return Err(loc.at(
                        p.span().start,
                        "the process probe follows the service under test, and this experiment has no [service]",
                    ));
                }
                out.extend(probe);
            }
            out
        }
    };
    Ok(MonitorConfig { interval, probes })
}

fn repetitions(loc: &Locator, e: &RawExperiment, order: Order) -> Result<Repetitions, FileError> {
    let int = |v: &Option<Spanned<i64>>, what: &str, default: u32| match v {
        None => Ok(default),
        Some(s) if *s.get_ref() < 1 || *s.get_ref() > 100_000 => Err(loc.at(
            s.span().start,
            format!(
                "{what} must be an integer from 1 to 100000, found {}",
                s.get_ref()
            ),
        )),
        Some(s) => Ok(*s.get_ref() as u32),
    };
    let Some(r) = &e.repetitions else {
        for (v, what) in [
            (&e.min_repetitions, "min_repetitions"),
            (&e.max_repetitions, "max_repetitions"),
        ] {
            if let Some(s) = v {
                return Err(loc.at(
                    s.span().start,
                    format!("{what} only applies with repetitions = \"auto\""),
                ));
            }
        }
        return Ok(Repetitions::Fixed(5));
    };
    match r.get_ref() {
        toml::Value::Integer(n) if (1..=100_000).contains(n) => Ok(Repetitions::Fixed(*n as u32)),
        toml::Value::String(s) if s == "auto" => {
            if order == Order::Sequential {
                return Err(loc.at(
                    r.span().start,
                    "repetitions = \"auto\" adds interleaved rounds: it cannot be combined with order = \"sequential\"",
                ));
            }
            let min = int(&e.min_repetitions, "min_repetitions", 5)?;
            let max = int(&e.max_repetitions, "max_repetitions", 30)?;
            if min < 2 || max < min {
                let at = e
                    .min_repetitions
                    .as_ref()
                    .or(e.max_repetitions.as_ref())
                    .map(|s| s.span().start)
                    .unwrap_or(r.span().start);
                return Err(loc.at(
                    at,
                    format!("need 2 <= min_repetitions <= max_repetitions, found {min} and {max}"),
                ));
            }
            let target = match &e.target_precision {
                None => 0.02,
                Some(t) => {
                    let v = match t.get_ref() {
                        toml::Value::Float(f) => Some(*f),
                        toml::Value::String(s) => s
                            .trim()
                            .strip_suffix('%')
                            .and_then(|p| p.trim().parse::<f64>().ok())
                            .map(|p| p / 100.0),
                        _ => None,
                    };
                    match v {
                        Some(v) if v > 0.0 && v < 1.0 => v,
                        _ => return Err(loc.at(t.span().start, "target_precision must be a fraction like 0.02 or a percentage like \"2%\" (between 0 and 100 %)")),
                    }
                }
            };
            Ok(Repetitions::Auto { min, max, target })
        }
        _ => Err(loc.at(
            r.span().start,
            format!(
                "repetitions must be an integer from 1 to 100000 or \"auto\", found {}",
                r.get_ref()
            ),
        )),
    }
}

fn matrix(loc: &Locator, raw: RawMatrix) -> Result<Vec<Param>, FileError> {
    let mut out: Vec<Param> = Vec::new();
    for (key, value) in raw.0 {
        let name = key.get_ref().clone();
        let at = value.span().start;
        if !crate::template::is_ident(&name) {
            return Err(loc.at(
                key.span().start,
                format!("matrix parameter {name:?} is not a valid name: expected letters, digits and _ (not starting with a digit)"),
            ));
        }
        if BUILTINS.contains(&name.as_str()) {
            return Err(loc.at(
                key.span().start,
                format!(
                    "matrix parameter {name:?} clashes with the built-in placeholder of that name"
                ),
            ));
        }
        let values = match value.get_ref() {
            toml::Value::Array(a) => scalars(loc, at, &name, a)?,
            toml::Value::Table(t) => {
                if let Some(v) = t.get("values") {
                    if t.len() != 1 {
                        return Err(loc.at(at, format!("matrix parameter {name:?}: {{ values = [...] }} takes no other keys")));
                    }
                    match v {
                        toml::Value::Array(a) => scalars(loc, at, &name, a)?,
                        _ => return Err(loc.at(at, format!("matrix parameter {name:?}: values must be a list"))),
                    }
                } else {
                    range(loc, at, &name, t)?
                }
            }
            other => {
                return Err(loc.at(
                    at,
                    format!(
                        "matrix parameter {name:?} is a {}: expected a list of values, {{ from = 1, to = 8, step = 1 }} or {{ values = [...] }}",
                        other.type_str()
                    ),
                ))
            }
        };
        out.push(Param { name, values });
    }
    Ok(out)
}

fn scalars(
    loc: &Locator,
    at: usize,
    name: &str,
    a: &[toml::Value],
) -> Result<Vec<serde_json::Value>, FileError> {
    if a.is_empty() {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?} has an empty list of values: give at least one"),
        ));
    }
    let mut out = Vec::new();
    for v in a {
        let j = match v {
            toml::Value::String(s) => serde_json::Value::from(s.clone()),
            toml::Value::Integer(i) => serde_json::Value::from(*i),
            toml::Value::Float(f) if f.is_finite() => serde_json::Value::from(*f),
            toml::Value::Boolean(b) => serde_json::Value::from(*b),
            other => {
                return Err(loc.at(
                    at,
                    format!("matrix parameter {name:?}: values must be strings, numbers or booleans, found a {}", other.type_str()),
                ))
            }
        };
        if out.contains(&j) {
            return Err(loc.at(
                at,
                format!("matrix parameter {name:?} lists the value {j} twice"),
            ));
        }
        out.push(j);
    }
    Ok(out)
}

fn range(
    loc: &Locator,
    at: usize,
    name: &str,
    t: &toml::Table,
) -> Result<Vec<serde_json::Value>, FileError> {
    let expected = "expected { from = 1, to = 8, step = 1 } (step optional, default 1)";
    for k in t.keys() {
        if !matches!(k.as_str(), "from" | "to" | "step") {
            return Err(loc.at(
                at,
                format!("matrix parameter {name:?}: unknown key {k:?} in range; {expected}"),
            ));
        }
    }
    let num = |k: &str| -> Result<Option<f64>, FileError> {
        match t.get(k) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(toml::Value::Float(f)) => Ok(Some(*f)),
            Some(_) => Err(loc.at(
                at,
                format!("matrix parameter {name:?}: {k} must be a number; {expected}"),
            )),
        }
    };
    let (Some(from), Some(to)) = (num("from")?, num("to")?) else {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: range needs from and to; {expected}"),
        ));
    };
    let step = num("step")?.unwrap_or(1.0);
    if step <= 0.0 || !step.is_finite() {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: step must be positive, found {step}"),
        ));
    }
    if from > to {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: range runs backwards (from {from} > to {to})"),
        ));
    }
    let count = ((to - from) / step + 1e-9).floor() as usize + 1;
    if count > 10_000 {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: range has {count} values, more than 10000"),
        ));
    }
    let ints = [t.get("from"), t.get("to"), t.get("step")]
        .iter()
        .all(|v| !matches!(v, Some(toml::Value::Float(_))));
    Ok((0..count)
        .map(|i| {
            let v = from + step * i as f64;
            if ints {
                serde_json::Value::from(v.round() as i64)
            } else {
                serde_json::Value::from((v * 1e12).round() / 1e12)
            }
        })
        .collect())
}

fn service(c: &Checker, s: RawService) -> Result<ServiceSpec, FileError> {
    let ready_timeout = s
        .ready
        .as_ref()
        .and_then(|r| r.timeout.as_ref())
        .map(|t| c.duration(t))
        .transpose()?
        .unwrap_or(Duration::from_secs(10));
    let ready = match s.ready {
        None => Ready::Started,
        Some(r) => {
            let n = [r.tcp.is_some(), r.http.is_some(), r.log.is_some()]
                .iter()
                .filter(|b| **b)
                .count();
            if n > 1 {
                let at = r
                    .tcp
                    .as_ref()
                    .or(r.http.as_ref())
                    .map(|s| s.span().start)
                    .unwrap_or(0);
                return Err(c.loc.at(
                    at,
                    "service.ready takes one of tcp, http or log, not several",
                ));
            }
            if let Some(t) = &r.tcp {
                Ready::Tcp(c.template(t)?)
            } else if let Some(h) = &r.http {
                Ready::Http(c.template(h)?)
            } else if let Some(l) = &r.log {
                Ready::Log(regex::Regex::new(l.get_ref()).map_err(|e| {
                    c.loc
                        .at(l.span().start, format!("bad ready.log regex: {e}"))
                })?)
            } else {
                Ready::Started
            }
        }
    };
    let stop_signal = match &s.stop_signal {
        None => libc::SIGTERM,
        Some(sig) => signal_number(sig.get_ref()).ok_or_else(|| {
            c.loc.at(
                sig.span().start,
                format!(
                    "unknown signal {:?}: expected TERM, INT, QUIT, HUP, USR1, USR2 or KILL",
                    sig.get_ref()
                ),
            )
        })?,
    };
    let files = s
        .files
        .iter()
        .map(|(name, body)| {
            if name.contains('/') || name.starts_with('.') || name.is_empty() {
                return Err(c.loc.at(
                    body.span().start,
                    format!("service file name {name:?} must be a plain file name (it is written into the run directory)"),
                ));
            }
            Ok((name.clone(), c.template(body)?))
        })
        .collect::<Result<_, _>>()?;
    Ok(ServiceSpec {
        command: c.command(&s.command, s.shell)?,
        shell: s.shell,
        files,
        cpus: s.cpus.as_ref().map(|x| c.cpus(x)).transpose()?,
        env: c.env(&s.env)?,
        cwd: s.cwd.as_ref().map(|x| c.template(x)).transpose()?,
        ready,
        ready_timeout,
        stop_signal,
        grace: s
            .grace
            .as_ref()
            .map(|g| c.duration(g))
            .transpose()?
            .unwrap_or(Duration::from_secs(5)),
    })
}

/// Signal number for a name like `TERM` or `SIGTERM`.
pub fn signal_number(name: &str) -> Option<i32> {
    Some(match name.trim().trim_start_matches("SIG") {
        "TERM" => libc::SIGTERM,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "HUP" => libc::SIGHUP,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "KILL" => libc::SIGKILL,
        _ => return None,
    })
}

fn command_spec(c: &Checker, w: RawCommandWorkload) -> Result<CommandSpec, FileError> {
    let leftovers = match &w.leftovers {
        None => Leftovers::Wait,
        Some(l) => match l.get_ref().as_str() {
            "wait" => Leftovers::Wait,
            "kill" => Leftovers::Kill,
            other => {
                return Err(c.loc.at(
                    l.span().start,
                    format!("unknown leftovers {other:?}: expected \"wait\" or \"kill\""),
                ))
            }
        },
    };
    let mut metrics = Vec::new();
    for (name, m) in w.metrics.0 {
        let at = m.span().start;
        let m = m.into_inner();
        let better = match &m.better {
            None => "higher".to_string(),
            Some(b) if matches!(b.get_ref().as_str(), "higher" | "lower") => b.get_ref().clone(),
            Some(b) => {
                return Err(c.loc.at(
                    b.span().start,
                    format!(
                        "better must be \"higher\" or \"lower\", found {:?}",
                        b.get_ref()
                    ),
                ))
            }
        };
        let source = match (&m.regex, &m.json) {
            (Some(r), None) => {
                let re = regex::Regex::new(r.get_ref()).map_err(|e| {
                    c.loc.at(
                        r.span().start,
                        format!("bad regex for metric {:?}: {e}", name.get_ref()),
                    )
                })?;
                if re.captures_len() < 2 {
                    return Err(c.loc.at(
                        r.span().start,
                        format!("regex for metric {:?} has no capture group: put the number in parentheses", name.get_ref()),
                    ));
                }
                Source::Regex(re)
            }
            (None, Some(j)) => Source::Json(j.get_ref().clone()),
            _ => {
                return Err(c.loc.at(
                    at,
                    format!(
                    "metric {:?} needs exactly one of regex = \"...\" or json = \"path.to.field\"",
                    name.get_ref()
                ),
                ))
            }
        };
        if [
            "wall_s",
            "user_s",
            "sys_s",
            "peak_rss_bytes",
            "max_process_rss_bytes",
        ]
        .contains(&name.get_ref().as_str())
        {
            return Err(c.loc.at(
                name.span().start,
                format!(
                    "metric name {:?} is recorded by perflab itself: choose another name",
                    name.get_ref()
                ),
            ));
        }
        metrics.push(MetricSpec {
            name: name.get_ref().clone(),
            unit: m.unit.unwrap_or_default(),
            better,
            source,
        });
    }
    Ok(CommandSpec {
        command: c.command(&w.command, w.shell)?,
        shell: w.shell,
        env: c.env(&w.env)?,
        cwd: w.cwd.as_ref().map(|x| c.template(x)).transpose()?,
        allow_failure: w.allow_failure,
        leftovers,
        metrics,
    })
}
