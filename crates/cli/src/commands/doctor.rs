//! `perflab doctor`: what is misconfigured or going wrong on this host, each finding
//! with the numbers seen, why it matters and the exact fix.
//!
//! The rules live in `perflab_telemetry::doctor` (pure functions over two
//! observations, tested on fixtures); the watch and the measurement — the two
//! observations `--watch` apart, the accept queues polled in between, the diagnosis as
//! `doctor.json` and counts — are `kind = "doctor"` (`perflab_workloads::doctor`). This
//! file only turns flags into that spec, prints, and maps the worst severity to the
//! exit status. Every invocation is a one-trial run of that kind through the runner
//! (`perflab_lab::single`), recorded as any trial is; a store that cannot be opened
//! costs a warning — the doctor then runs without it, so the host still gets its
//! findings.
//!
//! `--on HOST,...` runs the same one trial on inventory hosts, one after another,
//! through `perflab worker` there — the path every trial on a host takes
//! (`perflab_lab::single`, `super::on_host` for the flags) — and prints their reports
//! here.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use perflab_fleet::Fleet;
use perflab_lab::single::{OneTrial, Shot};
use perflab_store::{Store, TrialStatus};
use perflab_telemetry::doctor::{self, parse_watch, Diagnosis, Finding, Severity};
use perflab_workloads::doctor::{self as doctor_kind, DoctorSpec};
use perflab_workloads::spec::{Builtin, KindSpec};
use perflab_workloads::{TrialContext, Workload, WorkloadError};
use serde_json::json;

use super::on_host::{self, OnHost};
use crate::exit::{InvalidInput, CRITICAL, ERROR, FAILURES, INTERRUPTED};

const DOCTOR_HELP: &str = "\
Examples:
  perflab doctor                              static checks, then 5 s of counters
  perflab doctor --pid 1234 --connections 10000 --watch 10s
  perflab doctor --outgoing 30000 --watch 0   static checks only
  perflab doctor --json > findings.json

Static checks: nofile-limit, file-max, nr-open, somaxconn, listen-backlog, syn-backlog,
netdev-backlog, port-range, ipfrag, swap, cpu-governor, close-wait (count).
Over --watch: listen-overflows (names the port whose accept queue was full),
softnet-drops, tcp-retransmits, reasm-fails, close-wait (held for the whole watch),
nfs-retrans, nfsd-threads, softirq-cpu, thundering-herd, disk-saturated, swapping.
Each rule, its threshold and its fix: docs/doctor.md#RULE-ID.

Reads the network namespace it runs in (`ip netns exec NAME perflab doctor`) and
what a container shows; what it cannot read is listed under \"not available\".
Naming the owner of other users' sockets needs root.

