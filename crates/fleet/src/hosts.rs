//! [`Fleet`]: the hosts of one run and how they are reached — the inventory, the link
//! to each host's `perflab worker` ([`WorkerLink`]: ssh unless told otherwise), the
//! scratch directory, and perflab put on each host once.
//!
//! It is its own module, apart from what uses it (the remote trials and sessions of
//! [`crate::remote`], the agents of [`crate::agents_trial`] and
//! [`crate::ssh_agents`]), so that those depend on it and not on each other.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::inventory::{Host, Inventory};
use crate::link::{LinkError, WorkerLink};
use crate::ssh::Ssh;

/// A host's perflab (the word to run it by there), or why it has none: settled once.
type Deployed = Arc<OnceLock<Result<String, LinkError>>>;

/// The hosts of a run. (A clone shares what has been deployed.)
#[derive(Clone)]
pub struct Fleet {
    pub inventory: Inventory,
    /// How ssh connections are made (the agents of a distributed load always use it).
    pub ssh: Ssh,
    /// Where the stripped binary is prepared before it is copied.
    pub scratch: PathBuf,
    /// `[workload] host`: where every trial's workload runs (unless its `host`
    /// parameter, from `on`, says otherwise).
    pub workload_host: Option<String>,
    /// How remote trials and host sessions reach a host's worker.
    pub(crate) link: Arc<dyn WorkerLink>,
    /// Per host: the perflab to run there, or why there is none.
    /// (Hosts deploy in parallel: a host's first trial waits only for its own.)
    deployed: Arc<Mutex<HashMap<String, Deployed>>>,
}

impl Fleet {
    /// The hosts of `inventory`, reached over `ssh`.
    pub fn new(inventory: Inventory, ssh: Ssh, scratch: PathBuf) -> Fleet {
        let link = Arc::new(ssh.clone());
        Fleet::with_link(inventory, ssh, link, scratch)
    }

    /// The hosts of `inventory`, their workers reached by `link` (a pipe link in
    /// tests: [`crate::pipe`]).
    pub fn with_link(
        inventory: Inventory,
        ssh: Ssh,
        link: Arc<dyn WorkerLink>,
        scratch: PathBuf,
    ) -> Fleet {
        Fleet {
            inventory,
            ssh,
            scratch,
            workload_host: None,
            link,
            deployed: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// How workers are reached.
    pub fn link(&self) -> &dyn WorkerLink {
        &*self.link
    }

    /// The perflab to run on `host`, put there on first use.
    pub(crate) fn perflab_on(&self, host: &Host) -> Result<String, LinkError> {
        let cell = {
            let mut d = self.deployed.lock().unwrap_or_else(|e| e.into_inner());
            d.entry(host.name.clone()).or_default().clone()
        };
        cell.get_or_init(|| self.link.prepare(host, &self.scratch))
            .clone()
    }
}
