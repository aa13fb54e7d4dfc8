//! A trial as data: the seam between planning a trial and running it
//! (docs/architecture.md, "the trial seam"). The runner renders an experiment's
//! workload for one trial into a [`TrialSpec`] — which kind, its options with every
//! placeholder filled in, the config's parameters, the trial's limits and what to
//! attach — and a [`WorkloadFactory`] turns it into a `Box<dyn Workload>`. Both the
//! spec and the [`Measurement`](crate::Measurement) that comes back serialise to JSON
//! and back, so the same trial can be sent to another host and run there by the same
//! code; and a test can hand the runner a fake factory.
//!
//! Each kind also says here which metrics a run of it is compared on by default
//! ([`Kind::primary`]) and which it records ([`Kind::metric_names`]); [`Kind`] is the
//! one list of kinds.

use std::time::Duration;

pub use perflab_profile::CallGraphMode;
use perflab_units::Phrase;
use serde::{Deserialize, Serialize};

use crate::command::CommandWorkload;
use crate::compress::CompressSpec;
use crate::cpuset::CpuSet;
use crate::crypto::CryptoSpec;
use crate::disk::DiskSpec;
use crate::doctor::DoctorSpec;
use crate::http::HttpWorkload;
use crate::mem::MemSpec;
use crate::net::NetSpec;
use crate::profile::ProfileKind;
use crate::scimark::ScimarkSpec;
use crate::suite::SuiteSpec;
use crate::{Workload, WorkloadError};

/// A workload kind: the one list of them. An experiment file's `kind = "..."`, a run's
/// trial spec and the runner's defaults (metrics compared, programs recorded) all
/// come from here, so a new kind is added here (and in its command) only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Command,
    Http,
    Scimark,
    Disk,
    Compress,
    Mem,
    Crypto,
    Net,
    Suite,
    /// `perflab doctor`: the doctor's checks, the host's configuration and counters.
    Doctor,
    /// `perflab profile`: a sampling profile with perf.
    Profile,
}

/// An unknown kind name; its message lists the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown workload kind {name:?}: expected one of {}",
    Kind::quoted_names()
)]
pub struct UnknownKind {
    pub name: String,
}