--json prints one object:
  {\"schema_version\": 1, \"watch_s\", \"findings\": [{\"id\", \"severity\"
   (info|warn|critical), \"evidence\", \"why\", \"fix\", \"doc\", \"pid\"?, \"program\"?,
   \"port\"?}], \"not_available\": [{\"rule\", \"reason\"}]}
  findings are sorted most severe first.

On other hosts: `perflab doctor --on b` (or --on a,b; --hosts FILE, default hosts.toml)
runs this doctor on each inventory host in turn over ssh — perflab copied there and the
trial run by `perflab worker`, as for `perflab run --on` — and prints each host's
report here, headed by `host NAME (ADDRESS)`; --json prints the host's object with
\"host\": NAME added (an array for several hosts; a host that could not run it is
{\"host\", \"error\"}). --pid is a pid on that host. The exit status is the host's (of
several: 130, then 1, 2, 5, 4, 0, the first that any host had). A host that is not in
the inventory exits 2; one that cannot be reached or has no usable perflab exits 1,
naming it and why. Each host's diagnosis is recorded here, in this store, as a run of
its own whose trial has the parameter host = NAME.

Every invocation is recorded in the store (--store, PERFLAB_STORE) as a one-trial run
of kind \"doctor\": metrics findings_critical, findings_warn, findings_info and the
--json object as artifact doctor.json, shown by `perflab show` and `perflab report`.
When the store cannot be written the findings are still printed, with a warning.

Exit codes: 0 nothing or only info, 4 warnings, 5 something critical,
            1 could not run (/proc unreadable; with --on: host unreachable, no
              perflab there), 2 bad flag or no such pid (or host),
            130 interrupted.";

/// What is misconfigured or going wrong: sysctls, limits and counters, each finding
/// with its evidence, why it matters and the exact fix.
#[derive(Debug, clap::Args)]
#[command(after_help = DOCTOR_HELP)]
pub struct DoctorArgs {
    /// The process to examine: its RLIMIT_NOFILE, open files and listeners.
    #[arg(short = 'p', long, value_name = "PID")]
    pub pid: Option<i32>,

    /// Concurrent connections the service must take (checks file limits and queues).
    #[arg(short = 'c', long, value_name = "N")]
    pub connections: Option<u64>,

    /// Concurrent outgoing connections to one destination (checks ip_local_port_range).
    #[arg(long, value_name = "N")]
    pub outgoing: Option<u64>,

    /// How long to watch the counters: 5s, 500ms, 1m; 0 = static checks only.
    #[arg(short = 'w', long, value_name = "DURATION", default_value = "5s")]
    pub watch: String,

    /// One JSON object instead of the report.
    #[arg(long)]
    pub json: bool,

    /// `--on HOST[,HOST...]`: the doctor runs on these inventory hosts instead.
    #[command(flatten)]
    pub remote: OnHost,
}

pub fn run(g: &crate::Global, a: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let watch = parse_watch(&a.watch).map_err(|e| InvalidInput(format!("--watch: {e}")))?;
    a.remote.check(None)?;
    match &a.remote.on {
        None => here(g, a, watch),
        Some(list) => on_hosts(g, a, watch, list),
    }
}

/// `perflab doctor` on this host: one trial of `kind = "doctor"` through the runner,
/// its diagnosis printed, recorded as run N. A store that cannot be opened costs only a
/// warning: the doctor then runs without it and the findings are printed all the same.
fn here(g: &crate::Global, a: &DoctorArgs, watch: Duration) -> anyhow::Result<ExitCode> {
    if let Some(pid) = a.pid {
        if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(InvalidInput(format!("--pid {pid}: no such process")).into());
        }
    }
    std::fs::metadata("/proc/stat").context("cannot read /proc/stat: is /proc mounted?")?;
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    if !watch.is_zero() && !g.quiet && std::io::stderr().is_terminal() {
        eprintln!(
            "watching the counters for {} (Ctrl-C stops)…",
            humanize(watch)
        );
    }
    let spec = a.spec(None);
    let store = match Store::open(&g.store) {
        Ok(store) => store,
        Err(e) => {
            let e = anyhow::Error::from(e)
                .context(format!("cannot open the store {}", g.store.display()));
            return unrecorded(a, &spec, stop, &e);
        }
    };
    let one = a.one_trial(&spec, None);
    let exp = one.experiment()?;
    let shot = on_host::run_one(&one, &exp, &store, stop, None, &Builtin)
        .context("cannot run the doctor")?;
    let m = match (shot.status, shot.measurement) {
        (TrialStatus::Interrupted, _) => return Ok(ExitCode::from(INTERRUPTED)),
        (TrialStatus::Ok, Some(m)) => m,
        (_, _) => {
            let e = shot.error.unwrap_or_else(|| "no diagnosis".into());
            return Err(anyhow::anyhow!(e).context("the doctor could not run"));
        }
    };
    let d = doctor_kind::diagnosis_in(&m).context("the doctor made no diagnosis")?;
    print(a, &d)?;
    if !g.quiet {
        eprintln!(
            "recorded as run {} in {}",
            shot.outcome.run_id,
            g.store.display()
        );
    }
    Ok(ExitCode::from(exit_code(&d)))
}

