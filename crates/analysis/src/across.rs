//! `perflab compare A B` when A and B are two runs, or ran on two hosts: what such a
//! comparison must say beside its ratios. Per metric the noise floor ([`crate::floor`],
//! the rule `perflab suite compare` uses) — a difference within it is "within noise",
//! never faster or slower; the host facts that differ ([`crate::facts`]: CPU, cores,
//! kernel, governor, pinning, tool versions, from the run's snapshot of its host or,
//! for a trial run on a fleet host, from that trial's `host.json`); and the recorded
//! parameters that differ but are not the axis compared (an http run's `io` engine).
//!
//! It is a step after the comparison ([`crate::compare::compare_metrics`]), not part of
//! it: the verdict a comparison computes stays its own, and [`Across::verdict`] only
//! overrides one that claims a difference the floor does not allow. A comparison
//! inside one run on one host has no [`Across`] ([`Across::load`] gives None): its
//! trials share the run's noise and its parameters are the axis.

use perflab_store::{HostInfo, RunRow, Store};
use serde_json::{json, Value};

use crate::compare::{PairReport, Row};
use crate::facts::{self, Fact};
use crate::floor::{Floor, RunNoise, WITHIN_NOISE};
use crate::samples::ConfigSamples;
use crate::select::Selector;
use crate::Verdict;

/// One side of the comparison: the run, the config, and the selector that named it
/// (its keys are the axis compared).
#[derive(Debug, Clone, Copy)]
pub struct SideRef<'a> {
    pub run: &'a RunRow,
    pub config: &'a ConfigSamples,
    pub selector: &'a Selector,
}

/// What a comparison across runs or hosts says beside its ratios.
#[derive(Debug, Clone)]
pub struct Across {
    /// Each run's CPU-loop noise before it started.
    pub noise: RunNoise,
    /// The floor of each compared metric, in the report's row order.
    pub floors: Vec<(String, Floor)>,
    /// Every host fact of the two sides (see [`Across::facts_differ`]).
    pub facts: Vec<Fact>,
    /// The parameters off the axis whose values differ.
    pub params: Vec<Fact>,
}

/// Where a side ran: the host's name (a fleet trial's inventory name, else the run's
/// hostname), its facts and its run's environment — a fleet trial's `host.json` when
/// the config's first ok trial has one, else the run's own host.
struct Place {
    name: String,
    host: HostInfo,
    env: Value,
}

fn place(store: &Store, s: SideRef<'_>) -> perflab_store::Result<Place> {
    let env = store.run_environment(s.run.id)?;
    let trial = store
        .trials(s.run.id)?
        .into_iter()
        .find(|t| t.config_id == s.config.config_id && t.status == "ok");
    if let Some(t) = trial {
        for (name, _, content) in store.trial_artifacts(t.id)? {
            let Some(doc) = (name == "host.json")
                .then(|| serde_json::from_slice::<Value>(&content).ok())
                .flatten()
            else {
                continue;
            };
            let host = doc
                .get("facts")
                .and_then(|f| serde_json::from_value::<HostInfo>(f.clone()).ok());
            if let (Some(name), Some(host)) = (doc.get("name").and_then(Value::as_str), host) {
                return Ok(Place {
                    name: name.to_string(),
                    host,
                    env,
                });
            }
        }
    }
    let host = facts::run_host(&env, &store.host(s.run.host_id)?);
    Ok(Place {
        name: host.hostname.clone(),
        host,
        env,
    })
}

