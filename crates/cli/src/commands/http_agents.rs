//! `perflab http URL --agents a,b` (or `--engine slurm --nodes K`): one load test driven
//! from several hosts.
//!
//! The work is `perflab_fleet::agents` (split, barrier, merge, bounded waits) over one
//! of its links — the fleet's ssh transport and deploy, or one `srun`
//! (`perflab_fleet::slurm`) — with its hosts or nodes chosen and checked by
//! `perflab_fleet::agent_hosts`. This file checks which flags go together, maps an
//! error of the agents' hosts to its flag (every bad one exits 2 before any host is
//! contacted), prints the merged report — the same table and JSON contract as a
//! one-host run — with a per-agent table (or the `agents` array and `start_skew_ms` in
//! `--json`), records the run with the merged histogram, and maps the outcome to exit
//! codes: a lost agent is 4, as failed requests are; Ctrl-C is 130.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table};
use perflab_fleet::agent_hosts::{
    self, AgentHostsError, Field, SlurmAsk, SshAgents, DEFAULT_INVENTORY,
};
use perflab_fleet::agents::{Link, Outcome, Plan};
use perflab_fleet::agents_trial::{self, agent_json};
use perflab_fleet::slurm::SlurmLink;
use perflab_fleet::ssh_agents::SshLink;
use perflab_fleet::{Fleet, Ssh};
use perflab_load::{LoadSpec, Verdict};

use super::http::HttpArgs;
use crate::exit::{InvalidInput, FAILURES, GATE_FAILED};

/// Whether the flags ask for a distributed load (then [`run`] checks them all).
pub fn distributed(args: &HttpArgs) -> bool {
    !args.agents.is_empty()
        || args.engine != "ssh"
        || args.nodes.is_some()
        || args.partition.is_some()
        || args.perflab.is_some()
}

fn bad(m: String) -> anyhow::Error {
    anyhow::Error::new(InvalidInput(m))
}

/// Checks that the flags go with the engine, and that the load can be sent to another
/// host at all (not a local file, not a ramp), naming the flag.
fn check_engine(args: &HttpArgs, spec: &LoadSpec) -> anyhow::Result<()> {
    let slurm = args.engine == "slurm";
    if slurm && !args.agents.is_empty() {
        return Err(bad(
            "--engine slurm takes its agents from Slurm (one per node of --nodes): drop \
             --agents, or use --engine ssh with an inventory"
                .into(),
        ));
    }
    let slurm_only = [
        ("--nodes", args.nodes.is_some()),
        ("--partition", args.partition.is_some()),
        ("--perflab", args.perflab.is_some()),
    ];
    if let Some((flag, _)) = slurm_only.iter().find(|(_, set)| *set && !slurm) {
        return Err(bad(format!("{flag} needs --engine slurm")));
    }
    if !slurm && args.agents.is_empty() {
        return Err(bad("--engine ssh needs --agents HOST,...".into()));
    }
    let flag = if slurm { "--engine slurm" } else { "--agents" };
    spec.to_table()
        .map_err(|e| bad(format!("{flag}: {}", e.render(&super::http::flag))))?;
    Ok(())
}

/// The flag that sets a field of the agents' hosts.
fn flag(f: Field) -> &'static str {
    match f {
        Field::Agents => "--agents",
        Field::Inventory => "--hosts",
        Field::Weights => "--agent-weights",
        Field::Nodes => "--nodes",
        Field::Srun => "--engine slurm",
        Field::Perflab => "--perflab",
    }
}

/// The agents' hosts the flags asked for cannot be had: a usage error naming the flag
/// (exit 2), except this perflab's own path not found (exit 1).
fn hosts_error(e: AgentHostsError) -> anyhow::Error {
    match &e {
        AgentHostsError::NoInventory => bad(format!(
            "--agents needs an inventory: no {DEFAULT_INVENTORY} here; name one with --hosts FILE"
        )),
        AgentHostsError::WeightCount { weights, agents } => bad(format!(
            "--agent-weights has {weights} weights for {agents} agents: give one per agent, in the order of --agents"
        )),
        AgentHostsError::NoPerflab(_) => anyhow::anyhow!("{e} (give --perflab PATH)"),
        AgentHostsError::TooManyNodes { nodes, why } => bad(format!(
            "{}: {nodes}: {}",
            flag(e.field()),
            why.render(&share_flag)
        )),
        _ => bad(format!("{}: {e}", flag(e.field()))),
    }
}

/// This command's flag for a count the agents share (`connections` is `-c` here).
fn share_flag(field: &str) -> String {
    match field {
        "connections" => "-c".into(),
        other => super::http::flag(other),
    }
}

