//! Hosts for the fleet tests, built on this machine: network namespaces, each with its
//! own sshd (Debian openssh-server) with per-test host and user keys and a test
//! known_hosts that the inventory names.
//!
//! Two shapes: [`Hosts::new`] gives each namespace its own veth pair to this one
//! (10.231.N.2 inside, 10.231.N.1 here) — hosts that reach the controller but not one
//! another; [`Hosts::bridged`] puts every namespace on one bridge (10.232.K.10+i,
//! the bridge 10.232.K.1 here), so they also reach one another, as a load generator and
//! a server on two machines do (separate veth pairs would need `ip_forward` here).
//!
//! Everything a test makes is removed when its [`Hosts`] is dropped, also when the test
//! fails: every process left in the namespaces (sshd, its sessions, what they started)
//! is killed, then the namespaces and the bridge are deleted. Where this machine cannot
//! make them (no sshd on `PATH`, no `ip netns`, not root), [`Hosts::new`] follows the
//! rule of `require`: under `PERFLAB_REQUIRE` it panics naming what is missing,
//! otherwise it says why and gives None, and the test returns. sshd is looked up on
//! `PATH` only (root's `PATH` has /usr/sbin), so a test can make it absent.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as Std, Stdio};
use std::time::Duration;

use super::{require, wait_until};

/// Namespaces with an sshd each; dropped: everything in them killed, namespaces deleted.
pub struct Hosts {
    pub names: Vec<String>,
    /// The third octet of each host's 10.231.N.2 (veth pairs only).
    pub nets: Vec<usize>,
    /// Each host's address.
    pub addrs: Vec<String>,
    sshd: Vec<Child>,
    bridge: Option<String>,
    dir: PathBuf,
}

