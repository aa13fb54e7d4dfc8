//! Hardware and software event counters for a whole process tree, with
//! `perf_event_open(2)` — `perf stat`'s numbers as trial metrics.
//!
//! A trial's counters are opened by its root process on itself just before `exec`
//! (`open`: inherited by every process it forks, enabled by the `exec`), handed to
//! perflab, and read once the tree has ended (or twice, around a trial, for a service
//! that outlives it: [`Reading::since`]). Each read carries the kernel's
//! `time_enabled`/`time_running`: a count whose event shared the PMU with others
//! (multiplexed) is scaled up by enabled/running, as `perf stat` does, and flagged.
//! An event the machine cannot count is *missing with its reason* — "not available:
//! no hardware PMU" on most VMs, a `perf_event_paranoid` refusal named as such — and
//! never stored as 0.
//!
//! Events are opened one by one, not as a group: a group is scheduled all or nothing,
//! so six hardware events in one group would never run on a PMU with four counters,
//! and the kernel refuses `PERF_FORMAT_GROUP` with `inherit` before Linux 6.x anyway.
//!
//! The raw syscall through `libc` rather than a crate (`perf-event`,
//! `perf-event-open-sys`): perflab needs one attr, one read and the pre-`exec` open —
//! which those crates do not offer — and the attr is twenty lines of `#[repr(C)]`.

mod event;
mod open;
mod reading;

use std::os::fd::{AsRawFd, OwnedFd};

pub use event::{Event, UnknownEvent};
pub use open::{has_hardware_pmu, Armed, ChildSide, NO_PMU};
pub use reading::{Count, EventReading, Reading};

/// Open counters (or why each event has none).
#[derive(Debug)]
pub struct Counters {
    slots: Vec<(Event, Slot)>,
}

#[derive(Debug)]
enum Slot {
    Open {
        fd: OwnedFd,
        /// Opened with `exclude_kernel` (the kernel refused more).
        user_only: bool,
    },
    Missing(String),
}

impl Counters {
    fn all_missing(events: Vec<Event>, why: &str) -> Counters {
        Counters {
            slots: events
                .into_iter()
                .map(|e| (e, Slot::Missing(why.to_string())))
                .collect(),
        }
    }

    /// The events, in the order asked.
    pub fn events(&self) -> Vec<Event> {
        self.slots.iter().map(|(e, _)| *e).collect()
    }

    /// Reads every counter now: the whole tree's totals since `exec` (children that
    /// exited folded in, live ones summed by the kernel).
    pub fn read(&self) -> Reading {
        let events = self
            .slots
            .iter()
            .map(|(e, slot)| EventReading {
                event: *e,
                outcome: match slot {
                    Slot::Missing(why) => Err(why.clone()),
                    Slot::Open { fd, user_only } => {
                        read_fd(fd.as_raw_fd()).map(|(raw, enabled, running)| Count {
                            raw,
                            time_enabled_ns: enabled,
                            time_running_ns: running,
                            user_only: *user_only,
                        })
                    }
                },
            })
            .collect();
        Reading { events }
    }
}

/// `read(2)` of a counter with TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING: value,
/// enabled, running.
fn read_fd(fd: i32) -> Result<(u64, u64, u64), String> {
    let mut buf = [0u64; 3];
    // SAFETY: a buffer of 24 bytes for a read of at most 24.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
    if n == 24 {
        Ok((buf[0], buf[1], buf[2]))
    } else if n < 0 {
        Err(format!(
            "cannot read the counter: {}",
            std::io::Error::last_os_error()
        ))
    } else {
        Err(format!("short read of the counter ({n} bytes)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Runs `sh -c script` with counters opened before its exec.
    fn counted(script: &str, events: &[Event]) -> Reading {
        let armed = Armed::new(events).unwrap();
        let side = armed.child_side();
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(script);
        // SAFETY: ChildSide::open is async-signal-safe.
        unsafe { cmd.pre_exec(move || side.open()) };
        let mut child = cmd.spawn().unwrap();
        let counters = armed.collect();
        child.wait().unwrap();
        counters.read()
    }

    #[test]
    fn a_child_of_the_root_is_counted() {
        // The root shell itself faults little; its children's faults must be in.
        let alone = counted("true", &[Event::PageFaults, Event::TaskClock]);
        let tree = counted(
            "for i in 1 2 3 4 5 6 7 8; do sh -c 'true'; done",
            &[Event::PageFaults, Event::TaskClock],
        );
        let (a, t) = (
            alone.value(Event::PageFaults).unwrap(),
            tree.value(Event::PageFaults).unwrap(),
        );
        assert!(a > 0.0, "{alone:?}");
        assert!(
            t > 4.0 * a,
            "8 children fault more than one shell: {a} vs {t}"
        );
        assert!(tree.value(Event::TaskClock).unwrap() > 0.0);
    }

    #[test]
    fn hardware_events_without_a_pmu_say_so() {
        let r = counted("true", &[Event::Instructions, Event::PageFaults]);
        let ins = &r.events[0].outcome;
        if has_hardware_pmu() {
            assert!(ins.is_ok(), "{ins:?}");
        } else {
            assert_eq!(ins.as_ref().unwrap_err(), NO_PMU);
        }
        assert!(r.events[1].outcome.is_ok());
    }
}
