//! The transport: the system `ssh` client, so a user's `~/.ssh/config`, ControlMaster,
//! ProxyJump and agent just work. Every connection is non-interactive (`BatchMode=yes`:
//! no password prompt can hang a run), bounded (`ConnectTimeout`), watched
//! (`ServerAliveInterval`: a dead link ends the session in seconds, not at TCP's
//! timeout) and without a pty (`-T`: the remote worker gets no SIGHUP, it stops when
//! its stdin closes). Host keys are checked as OpenSSH checks them; the only loosening
//! offered is `accept-new` (trust a host seen for the first time), never `no`.

use std::process::Command;

use crate::inventory::Host;

/// How every ssh connection of a run is made.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// The ssh client (default `ssh`).
    pub program: String,
    /// `StrictHostKeyChecking=accept-new` instead of `yes`.
    pub accept_new_host_keys: bool,
    /// Seconds to wait for a connection.
    pub connect_timeout_s: u32,
    /// Seconds between keep-alives; three unanswered end the session.
    pub alive_interval_s: u32,
}

impl Default for Ssh {
    fn default() -> Ssh {
        Ssh {
            program: "ssh".into(),
            accept_new_host_keys: false,
            connect_timeout_s: 10,
            alive_interval_s: 5,
        }
    }
}

impl Ssh {
    /// The options and destination for `host`, without the remote command.
    pub fn args(&self, host: &Host) -> Vec<String> {
        let mut a: Vec<String> = vec!["-T".into()];
        let mut opt = |k: &str, v: String| {
            a.push("-o".into());
            a.push(format!("{k}={v}"));
        };
        opt("BatchMode", "yes".into());
        opt("ConnectTimeout", self.connect_timeout_s.to_string());
        opt("ServerAliveInterval", self.alive_interval_s.to_string());
        opt("ServerAliveCountMax", "3".into());
        opt(
            "StrictHostKeyChecking",
            if self.accept_new_host_keys {
                "accept-new"
            } else {
                "yes"
            }
            .into(),
        );
        if let Some(kh) = &host.known_hosts {
            opt("UserKnownHostsFile", kh.display().to_string());
        }
        if let Some(id) = &host.identity {
            opt("IdentitiesOnly", "yes".into());
            a.push("-i".into());
            a.push(id.display().to_string());
        }
        if let Some(p) = host.port {
            a.push("-p".into());
            a.push(p.to_string());
        }
        if let Some(j) = &host.jump {
            a.push("-J".into());
            a.push(j.clone());
        }
        a.push(match &host.user {
            Some(u) => format!("{u}@{}", host.address()),
            None => host.address().to_string(),
        });
        a
    }

    /// `ssh … HOST -- 'remote command'`: the words are quoted for the remote shell.
    pub fn command(&self, host: &Host, remote: &[&str]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(self.args(host));
        c.arg("--");
        c.arg(quote(remote));
        c
    }

    /// `ssh … HOST -- SCRIPT`: a shell script run as is.
    pub fn script(&self, host: &Host, script: &str) -> Command {
        let mut c = Command::new(&self.program);
        c.args(self.args(host));
        c.arg("--");
        c.arg(script);
        c
    }

    /// `perflab worker` on `host` (`perflab`: the word to run it by there), its stdin,
    /// stdout and stderr piped, in a process group of its own — a terminal's Ctrl-C
    /// reaches perflab alone, which then ends the session in order.
    pub fn worker(&self, host: &Host, perflab: &str) -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        self.script(host, &format!("exec {perflab} worker"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
    }
}

/// Words quoted for a POSIX shell.
pub fn quote(words: &[&str]) -> String {
    shlex::try_join(words.iter().copied()).unwrap_or_else(|_| {
        // A NUL byte: cannot be passed at all; quote it away rather than panic.
        words
            .iter()
            .map(|w| format!("'{}'", w.replace('\0', "").replace('\'', r"'\''")))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "b".into(),
            address: Some("10.9.0.2".into()),
            port: Some(2222),
            user: Some("bench".into()),
            identity: Some("/k/id".into()),
            known_hosts: Some("/k/known_hosts".into()),
            jump: Some("bastion".into()),
            perflab: None,
        }
    }

    #[test]
    fn every_connection_is_batch_bounded_and_checks_host_keys() {
        let a = Ssh::default().args(&host()).join(" ");
        for want in [
            "-T",
            "BatchMode=yes",
            "ConnectTimeout=10",
            "ServerAliveInterval=5",
            "StrictHostKeyChecking=yes",
            "UserKnownHostsFile=/k/known_hosts",
            "IdentitiesOnly=yes -i /k/id",
            "-p 2222",
            "-J bastion",
        ] {
            assert!(a.contains(want), "{want} missing: {a}");
        }
        assert!(a.ends_with("bench@10.9.0.2"), "{a}");
        let accept = Ssh {
            accept_new_host_keys: true,
            ..Default::default()
        };
        assert!(accept
            .args(&host())
            .contains(&"StrictHostKeyChecking=accept-new".to_string()));
        assert!(!a.contains("StrictHostKeyChecking=no"));
    }

    #[test]
    fn remote_words_are_quoted() {
        assert_eq!(quote(&["perflab", "worker"]), "perflab worker");
        assert_eq!(quote(&["/a b/perflab", "it's"]), r#"'/a b/perflab' "it's""#);
    }
}
