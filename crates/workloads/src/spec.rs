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
//! ([`KindSpec::primary`]) and which it records ([`KindSpec::metric_names`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::command::CommandWorkload;
use crate::compress::CompressSpec;
use crate::cpuset::CpuSet;
use crate::crypto::CryptoSpec;
use crate::disk::DiskSpec;
use crate::http::HttpWorkload;
use crate::mem::MemSpec;
use crate::net::NetSpec;
use crate::scimark::ScimarkSpec;
use crate::suite::SuiteSpec;
use crate::{Workload, WorkloadError};

/// Workload kinds, as written in experiment files.
pub const KINDS: &[&str] = &[
    "command", "http", "scimark", "disk", "compress", "mem", "crypto", "net", "suite",
];

/// One trial's workload, rendered: no placeholders left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "options", rename_all = "lowercase")]
pub enum KindSpec {
    Command(CommandWorkload),
    /// The `perflab_load::LoadSpec` fields as written (checked by [`KindSpec::options`]).
    Http(serde_json::Value),
    Scimark(ScimarkSpec),
    Disk(DiskSpec),
    Compress(CompressSpec),
    Mem(MemSpec),
    Crypto(CryptoSpec),
    Net(NetSpec),
    Suite(SuiteSpec),
}

impl KindSpec {
    /// Reads and checks the options of a table kind (`http`, `scimark`, `disk`); the
    /// error names the field. `command` is built by the experiment reader itself.
    pub fn options(kind: &str, options: serde_json::Value) -> Result<KindSpec, String> {
        let de = |e: serde_json::Error| e.to_string();
        match kind {
            "http" => {
                // The load itself is checked here; its `agents`, by whoever runs it.
                HttpWorkload::checked(crate::http::split_agents(&options)?.0)?;
                Ok(KindSpec::Http(options))
            }
            "scimark" => {
                let s: ScimarkSpec = serde_json::from_value(options).map_err(de)?;
                s.validate()?;
                Ok(KindSpec::Scimark(s))
            }
            "disk" => {
                let s: DiskSpec = serde_json::from_value(options).map_err(de)?;
                s.validate().map_err(|e| e.to_string())?;
                Ok(KindSpec::Disk(s))
            }
            "compress" => {
                let s: CompressSpec = serde_json::from_value(options).map_err(de)?;
                s.validate()?;
                Ok(KindSpec::Compress(s))
            }
            "mem" => {
                let s: MemSpec = serde_json::from_value(options).map_err(de)?;
                s.validate()?;
                Ok(KindSpec::Mem(s))
            }
            "crypto" => {
                let s: CryptoSpec = serde_json::from_value(options).map_err(de)?;
                s.validate()?;
                Ok(KindSpec::Crypto(s))
            }
            "net" => {
                let s: NetSpec = serde_json::from_value(options).map_err(de)?;
                s.validate()?;
                Ok(KindSpec::Net(s))
            }
            "suite" => {
                let s: SuiteSpec = serde_json::from_value(options).map_err(de)?;
                s.validate()?;
                Ok(KindSpec::Suite(s))
            }
            other => Err(format!(
                "kind {other:?}: expected one of {}",
                KINDS.join(", ")
            )),
        }
    }

    /// `command`, `http`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            KindSpec::Command(_) => "command",
            KindSpec::Http(_) => "http",
            KindSpec::Scimark(_) => "scimark",
            KindSpec::Disk(_) => "disk",
            KindSpec::Compress(_) => "compress",
            KindSpec::Mem(_) => "mem",
            KindSpec::Crypto(_) => "crypto",
            KindSpec::Net(_) => "net",
            KindSpec::Suite(_) => "suite",
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
        })
    }

    /// The metrics this workload records by name (its own, beyond wall/CPU time):
    /// what `repetitions = "auto"` watches unless the experiment names `primary`.
    pub fn metric_names(kind: &str, command_metrics: &[String]) -> Vec<String> {
        match kind {
            "command" => command_metrics.to_vec(),
            "http" => crate::http::METRICS.iter().map(|s| s.to_string()).collect(),
            "compress" => crate::compress::METRICS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            other => Self::primary(other, command_metrics),
        }
    }

    /// The metrics a run of this kind is compared on unless the experiment names
    /// `primary`: wall and user time plus a command's own metrics; throughput and
    /// latency for http and disk; the composite score for SciMark.
    pub fn primary(kind: &str, command_metrics: &[String]) -> Vec<String> {
        let fixed: &[&str] = match kind {
            "command" => &["wall_s", "user_s"],
            "http" => crate::http::PRIMARY,
            "scimark" => crate::scimark::PRIMARY,
            "disk" => crate::disk::PRIMARY,
            "compress" => &["compress_mb_s", "decompress_mb_s"],
            "mem" => crate::mem::METRICS,
            "crypto" => &["ops_s"],
            "net" => &["mb_s", "transactions_s"],
            "suite" => &["score"],
            _ => &[],
        };
        let mut out: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
        if kind == "command" {
            out.extend(command_metrics.iter().cloned());
        }
        out
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
    pub call_graph: bool,
    /// Keep the top this-many functions as `fn:NAME` metrics.
    pub top: usize,
    /// Profile the service's process rather than the whole system.
    pub service: bool,
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
        let http = KindSpec::options(
            "http",
            serde_json::json!({"url": "http://127.0.0.1:1/", "duration": "2s"}),
        )
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
        let e = KindSpec::options("scimark", serde_json::json!({"lang": "cobol"})).unwrap_err();
        assert!(e.contains("lang"), "{e}");
        let e = KindSpec::options("http", serde_json::json!({"url": "http://x/", "bogus": 1}))
            .unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = KindSpec::options("fio", serde_json::json!({})).unwrap_err();
        assert!(e.contains("command, http"), "{e}");
    }
}
