//! `perflab doctor`: what is misconfigured or going wrong on this host, each finding
//! with the numbers seen, why it matters and the exact fix.
//!
//! The rules live in `perflab_telemetry::doctor` (pure functions over two
//! observations, tested on fixtures); the watch and the measurement — the two
//! observations `--watch` apart, the accept queues polled in between, the diagnosis as
//! `doctor.json` and counts — are `kind = "doctor"` (`perflab_workloads::doctor`). This
//! file only turns flags into that spec, prints, and maps the worst severity to the
//! exit status. Every invocation is then recorded into the store as a one-trial run,
//! after the findings are printed, so a host whose store cannot be written still gets
//! them.
//!
//! `--on HOST,...` runs this same doctor on inventory hosts instead and prints their
//! reports here (`perflab_fleet::relay` does the running; `super::on_host` the flags).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use perflab_fleet::relay::{with_host, Ended, Stream};
use perflab_telemetry::doctor::{self, parse_watch, Diagnosis, Finding, Severity};
use perflab_workloads::doctor::{self as doctor_kind, DoctorSpec};
use perflab_workloads::{Measurement, Workload, WorkloadError};
use serde_json::json;

use super::on_host::{self, OnArgs};
use crate::exit::{InvalidInput, CRITICAL, FAILURES, INTERRUPTED};

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
runs this doctor on each inventory host over ssh — perflab copied there as for
`perflab run --on` — and prints each host's report here, headed by `host NAME (ADDRESS)`;
--json prints the host's object with \"host\": NAME added (an array for several hosts;
a host that could not run it is {\"host\", \"error\"}). --pid is a pid on that host.
The exit status is the host's (of several: 130, then 1, 2, 5, 4, 0, the first that
any host had). A host that is not in the inventory exits 2; one that cannot be
reached or has no usable perflab exits 1, naming it and why. Each host's diagnosis is
recorded here, in this store, with the parameter host = NAME.

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

    #[command(flatten)]
    pub on: OnArgs,

    /// (With --on, on the host: the diagnosis goes back to the controller, which
    /// records it, as one `perflab-doctor-json:` line on stderr; nothing recorded here.)
    #[arg(long = "to-controller", hide = true, conflicts_with = "on")]
    pub to_controller: bool,
}

/// The line prefix a host's doctor sends its diagnosis back with (`--to-controller`).
const TO_CONTROLLER: &str = "perflab-doctor-json: ";

pub fn run(g: &crate::Global, a: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let watch = parse_watch(&a.watch).map_err(|e| InvalidInput(format!("--watch: {e}")))?;
    if !a.on.on.is_empty() {
        return run_on(g, a, watch);
    }
    if let Some(pid) = a.pid {
        if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(InvalidInput(format!("--pid {pid}: no such process")).into());
        }
    }
    std::fs::metadata("/proc/stat").context("cannot read /proc/stat: is /proc mounted?")?;
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    a.on.watch_stdin(&stop);
    if !watch.is_zero() && !g.quiet && std::io::stderr().is_terminal() {
        eprintln!(
            "watching the counters for {} (Ctrl-C stops)…",
            humanize(watch)
        );
    }
    let ctx = perflab_workloads::TrialContext {
        cpus: None,
        timeout: None,
        interrupted: stop,
        run_dir: std::env::temp_dir(),
    };
    let m = match a.spec().run(&ctx) {
        Ok(m) => m,
        Err(WorkloadError::Interrupted) => return Ok(ExitCode::from(INTERRUPTED)),
        Err(e) => return Err(e.into()),
    };
    let d = doctor_kind::diagnosis_in(&m).context("the doctor made no diagnosis")?;
    print(a, &d)?;
    if a.to_controller {
        let v = doctor_kind::to_json(&d);
        eprintln!("{TO_CONTROLLER}{}", serde_json::to_string(&v)?);
    } else {
        record(g, a, m, d.watch_s, None);
    }
    Ok(exit_status(&d))
}

impl DoctorArgs {
    /// The doctor's workload spec: the flags as `kind = "doctor"` options.
    fn spec(&self) -> DoctorSpec {
        DoctorSpec {
            watch: self.watch.clone(),
            pid: self.pid,
            connections: self.connections,
            outgoing: self.outgoing,
        }
    }
}

/// The report or `--json` object of one diagnosis, on stdout.
fn print(a: &DoctorArgs, d: &Diagnosis) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = doctor_kind::to_json(d);
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        write!(out, "{}", report(d, colour))?;
    }
    out.flush()?;
    Ok(())
}

/// The worst finding as the exit status: 5 critical, 4 warnings, else 0.
fn exit_status(d: &Diagnosis) -> ExitCode {
    ExitCode::from(match d.worst() {
        Some(Severity::Critical) => CRITICAL,
        Some(Severity::Warn) => FAILURES,
        _ => 0,
    })
}

/// Records a diagnosis (of this machine, or of `host`); a store that cannot be written
/// (read-only, full) costs only a warning — the findings are out already.
fn record(g: &crate::Global, a: &DoctorArgs, m: Measurement, watch_s: f64, host: Option<&str>) {
    match record_into_store(g, a, m, watch_s, host) {
        Ok(id) if !g.quiet => eprintln!("recorded as run {id} in {}", g.store.display()),
        Ok(_) => {}
        Err(e) => {
            eprintln!(
                "warning: nothing was recorded: {}",
                crate::exit::describe(&e)
            );
            eprintln!("hint: --store PATH or PERFLAB_STORE names a store this user can write");
        }
    }
}

