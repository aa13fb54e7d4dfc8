//! Experiment files: read, check everything, and produce an [`Experiment`] — or a
//! [`FileError`] with file, line and column. Nothing runs from a file that did not
//! check out. The format is documented in `docs/experiment-file.md`.
//!
//! Parsing is two-pass: a lenient pass reads `workload.kind` (a
//! `perflab_workloads::spec::Kind`), then the whole file is read strictly with the
//! structure of that kind, so every error carries the span the TOML parser knows; a
//! value of the wrong type is reported with its key and the form expected.
//!
//! An experiment built from a command's flags is a [`Draft`] (draft.rs): serialised
//! into this same text and parsed here, so it is checked by the same rules.

use std::path::{Path, PathBuf};
use std::time::Duration;

use perflab_units::Phrase;
use perflab_workloads::command::Leftovers;
use perflab_workloads::cpuset::CpuSet;
use perflab_workloads::metrics::{MetricSpec, Source};
use perflab_workloads::spec::Kind;
use toml::Spanned;

use crate::error::{FileError, Locator};
use crate::raw::*;
use crate::template::{Template, BUILTINS};

mod check;
mod draft;
mod hosts;
mod process;
mod sections;

use check::{build, merge, toml_error};
pub(crate) use check::{plain_types, Checker};
pub use draft::{Draft, DraftError};
pub use hosts::HostRef;
pub use process::signal_number;
use process::{command_spec, service};
use sections::{matrix, monitor, profile, repetitions, stop};

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
    /// `host`: the inventory host sampled (None: this one).
    pub host: Option<HostRef>,
    pub interval: Duration,
    pub probes: Vec<perflab_telemetry::Probe>,
}

/// `[profile]`: a sampling profile of chosen trials.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// `host`: the inventory host profiled (None: this one).
    pub host: Option<HostRef>,
    /// Profile the service under test (else the whole system).
    pub service: bool,
    /// `target = "workload"`: profile the trial's own process tree (a command's),
    /// recorded from before it runs (else the whole system, or the service).
    pub workload: bool,
    /// Which repetitions of each config (empty: all).
    pub repetitions: Vec<u32>,
    pub frequency: u32,
    /// How call chains are recorded (`call_graph = true|false|"fp"|"dwarf"|"auto"`).
    pub call_graph: perflab_profile::CallGraphMode,
    /// `dwarf_stack_bytes`: the user stack copied per sample with DWARF (None: 8192).
    pub dwarf_stack_bytes: Option<u32>,
    /// `off_cpu = true`: also record blocked time per stack.
    pub off_cpu: bool,
    /// `jit = false` turns off naming JIT frames (on by default).
    pub jit: bool,
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

/// When `repetitions = "auto"` stops adding rounds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Stop {
    /// `stop = "precise"` (the default): every primary metric's 95 % CI of every
    /// config is within `target_precision` of its mean.
    #[default]
    Precise,
    /// `stop = "decided"`: every config's paired comparison with the first, on every
    /// primary metric, is decided — its ratio CI excludes 1 or lies within
    /// ±`equivalence` — with the repeated looks corrected
    /// (`perflab_stats::SequentialDesign`).
    Decided {
        /// The equivalence margin, a fraction (0.02 for 2 %).
        equivalence: f64,
    },
}

impl Stop {
    /// The default equivalence margin of `stop = "decided"`.
    pub const DEFAULT_EQUIVALENCE: f64 = 0.02;

    pub fn as_str(&self) -> &'static str {
        match self {
            Stop::Precise => "precise",
            Stop::Decided { .. } => "decided",
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
    /// `host`: the inventory host it runs on (None: this one).
    pub host: Option<HostRef>,
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
    /// Events counted over the service's process tree for each trial's duration.
    pub counters: Vec<perflab_telemetry::perfcount::Event>,
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
    /// Events counted over the command's process tree.
    pub counters: Vec<perflab_telemetry::perfcount::Event>,
}

/// What each trial runs: a command, whose templates the experiment reader checks and
/// the runner renders itself, or the option table of any other kind, kept as written
/// and rendered per trial into that kind's options (`crate::workload`). The kinds
/// themselves are `perflab_workloads::spec::Kind`: this holds one, never a list.
#[derive(Debug, Clone)]
pub enum WorkloadSpec {
    Command(CommandSpec),
    /// A table kind (`http`, `scimark`, ...): its options, placeholders and all.
    Options {
        kind: Kind,
        table: toml::Table,
    },
}

impl WorkloadSpec {
    /// Which kind it is.
    pub fn kind(&self) -> Kind {
        match self {
            WorkloadSpec::Command(_) => Kind::Command,
            WorkloadSpec::Options { kind, .. } => *kind,
        }
    }

