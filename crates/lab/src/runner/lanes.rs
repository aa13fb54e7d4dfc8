//! Hosts in parallel. A run over several hosts (`on = [...]`, `--on`) gives each host a
//! *lane*: its own trials, in the plan's order, one at a time — so a host never runs
//! two trials at once and its trials stay interleaved across configs — while the lanes
//! run side by side. A run then takes about as long as its slowest host, not the sum of
//! all hosts.
//!
//! Only what is the host's own runs in a lane: the trial's spec is rendered here first
//! (on this thread, as for a sequential run), the workload is built by a factory that
//! says it may be used from several threads ([`WorkloadFactory::concurrent`]: the
//! fleet's, where each trial is a `perflab worker` over its own ssh session), and the
//! result comes back here, to this thread, which reports and records every trial the
//! moment it ends (the store has one writer). Anything the controller shares between
//! trials keeps a run sequential: a `[service]`, a `[monitor]`, a `[profile]`, and
//! `prepare`/`cleanup` commands, which run here around each trial.
//!
//! Ctrl-C stops every lane: each running trial stops (a remote one closes its session,
//! which stops the worker there) and comes back interrupted; no lane starts another.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Instant, SystemTime};

use perflab_workloads::spec::{TrialSpec, WorkloadFactory};
use perflab_workloads::{Measurement, TrialContext, WorkloadError};

use super::{Done, Runner};
use crate::plan::PlannedTrial;
use perflab_store::TrialStatus;

/// What a lane sends back: a trial started, or ended.
enum Said {
    Started(usize),
    Ended {
        index: usize,
        done: Done,
        started: SystemTime,
        duration: f64,
    },
}

impl Done {
    /// A workload's result as a trial outcome.
    pub(super) fn of(result: Result<Measurement, WorkloadError>) -> Done {
        match result {
            Ok(m) => Done {
                status: TrialStatus::Ok,
                error: None,
                m,
            },
            Err(WorkloadError::Interrupted) => Done {
                status: TrialStatus::Interrupted,
                error: Some("interrupted".into()),
                m: Measurement::default(),
            },
            Err(WorkloadError::Failed { message, partial }) => Done {
                status: TrialStatus::Failed,
                error: Some(message),
                m: *partial,
            },
            Err(WorkloadError::Setup(e)) => Done {
                status: TrialStatus::Failed,
                error: Some(e),
                m: Measurement::default(),
            },
        }
    }
}

/// The host a trial runs on, from its `host` parameter (the `on` dimension).
fn host_of(r: &Runner<'_>, t: &PlannedTrial) -> Option<String> {
    r.configs[t.config]
        .params
        .iter()
        .find(|(k, _)| k.as_str() == "host")
        .and_then(|(_, v)| v.as_str().map(str::to_string))
}

impl Runner<'_> {
    /// The batch's trials by host (indices into `todo`, in order), when they can run
    /// in parallel: on two hosts or more, with a factory that allows it and nothing the
    /// controller shares between trials.
    pub(super) fn lanes(&self, todo: &[PlannedTrial]) -> Option<BTreeMap<String, Vec<usize>>> {
        let e = self.exp;
        let shared = e.service.is_some()
            || e.monitor.is_some()
            || e.profile.is_some()
            || e.prepare.is_some()
            || e.cleanup.is_some();
        if shared || self.factory.concurrent().is_none() {
            return None;
        }
        let mut lanes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, t) in todo.iter().enumerate() {
            lanes.entry(host_of(self, t)?).or_default().push(i);
        }
        (lanes.len() > 1).then_some(lanes)
    }

    /// Runs each host's lane on its own thread and records every trial here as it
    /// ends; true when interrupted.
    pub(super) fn run_lanes(
        &mut self,
        todo: &[PlannedTrial],
        lanes: BTreeMap<String, Vec<usize>>,
    ) -> bool {
        let factory: &dyn WorkloadFactory = self.factory;
        let factory = factory.concurrent().expect("checked by lanes()");
        // Every trial's spec, rendered here; a trial whose spec cannot be rendered
        // fails without going to its host.
        let mut specs: Vec<Option<Result<TrialSpec, String>>> = todo
            .iter()
            .map(|t| Some(self.trial_spec(t, &self.vars(t))))
            .collect();
        let lanes: Vec<Vec<(usize, Result<TrialSpec, String>)>> = lanes
            .into_values()
            .map(|idx| {
                idx.into_iter()
                    .map(|i| (i, specs[i].take().expect("each trial in one lane")))
                    .collect()
            })
            .collect();
        let interrupted = self.interrupted.clone();
        let run_dir = self.run_dir.clone();
        let (tx, rx) = mpsc::channel::<Said>();
        let mut stopped = false;
        std::thread::scope(|scope| {
            for lane in lanes {
                let tx = tx.clone();
                let interrupted = interrupted.clone();
                let run_dir = run_dir.clone();
                scope.spawn(move || {
                    for (index, spec) in lane {
                        if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                            return;
                        }
                        let _ = tx.send(Said::Started(index));
                        let started = SystemTime::now();
                        let clock = Instant::now();
                        let done = match spec {
                            Err(e) => Done::of(Err(WorkloadError::Setup(e))),
                            Ok(spec) => Done::of(spec.cpu_set().and_then(|cpus| {
                                let ctx = TrialContext {
                                    cpus,
                                    timeout: spec.timeout(),
                                    interrupted: interrupted.clone(),
                                    run_dir: run_dir.clone(),
                                    attach: None,
                                    jit: spec.jit(),
                                };
                                factory.build(&spec)?.run(&ctx)
                            })),
                        };
                        let duration = clock.elapsed().as_secs_f64();
                        let _ = tx.send(Said::Ended {
                            index,
                            done,
                            started,
                            duration,
                        });
                    }
                });
            }
            drop(tx);
            // The lanes end when their trials do (or at an interrupt), so this ends.
            for said in rx {
                match said {
                    Said::Started(i) => {
                        let t = &todo[i];
                        let label = self.configs[t.config].label();
                        self.obs.trial_started(i, todo.len(), &label, t.warmup);
                    }
                    Said::Ended {
                        index,
                        done,
                        started,
                        duration,
                    } => {
                        if self.finish(index, &todo[index], done, started, duration) {
                            stopped = true;
                        }
                    }
                }
            }
        });
        stopped || self.is_interrupted()
    }
}
