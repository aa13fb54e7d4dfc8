//! The events perflab counts, by the names `perf stat -e` uses, and the
//! `perf_event_attr` (type, config) each one is.
//!
//! The list is closed on purpose: these ten are the ones issue 31 names and every
//! machine's kernel spells the same way (generic hardware and software events, no PMU
//! specific raw codes), so an experiment file that counts them means the same thing
//! on any host — or says plainly that a host cannot count one.

use std::fmt;
use std::str::FromStr;

/// One countable event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    Cycles,
    Instructions,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
    TaskClock,
    ContextSwitches,
    CpuMigrations,
    PageFaults,
}

/// `PERF_TYPE_HARDWARE` and `PERF_TYPE_SOFTWARE` of linux/perf_event.h.
pub(crate) const TYPE_HARDWARE: u32 = 0;
pub(crate) const TYPE_SOFTWARE: u32 = 1;

/// A counter name that is not one of [`Event::ALL`]; the message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown counter {name:?}: expected one of {}", Event::names().join(", "))]
pub struct UnknownEvent {
    pub name: String,
}

impl Event {
    /// Every event, hardware first, in the order tables list them.
    pub const ALL: [Event; 10] = [
        Event::Cycles,
        Event::Instructions,
        Event::Branches,
        Event::BranchMisses,
        Event::CacheReferences,
        Event::CacheMisses,
        Event::TaskClock,
        Event::ContextSwitches,
        Event::CpuMigrations,
        Event::PageFaults,
    ];

    /// The name `perf stat -e` and experiment files use: `cycles`, `branch-misses`, ...
    pub fn name(self) -> &'static str {
        match self {
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::Branches => "branches",
            Event::BranchMisses => "branch-misses",
            Event::CacheReferences => "cache-references",
            Event::CacheMisses => "cache-misses",
            Event::TaskClock => "task-clock",
            Event::ContextSwitches => "context-switches",
            Event::CpuMigrations => "cpu-migrations",
            Event::PageFaults => "page-faults",
        }
    }

    /// Every name, in [`Event::ALL`]'s order.
    pub fn names() -> Vec<&'static str> {
        Event::ALL.iter().map(|e| e.name()).collect()
    }

    /// Counted by the CPU's performance monitoring unit (absent on most VMs).
    pub fn is_hardware(self) -> bool {
        self.type_config().0 == TYPE_HARDWARE
    }

    /// `perf_event_attr.type` and `.config`.
    pub(crate) fn type_config(self) -> (u32, u64) {
        match self {
            Event::Cycles => (TYPE_HARDWARE, 0),
            Event::Instructions => (TYPE_HARDWARE, 1),
            Event::CacheReferences => (TYPE_HARDWARE, 2),
            Event::CacheMisses => (TYPE_HARDWARE, 3),
            Event::Branches => (TYPE_HARDWARE, 4),
            Event::BranchMisses => (TYPE_HARDWARE, 5),
            Event::TaskClock => (TYPE_SOFTWARE, 1),
            Event::PageFaults => (TYPE_SOFTWARE, 2),
            Event::ContextSwitches => (TYPE_SOFTWARE, 3),
            Event::CpuMigrations => (TYPE_SOFTWARE, 4),
        }
    }

    /// The metric this event is stored as: `counter.<name>`.
    pub fn metric(self) -> String {
        format!("counter.{}", self.name())
    }

    /// The stored unit: task-clock in ms (the kernel counts ns), cycles as `cycles`,
    /// the rest plain counts.
    pub fn unit(self) -> &'static str {
        match self {
            Event::TaskClock => "ms",
            Event::Cycles => "cycles",
            _ => "count",
        }
    }

    /// A raw count in the stored unit.
    pub fn in_unit(self, count: f64) -> f64 {
        match self {
            Event::TaskClock => count / 1e6,
            _ => count,
        }
    }

    /// Parses a list of names, keeping the first of each and the order given.
    pub fn parse_list<S: AsRef<str>>(names: &[S]) -> Result<Vec<Event>, UnknownEvent> {
        let mut out = Vec::new();
        for n in names {
            let e: Event = n.as_ref().parse()?;
            if !out.contains(&e) {
                out.push(e);
            }
        }
        Ok(out)
    }
}

impl FromStr for Event {
    type Err = UnknownEvent;
    fn from_str(s: &str) -> Result<Event, UnknownEvent> {
        let s = s.trim();
        Event::ALL
            .iter()
            .copied()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEvent {
                name: s.to_string(),
            })
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_an_unknown_one_lists_the_valid_ones() {
        for e in Event::ALL {
            assert_eq!(e.name().parse::<Event>().unwrap(), e);
        }
        let err = "cycels".parse::<Event>().unwrap_err().to_string();
        assert!(err.contains("\"cycels\""), "{err}");
        assert!(err.contains("cycles, instructions"), "{err}");
        assert!(err.contains("page-faults"), "{err}");
    }

    #[test]
    fn a_list_keeps_order_and_drops_repeats() {
        let l = Event::parse_list(&["page-faults", "cycles", "page-faults"]).unwrap();
        assert_eq!(l, vec![Event::PageFaults, Event::Cycles]);
        assert!(Event::parse_list(&["task-clock", "nope"]).is_err());
    }

    #[test]
    fn six_hardware_and_four_software_events() {
        assert_eq!(Event::ALL.iter().filter(|e| e.is_hardware()).count(), 6);
    }
}
