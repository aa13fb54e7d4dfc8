//! The per-operation arithmetic and the interval, on synthetic folded stacks.

use super::*;

/// A trial with `work` sampled `n` times under `app;main`, and `other` 50 times.
fn trial(n: u64, frequency: f64) -> TrialStacks {
    TrialStacks::parse(
        &format!("app;main;work {n}\napp;main;other 50\n"),
        Some(frequency),
        1.0,
    )
}

#[test]
fn samples_become_cpu_time_per_operation_self_and_inclusive() {
    // 1000 Hz: a sample is 1 ms of CPU; 2 operations: 0.5 ms per operation.
    let t = TrialStacks::parse(
        "app;main;work 30\napp;main 10\napp;main;other 20\nbad line\n",
        Some(1000.0),
        2.0,
    );
    let own = t.self_per_op();
    assert_eq!(own["work"], 15.0);
    assert_eq!(own["main"], 5.0);
    assert_eq!(own["other"], 10.0);
    let inc = t.frames_per_op();
    let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // The process name (`app`) is not a frame of the paths.
    assert!(!inc.contains_key(&path(&["app"])));
    assert_eq!(inc[&path(&["main"])], 30.0);
    assert_eq!(inc[&path(&["main", "work"])], 15.0);
    assert_eq!(t.total_per_op(), 30.0);
    // Without a frequency: samples per operation; a stack of the process name alone
    // has no function.
    let t = TrialStacks::parse("app;main 10\napp 3\n", None, 4.0);
    assert_eq!(t.self_per_op()["main"], 2.5);
    assert!(!t.self_per_op().contains_key("app"));
}

#[test]
fn the_change_and_its_interval_match_scipy_welch() {
    // scipy 1.17.1: r = stats.ttest_ind(c, b, equal_var=False);
    // r.confidence_interval(0.95) = (0.13121521184165105, 0.43545145482501535),
    // r.pvalue = 0.002426458128150932, mean(c) − mean(b) = 0.2833333333333332,
    // for b = [1.0, 1.2, 0.9, 1.1, 1.05] and c = [1.3, 1.25, 1.4, 1.2, 1.35, 1.5].
    // Here as ms/op: 100 000 Hz makes a sample 0.01 ms, one operation per trial.
    let base: Vec<TrialStacks> = [100, 120, 90, 110, 105]
        .map(|n| trial(n, 100_000.0))
        .to_vec();
    let cand: Vec<TrialStacks> = [130, 125, 140, 120, 135, 150]
        .map(|n| trial(n, 100_000.0))
        .to_vec();
    let d = DiffProfile::from_stacks(&base, &cand).unwrap();
    assert_eq!(d.unit, "ms/op");
    let work = d
        .frames
        .iter()
        .find(|f| f.path.last().unwrap() == "work")
        .unwrap();
    let c = work.change;
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs();
    assert!(close(c.diff, 0.2833333333333332, 1e-12), "{c:?}");
    assert!(close(c.lo, 0.13121521184165105, 1e-9), "{c:?}");
    assert!(close(c.hi, 0.43545145482501535, 1e-9), "{c:?}");
    assert!(close(c.p, 0.002426458128150932, 1e-6), "{c:?}");
    // Time, not share: `other` did the same work in every trial — its share fell,
    // its time did not change, and it is not a difference.
    let other = d
        .frames
        .iter()
        .find(|f| f.path.last().unwrap() == "other")
        .unwrap();
    assert_eq!(other.change.diff, 0.0);
    assert_eq!(other.change.p, 1.0);
    let passed: Vec<&str> = d
        .judge(0.01)
        .map(|f| f.path.last().unwrap().as_str())
        .collect();
    // `work`, and its caller, whose inclusive time holds it.
    assert_eq!(passed, ["main", "work"], "{d:?}");
}

#[test]
fn a_function_seen_on_one_side_is_zero_in_the_others_trials() {
    let base = vec![trial(100, 1000.0), trial(101, 1000.0)];
    let cand = vec![
        TrialStacks::parse(
            "app;main;work 100\napp;main;other 50\napp;new 40\n",
            Some(1000.0),
            1.0,
        ),
        TrialStacks::parse(
            "app;main;work 99\napp;main;other 50\napp;new 44\n",
            Some(1000.0),
            1.0,
        ),
    ];
    let ev = evidence_of(&base, &cand);
    let new = ev
        .iter()
        .find(|e| e.name == "new")
        .expect("new is evidence");
    assert_eq!(new.baseline, [0.0, 0.0]);
    assert_eq!(new.candidate, [40.0, 44.0]);
    assert_eq!(new.unit, "ms/op");
    // Self time: `main` has none of its own and is no evidence.
    assert!(ev.iter().all(|e| e.name != "main"), "{ev:?}");
}

