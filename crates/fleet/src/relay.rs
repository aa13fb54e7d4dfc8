//! One perflab subcommand run on inventory hosts, its output relayed here as it comes:
//! `perflab top --on b`, a live view. (Measurements — `perflab doctor --on b` among
//! them — go through the one remote path of trials, `perflab worker`, instead.)
//!
//! The host gets perflab exactly as a remote trial does ([`crate::deploy::ensure`]),
//! then one ssh session (batch mode, bounded, no pty: [`crate::ssh`]) runs `perflab
//! SUBCOMMAND ARGS --stop-at-stdin-eof` there. Its stdout and stderr come back line by
//! line, to a sink the command gives, as soon as each line is read; its exit status is
//! the subcommand's own, so its 4 or 5 means here what it means there.
//!
//! Why the hidden flag: without a pty no SIGHUP reaches the remote process when the
//! session ends, so a `perflab top` there would run on until it next failed to write.
//! With [`STOP_AT_EOF`] the remote command watches its stdin ([`stop_at_stdin_eof`])
//! and stops as Ctrl-C would stop it when that ends; the controller ends a relay by
//! closing the session's stdin (Ctrl-C here, or the reader of our output gone), and the
//! same happens when the controller dies or the link drops.
//!
//! Why the marker line: before the remote shell runs perflab, stderr is ssh's own (a
//! refused connection, a host key warning). The remote script first prints [`MARK`] on
//! stderr, so what came before it is kept for the error message of a session that
//! never started (and printed, once, if it did), and what comes after is perflab's,
//! relayed as it comes. The session is in a process group of its own, so a terminal's
//! Ctrl-C reaches only this perflab, which then hangs up in order.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use perflab_units::Phrase;
use serde_json::{Map, Value};

use crate::inventory::{Host, Inventory};
use crate::ssh::Ssh;

/// The hidden flag of a relayed subcommand: stop (as on Ctrl-C) when stdin ends.
pub const STOP_AT_EOF: &str = "--stop-at-stdin-eof";

/// The line the remote script prints on stderr just before it runs perflab.
const MARK: &str = "perflab-relay: starting";

/// How long a hung-up session may take to end before its ssh client is killed.
const GRACE: Duration = Duration::from_secs(5);

/// The far end of a relay: reads stdin to its end in a thread of its own, then sets
/// `stop` (the command's Ctrl-C flag), so the command ends as it would on Ctrl-C.
pub fn stop_at_stdin_eof(stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 512];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
}

/// The hosts the option `on` names, from the inventory file the option `hosts` names
/// or else `hosts.toml` in the current directory; every problem is the user's to fix
/// (a usage error), said before any host is contacted, with the options as fields (a
/// command names them by its flags, `--on`, `--hosts`).
pub fn resolve(hosts_file: Option<&Path>, on: &[String]) -> Result<Vec<Host>, Phrase> {
    let path = hosts_file.map_or_else(|| PathBuf::from("hosts.toml"), Path::to_path_buf);
    if hosts_file.is_none() && !path.exists() {
        return Err(Phrase::field("on")
            .then(" needs an inventory: no hosts.toml here; name one with ")
            .and_field("hosts")
            .then(" FILE"));
    }
    let inventory =
        Inventory::load(&path).map_err(|e| Phrase::field("hosts").then(format!(" {e}")))?;
    let mut hosts = Vec::new();
    for (i, name) in on.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(Phrase::field("on").then(": an empty host name"));
        }
        if on[..i].contains(name) {
            return Err(Phrase::field("on").then(format!(": {name} is named twice")));
        }
        hosts.push(
            inventory
                .get(name)
                .map_err(|e| Phrase::field("on").then(format!(" {name}: {e}")))?
                .clone(),
        );
    }
    Ok(hosts)
}

/// Which stream of the remote command a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// How a relayed command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited there with this status.
    Exited(u8),
    /// Stopped from here (Ctrl-C): the session was closed and the command stopped.
    Interrupted,
    /// The sink refused a line (our reader went away): the session was closed.
    ReaderGone,
}

/// Why a host's command could not run; the message names the host and says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RelayError {
    pub host: String,
    pub message: String,
}

/// Runs perflab subcommands on hosts.
pub struct Relay {
    pub ssh: Ssh,
    /// Where the stripped binary is prepared before it is copied (one folder per host
    /// under it).
    pub scratch: PathBuf,
    /// Set on Ctrl-C: every session is closed and its command stops.
    pub stop: Arc<AtomicBool>,
}