pub fn sh(args: &[&str]) -> Result<(), String> {
    let out = Std::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Hosts {
    /// `n` hosts, each on its own veth pair; where this machine cannot make them, a
    /// panic under `PERFLAB_REQUIRE`, else None (and why, printed).
    pub fn new(dir: &Path, n: usize) -> Option<Hosts> {
        require::have(Hosts::make(dir, n, false))
    }

    /// `n` hosts on one bridge, reaching one another.
    pub fn bridged(dir: &Path, n: usize) -> Option<Hosts> {
        require::have(Hosts::make(dir, n, true))
    }

    /// The hosts, or why this machine cannot make them.
    pub fn make(dir: &Path, n: usize, bridged: bool) -> Result<Hosts, String> {
        let sshd = require::which("sshd").ok_or_else(|| require::not_found("sshd"))?;
        if !require::is_root() {
            return Err("network namespaces (ip netns add) need root".into());
        }
        // Unique per test of this process, and short: interface names have 15 bytes.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let seq = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let tag = format!("{}{seq}", std::process::id() % 10_000);
        let mut hosts = Hosts {
            names: Vec::new(),
            nets: Vec::new(),
            addrs: Vec::new(),
            sshd: Vec::new(),
            bridge: None,
            dir: dir.to_path_buf(),
        };
        let keygen = |file: &Path| {
            sh(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                file.to_str().unwrap(),
            ])
        };
        keygen(&dir.join("id"))
            .and_then(|_| keygen(&dir.join("hostkey")))
            .map_err(|e| format!("{e} (Debian package: openssh-client)"))?;
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let hostkey = std::fs::read_to_string(dir.join("hostkey.pub")).unwrap();
        // The bridge's subnet: from the pid too, so two test processes do not collide.
        let subnet = (std::process::id() as usize * 7 + seq as usize) % 250 + 1;
        if bridged {
            let br = format!("plb{tag}br");
            let made = sh(&["ip", "link", "add", &br, "type", "bridge"]).and_then(|_| {
                hosts.bridge = Some(br.clone());
                sh(&[
                    "ip",
                    "addr",
                    "add",
                    &format!("10.232.{subnet}.1/24"),
                    "dev",
                    &br,
                ])?;
                sh(&["ip", "link", "set", &br, "up"])
            });
            made.map_err(|e| format!("cannot make a bridge here: {e}"))?;
        }
        let mut known = String::new();
        for i in 0..n {
            let ns = format!("plf{tag}n{i}");
            let (outside, inside) = (format!("plf{tag}h{i}"), format!("plf{tag}v{i}"));
            let net = 10 + 10 * seq as usize + i;
            let (addr, here) = if bridged {
                (format!("10.232.{subnet}.{}", 10 + i), None)
            } else {
                (
                    format!("10.231.{net}.2"),
                    Some(format!("10.231.{net}.1/24")),
                )
            };
            let made = sh(&["ip", "netns", "add", &ns]).and_then(|_| {
                hosts.names.push(ns.clone());
                sh(&[
                    "ip", "link", "add", &outside, "type", "veth", "peer", "name", &inside,
                ])?;
                sh(&["ip", "link", "set", &inside, "netns", &ns])?;
                match (&here, &hosts.bridge) {
                    (Some(a), _) => sh(&["ip", "addr", "add", a, "dev", &outside])?,
                    (None, Some(br)) => sh(&["ip", "link", "set", &outside, "master", br])?,
                    (None, None) => unreachable!("a bridge or an address"),
                }
                sh(&["ip", "link", "set", &outside, "up"])?;
                let in_ns = |args: &[&str]| {
                    let mut a = vec!["ip", "netns", "exec", ns.as_str()];
                    a.extend_from_slice(args);
                    sh(&a)
                };
                in_ns(&["ip", "addr", "add", &format!("{addr}/24"), "dev", &inside])?;
                in_ns(&["ip", "link", "set", &inside, "up"])?;
                in_ns(&["ip", "link", "set", "lo", "up"])
            });
            made.map_err(|e| format!("cannot make network namespaces here: {e}"))?;
            let cfg = dir.join(format!("sshd-{i}.conf"));
            std::fs::write(
                &cfg,
                format!(
                    "ListenAddress {addr}\nPort 22\nHostKey {d}/hostkey\nPidFile {d}/sshd-{i}.pid\n\
                     AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                     StrictModes no\nPrintMotd no\n",
                    d = dir.display()
                ),
            )
            .unwrap();
            let child = Std::new("ip")
                .args(["netns", "exec", &ns])
                .arg(&sshd)
                .args(["-D", "-e", "-f"])
                .arg(&cfg)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join(format!("sshd-{i}.log"))).unwrap())
                .spawn()
                .unwrap();
            hosts.sshd.push(child);
            hosts.nets.push(net);
            hosts.addrs.push(addr.clone());
            known.push_str(&format!("{addr} {hostkey}"));
            let up = wait_until(Duration::from_secs(10), || {
                std::net::TcpStream::connect_timeout(
                    &format!("{addr}:22").parse().unwrap(),
                    Duration::from_millis(200),
                )
                .is_ok()
            });
            assert!(up, "sshd in {ns} did not listen");
        }
        std::fs::write(dir.join("known_hosts"), known).unwrap();
        Ok(hosts)
    }

    /// An inventory of the hosts, `h0`, `h1`, ..., plus `extra` lines.
    pub fn inventory(&self, extra: &str) -> String {
        let names: Vec<String> = (0..self.addrs.len()).map(|i| format!("h{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.inventory_as(&names, extra)
    }

    /// An inventory of the hosts under these names, plus `extra` lines.
    pub fn inventory_as(&self, names: &[&str], extra: &str) -> String {
        let d = self.dir.display();
        let mut s = String::new();
        for (name, addr) in names.iter().zip(&self.addrs) {
            s.push_str(&format!(
                "[[hosts]]\nname = \"{name}\"\naddress = \"{addr}\"\nuser = \"root\"\n\
                 identity = \"{d}/id\"\nknown_hosts = \"{d}/known_hosts\"\n\n"
            ));
        }
        s + extra
    }

    /// The pids of the processes in host `i`'s namespace.
    pub fn pids(&self, i: usize) -> Vec<i32> {
        let out = Std::new("ip")
            .args(["netns", "pids", &self.names[i]])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Processes running in host `i`'s namespace, one command line each.
    pub fn processes(&self, i: usize) -> String {
        let mut cmds = String::new();
        for pid in self.pids(i) {
            if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/cmdline")) {
                cmds.push_str(&c.replace('\0', " "));
                cmds.push('\n');
            }
        }
        cmds
    }

    /// Runs `f` in a thread that has joined host `i`'s network namespace (setns(2)):
    /// the sockets it makes live in that namespace, also after the thread ends, and
    /// are this process's (closed when dropped). Only that thread moves: this process
    /// stays where it is, so [`Drop`] never counts it among the namespace's processes.
    pub fn in_netns<T: Send>(&self, i: usize, f: impl FnOnce() -> T + Send) -> T {
        use std::os::fd::AsRawFd;
        let path = format!("/var/run/netns/{}", self.names[i]);
        std::thread::scope(|s| {
            s.spawn(|| {
                let ns = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
                // SAFETY: setns on a file descriptor this thread holds open.
                let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .unwrap()
        })
    }

    /// `ip netns exec NS ARGS` in host `i`'s namespace; stdout, or why not.
    pub fn exec(&self, i: usize, args: &[&str]) -> Result<String, String> {
        let out = Std::new("ip")
            .args(["netns", "exec", &self.names[i]])
            .args(args)
            .output()
            .map_err(|e| format!("ip netns exec: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{args:?} in {}: {}",
                self.names[i],
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Host `i`'s network namespace as `/proc/PID/ns/net` names it (`net:[...]`).
    pub fn netns(&self, i: usize) -> String {
        let out = Std::new("ip")
            .args([
                "netns",
                "exec",
                &self.names[i],
                "readlink",
                "/proc/self/ns/net",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for c in &mut self.sshd {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The sessions sshd started, and whatever they left, go too.
        for i in 0..self.names.len() {
            for pid in self.pids(i) {
                // SAFETY: killing a process this test's namespace holds.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        for ns in &self.names {
            let _ = sh(&["ip", "netns", "del", ns]);
        }
        if let Some(br) = &self.bridge {
            let _ = sh(&["ip", "link", "del", br]);
        }
    }
}