/// Runs `perflab http --agents` (or `--engine slurm`).
pub fn run(g: &crate::Global, args: &HttpArgs, spec: LoadSpec) -> anyhow::Result<ExitCode> {
    check_engine(args, &spec)?;
    let quiet = g.quiet;
    let progress = |m: &str| {
        if !quiet {
            eprintln!("{m}");
        }
    };
    let mut params = perflab_store::Params::new();
    let (outcome, stop) = if args.engine == "slurm" {
        let ask = SlurmAsk {
            nodes: args.nodes,
            partition: args.partition.clone(),
            perflab: args.perflab.clone(),
            immediate_s: Ssh::default().connect_timeout_s,
        };
        let srun =
            agent_hosts::srun(&ask, &spec, |k| std::env::var(k).ok()).map_err(hosts_error)?;
        let mut link = SlurmLink::new(srun);
        let (outcome, stop) = launch(&mut link, &spec, None, progress)?;
        let names: Vec<&str> = outcome.agents.iter().map(|a| a.name.as_str()).collect();
        params.insert("agents".into(), serde_json::json!(names));
        params.insert("engine".into(), serde_json::json!("slurm"));
        (outcome, stop)
    } else {
        let SshAgents { inventory, weights } = agent_hosts::ssh_agents(
            &args.agents,
            args.remote.hosts.as_deref(),
            &args.agent_weights,
        )
        .map_err(hosts_error)?;
        let scratch = std::env::temp_dir().join(format!("perflab-agents-{}", std::process::id()));
        std::fs::create_dir_all(&scratch)?;
        let fleet = Fleet::new(
            inventory,
            Ssh {
                accept_new_host_keys: args.remote.accept_new_host_keys,
                ..Default::default()
            },
            scratch.clone(),
        );
        let mut link = SshLink::new(&fleet, &args.agents);
        let done = launch(&mut link, &spec, weights.as_deref(), progress);
        let _ = std::fs::remove_dir_all(&scratch);
        params.insert("agents".into(), serde_json::json!(args.agents));
        done?
    };
    report(g, args, &spec, &outcome, &stop, params)
}

/// Runs the load over `link`; the outcome and the Ctrl-C flag.
fn launch(
    link: &mut dyn Link,
    spec: &LoadSpec,
    weights: Option<&[f64]>,
    progress: impl FnMut(&str),
) -> anyhow::Result<(Outcome, std::sync::Arc<std::sync::atomic::AtomicBool>)> {
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let plan = Plan {
        spec,
        weights,
        stop: stop.clone(),
    };
    let outcome = perflab_fleet::agents::run(link, &plan, progress);
    Ok((outcome, stop))
}

/// Prints (and records) the merged report; the exit code.
fn report(
    g: &crate::Global,
    args: &HttpArgs,
    spec: &LoadSpec,
    outcome: &Outcome,
    stop: &std::sync::atomic::AtomicBool,
    params: perflab_store::Params,
) -> anyhow::Result<ExitCode> {
    let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst);
    if let (Some(why), false) = (&outcome.launch_failed, interrupted) {
        anyhow::bail!("{why}");
    }
    for a in &outcome.agents {
        if let Err(why) = &a.result {
            eprintln!("error: agent {} lost — {why}", a.name);
        }
    }
    let Some(report) = outcome.merged.as_ref() else {
        if interrupted {
            eprintln!("interrupted before any agent reported");
            return Ok(ExitCode::from(130));
        }
        anyhow::bail!("no agent finished its segment (see above); nothing to report");
    };
    let mut params = params;
    params.insert("io".into(), serde_json::json!(engines(outcome)));
    let run_id = record_with(
        g,
        spec,
        report,
        params,
        vec![agents_trial::artifact(outcome)],
    )
    .context("cannot record the run into the store")?;
    if !g.quiet {
        eprintln!("recorded as run {run_id} in {}", g.store.display());
    }
    let verdicts: Vec<Verdict> = spec.thresholds.iter().map(|t| t.judge(report)).collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let mut v = serde_json::to_value(report)?;
        if !verdicts.is_empty() {
            v["thresholds"] = serde_json::to_value(&verdicts)?;
        }
        v["agents"] = serde_json::Value::Array(outcome.agents.iter().map(agent_json).collect());
        v["start_skew_ms"] = serde_json::json!(outcome.start_skew_ms);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", perflab_load::text::render(report))?;
        write_agents(&mut out, outcome)?;
        if !verdicts.is_empty() {
            writeln!(out, "\nThresholds:")?;
            for v in &verdicts {
                writeln!(out, "  {}", v.line())?;
            }
        }
    }
    out.flush()?;
    let lost = outcome.agents.iter().any(|a| a.result.is_err());
    if interrupted || report.interrupted {
        eprintln!(
            "interrupted: the report covers the {:.1} s that ran",
            report.duration_s
        );
        return Ok(ExitCode::from(130));
    }
    Ok(if verdicts.iter().any(|v| !v.passed) {
        ExitCode::from(GATE_FAILED)
    } else if lost || report.failed() > 0 {
        ExitCode::from(FAILURES)
    } else {
        ExitCode::SUCCESS
    })
}

