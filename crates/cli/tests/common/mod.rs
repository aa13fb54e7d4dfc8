//! Helpers shared by the CLI integration tests: a scratch directory with its own
//! store, and a way to run `perflab` in it.

#![allow(dead_code)]

pub mod netns;
#[path = "../../../../tests/require.rs"]
pub mod require;
pub mod slurm;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use assert_cmd::Command;

pub struct Lab {
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn store(&self) -> PathBuf {
        self.path("results.db")
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// `perflab ARGS` with this lab's store, cwd in the lab dir, bounded in time.
    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("perflab").expect("perflab binary");
        c.current_dir(self.dir.path())
            .env("PERFLAB_STORE", self.store())
            .env_remove("PERFLAB_NO_CGROUP")
            .timeout(Duration::from_secs(120));
        c
    }

    /// `perflab` as a process to spawn and signal (Ctrl-C tests): this lab's store,
    /// cwd in the lab dir, no time limit of its own.
    pub fn process(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("perflab"));
        c.current_dir(self.dir.path())
            .env("PERFLAB_STORE", self.store());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run perflab")
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "perflab {args:?} failed: {}",
            stderr(&out)
        );
        serde_json::from_slice(&out.stdout).expect("JSON output")
    }

    pub fn open_store(&self) -> perflab_store::Store {
        perflab_store::Store::open(self.store()).expect("open store")
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits for a condition, polling, up to a deadline.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// Metric `name` of the config whose params contain `key=value`, from `show --json`.
pub fn metric<'a>(
    show: &'a serde_json::Value,
    key: &str,
    value: &serde_json::Value,
    name: &str,
) -> &'a serde_json::Value {
    show["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| &c["params"][key] == value)
        .and_then(|c| {
            c["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == name)
        })
        .unwrap_or_else(|| panic!("no metric {name} for {key}={value} in {show}"))
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// A `perflab serve --hello --workers 1` on an OS-chosen port; killed on drop.
pub struct HelloServer {
    child: std::process::Child,
    pub url: String,
}

impl HelloServer {
    pub fn start() -> HelloServer {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("perflab"))
            .args(["serve", "--hello", "--port", "0", "--workers", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start perflab serve");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("first line");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .expect("listening on URL")
            .to_string();
        HelloServer { child, url }
    }
}

impl Drop for HelloServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Established connections whose local end is `port` (the server's side):
/// a test that interrupts a load waits for it, not for a fixed time, before it expects
/// requests.
pub fn established_to(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .map(|t| established_in(&t, port))
        .sum()
}

/// [`established_to`] in one `/proc/net/tcp` table's text (e.g. read in another
/// namespace).
pub fn established_in(table: &str, port: u16) -> usize {
    let local = format!(":{port:04X} ");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && format!("{} ", f[1]).ends_with(&local) && f[3] == "01"
        })
        .count()
}

/// Successful trials of the store's latest run, read while a run may still be writing
/// (0 until the store and a run exist).
pub fn ok_trials(lab: &Lab) -> u64 {
    if !lab.store().exists() {
        return 0;
    }
    let Ok(store) = perflab_store::Store::open(lab.store()) else {
        return 0;
    };
    store.latest_run().map(|r| r.trials_ok).unwrap_or(0)
}

/// The address in `perflab serve`'s first stdout line (`listening on http://ADDR/`).
pub fn listening_addr(child: &mut std::process::Child) -> std::net::SocketAddr {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .unwrap();
    line.trim_end()
        .strip_prefix("listening on http://")
        .and_then(|s| s.strip_suffix('/'))
        .unwrap_or_else(|| panic!("first line was {line:?}"))
        .parse()
        .unwrap()
}

/// A child killed (and reaped) when the test ends, also on failure.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nginx in the foreground, one process (`master_process off`, so killing it leaves no
/// worker behind), with its pid, logs and temp files under `dir` and `http_extra` inside
/// its `http {}` block (the `server {}` blocks, with `{dir}/www` as the usual root);
/// `None` where nginx is not on `PATH` (a failure under `PERFLAB_REQUIRE`: [`require`]).
pub fn start_nginx(dir: &Path, http_extra: &str) -> Option<Killed> {
    use std::process::{Command, Stdio};
    let nginx = require::program("nginx")?;
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    // SAFETY: geteuid has no preconditions.
    let user = if unsafe { libc::geteuid() } == 0 {
        "user root;"
    } else {
        ""
    };
    let conf = format!(
        "{user}\nworker_processes 1;\nmaster_process off;\ndaemon off;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log;\nevents {{ worker_connections 256; }}\n\
         http {{ access_log off; keepalive_requests 1000000;\n\
         client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp;\n\
         fastcgi_temp_path {d}/tmp; uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
         {http_extra} }}\n",
        d = dir.display(),
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(nginx)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Some(Killed(child))
}

/// nginx (one process, [`start_nginx`]) serving `body` as `/` on a free port of
/// 127.0.0.1, once it accepts connections; `None` where nginx is missing (a failure
/// under `PERFLAB_REQUIRE`).
pub fn nginx_page(dir: &Path, body: &str) -> Option<(Killed, u16)> {
    use std::net::{TcpListener, TcpStream};
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!(
        "server {{ listen 127.0.0.1:{port}; root {}/www; }}",
        dir.display()
    );
    let child = start_nginx(dir, &server)?;
    std::fs::write(dir.join("www/index.html"), body).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_ok()),
        "nginx did not listen: {}",
        std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
    );
    Some((child, port))
}

/// Reads `child`'s stderr on a thread and waits (at most `limit`, else kills it and
/// panics) until a line contains `needle`: the rest of its lines, and what it said so
/// far.
pub fn until_stderr_says(
    child: &mut std::process::Child,
    needle: &str,
    limit: Duration,
) -> (std::sync::mpsc::Receiver<String>, String) {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut said = String::new();
    while !said.contains(needle) {
        match rx.recv_timeout(limit) {
            Ok(l) => said.push_str(&(l + "\n")),
            Err(_) => {
                let _ = child.kill();
                panic!("no {needle:?} within {limit:?}: {said}");
            }
        }
    }
    (rx, said)
}