impl Relay {
    /// Puts perflab on `host` and runs `perflab ARGS --stop-at-stdin-eof` there (`args`
    /// starts with the subcommand, which must take that flag), giving each line of its
    /// output to `sink` as it comes; `sink` returns false when it wants no more.
    pub fn run(
        &self,
        host: &Host,
        args: &[String],
        sink: &mut dyn FnMut(Stream, &str) -> bool,
    ) -> Result<Ended, RelayError> {
        let err = |message: String| RelayError {
            host: host.name.clone(),
            message,
        };
        let at = format!("host {} ({})", host.name, host.address());
        let scratch = self.scratch.join(&host.name);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| err(format!("{}: {e}", scratch.display())))?;
        let perflab = crate::deploy::ensure(&self.ssh, host, &scratch).map_err(&err)?;
        if self.stop.load(Ordering::SeqCst) {
            return Ok(Ended::Interrupted);
        }
        let mut words: Vec<&str> = args.iter().map(String::as_str).collect();
        words.push(STOP_AT_EOF);
        let script = format!(
            "echo '{MARK}' >&2 && exec {perflab} {}",
            crate::ssh::quote(&words)
        );
        let mut child = self
            .ssh
            .script(host, &script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a terminal's Ctrl-C reaches perflab alone.
            .process_group(0)
            .spawn()
            .map_err(|e| err(format!("cannot run {}: {e}", self.ssh.program)))?;
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().expect("piped stdout");
        let errs = child.stderr.take().expect("piped stderr");
        forward(out, Stream::Out, tx.clone());
        forward(errs, Stream::Err, tx);
        let mut started = false;
        let mut early: Vec<String> = Vec::new();
        let mut open = 2;
        let mut ended = None;
        while open > 0 {
            if ended.is_none() && self.stop.load(Ordering::SeqCst) {
                crate::link::hang_up(&mut child, GRACE);
                ended = Some(Ended::Interrupted);
            }
            let (stream, line) = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((stream, Some(line))) => (stream, line),
                Ok((_, None)) => {
                    open -= 1;
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            if stream == Stream::Err && !started {
                if line == MARK {
                    started = true;
                    for l in early.drain(..) {
                        sink(Stream::Err, &l);
                    }
                } else {
                    early.push(line);
                }
                continue;
            }
            if ended != Some(Ended::ReaderGone) && !sink(stream, &line) {
                crate::link::hang_up(&mut child, GRACE);
                ended = Some(Ended::ReaderGone);
            }
        }
        let status = child.wait().map_err(|e| err(format!("{at}: ssh: {e}")))?;
        if let Some(e) = ended {
            return Ok(e);
        }
        let last = early
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string());
        match (status.code(), started) {
            (None, _) => Err(err(format!("{at}: the ssh client was killed ({status})"))),
            (Some(c), false) => Err(err(format!(
                "{at}: {}",
                last.unwrap_or_else(|| format!("ssh ended before perflab started (exit {c})"))
            ))),
            (Some(c @ (126 | 127)), true) => Err(err(format!(
                "{at}: no usable perflab there ({perflab} could not be run, exit {c}): install one, or name it with `perflab = \"PATH\"` in the inventory"
            ))),
            (Some(c), true) => Ok(Ended::Exited(u8::try_from(c).unwrap_or(1))),
        }
    }

    /// [`Relay::run`] on every host at once, a thread each: `sink` gets each line with
    /// the index of its host as it arrives; the results come back in the hosts' order.
    /// A sink that returns false ends every session.
    pub fn run_all(
        &self,
        hosts: &[Host],
        args: &[String],
        mut sink: impl FnMut(usize, Stream, &str) -> bool,
    ) -> Vec<Result<Ended, RelayError>> {
        let gone = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<(usize, Stream, String)>();
        std::thread::scope(|s| {
            let handles: Vec<_> = hosts
                .iter()
                .enumerate()
                .map(|(i, host)| {
                    let (tx, gone) = (tx.clone(), &gone);
                    s.spawn(move || {
                        self.run(host, args, &mut |stream, line| {
                            !gone.load(Ordering::SeqCst)
                                && tx.send((i, stream, line.to_string())).is_ok()
                        })
                    })
                })
                .collect();
            drop(tx);
            for (i, stream, line) in rx {
                if !gone.load(Ordering::SeqCst) && !sink(i, stream, &line) {
                    gone.store(true, Ordering::SeqCst);
                }
            }
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(RelayError {
                            host: String::new(),
                            message: "the relay thread panicked".into(),
                        })
                    })
                })
                .collect()
        })
    }
}

/// Sends each line of `r` on `tx`, then `None` at its end.
fn forward(
    r: impl Read + Send + 'static,
    stream: Stream,
    tx: mpsc::Sender<(Stream, Option<String>)>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send((stream, Some(line))).is_err() {
                return;
            }
        }
        let _ = tx.send((stream, None));
    });
}

