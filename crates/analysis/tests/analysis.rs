//! What the analysis says about hand-recorded runs on `Store::in_memory()`: the
//! samples it gathers (the same from the store and from an export), summaries and
//! comparisons against the statistics' reference values (scipy, as in
//! crates/stats/tests/reference), ratio of ratios, doctor findings and profiles.

use perflab_analysis::compare::{against_baseline, Baseline};
use perflab_analysis::interaction::{grid, within_run};
use perflab_analysis::samples::{from_export, from_store};
use perflab_analysis::select::{parse_selector, RunData};
use perflab_analysis::summary::summarize_run;
use perflab_analysis::{doctor, profile, CompareOptions, Error, Outcome, Verdict};
use perflab_store::{
    ArtifactData, HostInfo, MetricValue, NewRun, Params, RunId, RunStatus, Store, TrialRecord,
    TrialStatus,
};
use serde_json::json;

/// Reference sample P5x5 (crates/stats/tests/reference): baseline and candidate.
const P5_BASE: [f64; 5] = [101.3, 98.7, 100.2, 99.5, 102.1];
const P5_CAND: [f64; 5] = [103.2, 104.8, 102.9, 105.1, 103.7];
/// scipy: Fieller 95 % interval of mean(cand)/mean(base), and Welch's p.
const P5_FIELLER: (f64, f64) = (1.017874246337919, 1.053894042221915);
const P5_P_WELCH: f64 = 0.001834976542175967;

fn close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: got {got}, want {want}"
    );
}

/// One trial: (config index, status, metrics, artifacts).
type Trial = (usize, TrialStatus, Vec<MetricValue>, Vec<ArtifactData>);

