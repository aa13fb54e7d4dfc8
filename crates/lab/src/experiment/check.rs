//! Checking an experiment file's parts: the shared [`Checker`] (placeholders, values
//! of each form), the step-by-step [`build`] of an [`Experiment`] from a file read into
//! raw sections, and TOML parse errors turned into [`FileError`]s with file, line and
//! column.

use super::*;

/// Merges `over` into `base`: tables key by key, any other value replaces.
pub(super) fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

pub(super) fn toml_error(loc: &Locator, e: &toml::de::Error) -> FileError {
    let msg = plain_types(e.message().trim());
    match e.span() {
        Some(span) => {
            // A value of the wrong type: name its key, as the writer sees it.
            let msg = match key_before(loc.text, span.start) {
                Some(key) if msg.starts_with("invalid type") => format!("`{key}`: {msg}"),
                _ => msg,
            };
            loc.at(span.start, msg)
        }
        None => loc.nowhere(msg),
    }
}

/// serde names Rust types; say what a TOML writer would.
pub(crate) fn plain_types(msg: &str) -> String {
    const PLAIN: [(&str, &str); 12] = [
        ("expected i64", "expected an integer"),
        ("expected i32", "expected an integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a borrowed string", "expected a string"),
        ("expected a boolean", "expected true or false"),
        ("expected struct", "expected a table of"),
        ("expected a sequence", "expected a list"),
    ];
    let mut out = msg.to_string();
    for (rust, plain) in PLAIN {
        out = out.replace(rust, plain);
    }
    out
}

/// The key of the `key = value` line whose value starts at `at`, when the value is
/// written on the key's line.
pub(super) fn key_before(text: &str, at: usize) -> Option<&str> {
    let before = text.get(..at)?;
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    let (key, _) = line.rsplit_once('=')?;
    let key = key.trim().trim_matches('"');
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    bare.then_some(key)
}

/// Shared checking context: the file and the names placeholders may use.
pub(crate) struct Checker<'a> {
    pub loc: Locator<'a>,
    pub names: Vec<String>,
    /// A value for every placeholder (first matrix values), to check rendered tables.
    pub sample: std::collections::BTreeMap<String, String>,
}

impl Checker<'_> {
    pub fn template(&self, s: &SStr) -> Result<Template, FileError> {
        let known = |n: &str| BUILTINS.contains(&n) || self.names.iter().any(|m| m == n);
        Template::parse(s.get_ref(), &known).map_err(|u| {
            let at = self.loc.inside_string(s.span(), s.get_ref(), u.offset);
            let mut known: Vec<&str> = self.names.iter().map(|s| s.as_str()).collect();
            known.extend(BUILTINS);
            self.loc.at(
                at,
                format!(
                    "unknown placeholder {{{}}}: expected a matrix parameter or a built-in ({}); write {{{{ for a literal brace",
                    u.name,
                    known.join(", ")
                ),
            )
        })
    }

    pub fn command(&self, s: &SStr, shell: bool) -> Result<Template, FileError> {
        if s.get_ref().trim().is_empty() {
            return Err(self.loc.at(s.span().start, "empty command"));
        }
        if !shell && shlex::split(s.get_ref()).is_none() {
            return Err(self.loc.at(
                s.span().start,
                "unbalanced quotes in the command (it is split like a shell splits words; set shell = true to run it with sh -c)",
            ));
        }
        self.template(s)
    }

    pub fn duration(&self, s: &SStr) -> Result<Duration, FileError> {
        // perflab's one duration grammar (crates/units), as every flag takes it.
        let d = perflab_units::parse_duration(s.get_ref()).map_err(|e| {
            self.loc.at(
                s.span().start,
                format!(
                    "bad duration {:?}: expected {}, e.g. \"30s\"",
                    e.value, e.expected
                ),
            )
        })?;
        if d.is_zero() {
            return Err(self
                .loc
                .at(s.span().start, "duration must be greater than zero"));
        }
        Ok(d)
    }

    pub fn cpus(&self, s: &SStr) -> Result<CpuSet, FileError> {
        let set = CpuSet::parse(s.get_ref()).map_err(|e| self.loc.at(s.span().start, e))?;
        set.check_online()
            .map_err(|e| self.loc.at(s.span().start, e))?;
        Ok(set)
    }

    pub fn env(
        &self,
        env: &std::collections::BTreeMap<String, SStr>,
    ) -> Result<Vec<(String, Template)>, FileError> {
        env.iter()
            .map(|(k, v)| Ok((k.clone(), self.template(v)?)))
            .collect()
    }
}

