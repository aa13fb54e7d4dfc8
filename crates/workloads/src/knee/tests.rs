//! Which steps are the knee, and how their verdicts make one.

use super::facts::{GeneratorFacts, ServiceFacts, StepFacts};
use super::*;

fn step(rate: f64, passed: bool) -> StepFacts {
    StepFacts {
        rate,
        requests: rate as u64,
        wall_s: 1.0,
        passed: Some(passed),
        port: Some(8080),
        local: true,
        listen_overflows: Some(0),
        generator: GeneratorFacts::default(),
        ..Default::default()
    }
}

fn overflowing(rate: f64) -> StepFacts {
    let mut s = step(rate, false);
    s.listen_overflows = Some(500);
    s
}

fn cpu_bound(rate: f64) -> StepFacts {
    let mut s = step(rate, false);
    s.service = Some(ServiceFacts {
        pids: vec![1],
        allowed_cpus: 1,
        on_cpu: 0.99,
        ..Default::default()
    });
    s
}

#[test]
fn the_knee_is_the_lowest_failing_step_above_max_rate() {
    // Climb 100..800 (800 fails), bisect 600 ok, 700 fails, 650 ok.
    let facts = vec![
        step(100.0, true),
        step(200.0, true),
        step(400.0, true),
        cpu_bound(800.0),
        step(600.0, true),
        overflowing(700.0),
        step(650.0, true),
    ];
    let l = knee_limit(Some(650.0), &facts).unwrap();
    // 700 is the knee; 800 is more than 10 % above it and does not vote.
    assert_eq!(l.resource, LimitResource::ListenQueue);
    assert!(l.evidence.contains("at 700 req/s"), "{}", l.evidence);
}

#[test]
fn the_most_common_verdict_of_the_knee_steps_wins() {
    let facts = vec![
        step(1_000.0, true),
        cpu_bound(1_050.0),
        overflowing(1_040.0),
        cpu_bound(1_080.0),
    ];
    let l = knee_limit(Some(1_000.0), &facts).unwrap();
    assert_eq!(l.resource, LimitResource::ServiceCpu);
    // Its evidence is the lowest-rate step with that verdict.
    assert!(l.evidence.contains("1,050 req/s"), "{}", l.evidence);
    // A tie goes to the earlier candidate.
    let tie = vec![overflowing(1_040.0), cpu_bound(1_050.0)];
    assert_eq!(
        knee_limit(Some(1_000.0), &tie).unwrap().resource,
        LimitResource::ServiceCpu
    );
}

#[test]
fn no_failing_step_no_limit() {
    let facts = vec![step(100.0, true), step(200.0, true)];
    assert!(knee_limit(Some(200.0), &facts).is_none());
    assert!(knee_limit(None, &[]).is_none());
    // No rate passed: the lowest failure is the knee.
    let l = knee_limit(None, &[overflowing(100.0), overflowing(50.0)]).unwrap();
    assert!(l.evidence.contains("50.0 req/s"), "{}", l.evidence);
}
