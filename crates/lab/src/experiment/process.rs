//! The experiment file's processes: the `[service]` under test (command, readiness,
//! stop signal) and the `command` workload.

use super::*;
use perflab_telemetry::perfcount::{Event, UnknownEvent};

pub(super) fn service(c: &Checker, s: RawService) -> Result<ServiceSpec, FileError> {
    let ready_timeout = s
        .ready
        .as_ref()
        .and_then(|r| r.timeout.as_ref())
        .map(|t| c.duration(t))
        .transpose()?
        .unwrap_or(Duration::from_secs(10));
    let ready = match s.ready {
        None => Ready::Started,
        Some(r) => {
            let n = [r.tcp.is_some(), r.http.is_some(), r.log.is_some()]
                .iter()
                .filter(|b| **b)
                .count();
            if n > 1 {
                let at = r
                    .tcp
                    .as_ref()
                    .or(r.http.as_ref())
                    .map(|s| s.span().start)
                    .unwrap_or(0);
                return Err(c.loc.at(
                    at,
                    "service.ready takes one of tcp, http or log, not several",
                ));
            }
            if let Some(t) = &r.tcp {
                Ready::Tcp(c.template(t)?)
            } else if let Some(h) = &r.http {
                Ready::Http(c.template(h)?)
            } else if let Some(l) = &r.log {
                Ready::Log(regex::Regex::new(l.get_ref()).map_err(|e| {
                    c.loc
                        .at(l.span().start, format!("bad ready.log regex: {e}"))
                })?)
            } else {
                Ready::Started
            }
        }
    };
    let stop_signal = match &s.stop_signal {
        None => libc::SIGTERM,
        Some(sig) => signal_number(sig.get_ref()).ok_or_else(|| {
            c.loc.at(
                sig.span().start,
                format!(
                    "unknown signal {:?}: expected TERM, INT, QUIT, HUP, USR1, USR2 or KILL",
                    sig.get_ref()
                ),
            )
        })?,
    };
    let files = s
        .files
        .iter()
        .map(|(name, body)| {
            if name.contains('/') || name.starts_with('.') || name.is_empty() {
                return Err(c.loc.at(
                    body.span().start,
                    format!("service file name {name:?} must be a plain file name (it is written into the run directory)"),
                ));
            }
            Ok((name.clone(), c.template(body)?))
        })
        .collect::<Result<_, _>>()?;
    let host = super::hosts::host_of(&c.loc, &s.host, "service")?;
    // CPUs of another host are checked there, when the service starts.
    let cpus = match (&s.cpus, &host) {
        (None, _) => None,
        (Some(x), None) => Some(c.cpus(x)?),
        (Some(x), Some(_)) => {
            Some(CpuSet::parse(x.get_ref()).map_err(|e| c.loc.at(x.span().start, e))?)
        }
    };
    let counters = service_counters(c, s.counters.as_deref(), host.is_some())?;
    Ok(ServiceSpec {
        counters,
        host,
        command: c.command(&s.command, s.shell)?,
        shell: s.shell,
        files,
        cpus,
        env: c.env(&s.env)?,
        cwd: s.cwd.as_ref().map(|x| c.template(x)).transpose()?,
        ready,
        ready_timeout,
        stop_signal,
        grace: s
            .grace
            .as_ref()
            .map(|g| c.duration(g))
            .transpose()?
            .unwrap_or(Duration::from_secs(5)),
    })
}

/// `[service] counters`: as [`counters`]; a service on another host cannot be counted.
fn service_counters(
    c: &Checker,
    names: Option<&[SStr]>,
    remote: bool,
) -> Result<Vec<Event>, FileError> {
    let counters = counters(c, names)?;
    if !counters.is_empty() && remote {
        let at = names.and_then(|v| v.first()).map(|x| x.span().start);
        return Err(c.loc.at(
            at.unwrap_or(0),
            "service.counters: counting a service on another host is not supported yet; count it where it runs (drop `host`) or drop `counters`",
        ));
    }
    Ok(counters)
}

