//! One knee search: climb from a start rate by a factor until a step breaks the SLO
//! (or, when the first step breaks it, halve down until one meets it), then bisect
//! between the last good and the first bad rate until they are within 5 %. Each rate
//! is a *trial*: one step, or — when the step's latency lies within ±10 % of an SLO
//! bound (`verdict::NEAR`), or the step broke the SLO — two of three steps at that rate
//! (a second run, and a third only if the first two disagree), so one noisy step cannot
//! move the knee by a bisection interval ([`retested`] says why a break is confirmed
//! and a clear pass is not). The [`Runner`] holds what every search of a run shares: the
//! phases run so far and their steps, and the step length rule (`samples`).

use super::samples;
use super::verdict::{judge, majority, Verdict};
use crate::engine::{run_phase, Phase, RunContext};
use crate::error::LoadError;
use crate::ramp::step_phase;
use crate::report::{Mode, Report, Step};
use crate::request::Prepared;
use crate::series::PhaseResult;
use crate::slo::Slo;
use crate::spec::{LoadSpec, RampOver};
use std::sync::Arc;
use std::time::Duration;

const MAX_CLIMB: usize = 20;
const MAX_DESCEND: usize = 6;
const MAX_BISECT: usize = 8;
/// Bisection stops when the bad rate is within this factor of the good one.
pub(super) const PRECISION: f64 = 1.05;
/// A step must achieve this fraction of its target rate to pass.
const MIN_ACHIEVED: f64 = 0.9;

/// What every search of a run shares.
pub(super) struct Runner<'s, 'c, 'o> {
    pub spec: &'s LoadSpec,
    pub slo: &'s Slo,
    pub prepared: &'s Arc<Prepared>,
    pub base: &'s Phase,
    pub ctx: &'c mut RunContext<'o>,
    /// Every step so far, merged into one (a step's histograms are dropped once
    /// added: memory stays flat however many steps the searches take).
    pub total: Option<PhaseResult>,
    pub steps: Vec<Step>,
    /// Samples a step needs (`samples::needed`).
    pub need: u64,
    /// Steps made longer than `--step-duration` to hold `need` samples.
    pub lengthened: u32,
    /// A search wanted a rate too low to judge within `samples::MAX_STEP`.
    pub floor_hit: bool,
    /// The last step failed every request it made (a wrong URL, a 403, a refused
    /// port): no rate will meet the SLO, so nothing is retested, the search does not
    /// descend, and no further search runs.
    pub dead: bool,
}

/// How one search climbs.
pub(super) struct Plan {
    /// Which search of the run this is (from 1).
    pub repetition: u32,
    pub start: f64,
    /// The climb multiplies the rate by this after each good step.
    pub factor: f64,
    /// The highest rate tried (the ramp's END).
    pub ceiling: Option<f64>,
}

/// What one search found.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Outcome {
    /// The highest rate that met the SLO.
    pub max_rate: Option<f64>,
    /// The lowest rate that broke it.
    pub broke_at: Option<f64>,
    /// Ended from outside before it was done.
    pub interrupted: bool,
}

impl Runner<'_, '_, '_> {
    /// Interrupted from outside: the search ends with what it has.
    pub fn stopped(&self) -> bool {
        self.ctx.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One step at `rate` (`None`: too low a rate to hold the samples in a step).
    fn step(
        &mut self,
        rate: f64,
        repetition: u32,
        retest: bool,
    ) -> Result<Option<Verdict>, LoadError> {
        let asked = super::step_duration(self.spec);
        let Some(len) = samples::length(asked, self.need, rate) else {
            self.floor_hit = true;
            return Ok(None);
        };
        if len > asked {
            self.lengthened += 1;
        }
        let first = self.total.is_none();
        let mut phase = step_phase(self.spec, self.base, RampOver::Rate, rate, first);
        phase.duration = Some(len.max(Duration::from_millis(1)));
        self.ctx.observer.step_started(rate);
        let res = run_phase(self.prepared, &phase, self.ctx)?;
        let r = Report::from_phases(&[&res], Mode::FindMax, phase.connections, phase.threads);
        let others = r.error_rate() <= self.spec.max_error_rate && r.rps >= MIN_ACHIEVED * rate;
        let v = judge(self.slo, &res.hist, others);
        self.dead = r.error_rate() >= 1.0;
        let mut step = r.as_step(rate, Some(v.passed));
        step.repetition = Some(repetition);
        step.retest = retest;
        self.ctx.observer.step(&step);
        self.steps.push(step);
        match &mut self.total {
            Some(t) => t.absorb(res),
            None => self.total = Some(res),
        }
        Ok(Some(v))
    }

    /// Whether `rate` meets the SLO: one step, or two of three when it is near.
    fn trial(&mut self, rate: f64, repetition: u32) -> Result<Option<bool>, LoadError> {
        let Some(first) = self.step(rate, repetition, false)? else {
            return Ok(None);
        };
        if self.dead {
            return Ok(Some(false));
        }
        retested(first, || {
            if self.stopped() {
                return Ok(None);
            }
            self.step(rate, repetition, true)
        })
    }
}

