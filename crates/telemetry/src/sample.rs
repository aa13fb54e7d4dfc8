//! The figures of one interval, computed from two [`Snapshot`]s, and their flattening
//! into named points (the series names documented in the crate doc).

use serde::Serialize;

use crate::cpu::{self, CpuPct, SchedRates};
use crate::disk::{self, DiskFilter, DiskRates};
use crate::memory::{self, MemoryRates};
use crate::net::{self, NetRates};
use crate::nfs::{self, NfsRates};
use crate::pressure;
use crate::process::ProcessRates;
use crate::snapshot::Snapshot;
use crate::sockets::SocketCounts;

/// CPU shares over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuSample {
    /// All CPUs together.
    pub total: CpuPct,
    /// Each CPU present in both snapshots, by number.
    pub per_cpu: Vec<(u32, CpuPct)>,
}

/// Everything measured over one interval; a part is `None` (or empty) when its probe is
/// off or its files could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Sample {
    /// End of the interval, seconds since the first snapshot.
    pub t: f64,
    /// Length of the interval, seconds.
    pub secs: f64,
    pub cpu: Option<CpuSample>,
    pub sched: Option<SchedRates>,
    pub memory: Option<MemoryRates>,
    /// `iostat -x` figures per device, in /proc/diskstats order.
    pub disks: Vec<(String, DiskRates)>,
    pub net: Option<NetRates>,
    pub sockets: Option<SocketCounts>,
    /// CLOSE_WAIT sockets held by the followed process (and its tree, with `process`).
    pub process_close_wait: Option<u64>,
    pub nfs: Option<NfsRates>,
    pub pressure: Option<PressureRates>,
    pub process: Option<ProcessRates>,
}

/// Stall shares over one interval, % of its wall time (from the PSI `total` counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PressureRates {
    pub cpu_some: f64,
    pub memory_some: f64,
    pub memory_full: f64,
    pub io_some: f64,
    pub io_full: f64,
}

impl Sample {
    /// Figures between two snapshots (all but `process`, which needs a
    /// [`crate::process::ProcessTracker`]). `t` is set from `cur.at - origin`.
    pub fn between(prev: &Snapshot, cur: &Snapshot, origin: f64, disks: &DiskFilter) -> Sample {
        let secs = cur.at - prev.at;
        let mut s = Sample {
            t: cur.at - origin,
            secs,
            ..Default::default()
        };
        if let (Some(a), Some(b)) = (&prev.stat, &cur.stat) {
            s.cpu = Some(CpuSample {
                total: cpu::cpu_pct(&a.total, &b.total),
                per_cpu: b
                    .per_cpu
                    .iter()
                    .filter_map(|(id, t)| {
                        let p = a.per_cpu.iter().find(|(i, _)| i == id)?;
                        Some((*id, cpu::cpu_pct(&p.1, t)))
                    })
                    .collect(),
            });
            if cur.loadavg.is_some() || b.ctxt.is_some() {
                s.sched = Some(cpu::sched_rates(a, b, cur.loadavg.as_ref(), secs));
            }
        }
        if let Some(m) = &cur.meminfo {
            s.memory = Some(memory::memory_rates(
                m,
                prev.vmstat.as_ref(),
                cur.vmstat.as_ref(),
                secs,
            ));
        }
        if let (Some(a), Some(b)) = (&prev.disks, &cur.disks) {
            for d in disks.select(b) {
                if let Some(p) = a.iter().find(|p| p.name == d.name) {
                    s.disks.push((d.name.clone(), disk::iostat(p, d, secs)));
                }
            }
        }
        if let (Some(a), Some(b)) = (&prev.net, &cur.net) {
            s.net = Some(net::net_rates(a, b, secs));
        }
        s.sockets = cur.sockets.clone();
        if let (Some(a), Some(b)) = (&prev.nfs, &cur.nfs) {
            s.nfs = nfs::nfs_rates(a, b, secs);
        }
        if let (Some(a), Some(b)) = (&prev.pressure, &cur.pressure) {
            let pct = |x: &pressure::PsiLine, y: &pressure::PsiLine| {
                pressure::stall_share(x, y, secs) * 100.0
            };
            let full = |x: &pressure::Pressure, y: &pressure::Pressure| match (&x.full, &y.full) {
                (Some(p), Some(q)) => pct(p, q),
                _ => 0.0,
            };
            s.pressure = Some(PressureRates {
                cpu_some: pct(&a.cpu.some, &b.cpu.some),
                memory_some: pct(&a.memory.some, &b.memory.some),
                memory_full: full(&a.memory, &b.memory),
                io_some: pct(&a.io.some, &b.io.some),
                io_full: full(&a.io, &b.io),
            });
        }
        s
    }

