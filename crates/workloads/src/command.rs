//! The `command` workload: run a program (with or without a shell), measure its whole
//! process tree, and pull named metrics out of its output.
//!
//! `counters = [...]` adds `perf_event_open` counts over the same tree: the root opens
//! them on itself as the last step before `exec` (`prepare_child`), so they follow
//! everything it forks and nothing of perflab's set-up is counted; they are read once
//! the tree has ended (perflab_telemetry's `perfcount` holds the how and why).
//!
//! With an attach hook in the trial's context (`[profile] target = "workload"`), the
//! root is started held before its `exec` while the hook sees its pid (crate::hold);
//! the counters are opened after the hold, so the wait is not counted.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use perflab_telemetry::perfcount::{Armed, ChildSide, Event, Reading};

use crate::hold::{hold_raw, HeldFds, Hold};
use crate::metrics::MetricSpec;
use crate::tree::{self, TreeGroup};
use crate::{ArtifactData, Measurement, MetricValue, TrialContext, Workload, WorkloadError};

/// What a failed command's message says to keep measuring it; a command line that
/// has a flag for it says its flag instead (`perflab bench -i`).
pub const FAILURE_HINT: &str = "(set allow_failure = true if that is expected)";

/// Most output kept per stream; beyond it the rest is read and dropped.
const OUTPUT_CAP: usize = 32 << 20;
/// How often the tree is checked (timeouts, interrupts, /proc samples).
const TICK: Duration = Duration::from_millis(5);

/// What to do with processes still running when the command itself has exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Leftovers {
    /// Wait for them (bounded by the trial timeout): they are part of the work.
    #[default]
    Wait,
    /// Kill them: they are not part of the work.
    Kill,
}

/// A rendered command workload.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CommandWorkload {
    /// Program and arguments (for `shell = true`, `["sh", "-c", TEXT]`).
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub allow_failure: bool,
    pub metrics: Vec<MetricSpec>,
    pub leftovers: Leftovers,
    /// Pids that are not part of the tree even if re-parented to us (services).
    pub exclude_pids: Vec<i32>,
    /// Events counted over the whole tree (`counters = [...]`).
    pub counters: Vec<Event>,
}

/// What came back from running a process tree.
#[derive(Debug)]
pub struct TreeRun {
    pub status: Option<std::process::ExitStatus>,
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub peak_rss_bytes: u64,
    /// Largest resident set of any single process of the tree (`ru_maxrss`).
    pub max_process_rss_bytes: u64,
    pub method: tree::Method,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
    pub interrupted: bool,
    /// The tree's counters, read once it ended (when any were asked for).
    pub counters: Option<Reading>,
    /// The pid the root process had.
    pub root_pid: i32,
}

impl TreeRun {
    /// The four whole-tree metrics every command trial records.
    pub fn metrics(&self) -> Vec<MetricValue> {
        vec![
            MetricValue::new("wall_s", "s", self.wall_s, "lower"),
            MetricValue::new("user_s", "s", self.user_s, "lower"),
            MetricValue::new("sys_s", "s", self.sys_s, "lower"),
            MetricValue::new("peak_rss_bytes", "B", self.peak_rss_bytes as f64, "lower"),
            MetricValue::new(
                "max_process_rss_bytes",
                "B",
                self.max_process_rss_bytes as f64,
                "lower",
            ),
        ]
    }

    /// The last `n` lines of stderr (or stdout when stderr is empty).
    pub fn tail(&self, n: usize) -> String {
        let src = if self.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
            &self.stderr
        } else {
            &self.stdout
        };
        last_lines(&String::from_utf8_lossy(src), n)
    }
}

/// Resolves a program name through PATH (a name with a `/` is taken as a path).
pub fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// The last `n` lines of a text.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `cmd` as the root of a measured tree, honouring the context's pinning,
/// timeout and interrupt flag.
pub fn run_tree(
    cmd: Command,
    ctx: &TrialContext,
    leftovers: Leftovers,
    exclude: &[i32],
) -> Result<TreeRun, WorkloadError> {
    run_tree_counted(cmd, ctx, leftovers, exclude, &[])
}

