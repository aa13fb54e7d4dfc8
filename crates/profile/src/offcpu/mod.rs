//! Off-CPU time: how long the profiled tasks were blocked (a lock, a disk, the network,
//! a sleep), per stack, beside the on-CPU samples — what a CPU-clock profile cannot see.
//!
//! Recorded with the `sched:sched_switch` tracepoint and its call chain: a task's
//! switch-out with a state other than running opens a blocked interval whose stack is
//! the one at the switch-out; the task's next switch-in closes it. Debian's perf 6.1
//! accepts the BPF `--off-cpu` option and silently ignores it, so it is not used.
//!
//! Why three sources end an interval ([`intervals`]): a tracepoint fires in the task
//! that switches *out*, so a per-task recording (a command, a pid) never sees its own
//! switch-in there; perf's context-switch records (`--switch-events`, cheap, no stack)
//! give it exactly. System-wide, every switch is recorded and its `next_pid` is the
//! switch-in. Any later sample of the task proves it ran again (an upper bound, used
//! only where neither came first).
//!
//! Why the sampling event gets its frequency as an event term (`cpu-clock/freq=999/`)
//! and not `-F`: a global `-F` makes perf sample the tracepoint at that frequency too,
//! which drops switches once they come faster; without it the tracepoint keeps its
//! period of 1 (every switch).
//!
//! Preemption (`prev_state=R`: runnable, waiting for a CPU, not blocked) is counted
//! apart ([`OffCpu::waiting_us`]), not as off-CPU time; a task that exits (`X`, `Z`)
//! opens nothing. Intervals still open at the end of the recording are closed at its
//! last event (a server blocked in `accept` until the end was blocked all that time).
//! A task blocked since before the recording began is seen only from its first
//! recorded switch-out (its stack is not known before), so a `-p`/`-a` recording of a
//! task blocked throughout shows none of it; a recording without any switch-out says
//! so in a note rather than show a silent zero.
//! Memory stays bounded: one open interval per task, one total per distinct stack,
//! and a recording is read as `perf script` writes it ([`OffCpu::read`]), each switch
//! reduced and dropped (5 s system-wide here, 37,429 switches: perflab's peak 29 MB,
//! 126 MB when the text was held whole).

mod intervals;
mod report;

use std::path::Path;

pub use intervals::{BlockedStack, OffCpu};
pub use report::{OffCpuFunction, OffCpuReport, OffCpuStack};

use crate::error::{ProfileError, Result};
use crate::record::{ProfileSpec, Target};
use crate::script::Sample;

/// The tracepoint recorded for off-CPU time.
pub const SWITCH_TRACEPOINT: &str = "sched:sched_switch";
/// perf's context-switch records (`--switch-events`), as `perf script` names them.
pub const SWITCH_RECORD: &str = "PERF_RECORD_SWITCH";
/// The frame that ends every off-CPU stack in folded output.
pub const OFF_CPU_FRAME: &str = "[off-cpu]";

/// Where perf looks for tracepoints (it also tries the old debugfs place).
const TRACEFS: &str = "/sys/kernel/tracing";

/// True for what the off-CPU reduction reads and the on-CPU one must not count: the
/// tracepoint's samples and the context-switch records.
pub fn is_switch(s: &Sample) -> bool {
    s.event == SWITCH_TRACEPOINT || s.event.starts_with(SWITCH_RECORD)
}

/// Adds the off-CPU events to `perf record`'s options when the spec asks for them:
/// the sampling event's frequency moves from `-F` into the event (see the module
/// doc), then `-e sched:sched_switch` (the call-graph options apply to it too) and, for
/// a command or a pid, `--switch-events`.
pub(crate) fn add_record_args(spec: &ProfileSpec, args: &mut Vec<String>) {
    if !spec.off_cpu {
        return;
    }
    if let Some(f) = args.iter().position(|a| a == "-F") {
        if f + 1 < args.len() {
            let freq = args.remove(f + 1);
            args.remove(f);
            if let Some(e) = args.iter().position(|a| a == "-e") {
                if let Some(ev) = args.get_mut(e + 1) {
                    *ev = format!("{ev}/freq={freq},name={ev}/");
                }
            }
        }
    }
    args.extend(["-e".to_string(), SWITCH_TRACEPOINT.to_string()]);
    if spec.target != Target::System {
        args.push("--switch-events".into());
    }
}

/// What the report says when perflab mounted tracefs.
pub(crate) const MOUNTED_NOTE: &str =
    "perflab mounted tracefs at /sys/kernel/tracing (perf reads sched:sched_switch there)";

/// Makes sure perf can read the tracepoint's format from tracefs: there already, or
/// mounted here when perflab runs as root (true: it did, and a note says so); else an
/// error naming the fix.
pub(crate) fn ensure_tracefs() -> Result<bool> {
    let event = Path::new(TRACEFS).join("events/sched/sched_switch");
    if event.exists() || Path::new("/sys/kernel/debug/tracing/events/sched/sched_switch").exists() {
        return Ok(false);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(ProfileError::TracepointsUnavailable {
            detail: format!("tracefs is not mounted at {TRACEFS} and perflab is not root"),
        });
    }
    mount_tracefs()?;
    if !event.exists() {
        return Err(ProfileError::TracepointsUnavailable {
            detail: format!(
                "tracefs mounted at {TRACEFS} has no sched/sched_switch event (a kernel \
                 without CONFIG_SCHED_TRACER or tracepoints?)"
            ),
        });
    }
    Ok(true)
}

fn mount_tracefs() -> Result<()> {
    use std::ffi::CString;
    let (src, dir, fs) = (
        CString::new("nodev").expect("no NUL"),
        CString::new(TRACEFS).expect("no NUL"),
        CString::new("tracefs").expect("no NUL"),
    );
    // SAFETY: valid NUL-terminated strings, no data argument.
    let rc = unsafe { libc::mount(src.as_ptr(), dir.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        // EBUSY: mounted meanwhile (another perflab, perf itself).
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(ProfileError::TracepointsUnavailable {
                detail: format!("cannot mount tracefs at {TRACEFS}: {e}"),
            });
        }
    }
    Ok(())
}

/// perf's refusal of the tracepoint (no tracefs, not readable, unknown tracepoint) as
/// [`ProfileError::TracepointsUnavailable`], with perf's own line.
pub(crate) fn tracepoint_failure(stderr: &str) -> Option<ProfileError> {
    let lower = stderr.to_lowercase();
    let signs = [
        "unknown tracepoint",
        "can't access trace events",
        "debugfs/tracefs",
    ];
    if !signs.iter().any(|s| lower.contains(s)) {
        return None;
    }
    let detail = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Error:"))
        .map(|l| l.trim_start_matches("Error:").trim().to_string())
        .unwrap_or_else(|| "unknown tracepoint".into());
    Some(ProfileError::TracepointsUnavailable { detail })
}

#[cfg(test)]
mod tests;
