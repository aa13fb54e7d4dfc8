//! `--find-max`: the SPECweb-style knee search, repeated for an interval.
//!
//! One *search* (module `search`) raises the open-loop rate step by step until a step
//! breaks the SLO, then bisects between the last good and the first bad rate until
//! they are within 5 %. A step *passes* when its corrected latency meets every SLO
//! condition, its error rate is within `--max-error-rate`, and it achieved at least
//! 90 % of the target rate (a generator or server that cannot keep up does not pass).
//! A rate whose step lands within ±10 % of an SLO bound, or breaks it, is retested: it
//! passes on two of three steps (modules `verdict`, `search`). Each step lasts `--step-duration`, lengthened to
//! hold the samples its SLO percentile needs (module `samples`: 1,000 for p99).
//!
//! `--find-max-repetitions N` runs N searches one after the other. `max_rate` is the
//! mean of their knees with a 95 % Student-t interval (`max_rate_ci_low`/`_high`,
//! `perflab_stats::summarize`), `broke_at` the mean of their first failing rates, and
//! every step of every search stays in `steps`, tagged with its `repetition`. With
//! `--find-max-precision P` searches are added after the first `max(N, 5)`, up to
//! [`MAX_FACTOR`] times as many, until the interval is within ±P of the mean; that
//! interval is computed at [`perflab_stats::STOP_ON_PRECISION_CONFIDENCE`] (97 %),
//! which still covers 95 % when the searches stop on it (a 95 % one would not:
//! docs/methodology.md §7), and the report says whether P was met. The first
//! search climbs by doubling from `--rate`, the ramp's START, or 100 req/s — from
//! below, since a step over the knee leaves a backlog (queued requests, a full listen
//! queue) that the next step would inherit; its low steps are the lengthened ones. A
//! step lasts `--step-duration`, by default [`DEFAULT_STEP`] (a ramp's default is
//! longer): at the rates where knees are looked for that holds ten thousands of
//! samples, and it keeps five searches of a ~50k req/s server within minutes. A later search starts at 0.8 × the previous search's
//! knee and climbs by ×1.25: that saves the doubling climb, yet each search brackets its
//! own knee between a step of its own that passed and one that broke, so the searches
//! stay independent measurements of it — a knee that moved is found wherever it went
//! (a failing start halves down; a passing one climbs on).

mod samples;
mod search;
mod verdict;

use crate::engine::{Phase, RunContext};
use crate::error::{LoadError, SpecError};
use crate::report::{Mode, Report};
use crate::request::Prepared;
use crate::series::PhaseResult;
use crate::spec::LoadSpec;
use perflab_units::Phrase;
use search::{search, Outcome, Plan, Runner};
use std::sync::Arc;

/// First rate tried when none is given (raised to where a step holds its samples).
pub const DEFAULT_START_RATE: f64 = 100.0;
/// A find-max step's length when neither `step_duration` nor a ramp gives one.
pub const DEFAULT_STEP: std::time::Duration = std::time::Duration::from_secs(2);
/// Most searches one run may ask for.
pub const MAX_REPETITIONS: u32 = 100;
/// With a precision target, searches continue up to this many times the first ones ...
pub const MAX_FACTOR: u32 = 4;
/// ... which are at least this many: stopping on a narrow interval after fewer knees
/// undercovers even at [`perflab_stats::STOP_ON_PRECISION_CONFIDENCE`] (93 % from 2).
pub const MIN_WITH_PRECISION: u32 = 5;
/// A later search starts at this fraction of the previous knee ...
const LATER_START: f64 = 0.8;
/// ... and climbs by this factor.
const LATER_FACTOR: f64 = 1.25;

/// `find_max_repetitions` within 1..=[`MAX_REPETITIONS`]; a step duration above zero.
pub(crate) fn check_spec(spec: &LoadSpec) -> Result<(), SpecError> {
    let n = spec.find_max_repetitions;
    if !(1..=MAX_REPETITIONS).contains(&n) {
        return Err(SpecError::value(
            "find_max_repetitions",
            n.to_string(),
            "a number of searches from 1 to 100",
        ));
    }
    if n > 1 && !spec.find_max {
        return Err(SpecError::Conflict(
            Phrase::field("find_max_repetitions")
                .then(" repeats the knee search: it needs ")
                .and_field("find_max"),
        ));
    }
    if let Some(p) = spec.find_max_precision {
        if !(p > 0.0 && p < 1.0) {
            return Err(SpecError::value(
                "find_max_precision",
                format!("{}%", p * 100.0),
                "a share of max_rate above 0 and under 100 %, e.g. 10%",
            ));
        }
        if !spec.find_max {
            return Err(SpecError::Conflict(
                Phrase::field("find_max_precision")
                    .then(" adds knee searches: it needs ")
                    .and_field("find_max"),
            ));
        }
    }
    if spec.step_duration.is_some_and(|d| d.is_zero()) {
        return Err(SpecError::value(
            "step_duration",
            "0",
            "a positive duration",
        ));
    }
    Ok(())
}