/// [`run_tree`], also counting `counters` over the whole tree: opened by the root
/// just before its `exec`, inherited by everything it forks (perflab_telemetry's
/// `perfcount`).
pub fn run_tree_counted(
    mut cmd: Command,
    ctx: &TrialContext,
    leftovers: Leftovers,
    exclude: &[i32],
    counters: &[Event],
) -> Result<TreeRun, WorkloadError> {
    let armed = (!counters.is_empty())
        .then(|| Armed::new(counters))
        .transpose()
        .map_err(|e| WorkloadError::Setup(format!("cannot set up counters: {e}")))?;
    let group = TreeGroup::create();
    // Joining a cgroup (v1 above all) can wait for an RCU grace period, 5-20 ms, inside
    // the timed window: the child measures how long its join took and the wall time
    // leaves it out, so a 100 ms command does not read as 108 ms, give or take a tick.
    let join_cost = JoinCost::new();
    let side = armed.as_ref().map(Armed::child_side);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let cannot = |e: std::io::Error| WorkloadError::Setup(format!("cannot start {program:?}: {e}"));
    // With an attach hook, the root is held before its exec while the hook runs, and
    // its wall time starts when it is let go (the join is before that).
    let hold = match &ctx.attach {
        Some(hook) => Some((Hold::new().map_err(cannot)?, hook)),
        None => None,
    };
    let held = hold.as_ref().map(|h| h.0.child_fds());
    prepare_child(&mut cmd, &group, ctx, &join_cost, held, side);
    let (mut child, start) = match hold {
        Some((hold, hook)) => hold.spawn(cmd, hook).map_err(cannot)?,
        None => {
            let start = Instant::now();
            (cmd.spawn().map_err(cannot)?, start)
        }
    };
    let counting = armed.map(Armed::collect);
    let root = child.id() as i32;
    let join_s = join_cost.read_s();
    let join_s = if ctx.attach.is_some() { 0.0 } else { join_s };
    let out_reader = reader(child.stdout.take());
    let err_reader = reader(child.stderr.take());
    let waited = wait_in_thread(root);
    let mut watch = Watch::new(root, exclude, group.needs_rss_sampling(), start);
    loop {
        watch.tick(&waited);
        watch.enforce_limits(ctx, &group);
        let live_others = watch.scan(&group, leftovers);
        if watch.root_done.is_some() {
            if leftovers == Leftovers::Kill && live_others > 0 {
                group.kill_all();
            }
            if live_others == 0 {
                break;
            }
            watch.end = Instant::now();
        }
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    watch.take_group_usage(&group);
    let counters = counting.map(|c| c.read());
    let method = group.method();
    drop(group);
    let status = watch
        .root_done
        .and_then(|(st, _)| (st >= 0).then(|| std::os::unix::process::ExitStatusExt::from_raw(st)));
    // `child` was reaped by the waiter thread; forget it without waiting again.
    std::mem::forget(child);
    Ok(TreeRun {
        status,
        wall_s: ((watch.end - start).as_secs_f64() - join_s).max(0.0),
        user_s: watch.user,
        sys_s: watch.sys,
        peak_rss_bytes: watch.peak_rss,
        max_process_rss_bytes: watch.max_proc,
        method,
        stdout,
        stderr,
        timed_out: watch.timed_out,
        interrupted: watch.interrupted,
        counters,
        root_pid: root,
    })
}

/// Pipes the output and, in the child before `exec`, gives it its own process group,
/// joins the measured group (timing the join), pins it, waits while it is held and,
/// last, opens its counters.
fn prepare_child(
    cmd: &mut Command,
    group: &TreeGroup,
    ctx: &TrialContext,
    join_cost: &JoinCost,
    held: Option<HeldFds>,
    counters: Option<ChildSide>,
) {
    let fds = group.join_fds();
    let cpus = ctx.cpus.as_ref().map(|c| c.to_raw());
    let join_fd = join_cost.write_fd();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure only calls async-signal-safe functions (setpgid, write,
    // getpid, clock_gettime, sched_setaffinity; close and read while held;
    // perf_event_open, sendmsg) on data
    // prepared before fork.
    unsafe {
        cmd.pre_exec(move || {
            // Own process group: a timeout or interrupt kills the whole group at once.
            libc::setpgid(0, 0);
            let t0 = monotonic_ns();
            tree::join_raw(&fds)?;
            if join_fd >= 0 {
                let cost = monotonic_ns().saturating_sub(t0).to_ne_bytes();
                libc::write(join_fd, cost.as_ptr().cast(), cost.len());
            }
            if let Some(set) = &cpus {
                crate::cpuset::pin_raw(set)?;
            }
            if let Some(fds) = &held {
                hold_raw(fds)?;
            }
            // Last: the counters start at exec, whatever came before.
            if let Some(c) = &counters {
                c.open()?;
            }
            Ok(())
        });
    }
}

/// What the root's `wait4` gave: return code, status, usage, and when.
type Waited = (i32, i32, libc::rusage, Instant);

/// Waits for the root in a thread of its own, so the watch loop can go on ticking.
fn wait_in_thread(root: i32) -> mpsc::Receiver<Waited> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: zeroed rusage is valid; wait4 fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers; root is our child.
        let rc = unsafe { libc::wait4(root, &mut status, 0, &mut ru) };
        let _ = tx.send((rc, status, ru, Instant::now()));
    });
    rx
}

