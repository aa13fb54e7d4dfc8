//! The hosts perflab may drive: `[[hosts]]` tables (a `hosts.toml`, or the experiment
//! file itself) or an Ansible INI inventory. Keys or an agent only: a password or a
//! passphrase in the file is refused, naming the line, so one is never copied into a
//! store or a log.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One host.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// What experiments and `--on` call it.
    pub name: String,
    /// Host name or IP address ssh connects to (default: `name`).
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub user: Option<String>,
    /// A private key file (relative paths: to the inventory's directory).
    #[serde(default)]
    pub identity: Option<PathBuf>,
    /// A known-hosts file for this host (else the user's own).
    #[serde(default)]
    pub known_hosts: Option<PathBuf>,
    /// ProxyJump: `[user@]host[:port]`.
    #[serde(default)]
    pub jump: Option<String>,
    /// The perflab binary to run there (else this one is copied when it fits).
    #[serde(default)]
    pub perflab: Option<String>,
}

impl Host {
    /// A host known by its name alone: ssh's own defaults (and `~/.ssh/config`) for the
    /// rest.
    pub fn named(name: impl Into<String>) -> Host {
        Host {
            name: name.into(),
            address: None,
            port: None,
            user: None,
            identity: None,
            known_hosts: None,
            jump: None,
            perflab: None,
        }
    }

    /// The address ssh connects to.
    pub fn address(&self) -> &str {
        self.address.as_deref().unwrap_or(&self.name)
    }
}

/// A list of hosts with unique names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inventory {
    pub hosts: Vec<Host>,
}

/// What is wrong with an inventory, with the file and line.
#[derive(Debug, thiserror::Error)]
#[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct InventoryError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

const SECRETS: &[&str] = &[
    "password",
    "passphrase",
    "ansible_password",
    "ansible_ssh_pass",
    "ansible_ssh_password",
    "ansible_become_password",
    "ansible_become_pass",
];

const NO_SECRETS: &str =
    "no passwords or passphrases in inventories: give an `identity` key file or use ssh-agent";

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    hosts: Vec<toml::Table>,
}

impl Inventory {
    /// Reads `path`: an Ansible INI inventory when it does not end in `.toml`, else
    /// `[[hosts]]` tables (other tables of the file, an experiment's, are ignored).
    pub fn load(path: &Path) -> Result<Inventory, InventoryError> {
        let text = std::fs::read_to_string(path).map_err(|e| InventoryError {
            path: path.into(),
            line: None,
            message: format!("cannot read the inventory: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut inv = if path.extension().is_some_and(|e| e == "toml") {
            Inventory::from_toml(path, &text)?
        } else {
            Inventory::from_ini(path, &text)?
        };
        for h in &mut inv.hosts {
            for p in [&mut h.identity, &mut h.known_hosts].into_iter().flatten() {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
        }
        Ok(inv)
    }

    /// `[[hosts]]` tables.
    pub fn from_toml(path: &Path, text: &str) -> Result<Inventory, InventoryError> {
        let err = |line: Option<usize>, message: String| InventoryError {
            path: path.into(),
            line,
            message,
        };
        let line_of = |needle: &str| {
            text.lines()
                .position(|l| l.trim_start().starts_with(needle))
                .map(|i| i + 1)
        };
        let file: File = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            err(line, e.message().to_string())
        })?;
        let mut hosts = Vec::new();
        for t in file.hosts {
            if let Some(k) = t.keys().find(|k| SECRETS.contains(&k.as_str())) {
                return Err(err(line_of(k), format!("`{k}`: {NO_SECRETS}")));
            }
            let host: Host = toml::Value::Table(t)
                .try_into()
                .map_err(|e: toml::de::Error| err(None, format!("[[hosts]]: {}", e.message())))?;
            hosts.push(host);
        }
        Inventory::checked(hosts).map_err(|m| err(None, m))
    }

    /// An Ansible INI inventory: `name ansible_host=… ansible_port=… ansible_user=…
    /// ansible_ssh_private_key_file=…` lines under `[group]` headers; `:vars` and
    /// `:children` sections are skipped.
    pub fn from_ini(path: &Path, text: &str) -> Result<Inventory, InventoryError> {
        let err = |line: usize, message: String| InventoryError {
            path: path.into(),
            line: Some(line),
            message,
        };
        let mut hosts: Vec<Host> = Vec::new();
        let mut skip = false;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if line.starts_with('[') {
                skip = line.contains(":vars") || line.contains(":children");
                if !skip && !line.ends_with(']') {
                    return Err(err(n, format!("{line:?}: a group header ends with `]`")));
                }
                continue;
            }
            let words = shlex::split(line).ok_or_else(|| err(n, "unbalanced quotes".into()))?;
            if skip {
                if let Some(k) = words
                    .iter()
                    .filter_map(|w| w.split_once('=').map(|(k, _)| k))
                    .find(|k| SECRETS.contains(k))
                {
                    return Err(err(n, format!("`{k}`: {NO_SECRETS}")));
                }
                continue;
            }
            let mut host = Host::named(words[0].clone());
            for w in &words[1..] {
                let (k, v) = w
                    .split_once('=')
                    .ok_or_else(|| err(n, format!("{w:?}: expected key=value")))?;
                match k {
                    "ansible_host" => host.address = Some(v.into()),
                    "ansible_port" => {
                        host.port = Some(v.parse().map_err(|_| {
                            err(n, format!("ansible_port {v:?}: expected a port number"))
                        })?)
                    }
                    "ansible_user" => host.user = Some(v.into()),
                    "ansible_ssh_private_key_file" => host.identity = Some(v.into()),
                    "perflab" => host.perflab = Some(v.into()),
                    k if SECRETS.contains(&k) => {
                        return Err(err(n, format!("`{k}`: {NO_SECRETS}")))
                    }
                    // Other Ansible variables mean nothing to perflab.
                    _ => {}
                }
            }
            // A host listed in several groups is one host.
            if !hosts.iter().any(|h| h.name == host.name) {
                hosts.push(host);
            }
        }
        Inventory::checked(hosts).map_err(|m| err(0, m))
    }

