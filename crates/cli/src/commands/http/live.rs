//! `perflab http`'s local trial: the load engine as the `http` kind measures it, with the
//! live per-second line on stderr and the engine's own report kept for the command to
//! print (the runner records the trial; the command prints the report it knows).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use perflab_load::{Checked, LoadError, LoadSpec, Observer, Report, SecondPoint, Step};
use perflab_workloads::spec::{TrialSpec, WorkloadFactory};
use perflab_workloads::{Measurement, TrialContext, Workload, WorkloadError};

/// What the local trial's load engine returned, kept for this command to print.
type Kept = Arc<Mutex<Option<Result<Report, LoadError>>>>;

/// The factory of the local trial: the load engine with the live line on stderr, its
/// report kept for printing. The trial's spec is the one this command checked.
pub(super) struct LiveFactory {
    pub(super) spec: LoadSpec,
    pub(super) checked: Option<Arc<Checked>>,
    /// Draw the live line (a terminal, not `--quiet`, not `--json`).
    pub(super) on: bool,
    pub(super) kept: Kept,
}

impl WorkloadFactory for LiveFactory {
    fn build(&self, _trial: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
        let checked = match &self.checked {
            Some(c) => c.clone(),
            None => Arc::new(
                perflab_load::check(&self.spec)
                    .map_err(|e| WorkloadError::Setup(format!("http load: {e}")))?,
            ),
        };
        Ok(Box::new(LiveHttp {
            spec: self.spec.clone(),
            checked,
            on: self.on,
            kept: self.kept.clone(),
        }))
    }
}

/// `perflab http`'s trial: `kind = "http"` as the experiment's workload measures it
/// (`perflab_workloads::http`: the same metrics, histogram and artifacts), drawn live;
/// an interrupted load keeps what it measured (the runner marks the trial
/// interrupted), and failed requests fail the trial, as this command always stored.
struct LiveHttp {
    spec: LoadSpec,
    checked: Arc<Checked>,
    on: bool,
    kept: Kept,
}

impl Workload for LiveHttp {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let pin = ctx.pin_this_thread()?;
        let mut line = LiveLine::new(self.on);
        // A find-max run's knee is judged from the host around each step.
        let url = perflab_workloads::http::first_url(&self.spec);
        let mut watch = perflab_workloads::knee::KneeWatch::new(&mut line, url);
        let mut result = perflab_load::run_until(
            &self.spec,
            &self.checked,
            &mut watch,
            ctx.interrupted.clone(),
        );
        if let Ok(r) = &mut result {
            r.limit = watch.limit(r);
        }
        let knee = watch.artifact();
        drop(watch);
        line.clear();
        drop(pin);
        let outcome = match &result {
            Ok(r) => {
                let mut m = perflab_workloads::http::measurement(r);
                perflab_workloads::http::add_thresholds(&mut m, &self.spec, r);
                m.artifacts.extend(knee);
                if r.failed.requests > 0 && !r.interrupted {
                    Err(WorkloadError::Failed {
                        message: r.failed.summary(),
                        partial: Box::new(m),
                    })
                } else {
                    Ok(m)
                }
            }
            Err(e) => Err(WorkloadError::Setup(format!("http load: {e}"))),
        };
        if let Ok(mut k) = self.kept.lock() {
            *k = Some(result);
        }
        outcome
    }
}

/// One line per second on stderr, rewritten in place; one line per finished step.
struct LiveLine {
    on: bool,
    started: Instant,
    drawn: bool,
}

impl LiveLine {
    fn new(on: bool) -> Self {
        LiveLine {
            on,
            started: Instant::now(),
            drawn: false,
        }
    }

    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[K");
            self.drawn = false;
        }
    }
}

impl Observer for LiveLine {
    fn second(&mut self, p: &SecondPoint) {
        if self.on {
            eprint!(
                "\r\x1b[K  {:>4} s  {:>10.0} req/s  p99 {:>8.3} ms  errors {}",
                self.started.elapsed().as_secs(),
                p.rps,
                p.p99_ms,
                p.errors
            );
            self.drawn = true;
        }
    }

    fn step(&mut self, s: &Step) {
        if self.on {
            self.clear();
            let verdict = match s.passed {
                Some(true) => "  meets the SLO",
                Some(false) => "  breaks the SLO",
                None => "",
            };
            eprintln!(
                "  step {:>10.1}: {:>10.0} req/s  p99 {:>8.3} ms  errors {:.2} %{verdict}",
                s.target,
                s.rps,
                s.latency_ms.p99,
                s.error_rate * 100.0
            );
        }
    }
}