/// The watch over a running tree: what it has used so far and how it ended.
struct Watch {
    root: i32,
    me: i32,
    exclude: HashSet<i32>,
    /// The group cannot report peak memory: sample it from /proc.
    sampling: bool,
    start: Instant,
    end: Instant,
    user: f64,
    sys: f64,
    peak_rss: u64,
    max_proc: u64,
    /// The root's wait status (-1 when unknown) and when it exited.
    root_done: Option<(i32, Instant)>,
    timed_out: bool,
    interrupted: bool,
    killed: bool,
}

impl Watch {
    fn new(root: i32, exclude: &[i32], sampling: bool, start: Instant) -> Watch {
        Watch {
            root,
            me: std::process::id() as i32,
            exclude: exclude.iter().copied().collect(),
            sampling,
            start,
            end: start,
            user: 0.0,
            sys: 0.0,
            peak_rss: 0,
            max_proc: 0,
            root_done: None,
            timed_out: false,
            interrupted: false,
            killed: false,
        }
    }

    /// Waits one tick, for the root's exit while it runs.
    fn tick(&mut self, waited: &mpsc::Receiver<Waited>) {
        if self.root_done.is_some() {
            std::thread::sleep(TICK);
            return;
        }
        if let Ok((rc, status, ru, at)) = waited.recv_timeout(TICK) {
            self.add_usage(tree::rusage_parts(&ru));
            self.root_done = Some((if rc == self.root { status } else { -1 }, at));
            self.end = at;
        }
    }

    fn add_usage(&mut self, (u, s, m): (f64, f64, u64)) {
        self.user += u;
        self.sys += s;
        self.max_proc = self.max_proc.max(m);
    }

    /// Kills the whole tree, once, on an interrupt or past the timeout.
    fn enforce_limits(&mut self, ctx: &TrialContext, group: &TreeGroup) {
        if ctx.interrupted.load(Ordering::SeqCst) && !self.killed {
            self.interrupted = true;
            self.kill_all(group);
        }
        if let Some(limit) = ctx.timeout {
            if self.start.elapsed() > limit && !self.killed {
                self.timed_out = true;
                self.kill_all(group);
            }
        }
    }

    fn kill_all(&mut self, group: &TreeGroup) {
        if !self.killed {
            // SAFETY: negative pid = the root's process group.
            unsafe { libc::kill(-self.root, libc::SIGKILL) };
            group.kill_all();
            self.killed = true;
        }
    }

    /// Looks at the live tree: samples memory, reaps adopted orphans, kills leftovers
    /// when asked. Returns how many processes besides the root still run.
    fn scan(&mut self, group: &TreeGroup, leftovers: Leftovers) -> usize {
        let need_scan = self.sampling || self.root_done.is_some() || !group.has_cpu();
        let mut live_others = 0usize;
        if need_scan {
            let procs = tree::all_processes();
            let members = tree::tree_of(&procs, self.root, self.me, &self.exclude);
            if self.sampling {
                let rss: u64 = members
                    .iter()
                    .filter(|p| !p.zombie)
                    .map(|p| p.rss_bytes)
                    .sum();
                self.peak_rss = self.peak_rss.max(rss);
            }
            for p in &members {
                if p.pid == self.root {
                    continue;
                }
                if p.ppid == self.me && p.zombie {
                    if let Some((_, u, s, m)) = tree::try_reap(p.pid) {
                        self.add_usage((u, s, m));
                    }
                } else if !p.zombie {
                    live_others += 1;
                    if self.root_done.is_some() && (leftovers == Leftovers::Kill || self.killed) {
                        // SAFETY: kill a pid of our own tree.
                        unsafe { libc::kill(p.pid, libc::SIGKILL) };
                    }
                }
            }
        }
        if self.root_done.is_some() && group.has_cpu() {
            live_others = live_others.max(group.pids().len());
        }
        live_others
    }