impl Kind {
    /// Every kind, in the order the docs list them.
    pub const ALL: &'static [Kind] = &[
        Kind::Command,
        Kind::Http,
        Kind::Scimark,
        Kind::Disk,
        Kind::Compress,
        Kind::Mem,
        Kind::Crypto,
        Kind::Net,
        Kind::Suite,
        Kind::Doctor,
        Kind::Profile,
    ];

    /// The name written in files: `command`, `http`, ...
    pub fn name(self) -> &'static str {
        match self {
            Kind::Command => "command",
            Kind::Http => "http",
            Kind::Scimark => "scimark",
            Kind::Disk => "disk",
            Kind::Compress => "compress",
            Kind::Mem => "mem",
            Kind::Crypto => "crypto",
            Kind::Net => "net",
            Kind::Suite => "suite",
            Kind::Doctor => "doctor",
            Kind::Profile => "profile",
        }
    }

    /// `"command", "http", ...` for messages.
    pub fn quoted_names() -> String {
        Kind::ALL
            .iter()
            .map(|k| format!("\"{}\"", k.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the experiment reader builds this kind's workload itself (`command`:
    /// its argv, environment and metrics are templates rendered per trial) rather
    /// than keeping a table of options that [`Kind::options`] reads.
    pub fn is_command(self) -> bool {
        self == Kind::Command
    }

    /// Reads and checks the options of a table kind; the error names the field.
    /// `command` is built by the experiment reader itself.
    pub fn options(self, options: serde_json::Value) -> Result<KindSpec, Phrase> {
        /// The options as `T`, checked by its `validate`.
        fn read<T: serde::de::DeserializeOwned, E: Into<Phrase>>(
            v: serde_json::Value,
            validate: impl Fn(&T) -> Result<(), E>,
        ) -> Result<T, Phrase> {
            let t: T = serde_json::from_value(v).map_err(|e| Phrase::text(e.to_string()))?;
            validate(&t).map_err(Into::into)?;
            Ok(t)
        }
        Ok(match self {
            Kind::Command => {
                return Err("kind \"command\" is read by the experiment file reader".into())
            }
            Kind::Http => {
                // The load itself is checked here; its `agents`, by whoever runs it.
                HttpWorkload::check(crate::http::split_agents(&options)?.0)?;
                KindSpec::Http(options)
            }
            Kind::Scimark => KindSpec::Scimark(read(options, ScimarkSpec::validate)?),
            Kind::Disk => KindSpec::Disk(read(options, |s: &DiskSpec| {
                s.validate().map_err(|e| match e {
                    crate::disk::DiskError::Invalid(p) => p,
                    other => Phrase::text(other.describe()),
                })
            })?),
            Kind::Compress => KindSpec::Compress(read(options, CompressSpec::validate)?),
            Kind::Mem => KindSpec::Mem(read(options, MemSpec::validate)?),
            Kind::Crypto => KindSpec::Crypto(read(options, CryptoSpec::validate)?),
            Kind::Net => KindSpec::Net(read(options, NetSpec::validate)?),
            Kind::Suite => KindSpec::Suite(read(options, SuiteSpec::validate)?),
            Kind::Doctor => KindSpec::Doctor(read(options, DoctorSpec::validate)?),
            Kind::Profile => KindSpec::Profile(read(options, |s: &ProfileKind| {
                s.validate().map_err(|e| e.to_string())
            })?),
        })
    }

    /// The metrics this workload records by name (its own, beyond wall/CPU time):
    /// what `repetitions = "auto"` watches unless the experiment names `primary`.
    pub fn metric_names(self, command_metrics: &[String]) -> Vec<String> {
        let own: &[&str] = match self {
            Kind::Command => return command_metrics.to_vec(),
            Kind::Http => crate::http::METRICS,
            Kind::Compress => crate::compress::METRICS,
            _ => return self.primary(command_metrics),
        };
        own.iter().map(|s| s.to_string()).collect()
    }

    /// The metrics a run of this kind is compared on unless the experiment names
    /// `primary`: wall and user time plus a command's own metrics; throughput and
    /// latency for http and disk; the composite score for SciMark.
    pub fn primary(self, command_metrics: &[String]) -> Vec<String> {
        let fixed: &[&str] = match self {
            Kind::Command => &["wall_s", "user_s"],
            Kind::Http => crate::http::PRIMARY,
            Kind::Scimark => crate::scimark::PRIMARY,
            Kind::Disk => crate::disk::PRIMARY,
            Kind::Compress => &["compress_mb_s", "decompress_mb_s"],
            Kind::Mem => crate::mem::METRICS,
            Kind::Crypto => &["ops_s"],
            Kind::Net => &["mb_s", "transactions_s"],
            Kind::Suite => &["score"],
            Kind::Doctor => crate::doctor::METRICS,
            // A profile's metrics are its top functions, `fn:NAME`: named by the run.
            Kind::Profile => &[],
        };
        let mut out: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
        if self == Kind::Command {
            out.extend(command_metrics.iter().cloned());
        }
        out
    }

    /// The programs a trial of this kind runs, recorded as host facts of the run
    /// (`command` runs what its command line names, which the caller adds).
    pub fn programs(self) -> &'static [&'static str] {
        match self {
            Kind::Command => &[],
            // The suite's compilers, JVM and peer server are host facts of its run.
            Kind::Suite => &["perflab", "cc", "gcc", "java", "nginx"],
            Kind::Profile => &["perflab", "perf"],
            _ => &["perflab"],
        }
    }

    /// Whether the per-trial doctor watches a trial of this kind. Not `doctor`: it is
    /// the doctor (a second watch would store a second `doctor.json`). Not `profile`:
    /// the watch's accept-queue poller and fd scans would be sampled into a
    /// system-wide profile.
    pub fn watched_by_doctor(self) -> bool {
        !matches!(self, Kind::Doctor | Kind::Profile)
    }

    /// Whether its configs are unlike items (the suite's), compared machine with
    /// machine rather than config with the first config.
    pub fn compares_machines(self) -> bool {
        self == Kind::Suite
    }

    /// The inventory hosts a workload of this kind with these options runs its load
    /// from (`agents = [...]` of an http workload); empty for every other kind.
    pub fn agents(self, options: &serde_json::Value) -> Vec<String> {
        if self != Kind::Http {
            return Vec::new();
        }
        options
            .get("agents")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(|s| s.trim().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl std::str::FromStr for Kind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Kind, UnknownKind> {
        Kind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKind {
                name: s.to_string(),
            })
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One trial's workload, rendered: no placeholders left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "options", rename_all = "lowercase")]
pub enum KindSpec {
    Command(CommandWorkload),
    /// The `perflab_load::LoadSpec` fields as written (checked by [`Kind::options`]).
    Http(serde_json::Value),
    Scimark(ScimarkSpec),
    Disk(DiskSpec),
    Compress(CompressSpec),
    Mem(MemSpec),
    Crypto(CryptoSpec),
    Net(NetSpec),
    Suite(SuiteSpec),
    Doctor(DoctorSpec),
    Profile(ProfileKind),
}

impl KindSpec {
    /// Which kind it is.
    pub fn kind(&self) -> Kind {
        match self {
            KindSpec::Command(_) => Kind::Command,
            KindSpec::Http(_) => Kind::Http,
            KindSpec::Scimark(_) => Kind::Scimark,
            KindSpec::Disk(_) => Kind::Disk,
            KindSpec::Compress(_) => Kind::Compress,
            KindSpec::Mem(_) => Kind::Mem,
            KindSpec::Crypto(_) => Kind::Crypto,
            KindSpec::Net(_) => Kind::Net,
            KindSpec::Suite(_) => Kind::Suite,
            KindSpec::Doctor(_) => Kind::Doctor,
            KindSpec::Profile(_) => Kind::Profile,
        }
    }

    /// The workload itself: what [`Builtin`] builds.
    pub fn build(&self) -> Result<Box<dyn Workload>, WorkloadError> {
        Ok(match self {
            KindSpec::Command(c) => Box::new(c.clone()),
            KindSpec::Http(o) => {
                Box::new(HttpWorkload::from_options(o).map_err(WorkloadError::Setup)?)
            }
            KindSpec::Scimark(s) => Box::new(s.clone()),
            KindSpec::Disk(s) => Box::new(s.clone()),
            KindSpec::Compress(s) => Box::new(s.clone()),
            KindSpec::Mem(s) => Box::new(s.clone()),
            KindSpec::Crypto(s) => Box::new(s.clone()),
            KindSpec::Net(s) => Box::new(s.clone()),
            KindSpec::Suite(s) => Box::new(s.clone()),
            KindSpec::Doctor(s) => Box::new(s.clone()),
            KindSpec::Profile(s) => Box::new(s.clone()),
        })
    }
}

/// What is attached to a trial besides its workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attachments {
    /// `[monitor]`: sample the system every this many seconds, with these probes.
    pub monitor: Option<MonitorAttachment>,
    /// `[profile]`: record this trial with perf.
    pub profile: Option<ProfileAttachment>,
    /// Watch the doctor's counters around the workload.
    pub doctor: bool,
}

/// `[monitor]` of one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorAttachment {
    pub interval_s: f64,
    pub probes: Vec<String>,
}

/// `[profile]` of one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileAttachment {
    pub frequency: u32,
    /// How call chains are recorded (reads the old bool too).
    pub call_graph: CallGraphMode,
    /// The user stack copied per sample with DWARF (None: perflab's default, 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dwarf_stack_bytes: Option<u32>,
    /// Also record blocked time per stack.
    #[serde(default)]
    pub off_cpu: bool,
    /// Name JIT-compiled Java and Node frames.
    #[serde(default = "crate::profile::yes")]
    pub jit: bool,
    /// Keep the top this-many functions as `fn:NAME` metrics.
    pub top: usize,
    /// Profile the service's process rather than the whole system.
    pub service: bool,
    /// Profile the workload's own process tree (`target = "workload"`): perf attaches
    /// to the command the trial starts before it runs ([`crate::AttachHook`]).
    #[serde(default)]
    pub workload: bool,
}

/// One trial, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialSpec {
    pub workload: KindSpec,
    /// The config's parameters.
    pub params: perflab_store::Params,
    pub repetition: u32,
    /// Position in the run (1-based).
    pub ordinal: u32,
    /// A warm-up trial: run, not recorded.
    pub warmup: bool,
    /// CPUs to pin the workload to (`"0-1,3"`).
    pub cpus: Option<String>,
    /// Wall-clock limit, in seconds.
    pub timeout_s: Option<f64>,
    pub attachments: Attachments,
}

