//! JIT frames: Java and Node code compiled at run time lives in anonymous memory that
//! no binary describes, so perf names it `[unknown]` unless the runtime writes a *perf
//! map* (`/tmp/perf-PID.map`: one `START SIZE NAME` line per compiled method), which
//! `perf script` reads by itself when the file is there at report time.
//!
//! What this module does around a recording (`ProfileSpec::jit`, on by default):
//! - a command perflab starts under perf gets, through its environment so that any
//!   launcher passes them on, [`JAVA_FLAGS`] appended to `JAVA_TOOL_OPTIONS` (frame
//!   pointers through compiled code, and the map written at JVM exit, which comes
//!   before perflab reduces: the command has ended by then, or perf's SIGTERM ended
//!   it) and [`NODE_FLAGS`] appended to `NODE_OPTIONS` (Node writes as it compiles);
//! - a running JVM profiled by pid is asked for its map with `jcmd PID
//!   Compiler.perfmap` once perf has stopped, while it is still alive; a JVM whose
//!   command line and environment lack `-XX:+PreserveFramePointer` is said to have
//!   shallow stacks ([`JitOutcome::note`]), never an error;
//! - a workload that starts a runtime itself (the SciMark driver) adds
//!   [`java_args`]/[`node_args`] and says so with [`started`], so that its map counts as
//!   perflab's.
//!
//! After the report is read, the maps perflab caused — those of processes it started
//! under perf, registered with [`started`], or dumped with jcmd — are *moved* into the
//! profile's directory beside perf.data (maps perflab did not cause are copied, up to
//! 256 MiB, never touched): /tmp does not fill up with maps of dead processes, and a
//! later `perflab profile report DIR` still names the frames, through [`resolve`] (perf
//! itself only ever looks in /tmp). A map is claimed only if it was written during the recording,
//! so a stale file of an earlier process with the same pid is left alone.
//!
//! Perf-map names are made readable ([`pretty`]): `void Scimark.sorExecute(int, ...)`
//! becomes `Scimark.sorExecute`, Node's `JS:*hotLoop /x/hot.js:1:17` becomes
//! `hotLoop (hot.js:1)`. The image of JIT code stays the map (`perf-PID.map`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::script::Sample;

/// The JVM flags perflab adds: frame pointers through JIT code, and the perf map at exit.
pub const JAVA_FLAGS: &str =
    "-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit";
/// The Node flag perflab adds: a perf map written as functions are compiled.
pub const NODE_FLAGS: &str = "--perf-basic-prof";

/// How long `jcmd` may take to dump a running JVM's map (it is a JVM itself).
const JCMD_LIMIT: Duration = Duration::from_secs(20);
/// A map of someone else's process larger than this is not copied (a long-running Node
/// appends to its map forever); perf still reads it in /tmp.
const COPY_LIMIT: u64 = 256 << 20;
/// At most this many registered processes are remembered (a long run that registers
/// processes no profile claims does not grow without bound).
const REGISTRY_CAP: usize = 4096;

/// A runtime whose JIT code perflab names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runtime {
    Java,
    Node,
}

/// What perflab did for JIT frames in one profile (`profile.json`'s `jit`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JitInfo {
    /// The flags given to JVMs perflab started (None: it started none with flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub java: Option<String>,
    /// The flags given to Node processes perflab started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The perf maps kept beside perf.data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<PathBuf>,
}

impl JitInfo {
    /// The report header's line: `jit: java -XX:+PreserveFramePointer ... · node
    /// --perf-basic-prof · 1 perf map kept` (None: no flags given, no map kept).
    pub fn header(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(f) = &self.java {
            parts.push(format!("java {f}"));
        }
        if let Some(f) = &self.node {
            parts.push(format!("node {f}"));
        }
        match self.maps.len() {
            0 => {}
            1 => parts.push("1 perf map kept".into()),
            n => parts.push(format!("{n} perf maps kept")),
        }
        (!parts.is_empty()).then(|| format!("jit: {}", parts.join(" · ")))
    }
}

