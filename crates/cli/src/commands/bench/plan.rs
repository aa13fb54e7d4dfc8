//! From `perflab bench` arguments to an experiment: the benchmarked commands with their
//! parameters expanded (by the lab's matrix product and templates, `plan::product`
//! and `Template`), the shell rules checked, and the experiment value (`file.rs`) that
//! the lab's own parser reads back — so a bench is an ordinary experiment run by the
//! one runner (docs/architecture.md), stored with its file text and resumable like
//! any other.
//!
//! Two shapes of matrix, chosen so the store keeps as much structure as it can:
//! - one command with `-L`/`-P` parameters (and no shell, or `sh`): the parameters are
//!   the matrix and the command is the workload's template, so `{NAME}` is rendered by
//!   the lab and the store knows `n=1`, `n=2` (`perflab compare RUN:n=1 RUN:n=2`);
//! - anything else: one matrix parameter `command` whose values are the commands as they
//!   run (parameters already substituted), rendered verbatim through `{command}`. A
//!   value is never templated again, so braces in commands need no escaping.

use std::collections::{BTreeMap, BTreeSet};

use perflab_lab::template::Template;

use crate::exit::InvalidInput;

/// One parameter of the benchmark: its name and values as text (`numeric`: written to
/// the experiment as a TOML number, so the store keeps `n = 1`, not `n = "1"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub values: Vec<String>,
    pub numeric: bool,
}

/// One benchmarked command as it runs: one result of the bench, one config of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Bench {
    /// The name shown and exported (`-n`, else the command).
    pub name: String,
    /// The command line with parameters substituted.
    pub command: String,
    /// (parameter, value) of this command, in parameter order.
    pub params: Vec<(String, String)>,
}

/// How the commands run.
#[derive(Debug, Clone, PartialEq)]
pub enum Shell {
    /// Split into words like a shell would, run directly (the default).
    None,
    /// `sh -c COMMAND` (the command workload's `shell = true`).
    Sh,
    /// Another shell command line, e.g. `bash --norc`: `WORDS... -c COMMAND`.
    Other(Vec<String>),
}

impl Shell {
    /// `--shell`/`-N` as given: `none` (or nothing) runs without a shell, `sh` and
    /// `default` with `sh -c`, anything else as the shell's command line.
    pub fn parse(shell: Option<&str>, no_shell: bool) -> Result<Shell, InvalidInput> {
        match shell.map(str::trim) {
            _ if no_shell => Ok(Shell::None),
            None | Some("none") => Ok(Shell::None),
            Some("sh" | "default") => Ok(Shell::Sh),
            Some("") => Err(InvalidInput(
                "--shell is empty: give a shell (e.g. --shell sh) or none".into(),
            )),
            Some(s) => Ok(Shell::Other(
                s.split_whitespace().map(String::from).collect(),
            )),
        }
    }
}

/// Everything the experiment file is made of.
#[derive(Debug, Clone)]
pub struct Spec {
    pub benches: Vec<Bench>,
    pub params: Vec<Param>,
    pub shell: Shell,
    /// `Fixed(n)` or `(min, max)` for `repetitions = "auto"`.
    pub runs: Runs,
    pub warmup: u32,
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub ignore_failure: bool,
    /// `--cpus`: the CPUs every run is pinned to.
    pub cpus: Option<String>,
    /// `--until-decided`: auto runs stop when the comparison is decided.
    pub stop: Option<perflab_lab::experiment::Stop>,
    /// `--counters`: events counted over each run's process tree.
    pub counters: Vec<perflab_telemetry::perfcount::Event>,
}

/// Repetitions per command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Runs {
    Fixed(u32),
    Auto { min: u32, max: u32 },
}

/// `-L NAME a,b,c`.
pub fn parameter_list(name: &str, values: &str) -> Result<Param, InvalidInput> {
    check_name(name)?;
    let values: Vec<String> = values.split(',').map(String::from).collect();
    let mut seen = BTreeSet::new();
    for v in &values {
        if !seen.insert(v) {
            return Err(InvalidInput(format!(
                "--parameter-list {name}: the value {v:?} is listed twice"
            )));
        }
    }
    Ok(Param {
        name: name.to_string(),
        values,
        numeric: false,
    })
}

