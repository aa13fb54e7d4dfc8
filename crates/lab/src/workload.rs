//! Workloads described by a table (every kind but `command`: `kind = "http"`,
//! `kind = "scimark"`, ...): the table is kept as written beside its
//! `perflab_workloads::spec::Kind` (`WorkloadSpec::Options`), checked once when the
//! file is read (placeholders known, the options deserialize and validate with sample
//! values through [`Kind::options`]), and rendered per trial. Nothing here names a kind.

use std::collections::BTreeMap;

use perflab_units::Phrase;
use perflab_workloads::spec::{Kind, KindSpec};
use toml::Spanned;

use crate::error::FileError;
use crate::experiment::{Checker, WorkloadSpec};
use crate::template::{Template, BUILTINS};

/// Checks a table workload and keeps it.
pub(crate) fn table_spec(
    c: &Checker,
    kind: Kind,
    w: Spanned<toml::Table>,
) -> Result<WorkloadSpec, FileError> {
    let span = w.span();
    let mut table = w.into_inner();
    table.remove("kind");
    let known = |n: &str| BUILTINS.contains(&n) || c.names.iter().any(|m| m == n);
    // The table's span may cover only its header: search from there to the end.
    let region = &c.loc.text[span.start.min(c.loc.text.len())..];
    let locate = |needle: &str| span.start + region.find(needle).unwrap_or(0);
    // Every string's placeholders must name something.
    let mut strings = Vec::new();
    collect_strings(&toml::Value::Table(table.clone()), &mut strings);
    for s in &strings {
        if let Err(u) = Template::parse(s, &known) {
            let at = locate(s) + u.offset;
            return Err(c.loc.at(
                at,
                format!(
                    "unknown placeholder {{{}}}: expected a matrix parameter or a built-in ({})",
                    u.name,
                    c.names
                        .iter()
                        .map(String::as_str)
                        .chain(BUILTINS.iter().copied())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    // The options must make sense once rendered.
    if let Err(e) = checked(kind, &table, &c.sample) {
        let msg = e.to_string();
        // A value of the wrong type: name its key and say the type as TOML does.
        let msg = match key_of_invalid(&msg, &table) {
            Some(k) => format!("`{k}`: {msg}"),
            None => msg,
        };
        let msg = crate::experiment::plain_types(&msg);
        // Point at the key: the field the check names (typed). serde's own messages
        // (a wrong type, an unknown key) carry no field, nor do the checks that still
        // return text (scimark, mem, crypto, suite): for those, the key they quote or
        // their first word.
        let key = match e.subject() {
            Some(field) => field.to_string(),
            None => msg
                .split('`')
                .nth(1)
                .or_else(|| msg.split([' ', ':']).next())
                .unwrap_or("")
                .to_string(),
        };
        let key = key.as_str();
        let at = [format!("\n{key} "), format!("\n{key}=")]
            .iter()
            .find_map(|k| region.find(k.as_str()).map(|i| span.start + i + 1))
            .or_else(|| (!key.is_empty() && region.contains(key)).then(|| locate(key)))
            .unwrap_or(span.start);
        return Err(c.loc.at(at, format!("[workload] kind = \"{kind}\": {msg}")));
    }
    Ok(WorkloadSpec::Options { kind, table })
}

/// The option a serde "invalid type: string \"two\", expected usize" message is
/// about: the one whose value serde describes so (serde_json names no field).
fn key_of_invalid(msg: &str, t: &toml::Table) -> Option<String> {
    if !msg.starts_with("invalid type") {
        return None;
    }
    t.iter()
        .find(|(_, v)| {
            let said = match v {
                toml::Value::String(s) => format!("string {s:?}"),
                toml::Value::Integer(i) => format!("integer `{i}`"),
                toml::Value::Float(f) => format!("floating point `{f}"),
                toml::Value::Boolean(b) => format!("boolean `{b}`"),
                toml::Value::Array(_) => "sequence".into(),
                toml::Value::Table(_) => "map".into(),
                _ => return false,
            };
            msg.contains(&said)
        })
        .map(|(k, _)| k.clone())
}

fn collect_strings(v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::String(s) => out.push(s.clone()),
        toml::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        toml::Value::Table(t) => t.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// `"{name}"` and nothing else.
fn whole_placeholder(s: &str) -> bool {
    s.strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(crate::template::is_ident)
}

/// Renders every string; with `typed`, a string that is one placeholder alone takes
/// the type its value reads as (`true`, `16384`, `2.5`).
fn render_as(t: &toml::Table, vars: &BTreeMap<String, String>, typed: bool) -> toml::Table {
    fn go(v: &toml::Value, vars: &BTreeMap<String, String>, typed: bool) -> toml::Value {
        match v {
            toml::Value::String(s) => {
                let text = Template::parse(s, &|_| true)
                    .map(|t| t.render(vars))
                    .unwrap_or_else(|_| s.clone());
                // A string that is one placeholder alone (`direct = "{direct}"`) takes
                // the parameter's type: a matrix of booleans or numbers can drive
                // options that want them.
                if typed && whole_placeholder(s) {
                    if let Ok(b) = text.parse::<bool>() {
                        return toml::Value::Boolean(b);
                    }
                    if let Ok(i) = text.parse::<i64>() {
                        return toml::Value::Integer(i);
                    }
                    if let Ok(f) = text.parse::<f64>() {
                        return toml::Value::Float(f);
                    }
                }
                toml::Value::String(text)
            }
            toml::Value::Array(a) => {
                toml::Value::Array(a.iter().map(|x| go(x, vars, typed)).collect())
            }
            toml::Value::Table(t) => toml::Value::Table(
                t.iter()
                    .map(|(k, x)| (k.clone(), go(x, vars, typed)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    t.iter()
        .map(|(k, v)| (k.clone(), go(v, vars, typed)))
        .collect()
}

/// A table kind's options, rendered for one trial and checked, as data.
pub fn rendered(
    kind: Kind,
    t: &toml::Table,
    vars: &BTreeMap<String, String>,
) -> Result<KindSpec, String> {
    checked(kind, t, vars).map_err(String::from)
}

/// As [`rendered`], the error naming its option as a field.
fn checked(
    kind: Kind,
    t: &toml::Table,
    vars: &BTreeMap<String, String>,
) -> Result<KindSpec, Phrase> {
    // Typed first (`direct = "{direct}"` with a boolean matrix); an option that wants
    // text gets the text (`size = "{n}"` with n = 1048576 reads either way).
    kind.options(as_json(&render_as(t, vars, true)))
        .or_else(|e| {
            kind.options(as_json(&render_as(t, vars, false)))
                .map_err(|_| e)
        })
}

/// The TOML table as the JSON value the workload kinds read.
fn as_json(t: &toml::Table) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or_default()
}

impl WorkloadSpec {
    /// The inventory hosts its load runs from (`agents = [...]` of an http workload:
    /// a distributed load; crate fleet runs it). Empty for every other workload.
    pub fn agents(&self) -> Vec<String> {
        match self {
            WorkloadSpec::Command(_) => Vec::new(),
            WorkloadSpec::Options { kind, table } => kind.agents(&as_json(table)),
        }
    }
}
