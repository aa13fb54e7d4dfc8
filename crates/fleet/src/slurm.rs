//! The Slurm [`Link`] of a distributed load (`perflab http URL --engine slurm --nodes
//! K`): ONE `srun` starts `perflab worker` once per node, and its tasks are the agents.
//!
//! The command is `srun --nodes=K --ntasks-per-node=1 [--partition=P] --exclusive
//! --input=all --label --kill-on-bad-exit=0 --no-kill --immediate=S --job-name=perflab-http
//! PERFLAB worker`:
//!
//! - `--input=all`: srun's stdin is broadcast to every task, so every agent hears
//!   every order. The controller cannot address one task, so the split is broadcast
//!   whole ([`Order::Share`]: the load, the task ids that take part, their weights) and
//!   each task takes its own segment by its `SLURM_PROCID`
//!   ([`crate::agent::segment_of`]). The end of srun's stdin reaches every task as the
//!   end of its own: that is how Ctrl-C stops them all.
//! - `--label`: the tasks' stdout comes back merged on srun's; each line is prefixed
//!   with its task id (`0: `, right-aligned when there are ten tasks or more), which
//!   [`demux`] strips to hand the line to its agent. srun forwards output in messages of
//!   at most 1024 bytes and labels each: a longer line (an agent's report, with its
//!   histogram) comes back cut into labelled pieces, interleaved with other tasks'
//!   lines; [`Lines`] puts each task's pieces back together (a piece of exactly 1024
//!   bytes is continued unless it completes a JSON value; an exact multiple ends with
//!   an empty piece). Their stderr comes back labelled
//!   the same way, and is kept per task for the reason a task was lost. No
//!   `--unbuffered`: that puts the task on a pseudo-terminal (echo, line discipline on
//!   the orders); the agent writes and flushes whole lines, which srun forwards as
//!   they come.
//! - `--kill-on-bad-exit=0` and `--no-kill`: a task that fails, or a node that goes
//!   down, loses that agent only — the others' segments run on, as with ssh. srun
//!   says `srun: error: NODE: task N: Exited with exit code C` for such a task, which
//!   ends that agent's stream at once ([`ended_tasks`]).
//! - `--exclusive`: a load generator owns its node (one sharing its cores measures
//!   itself).
//! - `--immediate=S`: the nodes now, or a clear error within S s (`Requested nodes are
//!   busy`, `Invalid partition name specified`...) instead of waiting in the queue.
//!   Inside an allocation (`salloc`, `sbatch`) srun starts the step in it.
//!
//! A lost task cannot be hung up alone (srun holds one stdin for all): the controller
//! stops listening to it, and it ends with the others when srun's stdin closes. At
//! the end srun's stdin is closed; if srun has not ended within a grace time it gets
//! SIGTERM (it then cancels the step: every task is killed), then SIGKILL.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::agents::{now_ns, Heard, Link, Split};
use crate::wire::Order;

/// How srun is asked for the agents.
#[derive(Debug, Clone)]
pub struct Srun {
    /// The srun to run (found on PATH by [`find_srun`]).
    pub program: PathBuf,
    /// `--nodes`: one agent per node.
    pub nodes: u32,
    pub partition: Option<String>,
    /// The perflab the tasks run: the nodes share a filesystem, so by default this one.
    pub perflab: PathBuf,
    /// `--immediate`: seconds to wait for the nodes.
    pub immediate_s: u32,
}

/// `srun` on PATH, or why not.
pub fn find_srun() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("srun"))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            "srun not found on PATH: the Slurm engine needs Slurm's client commands \
             (Debian: slurm-client)"
                .to_string()
        })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl Srun {
    /// srun's arguments, the program not included.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            format!("--nodes={}", self.nodes),
            "--ntasks-per-node=1".into(),
        ];
        if let Some(p) = &self.partition {
            a.push(format!("--partition={p}"));
        }
        a.extend(
            [
                "--exclusive",
                "--input=all",
                "--label",
                "--kill-on-bad-exit=0",
                "--no-kill",
            ]
            .map(String::from),
        );
        a.push(format!("--immediate={}", self.immediate_s));
        a.push("--job-name=perflab-http".into());
        a.push(self.perflab.display().to_string());
        a.push("worker".into());
        a
    }
}

