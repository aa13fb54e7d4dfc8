//! The service under test: render its files, start it in its own process group with
//! its output in a log file, wait until it is ready, watch it, stop it gracefully.
//! With `counters`, it opens `perf_event_open` counters on itself before `exec`
//! (inherited by its workers); the runner reads them before and after each trial.
//!
//! The service dies with its trial even when perflab does not get to stop it (SIGKILL,
//! a crash): each service has a [`Watchdog`], a tiny `sh` in a session of its own that
//! waits on a pipe only perflab holds the writing end of. perflab dying closes the pipe
//! and the watchdog kills the service's whole process group. A parent-death signal
//! would not do: it reaches only perflab's own child, not what a `sh -c` service starts
//! under it; and cgroup v2 (which could hold a service that leaves its group) is not
//! writable on every machine (cgroup v1 here), while a process group always is.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use perflab_workloads::command::{describe_status, last_lines};

use crate::experiment::{Ready, ServiceSpec};
use crate::signals::{register_group, Slot};

/// A started service.
pub struct RunningService {
    child: Child,
    pub config: usize,
    pub log_path: PathBuf,
    exited: Option<ExitStatus>,
    /// Kills the service's group if perflab dies first (`None`: no `sh` to run it).
    watchdog: Option<Watchdog>,
    /// `[service] counters`: opened by the service before its exec, inherited by its
    /// workers; each trial reads them before and after (`read_counters`).
    counters: Option<perflab_telemetry::perfcount::Counters>,
}

/// A process that kills a process group when perflab dies: `sh` reading its stdin, a
/// pipe whose writing end only this process holds (std's pipes are close-on-exec, so
/// no other child inherits it). End of file — perflab gone, or this value dropped
/// without [`Watchdog::dismiss`] — kills the group; a line dismisses it.
pub struct Watchdog {
    child: Child,
}

