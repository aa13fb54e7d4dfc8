//! What ran out at a step: a pure function of the step's recorded facts
//! ([`super::facts::StepFacts`]), trying the candidates in a fixed order and naming the
//! first that holds, with its numbers as evidence.
//!
//! The order puts the measuring instrument first — a generator that could not keep up
//! must never be blamed on the server — then the server's own CPU, then what crowds
//! it out, then the kernel's queues and the network, then the disk and memory, whose
//! pressure usually shows as one of the earlier ones when it limits a web server.
//!
//! | # | resource | holds when | why that threshold |
//! |---|---|---|---|
//! | 1 | `generator` | its threads on a CPU ≥ 90 % of the step, or on a CPU plus runnable-but-waiting ≥ 90 % | 90 % is the load engine's own saturation mark (`perflab_load::SATURATION`); a worker sharing its CPU is on it only part of the time yet cannot go faster, so waiting counts as busy |
//! | 2 | `service_cpu` | the service's threads on a CPU ≥ 90 % of its cgroup's CPU quota (when that is below its allowed CPUs), or on a CPU or waiting for one ≥ 90 % of its allowed CPUs (`Cpus_allowed_list`), or its busiest thread ≥ 90 % of the step | the same 90 %: a quota that used (a container's `--cpus`: its throttled time counts as waiting, so only time on a CPU is compared with it), a cpuset that full, or a single event loop that full, has no room left; the busiest-thread test catches a one-threaded server on a many-CPU host |
//! | 3 | `cpu_pressure` | the service was runnable (on a CPU or waiting for one) ≥ 50 % of its allowed CPUs or its busiest thread ≥ 50 % of the step, and waited ≥ 25 % of that runnable time; with no service process found but a local target, PSI cpu `some` ≥ 50 % | a service runnable less than half the time it may have is not short of CPU: its waits are wake-up latency (a mostly idle server on a busy host); above that, a quarter of its runnable time queued is a service slowed by others, not by itself; PSI is host-wide, so without the service's own figures only a half-stalled host counts |
//! | 4 | `listen_queue` | a local target, ≥ 10 listen-queue overflows (`TcpExt.ListenOverflows`) and ≥ 0.1 % of the step's requests | each overflow drops a SYN, which the client resends after 1 s: one in a thousand is enough to move a p99.9 and a tenth of what moves a p99; the floor of 10 ignores a stray burst |
//! | 5 | `softirq` | a CPU ≥ 90 % busy with ≥ 30 % of its time in softirq | a CPU that full, a third of it in packet processing, is the nginx `__do_softirq` plateau; softirq load sits on one CPU while the average looks harmless |
//! | 6 | `retransmits` | ≥ 10 segments retransmitted and ≥ 1 % of those sent (`Tcp.RetransSegs / Tcp.OutSegs`) | a healthy LAN retransmits well under 0.1 %; 1 % costs throughput (each loss halves a window) and latency (RTO ≥ 200 ms) |
//! | 7 | `disk` | a local target and the busiest disk ≥ 90 % utilised, or PSI io `full` ≥ 10 % | `iostat -x` %util near 100 is a single-queue device with no idle time; `full` io stall means every task waited for I/O at once |
//! | 8 | `memory` | a local target and ≥ 100 pages swapped in or out during the step, or PSI memory `some` ≥ 10 % | a web server under load should not swap at all; 100 pages is over the noise of a background reclaim, and 10 % of the step stalled on memory is a tenth of its capacity |
//! | 9 | `unknown` | none of the above | the evidence then says what was measured, so the reader sees what did not run out |
//!
//! Figures a host does not have (no PSI, a remote target, no service process found)
//! make their rules not hold; they never make one hold.

use perflab_load::{Limit, LimitResource};

use super::facts::{ServiceFacts, StepFacts};

/// The generator's saturation mark (busy, or busy plus waiting).
pub const GENERATOR_BUSY: f64 = 0.9;
/// The service's share of its allowed CPUs (or of one CPU for its busiest thread).
pub const SERVICE_CPU: f64 = 0.9;
/// The service's runnable share (of its allowed CPUs, or of one CPU for its busiest
/// thread) from which its run-queue wait counts, and that wait's share of the runnable
/// time.
pub const SERVICE_RUNNABLE: f64 = 0.5;
pub const SERVICE_WAIT_SHARE: f64 = 0.25;
/// PSI cpu `some` when no service process is known.
pub const PSI_CPU_SOME: f64 = 0.5;
/// Listen-queue overflows: a count and a share of the step's requests.
pub const OVERFLOWS: u64 = 10;
pub const OVERFLOW_SHARE: f64 = 0.001;
/// A softirq-bound CPU: busy, and its softirq share.
pub const SOFTIRQ_BUSY: f64 = 0.9;
pub const SOFTIRQ_SHARE: f64 = 0.3;
/// Retransmits: a count and a share of the segments sent.
pub const RETRANS: u64 = 10;
pub const RETRANS_SHARE: f64 = 0.01;
/// Disk utilisation, and PSI io `full`.
pub const DISK_UTIL: f64 = 0.9;
pub const PSI_IO_FULL: f64 = 0.1;
/// Pages swapped in and out, and PSI memory `some`.
pub const SWAP_PAGES: u64 = 100;
pub const PSI_MEMORY_SOME: f64 = 0.1;

