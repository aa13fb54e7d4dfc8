//! The machine suite's readings (`perflab suite machine`, `kind = "suite"`): one row
//! per item with its `score` and interval ([`rows`]), the memory curve ([`mem_curve`]),
//! and two machines side by side ([`compare`]): per item the ratio B/A of the scores
//! with its interval, the geometric mean of those ratios with its interval, each
//! host's A/A noise floor, and the difference of the two hosts' facts.
//!
//! The noise floor of an item is the larger of the two hosts' own spread for it — the
//! coefficient of variation of its repetitions on each host — and of the CPU-loop
//! noise each run measured before it started (`noise_cv`). A ratio is called faster or
//! slower only when its interval excludes 1 *and* it differs from 1 by more than that
//! floor: a difference a host shows against itself is never a difference between
//! hosts. The rule is [`crate::floor`]'s and the host facts [`crate::facts`]', shared
//! with `perflab compare` across runs.

use perflab_stats::{compare_metric, geometric_mean_ratio, CompareOptions, Outcome};
use perflab_store::RunExport;
use perflab_units::Phrase;

use crate::compare::Sample;
pub use crate::facts::Fact;
use crate::floor::{cv, RunNoise, WITHIN_NOISE};
use crate::samples::{self, ConfigSamples};

/// One item of a suite run.
#[derive(Debug, Clone)]
pub struct Row {
    pub item: String,
    pub group: String,
    pub unit: String,
    pub score: Sample,
    /// Coefficient of variation of the score over the repetitions (NaN for n < 2).
    pub cv: f64,
}

/// For a machine-suite run, whether it is the quick suite; None for any other run.
pub fn kind_of(export: &RunExport) -> Option<bool> {
    match export.run.name.as_str() {
        "machine-suite" => Some(false),
        "machine-suite-quick" => Some(true),
        _ => None,
    }
}

fn item_of(c: &ConfigSamples) -> Option<String> {
    c.params.get("item")?.as_str().map(str::to_string)
}

/// The items of a suite run in the run's config order (the suite's own order, groups
/// together), each with its score.
pub fn rows(export: &RunExport, confidence: f64) -> Vec<Row> {
    samples::from_export(export)
        .iter()
        .filter_map(|c| {
            let item = item_of(c)?;
            let score = c.metric("score")?;
            Some(Row {
                group: item.split('.').next().unwrap_or("").to_string(),
                item,
                unit: score.unit.clone(),
                score: Sample::of(&score.values, confidence),
                cv: cv(&score.values),
            })
        })
        .collect()
}

/// `4K`, `1M`, `256M`: a block size in powers of 1024, as the suite names them.
pub fn block_label(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// One line of the memory curve: an operation on one thread, GB/s by block size.
#[derive(Debug, Clone)]
pub struct Curve {
    pub op: String,
    /// (block bytes, mean GB/s, CI half-width), by block size.
    pub points: Vec<(u64, f64, f64)>,
}

fn bytes(s: &str) -> Option<u64> {
    let (num, mul) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mul)
}

/// The one-thread `mem.OP.BLOCK` items as curves, one per operation.
pub fn mem_curve(rows: &[Row]) -> Vec<Curve> {
    let mut out: Vec<Curve> = Vec::new();
    for r in rows {
        let parts: Vec<&str> = r.item.split('.').collect();
        let ["mem", op, block] = parts.as_slice() else {
            continue;
        };
        let Some(b) = bytes(block) else { continue };
        let point = (b, r.score.mean, r.score.half);
        match out.iter_mut().find(|c| c.op == *op) {
            Some(c) => c.points.push(point),
            None => out.push(Curve {
                op: op.to_string(),
                points: vec![point],
            }),
        }
    }
    for c in &mut out {
        c.points.sort_by_key(|p| p.0);
    }
    out
}

/// One item on both machines.
#[derive(Debug, Clone)]
pub struct CompareRow {
    pub item: String,
    pub unit: String,
    pub a: Sample,
    pub b: Sample,
    /// B/A of the mean scores and its interval (None: not comparable, with why).
    pub ratio: Result<(f64, f64, f64), String>,
    /// The larger of the two hosts' noise for this item (a fraction).
    pub floor: f64,
    /// `faster`, `slower` (B against A), `within noise` or `not comparable`.
    pub verdict: &'static str,
}

/// Two suite runs side by side.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub rows: Vec<CompareRow>,
    /// Geometric mean of the comparable ratios: (ratio, low, high, items).
    pub geomean: Option<(f64, f64, f64, usize)>,
    /// Each run's CPU-loop noise (CV) before it started.
    pub noise: (Option<f64>, Option<f64>),
    pub facts: Vec<Fact>,
    /// Items run on one machine only.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub confidence: f64,
}