/// `perflab doctor --on HOST,...`: the same doctor run on each host at once (its flags
/// forwarded; a `--pid` is a pid there), each host's report printed here in the order
/// of `--on`, headed by the host's name and address — `--json`: the host's object with
/// `"host"` added, an array for several hosts. Each host sends its diagnosis back
/// (`--to-controller`) and it is recorded here, in this store, as a doctor run with
/// the `host` parameter. The exit status is the host's own (the weightiest of several:
/// [`on_host::exit_status`]).
fn run_on(g: &crate::Global, a: &DoctorArgs, watch: Duration) -> anyhow::Result<ExitCode> {
    if let Some(pid) = a.pid.filter(|p| *p <= 0) {
        return Err(InvalidInput(format!("--pid {pid}: no such process")).into());
    }
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let (relay, hosts) = a.on.relay(stop)?;
    let mut args: Vec<String> = vec!["doctor".into(), "--watch".into(), a.watch.clone()];
    for (flag, v) in [
        ("--pid", a.pid.map(|p| p.to_string())),
        ("--connections", a.connections.map(|n| n.to_string())),
        ("--outgoing", a.outgoing.map(|n| n.to_string())),
    ] {
        if let Some(v) = v {
            args.extend([flag.to_string(), v]);
        }
    }
    if a.json {
        args.push("--json".into());
    }
    if g.quiet {
        args.push("--quiet".into());
    }
    args.push("--to-controller".into());
    if !watch.is_zero() && !g.quiet && std::io::stderr().is_terminal() {
        eprintln!(
            "watching the counters on {} for {} (Ctrl-C stops)…",
            a.on.on.join(", "),
            humanize(watch)
        );
    }
    let mut outs = vec![String::new(); hosts.len()];
    let mut diagnoses: Vec<Option<serde_json::Value>> = vec![None; hosts.len()];
    let results = relay.run_all(&hosts, &args, |i, stream, line| {
        match stream {
            Stream::Out => {
                outs[i].push_str(line);
                outs[i].push('\n');
            }
            Stream::Err => match line.strip_prefix(TO_CONTROLLER) {
                Some(doc) => diagnoses[i] = serde_json::from_str(doc).ok(),
                None => on_host::relay_stderr(&hosts[i].name, line, g.quiet),
            },
        }
        true
    });
    for (h, d) in hosts.iter().zip(&mut diagnoses) {
        if let Some(d) = d {
            d["host"] = json!(h.name);
            let Ok(diagnosis) = doctor_kind::diagnosis_of(d) else {
                eprintln!("warning: host {}: its diagnosis could not be read", h.name);
                continue;
            };
            let mut m = doctor_kind::measurement(&diagnosis);
            // Stored as the host sent it, tagged with its name.
            m.artifacts[0].content = serde_json::to_vec_pretty(d).unwrap_or_default();
            record(g, a, m, diagnosis.watch_s, Some(&h.name));
        }
    }
    let _ = std::fs::remove_dir_all(&relay.scratch);
    let mut out = std::io::stdout().lock();
    if a.json {
        let mut all = Vec::new();
        for ((h, text), r) in hosts.iter().zip(&outs).zip(&results) {
            let v = match (with_host(text, &h.name), r) {
                (Some(v), _) => v,
                (None, Err(e)) => json!({"host": h.name, "error": e.message}),
                (None, Ok(Ended::Exited(c))) => {
                    json!({"host": h.name, "error": format!("exit {c} without a report")})
                }
                (None, Ok(_)) => continue,
            };
            all.push(v);
        }
        let v = if hosts.len() == 1 {
            all.pop()
        } else {
            Some(serde_json::Value::Array(all))
        };
        if let Some(v) = v {
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
    } else {
        let mut first = true;
        for (h, text) in hosts.iter().zip(&outs).filter(|(_, t)| !t.is_empty()) {
            if !first {
                writeln!(out)?;
            }
            first = false;
            write!(out, "host {} ({})\n{text}", h.name, h.address())?;
        }
    }
    out.flush()?;
    drop(out);
    Ok(ExitCode::from(on_host::exit_status(&results)))
}

/// Records the invocation into the results store as a one-trial run of kind `doctor`:
/// the flags as the config, `findings_critical`/`_warn`/`_info` as metrics and the
/// `--json` object as the `doctor.json` artifact (see docs/doctor.md#recorded-runs).
fn record_into_store(
    g: &crate::Global,
    a: &DoctorArgs,
    measurement: Measurement,
    watch_s: f64,
    host: Option<&str>,
) -> anyhow::Result<i64> {
    let store = perflab_store::Store::open(&g.store)
        .with_context(|| format!("cannot open the store {}", g.store.display()))?;
    let mut params = perflab_store::Params::new();
    params.insert("watch".into(), json!(a.watch));
    let mut name = format!("doctor --watch {}", a.watch);
    if let Some(h) = host {
        params.insert("host".into(), json!(h));
        name.push_str(&format!(" --on {h}"));
    }
    // --pid was checked to be positive.
    for (flag, v) in [
        ("pid", a.pid.map(|p| p as u64)),
        ("connections", a.connections),
        ("outgoing", a.outgoing),
    ] {
        if let Some(v) = v {
            params.insert(flag.into(), json!(v));
            name.push_str(&format!(" --{flag} {v}"));
        }
    }
    let id = perflab_lab::record::one_shot(
        &store,
        perflab_lab::record::OneShot {
            kind: "doctor",
            name,
            params,
            environment: json!({ "args": std::env::args().skip(1).collect::<Vec<_>>() }),
            measurement,
            duration_s: watch_s,
            error: None,
        },
    )
    .with_context(|| format!("cannot record into the store {}", g.store.display()))?;
    Ok(id)
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
