//! Where a distributed load runs (`perflab http URL --agents a,b`, or `--engine slurm`):
//! the rules that turn what was asked — agent names and an inventory, or a node count —
//! into what the agents' controller launches ([`SshAgents`] or a Slurm [`Srun`]), each
//! refused with a typed [`AgentHostsError`] before any host is contacted. (Where an
//! experiment's trials run is another rule set; this one is the distributed load's.)
//!
//! The rules: an inventory is given or `hosts.toml` is here; every agent is named once,
//! non-empty, and is in it; weights, when given, are one positive number per agent;
//! under Slurm the node count is the one asked, else the allocation's
//! (`SLURM_JOB_NUM_NODES`), else 2 — never 0, and never so many that a node's share of
//! the load would be empty; `srun` is found and the tasks run this perflab unless told
//! which.
//!
//! Errors name the [`Field`] they are about, not a flag: the CLI maps a field to its
//! flag and keeps flag grammar (which flags go together) to itself.

use std::path::{Path, PathBuf};

use perflab_load::LoadSpec;
use perflab_units::Phrase;

use crate::inventory::{Inventory, InventoryError};
use crate::slurm::Srun;

/// The inventory read when none is named.
pub const DEFAULT_INVENTORY: &str = "hosts.toml";

/// What part of the request an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The agents' names.
    Agents,
    /// The inventory file.
    Inventory,
    /// The agents' weights.
    Weights,
    /// The number of Slurm nodes.
    Nodes,
    /// The Slurm launcher (`srun`).
    Srun,
    /// The perflab the Slurm tasks run.
    Perflab,
}

/// Why a distributed load cannot be placed.
#[derive(Debug, thiserror::Error)]
pub enum AgentHostsError {
    #[error("no {DEFAULT_INVENTORY} here, and no inventory was named")]
    NoInventory,
    #[error("{}: {source}", path.display())]
    Inventory {
        path: PathBuf,
        source: InventoryError,
    },
    #[error("an empty host name")]
    EmptyName,
    #[error("{name}: {why}")]
    NotInInventory { name: String, why: String },
    #[error("{0} is named twice")]
    Twice(String),
    #[error("{weights} weights for {agents} agents: give one per agent, in the agents' order")]
    WeightCount { weights: usize, agents: usize },
    #[error("`{0}`: expected a positive number")]
    BadWeight(String),
    #[error("0: give at least one node")]
    NoNodes,
    #[error("{nodes}: {why}")]
    TooManyNodes {
        nodes: u32,
        /// Which count cannot be shared, as a field (`connections`).
        why: Phrase,
    },
    #[error("{0}")]
    NoSrun(String),
    #[error("cannot find this perflab's path for the Slurm tasks: {0}")]
    NoPerflab(String),
}

impl AgentHostsError {
    /// The field of the request it is about.
    pub fn field(&self) -> Field {
        match self {
            AgentHostsError::NoInventory | AgentHostsError::Inventory { .. } => Field::Inventory,
            AgentHostsError::EmptyName
            | AgentHostsError::NotInInventory { .. }
            | AgentHostsError::Twice(_) => Field::Agents,
            AgentHostsError::WeightCount { .. } | AgentHostsError::BadWeight(_) => Field::Weights,
            AgentHostsError::NoNodes | AgentHostsError::TooManyNodes { .. } => Field::Nodes,
            AgentHostsError::NoSrun(_) => Field::Srun,
            AgentHostsError::NoPerflab(_) => Field::Perflab,
        }
    }
}

/// Agents over ssh: the inventory they are in, and their weights (None: by cores).
#[derive(Debug)]
pub struct SshAgents {
    pub inventory: Inventory,
    pub weights: Option<Vec<f64>>,
}

/// Agents over ssh, checked: `agents` named once each in the inventory at `inventory`
/// (default [`DEFAULT_INVENTORY`]), `weights` one positive number per agent (or none).
pub fn ssh_agents(
    agents: &[String],
    inventory: Option<&Path>,
    weights: &[String],
) -> Result<SshAgents, AgentHostsError> {
    let path = inventory.unwrap_or(Path::new(DEFAULT_INVENTORY));
    if inventory.is_none() && !path.exists() {
        return Err(AgentHostsError::NoInventory);
    }
    let inventory = Inventory::load(path).map_err(|source| AgentHostsError::Inventory {
        path: path.to_path_buf(),
        source,
    })?;
    for (i, a) in agents.iter().enumerate() {
        if a.trim().is_empty() {
            return Err(AgentHostsError::EmptyName);
        }
        inventory
            .get(a)
            .map_err(|why| AgentHostsError::NotInInventory {
                name: a.clone(),
                why,
            })?;
        if agents[..i].contains(a) {
            return Err(AgentHostsError::Twice(a.clone()));
        }
    }
    let weights = (!weights.is_empty())
        .then(|| parse_weights(weights, agents.len()))
        .transpose()?;
    Ok(SshAgents { inventory, weights })
}

