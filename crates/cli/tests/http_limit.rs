//! The limit named at a find-max knee, planted three ways (issue 33): each test makes
//! one resource run out first and checks that `perflab http --find-max --json` names it
//! in `limit.resource`, with its evidence in numbers. Each runs in a network namespace
//! of its own (`pl-lim-*`, loopback only), so its listen-queue and TCP counters are its
//! own and a sysctl it sets dies with it; every process it starts is killed by its pid
//! and the namespace deleted when the test ends, also when it fails. The three run one
//! at a time (they pin processes to CPUs and would crowd one another out).
//!
//! 1. `net.core.somaxconn=16` in the namespace and a server that accepts in batches
//!    every 100 ms (17 connections per batch at most: the queue itself is its
//!    ceiling), loaded with a new connection per request → `listen_queue`.
//! 2. `perflab serve --workers 1` pinned to CPU 0, the generator on CPU 1, over TLS
//!    with an RSA-2048 certificate and a new connection per request: the server signs
//!    each handshake (about ten times the client's share of it), so the server's CPU
//!    runs out long before the generator's → `service_cpu`.
//! 3. the generator with `-t 1` pinned to CPU 1 beside a busy loop on the same CPU, the
//!    server (`--hello`, keep-alive, two workers, not pinned) far cheaper per request
//!    → `generator`.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{require, Killed};

/// One planted limit at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A network namespace with only its loopback up; deleted on drop, after every process
/// still in it is killed by its pid.
struct Ns {
    name: String,
}

impl Ns {
    fn new(tag: &str) -> Option<Ns> {
        if !require::root("network namespaces (ip netns add)") || !require::programs(&["ip"]) {
            return None;
        }
        let name = format!("pl-lim-{tag}-{}", std::process::id());
        let ns = Ns { name };
        // A namespace left by a killed earlier run of this very pid: gone first.
        let _ = Command::new("ip").args(["netns", "del", &ns.name]).output();
        ns.ip(&["netns", "add", &ns.name]);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        Some(ns)
    }

