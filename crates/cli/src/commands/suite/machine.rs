//! `perflab suite machine`: every item of the suite this machine can run, as one
//! experiment over `item` run by the runner (interleaved repetitions, the noise
//! pre-check, Ctrl-C keeps what finished, `perflab run --resume RUN` finishes it),
//! stored as one run with the host's facts; then the one-page summary.

use std::process::ExitCode;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use perflab_analysis::suite::{self, Row};
use perflab_lab::experiment::{Draft, Order, Repetitions};
use perflab_workloads::cpuset::CpuSet;
use perflab_workloads::spec::Kind;
use perflab_workloads::suite::{catalogue, Item, SuiteSpec, GROUPS};

use crate::commands::oneliner;
use crate::exit::{self, InvalidInput};
use crate::format::{self, STYLE};
use crate::Global;

/// Run the machine suite: memory bandwidth by block size, TCP throughput and
/// request/response on loopback, gzip/zstd/lz4, RSA/ECDSA/Ed25519/SHA-256/AEAD,
/// SciMark in C and Java, and HTTP against perflab serve (and nginx when installed).
///
/// Items whose program is missing (cc, java, nginx) are skipped and named.
///
/// Examples:
///   perflab suite machine --quick          # shorter trials, fewer block sizes
///   perflab suite machine --only mem,net   # groups or item names
///   perflab suite machine --cpus 0         # pin everything: emulate a smaller machine
///   perflab suite machine --list           # the items, without running them
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct MachineArgs {
    /// The quick suite: shorter trials, the memory curve at 4K, 1M and 256M only.
    #[arg(long)]
    quick: bool,

    /// Groups (mem, net, compress, crypto, scimark, http) or items, comma-separated.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,

    /// Pin every workload (and the servers it starts) to these CPUs: `0`, `0-3,6`.
    #[arg(long)]
    cpus: Option<String>,

    /// Repetitions per item, interleaved [default: 5, quick 3].
    #[arg(long, short = 'r')]
    runs: Option<u32>,

    /// List the items (and which would be skipped here), run nothing.
    #[arg(long)]
    list: bool,

    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Items this machine cannot run: (item, why).
type Skipped = Vec<(String, String)>;

/// The items `--only` picks, those this machine can run, and those it cannot (why).
fn pick(a: &MachineArgs) -> Result<(Vec<Item>, Skipped), InvalidInput> {
    let all = catalogue(a.quick);
    for o in &a.only {
        if !GROUPS.contains(&o.as_str()) && !all.iter().any(|i| &i.name == o) {
            return Err(InvalidInput(format!(
                "--only {o:?}: expected groups ({}) or items of the {} suite (see --list)",
                GROUPS.join(", "),
                if a.quick { "quick" } else { "full" }
            )));
        }
    }
    let wanted =
        |i: &Item| a.only.is_empty() || a.only.iter().any(|o| o == i.group || *o == i.name);
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for i in all.into_iter().filter(wanted) {
        match i.needs() {
            Some(p) if perflab_lab::env::which(p).is_none() && !nginx_in_sbin(p) => {
                skipped.push((i.name, format!("{p} not found")))
            }
            _ => run.push(i),
        }
    }
    Ok((run, skipped))
}

/// Debian installs nginx in /usr/sbin, which is not on every user's PATH.
fn nginx_in_sbin(p: &str) -> bool {
    p == "nginx" && std::path::Path::new("/usr/sbin/nginx").is_file()
}

/// The experiment `perflab suite machine` runs: one config per item.
pub fn experiment(a: &MachineArgs, items: &[Item]) -> Result<Draft, InvalidInput> {
    let reps = oneliner::runs(a.runs.unwrap_or(if a.quick { 3 } else { 5 }))?;
    let cpus = match &a.cpus {
        Some(c) => Some(
            CpuSet::parse(c)
                .map_err(|e| InvalidInput(format!("--cpus {c:?}: {e}")))?
                .to_string(),
        ),
        None => None,
    };
    let Some(first) = items.first() else {
        return Err(InvalidInput(
            "no item of the suite can run here (see --list)".into(),
        ));
    };
    let spec = SuiteSpec {
        item: first.name.clone(),
        quick: a.quick,
    };
    let name = if a.quick {
        "machine-suite-quick"
    } else {
        "machine-suite"
    };
    let draft = Draft::new(name, Kind::Suite, &spec)
        .and_then(|d| d.vary("item", items.iter().map(|i| i.name.clone()).collect()))
        .map_err(oneliner::usage)?;
    Ok(Draft {
        repetitions: Some(Repetitions::Fixed(reps)),
        warmup: Some(0),
        order: Some(Order::Interleaved),
        timeout: Some("300s".into()),
        cpus,
        ..draft
    })
}

pub fn run(g: &Global, a: &MachineArgs) -> anyhow::Result<ExitCode> {
    let (items, skipped) = pick(a)?;
    if a.list {
        for i in &items {
            println!("{:<9} {}", i.group, i.name);
        }
        for (name, why) in &skipped {
            println!("{:<9} {name}  (skipped: {why})", "");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if items.is_empty() {
        return Err(InvalidInput("no item of the suite can run here (see --list)".into()).into());
    }
    let draft = experiment(a, &items)?;
    for (name, why) in &skipped {
        eprintln!("skipped {name}: {why}");
    }
    let (store, outcome) = oneliner::measure(g, &draft, Some("--cpus 1"))?;
    let export = store.export_run(outcome.run_id)?;
    let rows = suite::rows(&export, 0.95);
    if a.json {
        let v = serde_json::json!({
            "run": outcome.run_id,
            "quick": a.quick,
            "cpus": a.cpus,
            "host": export.run.environment.get("host"),
            "skipped": skipped.iter().map(|(n, w)| serde_json::json!({"item": n, "why": w})).collect::<Vec<_>>(),
            "items": rows.iter().map(row_json).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let host = &export.host;
        println!(
            "run {} · machine suite{} · {} · {} · {} CPUs{} · store {}",
            outcome.run_id,
            if a.quick { " (quick)" } else { "" },
            host.hostname,
            host.cpu_model.as_deref().unwrap_or("unknown CPU"),
            host.cores.unwrap_or(0),
            a.cpus
                .as_ref()
                .map(|c| format!(" (pinned to {c})"))
                .unwrap_or_default(),
            g.store.display()
        );
        println!("{}", table(&rows));
        let curve = suite::mem_curve(&rows);
        if !curve.is_empty() {
            println!("\nmemory, one thread (GB/s by block size):");
            println!("{}", curve_table(&curve));
        }
        println!("\n{}", closing_hint(outcome.run_id));
    }
    Ok(ExitCode::from(exit::for_outcome(&outcome, "trials", "run")))
}

/// What to do with the run next, as commands that work as printed (`RUN` stands for
/// the other machine's run id).
fn closing_hint(run: i64) -> String {
    let [export, import, compare, report] = hint_commands(run);
    format!(
        "Compare with another machine: `{export}`, `{import}` there, then `{compare}`; `{report}` draws it."
    )
}

/// The commands [`closing_hint`] names.
fn hint_commands(run: i64) -> [String; 4] {
    [
        format!("perflab export {run} > this.json"),
        "perflab import this.json".to_string(),
        format!("perflab suite compare {run} RUN"),
        format!("perflab report {run} --html suite-{run}.html"),
    ]
}

fn row_json(r: &Row) -> serde_json::Value {
    serde_json::json!({
        "item": r.item,
        "group": r.group,
        "unit": r.unit,
        "n": r.score.n,
        "mean": r.score.mean,
        "ci_low": r.score.mean - r.score.half,
        "ci_high": r.score.mean + r.score.half,
        "cv": r.cv,
    })
}

fn table(rows: &[Row]) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["group", "item", "score ± 95% CI", "n", "CV"]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let mut last = "";
    for r in rows {
        t.add_row(vec![
            Cell::new(if r.group != last {
                r.group.as_str()
            } else {
                ""
            }),
            Cell::new(
                r.item
                    .strip_prefix(&format!("{}.", r.group))
                    .unwrap_or(&r.item),
            ),
            right(format::mean_pm(r.score.mean, r.score.half, &r.unit)),
            right(r.score.n.to_string()),
            right(if r.cv.is_finite() {
                format!("{:.1}%", r.cv * 100.0)
            } else {
                "—".into()
            }),
        ]);
        last = &r.group;
    }
    t
}

fn curve_table(curves: &[suite::Curve]) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE);
    let mut blocks: Vec<u64> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    let mut header = vec!["op".to_string()];
    header.extend(blocks.iter().map(|b| suite::block_label(*b)));
    t.set_header(header);
    for c in curves {
        let mut row = vec![Cell::new(&c.op)];
        for b in &blocks {
            let v = c
                .points
                .iter()
                .find(|p| p.0 == *b)
                .map_or("—".to_string(), |p| format::sig(p.1));
            row.push(Cell::new(v).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use crate::commands::oneliner::round_trip;

    #[test]
    fn the_experiment_reads_back_as_built() {
        let items = perflab_workloads::suite::catalogue(true);
        let a = round_trip::args(&["--quick", "--cpus", "0", "--runs", "2"]);
        let e = round_trip::check(&super::experiment(&a, &items[..3]).unwrap());
        assert_eq!(e.config_count(), 3);
        assert!(e.timeout.is_some());
        round_trip::check(&super::experiment(&round_trip::args(&[]), &items).unwrap());
    }

    #[test]
    fn the_closing_hint_names_commands_that_parse() {
        for hint in super::hint_commands(23) {
            // The shell's redirection is the shell's; RUN is the other machine's run id.
            let line = hint.split(" > ").next().unwrap().replace("RUN", "24");
            let argv: Vec<&str> = line.split_whitespace().collect();
            if let Err(e) = <crate::Cli as clap::Parser>::try_parse_from(&argv) {
                panic!("{hint}: {e}");
            }
            assert!(super::closing_hint(23).contains(&hint));
        }
    }
}