    /// The option table, when this is a workload of kind `kind`.
    pub fn options_of(&self, kind: Kind) -> Option<&toml::Table> {
        match self {
            WorkloadSpec::Options { kind: k, table } if *k == kind => Some(table),
            _ => None,
        }
    }

    fn command_metrics(&self) -> Vec<String> {
        match self {
            WorkloadSpec::Command(c) => c.metrics.iter().map(|m| m.name.clone()).collect(),
            WorkloadSpec::Options { .. } => Vec::new(),
        }
    }

    /// Named metrics this workload records (for `primary` and auto repetitions).
    pub fn metric_names(&self) -> Vec<String> {
        self.kind().metric_names(&self.command_metrics())
    }

    /// The metrics runs of this workload are compared on when the file names no
    /// `primary` (the kind's own choice, `perflab_workloads::spec`).
    pub fn default_primary(&self) -> Vec<String> {
        self.kind().primary(&self.command_metrics())
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
    /// When `repetitions = "auto"` stops (always `Precise` for fixed repetitions).
    pub stop: Stop,
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
    /// `on`: the hosts every config runs on (the `host` parameter of the matrix).
    pub on: Vec<String>,
    pub service: Option<ServiceSpec>,
    pub monitor: Option<MonitorConfig>,
    pub profile: Option<ProfileConfig>,
    pub workload: WorkloadSpec,
    /// `[workload] host`: the inventory host the workload runs on (None: this one, or
    /// each host of `on`).
    pub workload_host: Option<HostRef>,
    /// `[experiment.requires]`: checked by [`Experiment::missing`] before anything runs.
    pub requires: crate::raw::RawRequires,
}

impl Experiment {
    /// What this machine lacks for the experiment (`[experiment.requires]`), in words;
    /// empty when it can run here.
    pub fn missing(&self) -> Vec<String> {
        let r = &self.requires;
        let mut out = Vec::new();
        // SAFETY: geteuid has no preconditions.
        if r.root && unsafe { libc::geteuid() } != 0 {
            out.push("root (it sets kernel parameters or mounts)".to_string());
        }
        for c in &r.commands {
            let found = std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(c).is_file()))
                || Path::new(c).is_file();
            if !found {
                out.push(format!("the command `{c}`"));
            }
        }
        for p in &r.paths {
            if !Path::new(p).exists() {
                out.push(p.clone());
            }
        }
        out
    }

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