impl TrialSpec {
    /// The trial's CPU set, read back from its text.
    pub fn cpu_set(&self) -> Result<Option<CpuSet>, WorkloadError> {
        self.cpus
            .as_deref()
            .map(CpuSet::parse)
            .transpose()
            .map_err(|e| WorkloadError::Setup(format!("cpus: {e}")))
    }

    /// Whether the trial is profiled with JIT frames named ([`TrialContext::jit`]).
    ///
    /// [`TrialContext::jit`]: crate::TrialContext::jit
    pub fn jit(&self) -> bool {
        self.attachments.profile.as_ref().is_some_and(|p| p.jit)
    }

    /// The trial's time limit.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_s.map(Duration::from_secs_f64)
    }
}

/// Builds the workload of a trial. The runner's default is [`Builtin`]; tests give it
/// a fake, and a remote worker would give it the same [`Builtin`] on the other host.
pub trait WorkloadFactory {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError>;

    /// This factory, when its workloads may be built and run from several threads at
    /// once — trials on different hosts, which a run then drives in parallel. `None`
    /// (the default) keeps a run's trials one at a time.
    fn concurrent(&self) -> Option<&(dyn WorkloadFactory + Sync)> {
        None
    }
}

/// The workloads of this library, by kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Builtin;

impl WorkloadFactory for Builtin {
    fn build(&self, trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        trial.workload.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Measurement, MetricValue};