    /// The device with the highest %util (then the most I/O; the first listed on a tie),
    /// for one-line views.
    pub fn busiest_disk(&self) -> Option<&(String, DiskRates)> {
        let key = |d: &DiskRates| (d.util, d.r_s + d.w_s);
        let mut best: Option<&(String, DiskRates)> = None;
        for d in &self.disks {
            let better = match best {
                None => true,
                Some(b) => key(&d.1) > key(&b.1),
            };
            if better {
                best = Some(d);
            }
        }
        best
    }

    /// Every figure as a named point (see the crate doc for the names).
    pub fn points(&self) -> Vec<Point> {
        let mut out = Points(Vec::new());
        if let Some(c) = &self.cpu {
            cpu_points(&mut out, "cpu", &c.total, true);
            for (id, p) in &c.per_cpu {
                cpu_points(&mut out, &format!("cpu.cpu{id}"), p, false);
            }
        }
        if let Some(s) = &self.sched {
            sched_points(&mut out, s);
        }
        if let Some(m) = &self.memory {
            memory_points(&mut out, m);
        }
        for (dev, d) in &self.disks {
            disk_points(&mut out, dev, d);
        }
        if let Some(n) = &self.net {
            net_points(&mut out, n);
        }
        if let Some(s) = &self.sockets {
            socket_points(&mut out, s);
        }
        if let Some(v) = self.process_close_wait {
            out.gauge("sockets.process_close_wait", "count", v as f64, Lower)
                .max();
        }
        if let Some(n) = &self.nfs {
            nfs_points(&mut out, n);
        }
        if let Some(p) = &self.pressure {
            pressure_points(&mut out, p);
        }
        if let Some(p) = &self.process {
            process_points(&mut out, p);
        }
        out.0
    }
}

/// Pressure stall shares; the peak interval of each too (a stall is bursty).
fn pressure_points(out: &mut Points, p: &PressureRates) {
    for (name, v) in [
        ("pressure.cpu.some_pct", p.cpu_some),
        ("pressure.memory.some_pct", p.memory_some),
        ("pressure.memory.full_pct", p.memory_full),
        ("pressure.io.some_pct", p.io_some),
        ("pressure.io.full_pct", p.io_full),
    ] {
        out.rate(name, "%", v, Lower).max();
    }
}

/// Context switches, interrupts, run queue and load averages.
fn sched_points(out: &mut Points, s: &SchedRates) {
    out.rate("sched.ctxt_per_s", "1/s", s.ctxt_per_s, Lower)
        .max();
    out.rate("sched.intr_per_s", "1/s", s.intr_per_s, Lower);
    out.gauge("sched.procs_running", "count", s.procs_running, Lower)
        .max();
    out.gauge("sched.procs_blocked", "count", s.procs_blocked, Lower)
        .max();
    out.gauge("sched.loadavg_1", "count", s.loadavg_1, Lower);
    out.gauge("sched.loadavg_5", "count", s.loadavg_5, Lower)
        .series_only();
    out.gauge("sched.loadavg_15", "count", s.loadavg_15, Lower)
        .series_only();
}

/// Free, available and dirty memory, swap and paging.
fn memory_points(out: &mut Points, m: &MemoryRates) {
    out.gauge("memory.free_kb", "kB", m.free_kb, Higher);
    out.gauge("memory.available_kb", "kB", m.available_kb, Higher);
    out.gauge("memory.cached_kb", "kB", m.cached_kb, Higher)
        .series_only();
    out.gauge("memory.buffers_kb", "kB", m.buffers_kb, Higher)
        .series_only();
    out.gauge("memory.dirty_kb", "kB", m.dirty_kb, Lower).max();
    out.gauge("memory.writeback_kb", "kB", m.writeback_kb, Lower)
        .max();
    out.gauge("memory.swap_used_kb", "kB", m.swap_used_kb, Lower)
        .max();
    out.rate(
        "memory.swap_in_pages_per_s",
        "pages/s",
        m.swap_in_pages_per_s,
        Lower,
    );
    out.rate(
        "memory.swap_out_pages_per_s",
        "pages/s",
        m.swap_out_pages_per_s,
        Lower,
    );
    out.rate("memory.page_in_kb_per_s", "kB/s", m.page_in_kb_per_s, Lower);
    out.rate(
        "memory.page_out_kb_per_s",
        "kB/s",
        m.page_out_kb_per_s,
        Lower,
    );
}