/// The flags given to a command started under perf: both runtimes'.
pub fn command_flags() -> JitInfo {
    JitInfo {
        java: Some(JAVA_FLAGS.into()),
        node: Some(NODE_FLAGS.into()),
        maps: Vec::new(),
    }
}

/// The JVM flags as arguments (for a driver that starts `java` itself).
pub fn java_args() -> Vec<String> {
    JAVA_FLAGS.split_whitespace().map(String::from).collect()
}

/// The Node flags as arguments (for a driver that starts `node` itself).
pub fn node_args() -> Vec<String> {
    NODE_FLAGS.split_whitespace().map(String::from).collect()
}

/// `current` with each of `flags`' words that it lacks appended (what the user set is
/// kept, and comes first; a JVM flag the user turned off, `-XX:-PreserveFramePointer`,
/// stays off).
pub fn appended(current: Option<&str>, flags: &str) -> String {
    let mut out = current.unwrap_or("").trim().to_string();
    for f in flags.split_whitespace() {
        let off = f.strip_prefix("-XX:+").map(|name| format!("-XX:-{name}"));
        let has = |w: &str| w == f || off.as_deref() == Some(w);
        if !out.split_whitespace().any(has) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(f);
        }
    }
    out
}

/// Adds the flags to the environment of a command perf will start:
/// `JAVA_TOOL_OPTIONS` and `NODE_OPTIONS`, appended to what the command would have.
pub fn inject_env(cmd: &mut Command) {
    for (var, flags) in [
        ("JAVA_TOOL_OPTIONS", JAVA_FLAGS),
        ("NODE_OPTIONS", NODE_FLAGS),
    ] {
        // A value set on the command wins over the inherited one (as at spawn).
        let set = cmd
            .get_envs()
            .find(|(k, _)| *k == var)
            .map(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()));
        let current = match set {
            Some(v) => v,
            None => std::env::var(var).ok(),
        };
        cmd.env(var, appended(current.as_deref(), flags));
    }
}

fn registry() -> &'static Mutex<BTreeMap<i32, Runtime>> {
    static R: OnceLock<Mutex<BTreeMap<i32, Runtime>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// Says that this process started `pid` with the flags of `runtime` (a workload that
/// starts a runtime itself): the profile that records it claims its map.
pub fn started(pid: i32, runtime: Runtime) {
    if let Ok(mut r) = registry().lock() {
        if r.len() >= REGISTRY_CAP {
            if let Some(&oldest) = r.keys().next() {
                r.remove(&oldest);
            }
        }
        r.insert(pid, runtime);
    }
}

/// The registered processes among `pids`, taken out of the registry.
fn take_started(pids: &BTreeSet<i32>) -> BTreeMap<i32, Runtime> {
    let Ok(mut r) = registry().lock() else {
        return BTreeMap::new();
    };
    pids.iter()
        .filter_map(|p| r.remove(p).map(|rt| (*p, rt)))
        .collect()
}

/// `/tmp/perf-PID.map`, where perf looks.
pub fn map_path(pid: i32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// The pid of a perf map's file name (`perf-1234.map`), if it is one.
fn map_pid(name: &str) -> Option<i32> {
    name.strip_prefix("perf-")?
        .strip_suffix(".map")?
        .parse()
        .ok()
}

/// What the JIT step of one recording found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JitOutcome {
    pub info: JitInfo,
    /// Something the user should know (a JVM without frame pointers, a map that
    /// could not be had).
    pub note: Option<String>,
}

