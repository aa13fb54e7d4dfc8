//! `perflab top`: a live, vmstat-like view of the counters the studies perflab reproduces
//! read first — run queue, context switches, the softirq share, the busiest disk's
//! %util and await, TCP retransmits, listen-queue overflows and CLOSE_WAIT sockets.
//!
//! All figures come from `perflab-telemetry`'s [`Sampler`]; this file only parses flags,
//! paces the samples, and prints one line (or one JSON object) per interval. Ctrl-C
//! stops it with exit code 130; `--count N` stops it with 0 after N lines.
//!
//! `--on HOST,...` runs this same top on inventory hosts instead, their lines streamed
//! here (`perflab_fleet::relay` does the running; `super::on_host` the flags).

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use perflab_fleet::relay::{with_host, Stream};
use perflab_telemetry::{parse_interval, Probe, Sample, Sampler, SamplerSpec};
use serde_json::{json, Map, Value};

use super::on_host::{self, OnArgs};
use crate::exit::{InvalidInput, INTERRUPTED};

const TOP_HELP: &str = "\
Examples:
  perflab top                         one line per second until Ctrl-C
  perflab top --interval 250ms --count 20
  perflab top --json --count 10 > counters.jsonl

Columns (rates are per second over the last interval):
  r, b        runnable and I/O-blocked tasks (vmstat's r and b)
  cs/s, in/s  context switches and interrupts
  us sy si wa st  CPU shares, %: user+nice, system+hardirq, softirq, iowait, steal
              (the rest is idle)
  disk        the busiest block device (highest %util); partitions, loop and RAM
              devices are left out
  %util await its iostat -x %util and await (ms), computed as sysstat does
  retrans/s   TCP segments retransmitted
  ovfl/s      TCP listen-queue overflows (TcpExt.ListenOverflows)
  close_wait  TCP sockets in CLOSE_WAIT (peer closed, application did not)

--json prints one object per interval:
  {\"t\", \"interval_s\", \"cpu\": {\"user\", \"nice\", \"system\", \"irq\", \"softirq\", \"iowait\",
   \"steal\", \"idle\"}, \"sched\": {\"ctxt_per_s\", \"intr_per_s\", \"procs_running\",
   \"procs_blocked\", \"loadavg_1\"}, \"disk\": {DEVICE: {\"r_s\", \"w_s\", \"rkb_s\", \"wkb_s\",
   \"rrqm_s\", \"wrqm_s\", \"areq_sz\", \"aqu_sz\", \"await\", \"r_await\", \"w_await\", \"util\"}},
   \"net\": {\"retrans_per_s\", \"retrans_pct\", \"listen_overflows_per_s\",
   \"listen_drops_per_s\", \"in_segs_per_s\", \"out_segs_per_s\"}, \"sockets\": {\"established\",
   \"syn_recv\", \"time_wait\", \"close_wait\", \"listen\", \"close_wait_by_pid\": {PID: N}}}
  t is seconds since start; a group is null when its /proc files could not be read.

On other hosts: `perflab top --on b` (or --on a,b; --hosts FILE, default hosts.toml)
runs this top on each inventory host over ssh — perflab copied there as for
`perflab run --on` — and prints its lines here as they come: headed by
`host NAME (ADDRESS)` for one host, each line prefixed with the host's name for
several; --json adds \"host\": NAME to each object. Ctrl-C stops the tops there too.

Exit codes: 0 after --count lines, 1 /proc could not be read (with --on: a host
            unreachable or without a usable perflab, named), 2 bad flag or a host
            not in the inventory, 130 interrupted (Ctrl-C).";

/// Live system counters, one line per interval: run queue, context switches, CPU
/// shares, the busiest disk, TCP retransmits, listen overflows, CLOSE_WAIT sockets.
#[derive(Debug, clap::Args)]
#[command(after_help = TOP_HELP)]
pub struct TopArgs {
    /// Time between lines: 1s, 250ms, 1m (at least 50ms).
    #[arg(short = 'i', long, value_name = "DURATION", default_value = "1s")]
    pub interval: String,

    /// Stop after N lines (exit 0) [default: run until Ctrl-C].
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// One JSON object per line instead of the table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub on: OnArgs,
}

/// Lines between repeated headers.
const HEADER_EVERY: u64 = 20;

pub fn run(g: &crate::Global, a: &TopArgs) -> anyhow::Result<ExitCode> {
    let interval =
        parse_interval(&a.interval).map_err(|e| InvalidInput(format!("--interval: {e}")))?;
    if !a.on.on.is_empty() {
        return run_on(g, a);
    }
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    a.on.watch_stdin(&stop);
    let mut sampler = Sampler::new(SamplerSpec {
        probes: vec![
            Probe::Cpu,
            Probe::Sched,
            Probe::Disk,
            Probe::Net,
            Probe::Sockets,
        ],
        ..SamplerSpec::system()
    })
    .context("cannot start sampling")?;
    let mut out = std::io::stdout().lock();
    let mut warned = 0;
    let mut lines = 0u64;
    let mut tick: u32 = 0;
    loop {
        // The next point of the start + k × interval grid that is still ahead: a slow
        // sample (or a stopped terminal) skips lines instead of bunching them up.
        let behind = (sampler.elapsed().as_secs_f64() / interval.as_secs_f64()) as u32;
        tick = (tick + 1).max(behind + 1);
        if !wait_until(&sampler, interval * tick, &stop) {
            return Ok(ExitCode::from(INTERRUPTED));
        }
        let s = sampler.sample();
        for w in &sampler.notes().warnings[warned..] {
            if !g.quiet {
                eprintln!("warning: {w}");
            }
        }
        warned = sampler.notes().warnings.len();
        let text = if a.json {
            json_line(&s).to_string()
        } else {
            let mut t = String::new();
            if lines.checked_rem(HEADER_EVERY) == Some(0) {
                t.push_str(HEADER);
                t.push('\n');
            }
            t.push_str(&table_line(&s));
            t
        };
        if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
            // Reader gone (`perflab top | head`): nothing left to do.
            return Ok(ExitCode::SUCCESS);
        }
        lines += 1;
        if a.count.is_some_and(|n| lines >= n) {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// `perflab top --on HOST,...`: the same top run on each host, its lines printed here
/// as they come — headed by `host NAME (ADDRESS)` for one host, each prefixed with its
/// host's name for several; `--json`: each object with `"host"` added. Ctrl-C closes
/// the sessions (the tops there stop with them) and exits 130; `--count N` ends each
/// host's top, and this one with 0.
fn run_on(g: &crate::Global, a: &TopArgs) -> anyhow::Result<ExitCode> {
    let stop = perflab_lab::signals::install().context("cannot install the Ctrl-C handler")?;
    let (relay, hosts) = a.on.relay(stop)?;
    let mut args: Vec<String> = vec!["top".into(), "--interval".into(), a.interval.clone()];
    if let Some(n) = a.count {
        args.extend(["--count".into(), n.to_string()]);
    }
    if a.json {
        args.push("--json".into());
    }
    if g.quiet {
        args.push("--quiet".into());
    }
    let width = hosts.iter().map(|h| h.name.len()).max().unwrap_or(0);
    let mut headed = false;
    let mut out = std::io::stdout().lock();
    let results = relay.run_all(&hosts, &args, |i, stream, line| {
        let name = &hosts[i].name;
        if stream == Stream::Err {
            on_host::relay_stderr(name, line, g.quiet);
            return true;
        }
        let mut text = String::new();
        if a.json {
            match with_host(line, name) {
                Some(v) => text.push_str(&v.to_string()),
                None => text.push_str(line),
            }
        } else if hosts.len() > 1 {
            text.push_str(&format!("{name:<width$}  {line}"));
        } else {
            if !headed {
                text.push_str(&format!("host {name} ({})\n", hosts[i].address()));
                headed = true;
            }
            text.push_str(line);
        }
        // False when the reader is gone (`perflab top --on b | head`): hang up.
        writeln!(out, "{text}").and_then(|_| out.flush()).is_ok()
    });
    drop(out);
    let _ = std::fs::remove_dir_all(&relay.scratch);
    Ok(ExitCode::from(on_host::exit_status(&results)))
}

/// Sleeps until `deadline` on the sampler's clock, in short steps so Ctrl-C is seen at
/// once; false when interrupted.
fn wait_until(sampler: &Sampler, deadline: Duration, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = sampler.elapsed();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

const HEADER: &str = "    r     b     cs/s     in/s  us  sy  si  wa  st disk       %util   await retrans/s  ovfl/s close_wait";

fn table_line(s: &Sample) -> String {
    let (r, b, cs, intr) = match &s.sched {
        Some(x) => (x.procs_running, x.procs_blocked, x.ctxt_per_s, x.intr_per_s),
        None => (f64::NAN, f64::NAN, f64::NAN, f64::NAN),
    };
    let cpu = s.cpu.as_ref().map(|c| c.total);
    let pct = |f: fn(&perflab_telemetry::cpu::CpuPct) -> f64| match &cpu {
        Some(c) => format!("{:>3.0}", f(c)),
        None => "  -".to_string(),
    };
    let (dev, util, wait) = match s.busiest_disk() {
        Some((name, d)) => (
            short(name, 8),
            format!("{:>7.1}", d.util),
            format!("{:>7.2}", d.r#await),
        ),
        None => (
            "-".to_string(),
            "      -".to_string(),
            "      -".to_string(),
        ),
    };
    let (retrans, ovfl) = match &s.net {
        Some(n) => (
            format!("{:>9.1}", n.get("retrans_segs_per_s")),
            format!("{:>7.1}", n.get("listen_overflows_per_s")),
        ),
        None => ("        -".to_string(), "      -".to_string()),
    };
    let close_wait = s
        .sockets
        .as_ref()
        .map(|c| c.close_wait().to_string())
        .unwrap_or_else(|| "-".into());
    format!(
        "{:>5} {:>5} {:>8} {:>8} {} {} {} {} {} {:<8} {} {} {} {} {:>10}",
        num(r),
        num(b),
        num(cs),
        num(intr),
        pct(|c| c.user + c.nice),
        pct(|c| c.system + c.irq),
        pct(|c| c.softirq),
        pct(|c| c.iowait),
        pct(|c| c.steal),
        dev,
        util,
        wait,
        retrans,
        ovfl,
        close_wait
    )
}

fn num(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else {
        format!("{x:.0}")
    }
}

fn short(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Rounds to 3 decimals so JSON shows 12.5, not 12.500000000000002.
fn r3(x: f64) -> Value {
    json!((x * 1000.0).round() / 1000.0)
}

fn json_line(s: &Sample) -> Value {
    let cpu = s.cpu.as_ref().map(|c| {
        let t = &c.total;
        json!({
            "user": r3(t.user), "nice": r3(t.nice), "system": r3(t.system), "irq": r3(t.irq),
            "softirq": r3(t.softirq), "iowait": r3(t.iowait), "steal": r3(t.steal),
            "idle": r3(t.idle),
        })
    });
    let sched = s.sched.as_ref().map(|x| {
        json!({
            "ctxt_per_s": r3(x.ctxt_per_s), "intr_per_s": r3(x.intr_per_s),
            "procs_running": r3(x.procs_running), "procs_blocked": r3(x.procs_blocked),
            "loadavg_1": r3(x.loadavg_1),
        })
    });
    let mut disk = Map::new();
    for (name, d) in &s.disks {
        disk.insert(
            name.clone(),
            json!({
                "r_s": r3(d.r_s), "w_s": r3(d.w_s), "rkb_s": r3(d.rkb_s), "wkb_s": r3(d.wkb_s),
                "rrqm_s": r3(d.rrqm_s), "wrqm_s": r3(d.wrqm_s), "areq_sz": r3(d.areq_sz),
                "aqu_sz": r3(d.aqu_sz), "await": r3(d.r#await), "r_await": r3(d.r_await),
                "w_await": r3(d.w_await), "util": r3(d.util),
            }),
        );
    }
    let net = s.net.as_ref().map(|n| {
        json!({
            "retrans_per_s": r3(n.get("retrans_segs_per_s")),
            "retrans_pct": n.retrans_pct.map(r3),
            "listen_overflows_per_s": r3(n.get("listen_overflows_per_s")),
            "listen_drops_per_s": r3(n.get("listen_drops_per_s")),
            "in_segs_per_s": r3(n.get("in_segs_per_s")),
            "out_segs_per_s": r3(n.get("out_segs_per_s")),
        })
    });
    let sockets = s.sockets.as_ref().map(|c| {
        let by_pid: Map<String, Value> = c
            .close_wait_by_pid
            .iter()
            .map(|(pid, n)| (pid.to_string(), json!(n)))
            .collect();
        json!({
            "established": c.established(), "syn_recv": c.state("syn_recv"),
            "time_wait": c.time_wait(), "close_wait": c.close_wait(), "listen": c.listen(),
            "close_wait_by_pid": by_pid,
        })
    });
    json!({
        "t": r3(s.t),
        "interval_s": r3(s.secs),
        "cpu": cpu,
        "sched": sched,
        "disk": disk,
        "net": net,
        "sockets": sockets,
    })
}
