//! The experiment file's sections that stand alone: `[profile]`, `[monitor]`,
//! `repetitions` (fixed or "auto"), and the `[matrix]` with its lists and ranges.

use super::*;

pub(super) fn profile(
    loc: &Locator,
    p: RawProfile,
    has_service: bool,
) -> Result<ProfileConfig, FileError> {
    let mut workload = false;
    let service = match &p.target {
        None => has_service,
        Some(t) => match t.get_ref().as_str() {
            "workload" if p.host.is_some() => {
                return Err(loc.at(
                    t.span().start,
                    "profile.target = \"workload\" profiles the trial's own processes, which run here: leave [profile] host out",
                ))
            }
            "workload" => {
                workload = true;
                false
            }
            "service" if has_service => true,
            "service" => {
                return Err(loc.at(
                    t.span().start,
                    "profile.target = \"service\" needs a [service]",
                ))
            }
            "system" => false,
            other => {
                return Err(loc.at(
                    t.span().start,
                    format!("unknown profile.target {other:?}: expected \"service\", \"system\" or \"workload\""),
                ))
            }
        },
    };
    let repetitions = match &p.repetitions {
        None => vec![1],
        Some(r) => match r.get_ref() {
            toml::Value::String(s) if s == "all" => Vec::new(),
            toml::Value::Integer(i) if *i >= 1 => vec![*i as u32],
            toml::Value::Array(a)
                if !a.is_empty() && a.iter().all(|v| v.as_integer().is_some_and(|i| i >= 1)) =>
            {
                a.iter()
                    .filter_map(|v| v.as_integer())
                    .map(|i| i as u32)
                    .collect()
            }
            _ => {
                return Err(loc.at(
                    r.span().start,
                    "profile.repetitions: expected a repetition number, a list of them, or \"all\"",
                ))
            }
        },
    };
    let frequency = match &p.frequency {
        None => 999,
        Some(f) if (1..=100_000).contains(f.get_ref()) => *f.get_ref() as u32,
        Some(f) => {
            return Err(loc.at(
                f.span().start,
                "profile.frequency: expected 1 to 100000 samples/s",
            ))
        }
    };
    let dwarf_stack_bytes = match &p.dwarf_stack_bytes {
        None => None,
        Some(b) => Some(
            u32::try_from(*b.get_ref())
                .ok()
                .and_then(|n| perflab_profile::framepointers::check_stack_bytes(n).ok())
                .ok_or_else(|| {
                    loc.at(
                        b.span().start,
                        "profile.dwarf_stack_bytes: expected a multiple of 8 from 1024 to \
                         65528 bytes (perf's maximum)",
                    )
                })?,
        ),
    };
    let top = match &p.top {
        None => 10,
        Some(t) if (1..=1000).contains(t.get_ref()) => *t.get_ref() as usize,
        Some(t) => return Err(loc.at(t.span().start, "profile.top: expected 1 to 1000 functions")),
    };
    Ok(ProfileConfig {
        host: super::hosts::host_of(loc, &p.host, "profile")?,
        service,
        workload,
        repetitions,
        frequency,
        call_graph: p.call_graph.unwrap_or_default(),
        dwarf_stack_bytes,
        off_cpu: p.off_cpu.unwrap_or(false),
        jit: p.jit.unwrap_or(true),
        top,
    })
}

/// `[monitor]`. `service_host` is where the service runs (None: no service; Some(None):
/// this machine): the process probe follows the service only where it is sampled.
pub(super) fn monitor(
    loc: &Locator,
    m: RawMonitor,
    service_host: Option<Option<&str>>,
) -> Result<MonitorConfig, FileError> {
    use perflab_telemetry::Probe;
    let host = super::hosts::host_of(loc, &m.host, "monitor")?;
    let here = host.as_ref().map(|h| h.name.as_str());
    let has_service = service_host == Some(here);
    let elsewhere = |s: Option<&str>| match s {
        Some(h) => format!("host {h:?}"),
        None => "this machine".to_string(),
    };
    let interval = match &m.interval {
        None => Duration::from_secs(1),
        Some(i) => perflab_telemetry::parse_interval(i.get_ref()).map_err(|e| {
            loc.at(
                i.span().start,
                format!("monitor.interval: {e} (e.g. \"1s\", \"250ms\"; at least 50ms)"),
            )
        })?,
    };
    let probes = match &m.probes {
        None => {
            let mut p = vec!["cpu", "sched", "memory", "disk", "net", "sockets"];
            if has_service {
                p.push("process");
            }
            Probe::parse_list(&p).map_err(|e| loc.nowhere(e.to_string()))?
        }
        Some(list) => {
            let mut out = Vec::new();
            for p in list {
                let probe = Probe::parse_list(&[p.get_ref()]).map_err(|e| {
                    loc.at(
                        p.span().start,
                        format!("monitor.probes: {e} (expected cpu, sched, memory, disk, net, sockets, nfs, pressure, process)"),
                    )
                })?;
                if probe.contains(&Probe::Process) && !has_service {
                    return Err(loc.at(
                        p.span().start,
                        match service_host {
                            None => "the process probe follows the service under test, and this experiment has no [service]".to_string(),
                            Some(s) => format!(
                                "the process probe follows the service under test, which runs on {} while [monitor] samples {}: give [monitor] the service's host",
                                elsewhere(s),
                                elsewhere(here)
                            ),
                        },
                    ));
                }
                out.extend(probe);
            }
            out
        }
    };
    Ok(MonitorConfig {
        host,
        interval,
        probes,
    })
}

