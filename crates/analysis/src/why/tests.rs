//! Unit tests of the why block on synthetic evidence.

use super::*;

/// A small fixed-seed generator (SplitMix64 + Box–Muller): the tests need
/// reproducible normal noise and this crate has no RNG of its own.
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (1.0 - self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    fn sample(&mut self, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| mean + sd * self.normal()).collect()
    }
}

fn ev(kind: WhyKind, name: &str, baseline: Vec<f64>, candidate: Vec<f64>) -> Tested {
    Tested::unpaired(Evidence {
        kind,
        name: name.into(),
        unit: "count".into(),
        baseline,
        candidate,
    })
}

fn strict() -> WhyOptions {
    WhyOptions {
        alpha: 0.01,
        ..WhyOptions::default()
    }
}

#[test]
fn a_planted_difference_passes_and_fifty_null_quantities_do_not() {
    let mut rng = Noise(31);
    let mut tested: Vec<Tested> = (0..50)
        .map(|i| {
            let (b, c) = (rng.sample(10, 100.0, 5.0), rng.sample(10, 100.0, 5.0));
            ev(WhyKind::Telemetry, &format!("null.{i}"), b, c)
        })
        .collect();
    // 10 % more page faults, with 2 % noise.
    let (b, c) = (rng.sample(10, 1000.0, 20.0), rng.sample(10, 1100.0, 20.0));
    tested.push(ev(WhyKind::Counter, "counter.page-faults", b, c));
    let block = judge(tested, Vec::new(), &strict());
    assert_eq!(block.checked, 51);
    let names: Vec<&str> = block.reasons.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["counter.page-faults"]);
    let d = block.reasons[0].change.unwrap();
    assert!(d.lo > 0.0 && (0.05..0.15).contains(&d.rel), "{d:?}");
    assert!(block.reasons[0].p_adj.unwrap() < 0.01);
}

#[test]
fn null_families_list_nothing_in_about_alpha_of_the_comparisons() {
    // 200 A/A comparisons of 50 quantities each: Holm at 1 % lists something in at
    // most a few of them (expected ≤ 2).
    let mut rng = Noise(7);
    let mut listed = 0;
    for _ in 0..200 {
        let tested = (0..50)
            .map(|i| {
                let (b, c) = (rng.sample(10, 5.0, 1.0), rng.sample(10, 5.0, 1.0));
                ev(WhyKind::Counter, &format!("q{i}"), b, c)
            })
            .collect();
        let block = judge(tested, Vec::new(), &strict());
        listed += usize::from(!block.reasons.is_empty());
        assert!(block.headline().contains(&nothing_text(50)) || !block.reasons.is_empty());
    }
    assert!(
        listed <= 6,
        "{listed} of 200 A/A comparisons listed a reason"
    );
}

#[test]
fn functions_come_first_then_the_largest_relative_change() {
    let mut rng = Noise(3);
    let mut s = |m: f64| rng.sample(8, m, m * 0.001);
    let tested = vec![
        ev(WhyKind::Counter, "small", s(100.0), s(110.0)),
        ev(WhyKind::Telemetry, "large", s(100.0), s(200.0)),
        ev(WhyKind::Function, "f_small", s(1.0), s(1.5)),
        ev(WhyKind::Function, "f_large", s(10.0), s(12.0)),
        ev(WhyKind::Counter, "same", s(50.0), s(50.0)),
    ];
    let host = Reason {
        kind: WhyKind::Host,
        name: "kernel".into(),
        unit: String::new(),
        baseline: SideValue::Text("6.1".into()),
        candidate: SideValue::Text("6.6".into()),
        change: None,
        p_adj: None,
    };
    let block = judge(tested, vec![host], &WhyOptions::default());
    let names: Vec<&str> = block.reasons.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["f_large", "f_small", "large", "small", "kernel"]);
    assert_eq!(block.checked, 5, "facts are listed, not counted");
    assert!(block.headline().starts_with("why: 4 differences"));
    let j = block.json_fields();
    assert_eq!(j["why"][0]["kind"], "function");
    assert_eq!(j["why"][4]["p_adj"], Value::Null);
    assert_eq!(j["why"][4]["candidate"], "6.6");
    assert_eq!(j["why_checked"], 5);
}

#[test]
fn the_compared_metric_is_no_reason_for_itself() {
    let tested = vec![ev(
        WhyKind::Telemetry,
        "process.cpu_s",
        vec![1.0, 1.01, 0.99],
        vec![2.0, 2.01, 1.99],
    )];
    let opts = WhyOptions {
        exclude: vec!["process.cpu_s".into()],
        ..WhyOptions::default()
    };
    let block = judge(tested, Vec::new(), &opts);
    assert!(block.reasons.is_empty());
    assert_eq!(block.checked, 0);
    assert_eq!(block.headline(), format!("why: {NOTHING_MEASURED}"));
}

