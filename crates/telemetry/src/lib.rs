//! perflab-telemetry: the system's own counters, read from /proc while something runs.
//!
//! Every result perflab stores comes with the reason for it: the softirq share behind an
//! nginx plateau, the run queue and context switches behind a scheduler bottleneck, the
//! queue size and merges that tell block from raw I/O, the retransmits and reassembly
//! failures behind a slow NFS mount. This crate reads those counters. It is a library
//! with no CLI concerns: `perflab top` and the experiment runner both sit on it.
//!
//! # Shape
//!
//! - One module per probe ([`cpu`], [`memory`], [`disk`], [`net`], [`sockets`], [`nfs`],
//!   [`pressure`], [`process`]), each a set of small pure functions: `parse_*` over a file's text, and
//!   a rates function over two parsed reads and the seconds between them. They are
//!   tested on real and synthetic /proc snapshots in `tests/fixtures/`.
//! - [`snapshot`] is the only place that reads files, relative to a root directory
//!   (`/proc`, or a fixture laid out like it); on the live system TCP sockets come from
//!   one netlink dump ([`sock_diag`]) instead of /proc/net/tcp{,6}, whose every read
//!   walks the kernel's whole connection hash table. [`sample`] turns two snapshots into
//!   figures and names them; [`Sampler`] keeps the previous snapshot; [`Monitor`] runs a
//!   sampler on its own thread for the length of a trial.
//! - [`pressure`] (pressure stall information, `/proc/pressure/*`) and [`rundelay`]
//!   (per-task run-queue wait, `/proc/PID/task/*/schedstat`) are the two cheap readings
//!   a find-max step is judged by (crate workloads' knee module reads them around each
//!   step); a kernel without PSI is a reason, not an error.
//! - [`perfcount`] is the one module that is not /proc: `perf_event_open` counters
//!   (cycles, instructions, page faults, ...) over a trial's whole process tree, opened
//!   in the child before its `exec` — `perf stat`'s numbers as trial metrics.
//!
//! Cost: with every probe, one sample takes about 0.6 ms of CPU on the 2-vCPU
//! development VM, 0.06 % of one core at a 1 s interval (`cargo run --release -p
//! perflab-telemetry --example overhead`).
//!
//! The files are parsed by hand rather than with the `procfs` crate: they are simple
//! whitespace-separated text, and what perflab needs is exactly what procfs leaves to the
//! caller — matching /proc/net/snmp and /proc/net/netstat by field name, the 14/18/20
//! field variants of /proc/diskstats with sysstat's formulas, NFS's rpc files and
//! pool_stats, CLOSE_WAIT owners, a process tree's CPU across exits — and the parsers must
//! run on committed text fixtures, which plain `fn(&str)` functions make trivial. Each
//! module doc says what its files look like and how they changed across kernels.
//!
//! # Use
//!
//! ```no_run
//! use std::time::Duration;
//! use perflab_telemetry::{Monitor, MonitorSpec, Probe};
//!
//! let probes = Probe::parse_list(&["cpu", "sched", "disk", "net", "sockets", "process"])?;
//! let mut spec = MonitorSpec::new(Duration::from_secs(1), probes);
//! spec.pid = Some(4242); // the service under test
//! let handle = Monitor::start(spec)?;
//! // ... run the workload ...
//! let rec = handle.stop();
//! for m in &rec.summaries {
//!     println!("{} = {} {} ({} is better)", m.name, m.value, m.unit, m.better.as_str());
//! }
//! # Ok::<(), perflab_telemetry::TelemetryError>(())
//! ```
//!
//! # Series names
//!
//! Every series is `PROBE.FIGURE` (with a device, interface or CPU in the middle where
//! there is one); the unit is stored with it. Points are taken at the end of each
//! interval; rates are over that interval.
//!
//! | probe | series | unit |
//! |---|---|---|
//! | cpu | `cpu.{user,nice,system,idle,iowait,irq,softirq,steal}_pct`; per CPU `cpu.cpuN.*_pct` | % |
//! | sched | `sched.ctxt_per_s`, `sched.intr_per_s` | 1/s |
//! | sched | `sched.procs_running`, `sched.procs_blocked` (vmstat r, b), `sched.loadavg_{1,5,15}` | count |
//! | memory | `memory.{free,available,cached,buffers,dirty,writeback,swap_used}_kb` | kB |
//! | memory | `memory.swap_{in,out}_pages_per_s`; `memory.page_{in,out}_kb_per_s` | pages/s; kB/s |
//! | disk | `disk.DEV.{r_s,w_s,d_s,f_s,rrqm_s,wrqm_s}` | 1/s |
//! | disk | `disk.DEV.{rkb_s,wkb_s}`; `disk.DEV.areq_sz` | kB/s; kB |
//! | disk | `disk.DEV.{await,r_await,w_await,f_await}`; `disk.DEV.aqu_sz`; `disk.DEV.{util,rrqm_pct,wrqm_pct}` | ms; count; % |
//! | net | `net.{in_segs,out_segs,retrans_segs,active_opens,passive_opens,estab_resets,out_rsts}_per_s` | 1/s |
//! | net | `net.{listen_overflows,listen_drops,backlog_drops,reasm_fails,udp_rcvbuf_errors}_per_s` | 1/s |
//! | net | `net.retrans_pct`; `net.softnet_{dropped,time_squeeze}_per_s` | %; 1/s |
//! | net | `net.dev.IFACE.{rx,tx}_{bytes,packets,drop}_per_s` | B/s, 1/s |
//! | sockets | `sockets.{established,syn_recv,time_wait,close_wait,fin_wait2,last_ack,listen}` | count |
//! | sockets | `sockets.process_close_wait` (held by the followed process tree) | count |
//! | nfs | `nfs.client.{calls,retrans,authrefresh}_per_s`, `nfs.client.retrans_pct` | 1/s, % |
//! | nfs | `nfs.server.{calls,badcalls,packets_arrived,sockets_enqueued,threads_woken,threads_timedout}_per_s`, `nfs.server.enqueued_pct`, `nfs.server.threads` | 1/s, %, count |
//! | pressure | `pressure.cpu.some_pct`, `pressure.memory.{some,full}_pct`, `pressure.io.{some,full}_pct` (share of the interval stalled, from PSI's `total` counters) | % |
//! | process | `process.cpu_pct` (% of one core), `process.{cpu,user,sys}_s` (cumulative) | %, s |
//! | process | `process.{rss_kb,threads,fds,procs}`, `process.{vol,invol}_ctxt_per_s` | kB, count, 1/s |
//! | process | `process.run_wait_pct` (time its threads were runnable but waited for a CPU, % of one core: run delay from schedstat) | % |
//!
//! A figure the running kernel does not have (an snmp counter of a newer kernel, NFS on
//! a host without it) has no series; [`Recording::unavailable`] says which files were
//! missing.
//!
//! # Summary metrics
//!
//! [`MonitorHandle::stop`] also returns one value per figure and trial, named like the
//! series, ready to be stored as metrics (each with its unit and whether higher or lower
//! is better):
//!
//! - rates and percentages derived from counters (`cpu.softirq_pct`,
//!   `sched.ctxt_per_s`, `disk.sda.await`, `net.retrans_pct`, ...) are computed over the
//!   whole trial from the first and the last snapshot — exactly what `iostat -x` or
//!   `sar` would print with the trial as their interval, ratios included;
//! - levels (`sched.procs_running`, `sockets.close_wait`, `memory.dirty_kb`,
//!   `process.rss_kb`, ...) are time-weighted means of the points;
//! - `process.{cpu,user,sys}_s` are the CPU seconds the followed process and its
//!   descendants used during the trial (exited children included, see [`process`]);
//!   `process.cpu_pct` is the same as a mean share of one core;
//! - `NAME_max` is the highest interval value, for the figures where the peak matters:
//!   `disk.DEV.{aqu_sz,await,util}_max`, `sched.{ctxt_per_s,procs_running,procs_blocked}_max`,
//!   `sockets.{established,syn_recv,time_wait,close_wait,process_close_wait}_max`,
//!   `memory.{dirty,writeback,swap_used}_kb_max`, `process.{cpu_pct,rss_kb,threads,fds,procs}_max`,
//!   `nfs.client.retrans_pct_max`;
//! - trial totals of rare events: `net.{retrans_segs,estab_resets,listen_overflows,
//!   listen_drops,backlog_drops,reasm_fails}` (count);
//! - `cpu.busiest_softirq_pct` and `cpu.busiest_busy_pct`: the highest per-CPU softirq
//!   and busy (100 − idle − iowait) shares over the trial — softirq load often sits on
//!   one CPU while the average looks harmless.
//!
//! Per-CPU figures, the 5- and 15-minute load averages, discard/flush figures and
//! page-cache levels are kept as series only.

pub mod cgroup_cpu;
pub mod counter;
pub mod cpu;
pub mod disk;
pub mod doctor;
pub mod error;
pub mod memory;
pub mod monitor;
pub mod net;
pub mod nfs;
pub mod perfcount;
pub mod pressure;
pub mod probe;
pub mod process;
pub mod rundelay;
pub mod sample;
pub mod sampler;
pub mod snapshot;
pub mod sock_diag;
pub mod sockets;

pub use disk::DiskFilter;
pub use error::{ParseError, TelemetryError};
pub use monitor::{Monitor, MonitorHandle, MonitorSpec, Recording, Series, SummaryMetric};
pub use probe::Probe;
pub use sample::{Better, Sample};
pub use sampler::{parse_interval, Sampler, SamplerSpec, MIN_INTERVAL};
pub use snapshot::{Notes, Snapshot};