pub(super) fn repetitions(
    loc: &Locator,
    e: &RawExperiment,
    order: Order,
) -> Result<Repetitions, FileError> {
    let int = |v: &Option<Spanned<i64>>, what: &str, default: u32| match v {
        None => Ok(default),
        Some(s) if *s.get_ref() < 1 || *s.get_ref() > 100_000 => Err(loc.at(
            s.span().start,
            format!(
                "{what} must be an integer from 1 to 100000, found {}",
                s.get_ref()
            ),
        )),
        Some(s) => Ok(*s.get_ref() as u32),
    };
    let Some(r) = &e.repetitions else {
        for (v, what) in [
            (&e.min_repetitions, "min_repetitions"),
            (&e.max_repetitions, "max_repetitions"),
        ] {
            if let Some(s) = v {
                return Err(loc.at(
                    s.span().start,
                    format!("{what} only applies with repetitions = \"auto\""),
                ));
            }
        }
        return Ok(Repetitions::Fixed(5));
    };
    match r.get_ref() {
        toml::Value::Integer(n) if (1..=100_000).contains(n) => Ok(Repetitions::Fixed(*n as u32)),
        toml::Value::String(s) if s == "auto" => {
            if order == Order::Sequential {
                return Err(loc.at(
                    r.span().start,
                    "repetitions = \"auto\" adds interleaved rounds: it cannot be combined with order = \"sequential\"",
                ));
            }
            let min = int(&e.min_repetitions, "min_repetitions", 5)?;
            let max = int(&e.max_repetitions, "max_repetitions", 30)?;
            if min < 2 || max < min {
                let at = e
                    .min_repetitions
                    .as_ref()
                    .or(e.max_repetitions.as_ref())
                    .map(|s| s.span().start)
                    .unwrap_or(r.span().start);
                return Err(loc.at(
                    at,
                    format!("need 2 <= min_repetitions <= max_repetitions, found {min} and {max}"),
                ));
            }
            let target = match &e.target_precision {
                None => 0.02,
                Some(t) => fraction(loc, t, "target_precision")?,
            };
            Ok(Repetitions::Auto { min, max, target })
        }
        _ => Err(loc.at(
            r.span().start,
            format!(
                "repetitions must be an integer from 1 to 100000 or \"auto\", found {}",
                r.get_ref()
            ),
        )),
    }
}