    fn ip(&self, args: &[&str]) {
        let out = Command::new("ip").args(args).output().expect("ip");
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs a command in the namespace to its end.
    fn exec(&self, args: &[&str]) {
        let mut a = vec!["netns", "exec", self.name.as_str()];
        a.extend_from_slice(args);
        self.ip(&a);
    }

    /// A command in the namespace (`ip netns exec` execs it: the child's pid is its own).
    fn command(&self, program: &std::path::Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// The namespace's file, for a thread to join it (setns): sockets it makes then
    /// live there.
    fn enter(&self) -> std::fs::File {
        std::fs::File::open(format!("/var/run/netns/{}", self.name)).expect("netns file")
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output();
        if let Ok(out) = out {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Ok(pid) = pid.parse::<i32>() {
                    // SAFETY: a process in this test's own namespace.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Pins what `c` starts to one CPU (sched_setaffinity before exec).
fn pinned(c: &mut Command, cpu: usize) -> &mut Command {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// CPUs 0 and 1 both usable here, or why not.
fn two_cpus() -> bool {
    // SAFETY: a zeroed cpu_set_t filled by the kernel for this process.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0
            && libc::CPU_ISSET(0, &set)
            && libc::CPU_ISSET(1, &set)
    };
    require::have(if ok {
        Ok(())
    } else {
        Err("this test pins to CPUs 0 and 1: both must be usable")
    })
    .is_some()
}

/// `perflab http --find-max ... --json URL` in the namespace, bounded; the JSON report.
fn find_max(ns: &Ns, cpu: Option<usize>, args: &[&str], url: &str) -> serde_json::Value {
    find_max_in(&common::Lab::new(), ns, cpu, args, url)
}

/// [`find_max`] with `lab`'s store, which records the run.
fn find_max_in(
    lab: &common::Lab,
    ns: &Ns,
    cpu: Option<usize>,
    args: &[&str],
    url: &str,
) -> serde_json::Value {
    let mut c = ns.command(&assert_cmd::cargo::cargo_bin("perflab"));
    c.current_dir(lab.dir.path())
        .env("PERFLAB_STORE", lab.store())
        .args(["http", "--find-max", "--json", "--quiet"])
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cpu) = cpu {
        pinned(&mut c, cpu);
    }
    let child = Killed(c.spawn().expect("perflab http"));
    let out = wait_bounded(child, Duration::from_secs(150));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    print_figures(&json);
    json
}

/// The child's output, or a panic when it outlives `limit` (it is killed by its pid
/// when the guard drops). Its pipes are drained while it runs, so a large report
/// never blocks it.
fn wait_bounded(mut child: Killed, limit: Duration) -> std::process::Output {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut out);
            }
            out
        })
    };
    let stdout = drain(
        child
            .0
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .0
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(start.elapsed() < limit, "perflab http ran over {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// The steps and the verdict, for whoever reads the test's output.
fn print_figures(r: &serde_json::Value) {
    println!(
        "max_rate {} broke_at {} limit {}",
        r["max_rate"], r["broke_at"], r["limit"]
    );
    for s in r["steps"].as_array().into_iter().flatten() {
        println!(
            "  step {:>9} rps {:>9.0} p99 {:>9.3} ms passed {} busy {:.2} wait {:.2} late {}",
            s["target"],
            s["rps"].as_f64().unwrap_or(0.0),
            s["latency_ms"]["p99"].as_f64().unwrap_or(0.0),
            s["passed"],
            s["client_busy"].as_f64().unwrap_or(0.0),
            s["client_wait"].as_f64().unwrap_or(0.0),
            s["late"]
        );
    }
}

fn resource(r: &serde_json::Value) -> (&str, &str) {
    (
        r["limit"]["resource"].as_str().unwrap_or("(none)"),
        r["limit"]["evidence"].as_str().unwrap_or(""),
    )
}

/// `perflab serve ARGS` in the namespace on :8080, pinned where `cpu` says; killed by
/// its pid on drop.
fn serve(ns: &Ns, cpu: Option<usize>, args: &[&str]) -> Killed {
    let mut c = ns.command(&assert_cmd::cargo::cargo_bin("perflab"));
    c.args(["serve", "--port", "8080", "--quiet"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(cpu) = cpu {
        pinned(&mut c, cpu);
    }
    let mut child = Killed(c.spawn().expect("perflab serve"));
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.0.stdout.take().expect("piped stdout")),
        &mut first,
    )
    .unwrap();
    assert!(
        first.contains("://127.0.0.1:8080/"),
        "first line: {first:?}"
    );
    child
}

/// A server that takes its listen queue's connections in batches every 100 ms and
/// answers each with a small page: with somaxconn 16 its ceiling is about 17 per
/// batch, and it burns almost no CPU, so the queue is what runs out.
struct SlowAcceptor {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SlowAcceptor {
    fn start(ns: &Ns) -> SlowAcceptor {
        use std::os::fd::AsRawFd;
        let netns = ns.enter();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            // SAFETY: setns on a namespace file this thread holds open.
            let r = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
            let l = TcpListener::bind("127.0.0.1:8080").expect("bind :8080 in the namespace");
            l.set_nonblocking(true).unwrap();
            tx.send(()).unwrap();
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                while let Ok((s, _)) = l.accept() {
                    answer(s);
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the slow acceptor listens");
        SlowAcceptor {
            stop,
            thread: Some(thread),
        }
    }
}

/// Reads one request head (briefly) and answers it, closing the connection.
fn answer(mut s: std::net::TcpStream) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = [0u8; 2048];
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") && got.len() < 8192 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
}

impl Drop for SlowAcceptor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A busy loop pinned to `cpu` (a shell's `while :`), killed by its pid on drop.
fn busy_loop(cpu: usize) -> Killed {
    let mut c = Command::new("sh");
    c.args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    pinned(&mut c, cpu);
    Killed(c.spawn().expect("busy loop"))
}

#[test]
fn a_small_somaxconn_is_named_listen_queue() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let host = || std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap();
    let before = host();
    let Some(ns) = Ns::new("q") else { return };
    // sysctl net.core.somaxconn=16, in the namespace only (no procps needed).
    ns.exec(&["sh", "-c", "echo 16 > /proc/sys/net/core/somaxconn"]);
    ns.exec(&[
        "sh",
        "-c",
        "test \"$(cat /proc/sys/net/core/somaxconn)\" = 16",
    ]);
    let _server = SlowAcceptor::start(&ns);
    let lab = common::Lab::new();
    let r = find_max_in(
        &lab,
        &ns,
        None,
        &[
            "--no-keepalive",
            "--slo",
            "p99<500ms",
            "--rate",
            "25",
            "--step-duration",
            "3s",
        ],
        "http://127.0.0.1:8080/",
    );
    assert_eq!(host(), before, "the host's somaxconn is untouched");
    let (what, evidence) = resource(&r);
    assert_eq!(what, "listen_queue", "{evidence}");
    assert!(
        evidence.contains("listen-queue overflows on :8080 during the step at"),
        "{evidence}"
    );
    // The stored run's report captions its knee with the same limit.
    let file = lab.path("knee.html");
    let out = lab.run(&["report", "--html", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(
        html.contains("Limited by the listen queue (listen_queue): "),
        "no limit under the knee plot"
    );
}

#[test]
fn a_pinned_single_worker_is_named_service_cpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !two_cpus() {
        return;
    }
    if !require::programs(&["openssl"]) {
        return;
    }
    let Some(ns) = Ns::new("s") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let _server = serve(
        &ns,
        Some(0),
        &["--workers", "1", "--hello", "--tls-cert", c, "--tls-key", k],
    );
    let r = find_max(
        &ns,
        Some(1),
        &[
            "-t",
            "1",
            "-k",
            "--no-keepalive",
            "--slo",
            "p99<200ms",
            "--rate",
            "50",
            "--step-duration",
            "2s",
        ],
        "https://127.0.0.1:8080/",
    );
    let (what, evidence) = resource(&r);
    assert_eq!(what, "service_cpu", "{evidence}");
    assert!(evidence.contains("allowed CPU"), "{evidence}");
}

#[test]
fn a_generator_sharing_its_cpu_is_named_generator() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !two_cpus() {
        return;
    }
    let Some(ns) = Ns::new("g") else { return };
    // The server floats over both CPUs with a worker for each, so whatever the rest
    // of the machine does, it has room left when the generator has none.
    let _server = serve(&ns, None, &["--workers", "2", "--hello"]);
    let _hog = busy_loop(1);
    let r = find_max(
        &ns,
        Some(1),
        &[
            "-t",
            "1",
            "--slo",
            "p99<100ms",
            "--rate",
            "1000",
            "--step-duration",
            "1s",
        ],
        "http://127.0.0.1:8080/",
    );
    let (what, evidence) = resource(&r);
    assert_eq!(what, "generator", "{evidence}");
    assert!(evidence.contains("waiting for one"), "{evidence}");
}

/// Not a planted limit: a run that is not a knee search has no `limit`.
#[test]
fn a_plain_run_has_no_limit() {
    let server = common::HelloServer::start();
    let lab = common::Lab::new();
    let r = lab.json(&["http", "-d", "300ms", "-c", "2", "--json", &server.url]);
    assert!(r.get("limit").is_none(), "{r}");
}

/// `kind = "http"` with `find_max = true` in an experiment names a limit too: the
/// stored report carries it and the HTML report's knee plot shows it. Which resource
/// runs out first here depends on the machine; that one is named is the point.
#[test]
fn an_experiments_find_max_names_a_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = common::Lab::new();
    let f = lab.write(
        "knee.toml",
        r#"[experiment]
repetitions = 1
warmup = 0
noise_check = false
[service]
command = "{perflab} serve --hello --port {port} --workers 1"
ready.http = "http://127.0.0.1:{port}/"
[workload]
kind = "http"
urls = ["http://127.0.0.1:{port}/"]
threads = 1
find_max = true
slo = "p99<1ms"
rate = 2000
step_duration = "300ms"
"#,
    );
    let out = lab.run(&["run", f.to_str().unwrap()]);
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        common::stderr(&out)
    );
    let file = lab.path("knee.html");
    let out = lab.run(&["report", "--html", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.contains("Where latency breaks"), "no knee plot");
    let caption = html
        .split("<p class=\"limit\">")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .unwrap_or_else(|| panic!("no limit caption"));
    println!("{caption}");
    assert!(caption.starts_with("Limited by "), "{caption}");
    // The facts it was named from are kept with the trial.
    let export = lab.json(&["export", "1", "--format", "json"]);
    let artifacts = export["trials"][0]["artifacts"].as_array().unwrap();
    assert!(
        artifacts.iter().any(|a| a["name"] == "knee.json"),
        "no knee.json among {:?}",
        artifacts.iter().map(|a| &a["name"]).collect::<Vec<_>>()
    );
}