/// The doctor without a store: run, printed, nothing recorded (a warning says so).
fn unrecorded(
    a: &DoctorArgs,
    spec: &DoctorSpec,
    stop: Arc<AtomicBool>,
    why: &anyhow::Error,
) -> anyhow::Result<ExitCode> {
    let ctx = TrialContext {
        cpus: None,
        timeout: None,
        interrupted: stop,
        run_dir: std::env::temp_dir(),
        attach: None,
        jit: false,
    };
    let m = match spec.run(&ctx) {
        Ok(m) => m,
        Err(WorkloadError::Interrupted) => return Ok(ExitCode::from(INTERRUPTED)),
        Err(e) => return Err(e.into()),
    };
    let d = doctor_kind::diagnosis_in(&m).context("the doctor made no diagnosis")?;
    print(a, &d)?;
    eprintln!(
        "warning: nothing was recorded: {}",
        crate::exit::describe(why)
    );
    eprintln!("hint: --store PATH or PERFLAB_STORE names a store this user can write");
    Ok(ExitCode::from(exit_code(&d)))
}

impl DoctorArgs {
    /// The doctor's workload spec: the flags as `kind = "doctor"` options, on `host`.
    fn spec(&self, host: Option<&str>) -> DoctorSpec {
        DoctorSpec {
            watch: self.watch.clone(),
            pid: self.pid,
            connections: self.connections,
            outgoing: self.outgoing,
            host: host.map(str::to_string),
        }
    }

    /// The one trial of an invocation (on `host`): the flags as the config's
    /// parameters and in the run's name, the arguments in its environment (see
    /// docs/doctor.md#recorded-runs).
    fn one_trial(&self, spec: &DoctorSpec, host: Option<&str>) -> OneTrial {
        let mut params = perflab_store::Params::new();
        params.insert("watch".into(), json!(self.watch));
        let mut name = format!("doctor --watch {}", self.watch);
        if let Some(h) = host {
            name.push_str(&format!(" --on {h}"));
        }
        for (flag, v) in [
            ("pid", self.pid.map(i64::from)),
            ("connections", self.connections.map(|n| n as i64)),
            ("outgoing", self.outgoing.map(|n| n as i64)),
        ] {
            if let Some(v) = v {
                params.insert(flag.into(), json!(v));
                name.push_str(&format!(" --{flag} {v}"));
            }
        }
        OneTrial {
            kind: "doctor".into(),
            name,
            workload: KindSpec::Doctor(spec.clone()),
            params,
            environment: json!({ "args": std::env::args().skip(1).collect::<Vec<_>>() }),
            on: host.map(str::to_string),
        }
    }
}

/// One host of `--on`: its one trial, the experiment of it and the fleet it runs
/// through.
struct OnOne {
    name: String,
    address: String,
    one: OneTrial,
    exp: perflab_lab::Experiment,
    fleet: Option<Fleet>,
}

/// What came of one host's trial: its `doctor.json` (with `host`), else why not.
enum Came {
    Diagnosis(Box<Diagnosis>, serde_json::Value),
    Failed(String),
    Interrupted,
}

/// `perflab doctor --on HOST,...`: the doctor as a one-trial run on each host in turn,
/// through `perflab worker` there (the path `perflab run --on` takes; a `--pid` is a
/// pid there). Every host is placed before any is contacted (a host not in the
/// inventory exits 2). Each host's report is printed here in the order of `--on`,
/// headed by its name and address — `--json`: its `doctor.json`, which names the host,
/// an array for several hosts, `{"host", "error"}` for a host where it could not run —
/// and each is recorded here as a run of its own whose trial has the parameter
/// `host`. The exit status is the host's own (the weightiest of several:
/// [`on_host::weightiest`]).
fn on_hosts(
    g: &crate::Global,
    a: &DoctorArgs,
    watch: Duration,
    list: &str,
) -> anyhow::Result<ExitCode> {
    if let Some(pid) = a.pid.filter(|p| *p <= 0) {
        return Err(InvalidInput(format!("--pid {pid}: no such process")).into());
    }
    let hosts = placed(a, list)?;
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    if !watch.is_zero() && !g.quiet && std::io::stderr().is_terminal() {
        eprintln!(
            "watching the counters on {list} for {} (Ctrl-C stops)…",
            humanize(watch)
        );
    }
    let store = Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let mut came = Vec::new();
    for h in &hosts {
        if stop.load(Ordering::SeqCst) {
            came.push(Came::Interrupted);
            continue;
        }
        let shot = on_host::run_one(
            &h.one,
            &h.exp,
            &store,
            stop.clone(),
            h.fleet.as_ref(),
            &Builtin,
        );
        let shot = shot.with_context(|| format!("cannot run the doctor on {}", h.name))?;
        if !g.quiet {
            eprintln!(
                "recorded as run {} in {} (host {})",
                shot.outcome.run_id,
                g.store.display(),
                h.name
            );
        }
        came.push(came_of(shot));
    }
    show_hosts(a, &hosts, &came)
}

