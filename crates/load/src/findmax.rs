//! `--find-max`: the SPECweb-style knee search. Raise the open-loop rate step by step
//! (doubling from `--rate`, or the ramp's START, or 100 req/s) until a step breaks the
//! SLO, then bisect between the last good and the first bad rate until they are within
//! 5 %. A step *passes* when its corrected latency meets every SLO condition, its
//! error rate is within `--max-error-rate`, and it achieved at least 90 % of the target
//! rate (a generator or server that cannot keep up does not pass). The report gives the
//! highest passing rate (`max_rate`), the lowest failing one (`broke_at`) and every step.

use crate::engine::{run_phase, Phase, RunContext};
use crate::error::LoadError;
use crate::ramp::step_phase;
use crate::report::{Mode, Report, Step};
use crate::request::Prepared;
use crate::series::PhaseResult;
use crate::slo::Slo;
use crate::spec::{LoadSpec, RampOver};
use std::sync::Arc;

/// First rate tried when none is given.
pub const DEFAULT_START_RATE: f64 = 100.0;
const MAX_CLIMB: usize = 20;
const MAX_DESCEND: usize = 6;
const MAX_BISECT: usize = 8;
/// Bisection stops when the bad rate is within this factor of the good one.
const PRECISION: f64 = 1.05;
/// A step must achieve this fraction of its target rate to pass.
const MIN_ACHIEVED: f64 = 0.9;

struct Search<'s, 'c, 'o> {
    spec: &'s LoadSpec,
    slo: &'s Slo,
    prepared: &'s Arc<Prepared>,
    base: &'s Phase,
    ctx: &'c mut RunContext<'o>,
    results: Vec<PhaseResult>,
    steps: Vec<Step>,
}

impl Search<'_, '_, '_> {
    /// Interrupted from outside: the search ends with what it has.
    fn stopped(&self) -> bool {
        self.ctx.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn trial(&mut self, rate: f64) -> Result<bool, LoadError> {
        let first = self.results.is_empty();
        let phase = step_phase(self.spec, self.base, RampOver::Rate, rate, first);
        self.ctx.observer.step_started(rate);
        let res = run_phase(self.prepared, &phase, self.ctx)?;
        let r = Report::from_phases(&[&res], Mode::FindMax, phase.connections, phase.threads);
        let passed = self.slo.holds(&res.hist)
            && r.error_rate() <= self.spec.max_error_rate
            && r.rps >= MIN_ACHIEVED * rate;
        let step = r.as_step(rate, Some(passed));
        self.ctx.observer.step(&step);
        self.steps.push(step);
        self.results.push(res);
        Ok(passed)
    }
}

/// Runs the search.
pub(crate) fn run(
    spec: &LoadSpec,
    prepared: &Arc<Prepared>,
    base: &Phase,
    ctx: &mut RunContext<'_>,
) -> Result<Report, LoadError> {
    let slo = spec
        .slo
        .as_ref()
        .ok_or_else(crate::spec::conflict::needs_slo)?;
    let ceiling = spec.ramp.as_ref().map(|r| r.end);
    let mut rate = spec
        .rate
        .or(spec.ramp.as_ref().map(|r| r.start))
        .unwrap_or(DEFAULT_START_RATE);
    let mut s = Search {
        spec,
        slo,
        prepared,
        base,
        ctx,
        results: Vec::new(),
        steps: Vec::new(),
    };
    let (mut lo, mut hi) = (None, None);
    for _ in 0..MAX_CLIMB {
        if s.stopped() {
            break;
        }
        if !s.trial(rate)? {
            hi = Some(rate);
            break;
        }
        lo = Some(rate);
        match ceiling {
            Some(c) if rate >= c => break,
            Some(c) => rate = (rate * 2.0).min(c),
            None => rate *= 2.0,
        }
    }
    if lo.is_none() && !s.stopped() {
        let mut r = rate / 2.0;
        for _ in 0..MAX_DESCEND {
            if s.stopped() {
                break;
            }
            if s.trial(r)? {
                lo = Some(r);
                break;
            }
            hi = Some(r);
            r /= 2.0;
        }
    }
    if let (Some(mut l), Some(mut h)) = (lo, hi) {
        for _ in 0..MAX_BISECT {
            if h / l <= PRECISION || s.stopped() {
                break;
            }
            let m = (l + h) / 2.0;
            if s.trial(m)? {
                l = m;
            } else {
                h = m;
            }
        }
        (lo, hi) = (Some(l), Some(h));
    }
    let all: Vec<&PhaseResult> = s.results.iter().collect();
    let mut report = Report::from_phases(&all, Mode::FindMax, base.connections, base.threads);
    report.steps = s.steps;
    report.max_rate = lo;
    report.broke_at = hi;
    report.slo = Some(slo.to_string());
    Ok(report)
}
