//! Where an experiment's parts run, checked before any host is contacted: the
//! inventory a run over hosts reads (`--hosts FILE`, else `hosts.toml` beside the
//! experiment, else the experiment's own `[[hosts]]`), every host it names looked up
//! there (`on`, `[workload] agents`, `host = ...` in `[service]`, `[monitor]`,
//! `[workload]`, `[profile]`), and the combinations that cannot work refused. What
//! passes is the [`Fleet`] a run's trials and sessions go through.
//!
//! One place for these rules, so `perflab run --on` and the one-trial commands' `--on`
//! (`perflab http`, `disk`, `doctor`, `profile`) place a trial the same way.

use std::path::PathBuf;

use perflab_lab::experiment::HostRef;
use perflab_lab::Experiment;

use crate::{Fleet, Inventory, Ssh};

/// How a run over hosts finds and reaches them.
#[derive(Debug, Clone, Default)]
pub struct FleetOptions {
    /// The inventory file (`--hosts`); default: `hosts.toml` beside the experiment,
    /// else the experiment's own `[[hosts]]`.
    pub hosts: Option<PathBuf>,
    /// Trust a host's key the first time it is seen (never a changed one).
    pub accept_new_host_keys: bool,
}

/// Why an experiment cannot be placed on its hosts. Every one is bad input: nothing
/// was contacted.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// `agents` and `on` (or `[workload] host`) both say where the load runs.
    #[error("{path}: [workload] agents and {other} both say where the load runs: keep one (agents split one load across hosts; `on` runs every config on each host)")]
    AgentsAndHosts { path: String, other: &'static str },
    /// With `on`, a part of the run would stay here.
    #[error("{path}: with `on`, the workload runs on each host while {section} would run here: give [service] and [monitor] a host (host = \"b\"; docs/fleet.md), drop [profile], or run without `on`")]
    LeftHere { path: String, section: &'static str },
    /// The inventory cannot be read.
    #[error("{0}")]
    Inventory(String),
    /// A named host is not in the inventory (the message says where it was named).
    #[error("{0}")]
    UnknownHost(String),
    /// The scratch directory for the binary copied to hosts cannot be made.
    #[error("cannot create {path}: {message}")]
    Scratch { path: String, message: String },
}

impl Fleet {
    /// The fleet of a run on hosts — `on`, a `host` in `[service]`, `[monitor]`,
    /// `[workload]` or `[profile]`, or `[workload] agents` — with every named host
    /// checked against the inventory; `None` when the experiment runs here only.
    pub fn for_experiment(
        exp: &Experiment,
        opts: &FleetOptions,
    ) -> Result<Option<Fleet>, PlacementError> {
        let placed = placed(exp);
        let agents = exp.workload.agents();
        if exp.on.is_empty() && placed.is_empty() && agents.is_empty() {
            return Ok(None);
        }
        check_sections(exp, &agents)?;
        let inventory = inventory(exp, opts)?;
        for h in &exp.on {
            inventory.get(h).map_err(PlacementError::UnknownHost)?;
        }
        for a in &agents {
            inventory.get(a).map_err(|e| {
                PlacementError::UnknownHost(format!(
                    "{}: [workload] agents: {e}",
                    exp.path.display()
                ))
            })?;
        }
        for (section, h) in &placed {
            inventory.get(&h.name).map_err(|e| {
                PlacementError::UnknownHost(
                    h.error(format!("[{section}] host = {:?}: {e}", h.name))
                        .to_string(),
                )
            })?;
        }
        let scratch = std::env::temp_dir().join(format!("perflab-fleet-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).map_err(|e| PlacementError::Scratch {
            path: scratch.display().to_string(),
            message: e.to_string(),
        })?;
        let mut fleet = Fleet::new(
            inventory,
            Ssh {
                accept_new_host_keys: opts.accept_new_host_keys,
                ..Default::default()
            },
            scratch,
        );
        fleet.workload_host = exp.workload_host.as_ref().map(|h| h.name.clone());
        Ok(Some(fleet))
    }
}

/// The hosts an experiment names besides `on`: (`section`, host).
fn placed(exp: &Experiment) -> Vec<(&'static str, &HostRef)> {
    [
        (
            "service",
            exp.service.as_ref().and_then(|s| s.host.as_ref()),
        ),
        (
            "monitor",
            exp.monitor.as_ref().and_then(|m| m.host.as_ref()),
        ),
        ("workload", exp.workload_host.as_ref()),
        (
            "profile",
            exp.profile.as_ref().and_then(|p| p.host.as_ref()),
        ),
    ]
    .into_iter()
    .filter_map(|(k, h)| Some((k, h?)))
    .collect()
}

/// `agents` with `on` or `[workload] host`, and `on` with a part left here, are refused.
fn check_sections(exp: &Experiment, agents: &[String]) -> Result<(), PlacementError> {
    let path = || exp.path.display().to_string();
    if !agents.is_empty() && (!exp.on.is_empty() || exp.workload_host.is_some()) {
        return Err(PlacementError::AgentsAndHosts {
            path: path(),
            other: if exp.on.is_empty() {
                "[workload] host"
            } else {
                "`on`"
            },
        });
    }
    if exp.on.is_empty() {
        return Ok(());
    }
    let here = [
        (
            "[service]",
            exp.service.as_ref().is_some_and(|s| s.host.is_none()),
        ),
        (
            "[monitor]",
            exp.monitor.as_ref().is_some_and(|m| m.host.is_none()),
        ),
        ("[profile]", exp.profile.is_some()),
    ];
    match here.iter().find(|(_, local)| *local) {
        Some((section, _)) => Err(PlacementError::LeftHere {
            path: path(),
            section,
        }),
        None => Ok(()),
    }
}

/// `--hosts FILE`, else `hosts.toml` beside the experiment, else its own `[[hosts]]`.
fn inventory(exp: &Experiment, opts: &FleetOptions) -> Result<Inventory, PlacementError> {
    let beside = exp.path.with_file_name("hosts.toml");
    let bad = |e: crate::InventoryError| PlacementError::Inventory(e.to_string());
    match &opts.hosts {
        Some(p) => Inventory::load(p).map_err(bad),
        None if beside.is_file() => Inventory::load(&beside).map_err(bad),
        None => Inventory::from_toml(&exp.path, &exp.text).map_err(bad),
    }
}
