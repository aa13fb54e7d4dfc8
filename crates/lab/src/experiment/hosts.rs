//! Hosts in an experiment file: `on = [...]` (every config on each host: one more
//! dimension of the plan) and `host = "b"` in `[service]`, `[monitor]`, `[profile]` and
//! `[workload]` (which inventory host each part of a trial runs on; docs/fleet.md,
//! "The server on its own host").
//!
//! The file only names hosts; whether a name is in the inventory is checked by whoever
//! reads the inventory (the CLI, before anything runs), so each [`HostRef`] keeps the
//! place it was written at for that message. What can be judged from the file alone
//! is judged here: a profile of the service is taken where the service runs, and `on`
//! and `[workload] host` cannot both say where the workload runs. (That the process probe
//! follows a service only on the service's own host is `sections::monitor`'s check.)

use super::*;

/// `on = ["a", "b"]`: the host is one more dimension of the plan, `host`, last (the
/// runner's factory sends each trial to its host).
pub(super) fn hosts_dimension(
    loc: &Locator,
    on: &[SStr],
    matrix: &mut Vec<Param>,
) -> Result<(), FileError> {
    let at = on[0].span().start;
    if matrix.iter().any(|p| p.name == "host") {
        return Err(loc.at(
            at,
            "`on` adds the matrix parameter `host`, which [matrix] already has: rename one",
        ));
    }
    let mut values = Vec::new();
    for h in on {
        let name = h.get_ref();
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains(',') {
            return Err(loc.at(
                h.span().start,
                format!("on: host name {name:?} is not a name"),
            ));
        }
        let v = serde_json::Value::String(name.clone());
        if values.contains(&v) {
            return Err(loc.at(h.span().start, format!("on: host {name:?} is listed twice")));
        }
        values.push(v);
    }
    matrix.push(Param {
        name: "host".into(),
        values,
    });
    Ok(())
}

/// A host named by a `host = "..."` key, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRef {
    pub name: String,
    /// The experiment file and the value's 1-based line and column, for messages.
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl HostRef {
    /// Reads the value of `[section] host`.
    pub(super) fn parse(loc: &Locator, s: &SStr, section: &str) -> Result<HostRef, FileError> {
        let name = s.get_ref();
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains(',') {
            return Err(loc.at(
                s.span().start,
                format!("[{section}] host: {name:?} is not a host name (expected an inventory host's name, e.g. host = \"b\")"),
            ));
        }
        let (line, column) = crate::error::line_col(loc.text, s.span().start);
        Ok(HostRef {
            name: name.clone(),
            path: loc.path.to_path_buf(),
            line,
            column,
        })
    }

    /// An error about this key, at its place.
    pub fn error(&self, message: impl Into<String>) -> FileError {
        FileError {
            path: self.path.clone(),
            line: Some(self.line),
            column: Some(self.column),
            message: message.into(),
        }
    }
}

/// The host of an optional `host` key.
pub(super) fn host_of(
    loc: &Locator,
    s: &Option<SStr>,
    section: &str,
) -> Result<Option<HostRef>, FileError> {
    s.as_ref()
        .map(|s| HostRef::parse(loc, s, section))
        .transpose()
}

/// `[workload] host` of a table kind: taken out of the table (no workload kind has a
/// `host` option of its own), located by its line in the table.
pub(super) fn take_table_host(
    loc: &Locator,
    w: &mut Spanned<toml::Table>,
) -> Result<Option<HostRef>, FileError> {
    let start = w.span().start.min(loc.text.len());
    let Some(v) = w.get_mut().remove("host") else {
        return Ok(None);
    };
    let region = &loc.text[start..];
    let at = ["\nhost ", "\nhost="]
        .iter()
        .find_map(|k| region.find(k).map(|i| start + i + 1))
        .unwrap_or(start);
    let toml::Value::String(name) = v else {
        return Err(loc.at(
            at,
            "[workload] host: expected a string, the name of an inventory host",
        ));
    };
    let value_at = at + loc.text[at..].find('"').unwrap_or(0);
    HostRef::parse(loc, &Spanned::new(value_at..value_at, name), "workload").map(Some)
}