/// One positive weight per agent.
fn parse_weights(weights: &[String], agents: usize) -> Result<Vec<f64>, AgentHostsError> {
    if weights.len() != agents {
        return Err(AgentHostsError::WeightCount {
            weights: weights.len(),
            agents,
        });
    }
    weights
        .iter()
        .map(|w| {
            w.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| AgentHostsError::BadWeight(w.clone()))
        })
        .collect()
}

/// What a Slurm launch is asked for.
#[derive(Debug, Clone, Default)]
pub struct SlurmAsk {
    pub nodes: Option<u32>,
    pub partition: Option<String>,
    /// The perflab the tasks run (default: this one).
    pub perflab: Option<PathBuf>,
    /// Seconds srun may wait for the nodes.
    pub immediate_s: u32,
}

/// How srun is asked for the agents of `spec`: the node count asked, else the
/// allocation's (`SLURM_JOB_NUM_NODES`, read by `var`), else 2; each node must get a
/// share of the load.
pub fn srun(
    ask: &SlurmAsk,
    spec: &LoadSpec,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Srun, AgentHostsError> {
    let program = crate::slurm::find_srun().map_err(AgentHostsError::NoSrun)?;
    let in_allocation = var("SLURM_JOB_NUM_NODES").and_then(|n| n.trim().parse::<u32>().ok());
    let nodes = ask.nodes.or(in_allocation).unwrap_or(2);
    if nodes == 0 {
        return Err(AgentHostsError::NoNodes);
    }
    // A count (connections, requests) too small to give every node a share: refused
    // before srun runs.
    crate::agents::segments(spec, &vec![1.0; nodes as usize])
        .map_err(|why| AgentHostsError::TooManyNodes { nodes, why })?;
    let perflab = match &ask.perflab {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| AgentHostsError::NoPerflab(e.to_string()))?,
    };
    Ok(Srun {
        program,
        nodes,
        partition: ask.partition.clone(),
        perflab,
        immediate_s: ask.immediate_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(dir: &Path) -> PathBuf {
        let p = dir.join("inv.toml");
        std::fs::write(&p, "[[hosts]]\nname = \"a\"\n\n[[hosts]]\nname = \"b\"\n").unwrap();
        p
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn agents_are_named_once_each_in_the_inventory() {
        let dir = tempfile::tempdir().unwrap();
        let inv = inventory(dir.path());
        let ok = ssh_agents(&names(&["a", "b"]), Some(&inv), &names(&["1", "3"])).unwrap();
        assert_eq!(ok.weights, Some(vec![1.0, 3.0]));
        let err =
            |a: &[&str], w: &[&str]| ssh_agents(&names(a), Some(&inv), &names(w)).unwrap_err();
        assert!(matches!(err(&["a", "a"], &[]), AgentHostsError::Twice(n) if n == "a"));
        let e = err(&["c"], &[]);
        assert_eq!(e.field(), Field::Agents);
        assert!(e.to_string().starts_with("c: "), "{e}");
        assert!(matches!(err(&[" "], &[]), AgentHostsError::EmptyName));
        let e = err(&["a", "b"], &["1"]);
        assert_eq!(e.field(), Field::Weights);
        assert!(matches!(
            e,
            AgentHostsError::WeightCount {
                weights: 1,
                agents: 2
            }
        ));
        assert!(matches!(err(&["a"], &["-1"]), AgentHostsError::BadWeight(w) if w == "-1"));
        assert!(matches!(
            err(&["a"], &["inf"]),
            AgentHostsError::BadWeight(_)
        ));
    }

    #[test]
    fn a_missing_inventory_is_its_fields_error() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("none.toml");
        let e = ssh_agents(&names(&["a"]), Some(&gone), &[]).unwrap_err();
        assert_eq!(e.field(), Field::Inventory);
        assert!(e.to_string().contains("none.toml"), "{e}");
    }
}
