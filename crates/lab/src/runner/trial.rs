//! One trial of a run: its service, hooks, attachments (monitor, profile, doctor) and
//! workload (where the service, monitor and profile run: `placed`). The workload is
//! built from the trial as data ([`TrialSpec`]) by the runner's
//! [`WorkloadFactory`](perflab_workloads::spec::WorkloadFactory) — the seam a fake
//! workload (crates/lab/tests) and a remote worker use (docs/architecture.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use perflab_store::vocab::{ARTIFACT_FLAMEGRAPH, ARTIFACT_PROFILE, ARTIFACT_STACKS};
use perflab_store::{ArtifactData, TrialStatus};
use perflab_telemetry::perfcount::Reading;
use perflab_workloads::command::{
    counters_artifact, run_tree, CommandWorkload, Leftovers, COUNTERS_ARTIFACT,
};
use perflab_workloads::spec::{
    Attachments, KindSpec, MonitorAttachment, ProfileAttachment, TrialSpec,
};
use perflab_workloads::{Measurement, TrialContext, WorkloadError};

use super::placed::Service;
use super::{Done, Runner};
use crate::experiment::WorkloadSpec;
use crate::plan::PlannedTrial;
use crate::service::argv;
use crate::site::ProfileResult;

/// The experiment's four hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hook {
    Setup,
    Prepare,
    Cleanup,
    Teardown,
}

impl Hook {
    fn name(self) -> &'static str {
        match self {
            Hook::Setup => "setup",
            Hook::Prepare => "prepare",
            Hook::Cleanup => "cleanup",
            Hook::Teardown => "teardown",
        }
    }
}