/// The first candidate that holds at this step, with its evidence.
pub fn classify(f: &StepFacts) -> Limit {
    let rules: [fn(&StepFacts) -> Option<Limit>; 8] = [
        generator,
        service_cpu,
        cpu_pressure,
        listen_queue,
        softirq,
        retransmits,
        disk,
        memory,
    ];
    rules
        .iter()
        .find_map(|r| r(f))
        .unwrap_or_else(|| unknown(f))
}

fn limit(resource: LimitResource, evidence: String) -> Option<Limit> {
    Some(Limit { resource, evidence })
}

fn generator(f: &StepFacts) -> Option<Limit> {
    let g = &f.generator;
    if g.busy < GENERATOR_BUSY && g.busy + g.wait < GENERATOR_BUSY {
        return None;
    }
    let late = if g.late > 0 {
        format!(", {} sends late", thousands(g.late))
    } else {
        String::new()
    };
    limit(
        LimitResource::Generator,
        format!(
            "the generator's threads were on a CPU {} and waiting for one {} of the step at {}{late}",
            pct(g.busy),
            pct(g.wait),
            rate(f.rate)
        ),
    )
}

fn service_cpu(f: &StepFacts) -> Option<Limit> {
    let s = f.service.as_ref()?;
    if let Some(l) = quota_used(f, s) {
        return Some(l);
    }
    let used = s.on_cpu + s.wait;
    let allowed = s.allowed_cpus.max(1) as f64;
    let cpus = if s.allowed_cpus == 1 { "CPU" } else { "CPUs" };
    let waited = if s.wait >= 0.05 {
        format!(" (of which {:.2} waiting for a CPU)", s.wait)
    } else {
        String::new()
    };
    if used >= SERVICE_CPU * allowed {
        return limit(
            LimitResource::ServiceCpu,
            format!(
                "service used {used:.2}{waited} of its {} allowed {cpus} at {}",
                s.allowed_cpus,
                rate(f.rate)
            ),
        );
    }
    if s.busiest_thread >= SERVICE_CPU {
        return limit(
            LimitResource::ServiceCpu,
            format!(
                "the service's busiest thread was on a CPU or waiting for one {} of the step at {} (service: {used:.2} of its {} allowed {cpus})",
                pct(s.busiest_thread),
                rate(f.rate),
                s.allowed_cpus
            ),
        );
    }
    None
}

/// A cgroup CPU quota below the CPUs the service may run on, and its time on a CPU
/// ≥ 90 % of that quota. Only time on a CPU counts here: a throttled task stays
/// runnable, so its run delay is the quota's doing, not other tasks'.
fn quota_used(f: &StepFacts, s: &ServiceFacts) -> Option<Limit> {
    let q = s.cpu_quota.filter(|q| *q < s.allowed_cpus.max(1) as f64)?;
    if s.on_cpu < SERVICE_CPU * q {
        return None;
    }
    let throttled = match s.throttled_periods {
        Some((t, n)) if n > 0 => format!(
            ", throttled in {} of {} periods",
            thousands(t),
            thousands(n)
        ),
        _ => String::new(),
    };
    limit(
        LimitResource::ServiceCpu,
        format!(
            "service used {:.2} CPU of its cgroup CPU quota of {q:.2} at {}{throttled}",
            s.on_cpu,
            rate(f.rate)
        ),
    )
}

fn cpu_pressure(f: &StepFacts) -> Option<Limit> {
    let psi = f
        .pressure
        .map(|p| format!("; PSI cpu some {}", pct(p.cpu_some)))
        .unwrap_or_default();
    if let Some(s) = &f.service {
        let runnable = s.on_cpu + s.wait;
        let allowed = s.allowed_cpus.max(1) as f64;
        let wanted = runnable >= SERVICE_RUNNABLE * allowed || s.busiest_thread >= SERVICE_RUNNABLE;
        if wanted && s.wait >= SERVICE_WAIT_SHARE * runnable {
            return limit(
                LimitResource::CpuPressure,
                format!(
                    "the service's threads waited for a CPU {} of their runnable time ({:.2} CPUs' worth, on a CPU {:.2}) at {}{psi}",
                    pct(s.wait / runnable),
                    s.wait,
                    s.on_cpu,
                    rate(f.rate)
                ),
            );
        }
        return None;
    }
    let p = f.pressure.filter(|_| f.local)?;
    (p.cpu_some >= PSI_CPU_SOME).then(|| Limit {
        resource: LimitResource::CpuPressure,
        evidence: format!(
            "tasks waited for a CPU {} of the step (PSI cpu some) at {}",
            pct(p.cpu_some),
            rate(f.rate)
        ),
    })
}