/// `counters = [...]`: each name one of `perf stat`'s events perflab counts; an
/// unknown one is an error at its place that lists the valid ones.
pub(super) fn counters(c: &Checker, names: Option<&[SStr]>) -> Result<Vec<Event>, FileError> {
    let mut out = Vec::new();
    for n in names.unwrap_or_default() {
        let e: Event = n
            .get_ref()
            .parse()
            .map_err(|e: UnknownEvent| c.loc.at(n.span().start, e.to_string()))?;
        if !out.contains(&e) {
            out.push(e);
        }
    }
    Ok(out)
}

/// Signal number for a name like `TERM` or `SIGTERM`.
pub fn signal_number(name: &str) -> Option<i32> {
    Some(match name.trim().trim_start_matches("SIG") {
        "TERM" => libc::SIGTERM,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "HUP" => libc::SIGHUP,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "KILL" => libc::SIGKILL,
        _ => return None,
    })
}

pub(super) fn command_spec(c: &Checker, w: RawCommandWorkload) -> Result<CommandSpec, FileError> {
    let leftovers = match &w.leftovers {
        None => Leftovers::Wait,
        Some(l) => match l.get_ref().as_str() {
            "wait" => Leftovers::Wait,
            "kill" => Leftovers::Kill,
            other => {
                return Err(c.loc.at(
                    l.span().start,
                    format!("unknown leftovers {other:?}: expected \"wait\" or \"kill\""),
                ))
            }
        },
    };
    let mut metrics = Vec::new();
    for (name, m) in w.metrics.0 {
        let at = m.span().start;
        let m = m.into_inner();
        let better = match &m.better {
            None => "higher".to_string(),
            Some(b) if matches!(b.get_ref().as_str(), "higher" | "lower") => b.get_ref().clone(),
            Some(b) => {
                return Err(c.loc.at(
                    b.span().start,
                    format!(
                        "better must be \"higher\" or \"lower\", found {:?}",
                        b.get_ref()
                    ),
                ))
            }
        };
        let source = match (&m.regex, &m.json) {
            (Some(r), None) => {
                let re = regex::Regex::new(r.get_ref()).map_err(|e| {
                    c.loc.at(
                        r.span().start,
                        format!("bad regex for metric {:?}: {e}", name.get_ref()),
                    )
                })?;
                if re.captures_len() < 2 {
                    return Err(c.loc.at(
                        r.span().start,
                        format!("regex for metric {:?} has no capture group: put the number in parentheses", name.get_ref()),
                    ));
                }
                Source::Regex(re)
            }
            (None, Some(j)) => Source::Json(j.get_ref().clone()),
            _ => {
                return Err(c.loc.at(
                    at,
                    format!(
                    "metric {:?} needs exactly one of regex = \"...\" or json = \"path.to.field\"",
                    name.get_ref()
                ),
                ))
            }
        };
        if [
            "wall_s",
            "user_s",
            "sys_s",
            "peak_rss_bytes",
            "max_process_rss_bytes",
        ]
        .contains(&name.get_ref().as_str())
        {
            return Err(c.loc.at(
                name.span().start,
                format!(
                    "metric name {:?} is recorded by perflab itself: choose another name",
                    name.get_ref()
                ),
            ));
        }
        metrics.push(MetricSpec {
            name: name.get_ref().clone(),
            unit: m.unit.unwrap_or_default(),
            better,
            source,
        });
    }
    Ok(CommandSpec {
        counters: counters(c, w.counters.as_deref())?,
        command: c.command(&w.command, w.shell)?,
        shell: w.shell,
        env: c.env(&w.env)?,
        cwd: w.cwd.as_ref().map(|x| c.template(x)).transpose()?,
        allow_failure: w.allow_failure,
        leftovers,
        metrics,
    })
}