/// `-P NAME LO HI [-D STEP]`: LO, LO+STEP, … up to HI. Integers stay integers; with
/// decimals, values keep the most decimals any of the three numbers was written with.
pub fn parameter_scan(
    name: &str,
    lo: &str,
    hi: &str,
    step: Option<&str>,
) -> Result<Param, InvalidInput> {
    check_name(name)?;
    let step_text = step.unwrap_or("1");
    let num = |what: &str, s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| {
                InvalidInput(format!(
                    "--parameter-scan {name}: {what} {s:?} is not a number"
                ))
            })
    };
    let (a, b, d) = (num("LO", lo)?, num("HI", hi)?, num("STEP", step_text)?);
    if d <= 0.0 {
        return Err(InvalidInput(format!(
            "--parameter-step-size must be positive, found {step_text}"
        )));
    }
    if a > b {
        return Err(InvalidInput(format!(
            "--parameter-scan {name} {lo} {hi}: the range runs backwards"
        )));
    }
    let count = ((b - a) / d + 1e-9).floor() as usize + 1;
    if count > 10_000 {
        return Err(InvalidInput(format!(
            "--parameter-scan {name}: {count} values, more than 10000"
        )));
    }
    let decimals = [lo, hi, step_text]
        .iter()
        .map(|s| s.trim().split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    let values = (0..count)
        .map(|i| format!("{:.decimals$}", a + d * i as f64))
        .collect();
    Ok(Param {
        name: name.to_string(),
        values,
        numeric: true,
    })
}

fn check_name(name: &str) -> Result<(), InvalidInput> {
    if !perflab_lab::template::is_ident(name) {
        return Err(InvalidInput(format!(
            "parameter name {name:?} is not valid: expected letters, digits and _ (not starting with a digit)"
        )));
    }
    if perflab_lab::template::BUILTINS.contains(&name) || name == "command" {
        return Err(InvalidInput(format!(
            "parameter name {name:?} is taken (by perflab's own placeholders): choose another"
        )));
    }
    Ok(())
}

/// Every combination of parameter values, the first parameter varying slowest: the
/// lab's own matrix product (`perflab_lab::plan::product`), so a bench's configs and
/// its benches come in the same order.
pub fn combinations(params: &[Param]) -> Vec<Vec<(String, String)>> {
    let matrix: Vec<perflab_lab::experiment::Param> = params
        .iter()
        .map(|p| perflab_lab::experiment::Param {
            name: p.name.clone(),
            values: p.values.iter().map(|v| v.as_str().into()).collect(),
        })
        .collect();
    perflab_lab::plan::product(&matrix)
        .into_iter()
        .map(|c| {
            c.params
                .iter()
                .map(|(k, v)| (k.clone(), perflab_store::value_text(v)))
                .collect()
        })
        .collect()
}

/// `{NAME}` replaced by each parameter's value, as hyperfine does: rendered by the
/// lab's templates, every other brace kept as written.
pub fn substitute(text: &str, combo: &[(String, String)]) -> String {
    let names: Vec<String> = combo.iter().map(|(k, _)| k.clone()).collect();
    let vars: BTreeMap<String, String> = combo.iter().cloned().collect();
    let escaped = super::file::escape_braces(text, &names);
    Template::parse(&escaped, &|n| names.iter().any(|m| m == n))
        .map(|t| t.render(&vars))
        .unwrap_or_else(|_| text.to_string())
}

/// The benches in run order: the reference first, then for each combination of
/// parameters each command (hyperfine's order). `names` (`-n`) name them: one name for
/// all, one per command, or one per benchmark; `{NAME}` in a name is substituted too.
pub fn expand(
    commands: &[String],
    names: &[String],
    reference: Option<&str>,
    params: &[Param],
) -> Result<Vec<Bench>, InvalidInput> {
    let all = commands.iter().map(String::as_str).chain(reference);
    if let Some(c) = all.clone().find(|c| c.trim().is_empty()) {
        return Err(InvalidInput(format!("empty command {c:?}")));
    }
    let combos = combinations(params);
    let total = combos.len() * commands.len();
    if !names.is_empty() && ![1, commands.len(), total].contains(&names.len()) {
        return Err(InvalidInput(format!(
            "{} --command-name for {} commands ({total} benchmarks): give one name, one per command or one per benchmark",
            names.len(),
            commands.len()
        )));
    }
    let mut out = Vec::new();
    if let Some(r) = reference {
        out.push(Bench {
            name: r.to_string(),
            command: r.to_string(),
            params: Vec::new(),
        });
    }
    for (j, combo) in combos.iter().enumerate() {
        for (i, c) in commands.iter().enumerate() {
            let command = substitute(c, combo);
            let k = j * commands.len() + i;
            let name = match names.len() {
                0 => None,
                1 => names.first(),
                n if n == total => names.get(k),
                _ => names.get(i),
            };
            out.push(Bench {
                name: name
                    .map(|n| substitute(n, combo))
                    .unwrap_or_else(|| command.clone()),
                command,
                params: combo.clone(),
            });
        }
    }
    Ok(out)
}