#[test]
fn paired_rounds_are_judged_on_their_differences() {
    // Drift shared by the rounds hides +1 from Welch; pairing finds it.
    let b = vec![10.0, 15.0, 20.0, 25.0, 30.0, 35.0];
    let c = vec![11.1, 15.9, 21.0, 26.1, 30.9, 36.0];
    let unpaired = judge(
        vec![ev(WhyKind::Counter, "x", b.clone(), c.clone())],
        vec![],
        &strict(),
    );
    assert!(unpaired.reasons.is_empty());
    let mut t = ev(WhyKind::Counter, "x", b.clone(), c.clone());
    t.pairs = Some((b, c));
    let paired = judge(vec![t], vec![], &strict());
    assert_eq!(paired.reasons.len(), 1);
    assert!(paired.reasons[0].change.unwrap().paired);
}

#[test]
fn metric_names_sort_into_kinds() {
    use sources::kind_of;
    assert_eq!(kind_of("counter.ipc"), Some(WhyKind::Counter));
    assert_eq!(
        kind_of("service_instructions_per_req"),
        Some(WhyKind::Counter)
    );
    assert_eq!(kind_of("service_cpu_per_req_us"), Some(WhyKind::Telemetry));
    assert_eq!(kind_of("sched.ctxt_per_s"), Some(WhyKind::Telemetry));
    assert_eq!(kind_of("wall_s"), None);
    assert_eq!(kind_of("fn:schedule"), None, "a share is not evidence");
    // Off-CPU shares likewise (`[profile] off_cpu = true`).
    assert_eq!(kind_of("offcpu:wait_for_io"), None);
    assert_eq!(kind_of("offcpu_share"), None);
}

#[test]
fn a_function_only_the_candidate_runs_is_judged_against_zeros() {
    let e = Evidence {
        kind: WhyKind::Function,
        name: "planted".into(),
        unit: "ms/op".into(),
        baseline: Vec::new(),
        candidate: vec![1.0, 1.1, 0.9, 1.05, 0.95],
    };
    let filled = sources::absent_is_zero(e.clone(), (5, 5));
    assert_eq!(filled.baseline, vec![0.0; 5]);
    let block = judge(vec![Tested::unpaired(filled)], vec![], &strict());
    assert_eq!(block.reasons[0].name, "planted");
    // No profiled trial on the baseline: nothing measured there, nothing checked.
    let none = sources::absent_is_zero(e, (0, 5));
    assert_eq!(
        judge(vec![Tested::unpaired(none)], vec![], &strict()).checked,
        0
    );
}

#[test]
fn across_runs_a_change_within_the_noise_floor_is_no_reason() {
    // +1 % with 0.1 % noise: significant, but inside a 2 % CPU-loop floor.
    let b = vec![100.0, 100.1, 99.9, 100.05, 99.95];
    let c = vec![101.0, 101.1, 100.9, 101.05, 100.95];
    let t = || {
        vec![ev(
            WhyKind::Telemetry,
            "memory.available_kb",
            b.clone(),
            c.clone(),
        )]
    };
    let noise = RunNoise {
        a: Some(0.02),
        b: None,
    };
    assert_eq!(judge(t(), vec![], &strict()).reasons.len(), 1);
    let across = judge_across(t(), vec![], &strict(), Some(noise));
    assert!(across.reasons.is_empty());
    assert_eq!(across.checked, 1);
    let quiet = RunNoise {
        a: Some(0.001),
        b: Some(0.001),
    };
    assert_eq!(
        judge_across(t(), vec![], &strict(), Some(quiet))
            .reasons
            .len(),
        1
    );
}

#[test]
fn what_never_varies_is_not_counted() {
    let zeros = ev(
        WhyKind::Telemetry,
        "net.retrans_segs",
        vec![0.0; 5],
        vec![0.0; 5],
    );
    let ones = ev(
        WhyKind::Telemetry,
        "sockets.listen",
        vec![1.0; 5],
        vec![1.0; 5],
    );
    let moved = ev(
        WhyKind::Telemetry,
        "sockets.listen2",
        vec![1.0; 5],
        vec![2.0; 5],
    );
    let block = judge(vec![zeros, ones, moved], vec![], &strict());
    assert_eq!(block.checked, 1, "only the one that could differ");
    assert_eq!(block.reasons.len(), 1);
}
