//! `perflab http URL --agents a,b`: one load test driven from several inventory hosts.
//!
//! The work is `perflab_fleet::agents` (split, barrier, merge, bounded waits) over the
//! fleet's ssh transport and deploy; this file checks the flags (every bad one exits 2
//! before any host is contacted), prints the merged report — the same table and JSON
//! contract as a one-host run — with a per-agent table (or the `agents` array and
//! `start_skew_ms` in `--json`), records the run with the merged histogram, and maps
//! the outcome to exit codes: a lost agent is 4, as failed requests are; Ctrl-C is 130.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table};
use perflab_fleet::agents::{AgentOutcome, Outcome, Plan};
use perflab_fleet::{Fleet, Inventory, Ssh};
use perflab_load::{LoadSpec, Verdict};

use super::http::{record_with, HttpArgs};
use crate::exit::{InvalidInput, FAILURES, GATE_FAILED};

/// Checks the agent flags: the inventory, each name in it (once), the weights.
fn check(args: &HttpArgs, spec: &LoadSpec) -> anyhow::Result<(Inventory, Option<Vec<f64>>)> {
    let bad = |m: String| anyhow::Error::new(InvalidInput(m));
    // What an agent cannot be sent (a local file, a ramp) is refused here, naming it.
    spec.to_table().map_err(|e| {
        bad(format!(
            "--agents: {}",
            crate::exit::as_flags(&e.to_string(), super::http::SHORT)
        ))
    })?;
    let path = args
        .hosts
        .clone()
        .unwrap_or_else(|| PathBuf::from("hosts.toml"));
    if args.hosts.is_none() && !path.exists() {
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

/// Runs `perflab http --agents`.
pub fn run(g: &crate::Global, args: &HttpArgs, spec: LoadSpec) -> anyhow::Result<ExitCode> {
    let (inventory, weights) = check(args, &spec)?;
    let scratch = std::env::temp_dir().join(format!("perflab-agents-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let fleet = Fleet::new(
        inventory,
        Ssh {
            accept_new_host_keys: args.accept_new_host_keys,
            ..Default::default()
        },
        scratch.clone(),
    );
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let plan = Plan {
        spec: &spec,
        agents: &args.agents,
        weights: weights.as_deref(),
        stop: stop.clone(),
    };
    let quiet = g.quiet;
    let outcome = perflab_fleet::agents::run(&fleet, &plan, |m| {
        if !quiet {
            eprintln!("{m}");
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst);
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
    let mut params = perflab_store::Params::new();
    params.insert("agents".into(), serde_json::json!(args.agents));
    let run_id =
        record_with(g, &spec, report, params).context("cannot record the run into the store")?;
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
        write_agents(&mut out, &outcome)?;
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

/// One entry of the `agents` array.
fn agent_json(a: &AgentOutcome) -> serde_json::Value {
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
