//! Hosts in an experiment file: `on = [...]` (every config on each host: one more
//! dimension of the plan) and `host = "b"` in `[service]`, `[monitor]` and
//! `[workload]` (which inventory host each part of a trial runs on; docs/fleet.md,
//! "The server on its own host").
//!
//! The file only names hosts; whether a name is in the inventory is checked by whoever
//! reads the inventory (the CLI, before anything runs), so each [`HostRef`] keeps the
//! place it was written at for that message. What can be judged from the file alone
//! is judged here: a `[profile]` elsewhere is not supported yet, and `on` and
//! `[workload] host` cannot both say where the workload runs. (That the process probe
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
/// place the workload, and a profile cannot be taken on another host yet.
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
    if let Some(p) = profile {
        if let Some(h) = profile_host {
            return Err(loc.at(
                h.span().start,
                "[profile] host: profiling on another host is not supported yet (docs/fleet.md, \"Not yet\"); leave host out to profile this machine, or run `perflab profile` on that host",
            ));
        }
        if let Some(h) = service.and_then(|s| s.host.as_ref()).filter(|_| p.service) {
            let message = format!(
                "[profile] would profile the service's process, which runs on host {:?} ([service] host): profiling on another host is not supported yet; set target = \"system\" to profile this machine",
                h.name
            );
            return Err(match profile_target {
                Some(t) => loc.at(t.span().start, message),
                None => loc.nowhere(message),
            });
        }
    }
    Ok(())
}
