//! The experiment file exactly as written: serde structures with spans, before any
//! checking. `deny_unknown_fields` everywhere, so a misspelt key is an error with its
//! place; every string that may hold placeholders keeps its span so an unknown
//! placeholder can be pointed at.

use std::collections::BTreeMap;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

pub type SStr = Spanned<String>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile<W> {
    pub experiment: RawExperiment,
    #[serde(default)]
    pub matrix: Option<RawMatrix>,
    #[serde(default)]
    pub service: Option<RawService>,
    #[serde(default)]
    pub monitor: Option<RawMonitor>,
    #[serde(default)]
    pub profile: Option<RawProfile>,
    pub workload: W,
    /// `[quick]`: tables merged over the file by `perflab run --quick` (see
    /// `Experiment::quick_form`); checked there, not here.
    #[serde(default, rename = "quick")]
    pub _quick: Option<toml::Value>,
    /// `[[hosts]]`: an inventory kept in the experiment file, read by perflab-fleet.
    #[serde(default, rename = "hosts")]
    pub _hosts: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    /// The inventory host to profile on (`[profile] host = "b"`).
    pub host: Option<SStr>,
    pub target: Option<SStr>,
    pub repetitions: Option<Spanned<toml::Value>>,
    pub frequency: Option<Spanned<i64>>,
    /// `true` (frame pointers), `false`, or a mode: `"fp"`, `"dwarf"`, `"auto"`.
    pub call_graph: Option<perflab_profile::CallGraphMode>,
    /// The user stack copied per sample where stacks are unwound with DWARF (bytes).
    pub dwarf_stack_bytes: Option<Spanned<i64>>,
    pub off_cpu: Option<bool>,
    pub jit: Option<bool>,
    pub top: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMonitor {
    /// The inventory host whose telemetry is sampled (default: this one).
    pub host: Option<SStr>,
    pub interval: Option<SStr>,
    pub probes: Option<Vec<SStr>>,
}

/// Reads only `workload.kind`, to pick the workload's structure for the second pass.
#[derive(Debug, Deserialize)]
pub struct KindProbe {
    pub workload: Option<KindOnly>,
}

#[derive(Debug, Deserialize)]
pub struct KindOnly {
    pub kind: Option<SStr>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    pub name: Option<SStr>,
    pub description: Option<String>,
    pub repetitions: Option<Spanned<toml::Value>>,
    pub min_repetitions: Option<Spanned<i64>>,
    pub max_repetitions: Option<Spanned<i64>>,
    pub target_precision: Option<Spanned<toml::Value>>,
    /// With `repetitions = "auto"`: `"precise"` (default) or `"decided"`.
    pub stop: Option<SStr>,
    /// With `stop = "decided"`: the equivalence margin (`"2%"` or 0.02).
    pub equivalence: Option<Spanned<toml::Value>>,
    pub primary: Option<Vec<SStr>>,
    pub noise_check: Option<bool>,
    pub warmup: Option<Spanned<i64>>,
    pub order: Option<SStr>,
    pub seed: Option<Spanned<i64>>,
    pub timeout: Option<SStr>,
    pub cpus: Option<SStr>,
    /// Hosts of the inventory to run every config on (one more dimension, `host`).
    pub on: Option<Vec<SStr>>,
    pub prepare: Option<SStr>,
    pub cleanup: Option<SStr>,
    pub setup: Option<SStr>,
    pub teardown: Option<SStr>,
    pub requires: Option<RawRequires>,
}

/// `[experiment.requires]`: what this machine must have for the experiment to run.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRequires {
    #[serde(default)]
    pub commands: Vec<String>,
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub root: bool,
    pub why: Option<String>,
}

/// `[matrix]` in file order.
#[derive(Debug, Default)]
pub struct RawMatrix(pub Vec<(SStr, Spanned<toml::Value>)>);

impl<'de> Deserialize<'de> for RawMatrix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMatrix;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table of parameters, each a list of values or a range")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<RawMatrix, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<SStr>()? {
                    let v = m.next_value::<Spanned<toml::Value>>()?;
                    out.push((k, v));
                }
                Ok(RawMatrix(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawService {
    /// The inventory host the service runs on (default: this one).
    pub host: Option<SStr>,
    pub command: SStr,
    #[serde(default)]
    pub shell: bool,
    #[serde(default)]
    pub files: BTreeMap<String, SStr>,
    pub cpus: Option<SStr>,
    #[serde(default)]
    pub env: BTreeMap<String, SStr>,
    pub cwd: Option<SStr>,
    pub ready: Option<RawReady>,
    pub stop_signal: Option<SStr>,
    pub grace: Option<SStr>,
    /// Events counted over the service's process tree, per trial.
    pub counters: Option<Vec<SStr>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReady {
    pub tcp: Option<SStr>,
    pub http: Option<SStr>,
    pub log: Option<SStr>,
    pub timeout: Option<SStr>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommandWorkload {
    /// Already checked by the kind probe; kept so `deny_unknown_fields` accepts it.
    #[allow(dead_code)]
    pub kind: SStr,
    /// The inventory host the workload runs on (default: this one).
    pub host: Option<SStr>,
    pub command: SStr,
    #[serde(default)]
    pub shell: bool,
    #[serde(default)]
    pub env: BTreeMap<String, SStr>,
    pub cwd: Option<SStr>,
    #[serde(default)]
    pub allow_failure: bool,
    pub leftovers: Option<SStr>,
    #[serde(default)]
    pub metrics: RawMetrics,
    /// Events counted over the command's process tree (`["instructions", ...]`).
    pub counters: Option<Vec<SStr>>,
}

/// `metrics.NAME = {...}` in file order.
#[derive(Debug, Default)]
pub struct RawMetrics(pub Vec<(SStr, Spanned<RawMetric>)>);

impl<'de> Deserialize<'de> for RawMetrics {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMetrics;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table of metrics: NAME = { regex = \"...\" } or { json = \"path\" }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<RawMetrics, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<SStr>()? {
                    out.push((k, m.next_value::<Spanned<RawMetric>>()?));
                }
                Ok(RawMetrics(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetric {
    pub regex: Option<SStr>,
    pub json: Option<SStr>,
    pub unit: Option<String>,
    pub better: Option<SStr>,
}