/// Protocol counters, softnet drops and per-interface traffic.
fn net_points(out: &mut Points, n: &NetRates) {
    for (name, _) in net::RATES {
        if let Some(v) = n.rates.get(name) {
            // Traffic and connections served are throughput; the rest are errors.
            let throughput = (name.ends_with("segs_per_s") && !name.starts_with("retrans"))
                || name.contains("opens");
            let better = if throughput { Higher } else { Lower };
            out.rate(&format!("net.{name}"), "1/s", *v, better);
        }
    }
    if let Some(v) = n.retrans_pct {
        out.rate("net.retrans_pct", "%", v, Lower);
    }
    if let Some(v) = n.softnet_dropped_per_s {
        out.rate("net.softnet_dropped_per_s", "1/s", v, Lower);
    }
    if let Some(v) = n.softnet_time_squeeze_per_s {
        out.rate("net.softnet_time_squeeze_per_s", "1/s", v, Lower);
    }
    for i in &n.ifaces {
        let p = format!("net.dev.{}", i.name);
        out.rate(
            &format!("{p}.rx_bytes_per_s"),
            "B/s",
            i.rx_bytes_per_s,
            Higher,
        );
        out.rate(
            &format!("{p}.tx_bytes_per_s"),
            "B/s",
            i.tx_bytes_per_s,
            Higher,
        );
        out.rate(
            &format!("{p}.rx_packets_per_s"),
            "1/s",
            i.rx_packets_per_s,
            Higher,
        );
        out.rate(
            &format!("{p}.tx_packets_per_s"),
            "1/s",
            i.tx_packets_per_s,
            Higher,
        );
        out.rate(&format!("{p}.rx_drop_per_s"), "1/s", i.rx_drop_per_s, Lower);
        out.rate(&format!("{p}.tx_drop_per_s"), "1/s", i.tx_drop_per_s, Lower);
    }
}

/// Sockets by TCP state.
fn socket_points(out: &mut Points, s: &SocketCounts) {
    for (name, max) in [
        ("established", true),
        ("syn_recv", true),
        ("time_wait", true),
        ("close_wait", true),
        ("fin_wait2", false),
        ("last_ack", false),
        ("listen", false),
    ] {
        let p = out.gauge(
            &format!("sockets.{name}"),
            "count",
            s.state(name) as f64,
            Lower,
        );
        if max {
            p.max();
        }
    }
}

/// The watched process tree: CPU, memory, threads, descriptors.
fn process_points(out: &mut Points, p: &ProcessRates) {
    out.rate("process.cpu_pct", "%", p.cpu_pct, Lower).max();
    out.cumulative("process.cpu_s", "s", p.cpu_s, Lower);
    out.cumulative("process.user_s", "s", p.user_s, Lower);
    out.cumulative("process.sys_s", "s", p.sys_s, Lower);
    out.gauge("process.rss_kb", "kB", p.rss_kb, Lower).max();
    out.gauge("process.threads", "count", p.threads, Lower)
        .max();
    out.gauge("process.fds", "count", p.fds, Lower).max();
    out.gauge("process.procs", "count", p.procs, Lower).max();
    out.rate("process.vol_ctxt_per_s", "1/s", p.vol_ctxt_per_s, Lower);
    out.rate("process.invol_ctxt_per_s", "1/s", p.invol_ctxt_per_s, Lower);
    out.rate("process.run_wait_pct", "%", p.run_wait_pct, Lower)
        .max();
}

