//! Two configs of one run are compared round by round when their trials ran in
//! blocked rounds (interleaved order), and as independent samples when they did not
//! (sequential order) — read from the store and from an export alike. And the words
//! of a comparison fit its metrics: uncomparable ones fold into one line, geomeans
//! never mix kinds, sizes are worse rather than slower.

use perflab_analysis::compare::{against_baseline, compare_metrics, Baseline};
use perflab_analysis::samples::{from_export, from_store, paired_by_round, MetricSamples};
use perflab_analysis::{Basis, CompareOptions, MetricKind, Outcome};
use perflab_store::{
    HostInfo, MetricValue, NewRun, Params, RunId, RunStatus, Store, TrialRecord, TrialStatus,
};
use serde_json::json;

/// A drifting machine: the baseline ~100 ms and the candidate 3 % slower, both
/// scaled by a drift of 1 % per round, with a little noise.
fn value(config: usize, round: u32) -> f64 {
    let noise = [0.2, -0.1, 0.15, -0.2, 0.05, 0.1, -0.15, 0.0][round as usize % 8];
    let level = if config == 0 { 100.0 } else { 103.0 };
    level * (1.0 + 0.01 * round as f64) + noise
}

/// Records `rounds` rounds of two configs; `interleaved` puts both trials of a round
/// side by side (the candidate first in odd rounds), else all of config 0 first.
fn record(store: &Store, rounds: u32, interleaved: bool) -> RunId {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "paired".into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let ids: Vec<i64> = (0..2)
        .map(|i| {
            let p: Params = [("level".to_string(), json!(i))].into_iter().collect();
            store.ensure_config(run, i as u32, &p).unwrap()
        })
        .collect();
    let mut order: Vec<(usize, u32)> = Vec::new();
    if interleaved {
        for r in 1..=rounds {
            let first = (r % 2) as usize;
            order.extend([(first, r), (1 - first, r)]);
        }
    } else {
        order.extend((1..=rounds).map(|r| (0, r)));
        order.extend((1..=rounds).map(|r| (1, r)));
    }
    for (i, (config, round)) in order.into_iter().enumerate() {
        let v = value(config, round);
        let rec = TrialRecord {
            config_id: ids[config],
            repetition: round,
            ordinal: i as u32 + 1,
            started_at: perflab_store::now_rfc3339(),
            duration_s: 1.0,
            status: TrialStatus::Ok,
            error: None,
            method: None,
            metrics: vec![MetricValue::new("wall_s", "s", v / 1000.0, "lower")],
            histograms: vec![],
            series: vec![],
            artifacts: vec![],
        };
        store.record_trial(run, &rec).unwrap();
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

fn first_row_comparison(store: &Store, run: RunId) -> perflab_analysis::Comparison {
    let cmp = against_baseline(
        store,
        run,
        &Baseline::First,
        &[],
        &CompareOptions::default(),
    )
    .unwrap();
    match &cmp.candidates[0].report.rows[0].outcome {
        Outcome::Compared(c) => (**c).clone(),
        other => panic!("not compared: {other:?}"),
    }
}

#[test]
fn interleaved_rounds_are_paired_and_cancel_the_drift() {
    let store = Store::in_memory().unwrap();
    let run = record(&store, 8, true);
    let c = first_row_comparison(&store, run);
    assert_eq!(c.basis, Basis::Paired);
    let p = c.paired.unwrap();
    assert_eq!(p.n_pairs, 8);
    assert!(p.lo > 1.025 && p.hi < 1.035, "{p:?}");
    assert_eq!(c.verdict_word(), "slower");
    // Welch sees the drift as noise: its interval is much wider.
    assert!(
        c.ratio_ci_high - c.ratio_ci_low > 4.0 * (p.hi - p.lo),
        "{c:?}"
    );
    // The export gives the same pairs.
    let (s, e) = (
        from_store(&store, run).unwrap(),
        from_export(&store.export_run(run).unwrap()),
    );
    assert_eq!(
        paired_by_round(&s[0].metrics[0], &s[1].metrics[0]),
        paired_by_round(&e[0].metrics[0], &e[1].metrics[0])
    );
}

#[test]
fn fewer_than_five_rounds_or_sequential_order_stay_on_welch() {
    let store = Store::in_memory().unwrap();
    let four = record(&store, 4, true);
    let c = first_row_comparison(&store, four);
    assert_eq!(
        (c.basis, c.paired.map(|p| p.n_pairs)),
        (Basis::Welch, Some(4))
    );
    let seq = record(&store, 8, false);
    let c = first_row_comparison(&store, seq);
    assert_eq!((c.basis, c.paired), (Basis::Welch, None));
}

fn samples(name: &str, unit: &str, better: &str, values: &[f64]) -> MetricSamples {
    MetricSamples {
        name: name.into(),
        unit: unit.into(),
        better: better.into(),
        values: values.to_vec(),
        trials: (1..=values.len() as u32).collect(),
        rounds: (1..=values.len() as u32).collect(),
    }
}

#[test]
fn uncomparable_metrics_fold_into_one_line_and_geomeans_never_mix_kinds() {
    let base = [
        samples("wall_s", "s", "lower", &[1.0, 1.1, 0.9, 1.0]),
        samples("sys_s", "s", "lower", &[0.5, 0.4, 0.6, 0.5]),
        samples("user_s", "s", "lower", &[0.0, 0.0, 0.0, 0.0]),
        samples("cpu_s", "s", "lower", &[0.0, 0.0, 0.0, 0.0]),
        samples("rss", "B", "lower", &[100.0, 101.0, 99.0, 100.0]),
        samples("heap", "B", "lower", &[50.0, 51.0, 49.0, 50.0]),
        samples("out", "B", "lower", &[10.0, 11.0, 9.0, 10.0]),
    ];
    let cand: Vec<MetricSamples> = base
        .iter()
        .map(|m| {
            let mut c = m.clone();
            c.values.iter_mut().for_each(|v| *v = *v * 1.2 + 0.01);
            c
        })
        .collect();
    let r = compare_metrics(&base, &cand, &[], &CompareOptions::default());
    assert_eq!(
        r.not_comparable_line().as_deref(),
        Some("not comparable: user_s (baseline mean is 0), cpu_s (baseline mean is 0)")
    );
    assert_eq!(r.shown_rows().count(), 5);
    let groups: Vec<(MetricKind, Vec<String>)> = r
        .geomean
        .iter()
        .map(|g| (g.kind, g.metrics.clone()))
        .collect();
    assert_eq!(
        groups,
        [
            (MetricKind::Time, vec!["wall_s".into(), "sys_s".into()]),
            (
                MetricKind::Size,
                vec!["rss".into(), "heap".into(), "out".into()]
            ),
        ]
    );
    assert_eq!(r.geomean[0].combines(), "of wall_s, sys_s (times)");
    // a size is worse, not slower
    let rss = r.rows.iter().find(|x| x.name == "rss").unwrap();
    assert_eq!(rss.verdict(), "worse");
}