/// The outcome of a rate whose first step came to `first`: a clear pass stands; a
/// step near the SLO, or one that broke it, is run `again` until two agree (at most
/// three in all; `again` gives `None` when it cannot run one, and the runs so far
/// decide). A break is confirmed because what disturbs a step from outside — another
/// process's burst on the server's CPU, the generator descheduled — only ever makes it
/// worse: a lone break below the knee would end the climb there, a lone pass above it
/// does not happen.
pub(super) fn retested<E>(
    first: Verdict,
    mut again: impl FnMut() -> Result<Option<Verdict>, E>,
) -> Result<Option<bool>, E> {
    if first.passed && !first.near {
        return Ok(Some(true));
    }
    let mut runs = vec![first.passed];
    while runs.len() < 3 && decided(&runs).is_none() {
        match again()? {
            Some(v) => runs.push(v.passed),
            None => break,
        }
    }
    Ok(Some(majority(&runs)))
}

/// Two runs that agree decide; otherwise not yet.
fn decided(runs: &[bool]) -> Option<bool> {
    let passes = runs.iter().filter(|p| **p).count();
    if passes >= 2 {
        Some(true)
    } else if runs.len() - passes >= 2 {
        Some(false)
    } else {
        None
    }
}

/// Runs one search.
pub(super) fn search(r: &mut Runner<'_, '_, '_>, plan: &Plan) -> Result<Outcome, LoadError> {
    let k = plan.repetition;
    let floor = samples::lowest_rate(r.need);
    let mut rate = plan.start.max(floor);
    let (mut lo, mut hi) = (None, None);
    for _ in 0..MAX_CLIMB {
        if r.stopped() {
            break;
        }
        match r.trial(rate, k)? {
            Some(true) => lo = Some(rate),
            Some(false) => {
                hi = Some(rate);
                break;
            }
            None => break,
        }
        match plan.ceiling {
            Some(c) if rate >= c => break,
            Some(c) => rate = (rate * plan.factor).min(c),
            None => rate *= plan.factor,
        }
    }
    if lo.is_none() && hi.is_some() && !r.dead {
        let mut x = rate / 2.0;
        for _ in 0..MAX_DESCEND {
            if r.stopped() {
                break;
            }
            match r.trial(x, k)? {
                Some(true) => {
                    lo = Some(x);
                    break;
                }
                Some(false) if r.dead => break,
                Some(false) => hi = Some(x),
                None => break,
            }
            x /= 2.0;
        }
    }
    if let (Some(mut l), Some(mut h)) = (lo, hi) {
        for _ in 0..MAX_BISECT {
            if h / l <= PRECISION || r.stopped() {
                break;
            }
            let m = (l + h) / 2.0;
            match r.trial(m, k)? {
                Some(true) => l = m,
                Some(false) => h = m,
                None => break,
            }
        }
        (lo, hi) = (Some(l), Some(h));
    }
    Ok(Outcome {
        max_rate: lo,
        broke_at: hi,
        interrupted: r.stopped(),
    })
}

#[cfg(test)]
mod tests {
    use super::{retested, Verdict};

    /// The outcome of a first step and the steps scripted after it, and how many
    /// steps were run in all.
    fn script(first: Verdict, then: &[bool]) -> (Option<bool>, usize) {
        let mut next = then.iter();
        let mut runs = 1;
        let out = retested::<()>(first, || {
            Ok(next.next().map(|p| {
                runs += 1;
                Verdict {
                    passed: *p,
                    near: true,
                }
            }))
        })
        .unwrap();
        (out, runs)
    }

    #[test]
    fn a_near_step_is_decided_by_two_of_three() {
        let near = |passed| Verdict { passed, near: true };
        let clear = |passed| Verdict {
            passed,
            near: false,
        };
        assert_eq!(script(clear(true), &[false, false]), (Some(true), 1));
        assert_eq!(script(clear(false), &[false]), (Some(false), 2));
        assert_eq!(script(clear(false), &[true, true]), (Some(true), 3));
        assert_eq!(script(near(true), &[true, false]), (Some(true), 2));
        assert_eq!(script(near(false), &[false, true]), (Some(false), 2));
        assert_eq!(script(near(true), &[false, false, true]), (Some(false), 3));
        assert_eq!(script(near(false), &[true, true, false]), (Some(true), 3));
        // Nothing more could run (interrupted): one pass and one fail do not pass.
        assert_eq!(script(near(true), &[false]), (Some(false), 2));
        assert_eq!(script(near(true), &[]), (Some(true), 1));
    }
}