/// A fraction written as 0.02 or `"2%"`, strictly between 0 and 1.
fn fraction(loc: &Locator, t: &Spanned<toml::Value>, key: &str) -> Result<f64, FileError> {
    let v = match t.get_ref() {
        toml::Value::Float(f) => Some(*f),
        toml::Value::String(s) => s
            .trim()
            .strip_suffix('%')
            .and_then(|p| p.trim().parse::<f64>().ok())
            .map(|p| p / 100.0),
        _ => None,
    };
    match v {
        Some(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(loc.at(
            t.span().start,
            format!("{key} must be a fraction like 0.02 or a percentage like \"2%\" (between 0 and 100 %)"),
        )),
    }
}

/// `stop` and `equivalence`: when `repetitions = "auto"` stops. `"decided"` compares
/// configs, so it needs two or more.
pub(super) fn stop(
    loc: &Locator,
    e: &RawExperiment,
    repetitions: &Repetitions,
    matrix: &[Param],
) -> Result<Stop, FileError> {
    let auto = matches!(repetitions, Repetitions::Auto { .. });
    let decided = match &e.stop {
        None => false,
        Some(s) if !auto => {
            return Err(loc.at(
                s.span().start,
                "stop only applies with repetitions = \"auto\"",
            ))
        }
        Some(s) => match s.get_ref().as_str() {
            "precise" => false,
            "decided" => true,
            other => {
                return Err(loc.at(
                    s.span().start,
                    format!("stop must be \"precise\" or \"decided\", found {other:?}"),
                ))
            }
        },
    };
    if let (Some(m), false) = (&e.equivalence, decided) {
        return Err(loc.at(
            m.span().start,
            "equivalence only applies with stop = \"decided\"",
        ));
    }
    if !decided {
        return Ok(Stop::Precise);
    }
    let configs: usize = matrix.iter().map(|p| p.values.len()).product();
    if configs < 2 {
        let at = e.stop.as_ref().map(|s| s.span().start).unwrap_or(0);
        return Err(loc.at(
            at,
            "stop = \"decided\" stops when the configs' comparison is decided: the matrix needs two configs or more",
        ));
    }
    let equivalence = match &e.equivalence {
        None => Stop::DEFAULT_EQUIVALENCE,
        Some(m) => fraction(loc, m, "equivalence")?,
    };
    Ok(Stop::Decided { equivalence })
}

pub(super) fn matrix(loc: &Locator, raw: RawMatrix) -> Result<Vec<Param>, FileError> {
    let mut out: Vec<Param> = Vec::new();
    for (key, value) in raw.0 {
        let name = key.get_ref().clone();
        let at = value.span().start;
        if !crate::template::is_ident(&name) {
            return Err(loc.at(
                key.span().start,
                format!("matrix parameter {name:?} is not a valid name: expected letters, digits and _ (not starting with a digit)"),
            ));
        }
        if BUILTINS.contains(&name.as_str()) {
            return Err(loc.at(
                key.span().start,
                format!(
                    "matrix parameter {name:?} clashes with the built-in placeholder of that name"
                ),
            ));
        }
        let values = match value.get_ref() {
            toml::Value::Array(a) => scalars(loc, at, &name, a)?,
            toml::Value::Table(t) => {
                if let Some(v) = t.get("values") {
                    if t.len() != 1 {
                        return Err(loc.at(at, format!("matrix parameter {name:?}: {{ values = [...] }} takes no other keys")));
                    }
                    match v {
                        toml::Value::Array(a) => scalars(loc, at, &name, a)?,
                        _ => return Err(loc.at(at, format!("matrix parameter {name:?}: values must be a list"))),
                    }
                } else {
                    range(loc, at, &name, t)?
                }
            }
            other => {
                return Err(loc.at(
                    at,
                    format!(
                        "matrix parameter {name:?} is a {}: expected a list of values, {{ from = 1, to = 8, step = 1 }} or {{ values = [...] }}",
                        other.type_str()
                    ),
                ))
            }
        };
        out.push(Param { name, values });
    }
    Ok(out)
}

fn scalars(
    loc: &Locator,
    at: usize,
    name: &str,
    a: &[toml::Value],
) -> Result<Vec<serde_json::Value>, FileError> {
    if a.is_empty() {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?} has an empty list of values: give at least one"),
        ));
    }
    let mut out = Vec::new();
    for v in a {
        let j = match v {
            toml::Value::String(s) => serde_json::Value::from(s.clone()),
            toml::Value::Integer(i) => serde_json::Value::from(*i),
            toml::Value::Float(f) if f.is_finite() => serde_json::Value::from(*f),
            toml::Value::Boolean(b) => serde_json::Value::from(*b),
            other => {
                return Err(loc.at(
                    at,
                    format!("matrix parameter {name:?}: values must be strings, numbers or booleans, found a {}", other.type_str()),
                ))
            }
        };
        if out.contains(&j) {
            return Err(loc.at(
                at,
                format!("matrix parameter {name:?} lists the value {j} twice"),
            ));
        }
        out.push(j);
    }
    Ok(out)
}

fn range(
    loc: &Locator,
    at: usize,
    name: &str,
    t: &toml::Table,
) -> Result<Vec<serde_json::Value>, FileError> {
    let expected = "expected { from = 1, to = 8, step = 1 } (step optional, default 1)";
    for k in t.keys() {
        if !matches!(k.as_str(), "from" | "to" | "step") {
            return Err(loc.at(
                at,
                format!("matrix parameter {name:?}: unknown key {k:?} in range; {expected}"),
            ));
        }
    }
    let num = |k: &str| -> Result<Option<f64>, FileError> {
        match t.get(k) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(toml::Value::Float(f)) => Ok(Some(*f)),
            Some(_) => Err(loc.at(
                at,
                format!("matrix parameter {name:?}: {k} must be a number; {expected}"),
            )),
        }
    };
    let (Some(from), Some(to)) = (num("from")?, num("to")?) else {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: range needs from and to; {expected}"),
        ));
    };
    let step = num("step")?.unwrap_or(1.0);
    if step <= 0.0 || !step.is_finite() {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: step must be positive, found {step}"),
        ));
    }
    if from > to {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: range runs backwards (from {from} > to {to})"),
        ));
    }
    let count = ((to - from) / step + 1e-9).floor() as usize + 1;
    if count > 10_000 {
        return Err(loc.at(
            at,
            format!("matrix parameter {name:?}: range has {count} values, more than 10000"),
        ));
    }
    let ints = [t.get("from"), t.get("to"), t.get("step")]
        .iter()
        .all(|v| !matches!(v, Some(toml::Value::Float(_))));
    Ok((0..count)
        .map(|i| {
            let v = from + step * i as f64;
            if ints {
                serde_json::Value::from(v.round() as i64)
            } else {
                serde_json::Value::from((v * 1e12).round() / 1e12)
            }
        })
        .collect())
}
