//! A link without ssh: each "host" is `perflab worker`'s own loop
//! ([`crate::worker::serve`]) whose stdin and stdout are one end of a Unix socket pair
//! and whose other end the controller holds — the bytes are the same JSON lines an ssh
//! session carries, and the controller's code above [`WorkerLink`] is the same. The
//! loop runs in a thread of this process ([`PipeLink::in_process`]) or in a child
//! process that runs it ([`PipeLink::child`]: a test binary re-running itself, as a
//! fleet test has no perflab binary).
//!
//! It is how fleet is tested without sshd, network namespaces or a perflab binary
//! (`crates/fleet/tests`): an experiment over two pipe hosts exercises the runner's
//! lanes, the remote trial's bounds and messages, `--resume` and Ctrl-C. A host can be
//! taken down ([`PipeLink::down`]): its open links are cut at once — the controller
//! reads the end of the worker's stdout, the worker the end of its stdin, as when a
//! connection drops — and new ones are refused until [`PipeLink::up`].
//!
//! Which to use: a command workload measures its process tree — every descendant of
//! the process that runs it, when there are no cgroups — so two hosts' command trials
//! in one process would count, and stop, each other's processes; a child per worker
//! keeps them apart, as separate hosts are. Threads suit workloads that start nothing.
//!
//! A thread cannot be killed: the worker's trial is interrupted by the end of its
//! stdin, which stops what it started, as it does at the far end of ssh. A socket
//! pair (not `std::io::pipe`) because one side can be shut down while the other
//! still holds its clones, which is what cutting a link needs.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use perflab_workloads::spec::{Builtin, WorkloadFactory};

use crate::inventory::Host;
use crate::link::{Conn, End, LinkError, WorkerLink};

/// What every host's worker builds its trials with.
type Factory = Arc<dyn WorkloadFactory + Send + Sync>;

/// The environment variable that tells a [`PipeLink::child`] worker its host's name.
pub const HOST_VAR: &str = "PERFLAB_PIPE_HOST";

/// Workers reached over socket pairs, one per connection.
#[derive(Clone)]
pub struct PipeLink {
    how: How,
    state: Arc<Mutex<State>>,
    /// Worker threads still running.
    running: Arc<AtomicUsize>,
}

/// Where a worker's loop runs.
#[derive(Clone)]
enum How {
    /// In a thread, building trials with the factory, scratch under the path.
    Thread(Factory, PathBuf),
    /// In a child: this program with these arguments.
    Child(PathBuf, Vec<String>),
}

#[derive(Default)]
struct State {
    /// Hosts taken down.
    down: Vec<String>,
    /// Per host, the controller's ends of its open links (to cut them).
    open: HashMap<String, Vec<UnixStream>>,
    /// Worker processes started (pids).
    children: Vec<i32>,
}

impl PipeLink {
    /// Worker loops in threads of this process that build perflab's own workloads,
    /// their scratch under `scratch`.
    pub fn in_process(scratch: &Path) -> PipeLink {
        PipeLink::with_factory(scratch, Arc::new(Builtin))
    }

    /// Worker loops in threads that build their trials with `factory`.
    pub fn with_factory(scratch: &Path, factory: Factory) -> PipeLink {
        PipeLink::with(How::Thread(factory, scratch.to_path_buf()))
    }

    /// Workers in child processes: `program args...`, which runs the worker's loop on
    /// its stdin and stdout (the host's name in [`HOST_VAR`]).
    pub fn child(program: &Path, args: &[&str]) -> PipeLink {
        let args = args.iter().map(|a| a.to_string()).collect();
        PipeLink::with(How::Child(program.to_path_buf(), args))
    }

    fn with(how: How) -> PipeLink {
        PipeLink {
            how,
            state: Arc::default(),
            running: Arc::default(),
        }
    }

    /// Takes `host` down: its open links are cut now, new ones refused.
    pub fn down(&self, host: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.down.push(host.to_string());
        for end in s.open.remove(host).unwrap_or_default() {
            let _ = end.shutdown(Shutdown::Both);
        }
    }

    /// Brings `host` back.
    pub fn up(&self, host: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.down.retain(|h| h != host);
    }

