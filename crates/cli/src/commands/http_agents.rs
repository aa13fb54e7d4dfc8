//! `perflab http URL --agents a,b` (or `--engine slurm --nodes K`): one load test driven
//! from several hosts.
//!
//! The work is `perflab_fleet::agents` (split, barrier, merge, bounded waits) over one
//! of its links — the fleet's ssh transport and deploy, or one `srun`
//! (`perflab_fleet::slurm`); this file checks the flags (every bad one exits 2
//! before any host is contacted), prints the merged report — the same table and JSON
//! contract as a one-host run — with a per-agent table (or the `agents` array and
//! `start_skew_ms` in `--json`), records the run with the merged histogram, and maps
//! the outcome to exit codes: a lost agent is 4, as failed requests are; Ctrl-C is 130.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table};
use perflab_fleet::agents::{Link, Outcome, Plan};
use perflab_fleet::agents_trial::{self, agent_json};
use perflab_fleet::slurm::{SlurmLink, Srun};
use perflab_fleet::ssh_agents::SshLink;
use perflab_fleet::{Fleet, Inventory, Ssh};
use perflab_load::{LoadSpec, Verdict};

use super::http::{record_with, HttpArgs};
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
    spec.to_table().map_err(|e| {
        bad(format!(
            "{flag}: {}",
            crate::exit::as_flags(&e.to_string(), super::http::SHORT)
        ))
    })?;
    Ok(())
}

/// Checks the agent flags: the inventory, each name in it (once), the weights.
fn check(args: &HttpArgs) -> anyhow::Result<(Inventory, Option<Vec<f64>>)> {
    let path = args
        .remote
        .hosts
        .clone()
        .unwrap_or_else(|| PathBuf::from("hosts.toml"));
    if args.remote.hosts.is_none() && !path.exists() {
        return Err(bad(
            "--agents needs an inventory: no hosts.toml here; name one with --hosts FILE".into(),
        ));
    }
    let inventory =
        Inventory::load(&path).map_err(|e| bad(format!("--hosts {}: {e}", path.display())))?;
    for (i, a) in args.agents.iter().enumerate() {
        if a.trim().is_empty() {
            return Err(bad("--agents: an empty host name".into()));
        }
        inventory
            .get(a)
            .map_err(|e| bad(format!("--agents {a}: {e}")))?;
        if args.agents[..i].contains(a) {
            return Err(bad(format!("--agents: {a} is named twice")));
        }
    }
    if args.agent_weights.is_empty() {
        return Ok((inventory, None));
    }
    if args.agent_weights.len() != args.agents.len() {
        return Err(bad(format!(
            "--agent-weights has {} weights for {} agents: give one per agent, in the order of --agents",
            args.agent_weights.len(),
            args.agents.len()
        )));
    }
    let weights = args
        .agent_weights
        .iter()
        .map(|w| {
            w.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| bad(format!("--agent-weights `{w}`: expected a positive number")))
        })
        .collect::<anyhow::Result<Vec<f64>>>()?;
    Ok((inventory, Some(weights)))
}

/// How srun is asked for the agents, from the flags; srun missing or a bad `--nodes`
/// is a usage error.
fn srun_from(args: &HttpArgs, spec: &LoadSpec) -> anyhow::Result<Srun> {
    let program =
        perflab_fleet::slurm::find_srun().map_err(|e| bad(format!("--engine slurm: {e}")))?;
    let in_allocation = std::env::var("SLURM_JOB_NUM_NODES")
        .ok()
        .and_then(|n| n.trim().parse::<u32>().ok());
    let nodes = args.nodes.or(in_allocation).unwrap_or(2);
    if nodes == 0 {
        return Err(bad("--nodes 0: give at least one node".into()));
    }
    // -c / -n too small to give every node a share: refused before srun runs.
    perflab_fleet::agents::segments(spec, &vec![1.0; nodes as usize])
        .map_err(|e| bad(format!("--nodes {nodes}: {e}")))?;
    let perflab = match &args.perflab {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("cannot find this perflab's path for the Slurm tasks (give --perflab PATH)")?,
    };
    Ok(Srun {
        program,
        nodes,
        partition: args.partition.clone(),
        perflab,
        immediate_s: Ssh::default().connect_timeout_s,
    })
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
        let mut link = SlurmLink::new(srun_from(args, &spec)?);
        let (outcome, stop) = launch(&mut link, &spec, None, progress)?;
        let names: Vec<&str> = outcome.agents.iter().map(|a| a.name.as_str()).collect();
        params.insert("agents".into(), serde_json::json!(names));
        params.insert("engine".into(), serde_json::json!("slurm"));
        (outcome, stop)
    } else {
        let (inventory, weights) = check(args)?;
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
