//! `--ramp START:END:STEPS`: a sequence of fixed-load steps, each of
//! `--step-duration`, over the open-loop rate (default) or the closed-loop number of
//! connections. Every step is run on fresh connections and reported on its own; the
//! run's totals merge all steps. Warm-up, if any, precedes the first step only.

use crate::engine::{run_phase, Phase, RunContext};
use crate::error::LoadError;
use crate::report::{Mode, Report};
use crate::request::Prepared;
use crate::series::PhaseResult;
use crate::spec::{LoadSpec, Ramp, RampOver};
use std::sync::Arc;

/// The phase of one step at `target`.
pub(crate) fn step_phase(
    spec: &LoadSpec,
    base: &Phase,
    over: RampOver,
    target: f64,
    first: bool,
) -> Phase {
    let mut p = base.clone();
    p.duration = Some(spec.effective_step_duration());
    p.requests = None;
    if !first {
        p.warmup = std::time::Duration::ZERO;
    }
    match over {
        RampOver::Rate => p.rate = Some(target),
        RampOver::Connections => {
            p.connections = (target.round() as usize).max(1);
            p.threads = spec.effective_threads(p.connections);
            p.max_connections = p.max_connections.max(p.connections);
            p.rate = None;
        }
    }
    p
}

/// Runs every step of the ramp.
pub(crate) fn run(
    spec: &LoadSpec,
    ramp: &Ramp,
    prepared: &Arc<Prepared>,
    base: &Phase,
    ctx: &mut RunContext<'_>,
) -> Result<Report, LoadError> {
    let mut results: Vec<PhaseResult> = Vec::new();
    let mut steps = Vec::new();
    for (k, target) in ramp.targets().into_iter().enumerate() {
        if k > 0 && ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break; // interrupted: the steps run so far are the report
        }
        let phase = step_phase(spec, base, ramp.over, target, k == 0);
        let res = run_phase(prepared, &phase, ctx)?;
        let step = Report::from_phases(&[&res], Mode::Ramp, phase.connections, phase.threads)
            .as_step(target, None);
        ctx.observer.step(&step);
        steps.push(step);
        results.push(res);
    }
    let all: Vec<&PhaseResult> = results.iter().collect();
    let mut report = Report::from_phases(&all, Mode::Ramp, base.connections, base.threads);
    report.steps = steps;
    Ok(report)
}