fn cpu_points(out: &mut Points, prefix: &str, c: &CpuPct, summarize: bool) {
    let all = [
        ("user_pct", c.user, Lower),
        ("nice_pct", c.nice, Lower),
        ("system_pct", c.system, Lower),
        ("idle_pct", c.idle, Higher),
        ("iowait_pct", c.iowait, Lower),
        ("irq_pct", c.irq, Lower),
        ("softirq_pct", c.softirq, Lower),
        ("steal_pct", c.steal, Lower),
    ];
    for (name, v, better) in all {
        let p = out.rate(&format!("{prefix}.{name}"), "%", v, better);
        if !summarize {
            p.series_only();
        }
    }
}

fn disk_points(out: &mut Points, dev: &str, d: &DiskRates) {
    let p = |n: &str| format!("disk.{dev}.{n}");
    out.rate(&p("r_s"), "1/s", d.r_s, Higher);
    out.rate(&p("w_s"), "1/s", d.w_s, Higher);
    out.rate(&p("d_s"), "1/s", d.d_s, Higher).series_only();
    out.rate(&p("f_s"), "1/s", d.f_s, Higher).series_only();
    out.rate(&p("rkb_s"), "kB/s", d.rkb_s, Higher);
    out.rate(&p("wkb_s"), "kB/s", d.wkb_s, Higher);
    out.rate(&p("rrqm_s"), "1/s", d.rrqm_s, Higher);
    out.rate(&p("wrqm_s"), "1/s", d.wrqm_s, Higher);
    out.rate(&p("rrqm_pct"), "%", d.rrqm_pct, Higher)
        .series_only();
    out.rate(&p("wrqm_pct"), "%", d.wrqm_pct, Higher)
        .series_only();
    out.rate(&p("areq_sz"), "kB", d.areq_sz, Higher);
    out.rate(&p("aqu_sz"), "count", d.aqu_sz, Lower).max();
    out.rate(&p("await"), "ms", d.r#await, Lower).max();
    out.rate(&p("r_await"), "ms", d.r_await, Lower);
    out.rate(&p("w_await"), "ms", d.w_await, Lower);
    out.rate(&p("f_await"), "ms", d.f_await, Lower)
        .series_only();
    out.rate(&p("util"), "%", d.util, Lower).max();
}

fn nfs_points(out: &mut Points, n: &NfsRates) {
    if let Some(c) = &n.client {
        out.rate("nfs.client.calls_per_s", "1/s", c.calls_per_s, Higher);
        out.rate("nfs.client.retrans_per_s", "1/s", c.retrans_per_s, Lower);
        out.rate("nfs.client.retrans_pct", "%", c.retrans_pct, Lower)
            .max();
        out.rate(
            "nfs.client.authrefresh_per_s",
            "1/s",
            c.authrefresh_per_s,
            Lower,
        );
    }
    if let Some(s) = &n.server {
        out.rate("nfs.server.calls_per_s", "1/s", s.calls_per_s, Higher);
        out.rate("nfs.server.badcalls_per_s", "1/s", s.badcalls_per_s, Lower);
        if let Some(t) = s.threads {
            out.gauge("nfs.server.threads", "count", t, Higher);
        }
        let opt = [
            (
                "nfs.server.packets_arrived_per_s",
                "1/s",
                s.packets_arrived_per_s,
                Higher,
            ),
            (
                "nfs.server.sockets_enqueued_per_s",
                "1/s",
                s.sockets_enqueued_per_s,
                Lower,
            ),
            ("nfs.server.enqueued_pct", "%", s.enqueued_pct, Lower),
            (
                "nfs.server.threads_woken_per_s",
                "1/s",
                s.threads_woken_per_s,
                Higher,
            ),
            (
                "nfs.server.threads_timedout_per_s",
                "1/s",
                s.threads_timedout_per_s,
                Lower,
            ),
        ];
        for (name, unit, v, better) in opt {
            if let Some(v) = v {
                out.rate(name, unit, v, better);
            }
        }
    }
}

/// Which way is better for a figure (how `compare` words a difference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

use Better::{Higher, Lower};

impl Better {
    /// `"higher"` or `"lower"`, as the store spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Higher => "higher",
            Lower => "lower",
        }
    }
}