    /// The group's own accounting, where it has one, wins over the sums of waits.
    fn take_group_usage(&mut self, group: &TreeGroup) {
        if let Some((u, s, p)) = group.usage() {
            self.user = u;
            self.sys = s;
            if let Some(p) = p {
                self.peak_rss = p;
            }
        }
        if group.needs_rss_sampling() {
            self.peak_rss = self.peak_rss.max(self.max_proc);
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (async-signal-safe, for `pre_exec`).
fn monotonic_ns() -> u64 {
    // SAFETY: zeroed timespec is valid; clock_gettime fills it.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A close-on-exec pipe on which the child reports how long joining its group took.
struct JoinCost {
    fds: [i32; 2],
}

impl JoinCost {
    fn new() -> JoinCost {
        let mut fds = [-1; 2];
        // SAFETY: valid pointer to two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            fds = [-1; 2];
        }
        JoinCost { fds }
    }

    fn write_fd(&self) -> i32 {
        self.fds[1]
    }

    /// The child's report in seconds (0 when there is none). Called after `spawn`
    /// returned, that is after the child's `exec`, so the report is already written.
    fn read_s(mut self) -> f64 {
        if self.fds[0] < 0 {
            return 0.0;
        }
        // SAFETY: our own write end; closing it lets read see end-of-file.
        unsafe { libc::close(self.fds[1]) };
        self.fds[1] = -1;
        let mut buf = [0u8; 8];
        // SAFETY: valid buffer of 8 bytes.
        let n = unsafe { libc::read(self.fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n == 8 {
            u64::from_ne_bytes(buf) as f64 / 1e9
        } else {
            0.0
        }
    }
}

impl Drop for JoinCost {
    fn drop(&mut self) {
        for fd in self.fds {
            if fd >= 0 {
                // SAFETY: fds this struct opened.
                unsafe { libc::close(fd) };
            }
        }
    }
}

fn reader<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let Some(mut r) = r else { return out };
        let mut buf = [0u8; 64 * 1024];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out.len() < OUTPUT_CAP {
                        let take = n.min(OUTPUT_CAP - out.len());
                        out.extend_from_slice(&buf[..take]);
                    }
                }
            }
        }
        out
    })
}

/// Describes how a process ended, in words.
pub fn describe_status(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
        _ => "unknown status".to_string(),
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGFPE => "SIGFPE",
        _ => "signal",
    }
}

impl Workload for CommandWorkload {
    fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
        let Some((program, args)) = self.argv.split_first() else {
            return Err(WorkloadError::Setup("empty command".into()));
        };
        let mut cmd = Command::new(program);
        cmd.args(args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        let run = run_tree_counted(cmd, ctx, self.leftovers, &self.exclude_pids, &self.counters)?;
        if run.interrupted {
            return Err(WorkloadError::Interrupted);
        }
        let mut m = Measurement {
            metrics: run.metrics(),
            method: Some(run.method.as_str().to_string()),
            ..Default::default()
        };
        if let Some(r) = &run.counters {
            add_counters(&mut m, r);
        }
        m.artifacts.push(ArtifactData {
            name: "stdout".into(),
            media_type: "text/plain".into(),
            content: tail_bytes(&run.stdout, 64 << 10),
        });
        m.artifacts.push(ArtifactData {
            name: "stderr".into(),
            media_type: "text/plain".into(),
            content: tail_bytes(&run.stderr, 64 << 10),
        });
        let fail = |msg: String, m: Measurement| {
            Err(WorkloadError::Failed {
                message: msg,
                partial: Box::new(m),
            })
        };
        if run.timed_out {
            let limit = ctx.timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
            return fail(
                format!(
                    "timed out after {limit} s (the [experiment] timeout); last output:\n{}",
                    run.tail(20)
                ),
                m,
            );
        }
        let ok = run.status.map(|s| s.success()).unwrap_or(false);
        if !ok && !self.allow_failure {
            let how = run
                .status
                .as_ref()
                .map(describe_status)
                .unwrap_or_else(|| "unknown status".into());
            return fail(
                format!(
                    "command {:?} failed with {how} {FAILURE_HINT}; last output:\n{}",
                    program,
                    run.tail(20)
                ),
                m,
            );
        }
        let stdout = String::from_utf8_lossy(&run.stdout);
        let stderr = String::from_utf8_lossy(&run.stderr);
        for spec in &self.metrics {
            match spec.extract(&stdout, &stderr) {
                Ok(v) => m.metrics.push(v),
                Err(e) => return fail(e, m),
            }
        }
        Ok(m)
    }
}

/// Adds a reading of a trial's counters: its metrics (`counter.*`) and the
/// `counters.json` artifact with each event's detail or missing reason.
pub fn add_counters(m: &mut Measurement, r: &Reading) {
    for (name, unit, value, better) in r.metrics() {
        m.metrics.push(MetricValue::new(&name, unit, value, better));
    }
    m.artifacts.push(counters_artifact(r));
}

/// The `counters.json` artifact of a reading (a `warning` key when counts were
/// multiplexed).
pub fn counters_artifact(r: &Reading) -> ArtifactData {
    let mut json = r.to_json();
    if let Some(w) = r.warning() {
        json["warning"] = w.into();
    }
    ArtifactData {
        name: COUNTERS_ARTIFACT.into(),
        media_type: "application/json".into(),
        content: serde_json::to_vec_pretty(&json).unwrap_or_default(),
    }
}

/// The artifact each counted trial keeps.
pub const COUNTERS_ARTIFACT: &str = "counters.json";

fn tail_bytes(b: &[u8], n: usize) -> Vec<u8> {
    b[b.len().saturating_sub(n)..].to_vec()
}