    /// Workers still running, threads and processes (0 once every conversation has
    /// ended).
    pub fn running(&self) -> usize {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let alive = |pid: &&i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|st| st.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
                .unwrap_or(false)
        };
        self.running.load(Ordering::SeqCst) + s.children.iter().filter(alive).count()
    }

    /// A worker loop in a thread on `there`.
    fn thread(
        &self,
        host: &Host,
        there: UnixStream,
        cut: UnixStream,
        factory: &Factory,
        scratch: &Path,
    ) -> std::io::Result<Box<dyn End>> {
        let input = BufReader::new(there.try_clone()?);
        let (factory, scratch) = (factory.clone(), scratch.to_path_buf());
        let facts = serde_json::json!({ "hostname": host.name });
        self.running.fetch_add(1, Ordering::SeqCst);
        let running = Running(self.running.clone());
        let thread = std::thread::Builder::new()
            .name(format!("pipe-worker-{}", host.name))
            .spawn(move || {
                let _running = running;
                crate::worker::serve(input, there, &*factory, facts, &scratch)
            })?;
        Ok(Box::new(Thread {
            thread: Some(thread),
            cut,
        }))
    }

    /// A worker process on `there`; its end and its stderr.
    fn process(
        &self,
        host: &Host,
        there: UnixStream,
        program: &Path,
        args: &[String],
    ) -> std::io::Result<(Box<dyn End>, Box<dyn std::io::Read + Send>)> {
        let mut child = Command::new(program)
            .args(args)
            .env(HOST_VAR, &host.name)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(there.try_clone()?)))
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(there)))
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let stderr = child.stderr.take().map_or_else(
            || Box::new(std::io::empty()) as Box<dyn std::io::Read + Send>,
            |e| Box::new(e) as Box<dyn std::io::Read + Send>,
        );
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.children.push(child.id() as i32);
        Ok((Box::new(child), stderr))
    }
}

impl WorkerLink for PipeLink {
    fn prepare(&self, _host: &Host, _scratch: &Path) -> Result<String, LinkError> {
        Ok("perflab".into())
    }

    fn worker(&self, host: &Host, _perflab: &str) -> Result<Conn, LinkError> {
        let unreachable = |why: String| LinkError::Unreachable {
            host: host.name.clone(),
            why,
        };
        let io = |e: std::io::Error| unreachable(e.to_string());
        let (here, there) = UnixStream::pair().map_err(io)?;
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if s.down.contains(&host.name) {
                return Err(unreachable("the link is down".into()));
            }
            let cut = here.try_clone().map_err(io)?;
            s.open.entry(host.name.clone()).or_default().push(cut);
        }
        let (end, stderr) = match &self.how {
            How::Thread(factory, scratch) => (
                self.thread(host, there, here.try_clone().map_err(io)?, factory, scratch)
                    .map_err(io)?,
                Box::new(std::io::empty()) as Box<dyn std::io::Read + Send>,
            ),
            How::Child(program, args) => self.process(host, there, program, args).map_err(io)?,
        };
        let stdin = Half(here.try_clone().map_err(io)?);
        Ok(Conn::new(Box::new(stdin), Box::new(here), stderr, end))
    }
}