impl Runner<'_> {
    fn fail(msg: String, m: Measurement) -> Done {
        Done {
            status: TrialStatus::Failed,
            error: Some(msg),
            m,
        }
    }

    pub(super) fn trial(&mut self, t: &PlannedTrial) -> Done {
        let mut vars = self.vars(t);
        // The service for this config, here or on its host.
        if let Some(spec) = &self.exp.service {
            if self
                .service
                .as_ref()
                .is_some_and(|s| s.config() != t.config)
            {
                let mut sink = Measurement::default();
                self.stop_service(&mut sink);
            }
            if self.service.is_none() {
                if let Err(e) = self.start_service(spec, &vars, t) {
                    return Self::fail(
                        format!("service did not start: {e}"),
                        Measurement::default(),
                    );
                }
            }
            self.service_vars(&mut vars);
        }
        if let Some(p) = &self.exp.prepare {
            if let Err(e) = self.hook(Hook::Prepare, &p.render(&vars)) {
                return self.hook_failed("prepare", e);
            }
        }
        let spec = match self.trial_spec(t, &vars) {
            Ok(spec) => spec,
            Err(e) => return Self::fail(e, Measurement::default()),
        };
        let monitor = self.start_monitor(&spec);
        let profiler = self.start_profile(&spec);
        let pid = self.service.as_ref().and_then(|s| s.local_pid());
        let watch = spec.attachments.doctor.then(|| self.doctor.start(pid));
        let attach = profiler.as_ref().and_then(|p| p.attach_hook());
        let counted = self.service_counters();
        let result = self.workload(&spec, attach);
        let counted = counted.and_then(|before| Some(self.service_counters()?.since(&before)));
        let doctor = watch.and_then(|w| self.doctor.finish(w, self.obs));
        let recording = monitor.and_then(|m| self.stop_monitor(m));
        let profile = profiler.and_then(|p| self.stop_profile(p, t.ordinal));
        let mut done = Done::of(result);
        if let Some((rec, tag)) = recording {
            add_recording(&mut done.m, rec);
            done.m.artifacts.extend(tag);
        }
        done.m.artifacts.extend(self.service_artifact());
        done.m.artifacts.extend(doctor);
        if let Some(r) = &counted {
            add_service_counters(&mut done.m, r);
        }
        self.warn_multiplexed(&done.m, t.ordinal);
        if let Some((p, host)) = profile {
            add_profile(&mut done.m, &p, host.as_deref());
        }
        if done.status != TrialStatus::Interrupted && !self.is_interrupted() {
            if let Err(e) = self.check_service() {
                let prior = done
                    .error
                    .take()
                    .map(|p| format!(" (the workload said: {p})"))
                    .unwrap_or_default();
                done.status = TrialStatus::Failed;
                done.error = Some(format!("{e}{prior}"));
            }
        }
        if let Some(c) = &self.exp.cleanup {
            if let Err(e) = self.hook(Hook::Cleanup, &c.render(&vars)) {
                if done.status == TrialStatus::Ok {
                    done.status = TrialStatus::Failed;
                    done.error = Some(format!("cleanup failed: {e}"));
                }
            }
        }
        done
    }

    fn hook_failed(&self, what: &str, e: String) -> Done {
        if self.is_interrupted() {
            return Done {
                status: TrialStatus::Interrupted,
                error: Some("interrupted".into()),
                m: Measurement::default(),
            };
        }
        Self::fail(format!("{what} failed: {e}"), Measurement::default())
    }

    /// Trial `t` as data: its workload rendered with `vars`, its limits and what is
    /// attached to it. An error names what could not be rendered.
    pub(super) fn trial_spec(
        &self,
        t: &PlannedTrial,
        vars: &BTreeMap<String, String>,
    ) -> Result<TrialSpec, String> {
        let workload = match &self.exp.workload {
            WorkloadSpec::Command(c) => KindSpec::Command(CommandWorkload {
                argv: argv(&c.command.render(vars), c.shell)?,
                env: c
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.render(vars)))
                    .collect(),
                cwd: c.cwd.as_ref().map(|t| PathBuf::from(t.render(vars))),
                allow_failure: c.allow_failure,
                metrics: c.metrics.clone(),
                leftovers: c.leftovers,
                counters: c.counters.clone(),
                exclude_pids: self.service.iter().flat_map(|s| s.own_children()).collect(),
            }),
            WorkloadSpec::Options { kind, table } => crate::workload::rendered(*kind, table, vars)?,
        };
        let profiled = |reps: &[u32]| reps.is_empty() || reps.contains(&t.repetition);
        let watched = workload.kind().watched_by_doctor();
        Ok(TrialSpec {
            workload,
            params: self.configs[t.config].params_map(),
            repetition: t.repetition,
            ordinal: t.ordinal,
            warmup: t.warmup,
            cpus: self.exp.cpus.as_ref().map(|c| c.to_string()),
            timeout_s: self.exp.timeout.map(|d| d.as_secs_f64()),
            attachments: Attachments {
                monitor: self.exp.monitor.as_ref().map(|m| MonitorAttachment {
                    interval_s: m.interval.as_secs_f64(),
                    probes: m.probes.iter().map(|p| p.name().to_string()).collect(),
                }),
                profile: self
                    .exp
                    .profile
                    .as_ref()
                    .filter(|p| !t.warmup && profiled(&p.repetitions))
                    .map(|p| ProfileAttachment {
                        frequency: p.frequency,
                        call_graph: p.call_graph,
                        dwarf_stack_bytes: p.dwarf_stack_bytes,
                        off_cpu: p.off_cpu,
                        jit: p.jit,
                        top: p.top,
                        service: p.service,
                        workload: p.workload,
                    }),
                doctor: !t.warmup && watched,
            },
        })
    }

    /// The local service's counters now (None: no service, or not counted).
    fn service_counters(&self) -> Option<Reading> {
        match &self.service {
            Some(Service::Local(s)) => s.read_counters(),
            _ => None,
        }
    }

    /// A trial whose counts were scaled says so (its `counters.json` has the detail),
    /// and a counter that could not be counted is named with its reason, once per run
    /// ("counter instructions: not available: no hardware PMU"): missing, never 0.
    fn warn_multiplexed(&self, m: &Measurement, ordinal: u32) {
        for a in m
            .artifacts
            .iter()
            .filter(|a| a.name == COUNTERS_ARTIFACT || a.name == SERVICE_COUNTERS_ARTIFACT)
        {
            let json: serde_json::Value = serde_json::from_slice(&a.content).unwrap_or_default();
            if let Some(w) = json.get("warning").and_then(|w| w.as_str()) {
                self.obs.warn(&format!("trial {ordinal}: {w}"));
            }
            let whose = if a.name == COUNTERS_ARTIFACT {
                ""
            } else {
                "service "
            };
            let events = json["events"].as_object().into_iter().flatten();
            for (event, v) in events {
                let Some(why) = v.get("missing").and_then(|w| w.as_str()) else {
                    continue;
                };
                let said = format!("{whose}counter {event}: {why}");
                if self.missing_said.borrow_mut().insert(said.clone()) {
                    self.obs.warn(&format!("{said} (not stored)"));
                }
            }
        }
    }

    /// Builds the trial's workload with the runner's factory and runs it (`attach`:
    /// the workload profile's hook).
    fn workload(
        &self,
        spec: &TrialSpec,
        attach: Option<perflab_workloads::AttachHook>,
    ) -> Result<Measurement, WorkloadError> {
        let ctx = TrialContext {
            cpus: spec.cpu_set()?,
            timeout: spec.timeout(),
            interrupted: self.interrupted.clone(),
            run_dir: self.run_dir.clone(),
            attach,
            jit: spec.jit(),
        };
        self.factory.build(spec)?.run(&ctx)
    }

    /// Runs a setup/prepare/cleanup/teardown command with `sh -c`. Cleanup and
    /// teardown undo what the others did, so Ctrl-C does not cut them short: they run
    /// to their end (bounded by the trial timeout, else a minute).
    pub(super) fn hook(&self, hook: Hook, command: &str) -> Result<(), String> {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(command);
        let what = hook.name();
        let undo = matches!(hook, Hook::Cleanup | Hook::Teardown);
        let ctx = TrialContext {
            cpus: None,
            timeout: self
                .exp
                .timeout
                .or(Some(Duration::from_secs(if undo { 60 } else { 3600 }))),
            interrupted: if undo {
                std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false))
            } else {
                self.interrupted.clone()
            },
            run_dir: self.run_dir.clone(),
            attach: None,
            jit: false,
        };
        // What the hook leaves behind is killed — but never the service under test, which
        // is perflab's child too (a `prepare` between its start and the workload).
        let service: Vec<i32> = self.service.iter().flat_map(|s| s.own_children()).collect();
        let r = run_tree(cmd, &ctx, Leftovers::Kill, &service).map_err(|e| e.to_string())?;
        if r.interrupted {
            return Err("interrupted".into());
        }
        if r.timed_out {
            return Err(format!("{what} command timed out"));
        }
        match r.status {
            Some(s) if s.success() => Ok(()),
            Some(s) => Err(format!(
                "{what} command {command:?} ended with {}; last output:\n{}",
                perflab_workloads::command::describe_status(&s),
                r.tail(20)
            )),
            None => Err(format!("{what} command {command:?} ended abnormally")),
        }
    }
}