    fn checked(hosts: Vec<Host>) -> Result<Inventory, String> {
        for (i, h) in hosts.iter().enumerate() {
            if h.name.is_empty() || h.name.contains(|c: char| c.is_whitespace() || c == ',') {
                return Err(format!("host name {:?} is not a name", h.name));
            }
            if hosts[..i].iter().any(|o| o.name == h.name) {
                return Err(format!("host {:?} is listed twice", h.name));
            }
        }
        Ok(Inventory { hosts })
    }

    /// The host called `name`, or an error listing the names.
    pub fn get(&self, name: &str) -> Result<&Host, String> {
        self.hosts.iter().find(|h| h.name == name).ok_or_else(|| {
            format!(
                "host {name:?} is not in the inventory (hosts: {})",
                if self.hosts.is_empty() {
                    "none".to_string()
                } else {
                    self.hosts
                        .iter()
                        .map(|h| h.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_hosts_with_every_key() {
        let inv = Inventory::from_toml(
            Path::new("hosts.toml"),
            r#"
[experiment]
name = "x"

[[hosts]]
name = "a"
address = "10.0.0.2"
port = 2222
user = "bench"
identity = "keys/id"
known_hosts = "kh"
jump = "bastion"
perflab = "/opt/perflab"

[[hosts]]
name = "b"
"#,
        )
        .unwrap();
        assert_eq!(inv.hosts.len(), 2);
        let a = inv.get("a").unwrap();
        assert_eq!(a.port, Some(2222));
        assert_eq!(a.address(), "10.0.0.2");
        assert_eq!(inv.get("b").unwrap().address(), "b");
        assert!(inv.get("c").unwrap_err().contains("a, b"));
    }

    #[test]
    fn a_password_is_refused_with_its_line() {
        let e = Inventory::from_toml(
            Path::new("h.toml"),
            "[[hosts]]\nname = \"a\"\npassword = \"hunter2\"\n",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().contains("ssh-agent"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = Inventory::from_ini(
            Path::new("hosts"),
            "[web]\nw1 ansible_host=10.0.0.5 ansible_ssh_pass=hunter2\n",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn ansible_ini_groups_vars_and_children() {
        let inv = Inventory::from_ini(
            Path::new("hosts"),
            "# fleet\n[web]\nw1 ansible_host=10.0.0.5 ansible_port=2200 ansible_user=root\n\
             w2 ansible_ssh_private_key_file=/k\n\n[db]\nw1\nd1\n\n[all:vars]\nansible_python_interpreter=/usr/bin/python3\n\
             [prod:children]\nweb\n",
        )
        .unwrap();
        let names: Vec<_> = inv.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["w1", "w2", "d1"]);
        let w1 = inv.get("w1").unwrap();
        assert_eq!((w1.address(), w1.port), ("10.0.0.5", Some(2200)));
        let e = Inventory::from_ini(Path::new("hosts"), "[web]\nw1 ansible_port=x\n").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn duplicate_names_are_refused() {
        let e = Inventory::from_toml(
            Path::new("h.toml"),
            "[[hosts]]\nname = \"a\"\n[[hosts]]\nname = \"a\"\n",
        )
        .unwrap_err();
        assert!(e.message.contains("twice"), "{e}");
    }
}