/// Records a run with these configs and trials (ordinals in the order given).
fn record(store: &Store, configs: &[Params], trials: Vec<Trial>) -> RunId {
    let host = store
        .upsert_host(&HostInfo {
            hostname: "h".into(),
            ..Default::default()
        })
        .unwrap();
    let run = store
        .create_run(
            &NewRun {
                name: "analysis".into(),
                kind: "experiment".into(),
                ..Default::default()
            },
            host,
        )
        .unwrap();
    let ids: Vec<i64> = configs
        .iter()
        .enumerate()
        .map(|(i, p)| store.ensure_config(run, i as u32, p).unwrap())
        .collect();
    for (i, (config, status, metrics, artifacts)) in trials.into_iter().enumerate() {
        let ordinal = i as u32 + 1;
        store
            .record_trial(
                run,
                &TrialRecord {
                    config_id: ids[config],
                    repetition: ordinal,
                    ordinal,
                    started_at: perflab_store::now_rfc3339(),
                    duration_s: 1.0,
                    error: (status != TrialStatus::Ok).then(|| "boom".to_string()),
                    status,
                    method: None,
                    metrics,
                    histograms: vec![],
                    series: vec![],
                    artifacts,
                },
            )
            .unwrap();
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

fn params(pairs: &[(&str, serde_json::Value)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn ok(config: usize, metrics: &[(&str, f64)]) -> Trial {
    let m = metrics
        .iter()
        .map(|(n, v)| MetricValue::new(n, "req/s", *v, "higher"))
        .collect();
    (config, TrialStatus::Ok, m, vec![])
}

/// Two configs (level=1, level=6), P5x5 interleaved; the candidate also measures `w`,
/// and a failed trial's value must not count.
fn p5_run(store: &Store) -> RunId {
    let configs = [
        params(&[("level", json!(1))]),
        params(&[("level", json!(6))]),
    ];
    let mut trials = Vec::new();
    for (b, c) in P5_BASE.iter().zip(P5_CAND) {
        trials.push(ok(0, &[("rps", *b)]));
        trials.push(ok(1, &[("rps", c), ("w", 1.0 + c / 100.0)]));
    }
    trials.push((
        1,
        TrialStatus::Failed,
        vec![MetricValue::new("rps", "req/s", 1e6, "higher")],
        vec![],
    ));
    record(store, &configs, trials)
}

#[test]
fn samples_are_the_same_from_the_store_and_from_an_export() {
    let store = Store::in_memory().unwrap();
    let run = p5_run(&store);
    let from_db = from_store(&store, run).unwrap();
    let mut from_doc = from_export(&store.export_run(run).unwrap());
    for (a, b) in from_doc.iter_mut().zip(&from_db) {
        a.config_id = b.config_id;
    }
    assert_eq!(from_db, from_doc);
    assert_eq!(from_db[0].metric("rps").unwrap().values, P5_BASE);
    assert_eq!(from_db[0].metric("rps").unwrap().trials, [1, 3, 5, 7, 9]);
    let cand = &from_db[1];
    assert_eq!(
        cand.metric("rps").unwrap().values,
        P5_CAND,
        "failed trial left out"
    );
    let names: Vec<&str> = cand.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["rps", "w"]);
}

#[test]
fn summaries_match_the_reference_values() {
    let store = Store::in_memory().unwrap();
    // Reference sample N2: mean 11.25, sd 1.7677669529663689.
    let run = record(
        &store,
        &[Params::new()],
        vec![ok(0, &[("v", 10.0)]), ok(0, &[("v", 12.5)])],
    );
    let s = summarize_run(&store, run, 0.95).unwrap();
    let m = &s.configs[0].metrics[0];
    assert_eq!(m.stats.n, 2);
    close("mean", m.stats.mean, 11.25);
    close("sd", m.stats.sd, 1.7677669529663689);
    assert_eq!(s.confidence(), 0.95);
}

#[test]
fn against_baseline_gives_the_reference_ratio_interval_p_and_verdict() {
    let store = Store::in_memory().unwrap();
    let run = p5_run(&store);
    let opts = CompareOptions::default();
    let cmp = against_baseline(&store, run, &Baseline::First, &[], &opts).unwrap();
    assert_eq!(cmp.baseline["level"], json!(1));
    assert_eq!(cmp.candidates.len(), 1);
    let report = &cmp.candidates[0].report;
    assert_eq!(report.skipped, [("w".to_string(), "candidate")]);
    let row = &report.rows[0];
    let Outcome::Compared(c) = &row.outcome else {
        panic!("not compared: {:?}", row.outcome)
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    close("ratio", c.ratio, mean(&P5_CAND) / mean(&P5_BASE));
    close("ci low", c.ratio_ci_low, P5_FIELLER.0);
    close("ci high", c.ratio_ci_high, P5_FIELLER.1);
    close("p", c.p_welch, P5_P_WELCH);
    assert_eq!(c.verdict, Verdict::Better);
    let v = row.json();
    assert_eq!(v["metric"], "rps");
    assert_eq!(v["verdict"], "faster");
    assert_eq!(v["ratio_ci_low"], json!(c.ratio_ci_low));
    assert_eq!(v["p_welch"], json!(c.p_welch));
    assert_eq!(row.p_text(), "0.002");
    assert_eq!(row.ratio_text(), "1.036 [1.018, 1.054]");
    let (comparisons, geomean, skipped) = cmp.json_arrays();
    assert_eq!(comparisons.len(), 1);
    assert_eq!(comparisons[0]["candidate_params"], json!({"level": 6}));
    assert!(geomean.is_empty(), "one compared metric: no geomean");
    assert_eq!(skipped[0]["metric"], "w");
    assert_eq!(skipped[0]["only_in"], "candidate");

    // The same pair, the baseline named by its parameter, the other way round.
    let sel = parse_selector("level=6").unwrap();
    let back = against_baseline(&store, run, &Baseline::Matching(sel), &[], &opts).unwrap();
    let Outcome::Compared(c) = &back.candidates[0].report.rows[0].outcome else {
        panic!()
    };
    assert_eq!(c.verdict, Verdict::Worse);
    assert!(c.regression_pct.unwrap() > 3.0);
}

#[test]
fn a_baseline_naming_no_config_is_a_selection_error() {
    let store = Store::in_memory().unwrap();
    let run = p5_run(&store);
    let sel = parse_selector("level=9").unwrap();
    let opts = CompareOptions::default();
    match against_baseline(&store, run, &Baseline::Matching(sel), &[], &opts) {
        Err(Error::Select(e)) => assert!(e.0.contains("level=1; level=6"), "{e}"),
        other => panic!("{other:?}"),
    }
    let one = record(&store, &[Params::new()], vec![ok(0, &[("rps", 1.0)])]);
    let cmp = against_baseline(&store, one, &Baseline::First, &[], &opts).unwrap();
    assert!(cmp.candidates.is_empty(), "one config: nothing to compare");
}

#[test]
fn a_single_trial_is_too_few_and_says_so() {
    let store = Store::in_memory().unwrap();
    let run = record(
        &store,
        &[params(&[("x", json!(1))]), params(&[("x", json!(2))])],
        vec![
            ok(0, &[("v", 1.0)]),
            ok(0, &[("v", 1.1)]),
            ok(1, &[("v", 2.0)]),
        ],
    );
    let opts = CompareOptions::default();
    let cmp = against_baseline(&store, run, &Baseline::First, &[], &opts).unwrap();
    let row = &cmp.candidates[0].report.rows[0];
    assert!(matches!(row.outcome, Outcome::TooFew));
    assert_eq!(row.json()["verdict"], "too few trials");
    assert!(row.json()["ratio"].is_null());
    assert_eq!(row.candidate.text("s"), "2 s (n=1)");
}

/// lang × platform; c/java is 2 on x86 and 1 on arm: a ratio of ratios of 2.
fn two_by_two(store: &Store) -> RunId {
    let cfg = |l: &str, p: &str| params(&[("lang", json!(l)), ("platform", json!(p))]);
    let configs = [
        cfg("c", "x86"),
        cfg("java", "x86"),
        cfg("c", "arm"),
        cfg("java", "arm"),
    ];
    let base = [1.0, 1.05, 0.95, 1.02];
    let mut trials = Vec::new();
    for b in base {
        for (i, scale) in [2.0, 1.0, 1.0, 1.0].into_iter().enumerate() {
            trials.push(ok(i, &[("mflops", b * scale)]));
        }
    }
    record(store, &configs, trials)
}

#[test]
fn the_design_and_the_grid_agree_on_the_ratio_of_ratios() {
    let store = Store::in_memory().unwrap();
    let run = two_by_two(&store);
    let d = RunData::load(&store, run).unwrap();
    let design = within_run(&d, &Vec::new(), "lang", "platform").unwrap();
    assert_eq!(design.levels, ("c".to_string(), "java".to_string()));
    let (rows, skipped) = design.rows(&[], 0.95);
    assert!(skipped.is_empty());
    let i = rows[0].result.as_ref().unwrap();
    close("ratio of ratios", i.ratio_of_ratios, 2.0);
    assert!(i.ci_low < 2.0 && 2.0 < i.ci_high);
    let json = design.json(&rows);
    assert_eq!(json[0]["ratios"][0]["level"], "x86");

    // The report's grid: (java, arm)/(c, arm) ÷ (java, x86)/(c, x86) = 1 / 0.5.
    let g = grid(&d.configs, 0.95);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].effect, "lang: c → java");
    assert_eq!(g[0].across, "platform=arm vs platform=x86");
    close("grid", g[0].interaction.ratio_of_ratios, 2.0);
    assert!(g[0].significant());

    let err = within_run(&d, &Vec::new(), "lang", "lang").unwrap_err();
    assert!(err.0.contains("same parameter"), "{err}");
}

#[test]
fn doctor_findings_are_read_per_trial_and_grouped_by_id() {
    let store = Store::in_memory().unwrap();
    let doc = |sev: &str| ArtifactData {
        name: perflab_store::vocab::ARTIFACT_DOCTOR.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec(&json!({"findings": [
            {"id": "swap", "severity": sev, "evidence": format!("{sev} swap"), "fix": "swapoff -a"}
        ]}))
        .unwrap(),
    };
    let with = |config: usize, sev: &str| {
        let (c, s, m, _) = ok(config, &[("v", 1.0)]);
        (c, s, m, vec![doc(sev)])
    };
    let run = record(
        &store,
        &[params(&[("x", json!(1))]), params(&[("x", json!(2))])],
        vec![with(0, "warn"), ok(0, &[("v", 1.0)]), with(1, "critical")],
    );
    let export = store.export_run(run).unwrap();
    let per = doctor::per_trial(&export);
    assert_eq!(per.len(), 2);
    assert_eq!((per[1].trial, per[1].config), (3, 1));
    let s = doctor::by_finding(&per, export.trials.len()).unwrap();
    assert_eq!((s.diagnosed, s.trials), (2, 3));
    assert_eq!(s.rows.len(), 1);
    assert_eq!(s.rows[0].severity, "critical");
    assert_eq!(s.rows[0].evidence, "critical swap");
    assert_eq!(s.seen(&s.rows[0]), "2 of 3");
    assert!(doctor::by_finding(&[], 3).is_none());
}

#[test]
fn a_profile_is_found_under_its_name_or_the_legacy_one() {
    let store = Store::in_memory().unwrap();
    let art = |name: &str, f: &str| ArtifactData {
        name: name.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec(&json!({"images": [
            {"name": "a.out", "functions": [{"name": f, "pct_total": 50.0}]}
        ]}))
        .unwrap(),
    };
    let trial = |a: Vec<ArtifactData>| {
        let (c, s, m, _) = ok(0, &[("v", 1.0)]);
        (c, s, m, a)
    };
    let legacy = record(
        &store,
        &[Params::new()],
        vec![trial(vec![art(profile::LEGACY_ARTIFACT_PROFILE, "old")])],
    );
    let export = store.export_run(legacy).unwrap();
    let (t, a) = profile::profile_artifact(&export.trials).expect("legacy name read");
    assert_eq!(t.ordinal, 1);
    assert_eq!(profile::top_functions(&a.content, 5)[0].name, "old");

    let both = record(
        &store,
        &[Params::new()],
        vec![
            trial(vec![art(profile::LEGACY_ARTIFACT_PROFILE, "old")]),
            trial(vec![art(perflab_store::vocab::ARTIFACT_PROFILE, "new")]),
        ],
    );
    let export = store.export_run(both).unwrap();
    let (_, a) = profile::profile_artifact(&export.trials).unwrap();
    assert_eq!(profile::top_functions(&a.content, 5)[0].name, "new");
}