/// The checked experiment of a file read into `raw`, its workload read by `workload`.
/// Step by step: the matrix (and `on`'s host dimension), the `[experiment]` keys, the
/// service, monitor and profile, the workload, then what needs several of them.
pub(super) fn build<W>(
    loc: &Locator,
    raw: RawFile<W>,
    workload: impl FnOnce(&Checker, W) -> Result<(WorkloadSpec, Option<HostRef>), FileError>,
) -> Result<Experiment, FileError> {
    let mut matrix = matrix(loc, raw.matrix.unwrap_or_default())?;
    if let Some(on) = raw.experiment.on.as_ref().filter(|on| !on.is_empty()) {
        hosts::hosts_dimension(loc, on, &mut matrix)?;
    }
    let c = checker(loc, &matrix);
    let e = raw.experiment;
    let order = order_of(loc, &e.order)?;
    let seed = match &e.seed {
        Some(s) if *s.get_ref() < 0 => {
            return Err(loc.at(s.span().start, "seed must be a non-negative integer"))
        }
        Some(s) => Some(*s.get_ref() as u64),
        None => None,
    };
    let name = name_of(loc, &e.name)?;
    let service = raw.service.map(|s| service(&c, s)).transpose()?;
    let service_host = service
        .as_ref()
        .map(|s| s.host.as_ref().map(|h| h.name.as_str()));
    let monitor = raw
        .monitor
        .map(|m| monitor(loc, m, service_host))
        .transpose()?;
    let profile_keys = raw
        .profile
        .as_ref()
        .map(|p| (p.host.clone(), p.target.clone()))
        .unwrap_or_default();
    let profile = raw
        .profile
        .map(|p| profile(loc, p, service.is_some()))
        .transpose()?;
    let (workload, workload_host) = workload(&c, raw.workload)?;
    hosts::check(
        loc,
        e.on.as_ref().is_some_and(|on| !on.is_empty()),
        service.as_ref(),
        profile.as_ref(),
        (profile_keys.0.as_ref(), profile_keys.1.as_ref()),
        workload_host.as_ref(),
    )?;
    check_primary(loc, &e, &workload)?;
    let repetitions = repetitions(loc, &e, order)?;
    let stop = stop(loc, &e, &repetitions, &matrix)?;
    let opt_t = |s: &Option<SStr>| s.as_ref().map(|s| c.command(s, true)).transpose();
    Ok(Experiment {
        name,
        description: e.description.clone(),
        path: loc.path.to_path_buf(),
        text: loc.text.to_string(),
        repetitions,
        stop,
        primary: e
            .primary
            .iter()
            .flatten()
            .map(|p| p.get_ref().clone())
            .collect(),
        noise_check: e.noise_check.unwrap_or(true),
        requires: e.requires.clone().unwrap_or_default(),
        warmup: bounded(loc, &e.warmup, "warmup", 1, 0)?,
        order,
        seed,
        timeout: e.timeout.as_ref().map(|t| c.duration(t)).transpose()?,
        cpus: e.cpus.as_ref().map(|s| c.cpus(s)).transpose()?,
        prepare: opt_t(&e.prepare)?,
        cleanup: opt_t(&e.cleanup)?,
        setup: opt_t(&e.setup)?,
        teardown: opt_t(&e.teardown)?,
        on: e.on.iter().flatten().map(|h| h.get_ref().clone()).collect(),
        matrix,
        service,
        monitor,
        profile,
        workload,
        workload_host,
    })
}

/// The checking context of a file with this matrix: the names placeholders may use
/// and a sample value for each (the first of the matrix, a stand-in for built-ins).
pub(super) fn checker<'a>(loc: &Locator<'a>, matrix: &[Param]) -> Checker<'a> {
    Checker {
        loc: Locator {
            path: loc.path,
            text: loc.text,
        },
        names: matrix.iter().map(|p| p.name.clone()).collect(),
        sample: matrix
            .iter()
            .map(|p| (p.name.clone(), perflab_store::value_text(&p.values[0])))
            .chain(
                [
                    ("repetition", "1"),
                    ("trial", "1"),
                    ("run_dir", "/tmp"),
                    ("port", "8080"),
                    ("perflab", "perflab"),
                    ("experiment_dir", "."),
                    ("service_host", "127.0.0.1"),
                ]
                .map(|(a, b)| (a.to_string(), b.to_string())),
            )
            .collect(),
    }
}

/// An integer key from `min` to 100000 (`default` when absent).
pub(super) fn bounded(
    loc: &Locator,
    v: &Option<Spanned<i64>>,
    what: &str,
    default: u32,
    min: i64,
) -> Result<u32, FileError> {
    match v {
        None => Ok(default),
        Some(s) if *s.get_ref() < min || *s.get_ref() > 100_000 => Err(loc.at(
            s.span().start,
            format!(
                "{what} must be an integer from {min} to 100000, found {}",
                s.get_ref()
            ),
        )),
        Some(s) => Ok(*s.get_ref() as u32),
    }
}

/// `order`: interleaved (the default), random or sequential.
pub(super) fn order_of(loc: &Locator, order: &Option<SStr>) -> Result<Order, FileError> {
    let Some(o) = order else {
        return Ok(Order::Interleaved);
    };
    match o.get_ref().as_str() {
        "interleaved" => Ok(Order::Interleaved),
        "random" => Ok(Order::Random),
        "sequential" => Ok(Order::Sequential),
        other => Err(loc.at(
            o.span().start,
            format!(
                "unknown order {other:?}: expected \"interleaved\", \"random\" or \"sequential\""
            ),
        )),
    }
}

/// `name`, or the file's stem.
pub(super) fn name_of(loc: &Locator, name: &Option<SStr>) -> Result<String, FileError> {
    match name {
        Some(n) if n.get_ref().trim().is_empty() => {
            Err(loc.at(n.span().start, "experiment name is empty"))
        }
        Some(n) => Ok(n.get_ref().clone()),
        None => Ok(loc
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "experiment".into())),
    }
}

/// Every `primary` metric must be one the workload measures.
pub(super) fn check_primary(
    loc: &Locator,
    e: &RawExperiment,
    workload: &WorkloadSpec,
) -> Result<(), FileError> {
    let named = workload.metric_names();
    for p in e.primary.iter().flatten() {
        let known = BUILTIN_METRICS.contains(&p.get_ref().as_str())
            || named.iter().any(|m| m == p.get_ref());
        if !known {
            return Err(loc.at(
                p.span().start,
                format!(
                    "primary metric {:?} is not measured: expected one of the workload's metrics or {}",
                    p.get_ref(),
                    BUILTIN_METRICS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