/// The hosts of `--on a,b`, each placed: its one trial's experiment and fleet.
fn placed(a: &DoctorArgs, list: &str) -> anyhow::Result<Vec<OnOne>> {
    let names: Vec<&str> = list.split(',').map(str::trim).collect();
    let mut hosts = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(InvalidInput("--on: an empty host name".into()).into());
        }
        if names[..i].contains(name) {
            return Err(InvalidInput(format!("--on: {name} is named twice")).into());
        }
        let one = a.one_trial(&a.spec(Some(name)), Some(name));
        let exp = one.experiment()?;
        let remote = OnHost {
            on: Some(name.to_string()),
            ..a.remote.clone()
        };
        let fleet = remote
            .fleet(&exp)
            .map_err(|e| match e.downcast::<InvalidInput>() {
                Ok(InvalidInput(m)) => InvalidInput(format!("--on {name}: {m}")).into(),
                Err(e) => e,
            })?;
        let address = fleet
            .as_ref()
            .and_then(|f| f.inventory.get(name).ok())
            .map_or_else(|| name.to_string(), |h| h.address().to_string());
        hosts.push(OnOne {
            name: name.to_string(),
            address,
            one,
            exp,
            fleet,
        });
    }
    Ok(hosts)
}

fn came_of(shot: Shot) -> Came {
    let found = shot.measurement.as_ref().and_then(|m| {
        let d = doctor_kind::diagnosis_in(m)?;
        Some((d, doctor_kind::document_in(m)?))
    });
    match (shot.status, found) {
        (TrialStatus::Interrupted, _) => Came::Interrupted,
        (TrialStatus::Ok, Some((d, doc))) => Came::Diagnosis(Box::new(d), doc),
        (_, _) => Came::Failed(shot.error.unwrap_or_else(|| "no diagnosis".into())),
    }
}

/// Prints each host's report (or `--json` object) and error, and the exit status.
fn show_hosts(a: &DoctorArgs, hosts: &[OnOne], came: &[Came]) -> anyhow::Result<ExitCode> {
    let mut codes = Vec::new();
    let mut all = Vec::new();
    let mut text = Vec::new();
    for (h, c) in hosts.iter().zip(came) {
        match c {
            Came::Diagnosis(d, doc) => {
                codes.push(exit_code(d));
                all.push(doc.clone());
                text.push(format!(
                    "host {} ({})\n{}",
                    h.name,
                    h.address,
                    report(d, colour())
                ));
            }
            Came::Failed(e) => {
                eprintln!("error: {e}");
                codes.push(ERROR);
                all.push(json!({"host": h.name, "error": e}));
            }
            Came::Interrupted => codes.push(INTERRUPTED),
        }
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = if hosts.len() == 1 {
            all.pop()
        } else {
            Some(serde_json::Value::Array(all))
        };
        if let Some(v) = v {
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
    } else {
        write!(out, "{}", text.join("\n"))?;
    }
    out.flush()?;
    Ok(ExitCode::from(on_host::weightiest(&codes)))
}

/// The report or `--json` object of one diagnosis, on stdout.
fn print(a: &DoctorArgs, d: &Diagnosis) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = doctor_kind::to_json(d);
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        write!(out, "{}", report(d, colour()))?;
    }
    out.flush()?;
    Ok(())
}

/// Colour on a terminal, unless NO_COLOR is set.
fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The worst finding as the exit status: 5 critical, 4 warnings, else 0.
fn exit_code(d: &Diagnosis) -> u8 {
    match d.worst() {
        Some(Severity::Critical) => CRITICAL,
        Some(Severity::Warn) => FAILURES,
        _ => 0,
    }
}

fn humanize(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1000.0)
    }
}

/// Terminal width for wrapping (the report stays readable when pasted too).
const WIDTH: usize = 100;