/// Why two runs cannot be compared as suites; a quick suite is named by the option
/// that asks for it, the field `quick` (a command names it by its flag).
pub fn refuse(a: &RunExport, b: &RunExport) -> Option<Phrase> {
    let form = |p: Phrase, quick: bool| {
        if quick {
            p.and_field("quick")
        } else {
            p.then("full")
        }
    };
    match (kind_of(a), kind_of(b)) {
        (None, _) => Some(Phrase::text(format!(
            "run {} is not a machine-suite run ({:?})",
            a.run.id, a.run.name
        ))),
        (_, None) => Some(Phrase::text(format!(
            "run {} is not a machine-suite run ({:?})",
            b.run.id, b.run.name
        ))),
        (Some(x), Some(y)) if x != y => {
            let p = form(Phrase::text(format!("run {} is a ", a.run.id)), x);
            let p = form(p.then(format!(" suite and run {} a ", b.run.id)), y);
            Some(
                p.then(
                    " one: their items run for different times and cannot be compared \
                     (run both with or both without ",
                )
                .and_field("quick")
                .then(")"),
            )
        }
        _ => None,
    }
}

/// Run B against run A, item by item. Call [`refuse`] first.
pub fn compare(a: &RunExport, b: &RunExport, confidence: f64) -> Comparison {
    let sa = samples::from_export(a);
    let sb = samples::from_export(b);
    let run_noise = RunNoise::of(&a.run.environment, &b.run.environment);
    let noise = (run_noise.a, run_noise.b);
    let opts = CompareOptions {
        confidence,
        ..Default::default()
    };
    let mut rows = Vec::new();
    let mut comparisons = Vec::new();
    let mut only_a = Vec::new();
    for ca in &sa {
        let (Some(item), Some(ma)) = (item_of(ca), ca.metric("score")) else {
            continue;
        };
        let Some(mb) = sb
            .iter()
            .find(|c| item_of(c).as_deref() == Some(&item))
            .and_then(|c| c.metric("score"))
        else {
            only_a.push(item);
            continue;
        };
        let floor = run_noise.floor(&ma.values, &mb.values);
        let (ratio, verdict) = match compare_metric(side(ma), side(mb), &opts, crate::format::num) {
            Outcome::Compared(c) => {
                let verdict = if !floor.beyond(c.ratio, c.ratio_ci_low, c.ratio_ci_high) {
                    WITHIN_NOISE
                } else if c.ratio > 1.0 {
                    "faster"
                } else {
                    "slower"
                };
                let r = (c.ratio, c.ratio_ci_low, c.ratio_ci_high);
                comparisons.push(c);
                (Ok(r), verdict)
            }
            Outcome::TooFew => (
                Err("fewer than two repetitions on a side".into()),
                "not comparable",
            ),
            Outcome::NotComparable(why) => (Err(why), "not comparable"),
        };
        rows.push(CompareRow {
            item,
            unit: ma.unit.clone(),
            a: Sample::of(&ma.values, confidence),
            b: Sample::of(&mb.values, confidence),
            ratio,
            floor: floor.0,
            verdict,
        });
    }
    let only_b = sb
        .iter()
        .filter_map(item_of)
        .filter(|i| !sa.iter().any(|c| item_of(c).as_deref() == Some(i)))
        .collect();
    let refs: Vec<&perflab_stats::Comparison> = comparisons.iter().map(|c| &**c).collect();
    let geomean = geometric_mean_ratio(&refs, confidence)
        .map(|g| (g.ratio, g.ci_low, g.ci_high, g.n_metrics));
    Comparison {
        rows,
        geomean,
        noise,
        facts: facts(a, b),
        only_a,
        only_b,
        confidence,
    }
}

/// Every fact either host has, in the first host's order, then the second's extras.
pub fn facts(a: &RunExport, b: &RunExport) -> Vec<Fact> {
    crate::facts::side_by_side(&crate::facts::of_export(a), &crate::facts::of_export(b))
}