/// One line of srun's merged output.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// Task `.0` said `.1` (or a piece of it: [`Lines`]).
    Task(usize, &'a [u8]),
    /// srun's own (`srun: error: ...`), or a line without a label.
    Other(&'a [u8]),
}

/// Which task a `--label`led line is from: `N: text`, N right-aligned with spaces.
pub fn demux(line: &[u8]) -> Line<'_> {
    let start = line.iter().position(|b| *b != b' ').unwrap_or(line.len());
    let digits = line[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let (id, rest) = line[start..].split_at(digits);
    match (
        std::str::from_utf8(id).ok().and_then(|i| i.parse().ok()),
        rest,
    ) {
        (Some(n), [b':', b' ', text @ ..]) | (Some(n), [b':', text @ ..]) => Line::Task(n, text),
        _ => Line::Other(line),
    }
}

/// The most srun forwards in one labelled message (Slurm's `SLURM_IO_MAX_MSG_LEN`).
pub const PIECE: usize = 1024;

/// Each task's line being put back together from srun's pieces.
#[derive(Debug, Default)]
pub struct Lines {
    parts: BTreeMap<usize, Vec<u8>>,
}

impl Lines {
    /// Takes a piece of task `task`'s output; its whole line when this piece ends one.
    pub fn push(&mut self, task: usize, piece: &[u8]) -> Option<String> {
        let buf = self.parts.entry(task).or_default();
        buf.extend_from_slice(piece);
        if piece.len() >= PIECE && serde_json::from_slice::<serde::de::IgnoredAny>(buf).is_err() {
            return None; // Cut by srun: the rest comes in the task's next piece.
        }
        Some(String::from_utf8_lossy(&std::mem::take(buf)).into_owned())
    }
}

/// The tasks an srun line says have ended: `srun: error: n2: task 1: Exited with exit
/// code 1`, `... tasks 0-2,4: Killed`.
pub fn ended_tasks(line: &str) -> Vec<usize> {
    let ends = ["Exited with exit code", "Killed", "Terminated", "Aborted"];
    if !line.starts_with("srun:") || !ends.iter().any(|e| line.contains(e)) {
        return Vec::new();
    }
    let Some(at) = line
        .find(": tasks ")
        .map(|i| i + 8)
        .or_else(|| line.find(": task ").map(|i| i + 7))
    else {
        return Vec::new();
    };
    let list = line[at..].split(':').next().unwrap_or("");
    let mut ids = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            if b >= a && b - a < 100_000 {
                ids.extend(a..=b);
            }
        }
    }
    ids
}

/// What srun and each task wrote on stderr.
#[derive(Default)]
struct Errors {
    srun: Vec<String>,
    tasks: Vec<Vec<String>>,
}

/// The agents as the tasks of one srun.
pub struct SlurmLink {
    srun: Srun,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    errors: Arc<Mutex<Errors>>,
    /// Set when srun's stderr has ended (all its last words are in `errors`).
    errors_done: Arc<AtomicBool>,
}

impl SlurmLink {
    pub fn new(srun: Srun) -> SlurmLink {
        SlurmLink {
            srun,
            child: None,
            stdin: None,
            errors: Arc::default(),
            errors_done: Arc::default(),
        }
    }

    fn count(&self) -> usize {
        self.srun.nodes as usize
    }

    fn send(&mut self, o: &Order) -> i128 {
        if let (Ok(mut line), Some(s)) = (serde_json::to_string(o), self.stdin.as_mut()) {
            line.push('\n');
            // A failed write means srun is gone: the end of its stdout says so.
            let _ = s.write_all(line.as_bytes()).and_then(|_| s.flush());
        }
        now_ns()
    }