/// Runs the searches.
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
    let need = samples::needed(slo);
    let start = spec
        .rate
        .or(spec.ramp.as_ref().map(|r| r.start))
        .unwrap_or(DEFAULT_START_RATE);
    let ceiling = spec.ramp.as_ref().map(|r| r.end);
    let mut r = Runner {
        spec,
        slo,
        prepared,
        base,
        ctx,
        total: None,
        steps: Vec::new(),
        need,
        lengthened: 0,
        floor_hit: false,
        dead: false,
    };
    let mut outcomes: Vec<Outcome> = Vec::new();
    let (first, most) = searches(spec);
    for k in 1..=most {
        if r.stopped() || (k > first && precise(spec, &outcomes)) {
            break;
        }
        let plan = match outcomes.iter().rev().find_map(|o| o.max_rate) {
            Some(prev) => Plan {
                repetition: k,
                start: prev * LATER_START,
                factor: LATER_FACTOR,
                ceiling,
            },
            None => Plan {
                repetition: k,
                start,
                factor: 2.0,
                ceiling,
            },
        };
        let o = search(&mut r, &plan)?;
        // A search cut short counts only when it is the only one.
        if !o.interrupted || outcomes.is_empty() {
            outcomes.push(o);
        }
        if r.dead && o.max_rate.is_none() {
            break;
        }
    }
    let all: Vec<&PhaseResult> = r.total.iter().collect();
    let mut report = Report::from_phases(&all, Mode::FindMax, base.connections, base.threads);
    report.steps = std::mem::take(&mut r.steps);
    report.slo = Some(slo.to_string());
    conclude(&mut report, &outcomes, spec.find_max_precision);
    report.warnings.extend(notes(&r, &outcomes, slo));
    report.warnings.extend(precision_note(&report, r.stopped()));
    let knees: Vec<f64> = outcomes.iter().filter_map(|o| o.max_rate).collect();
    report.warnings.extend(drift_note(&knees));
    Ok(report)
}

/// How many searches run first, and at most: `find_max_repetitions`, or with a
/// precision target from at least [`MIN_WITH_PRECISION`] to [`MAX_FACTOR`] times that.
fn searches(spec: &LoadSpec) -> (u32, u32) {
    let n = spec.find_max_repetitions.clamp(1, MAX_REPETITIONS);
    match spec.find_max_precision {
        None => (n, n),
        Some(_) => {
            let first = n.max(MIN_WITH_PRECISION);
            (first, (first * MAX_FACTOR).min(MAX_REPETITIONS).max(first))
        }
    }
}

/// With a precision target: whether the knees so far give an interval (at the level
/// used when stopping on precision) within the target.
fn precise(spec: &LoadSpec, outcomes: &[Outcome]) -> bool {
    let Some(target) = spec.find_max_precision else {
        return false;
    };
    let knees: Vec<f64> = outcomes.iter().filter_map(|o| o.max_rate).collect();
    knees.len() >= 2
        && perflab_stats::summarize(&knees, perflab_stats::STOP_ON_PRECISION_CONFIDENCE)
            .is_ok_and(|s| perflab_stats::precision_reached(&s, target))
}

/// Below this two-sided p of the knees' trend over the searches, the run says the knee
/// moved while it was measured (1 %: one run in a hundred of a steady server says so).
const DRIFT_P: f64 = 0.01;

/// The knees trending with the search's order (least-squares slope over 1..=n, its t
/// test on n − 2 degrees of freedom): the server's capacity changed during the run, so
/// the interval is about its average over the run, not about one steady capacity.
fn drift_note(knees: &[f64]) -> Option<String> {
    let n = knees.len();
    if n < 5 {
        return None;
    }
    let nf = n as f64;
    let xm = (nf + 1.0) / 2.0;
    let ym = knees.iter().sum::<f64>() / nf;
    let sxx: f64 = (1..=n).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = knees
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 + 1.0 - xm) * (y - ym))
        .sum();
    let slope = sxy / sxx;
    let resid: f64 = knees
        .iter()
        .enumerate()
        .map(|(i, y)| (y - ym - slope * (i as f64 + 1.0 - xm)).powi(2))
        .sum();
    let se = (resid / (nf - 2.0) / sxx).sqrt();
    let p = perflab_stats::t_two_sided_p(slope / se, nf - 2.0);
    if p.is_nan() || p >= DRIFT_P {
        return None;
    }
    let at = |i: f64| ym + slope * (i - xm);
    Some(format!(
        "the knee moved while it was measured: from about {:.0} req/s in the first search \
         to {:.0} in the last (trend over the {n} searches, p = {p:.1e}); the server's \
         capacity changed during the run, and max_rate's interval is about its average",
        at(1.0),
        at(nf)
    ))
}