/// The I/O engine the agents ran, as the run's `io` parameter: one name when they
/// agree, else each agent's (`a=uring,b=epoll`; the merged report warns too).
fn engines(outcome: &Outcome) -> String {
    let ran: Vec<(&str, &str)> = outcome
        .agents
        .iter()
        .filter_map(|a| {
            a.result
                .as_ref()
                .ok()
                .map(|r| (a.name.as_str(), r.io.name()))
        })
        .collect();
    match ran.first() {
        Some((_, io)) if ran.iter().all(|(_, i)| i == io) => io.to_string(),
        _ => ran
            .iter()
            .map(|(a, io)| format!("{a}={io}"))
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The per-agent table and the start skew, below the merged report.
fn write_agents(out: &mut impl Write, o: &Outcome) -> std::io::Result<()> {
    let mut t = Table::new();
    t.load_style(crate::format::STYLE);
    t.set_header([
        "agent",
        "requests",
        "req/s",
        "errors",
        "p99 ms",
        "client CPU",
        "",
    ]);
    for a in &o.agents {
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        match &a.result {
            Ok(r) => t.add_row(vec![
                Cell::new(&a.name),
                right(r.requests.to_string()),
                right(format!("{:.0}", r.rps)),
                right(r.failed().to_string()),
                right(format!("{:.3}", r.latency_ms.p99)),
                right(format!("{:.0} %", r.client_busy * 100.0)),
                Cell::new(if r.client_saturated { "saturated" } else { "" }),
            ]),
            Err(why) => t.add_row(vec![
                Cell::new(&a.name),
                right("-".into()),
                right("-".into()),
                right("-".into()),
                right("-".into()),
                right("-".into()),
                Cell::new(format!("lost: {why}")),
            ]),
        };
    }
    writeln!(out, "\nAgents:")?;
    for line in t.to_string().lines() {
        writeln!(out, "  {}", line.trim_end())?;
    }
    if let Some(s) = o.start_skew_ms {
        writeln!(out, "  start skew at the barrier: {s:.3} ms")?;
    }
    Ok(())
}

/// Records a distributed load's report into the store as a one-trial run (the metrics
/// and the whole histogram that an http workload stores; see
/// docs/experiment-file.md), with the agents' parameters and artifacts — outside the
/// runner: the agents are already a controller over hosts.
fn record_with(
    g: &crate::Global,
    spec: &LoadSpec,
    report: &perflab_load::Report,
    mut params: perflab_store::Params,
    artifacts: Vec<perflab_workloads::ArtifactData>,
) -> anyhow::Result<i64> {
    let store = perflab_store::Store::open(&g.store)?;
    params.insert("urls".into(), serde_json::json!(spec.urls));
    params.insert("connections".into(), serde_json::json!(spec.connections));
    params.insert("mode".into(), serde_json::json!(report.mode));
    if let Some(r) = spec.rate {
        params.insert("rate".into(), serde_json::json!(r));
    }
    if let Some(p) = &spec.unix_socket {
        params.insert("unix_socket".into(), serde_json::json!(p));
    }
    let failed = report.failed;
    let id = perflab_lab::record::one_shot(
        &store,
        perflab_lab::record::OneShot {
            kind: "http",
            name: format!("http {}", spec.urls.first().cloned().unwrap_or_default()),
            params,
            environment: serde_json::json!({ "args": std::env::args().skip(1).collect::<Vec<_>>() }),
            measurement: {
                let mut m = perflab_workloads::http::measurement(report);
                // The verdicts, so a failed threshold makes the run `gate_failed`.
                perflab_workloads::http::add_thresholds(&mut m, spec, report);
                m.artifacts.extend(artifacts);
                m
            },
            duration_s: report.duration_s,
            error: (failed.requests > 0).then(|| failed.summary()),
            interrupted: report.interrupted,
        },
    )?;
    Ok(id)
}
