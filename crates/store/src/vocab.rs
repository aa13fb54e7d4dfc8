//! The store's shared vocabulary: the names every writer and reader of a run agree on —
//! run states, artifact names and how a config's parameters are written as a label. Writers (the
//! lab, its workloads) and readers (analysis, report, the CLI) take them from here, so
//! a name cannot drift between the side that stores and the side that looks.

use crate::Params;

/// A run's owner is at work on it (heartbeat fresh, process alive).
pub const RUNNING: &str = "running";
/// Every planned trial ran and succeeded.
pub const COMPLETE: &str = "complete";
/// Every planned trial ran; some failed (kept with their errors).
pub const COMPLETE_WITH_FAILURES: &str = "complete_with_failures";
/// Every planned trial ran, and a gate the run was asked to pass failed: a threshold
/// (`[workload] thresholds`, `perflab http --threshold`). Exit status 3.
pub const GATE_FAILED: &str = "gate_failed";
/// Stopped on purpose (Ctrl-C, SIGTERM) before the end; finished trials are kept and
/// `--resume` runs the rest. Exit status 130.
pub const INTERRUPTED: &str = "interrupted";
/// Could not go on (a setup hook failed): nothing was measured.
pub const FAILED: &str = "failed";
/// Stored `running`, but the process that ran it is gone (killed, crashed, its host
/// lost): derived when the run is read, never stored (crate::owner says how it is
/// judged); `--resume` finishes it.
pub const ABANDONED: &str = "abandoned";

/// Every run state with what it means, in lifecycle order (for help texts and docs).
pub const RUN_STATES: &[(&str, &str)] = &[
    (RUNNING, "its perflab is at work on it"),
    (COMPLETE, "every trial ran and succeeded"),
    (COMPLETE_WITH_FAILURES, "every trial ran, some failed"),
    (GATE_FAILED, "every trial ran, a threshold failed"),
    (
        INTERRUPTED,
        "stopped by Ctrl-C or SIGTERM; --resume runs the rest",
    ),
    (FAILED, "could not run (a setup hook failed)"),
    (
        ABANDONED,
        "its perflab is gone (killed, crashed); --resume finishes it",
    ),
];

/// The profile report (JSON, `perflab_profile::Report`) of a profiled trial — the same
/// name whether it came from `perflab profile` or an experiment's `[profile]`.
pub const ARTIFACT_PROFILE: &str = "profile.json";
/// Folded call stacks of a profiled trial (`inferno`/`flamegraph.pl` input).
pub const ARTIFACT_STACKS: &str = "stacks.folded";
/// Wall-clock folded stacks of a profile recorded with off-CPU time: on- and off-CPU
/// stacks in microseconds, the off-CPU ones ending in `[off-cpu]` (`stacks.folded`
/// stays on-CPU samples, which the differential profile reads).
pub const ARTIFACT_WALL_STACKS: &str = "stacks.wall.folded";
/// The flame graph (SVG) of a profiled trial.
pub const ARTIFACT_FLAMEGRAPH: &str = "flamegraph.svg";
/// The doctor's findings around a trial (JSON).
pub const ARTIFACT_DOCTOR: &str = "doctor.json";
/// The tail of the service-under-test's output.
pub const ARTIFACT_SERVICE_LOG: &str = "service.log";
/// Where the service under test ran when it ran on another host (`[service] host`):
/// the host, its address, the service's pid there, its port and network namespace.
pub const ARTIFACT_SERVICE: &str = "service.json";
/// Where a trial's telemetry was sampled when it was sampled on another host
/// (`[monitor] host`): the host and the pid the process probe followed there.
pub const ARTIFACT_MONITOR: &str = "monitor.json";
/// The full HTTP load report (JSON, `perflab_load::Report`).
pub const ARTIFACT_HTTP_REPORT: &str = "http-report.json";
/// What was read around each find-max step of an http trial (JSON: one record per
/// step, crate workloads' `knee::facts::StepFacts`), from which the report's `limit`
/// was named.
pub const ARTIFACT_KNEE: &str = "knee.json";
/// The full disk report (JSON).
pub const ARTIFACT_DISK_REPORT: &str = "disk-report.json";
/// An http trial's threshold verdicts (`[workload] thresholds`).
pub const ARTIFACT_THRESHOLDS: &str = "thresholds.json";
/// A distributed load's agents (JSON: `start_skew_ms` and the `agents` array of
/// `perflab http --agents --json`).
pub const ARTIFACT_AGENTS: &str = "agents.json";

/// A parameter value as text: strings bare, everything else as JSON (`4`, `true`) — the
/// form templates substitute and labels show.
pub fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `k=v,k=v` of a config's parameters (or `-` when it has none).
pub fn params_label(p: &Params) -> String {
    if p.is_empty() {
        return "-".into();
    }
    p.iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let mut p = Params::new();
        assert_eq!(params_label(&p), "-");
        p.insert("workers".into(), serde_json::json!(2));
        p.insert("mode".into(), serde_json::json!("on"));
        assert_eq!(params_label(&p), "mode=on,workers=2");
    }
}