/// A precision target the searches did not reach, in words: interrupted, or the cap
/// came first.
fn precision_note(r: &Report, interrupted: bool) -> Option<String> {
    let (Some(target), Some(false)) = (r.max_rate_precision, r.max_rate_precision_met) else {
        return None;
    };
    let half = match (r.max_rate, r.max_rate_ci_low, r.max_rate_ci_high) {
        (Some(m), Some(lo), Some(hi)) => format!("±{:.1} %", 50.0 * (hi - lo) / m),
        _ => "undefined".to_string(),
    };
    let why = if interrupted {
        "the run was interrupted before it got there"
    } else {
        "the knee moved between searches more than the target allows (see steps); ask \
         for more first searches (--find-max-repetitions) or a wider target"
    };
    Some(format!(
        "max_rate's interval is {half} after {} searches, short of the ±{:.1} % asked: \
         {why}",
        r.repetitions.unwrap_or(0),
        target * 100.0
    ))
}

/// The length asked of each step: `step_duration`, or a ramp's, or [`DEFAULT_STEP`].
fn step_duration(spec: &LoadSpec) -> std::time::Duration {
    match (spec.step_duration, &spec.ramp) {
        (None, None) => DEFAULT_STEP,
        _ => spec.effective_step_duration(),
    }
}

/// Sets `max_rate` (the mean of the searches' knees), its interval, `broke_at` and
/// `repetitions` from the searches; with a precision target, the target and whether
/// it was met (the interval then at [`perflab_stats::STOP_ON_PRECISION_CONFIDENCE`]).
fn conclude(report: &mut Report, outcomes: &[Outcome], precision: Option<f64>) {
    let maxes: Vec<f64> = outcomes.iter().filter_map(|o| o.max_rate).collect();
    let broke: Vec<f64> = outcomes.iter().filter_map(|o| o.broke_at).collect();
    report.broke_at = mean(&broke);
    report.max_rate = mean(&maxes);
    report.repetitions = Some(maxes.len() as u32);
    let level = match precision {
        Some(_) => perflab_stats::STOP_ON_PRECISION_CONFIDENCE,
        None => 0.95,
    };
    report.max_rate_precision = precision;
    report.max_rate_precision_met = precision.map(|_| false);
    if maxes.len() >= 2 {
        if let Ok(s) = perflab_stats::summarize(&maxes, level) {
            report.max_rate_ci_low = Some(s.ci_low);
            report.max_rate_ci_high = Some(s.ci_high);
            report.max_rate_ci_level = Some(level);
            report.max_rate_precision_met =
                precision.map(|p| perflab_stats::precision_reached(&s, p));
        }
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// What the reader must know about how the knee was judged.
fn notes(r: &Runner<'_, '_, '_>, outcomes: &[Outcome], slo: &crate::slo::Slo) -> Vec<String> {
    let mut notes = Vec::new();
    if r.lengthened > 0 {
        notes.push(format!(
            "{} find-max step(s) lengthened past the step duration to hold {} samples \
             each, the fewest that judge {slo}",
            r.lengthened, r.need
        ));
    }
    if r.floor_hit {
        notes.push(format!(
            "rates below {:.1} req/s were not tried: a step there would need more than \
             {} s to hold the {} samples that judge {slo}",
            samples::lowest_rate(r.need),
            samples::MAX_STEP.as_secs(),
            r.need
        ));
    }
    if r.dead && outcomes.iter().all(|o| o.max_rate.is_none()) {
        notes.push(
            "every request of the last step failed: the knee search stopped there (no \
             rate meets an SLO while every request fails; see error_kinds and status)"
                .to_string(),
        );
    }
    let failed = outcomes.iter().filter(|o| o.max_rate.is_none()).count();
    if failed > 0 && failed < outcomes.len() {
        notes.push(format!(
            "{failed} of {} searches found no rate that met the SLO; max_rate is the mean \
             of the others",
            outcomes.len()
        ));
    }
    notes
}

#[cfg(test)]
mod tests;