impl Across {
    /// The floor, facts and parameters of comparing `b` with `a`, whose report is
    /// `report`; None when both sides are one run on one host.
    pub fn load(
        store: &Store,
        a: SideRef<'_>,
        b: SideRef<'_>,
        report: &PairReport,
    ) -> perflab_store::Result<Option<Across>> {
        let (pa, pb) = (place(store, a)?, place(store, b)?);
        if a.run.id == b.run.id && pa.name == pb.name {
            return Ok(None);
        }
        let noise = RunNoise::of(&pa.env, &pb.env);
        let floors = report
            .rows
            .iter()
            .filter_map(|r| {
                let (ma, mb) = (a.config.metric(&r.name)?, b.config.metric(&r.name)?);
                Some((r.name.clone(), noise.floor(&ma.values, &mb.values)))
            })
            .collect();
        let axis: Vec<String> = a
            .selector
            .iter()
            .chain(b.selector)
            .map(|(k, _)| k.clone())
            .collect();
        Ok(Some(Across {
            noise,
            floors,
            facts: facts::side_by_side(
                &facts::host_facts(&pa.host, &pa.env),
                &facts::host_facts(&pb.host, &pb.env),
            ),
            params: facts::params_differ(&a.config.params, &b.config.params, &axis),
        }))
    }

    /// The floor of a metric.
    pub fn floor(&self, metric: &str) -> Option<Floor> {
        self.floors
            .iter()
            .find(|(m, _)| m == metric)
            .map(|(_, f)| *f)
    }

    /// Whether the row's verdict claims a difference (better or worse) that lies
    /// within its metric's noise floor.
    pub fn within_noise(&self, row: &Row) -> bool {
        let (Some(c), Some(f)) = (row.comparison(), self.floor(&row.name)) else {
            return false;
        };
        matches!(c.verdict, Verdict::Better | Verdict::Worse) && f.holds(c.ratio)
    }

    /// The row's verdict for a table: "within noise" where [`Across::within_noise`].
    pub fn verdict(&self, row: &Row) -> String {
        if self.within_noise(row) {
            WITHIN_NOISE.to_string()
        } else {
            row.verdict_text()
        }
    }

    /// Adds `noise_floor` to each `comparisons` entry of the JSON document (matched by
    /// `metric`) and overrides the verdict of one within noise (its `regression_pct`
    /// becomes null: it is no regression).
    pub fn patch_json(&self, report: &PairReport, entries: &mut [Value]) {
        for e in entries {
            let Some(row) = report.rows.iter().find(|r| e["metric"] == r.name.as_str()) else {
                continue;
            };
            e["noise_floor"] = json!(self.floor(&row.name).map(|f| f.0));
            if self.within_noise(row) {
                e["verdict"] = json!(WITHIN_NOISE);
                e["regression_pct"] = Value::Null;
            }
        }
    }

    /// The host facts whose values differ.
    pub fn facts_differ(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter().filter(|f| f.differs())
    }

    /// The document's own fields: `noise_cv`, `host_facts_differ`, `params_differ`.
    pub fn json(&self) -> Value {
        json!({
            "noise_cv": {"a": self.noise.a, "b": self.noise.b},
            "host_facts_differ": self.facts_differ().map(|f| f.json("fact")).collect::<Vec<_>>(),
            "params_differ": self.params.iter().map(|f| f.json("param")).collect::<Vec<_>>(),
        })
    }

    /// One warning per parameter off the axis that differs, naming both values.
    pub fn warnings(&self) -> Vec<String> {
        self.params
            .iter()
            .map(|p| {
                let used = |side: &str, v: &str| match v {
                    facts::ABSENT => format!("{side} did not record it"),
                    v => format!("{side} used {v}"),
                };
                format!(
                    "the runs differ in {name}: {a}, {b} — the ratios measure that difference \
                     too (name it in both sides, e.g. RUN:{name}=VALUE, if it is what you compare)",
                    name = p.name,
                    a = used("A", &p.a),
                    b = used("B", &p.b)
                )
            })
            .collect()
    }

    /// The report's regressions over `pct` that are not within noise.
    pub fn regressions_over<'r>(&self, report: &'r PairReport, pct: f64) -> Vec<(&'r str, f64)> {
        report
            .regressions_over(pct)
            .into_iter()
            .filter(|(m, _)| {
                !report
                    .rows
                    .iter()
                    .any(|r| r.name == *m && self.within_noise(r))
            })
            .collect()
    }
}