/// Before `perf script`, while a JVM profiled by pid still runs: asks it for its map
/// (`jcmd PID Compiler.perfmap`). Returns whether perflab wrote the map (it did not
/// exist before) and what the user should know.
pub fn dump_running(pid: i32) -> (bool, Option<String>) {
    let Some(rt) = runtime_of(pid) else {
        return (false, None);
    };
    let existed = map_path(pid).exists();
    match rt {
        Runtime::Node if existed => (false, None),
        Runtime::Node => (
            false,
            Some(format!(
                "node {pid} runs without {NODE_FLAGS}: its JavaScript frames are unnamed \
                 (start it with NODE_OPTIONS={NODE_FLAGS}, or profile it as `-- node ...`)"
            )),
        ),
        Runtime::Java => {
            let shallow = (!has_frame_pointers(pid)).then(|| {
                format!(
                    "JVM {pid} runs without -XX:+PreserveFramePointer: stacks through Java \
                     code are shallow (start it with JAVA_TOOL_OPTIONS=\"{JAVA_FLAGS}\", or \
                     profile it as `-- java ...`)"
                )
            });
            match jcmd_perfmap(pid) {
                Ok(()) => (!existed, shallow),
                Err(why) => {
                    let said = format!("JVM {pid}: no perf map ({why}): Java frames are unnamed");
                    (false, Some(join_notes(shallow, said)))
                }
            }
        }
    }
}

fn join_notes(a: Option<String>, b: String) -> String {
    match a {
        Some(a) => format!("{a}; {b}"),
        None => b,
    }
}

/// The runtime a running process is: a JVM (libjvm mapped) or Node (`node` executable).
fn runtime_of(pid: i32) -> Option<Runtime> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    if maps.contains("/libjvm.so") {
        return Some(Runtime::Java);
    }
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let name = exe.file_name()?.to_string_lossy().into_owned();
    (name == "node" || name == "nodejs").then_some(Runtime::Node)
}

/// Whether a JVM was started with frame pointers through JIT code: its command line
/// or its options variables name `-XX:+PreserveFramePointer`.
fn has_frame_pointers(pid: i32) -> bool {
    let read = |f: &str| std::fs::read(format!("/proc/{pid}/{f}")).unwrap_or_default();
    let flag = b"-XX:+PreserveFramePointer";
    let has = |bytes: &[u8]| bytes.windows(flag.len()).any(|w| w == flag);
    has(&read("cmdline")) || has(&read("environ"))
}

/// `jcmd PID Compiler.perfmap`, bounded in time.
fn jcmd_perfmap(pid: i32) -> Result<(), String> {
    let Some(jcmd) = crate::perf::which("jcmd") else {
        return Err("jcmd is not on the PATH: apt-get install default-jdk-headless".into());
    };
    let mut child = Command::new(jcmd)
        .args([&pid.to_string(), "Compiler.perfmap"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run jcmd: {e}"))?;
    let end = std::time::Instant::now() + JCMD_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return Ok(()),
            Ok(Some(st)) => return Err(format!("jcmd ended with {st}")),
            Ok(None) if std::time::Instant::now() >= end => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("jcmd took over {} s", JCMD_LIMIT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for jcmd: {e}")),
        }
    }
}

/// Which processes' maps a recording may claim.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Every process of the recording was started by perflab (a command under perf).
    pub all_ours: bool,
    /// A map perflab wrote with jcmd.
    pub dumped: Option<i32>,
    /// When the recording started: older maps are someone else's.
    pub since: SystemTime,
}

