//! The worker's side of a session: requests from stdin, one at a time, each answered
//! on stdout; at the end of stdin everything started is stopped (see the module above).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use perflab_lab::experiment::ServiceSpec;
use perflab_lab::service::RunningService;
use perflab_lab::site::{ProfileRun, ServiceStarted};
use perflab_telemetry::MonitorHandle;

use crate::wire::{Reply, Request};

/// What this end of a session runs.
struct Here {
    dir: PathBuf,
    service: Option<(ServiceSpec, RunningService)>,
    monitor: Option<MonitorHandle>,
    /// perf recording (dropped: killed).
    profile: Option<ProfileRun>,
    /// Profiles started, for their directories' names.
    profiles: u32,
}

impl Here {
    fn handle(&mut self, req: Request) -> Reply {
        let failed = |message: String| Reply::Failed { message };
        match req {
            Request::Service(r) => {
                self.stop_service();
                match r.start_here(&self.dir) {
                    Ok((spec, svc, port)) => {
                        let pid = svc.pid();
                        self.service = Some((spec, svc));
                        Reply::Ready {
                            service: ServiceStarted {
                                pid,
                                port,
                                netns: std::fs::read_link(format!("/proc/{pid}/ns/net"))
                                    .ok()
                                    .map(|p| p.display().to_string()),
                            },
                        }
                    }
                    Err(e) => failed(e.to_string()),
                }
            }
            Request::CheckService => match &mut self.service {
                None => failed("no service runs in this session".into()),
                Some((_, s)) => match s.check_alive() {
                    Ok(()) => Reply::Alive,
                    Err(e) => failed(e),
                },
            },
            Request::StopService => match self.stop_service() {
                Some(log) => Reply::Stopped { log },
                None => failed("no service runs in this session".into()),
            },
            Request::Monitor(m) => {
                // A monitor left from an earlier trial is thrown away.
                self.monitor = None;
                let pid = self.service.as_ref().map(|(_, s)| s.pid());
                match perflab_lab::site::start_monitor(&m, pid) {
                    Ok(h) => {
                        self.monitor = Some(h);
                        Reply::Monitoring
                    }
                    Err(e) => failed(e.to_string()),
                }
            }
            Request::StopMonitor => match self.monitor.take() {
                Some(h) => Reply::Recording {
                    recording: h.stop(),
                },
                None => failed("no monitor runs in this session".into()),
            },
            Request::Profile(p) => {
                // A profile left from an earlier trial is thrown away (its perf killed).
                self.drop_profile();
                let pid = self.service.as_ref().map(|(_, s)| s.pid());
                if p.service && pid.is_none() {
                    return failed(
                        "the profile is of the service, and no service runs in this session".into(),
                    );
                }
                self.profiles += 1;
                let dir = self.dir.join(format!("profile-{}", self.profiles));
                match perflab_lab::site::start_profile_here(&p, pid, dir.clone()) {
                    Ok(r) => {
                        let pid = r.pid();
                        self.profile = Some(r);
                        Reply::Profiling { pid }
                    }
                    Err(e) => {
                        let _ = std::fs::remove_dir_all(&dir);
                        failed(e.to_string())
                    }
                }
            }
            Request::StopProfile => match self.profile.take() {
                Some(r) => {
                    let dir = r.dir().to_path_buf();
                    let profile = r.stop();
                    let _ = std::fs::remove_dir_all(&dir);
                    match profile {
                        Ok(profile) => Reply::Profile {
                            profile: Box::new(profile),
                        },
                        Err(e) => failed(e.to_string()),
                    }
                }
                None => failed("no profile runs in this session".into()),
            },
        }
    }