impl Watchdog {
    /// Watches process group `pgid`.
    pub fn start(pgid: i32) -> std::io::Result<Watchdog> {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "read -r line || kill -9 -\"$1\" 2>/dev/null",
            "perflab-watchdog",
        ])
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe. Its own session: a terminal's Ctrl-C or
        // hang-up aimed at perflab does not take the watchdog with it.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        Ok(Watchdog {
            child: cmd.spawn()?,
        })
    }

    /// The watchdog's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stands the watchdog down (the group is left alone) and reaps it.
    pub fn dismiss(mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        let _ = self.child.wait();
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Dropped without dismiss (an early return, a panic): the pipe closes, the
        // watchdog kills the group; reap it.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Splits a rendered command: words like a shell, or `sh -c` when `shell`.
pub fn argv(command: &str, shell: bool) -> Result<Vec<String>, String> {
    if shell {
        return Ok(vec!["sh".into(), "-c".into(), command.into()]);
    }
    let words = shlex::split(command)
        .ok_or_else(|| format!("cannot split {command:?}: unbalanced quotes"))?;
    if words.is_empty() {
        return Err("empty command".into());
    }
    Ok(words)
}

impl RunningService {
    /// Starts the service for `config` and waits until it is ready.
    pub fn start(
        spec: &ServiceSpec,
        vars: &BTreeMap<String, String>,
        run_dir: &Path,
        config: usize,
        trial: u32,
    ) -> Result<RunningService, String> {
        for (name, body) in &spec.files {
            let path = run_dir.join(name);
            std::fs::write(&path, body.render(vars))
                .map_err(|e| format!("cannot write service file {}: {e}", path.display()))?;
        }
        let command = spec.command.render(vars);
        let words = argv(&command, spec.shell)?;
        let log_path = run_dir.join(format!("service-c{}-t{trial}.log", config + 1));
        let log = std::fs::File::create(&log_path)
            .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        for (k, v) in &spec.env {
            cmd.env(k, v.render(vars));
        }
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd.render(vars));
        }
        let cpus = spec.cpus.as_ref().map(|c| c.to_raw());
        let armed = (!spec.counters.is_empty())
            .then(|| perflab_telemetry::perfcount::Armed::new(&spec.counters))
            .transpose()
            .map_err(|e| format!("cannot set up the service's counters: {e}"))?;
        let side = armed.as_ref().map(|a| a.child_side());
        // SAFETY: setsid, sched_setaffinity, perf_event_open and sendmsg are
        // async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                // Own session: a terminal's Ctrl-C is handled by perflab, which stops
                // the service itself, in order.
                libc::setsid();
                if let Some(set) = &cpus {
                    perflab_workloads::cpuset::pin_raw(set)?;
                }
                if let Some(c) = &side {
                    c.open()?;
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the service {:?}: {e}", words[0]))?;
        let counters = armed.map(|a| a.collect());
        register_group(Slot::Service, child.id() as i32);
        // Without a watchdog the service still runs and is stopped as always; only a
        // SIGKILLed perflab would leave it behind.
        let watchdog = Watchdog::start(child.id() as i32).ok();
        let mut svc = RunningService {
            child,
            config,
            log_path,
            exited: None,
            watchdog,
            counters,
        };
        if let Err(e) = svc.wait_ready(spec, vars) {
            svc.stop(spec);
            return Err(e);
        }
        Ok(svc)
    }

    fn wait_ready(
        &mut self,
        spec: &ServiceSpec,
        vars: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        let deadline = Instant::now() + spec.ready_timeout;
        let what = match &spec.ready {
            Ready::Started => return self.check_alive(),
            Ready::Tcp(t) => format!("a TCP connection to {}", t.render(vars)),
            Ready::Http(t) => format!("an HTTP answer from {}", t.render(vars)),
            Ready::Log(r) => format!("a log line matching /{}/", r.as_str()),
        };
        loop {
            self.check_alive()?;
            let ready = match &spec.ready {
                Ready::Started => true,
                Ready::Tcp(t) => tcp_ready(&t.render(vars)),
                Ready::Http(t) => http_ready(&t.render(vars)),
                Ready::Log(r) => r.is_match(&self.log()),
            };
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the service was not ready after {:?} (waiting for {what}); last lines of its log:\n{}",
                    spec.ready_timeout,
                    last_lines(&self.log(), 20)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ok while the service runs; its exit status and log tail once it has exited.
    pub fn check_alive(&mut self) -> Result<(), String> {
        if self.exited.is_none() {
            match self.child.try_wait() {
                Ok(Some(st)) => {
                    self.exited = Some(st);
                    register_group(Slot::Service, 0);
                }
                Ok(None) => {}
                // Reaped by someone else (it was this process's child): alive only if
                // the pid still answers.
                // SAFETY: signal 0 only checks that the pid exists.
                Err(_) if unsafe { libc::kill(self.child.id() as i32, 0) } != 0 => {
                    return Err(format!(
                        "the service is gone (its exit status was lost); last lines of its log:\n{}",
                        last_lines(&self.log(), 20)
                    ));
                }
                Err(_) => {}
            }
        }
        match &self.exited {
            None => Ok(()),
            Some(st) => Err(format!(
                "the service exited with {}; last lines of its log:\n{}",
                describe_status(st),
                last_lines(&self.log(), 20)
            )),
        }
    }

    /// Its counters now, totals since it started (None without `counters`).
    pub fn read_counters(&self) -> Option<perflab_telemetry::perfcount::Reading> {
        self.counters.as_ref().map(|c| c.read())
    }

    /// The service's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its watchdog's pid (another child of this process, to be left alone).
    pub fn watchdog_pid(&self) -> Option<u32> {
        self.watchdog.as_ref().map(Watchdog::pid)
    }

    /// The log so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log_path) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Stops the service: the stop signal to its process group, SIGKILL after the grace.
    pub fn stop(&mut self, spec: &ServiceSpec) {
        if self.exited.is_none() {
            let pgid = self.child.id() as i32;
            // SAFETY: signalling the service's own process group.
            unsafe { libc::kill(-pgid, spec.stop_signal) };
            let deadline = Instant::now() + spec.grace;
            loop {
                if let Ok(Some(st)) = self.child.try_wait() {
                    self.exited = Some(st);
                    break;
                }
                if Instant::now() >= deadline {
                    // SAFETY: as above.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    self.exited = self.child.wait().ok();
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            // Whatever is left of the group goes too.
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        register_group(Slot::Service, 0);
        if let Some(w) = self.watchdog.take() {
            w.dismiss();
        }
    }
}

/// Stops what abandoned runs left running on this host (their services, written down
/// in the store while they ran: perflab_store's `leftovers`), the whole process group
/// of each — only a process whose pid *and* start time still match — and forgets them.
/// Returns the ones that were still running.
pub fn reap_leftovers(store: &perflab_store::Store) -> Vec<perflab_store::RunProcess> {
    let mut reaped = Vec::new();
    for p in store.leftovers().unwrap_or_default() {
        if perflab_store::owner::process_alive(p.pid, p.start_ticks) {
            // SAFETY: the pid is the recorded service's (checked by its start time),
            // the leader of its own process group (setsid in `start`).
            unsafe {
                libc::kill(-(p.pid as i32), libc::SIGKILL);
                libc::kill(p.pid as i32, libc::SIGKILL);
            }
            reaped.push(p.clone());
        }
        let _ = store.remove_run_process(p.run, p.pid);
    }
    reaped
}

fn tcp_ready(addr: &str) -> bool {
    let Ok(mut addrs) = addr.to_socket_addrs() else {
        return false;
    };
    addrs.any(|a| TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok())
}

/// Any HTTP answer (even an error status) means the server is up.
fn http_ready(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if hostport.contains(':') && !hostport.ends_with(']') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let Ok(mut addrs) = addr.to_socket_addrs() else {
        return false;
    };
    let Some(a) = addrs.next() else { return false };
    let Ok(mut s) = TcpStream::connect_timeout(&a, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(1000)));
    let req = format!("GET {path} HTTP/1.0\r\nHost: {hostport}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = [0u8; 12];
    matches!(s.read(&mut buf), Ok(n) if n >= 5 && buf.starts_with(b"HTTP/"))
}

/// A free TCP port on 127.0.0.1, chosen by the OS.
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh` starting a `sleep` under it, in a group of its own (as a service is).
    fn group() -> Child {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & wait"]);
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        cmd.spawn().unwrap()
    }

    fn gone(child: &mut Child) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Ok(Some(_)) = child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn the_leftovers_of_a_run_that_no_longer_runs_are_reaped_and_a_running_ones_are_not() {
        let store = perflab_store::Store::in_memory().unwrap();
        let host = store
            .upsert_host(&perflab_store::HostInfo::default())
            .unwrap();
        let run = |s: &perflab_store::Store| {
            s.create_run(&perflab_store::NewRun::default(), host)
                .unwrap()
        };
        let (gone_run, live_run) = (run(&store), run(&store));
        let (mut left, mut kept) = (group(), group());
        store
            .add_run_process(gone_run, left.id(), "service")
            .unwrap();
        store
            .add_run_process(live_run, kept.id(), "service")
            .unwrap();
        // Its perflab died (here: it ended without stopping its service).
        store
            .finish_run(gone_run, perflab_store::RunStatus::Interrupted)
            .unwrap();
        let reaped = reap_leftovers(&store);
        assert_eq!(reaped.len(), 1, "{reaped:?}");
        assert_eq!((reaped[0].run, reaped[0].pid), (gone_run, left.id()));
        assert!(gone(&mut left), "the leftover runs on");
        assert_eq!(
            kept.try_wait().unwrap(),
            None,
            "a running run's service was hit"
        );
        assert!(store.leftovers().unwrap().is_empty());
        assert!(reap_leftovers(&store).is_empty(), "forgotten once reaped");
        // SAFETY: the test's own process group.
        unsafe { libc::kill(-(kept.id() as i32), libc::SIGKILL) };
        kept.wait().unwrap();
    }

    #[test]
    fn a_watchdog_whose_pipe_closes_kills_the_group_and_a_dismissed_one_does_not() {
        let mut svc = group();
        let pgid = svc.id() as i32;
        let w = Watchdog::start(pgid).unwrap();
        // Dropped without a word: what perflab's death looks like to the watchdog.
        drop(w);
        assert!(gone(&mut svc), "the group was not killed");

        let mut svc = group();
        let pgid = svc.id() as i32;
        Watchdog::start(pgid).unwrap().dismiss();
        assert_eq!(
            svc.try_wait().unwrap(),
            None,
            "a dismissed watchdog kills nothing"
        );
        // SAFETY: the test's own process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        svc.wait().unwrap();
    }
}