/// After the report is read: moves the maps perflab caused into `dir` and copies the
/// other maps of the recorded processes there (so `perflab profile report DIR` names the frames).
pub fn keep_maps(samples: &[Sample], claim: &Claim, dir: &Path) -> JitInfo {
    let pids: BTreeSet<i32> = samples.iter().map(|s| s.pid).filter(|p| *p > 0).collect();
    let registered = take_started(&pids);
    let mut info = JitInfo::default();
    if claim.all_ours {
        // The flags went to every process of the command through its environment;
        // only a runtime that ran is said to have had them.
        let ran = runtimes_seen(samples);
        let given = command_flags();
        info.java = given.java.filter(|_| ran.contains(&Runtime::Java));
        info.node = given.node.filter(|_| ran.contains(&Runtime::Node));
    }
    for rt in registered.values() {
        match rt {
            Runtime::Java => info.java = Some(JAVA_FLAGS.into()),
            Runtime::Node => info.node = Some(NODE_FLAGS.into()),
        }
    }
    for pid in pids {
        let from = map_path(pid);
        let Ok(meta) = std::fs::metadata(&from) else {
            continue;
        };
        let fresh = meta.modified().is_ok_and(|m| m >= claim.since);
        let ours =
            fresh && (claim.all_ours || claim.dumped == Some(pid) || registered.contains_key(&pid));
        let to = dir.join(format!("perf-{pid}.map"));
        let kept = if ours {
            std::fs::rename(&from, &to)
                .or_else(|_| std::fs::copy(&from, &to).and_then(|_| std::fs::remove_file(&from)))
        } else if meta.len() <= COPY_LIMIT {
            std::fs::copy(&from, &to).map(|_| ())
        } else {
            continue;
        };
        if kept.is_ok() {
            info.maps.push(to);
        }
    }
    info
}

/// The runtimes whose code the samples show: a JVM (its `libjvm.so`, or a thread named
/// `java`) or Node (its binary `node`/`nodejs`, or a thread named `node`).
fn runtimes_seen(samples: &[Sample]) -> BTreeSet<Runtime> {
    let mut seen = BTreeSet::new();
    for s in samples {
        let image = |f: &crate::script::Frame| {
            let d = f.dso.as_str();
            d.rsplit('/').next().unwrap_or(d).to_string()
        };
        if s.comm == "java" || s.frames.iter().any(|f| image(f) == "libjvm.so") {
            seen.insert(Runtime::Java);
        }
        let node = |n: &str| n == "node" || n == "nodejs";
        if node(&s.comm) || s.frames.iter().any(|f| node(&image(f))) {
            seen.insert(Runtime::Node);
        }
    }
    seen
}

/// The JIT step of one recording, held by [`crate::Running`]: what it targets and
/// since when, so that it can dump a running JVM's map before the report is read and
/// keep the maps afterwards.
#[derive(Debug, Clone)]
pub struct JitStep {
    /// The process profiled by pid, if any.
    pid: Option<i32>,
    /// A command perflab started under perf (every recorded process is its own).
    command: bool,
    since: SystemTime,
}

impl JitStep {
    /// The step of a recording of `target` that starts now (None: `jit` is off).
    pub fn new(jit: bool, target: &crate::Target) -> Option<JitStep> {
        jit.then(|| JitStep {
            pid: match target {
                crate::Target::Pid(p) => Some(*p),
                _ => None,
            },
            command: matches!(target, crate::Target::Command(_)),
            // File times are coarser than the clock on some file systems.
            since: SystemTime::now() - Duration::from_secs(1),
        })
    }

    /// Once perf has stopped, before the report is read: a running JVM profiled by
    /// pid writes its map (see [`dump_running`]).
    pub fn before_report(&self) -> (Claim, Option<String>) {
        let (dumped, note) = match self.pid {
            Some(pid) => {
                let (wrote, note) = dump_running(pid);
                (wrote.then_some(pid), note)
            }
            None => (None, None),
        };
        let claim = Claim {
            all_ours: self.command,
            dumped,
            since: self.since,
        };
        (claim, note)
    }
}

/// One perf map, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct PerfMap {
    /// (start, end, line number, name)
    entries: Vec<(u64, u64, usize, String)>,
}

impl PerfMap {
    /// Reads `START SIZE NAME` lines (hex, with or without `0x`); others are skipped.
    pub fn parse(text: &str) -> PerfMap {
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let mut entries: Vec<(u64, u64, usize, String)> = text
            .lines()
            .enumerate()
            .filter_map(|(i, line)| {
                let mut it = line.splitn(3, ' ');
                let start = hex(it.next()?)?;
                let size = hex(it.next()?)?;
                let name = it.next()?.trim();
                (!name.is_empty() && size > 0)
                    .then(|| (start, start.saturating_add(size), i, name.to_string()))
            })
            .collect();
        entries.sort();
        PerfMap { entries }
    }