/// How a point's trial summary is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Derived from counters: the trial value is computed over the whole trial from the
    /// first and last snapshots (exact, also for ratios such as await).
    Rate,
    /// A level read at the end of each interval: the trial value is the time-weighted
    /// mean of the points.
    Gauge,
    /// Already accumulated since the start: the trial value is the last point.
    Cumulative,
}

/// One named figure of one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub name: String,
    pub unit: &'static str,
    pub value: f64,
    pub better: Better,
    pub kind: Kind,
    /// Summarized per trial (false: kept as a series only, e.g. per-CPU figures).
    pub summarize: bool,
    /// Also summarized as `NAME_max`, the highest interval value.
    pub max: bool,
}

struct Points(Vec<Point>);

impl Points {
    fn push(
        &mut self,
        name: &str,
        unit: &'static str,
        value: f64,
        better: Better,
        kind: Kind,
    ) -> &mut Point {
        self.0.push(Point {
            name: name.to_string(),
            unit,
            value,
            better,
            kind,
            summarize: true,
            max: false,
        });
        self.0.last_mut().expect("just pushed")
    }
    fn rate(&mut self, name: &str, unit: &'static str, v: f64, b: Better) -> &mut Point {
        self.push(name, unit, v, b, Kind::Rate)
    }
    fn gauge(&mut self, name: &str, unit: &'static str, v: f64, b: Better) -> &mut Point {
        self.push(name, unit, v, b, Kind::Gauge)
    }
    fn cumulative(&mut self, name: &str, unit: &'static str, v: f64, b: Better) -> &mut Point {
        self.push(name, unit, v, b, Kind::Cumulative)
    }
}

impl Point {
    fn max(&mut self) -> &mut Point {
        self.max = true;
        self
    }
    fn series_only(&mut self) -> &mut Point {
        self.summarize = false;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busiest_disk_prefers_util_then_io_then_the_first() {
        let d = |util: f64, r_s: f64| DiskRates {
            util,
            r_s,
            ..Default::default()
        };
        let mut s = Sample {
            disks: vec![("vda".into(), d(0.0, 0.0)), ("zram0".into(), d(0.0, 0.0))],
            ..Default::default()
        };
        assert_eq!(s.busiest_disk().unwrap().0, "vda");
        s.disks.push(("sdb".into(), d(0.0, 5.0)));
        assert_eq!(s.busiest_disk().unwrap().0, "sdb");
        s.disks.push(("sdc".into(), d(40.0, 1.0)));
        assert_eq!(s.busiest_disk().unwrap().0, "sdc");
        assert!(Sample::default().busiest_disk().is_none());
    }

    #[test]
    fn pressure_is_the_stall_counters_growth_over_the_interval() {
        use crate::pressure::{parse_pressure, PressureSet};
        let set = |cpu: u64, mem: u64, io_full: u64| {
            PressureSet {
            cpu: parse_pressure("cpu", &format!("some avg10=0 avg60=0 avg300=0 total={cpu}\n"))
                .unwrap(),
            memory: parse_pressure(
                "memory",
                &format!(
                    "some avg10=0 avg60=0 avg300=0 total={mem}\nfull avg10=0 avg60=0 avg300=0 total=0\n"
                ),
            )
            .unwrap(),
            io: parse_pressure(
                "io",
                &format!(
                    "some avg10=0 avg60=0 avg300=0 total={io_full}\nfull avg10=0 avg60=0 avg300=0 total={io_full}\n"
                ),
            )
            .unwrap(),
        }
        };
        let a = Snapshot {
            at: 10.0,
            pressure: Some(set(1_000_000, 0, 0)),
            ..Default::default()
        };
        let b = Snapshot {
            at: 12.0,
            pressure: Some(set(1_500_000, 100_000, 2_000_000)),
            ..Default::default()
        };
        let s = Sample::between(&a, &b, 10.0, &DiskFilter::default());
        let p = s.pressure.unwrap();
        assert!((p.cpu_some - 25.0).abs() < 1e-9, "{p:?}");
        assert!((p.memory_some - 5.0).abs() < 1e-9, "{p:?}");
        assert!((p.io_full - 100.0).abs() < 1e-9, "{p:?}");
        let points = s.points();
        let cpu = points
            .iter()
            .find(|x| x.name == "pressure.cpu.some_pct")
            .unwrap();
        assert_eq!((cpu.unit, cpu.max), ("%", true));
    }
}