    /// The same experiment run on `hosts` (`perflab run --on`): `on = [...]` written
    /// into its `[experiment]` table, so the stored text says where it ran and a
    /// resumed run runs there again. The hosts come from the caller's option for the
    /// field `on`, which its messages name by `name_of` (a command's flag for a field).
    pub fn on_hosts(
        &self,
        hosts: &[String],
        name_of: &dyn Fn(&str) -> String,
    ) -> Result<Experiment, FileError> {
        let loc = Locator {
            path: &self.path,
            text: &self.text,
        };
        if !self.on.is_empty() {
            return Err(loc.nowhere(
                Phrase::field("on")
                    .then(format!(
                        " {}: the file already says `on = {:?}`; give the hosts once",
                        hosts.join(","),
                        self.on
                    ))
                    .render(name_of),
            ));
        }
        let line = format!(
            "on = [{}]",
            hosts
                .iter()
                .map(|h| toml::Value::String(h.clone()).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut out = String::new();
        let mut done = false;
        for l in self.text.lines() {
            out.push_str(l);
            out.push('\n');
            if !done && l.trim() == "[experiment]" {
                out.push_str(&line);
                out.push('\n');
                done = true;
            }
        }
        if !done {
            return Err(loc.nowhere(
                Phrase::field("on")
                    .then(": no `[experiment]` header line to add `on` under")
                    .render(name_of),
            ));
        }
        Experiment::parse(&self.path, &out)
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
        let kind: Kind =
            kind.get_ref()
                .parse()
                .map_err(|e: perflab_workloads::spec::UnknownKind| {
                    loc.at(kind.span().start, e.to_string())
                })?;
        if kind.is_command() {
            let raw: RawFile<RawCommandWorkload> =
                toml::from_str(text).map_err(|e| toml_error(&loc, &e))?;
            return build(&loc, raw, |c, w| {
                let host = hosts::host_of(&c.loc, &w.host, "workload")?;
                Ok((WorkloadSpec::Command(command_spec(c, w)?), host))
            });
        }
        // Every other kind is a table of options its workload reads.
        let raw: RawFile<Spanned<toml::Table>> =
            toml::from_str(text).map_err(|e| toml_error(&loc, &e))?;
        build(&loc, raw, |c, mut w| {
            let host = hosts::take_table_host(&c.loc, &mut w)?;
            Ok((crate::workload::table_spec(c, kind, w)?, host))
        })
    }

    /// Reads a file in its quick form: its `[quick]` tables merged over it (tables
    /// merge key by key, anything else replaces), then checked like any file. The file
    /// as written is checked first, so its errors keep their lines; an error only the
    /// merge brings is reported as one of the quick form. The stored text is the
    /// merged file, so `--resume` continues the quick form. The caller's option that
    /// asks for it is the field `quick`, which the messages (and the stored text's
    /// first comment) name by `name_of` (a command's flag for a field).
    pub fn quick_form(
        path: &Path,
        name_of: &dyn Fn(&str) -> String,
    ) -> Result<Experiment, FileError> {
        let full = Experiment::from_path(path)?;
        let loc = Locator {
            path,
            text: &full.text,
        };
        let mut doc: toml::Table = toml::from_str(&full.text).map_err(|e| toml_error(&loc, &e))?;
        let quick = match doc.remove("quick") {
            Some(toml::Value::Table(t)) => t,
            Some(_) => {
                return Err(loc
                    .nowhere("`quick` must be a table ([quick.experiment], [quick.matrix], ...)"))
            }
            None => {
                return Err(loc.nowhere(
                    Phrase::text("this experiment has no [quick] table: run it without ")
                        .and_field("quick")
                        .then(", or add one (e.g. [quick.experiment] repetitions = 2)")
                        .render(name_of),
                ))
            }
        };
        const SECTIONS: [&str; 6] = [
            "experiment",
            "matrix",
            "service",
            "monitor",
            "profile",
            "workload",
        ];
        for (key, value) in quick {
            if !SECTIONS.contains(&key.as_str()) || !value.is_table() {
                return Err(loc.nowhere(format!(
                    "[quick.{key}]: expected one of the file's tables ({})",
                    SECTIONS.join(", ")
                )));
            }
            merge(
                doc.entry(key).or_insert_with(|| toml::Table::new().into()),
                value,
            );
        }
        let text = format!(
            "# the quick form of {} ([quick] merged over it by perflab run {})\n{}",
            path.display(),
            name_of("quick"),
            toml::to_string(&doc)
                .map_err(|e| loc.nowhere(format!("cannot write the quick form: {e}")))?
        );
        Experiment::parse(path, &text).map_err(|e| FileError {
            line: None,
            column: None,
            message: format!(
                "in the quick form ([quick] merged over the file): {}",
                e.message
            ),
            ..e
        })
    }

    /// The experiment file it was read from — for one built as a [`Draft`], the draft
    /// serialised: what a run stores and `--resume` and `export` read back.
    pub fn to_toml(&self) -> &str {
        &self.text
    }

    /// Number of configurations (points of the matrix).
    pub fn config_count(&self) -> usize {
        self.matrix.iter().map(|p| p.values.len()).product()
    }
}