    /// Kills perf if it records, and removes its recording.
    fn drop_profile(&mut self) {
        if let Some(r) = self.profile.take() {
            let dir = r.dir().to_path_buf();
            drop(r);
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// Stops the service, if one runs; the last 256 KiB of its log (what a local
    /// trial keeps).
    fn stop_service(&mut self) -> Option<String> {
        let (spec, mut svc) = self.service.take()?;
        svc.stop(&spec);
        let mut log = svc.log();
        let _ = std::fs::remove_file(&svc.log_path);
        let mut cut = log.len().saturating_sub(256 << 10);
        while !log.is_char_boundary(cut) {
            cut += 1;
        }
        log.drain(..cut);
        Some(log)
    }
}

fn send(out: &mut impl Write, r: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_string(r).map_err(std::io::Error::other)?;
    line.push('\n');
    out.write_all(line.as_bytes())?;
    out.flush()
}

/// Serves a session whose first request, already read, is `first`; then reads the
/// rest of `input` until its end, answers on `out`, stops what it started and returns
/// the exit status (0).
pub fn serve(first: Request, mut input: impl BufRead, mut out: impl Write, scratch: &Path) -> i32 {
    let dir = scratch.join(format!("session-{}", std::process::id()));
    let mut here = Here {
        dir: dir.clone(),
        service: None,
        monitor: None,
        profile: None,
        profiles: 0,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        let _ = send(
            &mut out,
            &Reply::Failed {
                message: format!("{}: {e}", dir.display()),
            },
        );
        return 1;
    }
    let mut next = Some(first);
    loop {
        let req = match next.take() {
            Some(r) => r,
            None => {
                let mut line = String::new();
                match input.read_line(&mut line) {
                    // The end of stdin: the controller is done, or gone.
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.trim().is_empty() => continue,
                    Ok(_) => match serde_json::from_str(&line) {
                        Ok(r) => r,
                        Err(e) => {
                            let bad = Reply::Failed {
                                message: format!("not a session request: {e}"),
                            };
                            if send(&mut out, &bad).is_err() {
                                break;
                            }
                            continue;
                        }
                    },
                }
            }
        };
        let reply = here.handle(req);
        if send(&mut out, &reply).is_err() {
            // Nobody listens any more: stop as at the end of stdin.
            break;
        }
    }
    here.drop_profile();
    drop(here.monitor.take());
    here.stop_service();
    let _ = std::fs::remove_dir_all(&dir);
    0
}

// The rule for a test whose tool or kernel feature is missing (a failure under
// PERFLAB_REQUIRE), shared by every crate's tests: at the workspace root.
#[cfg(test)]
#[path = "../../../../tests/require.rs"]
mod require;

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_lab::site::{ReadyRequest, ServiceRequest};
    use perflab_workloads::spec::MonitorAttachment;
    use std::collections::BTreeMap;

    fn service(command: &str) -> ServiceRequest {
        ServiceRequest {
            command: command.into(),
            shell: false,
            files: vec![],
            cpus: None,
            env: vec![],
            cwd: None,
            ready: ReadyRequest::Log("ready".into()),
            ready_timeout_s: 5.0,
            stop_signal: libc::SIGTERM,
            grace_s: 2.0,
            vars: BTreeMap::new(),
            config: 0,
            trial: 1,
        }
    }

    fn replies(out: &[u8]) -> Vec<Reply> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only asks whether the pid exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[test]
    fn a_session_starts_samples_and_stops_its_service() {
        let dir = tempfile::tempdir().unwrap();
        let monitor = MonitorAttachment {
            interval_s: 0.05,
            probes: vec!["cpu".into(), "process".into()],
        };
        let rest: String = [
            serde_json::to_string(&Request::Monitor(monitor)).unwrap(),
            serde_json::to_string(&Request::CheckService).unwrap(),
            serde_json::to_string(&Request::StopMonitor).unwrap(),
            serde_json::to_string(&Request::StopService).unwrap(),
            "{nonsense".into(),
        ]
        .join("\n")
            + "\n";
        let mut out = Vec::new();
        let first = Request::Service(service("sh -c 'echo ready on {port}; exec sleep 30'"));
        let code = serve(
            first,
            std::io::Cursor::new(rest.into_bytes()),
            &mut out,
            dir.path(),
        );
        assert_eq!(code, 0);
        let r = replies(&out);
        let Reply::Ready { service } = &r[0] else {
            panic!("{r:?}")
        };
        assert!(service.netns.as_deref().unwrap().starts_with("net:["));
        assert_eq!(r[1], Reply::Monitoring);
        assert_eq!(r[2], Reply::Alive);
        let Reply::Recording { recording } = &r[3] else {
            panic!("{r:?}")
        };
        assert!(recording.series("cpu.user_pct").is_some() || !recording.series.is_empty());
        let Reply::Stopped { log } = &r[4] else {
            panic!("{r:?}")
        };
        assert!(log.contains(&format!("ready on {}", service.port)), "{log}");
        assert!(matches!(&r[5], Reply::Failed { .. }));
        assert!(!alive(service.pid));
        // The scratch directory went with the session.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_end_of_stdin_stops_the_service() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        // A service that ignores SIGTERM: killed with its group after the grace.
        let first = Request::Service(service(
            "sh -c 'trap \"\" TERM; echo ready; sleep 30 & wait'",
        ));
        let t = std::time::Instant::now();
        serve(
            first,
            std::io::Cursor::new(Vec::new()),
            &mut out,
            dir.path(),
        );
        let Reply::Ready { service } = &replies(&out)[0] else {
            panic!("{out:?}")
        };
        assert!(!alive(service.pid));
        assert!(t.elapsed() < std::time::Duration::from_secs(10));
    }

    fn profile() -> Request {
        Request::Profile(perflab_workloads::spec::ProfileAttachment {
            frequency: 499,
            call_graph: perflab_workloads::spec::CallGraphMode::Off,
            dwarf_stack_bytes: None,
            off_cpu: false,
            jit: true,
            top: 3,
            service: true,
            workload: false,
        })
    }

    /// The perf processes recording into `dir`.
    fn perfs_in(dir: &Path) -> Vec<String> {
        let want = dir.display().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(" record ") && c.contains(&want))
            .collect()
    }