/// Counts a worker loop while it runs.
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The controller's writing half: dropped, it closes the worker's stdin (the socket's
/// other clones, the reading half among them, stay open).
struct Half(UnixStream);

impl Write for Half {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for Half {
    fn drop(&mut self) {
        let _ = self.0.shutdown(Shutdown::Write);
    }
}

/// A worker loop in a thread.
struct Thread {
    thread: Option<JoinHandle<i32>>,
    /// The controller's end, to cut the thread off (the worker's own clones would
    /// keep its side open).
    cut: UnixStream,
}

impl Thread {
    fn exit(&mut self) -> Option<String> {
        let t = self.thread.take()?;
        Some(match t.join() {
            Ok(code) => format!("exit status: {code}"),
            Err(_) => "the worker thread panicked".into(),
        })
    }
}

impl End for Thread {
    fn try_wait(&mut self) -> Option<String> {
        match &self.thread {
            Some(t) if t.is_finished() => self.exit(),
            Some(_) => None,
            None => Some("ended".into()),
        }
    }

    fn kill(&mut self) {
        let _ = self.cut.shutdown(Shutdown::Both);
    }

    fn wait(&mut self) -> Option<String> {
        // The worker's trial stops on the end of its stdin; a workload that does not
        // is left to finish on its own rather than hang the controller.
        for _ in 0..500 {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, Read};
    use std::time::{Duration, Instant};

    use perflab_workloads::spec::{Attachments, KindSpec, TrialSpec};
    use perflab_workloads::{Measurement, MetricValue, TrialContext, Workload, WorkloadError};

    use crate::wire::Event;

    /// Trials that measure x = 2, or wait for their interrupt when `wait`.
    struct Fake {
        wait: bool,
    }
    struct Trial {
        wait: bool,
    }
    impl WorkloadFactory for Fake {
        fn build(&self, _: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
            Ok(Box::new(Trial { wait: self.wait }))
        }
    }
    impl Workload for Trial {
        fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
            let t = Instant::now();
            while self.wait && t.elapsed() < Duration::from_secs(20) {
                if ctx.interrupted.load(Ordering::SeqCst) {
                    return Err(WorkloadError::Interrupted);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(Measurement {
                metrics: vec![MetricValue::new("x", "", 2.0, "higher")],
                ..Default::default()
            })
        }
    }

    fn host(name: &str) -> Host {
        Host::named(name)
    }

    fn spec_line() -> String {
        let t = TrialSpec {
            workload: KindSpec::Command(Default::default()),
            params: Default::default(),
            repetition: 1,
            ordinal: 1,
            warmup: false,
            cpus: None,
            timeout_s: None,
            attachments: Attachments::default(),
        };
        serde_json::to_string(&t).unwrap() + "\n"
    }

    fn link(wait: bool) -> (tempfile::TempDir, PipeLink) {
        let dir = tempfile::tempdir().unwrap();
        let link = PipeLink::with_factory(dir.path(), Arc::new(Fake { wait }));
        (dir, link)
    }

    fn until_ended(link: &PipeLink) {
        let t = Instant::now();
        while link.running() > 0 {
            // Under the fake trial's 20 s, with room for a loaded machine.
            assert!(
                t.elapsed() < Duration::from_secs(15),
                "the worker loop runs on"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn an_in_process_worker_answers_a_trial_and_its_loop_ends() {
        let (_dir, link) = link(false);
        let mut conn = link.worker(&host("a"), "perflab").unwrap();
        let stdin = conn.stdin.as_mut().unwrap();
        stdin.write_all(spec_line().as_bytes()).unwrap();
        // Two lines: the worker's start, then its answer.
        let lines: Vec<Event> = BufReader::new(conn.stdout.take().unwrap())
            .lines()
            .take(2)
            .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
            .collect();
        assert!(matches!(&lines[0], Event::Started { host, .. } if host["hostname"] == "a"));
        let m = lines[1].clone().into_result().unwrap().unwrap();
        assert_eq!(m.metrics[0].value, 2.0);
        conn.hang_up(Duration::from_secs(5));
        until_ended(&link);
    }

    #[test]
    fn a_host_taken_down_cuts_its_link_and_refuses_new_ones() {
        let (_dir, link) = link(true);
        let mut conn = link.worker(&host("a"), "perflab").unwrap();
        let other = link.worker(&host("b"), "perflab").unwrap();
        conn.stdin
            .as_mut()
            .unwrap()
            .write_all(spec_line().as_bytes())
            .unwrap();
        let mut out = conn.stdout.take().unwrap();
        let mut first = [0u8; 1];
        out.read_exact(&mut first).unwrap();
        link.down("a");
        // The controller reads the end; the worker read the end of its stdin, stopped
        // its trial and ended (b's is untouched).
        let mut rest = String::new();
        let _ = out.read_to_string(&mut rest);
        let t = Instant::now();
        while link.running() > 1 {
            assert!(t.elapsed() < Duration::from_secs(15), "a's worker runs on");
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = link.worker(&host("a"), "perflab").err().unwrap();
        assert!(
            e.to_string().contains("host a") && e.to_string().contains("down"),
            "{e}"
        );
        link.up("a");
        drop(link.worker(&host("a"), "perflab").unwrap());
        drop(other);
        until_ended(&link);
    }
}