/// Words of `text` wrapped to `width`, every line after the first indented by `indent`.
fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut col = indent;
    for (i, w) in text.split_whitespace().enumerate() {
        if i > 0 {
            if col + 1 + w.chars().count() > width {
                out.push('\n');
                out.push_str(&" ".repeat(indent));
                col = indent;
            } else {
                out.push(' ');
                col += 1;
            }
        }
        out.push_str(w);
        col += w.chars().count();
    }
    out
}

fn label(s: Severity, colour: bool) -> String {
    let (text, code) = match s {
        Severity::Critical => ("CRITICAL", "1;31"),
        Severity::Warn => ("WARN", "33"),
        Severity::Info => ("INFO", "36"),
    };
    if colour {
        format!("\x1b[{code}m{text:<8}\x1b[0m")
    } else {
        format!("{text:<8}")
    }
}

fn finding(f: &Finding, colour: bool) -> String {
    let mut head = format!("{} {}", label(f.severity, colour), f.id);
    let mut about = Vec::new();
    if let Some(p) = f.port {
        about.push(format!("port {p}"));
    }
    match (f.pid, &f.program) {
        (Some(pid), Some(prog)) => about.push(format!("pid {pid} ({prog})")),
        (Some(pid), None) => about.push(format!("pid {pid}")),
        _ => {}
    }
    if !about.is_empty() {
        head.push_str(&format!(" — {}", about.join(", ")));
    }
    let field = |name: &str, text: &str| format!("  {name:<5} {}\n", wrap(text, 8, WIDTH));
    // The fix stays on one line: it is meant to be copied and pasted.
    format!(
        "{head}\n{}{}  fix   {}\n{}",
        field("seen", &f.evidence),
        field("why", &f.why),
        f.fix,
        field("docs", &f.doc)
    )
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The human report.
fn report(d: &Diagnosis, colour: bool) -> String {
    let checks = doctor::RULES
        .iter()
        .filter(|r| d.watch_s > 0.0 || r.kind == doctor::RuleKind::Static)
        .count();
    let scope = if d.watch_s > 0.0 {
        format!("{checks} checks, counters over {:.1} s", d.watch_s)
    } else {
        format!("{checks} static checks")
    };
    let mut s = if d.findings.is_empty() {
        format!("perflab doctor: {scope}; nothing found\n")
    } else {
        format!(
            "perflab doctor: {scope}; {}, {}, {}\n",
            plural(d.count(Severity::Critical), "critical", "critical"),
            plural(d.count(Severity::Warn), "warning", "warnings"),
            plural(d.count(Severity::Info), "note", "notes"),
        )
    };
    for f in &d.findings {
        s.push('\n');
        s.push_str(&finding(f, colour));
    }
    if !d.not_available.is_empty() {
        s.push_str("\nnot available here:\n");
        let w = d
            .not_available
            .iter()
            .map(|n| n.rule.len())
            .max()
            .unwrap_or(0);
        for n in &d.not_available {
            s.push_str(&format!(
                "  {:<w$}  {}\n",
                n.rule,
                wrap(&n.reason, w + 4, WIDTH)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_with_indent() {
        let w = wrap("aaa bbb ccc ddd", 2, 9);
        assert_eq!(w, "aaa bbb\n  ccc ddd");
    }

    #[test]
    fn report_lists_findings_and_what_is_missing() {
        let d = Diagnosis {
            watch_s: 2.0,
            findings: vec![{
                let mut f = Finding::new("close-wait", Severity::Warn, "seen", "why", "fix");
                f.pid = Some(42);
                f.program = Some("leaky".into());
                f.port = Some(8080);
                f
            }],
            not_available: vec![doctor::NotAvailable {
                rule: "cpu-governor",
                reason: "no cpufreq".into(),
            }],
        };
        let r = report(&d, false);
        assert!(r.contains("0 critical, 1 warning, 0 notes"), "{r}");
        assert!(
            r.contains("WARN     close-wait — port 8080, pid 42 (leaky)"),
            "{r}"
        );
        assert!(r.contains("docs  docs/doctor.md#close-wait"), "{r}");
        assert!(r.contains("cpu-governor  no cpufreq"), "{r}");
    }
}
