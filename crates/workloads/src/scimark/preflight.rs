//! SciMark's pre-flight, before any timed round: every language asked for is built and
//! verified against C (C built for the purpose when it was not asked for; its own
//! self-check when C cannot be built), so a broken toolchain or a language that
//! computes other numbers is dropped with its reason instead of timing garbage.
//! `perflab scimark` calls it and prints what it says; it prints nothing itself.

use std::sync::atomic::Ordering;

use super::{agree, build, run, self_check, BuildOptions, Output, RunOptions};
use crate::{TrialContext, WorkloadError};

/// A language as the pre-flight left it: verified (its output), or why not.
#[derive(Debug, Clone)]
pub struct Checked {
    pub name: String,
    pub verify: Option<Output>,
    pub error: Option<String>,
}

/// Builds and verifies each of `langs` (`opts`: their build; `run_opts`: the problem
/// sizes and kernels, run in verify-only mode), calling `building` before each build;
/// an error that names an option (a missing toolchain's `java`) names it by `name_of` (the
/// caller's flag for a field).
/// `None`: interrupted (`ctx.interrupted`).
pub fn preflight(
    langs: &[String],
    opts: &BuildOptions,
    run_opts: &RunOptions,
    ctx: &TrialContext,
    building: &mut dyn FnMut(&str),
    name_of: &dyn Fn(&str) -> String,
) -> Option<Vec<Checked>> {
    let vopts = RunOptions {
        verify_only: true,
        ..run_opts.clone()
    };
    let mut checked: Vec<Checked> = Vec::new();
    for name in langs {
        building(name);
        let mut l = Checked {
            name: name.clone(),
            verify: None,
            error: None,
        };
        match build(name, opts).map(|b| run(&b, &vopts, ctx)) {
            Ok(Ok((out, _))) => l.verify = Some(out),
            Ok(Err(WorkloadError::Interrupted)) => return None,
            Ok(Err(e)) => l.error = Some(e.to_string()),
            Err(e) => l.error = Some(e.render(name_of)),
        }
        checked.push(l);
    }
    if ctx.interrupted.load(Ordering::SeqCst) {
        return None;
    }
    verify(&mut checked, opts, &vopts, ctx);
    Some(checked)
}

/// Checks every built language's output against C's (or, without C, its own
/// consistency); a disagreement becomes that language's error.
fn verify(checked: &mut [Checked], opts: &BuildOptions, vopts: &RunOptions, ctx: &TrialContext) {
    let reference: Option<Output> = match checked.iter().find(|l| l.name == "c") {
        Some(c) => c.verify.clone(),
        None => build("c", opts)
            .ok()
            .and_then(|b| run(&b, vopts, ctx).ok())
            .map(|(o, _)| o),
    };
    for l in checked {
        let Some(out) = &l.verify else { continue };
        let check = match &reference {
            Some(r) => agree(r, out),
            None => self_check(out),
        };
        if let Err(e) = check {
            l.error = Some(format!("{}: verification failed: {e}", l.name));
        }
    }
}
