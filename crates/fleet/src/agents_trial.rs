//! A distributed load as a trial: `[workload] kind = "http"` with `agents = ["a", "b"]`
//! (and `agent_weights`). The fleet's factory builds an [`AgentsTrial`] for such a
//! trial; it runs the same controller as `perflab http --agents` ([`crate::agents`]:
//! split, barrier, per-second histograms, merge) and stores what a one-host http trial
//! stores — the merged report's metrics, its whole latency histogram and per-second
//! series — plus the [`ARTIFACT_AGENTS`] artifact: each agent's part (requests, rate,
//! errors, p99, client CPU, whether it saturated, or why it was lost) and the start
//! skew at the barrier, which `perflab report` shows.
//!
//! A lost agent fails the trial (its figures would cover only part of the load) with
//! the reason, keeping what the others measured; Ctrl-C stops every agent.

use perflab_store::vocab::ARTIFACT_AGENTS;
use perflab_workloads::http::{Agents, HttpWorkload};
use perflab_workloads::{ArtifactData, Measurement, TrialContext, Workload, WorkloadError};

use crate::agents::{AgentOutcome, Outcome, Plan};
use crate::hosts::Fleet;
use crate::ssh_agents::SshLink;

/// One trial's distributed load.
pub struct AgentsTrial {
    pub fleet: Fleet,
    /// The load options without `agents`.
    pub options: serde_json::Value,
    pub agents: Agents,
}

impl Workload for AgentsTrial {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let spec = HttpWorkload::checked(self.options.clone())
            .map_err(WorkloadError::Setup)?
            .spec;
        if ctx.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(WorkloadError::Interrupted);
        }
        let plan = Plan {
            spec: &spec,
            weights: self.agents.weights.as_deref(),
            stop: ctx.interrupted.clone(),
        };
        let mut link = SshLink::new(&self.fleet, &self.agents.names);
        let outcome = crate::agents::run(&mut link, &plan, |_| {});
        let (lost, why): (Vec<&str>, Vec<&str>) = outcome
            .agents
            .iter()
            .filter_map(|a| Some((a.name.as_str(), a.result.as_ref().err()?.as_str())))
            .unzip();
        let Some(report) = &outcome.merged else {
            if ctx.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(WorkloadError::Interrupted);
            }
            return Err(WorkloadError::Setup(format!(
                "no agent finished its segment ({})",
                why.join("; ")
            )));
        };
        if report.interrupted {
            return Err(WorkloadError::Interrupted);
        }
        let mut m = perflab_workloads::http::measurement(report);
        perflab_workloads::http::add_thresholds(&mut m, &spec, report);
        m.artifacts.push(artifact(&outcome));
        if !lost.is_empty() {
            return Err(WorkloadError::Failed {
                message: format!(
                    "agent{} {} lost ({}); the figures cover the other agents' segments only",
                    if lost.len() > 1 { "s" } else { "" },
                    lost.join(", "),
                    why.join("; ")
                ),
                partial: Box::new(m),
            });
        }
        if report.requests == 0 {
            return Err(WorkloadError::Failed {
                message: format!("no request completed ({} errors)", report.errors.total),
                partial: Box::new(m),
            });
        }
        Ok(m)
    }
}

/// One entry of the `agents` array (`perflab http --agents --json`, the artifact).
pub fn agent_json(a: &AgentOutcome) -> serde_json::Value {
    let mut v = serde_json::json!({
        "name": a.name,
        "weight": a.weight,
        "cores": a.cores,
        "connections": a.connections,
        "clock_offset_ms": a.clock_offset_ms,
    });
    match &a.result {
        Ok(r) => {
            v["requests"] = serde_json::json!(r.requests);
            v["rps"] = serde_json::json!(r.rps);
            v["errors"] = serde_json::json!(r.failed());
            v["cpu_busy"] = serde_json::json!(r.client_busy);
            v["saturated"] = serde_json::json!(r.client_saturated);
            v["latency_ms"] = serde_json::to_value(&r.latency_ms).unwrap_or_default();
            v["histogram"] = serde_json::json!(a.histogram);
        }
        Err(why) => {
            v["lost"] = serde_json::json!(why);
        }
    }
    v
}

/// The [`ARTIFACT_AGENTS`] artifact of a distributed load: `{"start_skew_ms", "agents"}`.
pub fn artifact(o: &Outcome) -> ArtifactData {
    let doc = serde_json::json!({
        "start_skew_ms": o.start_skew_ms,
        "agents": o.agents.iter().map(agent_json).collect::<Vec<_>>(),
    });
    ArtifactData {
        name: ARTIFACT_AGENTS.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec_pretty(&doc).unwrap_or_default(),
    }
}