/// What the hosts of one file must agree on: `on` and `[workload] host` cannot both
/// place the workload, and a profile of the service is taken on the service's own host
/// (perf sees the processes of its own machine only).
pub(super) fn check(
    loc: &Locator,
    on: bool,
    service: Option<&ServiceSpec>,
    profile: Option<&ProfileConfig>,
    profile_keys: (Option<&SStr>, Option<&SStr>),
    workload: Option<&HostRef>,
) -> Result<(), FileError> {
    if let (Some(w), true) = (workload, on) {
        return Err(w.error(
            "[workload] host and `on` both say where the workload runs: keep one (`on` runs every config on each of its hosts)",
        ));
    }
    let (profile_host, profile_target) = profile_keys;
    let (Some(p), Some(s)) = (profile, service) else {
        return Ok(());
    };
    let (from, to) = (p.host.as_ref(), s.host.as_ref());
    if !p.service || from.map(|h| &h.name) == to.map(|h| &h.name) {
        return Ok(());
    }
    let place = |h: Option<&HostRef>| match h {
        Some(h) => format!("host {:?}", h.name),
        None => "this machine".to_string(),
    };
    let fix = match to {
        Some(h) => format!("set host = {:?} in [profile] to profile it there", h.name),
        None => "leave [profile] host out to profile it here".to_string(),
    };
    let message = format!(
        "[profile] would profile the service's process, which runs on {}{}, from {}: perf sees only the processes of its own machine; {fix}, or set target = \"system\" to profile {} as a whole",
        place(to),
        if to.is_some() { " ([service] host)" } else { "" },
        place(from),
        place(from),
    );
    // At the key that decides (target, else host), else at the table's header.
    let header = || {
        let mut at = 0;
        for line in loc.text.split_inclusive('\n') {
            if line.trim_start().starts_with("[profile]") {
                return Some(at + line.len() - line.trim_start().len());
            }
            at += line.len();
        }
        None
    };
    Err(match (profile_target, profile_host) {
        (Some(t), _) | (None, Some(t)) => loc.at(t.span().start, message),
        (None, None) => match header() {
            Some(at) => loc.at(at, message),
            None => loc.nowhere(message),
        },
    })
}

#[cfg(test)]
mod tests {
    use crate::Experiment;
    use std::path::Path;

    /// An experiment with `[service]` (`service` its extra lines, None: no service)
    /// and `[profile]` (`profile` its lines).
    fn parse(service: Option<&str>, profile: &str) -> Result<Experiment, String> {
        let service = service
            .map(|s| format!("[service]\n{s}command = \"sleep 9\"\n\n"))
            .unwrap_or_default();
        let text = format!(
            "[experiment]\nname = \"x\"\n\n{service}[profile]\n{profile}\n[workload]\nkind = \"command\"\ncommand = \"true\"\n"
        );
        Experiment::parse(Path::new("e.toml"), &text).map_err(|e| e.to_string())
    }

    #[test]
    fn target_workload_is_read_and_refuses_a_host() {
        let e = parse(None, "target = \"workload\"\n").unwrap();
        let p = e.profile.unwrap();
        assert!(p.workload && !p.service);
        let err = parse(None, "host = \"b\"\ntarget = \"workload\"\n").unwrap_err();
        assert!(err.contains("leave [profile] host out"), "{err}");
    }

    #[test]
    fn a_profile_is_taken_where_the_service_runs() {
        // On the service's host, of its process, or system-wide anywhere.
        let e = parse(Some("host = \"b\"\n"), "host = \"b\"\n").unwrap();
        let p = e.profile.unwrap();
        assert_eq!(p.host.unwrap().name, "b");
        assert!(p.service);
        parse(Some(""), "host = \"b\"\ntarget = \"system\"\n").unwrap();
        parse(None, "host = \"b\"\n").unwrap();
        parse(Some("host = \"b\"\n"), "target = \"system\"\n").unwrap();
        // Of a process on another machine: refused at the key that decides.
        let e = parse(Some("host = \"b\"\n"), "").unwrap_err();
        assert!(
            e.starts_with("e.toml:8:1: [profile] would profile the service's process, which runs on host \"b\" ([service] host), from this machine")
                && e.contains("set host = \"b\" in [profile]"),
            "{e}"
        );
        let e = parse(Some("host = \"b\"\n"), "host = \"a\"\n").unwrap_err();
        assert!(e.starts_with("e.toml:9:8: "), "{e}");
        assert!(e.contains("from host \"a\""), "{e}");
        let e = parse(Some(""), "host = \"a\"\ntarget = \"service\"\n").unwrap_err();
        assert!(e.starts_with("e.toml:9:10: "), "{e}");
        assert!(
            e.contains("which runs on this machine, from host \"a\"")
                && e.contains("leave [profile] host out"),
            "{e}"
        );
    }
}
