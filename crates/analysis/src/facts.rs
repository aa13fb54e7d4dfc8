//! What else differs between the two sides of a comparison across runs or hosts: the
//! host facts (CPU model, cores, memory, kernel, governor, pinning, tool versions —
//! crates/store `HostInfo` and the run's environment) and the recorded parameters that
//! are not the axis being compared (an http run's `io` engine, its URL, ...).
//!
//! A ratio between two runs measures every one of these differences at once; the
//! comparison cannot take them out, so it names them. Facts are plain `(name, text)`
//! pairs, one list per side, so the same diff serves `perflab suite compare` (from
//! export documents) and `perflab compare` (from the store, or from a fleet trial's
//! `host.json`).

use perflab_store::{value_text, HostInfo, Params, RunExport};
use serde_json::{json, Value};

/// A fact (or a parameter) of the two sides.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub name: String,
    pub a: String,
    pub b: String,
}

impl Fact {
    pub fn differs(&self) -> bool {
        self.a != self.b
    }

    /// `{"fact": name, "a": ..., "b": ...}` (`host_facts_differ` in docs/json.md).
    pub fn json(&self, key: &str) -> Value {
        json!({ key: self.name, "a": self.a, "b": self.b })
    }
}

/// The text of a value one side does not have.
pub const ABSENT: &str = "—";

/// The host a run saw: its own snapshot in the environment (the hosts table keeps the
/// newest description of a host), else the host record.
pub fn run_host(environment: &Value, recorded: &HostInfo) -> HostInfo {
    environment
        .get("host")
        .and_then(|h| serde_json::from_value(h.clone()).ok())
        .unwrap_or_else(|| recorded.clone())
}

/// The facts of `host`, with what the run's environment adds: the CPUs it was pinned
/// to, the versions of the tools it named and of perflab.
pub fn host_facts(h: &HostInfo, environment: &Value) -> Vec<(String, String)> {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
    let mut out = vec![
        ("hostname".to_string(), h.hostname.clone()),
        ("cpu model".into(), opt(h.cpu_model.clone())),
        ("cores".into(), opt(h.cores.map(|c| c.to_string()))),
        (
            "memory".into(),
            opt(h
                .memory_bytes
                .map(|m| format!("{:.1} GiB", m as f64 / (1u64 << 30) as f64))),
        ),
        ("arch".into(), opt(h.arch.clone())),
        ("kernel".into(), opt(h.kernel.clone())),
        ("distribution".into(), opt(h.distribution.clone())),
        ("governor".into(), opt(h.governor.clone())),
    ];
    out.extend(h.facts.iter().map(|(k, v)| (k.clone(), v.clone())));
    out.extend(h.sysctls.iter().map(|(k, v)| (k.clone(), v.clone())));
    let env = environment;
    let pinned = env
        .get("cpus")
        .and_then(Value::as_str)
        .map_or("all".to_string(), |c| c.to_string());
    out.push(("pinned to cpus".into(), pinned));
    if let Some(tools) = env.get("tools").and_then(Value::as_object) {
        for (name, v) in tools {
            if name != "perflab" {
                out.push((
                    format!("{name} version"),
                    v.as_str().unwrap_or("?").to_string(),
                ));
            }
        }
    }
    out.push((
        "perflab".into(),
        env.get("perflab")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
    ));
    out
}

/// The facts of an exported run's host.
pub fn of_export(e: &RunExport) -> Vec<(String, String)> {
    let env = &e.run.environment;
    host_facts(&run_host(env, &e.host), env)
}

/// Every fact either side has, in the first side's order, then the second's extras
/// (a fact one side lacks reads [`ABSENT`] there).
pub fn side_by_side(fa: &[(String, String)], fb: &[(String, String)]) -> Vec<Fact> {
    let get = |f: &[(String, String)], k: &str| {
        f.iter()
            .find(|(n, _)| n == k)
            .map_or(ABSENT.to_string(), |(_, v)| v.clone())
    };
    let mut names: Vec<&String> = fa.iter().map(|(k, _)| k).collect();
    for (k, _) in fb {
        if !names.contains(&k) {
            names.push(k);
        }
    }
    names
        .into_iter()
        .map(|name| Fact {
            a: get(fa, name),
            b: get(fb, name),
            name: name.clone(),
        })
        .collect()
}

/// The parameters whose values differ between the two sides, leaving out `axis` (the
/// parameters the comparison is about): a parameter one side lacks reads [`ABSENT`].
pub fn params_differ(a: &Params, b: &Params, axis: &[String]) -> Vec<Fact> {
    let text = |p: &Params, k: &str| p.get(k).map_or(ABSENT.to_string(), value_text);
    let mut names: Vec<&String> = a.keys().collect();
    names.extend(b.keys().filter(|k| !a.contains_key(*k)));
    names
        .into_iter()
        .filter(|k| !axis.contains(k))
        .map(|k| Fact {
            name: k.clone(),
            a: text(a, k),
            b: text(b, k),
        })
        .filter(Fact::differs)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_off_the_axis_that_differ_are_named() {
        let p = |pairs: &[(&str, Value)]| -> Params {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        let a = p(&[
            ("io", json!("uring")),
            ("connections", json!(10)),
            ("level", json!(1)),
        ]);
        let b = p(&[
            ("io", json!("epoll")),
            ("connections", json!(10)),
            ("level", json!(6)),
            ("tls", json!(true)),
        ]);
        let d = params_differ(&a, &b, &["level".to_string()]);
        let names: Vec<&str> = d.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["io", "tls"]);
        assert_eq!((d[0].a.as_str(), d[0].b.as_str()), ("uring", "epoll"));
        assert_eq!((d[1].a.as_str(), d[1].b.as_str()), (ABSENT, "true"));
        assert!(params_differ(&a, &a, &[]).is_empty());
    }

    #[test]
    fn the_runs_snapshot_of_its_host_wins_over_the_record() {
        let recorded = HostInfo {
            hostname: "now".into(),
            ..Default::default()
        };
        let env = json!({"host": {"hostname": "then", "cores": 2}, "cpus": "1"});
        let f = host_facts(&run_host(&env, &recorded), &env);
        let get = |k: &str| f.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("hostname"), "then");
        assert_eq!(get("cores"), "2");
        assert_eq!(get("pinned to cpus"), "1");
        let other = host_facts(&recorded, &json!({}));
        let diff: Vec<Fact> = side_by_side(&f, &other)
            .into_iter()
            .filter(Fact::differs)
            .collect();
        let names: Vec<&str> = diff.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["hostname", "cores", "pinned to cpus"]);
    }
}