    /// srun's exit status once it has ended (waiting up to `grace`), and then its
    /// stderr read to the end (waiting up to a second more: a helper srun forked may
    /// hold it a moment longer).
    fn status(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + grace;
        loop {
            match child.try_wait() {
                Ok(Some(s)) => {
                    let end = Instant::now() + Duration::from_secs(1);
                    while !self.errors_done.load(Ordering::SeqCst) && Instant::now() < end {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    return Some(s);
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => return None,
            }
        }
    }

    fn srun_said(&self) -> String {
        let e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        e.srun
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Link for SlurmLink {
    fn names(&self) -> Vec<String> {
        (0..self.count()).map(|i| format!("task {i}")).collect()
    }

    fn connect_timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.srun.immediate_s))
    }

    fn open(&mut self, tx: mpsc::Sender<Heard>) -> Vec<Result<i128, String>> {
        let n = self.count();
        let spawned = Command::new(&self.srun.program)
            .args(self.srun.args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a terminal's Ctrl-C reaches perflab alone (srun
            // would pass SIGINT to the tasks, which would die without a report).
            .process_group(0)
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let why = format!("cannot run {}: {e}", self.srun.program.display());
                return vec![Err(why); n];
            }
        };
        self.errors.lock().unwrap_or_else(|e| e.into_inner()).tasks = vec![Vec::new(); n];
        let stdout = child.stdout.take().expect("piped stdout");
        let out_tx = tx.clone();
        std::thread::spawn(move || {
            let mut lines = Lines::default();
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                let Line::Task(i, piece) = demux(&line) else {
                    continue;
                };
                if let Some(text) = lines.push(i, piece) {
                    if out_tx.send((i, Some(text), now_ns())).is_err() {
                        return;
                    }
                }
            }
            // srun is gone: every task's stream has ended.
            for i in 0..n {
                let _ = out_tx.send((i, None, now_ns()));
            }
        });
        let (stderr, sink) = (
            child.stderr.take().expect("piped stderr"),
            self.errors.clone(),
        );
        let done = self.errors_done.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).split(b'\n') {
                let Ok(line) = line else { break };
                let mut e = sink.lock().unwrap_or_else(|e| e.into_inner());
                match demux(&line) {
                    Line::Task(i, text) if i < e.tasks.len() => {
                        e.tasks[i].push(String::from_utf8_lossy(text).into_owned())
                    }
                    _ => {
                        let line = String::from_utf8_lossy(&line).into_owned();
                        e.srun.push(line.clone());
                        drop(e);
                        for i in ended_tasks(&line).into_iter().filter(|i| *i < n) {
                            let _ = tx.send((i, None, now_ns()));
                        }
                    }
                }
            }
            done.store(true, Ordering::SeqCst);
        });
        self.stdin = child.stdin.take();
        self.child = Some(child);
        let sent = self.send(&Order::Agent);
        vec![Ok(sent); n]
    }

    fn arm(&mut self, split: &Split) -> Vec<(usize, String)> {
        match split.spec.to_table() {
            Ok(spec) => {
                self.send(&Order::Share {
                    spec,
                    tasks: split.live.to_vec(),
                    weights: split.weights.to_vec(),
                });
                Vec::new()
            }
            Err(e) => split.live.iter().map(|i| (*i, e.to_string())).collect(),
        }
    }

    fn tell(&mut self, _live: &[usize], order: &Order) {
        // Every task hears it; one lost before the split took no part and has ended.
        self.send(order);
    }

    fn close(&mut self) {
        drop(self.stdin.take());
    }

    fn drop_agent(&mut self, _i: usize) {
        // One stdin for all: a lost task ends with the others, when it closes.
    }

    fn ended(&mut self, i: usize) -> String {
        // Let srun's last words (on stderr) come in first.
        let gone = self.status(Duration::from_millis(300));
        let task = {
            let e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
            e.tasks
                .get(i)
                .and_then(|t| t.iter().rev().find(|l| !l.trim().is_empty()).cloned())
        };
        let srun = self.srun_said();
        match (gone, task) {
            (Some(s), Some(t)) => format!("srun ended ({s}): {}", t.trim()),
            (Some(s), None) if !srun.is_empty() => format!("srun ended ({s}): {srun}"),
            (Some(s), None) => format!("srun ended ({s})"),
            (None, Some(t)) => format!("its task ended: {}", t.trim()),
            (None, None) => {
                let mine = srun
                    .split("; ")
                    .filter(|l| ended_tasks(l).contains(&i))
                    .last()
                    .map(str::to_string);
                format!("its task ended: {}", mine.unwrap_or(srun))
            }
        }
    }

    fn hang_up(&mut self) {
        self.close();
        if self.status(Duration::from_secs(5)).is_some() {
            return;
        }
        if let Some(c) = self.child.as_mut() {
            // SAFETY: signalling the srun this link started (and has not yet reaped).
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        if self.status(Duration::from_secs(5)).is_none() {
            if let Some(c) = self.child.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    fn failure(&mut self) -> Option<String> {
        let status = self.status(Duration::from_secs(2))?;
        if status.success() {
            return None;
        }
        // Each task's last words (`slurmstepd: error: execve(): ...`), then srun's.
        let mut said: Vec<String> = {
            let e = self.errors.lock().unwrap_or_else(|e| e.into_inner());
            e.tasks
                .iter()
                .enumerate()
                .filter_map(|(i, t)| {
                    let last = t.iter().rev().find(|l| !l.trim().is_empty())?;
                    Some(format!("task {i}: {}", last.trim()))
                })
                .collect()
        };
        let srun = self.srun_said();
        if !srun.is_empty() {
            said.push(srun);
        }
        let partition = self
            .srun
            .partition
            .as_ref()
            .map(|p| format!(" --partition={p}"))
            .unwrap_or_default();
        Some(format!(
            "srun --nodes={}{partition} failed ({status}){}",
            self.srun.nodes,
            if said.is_empty() {
                String::new()
            } else {
                format!(": {}", said.join("; "))
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_lines_go_to_their_task() {
        let t = |n, s: &'static str| Line::Task(n, s.as_bytes());
        assert_eq!(
            demux(b"0: {\"event\":\"armed\"}"),
            t(0, "{\"event\":\"armed\"}")
        );
        assert_eq!(demux(b" 3: x: y"), t(3, "x: y"));
        assert_eq!(demux(b"12: "), t(12, ""));
        assert_eq!(demux(b"1:"), t(1, ""));
        let srun = b"srun: error: n2: task 1: Exited with exit code 1";
        assert_eq!(demux(srun), Line::Other(srun));
        assert_eq!(demux(b": odd"), Line::Other(b": odd"));
        assert_eq!(demux(b"12 no colon"), Line::Other(b"12 no colon"));
        assert_eq!(demux(b"no label"), Line::Other(b"no label"));
    }

    /// srun's output of tasks' lines, cut into labelled pieces as srun cuts them.
    fn cut(lines: &[(usize, String)]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (task, line) in lines {
            let mut bytes = line.clone().into_bytes();
            bytes.push(b'\n');
            for piece in bytes.chunks(PIECE) {
                let piece = piece.strip_suffix(b"\n").unwrap_or(piece);
                out.push([format!("{task}: ").into_bytes(), piece.to_vec()].concat());
            }
        }
        out
    }

    #[test]
    fn long_lines_cut_by_srun_are_put_back_together() {
        let long = |c: char, n| format!("{{\"x\":\"{}\"}}", c.to_string().repeat(n));
        let (a, b, exact) = (long('a', 3000), long('é', 700), long('z', PIECE - 8));
        assert_eq!(exact.len(), PIECE);
        let mut pieces = cut(&[(0, a.clone()), (1, exact.clone())]);
        // Another task's pieces in between (srun interleaves tasks' messages).
        pieces.splice(1..1, cut(&[(1, b.clone())]));
        pieces.extend(cut(&[(0, "short".into())]));
        let mut lines = Lines::default();
        let mut got = Vec::new();
        for p in &pieces {
            if let Line::Task(i, piece) = demux(p) {
                if let Some(l) = lines.push(i, piece) {
                    got.push((i, l));
                }
            }
        }
        // (An exact multiple of a piece leaves an empty line after it: ignored.)
        got.retain(|(_, l)| !l.is_empty());
        assert_eq!(got, vec![(1, b), (0, a), (1, exact), (0, "short".into())]);
    }

    #[test]
    fn srun_says_which_tasks_ended() {
        assert_eq!(
            ended_tasks("srun: error: n2: task 1: Exited with exit code 1"),
            vec![1]
        );
        assert_eq!(
            ended_tasks("srun: error: n1: tasks 0-2,4: Exited with exit code 2"),
            vec![0, 1, 2, 4]
        );
        assert_eq!(ended_tasks("srun: error: n1: task 0: Killed"), vec![0]);
        assert!(ended_tasks("srun: job 2 queued and waiting for resources").is_empty());
        assert!(ended_tasks("0: task 1: Exited with exit code 1").is_empty());
    }

    #[test]
    fn the_srun_command_broadcasts_stdin_and_labels_output() {
        let s = Srun {
            program: "srun".into(),
            nodes: 2,
            partition: Some("test".into()),
            perflab: "/shared/bin/perflab".into(),
            immediate_s: 10,
        };
        let a = s.args();
        for want in [
            "--nodes=2",
            "--ntasks-per-node=1",
            "--partition=test",
            "--input=all",
            "--label",
            "--kill-on-bad-exit=0",
            "--immediate=10",
        ] {
            assert!(a.contains(&want.to_string()), "{want} in {a:?}");
        }
        assert_eq!(&a[a.len() - 2..], ["/shared/bin/perflab", "worker"]);
    }
}