/// Adds a monitor recording to a trial's measurement: its series, its per-trial
/// summaries as metrics, and the service's CPU time per request when the workload
/// counted requests.
fn add_recording(m: &mut Measurement, rec: perflab_telemetry::Recording) {
    let cpu_s = rec
        .summaries
        .iter()
        .find(|s| s.name == "process.cpu_s")
        .map(|s| s.value);
    for s in rec.summaries {
        m.metrics.push(perflab_store::MetricValue::new(
            &s.name,
            &s.unit,
            s.value,
            s.better.as_str(),
        ));
    }
    for s in rec.series {
        m.series.push(perflab_store::SeriesData {
            name: s.name,
            unit: s.unit,
            points: s.points,
        });
    }
    let requests = m
        .metrics
        .iter()
        .find(|x| x.name == "requests")
        .map(|x| x.value);
    if let (Some(cpu), Some(n)) = (cpu_s, requests) {
        if n > 0.0 {
            m.metrics.push(perflab_store::MetricValue::new(
                "service_cpu_per_req_us",
                "µs",
                cpu / n * 1e6,
                "lower",
            ));
        }
    }
}

/// The artifact of a service's counters over one trial.
const SERVICE_COUNTERS_ARTIFACT: &str = "service-counters.json";

/// Adds what the service's counters counted during the trial: `service.counter.*`
/// totals, per request (`service_<event>_per_req`) when the workload counted
/// requests, and the detail as `service-counters.json`.
fn add_service_counters(m: &mut Measurement, r: &Reading) {
    let requests = m
        .metrics
        .iter()
        .find(|x| x.name == "requests")
        .map(|x| x.value);
    let mut add = |(name, unit, value, better): (String, &str, f64, &str)| {
        m.metrics
            .push(perflab_store::MetricValue::new(&name, unit, value, better));
    };
    for (name, unit, value, better) in r.metrics() {
        add((format!("service.{name}"), unit, value, better));
    }
    for x in r.per_op_metrics("service_", requests.unwrap_or(0.0)) {
        add(x);
    }
    let mut a = counters_artifact(r);
    a.name = SERVICE_COUNTERS_ARTIFACT.into();
    m.artifacts.push(a);
}