fn listen_queue(f: &StepFacts) -> Option<Limit> {
    let n = f.listen_overflows.filter(|_| f.local)?;
    if n < OVERFLOWS || (n as f64) < OVERFLOW_SHARE * f.requests as f64 {
        return None;
    }
    let port = f.port.map(|p| format!(" on :{p}")).unwrap_or_default();
    limit(
        LimitResource::ListenQueue,
        format!(
            "{} listen-queue overflows{port} during the step at {}",
            thousands(n),
            rate(f.rate)
        ),
    )
}

fn softirq(f: &StepFacts) -> Option<Limit> {
    let c = f.softirq?;
    if c.busy < SOFTIRQ_BUSY || c.softirq < SOFTIRQ_SHARE {
        return None;
    }
    limit(
        LimitResource::Softirq,
        format!(
            "CPU {} spent {} of the step in softirq ({} busy) at {}",
            c.cpu,
            pct(c.softirq),
            pct(c.busy),
            rate(f.rate)
        ),
    )
}

fn retransmits(f: &StepFacts) -> Option<Limit> {
    let (r, out) = (f.retrans_segs?, f.out_segs?);
    if r < RETRANS || (r as f64) < RETRANS_SHARE * out as f64 {
        return None;
    }
    limit(
        LimitResource::Retransmits,
        format!(
            "{} TCP segments retransmitted ({:.1} % of {} sent) during the step at {}",
            thousands(r),
            r as f64 * 100.0 / out.max(1) as f64,
            thousands(out),
            rate(f.rate)
        ),
    )
}

fn disk(f: &StepFacts) -> Option<Limit> {
    if !f.local {
        return None;
    }
    let io_full = f.pressure.map(|p| p.io_full).unwrap_or(0.0);
    let util = f.disk.as_ref().map(|d| d.util).unwrap_or(0.0);
    if util < DISK_UTIL && io_full < PSI_IO_FULL {
        return None;
    }
    let dev = f
        .disk
        .as_ref()
        .map(|d| {
            format!(
                "disk {} busy {} of the step (await {:.1} ms)",
                d.name,
                pct(d.util),
                d.await_ms
            )
        })
        .unwrap_or_else(|| "no disk figures".into());
    let psi = f
        .pressure
        .map(|p| format!("; PSI io full {}", pct(p.io_full)))
        .unwrap_or_default();
    limit(
        LimitResource::Disk,
        format!("{dev}{psi} at {}", rate(f.rate)),
    )
}

fn memory(f: &StepFacts) -> Option<Limit> {
    if !f.local {
        return None;
    }
    let (si, so) = (f.swap_in.unwrap_or(0), f.swap_out.unwrap_or(0));
    let some = f.pressure.map(|p| p.memory_some).unwrap_or(0.0);
    if si + so < SWAP_PAGES && some < PSI_MEMORY_SOME {
        return None;
    }
    let psi = f
        .pressure
        .map(|p| format!("; PSI memory some {}", pct(p.memory_some)))
        .unwrap_or_default();
    limit(
        LimitResource::Memory,
        format!(
            "{} pages swapped in and {} out{psi} during the step at {}",
            thousands(si),
            thousands(so),
            rate(f.rate)
        ),
    )
}

fn unknown(f: &StepFacts) -> Limit {
    let mut seen = vec![format!(
        "generator on a CPU {}, waiting {}",
        pct(f.generator.busy),
        pct(f.generator.wait)
    )];
    match &f.service {
        Some(s) => seen.push(format!(
            "service {:.2} of {} allowed CPUs{}",
            s.on_cpu + s.wait,
            s.allowed_cpus,
            s.cpu_quota
                .map(|q| format!(" (cgroup CPU quota {q:.2})"))
                .unwrap_or_default()
        )),
        None if f.local => seen.push("no service process found".into()),
        None => seen.push("the target is not on this host".into()),
    }
    if let Some(n) = f.listen_overflows.filter(|_| f.local) {
        seen.push(format!("{} listen-queue overflows", thousands(n)));
    }
    Limit {
        resource: LimitResource::Unknown,
        evidence: format!(
            "nothing measured ran out at {} ({})",
            rate(f.rate),
            seen.join("; ")
        ),
    }
}

/// `0.473` → `47 %`.
fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// A rate with thousands separators: `24,000 req/s`, `87.5 req/s`.
fn rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{} req/s", thousands(r.round() as u64))
    } else {
        format!("{r:.1} req/s")
    }
}

/// `1427` → `1,427`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
