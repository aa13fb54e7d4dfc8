//! One module per subcommand.

pub mod completions;
pub mod http;
pub mod run;
pub mod runs;
pub mod serve;
pub mod show;