/// Adds a profile to a trial: the report (JSON), folded stacks and flame graph as
/// artifacts, the kernel's share of the samples as `profile.kernel_pct`, and the top
/// functions' shares of all samples as `fn:NAME` metrics. `profile.json` holds the
/// report's fields and perf's `frequency` (the differential profile turns samples into
/// CPU time with it) and how its call chains were recorded (`call_graph_mode`,
/// `dwarf_stack_bytes`, `call_graph_note`: what `auto` chose and why); a profile taken
/// on another host has that host, and the pid it profiled there (null: every CPU),
/// beside them; and `jit`, the flags given for JIT frames and the perf maps kept, where
/// there were any.
fn add_profile(m: &mut Measurement, p: &ProfileResult, host: Option<&str>) {
    /// The report with its sampling frequency and where it was taken.
    #[derive(serde::Serialize)]
    struct Placed<'a> {
        #[serde(flatten)]
        report: &'a perflab_profile::Report,
        #[serde(skip_serializing_if = "Option::is_none")]
        frequency: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        host: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pid: Option<Option<i32>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        off_cpu: Option<&'a perflab_profile::OffCpuReport>,
        jit: Option<&'a perflab_profile::JitInfo>,
        #[serde(skip_serializing_if = "Option::is_none")]
        jit_note: Option<&'a str>,
        call_graph_mode: Option<perflab_profile::CallGraphMode>,
        #[serde(skip_serializing_if = "Option::is_none")]
        dwarf_stack_bytes: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_graph_note: Option<&'a str>,
    }
    // The kernel's share of the samples: the profiler study's first figure (70 % there).
    m.metrics.push(perflab_store::MetricValue::new(
        "profile.kernel_pct",
        "%",
        p.report.kernel_pct,
        "lower",
    ));
    let report = serde_json::to_vec_pretty(&Placed {
        report: &p.report,
        frequency: (p.frequency > 0).then_some(p.frequency),
        host,
        pid: host.map(|_| p.pid),
        off_cpu: p.off_cpu.as_ref().map(|o| &o.report),
        jit: p.jit.as_ref(),
        jit_note: p.jit_note.as_deref(),
        call_graph_mode: p.call_graph.as_ref().map(|c| c.mode),
        dwarf_stack_bytes: p.call_graph.as_ref().and_then(|c| c.dwarf_stack_bytes),
        call_graph_note: p.call_graph.as_ref().and_then(|c| c.note.as_deref()),
    });
    m.artifacts.push(ArtifactData {
        name: ARTIFACT_PROFILE.into(),
        media_type: "application/json".into(),
        content: report.unwrap_or_default(),
    });
    m.artifacts.push(ArtifactData {
        name: ARTIFACT_STACKS.into(),
        media_type: "text/plain".into(),
        content: p.folded.clone().into_bytes(),
    });
    if let Some(svg) = &p.flamegraph {
        m.artifacts.push(ArtifactData {
            name: ARTIFACT_FLAMEGRAPH.into(),
            media_type: "image/svg+xml".into(),
            content: svg.clone().into_bytes(),
        });
    }
    for (name, pct) in &p.top {
        m.metrics.push(perflab_store::MetricValue::new(
            &format!("fn:{name}"),
            "%",
            *pct,
            "lower",
        ));
    }
    add_off_cpu(m, p);
}

/// With `[profile] off_cpu = true`: the off-CPU metrics (`offcpu_share`, `offcpu_ms`,
/// `offcpu:NAME`, as `perflab profile --off-cpu` makes them) and the wall-clock folded
/// stacks (`stacks.wall.folded`).
fn add_off_cpu(m: &mut Measurement, p: &ProfileResult) {
    let Some(off) = &p.off_cpu else {
        return;
    };
    let r = &off.report;
    m.metrics
        .extend(perflab_workloads::profile::off_cpu_metrics(
            r,
            r.functions.len(),
        ));
    m.artifacts.push(ArtifactData {
        name: perflab_store::vocab::ARTIFACT_WALL_STACKS.into(),
        media_type: "text/plain".into(),
        content: off.wall_folded.clone().into_bytes(),
    });
}
