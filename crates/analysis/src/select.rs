//! Sides of a comparison: `RUN` or `RUN:key=value,...`, resolved to the samples of one
//! configuration.
//!
//! A selector value matches a parameter when it equals the parameter's text (a JSON
//! string without its quotes, anything else as JSON writes it), so `level=6` matches
//! the integer 6 and `mode=fast` the string "fast". A run with several configurations
//! needs a selector that leaves exactly one: guessing would compare the wrong thing.

use perflab_store::{params_label, value_text, Params, RunId, RunRow, Store};
use serde_json::{json, Value};

use crate::samples::{self, ConfigSamples, MetricSamples};
use crate::SelectError;

/// `key=value` pairs that pick configurations.
pub type Selector = Vec<(String, String)>;

/// A parsed `RUN[:key=value,...]`.
#[derive(Debug, Clone)]
pub struct Spec {
    pub run: RunId,
    pub selector: Selector,
}

/// Parses `RUN` or `RUN:key=value,...`.
pub fn parse_spec(s: &str) -> Result<Spec, SelectError> {
    let (run, sel) = match s.split_once(':') {
        Some((r, sel)) => (r, parse_selector(sel)?),
        None => (s, Vec::new()),
    };
    let run = run.trim().parse().map_err(|_| {
        SelectError(format!(
            "{s:?} is not a run: expected RUN or RUN:key=value,... (e.g. 3 or 3:level=6)"
        ))
    })?;
    Ok(Spec { run, selector: sel })
}

/// Parses `key=value,key=value`.
pub fn parse_selector(s: &str) -> Result<Selector, SelectError> {
    s.split(',')
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(SelectError(format!(
                "{kv:?} in {s:?} is not key=value (e.g. level=6,mode=fast)"
            ))),
        })
        .collect()
}

/// Whether a config's params satisfy every pair of the selector.
pub fn matches(params: &Params, sel: &Selector) -> bool {
    sel.iter()
        .all(|(k, v)| params.get(k).is_some_and(|p| value_text(p) == *v))
}

/// `level=6,mode=fast`.
pub fn selector_text(sel: &Selector) -> String {
    sel.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One configuration of one run, with its samples.
#[derive(Debug, Clone)]
pub struct Side {
    pub run: RunRow,
    pub params: Params,
    pub metrics: Vec<MetricSamples>,
}

impl Side {
    pub fn metric(&self, name: &str) -> Option<&MetricSamples> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// `run 3 (compress, host vm) level=6`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "run {} ({}, host {})",
            self.run.id, self.run.name, self.run.host
        );
        if !self.params.is_empty() {
            s.push(' ');
            s.push_str(&params_label(&self.params));
        }
        s
    }

    /// `{"run", "uuid", "name", "host", "params"}`.
    pub fn json(&self) -> Value {
        json!({
            "run": self.run.id, "uuid": self.run.uuid, "name": self.run.name,
            "host": self.run.host, "params": self.params,
        })
    }
}

/// A run loaded from the store: its configs with their samples.
#[derive(Debug, Clone)]
pub struct RunData {
    pub run: RunRow,
    pub configs: Vec<ConfigSamples>,
}

impl RunData {
    pub fn load(store: &Store, id: RunId) -> perflab_store::Result<RunData> {
        Ok(RunData {
            run: store.run(id)?,
            configs: samples::from_store(store, id)?,
        })
    }

    /// `level=1; level=6; level=9`, for messages.
    pub fn config_list(&self) -> String {
        labels(self.configs.iter())
    }

    /// The configs matching a selector (every key must be a parameter of the run).
    pub fn matching(&self, sel: &Selector) -> Result<Vec<&ConfigSamples>, SelectError> {
        for (k, _) in sel {
            if !self.configs.iter().any(|c| c.params.contains_key(k)) {
                let keys: std::collections::BTreeSet<&String> =
                    self.configs.iter().flat_map(|c| c.params.keys()).collect();
                return Err(SelectError(format!(
                    "run {} has no parameter {k:?} (its parameters: {})",
                    self.run.id,
                    if keys.is_empty() {
                        "none".to_string()
                    } else {
                        keys.into_iter().cloned().collect::<Vec<_>>().join(", ")
                    }
                )));
            }
        }
        Ok(self
            .configs
            .iter()
            .filter(|c| matches(&c.params, sel))
            .collect())
    }

    /// The one config a selector names.
    pub fn one(&self, sel: &Selector) -> Result<&ConfigSamples, SelectError> {
        let found = self.matching(sel)?;
        let id = self.run.id;
        match found.as_slice() {
            [one] => Ok(one),
            [] => Err(SelectError(format!(
                "no config of run {id} matches {}; its configs: {}",
                selector_text(sel),
                self.config_list()
            ))),
            many if sel.is_empty() => Err(SelectError(format!(
                "run {id} has {} configs; name one as {id}:key=value,... — its configs: {}",
                many.len(),
                self.config_list()
            ))),
            many => Err(SelectError(format!(
                "{} matches {} configs of run {id}: {}; add parameters to the selector",
                selector_text(sel),
                many.len(),
                labels(many.iter().copied())
            ))),
        }
    }

    /// The side of one config of this run.
    pub fn side(&self, config: &ConfigSamples) -> Side {
        Side {
            run: self.run.clone(),
            params: config.params.clone(),
            metrics: config.metrics.clone(),
        }
    }
}

/// `k=v; k=v` of several configs.
pub(crate) fn labels<'a>(configs: impl Iterator<Item = &'a ConfigSamples>) -> String {
    configs
        .map(|c| params_label(&c.params))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_selectors_parse() {
        let s = parse_spec("3:level=6, mode = fast").unwrap();
        assert_eq!(s.run, 3);
        assert_eq!(
            s.selector,
            vec![("level".into(), "6".into()), ("mode".into(), "fast".into())]
        );
        assert!(parse_spec("3").unwrap().selector.is_empty());
        assert!(parse_spec("x").is_err());
        assert!(parse_spec("3:level").is_err());
        assert!(parse_spec("3:=6").is_err());
    }

    #[test]
    fn values_match_by_their_text() {
        let mut p = Params::new();
        p.insert("level".into(), json!(6));
        p.insert("mode".into(), json!("fast"));
        p.insert("on".into(), json!(true));
        let sel = |s: &str| parse_selector(s).unwrap();
        assert!(matches(&p, &sel("level=6,mode=fast")));
        assert!(matches(&p, &sel("on=true")));
        assert!(!matches(&p, &sel("level=7")));
        assert!(!matches(&p, &sel("mode=\"fast\"")));
        assert!(!matches(&p, &sel("other=1")));
    }
}
