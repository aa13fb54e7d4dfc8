//! perflab-profile: where the time goes. Records samples with the real Linux `perf`
//! and reduces them itself, in the manner of the Iprobe reducer (ipreduce): per image,
//! then per function with "% of image" and "% of total", a threshold, a kernel/user
//! mode filter, idle excluded; a per-instruction view of one routine; its callers and
//! callees; folded stacks and a flame graph.
//!
//! Shaped as record → [`Profile`] → views, so that the CLI (`perflab profile`) and an
//! experiment trial (`[profile]`) share one path:
//!
//! ```no_run
//! use perflab_profile::{Profiler, ProfileSpec, ReportOptions, Target};
//! let running = Profiler::start(&ProfileSpec {
//!     target: Target::Pid(1234),
//!     ..ProfileSpec::default()
//! })?;
//! // ... the trial runs ...
//! let profile = running.stop()?;
//! let report = profile.report(&ReportOptions::default());
//! let svg = profile.flamegraph_svg()?;
//! let top = profile.top_functions(10); // [("schedule", 18.1), ...]
//! # Ok::<(), perflab_profile::ProfileError>(())
//! ```
//!
//! perf itself is a runtime dependency (Debian `linux-perf`); every failure to find or
//! use it is a [`ProfileError`] whose message says how to fix it.

pub mod annotate;
pub mod callgraph;
pub mod control;
mod elf;
pub mod error;
pub mod flame;
pub mod framepointers;
pub mod jit;
pub mod offcpu;
pub mod perf;
pub mod profile;
pub mod record;
pub mod reduce;
pub mod script;
pub mod stacks;

pub use annotate::{InstructionShare, RoutineView};
pub use callgraph::{CallGraph, Edge};
pub use error::ProfileError;
pub use framepointers::CallGraphChoice;
pub use jit::JitInfo;
pub use offcpu::{OffCpu, OffCpuReport};
pub use profile::Profile;
pub use record::{CommandOutput, Event, ProfileSpec, Profiler, Running, Target};
pub use reduce::{FunctionShare, ImageShare, Mode, Report, ReportOptions};
pub use script::{Frame, Sample};
pub use stacks::CallGraphMode;