fn side(m: &crate::samples::MetricSamples) -> perflab_stats::MetricSide<'_> {
    perflab_stats::MetricSide {
        values: &m.values,
        unit: &m.unit,
        better: &m.better,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_names_read_as_bytes() {
        assert_eq!(bytes("4K"), Some(4096));
        assert_eq!(bytes("256M"), Some(256 << 20));
        assert_eq!(bytes("x"), None);
        for b in [64, 4096, 1 << 20, 256 << 20, 1 << 30] {
            assert_eq!(bytes(&block_label(b)), Some(b));
        }
    }

    use perflab_store::{ExportedConfig, ExportedRun, ExportedTrial, HostInfo, MetricValue};

    /// A suite run of `items` (name, scores), its CPU-loop noise, pinned or not.
    fn run(name: &str, items: &[(&str, &[f64])], noise: f64, cpus: Option<&str>) -> RunExport {
        let mut configs = Vec::new();
        let mut trials = Vec::new();
        for (i, (item, scores)) in items.iter().enumerate() {
            let mut params = perflab_store::Params::new();
            params.insert("item".into(), serde_json::json!(item));
            configs.push(ExportedConfig {
                ordinal: i as u32 + 1,
                params,
            });
            for (r, v) in scores.iter().enumerate() {
                trials.push(ExportedTrial {
                    config: i as u32 + 1,
                    repetition: r as u32 + 1,
                    ordinal: trials.len() as u32 + 1,
                    started_at: String::new(),
                    duration_s: 1.0,
                    status: "ok".into(),
                    error: None,
                    method: None,
                    metrics: vec![MetricValue::new("score", "op/s", *v, "higher")],
                    histograms: vec![],
                    series: vec![],
                    artifacts: vec![],
                });
            }
        }
        RunExport {
            schema_version: 1,
            run: ExportedRun {
                id: 1,
                uuid: "u".into(),
                name: name.into(),
                kind: "suite".into(),
                status: "complete".into(),
                started_at: String::new(),
                ended_at: None,
                file_path: None,
                file_text: None,
                seed: None,
                environment: serde_json::json!({"noise_cv": noise, "cpus": cpus}),
                imported_at: None,
            },
            host: HostInfo {
                hostname: "h".into(),
                ..Default::default()
            },
            configs,
            trials,
            artifacts: vec![],
        }
    }

    #[test]
    fn a_difference_within_a_hosts_own_noise_is_not_called_faster() {
        let a = run(
            "machine-suite",
            &[
                ("crypto.sha256", &[100.0, 101.0, 99.0, 100.0, 100.5]),
                ("mem.write.4K", &[100.0, 100.2, 99.8, 100.1, 99.9]),
                ("net.rr", &[100.0, 100.0, 100.0]),
            ],
            0.001,
            None,
        );
        let b = run(
            "machine-suite",
            &[
                // Half as fast, far beyond the noise: slower.
                ("crypto.sha256", &[50.0, 50.5, 49.5, 50.0, 50.2]),
                // 0.8% faster with a tight interval, but the run's CPU loop varied 2%.
                ("mem.write.4K", &[100.8, 101.0, 100.6, 100.9, 100.7]),
                ("http.nginx", &[1.0, 1.0]),
            ],
            0.02,
            Some("0"),
        );
        assert_eq!(refuse(&a, &b), None);
        let c = compare(&a, &b, 0.95);
        let verdict = |i: &str| c.rows.iter().find(|r| r.item == i).unwrap().verdict;
        assert_eq!(verdict("crypto.sha256"), "slower");
        let mem = c.rows.iter().find(|r| r.item == "mem.write.4K").unwrap();
        let (_, lo, _) = mem.ratio.clone().unwrap();
        assert!(lo > 1.0, "the interval alone excludes 1");
        assert_eq!(mem.verdict, "within noise");
        assert!((mem.floor - 0.02).abs() < 1e-12);
        assert_eq!(c.only_a, vec!["net.rr".to_string()]);
        assert_eq!(c.only_b, vec!["http.nginx".to_string()]);
        let (g, glo, ghi, n) = c.geomean.unwrap();
        assert_eq!(n, 2);
        assert!(glo < g && g < ghi);
        assert!((g - (0.5f64 * 1.008).sqrt()).abs() < 0.01, "{g}");
        let pinned = c.facts.iter().find(|f| f.name == "pinned to cpus").unwrap();
        assert!(pinned.differs());
        assert_eq!((pinned.a.as_str(), pinned.b.as_str()), ("all", "0"));
        assert!(!c
            .facts
            .iter()
            .find(|f| f.name == "hostname")
            .unwrap()
            .differs());
    }

    #[test]
    fn quick_and_full_runs_and_other_runs_are_refused() {
        let full = run("machine-suite", &[], 0.0, None);
        let quick = run("machine-suite-quick", &[], 0.0, None);
        let other = run("quickstart", &[], 0.0, None);
        // The option is a field; `perflab suite compare` names it `--quick`.
        let why = refuse(&full, &quick).unwrap();
        assert_eq!(why.subject(), Some("quick"));
        let why = why.render(&|f| format!("--{f}"));
        assert!(why.contains("is a full suite and run"), "{why}");
        assert!(why.contains(" a --quick one: "), "{why}");
        assert!(why.ends_with("both without --quick)"), "{why}");
        assert!(refuse(&other, &full)
            .unwrap()
            .to_string()
            .contains("not a machine-suite run"));
        assert_eq!(refuse(&quick, &quick), None);
    }
}