/// A JSON object with `"host": name` put first; None when `text` is not a JSON object.
pub fn with_host(text: &str, name: &str) -> Option<Value> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    let mut m = Map::new();
    m.insert("host".into(), Value::String(name.into()));
    for (k, v) in fields {
        if k != "host" {
            m.insert(k, v);
        }
    }
    Some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_added_to_an_object_only() {
        let v = with_host(r#"{"t": 1.0, "sockets": {"close_wait": 3}}"#, "b").unwrap();
        assert_eq!(v["host"], "b");
        assert_eq!(v["sockets"]["close_wait"], 3);
        assert!(with_host("[1]", "b").is_none());
        assert!(with_host("not json", "b").is_none());
    }

    #[test]
    fn inventory_problems_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hosts.toml");
        std::fs::write(&f, "[[hosts]]\nname = \"a\"\n\n[[hosts]]\nname = \"b\"\n").unwrap();
        let on = |names: &[&str]| {
            resolve(
                Some(&f),
                &names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(on(&["b"]).unwrap()[0].name, "b");
        // The options are fields; a command names them by its flags.
        let flag = |f: &str| format!("--{f}");
        let e = on(&["zz"]).unwrap_err();
        assert_eq!(e.subject(), Some("on"));
        let e = e.render(&flag);
        assert!(
            e.contains("--on zz") && e.contains("not in the inventory (hosts: a, b)"),
            "{e}"
        );
        assert!(on(&["a", "a"]).unwrap_err().render(&flag).contains("twice"));
        let e = resolve(Some(&dir.path().join("nope.toml")), &["a".into()])
            .unwrap_err()
            .render(&flag);
        assert!(e.starts_with("--hosts ") && e.contains("nope.toml"), "{e}");
    }

    /// A fake ssh client: runs the remote script with sh here, ignoring its options.
    fn fake_ssh(dir: &Path) -> Ssh {
        let p = dir.join("ssh");
        std::fs::write(
            &p,
            "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done; shift; exec sh -c \"$1\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        Ssh {
            program: p.display().to_string(),
            ..Default::default()
        }
    }

    fn host(perflab: &str) -> Host {
        Host {
            address: Some("10.9.0.2".into()),
            perflab: Some(perflab.into()),
            ..Host::named("b")
        }
    }

    fn relay(dir: &Path) -> Relay {
        Relay {
            ssh: fake_ssh(dir),
            scratch: dir.join("scratch"),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    #[test]
    fn lines_and_the_exit_status_come_back() {
        let dir = tempfile::tempdir().unwrap();
        // A "perflab" that prints its arguments and a warning, then exits 4.
        let fake = dir.path().join("perflab");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho \"args: $*\"\necho 'warning: w' >&2\nexit 4\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = relay(dir.path());
        let mut seen = Vec::new();
        let end = r
            .run(
                &host(fake.to_str().unwrap()),
                &["top".into(), "--json".into()],
                &mut |s, l| {
                    seen.push((s, l.to_string()));
                    true
                },
            )
            .unwrap();
        assert_eq!(end, Ended::Exited(4));
        assert!(seen.contains(&(Stream::Out, "args: top --json --stop-at-stdin-eof".into())));
        assert!(seen.contains(&(Stream::Err, "warning: w".into())));
        assert!(!seen.iter().any(|(_, l)| l == MARK), "{seen:?}");
    }

    #[test]
    fn a_missing_perflab_and_a_failed_connection_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let r = relay(dir.path());
        let e = r
            .run(
                &host("/nonexistent/perflab"),
                &["top".into()],
                &mut |_, _| true,
            )
            .unwrap_err();
        assert!(
            e.message
                .starts_with("host b (10.9.0.2): no usable perflab"),
            "{e}"
        );
        // ssh failing before the remote shell runs: its last words are the reason.
        let p = dir.path().join("ssh-down");
        std::fs::write(
            &p,
            "#!/bin/sh\necho 'ssh: connect to host 10.9.0.2 port 22: No route to host' >&2\nexit 255\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = Relay {
            ssh: Ssh {
                program: p.display().to_string(),
                ..Default::default()
            },
            ..r
        };
        let e = r
            .run(&host("/x/perflab"), &["top".into()], &mut |_, _| true)
            .unwrap_err();
        assert_eq!(
            e.message,
            "host b (10.9.0.2): ssh: connect to host 10.9.0.2 port 22: No route to host"
        );
    }

    #[test]
    fn a_stop_closes_the_session_and_the_far_end_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        // A "perflab" that talks until its stdin ends, as --stop-at-stdin-eof makes it.
        let fake = dir.path().join("perflab");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho line\ncat >/dev/null\necho stopped >&2\nexit 130\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = relay(dir.path());
        let stop = r.stop.clone();
        let started = std::time::Instant::now();
        let mut errs = Vec::new();
        let end = r
            .run(
                &host(fake.to_str().unwrap()),
                &["top".into()],
                &mut |s, l| {
                    if s == Stream::Out {
                        stop.store(true, Ordering::SeqCst);
                    } else {
                        errs.push(l.to_string());
                    }
                    true
                },
            )
            .unwrap();
        assert_eq!(end, Ended::Interrupted);
        assert!(started.elapsed() < GRACE, "{:?}", started.elapsed());
        assert_eq!(errs, ["stopped"]);
    }
}