/// [`function_evidence`] on parsed trials (the same path as from exported ones).
fn evidence_of(base: &[TrialStacks], cand: &[TrialStacks]) -> Vec<Evidence> {
    sides(base, cand, TrialStacks::self_per_op)
        .into_iter()
        .filter(|s| s.3)
        .map(|(name, b, c, _)| Evidence {
            kind: WhyKind::Function,
            name,
            unit: "ms/op".into(),
            baseline: b,
            candidate: c,
        })
        .collect()
}

#[test]
fn rare_frames_are_drawn_but_not_tested() {
    let base = vec![
        TrialStacks::parse("app;hot 1000\napp;rare 1\n", Some(1000.0), 1.0),
        TrialStacks::parse("app;hot 1010\n", Some(1000.0), 1.0),
    ];
    let d = DiffProfile::from_stacks(&base, &base).unwrap();
    let rare = d
        .frames
        .iter()
        .find(|f| f.path.last().unwrap() == "rare")
        .unwrap();
    assert!(!rare.tested);
    assert_eq!(rare.adjusted_p, 1.0);
    assert_eq!(d.judge(0.05).count(), 0, "A/A: nothing passes");
    // One trial a side: no interval.
    assert!(DiffProfile::from_stacks(&base[..1], &base).is_none());
}

#[test]
fn holm_adjusts_step_down_in_the_given_order() {
    // Holm 1979 by hand: sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 with the
    // running maximum: 0.02, 0.03, 0.06, 0.06.
    assert_eq!(holm(&[0.03, 0.005, 0.04, 0.01]), [0.06, 0.02, 0.06, 0.03]);
    assert_eq!(holm(&[f64::NAN]), [1.0]);
}

#[test]
fn exported_trials_give_their_frequency_and_operations() {
    use perflab_store::{ExportedArtifact, MetricValue};
    let art = |name: &str, content: &str| ExportedArtifact {
        name: name.into(),
        media_type: "text/plain".into(),
        content: content.as_bytes().to_vec(),
    };
    let t = ExportedTrial {
        config: 1,
        repetition: 1,
        ordinal: 1,
        started_at: String::new(),
        duration_s: 1.0,
        status: "ok".into(),
        error: None,
        method: None,
        metrics: vec![MetricValue::new("requests", "", 500.0, "higher")],
        histograms: vec![],
        series: vec![],
        artifacts: vec![
            art("stacks.folded", "srv;handle 250\n"),
            art(
                "profile.json",
                r#"{"event": "cpu-clock", "frequency": 1000}"#,
            ),
        ],
    };
    let s = TrialStacks::of(&t).unwrap();
    assert_eq!((s.frequency, s.ops), (Some(1000.0), 500.0));
    // 250 ms of CPU over 500 requests: 0.5 ms per request.
    assert_eq!(s.self_per_op()["handle"], 0.5);
    let failed = ExportedTrial {
        status: "failed".into(),
        ..t
    };
    assert!(TrialStacks::of(&failed).is_none());
}

#[test]
fn a_frame_and_its_only_callee_are_one_test_in_the_family() {
    // `entry;irq;handler` is one chain: the same values thrice, one test. With 4
    // distinct tests (main, work, other, entry-chain) Holm multiplies the smallest p
    // by 4, not 6.
    let t = |w: u64, k: u64| {
        TrialStacks::parse(
            &format!("app;main;work {w}\napp;main;other 300\napp;entry;irq;handler {k}\n"),
            Some(1000.0),
            1.0,
        )
    };
    let base = vec![t(300, 20), t(302, 22), t(298, 21), t(301, 20)];
    let cand = vec![t(330, 20), t(333, 22), t(329, 21), t(331, 21)];
    let d = DiffProfile::from_stacks(&base, &cand).unwrap();
    let get = |name: &str| {
        d.frames
            .iter()
            .find(|f| f.path.last().unwrap() == name)
            .unwrap()
    };
    let (work, main) = (get("work"), get("main"));
    assert_eq!(get("entry").adjusted_p, get("handler").adjusted_p);
    let smallest = work.change.p.min(main.change.p);
    let first = if work.change.p <= main.change.p {
        work
    } else {
        main
    };
    assert!((first.adjusted_p - 4.0 * smallest).abs() < 1e-12, "{d:?}");
}
