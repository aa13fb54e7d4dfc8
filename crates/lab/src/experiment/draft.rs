//! An experiment as a typed value, before it is checked: what a command's flags mean
//! (`perflab mem`, `bench`, ...), built with setters instead of written as text. Its
//! [`Draft::to_toml`] serialises it (serde + toml) into the experiment file the run
//! stores — the text `--resume` and `export` read back — and [`Draft::check`] reads
//! that text with [`Experiment::parse`], so a built experiment is checked by the same
//! rules, with the same messages, as a file someone wrote.
//!
//! The workload is a [`Kind`] and its option table; a typed spec of the kind
//! (`perflab_workloads::mem::MemSpec`, ...) gives the table with [`Draft::new`], and
//! [`Draft::vary`] turns one of its options into a matrix parameter of the same name
//! (the option then reads `"{name}"`, rendered per trial).

use std::path::Path;

use perflab_workloads::spec::Kind;
use serde::Serialize;

use super::{Experiment, Order, Repetitions, Stop};
use crate::error::FileError;

/// An experiment being built. `Default` leaves every optional key out (the file's
/// defaults apply).
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub name: String,
    pub description: Option<String>,
    pub repetitions: Option<Repetitions>,
    /// When auto repetitions stop (`None`: the file's default, `precise`).
    pub stop: Option<Stop>,
    pub warmup: Option<u32>,
    pub order: Option<Order>,
    pub noise_check: Option<bool>,
    /// CPUs every trial is pinned to (`"0-1,3"`).
    pub cpus: Option<String>,
    /// Each trial's time limit (`"300s"`).
    pub timeout: Option<String>,
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub teardown: Option<String>,
    /// Matrix parameters in order (the first varies slowest).
    pub matrix: Vec<(String, Vec<toml::Value>)>,
    pub kind: Kind,
    /// The workload's options, placeholders and all.
    pub options: toml::Table,
}

/// Why a draft cannot be written as a file.
#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    /// The options of the spec given do not serialise as a TOML table.
    #[error("the {kind} options cannot be written as TOML: {message}")]
    Options { kind: Kind, message: String },
    /// [`Draft::vary`] named an option the workload does not have.
    #[error("matrix parameter {name:?}: the {kind} workload has no option of that name")]
    NoSuchOption { kind: Kind, name: String },
    #[error(transparent)]
    File(#[from] FileError),
}

impl Draft {
    /// An experiment named `name` running `spec`, a typed value of the workload's
    /// options (serialised into its table).
    pub fn new<S: Serialize>(name: &str, kind: Kind, spec: &S) -> Result<Draft, DraftError> {
        let options = toml::Table::try_from(spec).map_err(|e| DraftError::Options {
            kind,
            message: e.to_string(),
        })?;
        Ok(Draft::with_options(name, kind, options))
    }

    /// An experiment named `name` whose workload is `kind` with these options.
    pub fn with_options(name: &str, kind: Kind, options: toml::Table) -> Draft {
        Draft {
            name: name.to_string(),
            description: None,
            repetitions: None,
            stop: None,
            warmup: None,
            order: None,
            noise_check: None,
            cpus: None,
            timeout: None,
            prepare: None,
            setup: None,
            teardown: None,
            matrix: Vec::new(),
            kind,
            options,
        }
    }

    /// Sets one option of the workload (a string with placeholders, a number, ...).
    pub fn option(mut self, key: &str, value: impl Into<toml::Value>) -> Draft {
        self.options.insert(key.to_string(), value.into());
        self
    }

    /// A matrix parameter `name` over `values`, without touching the options.
    pub fn param(mut self, name: &str, values: Vec<toml::Value>) -> Draft {
        self.matrix.push((name.to_string(), values));
        self
    }

    /// Option `name` becomes a matrix parameter of that name over `values`: the option
    /// reads `"{name}"`. An option the workload lacks is an error.
    pub fn vary<V: Into<toml::Value>>(
        mut self,
        name: &str,
        values: Vec<V>,
    ) -> Result<Draft, DraftError> {
        let Some(slot) = self.options.get_mut(name) else {
            return Err(DraftError::NoSuchOption {
                kind: self.kind,
                name: name.to_string(),
            });
        };
        *slot = format!("{{{name}}}").into();
        self.matrix.push((
            name.to_string(),
            values.into_iter().map(Into::into).collect(),
        ));
        Ok(self)
    }

    /// The experiment file this draft is: `[experiment]`, `[matrix]` and `[workload]`,
    /// serialised.
    pub fn to_toml(&self) -> Result<String, DraftError> {
        let file = FileOut {
            experiment: self.header(),
            matrix: self
                .matrix
                .iter()
                .map(|(k, v)| (k.clone(), toml::Value::Array(v.clone())))
                .collect(),
            workload: WorkloadOut {
                kind: self.kind,
                options: &self.options,
            },
        };
        toml::to_string(&file).map_err(|e| DraftError::Options {
            kind: self.kind,
            message: e.to_string(),
        })
    }

    /// The checked experiment: [`Draft::to_toml`] read by [`Experiment::parse`] (`path`
    /// names it in messages).
    pub fn check(&self, path: &Path) -> Result<Experiment, DraftError> {
        let text = self.to_toml()?;
        Ok(Experiment::parse(path, &text)?)
    }

    fn header(&self) -> HeaderOut<'_> {
        let (repetitions, min, max, target) = match &self.repetitions {
            None => (None, None, None, None),
            Some(Repetitions::Fixed(n)) => (Some(toml::Value::from(*n as i64)), None, None, None),
            Some(Repetitions::Auto { min, max, target }) => (
                Some(toml::Value::from("auto")),
                Some(*min),
                Some(*max),
                Some(*target),
            ),
        };
        let (stop, equivalence) = match self.stop {
            None => (None, None),
            Some(Stop::Precise) => (Some("precise"), None),
            Some(Stop::Decided { equivalence }) => (Some("decided"), Some(equivalence)),
        };
        HeaderOut {
            name: &self.name,
            stop,
            equivalence,
            description: self.description.as_deref(),
            repetitions,
            min_repetitions: min,
            max_repetitions: max,
            target_precision: target,
            warmup: self.warmup,
            order: self.order.map(|o| o.as_str()),
            noise_check: self.noise_check,
            cpus: self.cpus.as_deref(),
            timeout: self.timeout.as_deref(),
            prepare: self.prepare.as_deref(),
            setup: self.setup.as_deref(),
            teardown: self.teardown.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct FileOut<'a> {
    experiment: HeaderOut<'a>,
    #[serde(skip_serializing_if = "toml::Table::is_empty")]
    matrix: toml::Table,
    workload: WorkloadOut<'a>,
}

#[derive(Serialize)]
struct HeaderOut<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repetitions: Option<toml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_repetitions: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_repetitions: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_precision: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    equivalence: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warmup: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    order: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    noise_check: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpus: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prepare: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    setup: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    teardown: Option<&'a str>,
}

#[derive(Serialize)]
struct WorkloadOut<'a> {
    kind: Kind,
    #[serde(flatten)]
    options: &'a toml::Table,
}