    /// The name of the code at `ip`: where entries overlap (a code cache reused after
    /// a method was unloaded), the one written last.
    pub fn lookup(&self, ip: u64) -> Option<&str> {
        let upto = self.entries.partition_point(|e| e.0 <= ip);
        self.entries[..upto]
            .iter()
            .rev()
            .take(64)
            .filter(|e| ip < e.1)
            .max_by_key(|e| e.2)
            .map(|e| e.3.as_str())
    }
}

/// Names the frames perf left unnamed in JIT code from the maps kept in `dir` (a
/// recording read again by `perflab profile report`), readably. Returns how many frames it named.
pub fn resolve(samples: &mut [Sample], dir: &Path) -> usize {
    let mut maps: BTreeMap<i32, Option<PerfMap>> = BTreeMap::new();
    let mut named = 0;
    for f in samples.iter_mut().flat_map(|s| s.frames.iter_mut()) {
        if f.sym.is_some() {
            continue;
        }
        let Some(pid) = Path::new(&f.dso)
            .file_name()
            .and_then(|n| map_pid(&n.to_string_lossy()))
        else {
            continue;
        };
        let map = maps.entry(pid).or_insert_with(|| {
            std::fs::read_to_string(dir.join(format!("perf-{pid}.map")))
                .ok()
                .map(|t| PerfMap::parse(&t))
        });
        if let Some(name) = map.as_ref().and_then(|m| m.lookup(f.ip)) {
            f.sym = Some(pretty(name));
            f.offset = None;
            named += 1;
        }
    }
    named
}

/// Whether a frame's image is a perf map (JIT code).
pub fn is_map(dso: &str) -> bool {
    Path::new(dso)
        .file_name()
        .is_some_and(|n| map_pid(&n.to_string_lossy()).is_some())
}

/// Makes the names in JIT images readable (see the module doc).
pub fn prettify(samples: &mut [Sample]) {
    for f in samples.iter_mut().flat_map(|s| s.frames.iter_mut()) {
        if !is_map(&f.dso) {
            continue;
        }
        if let Some(s) = f.sym.as_deref().map(pretty) {
            f.sym = Some(s);
        }
    }
}

/// A perf-map symbol made readable: Java's `RET Class.method(ARGS)` → `Class.method`,
/// Node's `JS:*name /dir/file.js:L:C` → `name (file.js:L)`; others as they are.
pub fn pretty(sym: &str) -> String {
    for prefix in ["JS:", "LazyCompile:", "Function:", "Script:", "Eval:"] {
        if let Some(rest) = sym.strip_prefix(prefix) {
            return pretty_js(rest);
        }
    }
    // Java: "void Scimark.sorExecute(int, double[][])"; also "StubRoutines (2)".
    if let Some((head, _)) = sym.split_once('(') {
        if sym.ends_with(')') {
            if let Some(name) = head.split_whitespace().last() {
                return name.to_string();
            }
        }
    }
    sym.to_string()
}

fn pretty_js(rest: &str) -> String {
    let rest = rest.trim_start_matches(['*', '~', '^', '+', '-']);
    let (name, place) = match rest.split_once(' ') {
        Some((n, p)) => (n.trim(), p.trim()),
        None => (rest.trim(), ""),
    };
    let name = if name.is_empty() { "(anonymous)" } else { name };
    if place.is_empty() {
        return name.to_string();
    }
    // "/dir/file.js:12:5" → "file.js:12"
    let file = place.rsplit('/').next().unwrap_or(place);
    let mut parts = file.rsplitn(3, ':').collect::<Vec<_>>();
    parts.reverse();
    let short = match parts.as_slice() {
        [f, line, col] if col.parse::<u32>().is_ok() => format!("{f}:{line}"),
        _ => file.to_string(),
    };
    format!("{name} ({short})")
}

#[cfg(test)]
mod tests;