    #[test]
    fn a_trial_and_its_measurement_round_trip_through_json() {
        let http = Kind::Http
            .options(serde_json::json!({"url": "http://127.0.0.1:1/", "duration": "2s"}))
            .unwrap();
        let mut params = perflab_store::Params::new();
        params.insert("level".into(), serde_json::json!(6));
        let t = TrialSpec {
            workload: http,
            params,
            repetition: 2,
            ordinal: 7,
            warmup: false,
            cpus: Some("0".into()),
            timeout_s: Some(30.0),
            attachments: Attachments {
                monitor: Some(MonitorAttachment {
                    interval_s: 0.5,
                    probes: vec!["cpu".into()],
                }),
                profile: None,
                doctor: true,
            },
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.contains(r#""kind":"http""#), "{text}");
        let back: TrialSpec = serde_json::from_str(&text).unwrap();
        assert_eq!(back, t);
        assert!(back.workload.build().is_ok());

        let m = Measurement {
            metrics: vec![MetricValue::new("rps", "req/s", 1234.5, "higher")],
            method: Some("cgroup-v2".into()),
            ..Default::default()
        };
        let back: Measurement = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn a_command_keeps_its_metric_regexes_through_json() {
        let c = CommandWorkload {
            argv: vec!["echo".into(), "took 12 ms".into()],
            metrics: vec![crate::metrics::MetricSpec {
                name: "took".into(),
                unit: "ms".into(),
                better: "lower".into(),
                source: crate::metrics::Source::Regex(regex::Regex::new(r"took (\d+)").unwrap()),
            }],
            ..Default::default()
        };
        let k = KindSpec::Command(c);
        let back: KindSpec = serde_json::from_str(&serde_json::to_string(&k).unwrap()).unwrap();
        assert_eq!(back, k);
        let KindSpec::Command(c) = back else { panic!() };
        let v = c.metrics[0].extract("took 12 ms", "").unwrap();
        assert_eq!(v.value, 12.0);
    }

    #[test]
    fn options_errors_name_the_field() {
        let e = Kind::Scimark
            .options(serde_json::json!({"lang": "cobol"}))
            .unwrap_err();
        assert!(e.to_string().contains("lang"), "{e}");
        let e = Kind::Http
            .options(serde_json::json!({"url": "http://x/", "bogus": 1}))
            .unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = "fio".parse::<Kind>().unwrap_err().to_string();
        assert!(e.contains(r#""command", "http""#), "{e}");
        for k in Kind::ALL {
            assert_eq!(k.name().parse::<Kind>(), Ok(*k));
            let json = serde_json::to_string(k).unwrap();
            assert_eq!(json, format!("\"{k}\""));
        }
    }
}
