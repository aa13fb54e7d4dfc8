//! One module per subcommand.

pub mod bench;
pub mod compare;
pub mod completions;
pub mod compress;
pub mod crypto;
pub mod disk;
pub mod doctor;
pub mod export;
pub mod http;
pub mod http_agents;
pub mod import;
pub mod mem;
pub mod net;
pub mod on_host;
pub mod oneliner;
pub mod profile;
pub mod report;
pub mod run;
pub mod runs;
pub mod scimark;
pub mod serve;
pub mod show;
pub mod suite;
pub mod thresholds;
pub mod top;
pub mod worker;