    /// A session in a thread whose stdin is fed line by line (closed: the sender
    /// dropped); it returns what the session wrote.
    fn session(
        first: Request,
        scratch: &Path,
    ) -> (
        std::sync::mpsc::Sender<Request>,
        std::thread::JoinHandle<Vec<u8>>,
    ) {
        let (tx, thread, _) = session_asking(first, scratch);
        (tx, thread)
    }

    /// [`session`], and how many times the session has asked for a request: it asks
    /// for the next one once it has answered the last.
    fn session_asking(
        first: Request,
        scratch: &Path,
    ) -> (
        std::sync::mpsc::Sender<Request>,
        std::thread::JoinHandle<Vec<u8>>,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Pipe(
            std::sync::mpsc::Receiver<Request>,
            Vec<u8>,
            Arc<AtomicUsize>,
        );
        impl std::io::Read for Pipe {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.1.is_empty() {
                    self.2.fetch_add(1, Ordering::SeqCst);
                    match self.0.recv() {
                        Ok(r) => self.1 = (serde_json::to_string(&r).unwrap() + "\n").into(),
                        Err(_) => return Ok(0),
                    }
                }
                let n = buf.len().min(self.1.len());
                buf[..n].copy_from_slice(&self.1[..n]);
                self.1.drain(..n);
                Ok(n)
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let scratch = scratch.to_path_buf();
        let asked = Arc::new(AtomicUsize::new(0));
        let pipe = Pipe(rx, Vec::new(), asked.clone());
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            serve(first, std::io::BufReader::new(pipe), &mut out, &scratch);
            out
        });
        (tx, thread, asked)
    }

    #[test]
    fn a_session_profiles_its_service_and_sends_the_profile_back() {
        if !require::perf_records() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // A service that spins (the test runs as cargo's child, never as `sh`).
        let first = Request::Service(service("sh -c 'echo ready; while :; do :; done'"));
        let (tx, session, asked) = session_asking(first, dir.path());
        tx.send(profile()).unwrap();
        let t = std::time::Instant::now();
        // perf runs, and the session has answered the profile request (it asks for the
        // next): perf acknowledged that it records. Its process alone shows before
        // that, while perf still starts.
        while perfs_in(dir.path()).is_empty() || asked.load(std::sync::atomic::Ordering::SeqCst) < 2
        {
            assert!(t.elapsed().as_secs() < 20, "perf never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        tx.send(Request::StopProfile).unwrap();
        tx.send(Request::StopProfile).unwrap();
        drop(tx);
        let r = replies(&session.join().unwrap());
        let Reply::Ready { service } = &r[0] else {
            panic!("{r:?}")
        };
        assert_eq!(
            r[1],
            Reply::Profiling {
                pid: Some(service.pid)
            }
        );
        let Reply::Profile { profile } = &r[2] else {
            panic!("{r:?}")
        };
        assert_eq!(profile.pid, Some(service.pid));
        assert!(profile.report.samples > 0, "{profile:?}");
        assert!(!profile.top.is_empty() && profile.flamegraph.is_some());
        // Only the service's process was recorded: every stack's root is its name.
        assert!(
            profile.folded.lines().all(|l| l.starts_with("sh;")),
            "{}",
            profile.folded
        );
        assert!(matches!(&r[3], Reply::Failed { .. }), "{r:?}");
        assert!(!alive(service.pid));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_end_of_stdin_kills_perf() {
        if !require::perf_records() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let first = Request::Service(service("sh -c 'echo ready; exec sleep 30'"));
        let (tx, session) = session(first, dir.path());
        tx.send(profile()).unwrap();
        let t = std::time::Instant::now();
        while perfs_in(dir.path()).is_empty() {
            assert!(t.elapsed().as_secs() < 20, "perf never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        drop(tx);
        let out = session.join().unwrap();
        assert!(
            matches!(replies(&out)[1], Reply::Profiling { .. }),
            "{out:?}"
        );
        assert!(
            perfs_in(dir.path()).is_empty(),
            "{:?}",
            perfs_in(dir.path())
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_service_that_is_not_ready_is_a_failed_reply() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        let mut req = service("sh -c 'echo nope; exit 3'");
        req.ready_timeout_s = 1.0;
        serve(
            Request::Service(req),
            std::io::Cursor::new(Vec::new()),
            &mut out,
            dir.path(),
        );
        let Reply::Failed { message } = &replies(&out)[0] else {
            panic!("{out:?}")
        };
        assert!(
            message.contains("exited") && message.contains("nope"),
            "{message}"
        );
    }
}
