//! What a read of the counters says: per event a count (raw, time enabled, time
//! running, scaled when multiplexed) or why there is none; the metrics stored from it
//! (`counter.<event>`, derived `counter.ipc` and misses per 1,000 instructions) and
//! the `counters.json` trial artifact that keeps the detail.

use serde::Serialize;

use super::event::Event;

/// One event's count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Count {
    /// The kernel's count while the event was on the PMU.
    pub raw: u64,
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
    /// Counted in user space only (the kernel refused kernel-mode counting).
    pub user_only: bool,
}

impl Count {
    /// Shared the PMU with other events: counted part of the time, scaled.
    pub fn multiplexed(&self) -> bool {
        self.time_running_ns < self.time_enabled_ns
    }

    /// time running / time enabled (1 when never enabled).
    pub fn running_ratio(&self) -> f64 {
        if self.time_enabled_ns == 0 {
            1.0
        } else {
            self.time_running_ns as f64 / self.time_enabled_ns as f64
        }
    }

    /// The count scaled to the whole enabled time, as `perf stat` prints it; `None`
    /// when the event never ran although enabled (the PMU was always busy).
    pub fn value(&self) -> Option<f64> {
        if !self.multiplexed() {
            return Some(self.raw as f64);
        }
        (self.time_running_ns > 0)
            .then(|| self.raw as f64 * self.time_enabled_ns as f64 / self.time_running_ns as f64)
    }

    /// What was counted between `earlier` and `self` (same counter, read twice).
    fn since(&self, earlier: &Count) -> Count {
        Count {
            raw: self.raw.saturating_sub(earlier.raw),
            time_enabled_ns: self.time_enabled_ns.saturating_sub(earlier.time_enabled_ns),
            time_running_ns: self.time_running_ns.saturating_sub(earlier.time_running_ns),
            user_only: self.user_only,
        }
    }
}

/// One event in a reading.
#[derive(Debug, Clone, PartialEq)]
pub struct EventReading {
    pub event: Event,
    /// The count, or why there is none.
    pub outcome: Result<Count, String>,
}

/// Every counter read once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reading {
    pub events: Vec<EventReading>,
}

/// A metric of a reading: name, unit, value, which way is better.
pub type CounterMetric = (String, &'static str, f64, &'static str);

impl Reading {
    /// What was counted between `earlier` and this reading (for a service that runs
    /// across trials). An event missing in either is missing.
    pub fn since(&self, earlier: &Reading) -> Reading {
        let events = self
            .events
            .iter()
            .map(|r| {
                let before = earlier.events.iter().find(|b| b.event == r.event);
                let outcome = match (&r.outcome, before.map(|b| &b.outcome)) {
                    (Ok(now), Some(Ok(then))) => Ok(now.since(then)),
                    (Err(why), _) | (_, Some(Err(why))) => Err(why.clone()),
                    (Ok(_), None) => Err("not read at the start".into()),
                };
                EventReading {
                    event: r.event,
                    outcome,
                }
            })
            .collect();
        Reading { events }
    }

    /// An event's value in its stored unit (None: missing or never scheduled).
    pub fn value(&self, e: Event) -> Option<f64> {
        let r = self.events.iter().find(|r| r.event == e)?;
        let c = r.outcome.as_ref().ok()?;
        c.value().map(|v| e.in_unit(v))
    }

    /// Events whose count was scaled from part of the time.
    pub fn multiplexed(&self) -> Vec<Event> {
        self.events
            .iter()
            .filter(|r| r.outcome.as_ref().is_ok_and(Count::multiplexed))
            .map(|r| r.event)
            .collect()
    }

    /// The trial metrics: `counter.<event>` for each counted event (lower is
    /// better), `counter.ipc` (higher) with cycles and instructions, and
    /// `counter.{cache,branch}-misses_per_kinst` with instructions (lower).
    pub fn metrics(&self) -> Vec<CounterMetric> {
        let mut out: Vec<CounterMetric> = self
            .events
            .iter()
            .filter_map(|r| {
                Some((
                    r.event.metric(),
                    r.event.unit(),
                    self.value(r.event)?,
                    "lower",
                ))
            })
            .collect();
        let ins = self.value(Event::Instructions);
        if let (Some(i), Some(c)) = (ins, self.value(Event::Cycles)) {
            if c > 0.0 {
                out.push(("counter.ipc".into(), "instructions/cycle", i / c, "higher"));
            }
        }
        for (miss, name) in [
            (Event::CacheMisses, "counter.cache-misses_per_kinst"),
            (Event::BranchMisses, "counter.branch-misses_per_kinst"),
        ] {
            if let (Some(i), Some(m)) = (ins, self.value(miss)) {
                if i > 0.0 {
                    out.push((name.into(), "per 1k instructions", m / i * 1000.0, "lower"));
                }
            }
        }
        out
    }

    /// Each counted event divided by `n` operations (requests): `PREFIX<event>_per_req`
    /// with `-` written `_` (`service_context_switches_per_req`), lower is better.
    pub fn per_op_metrics(&self, prefix: &str, n: f64) -> Vec<CounterMetric> {
        if n <= 0.0 {
            return Vec::new();
        }
        self.events
            .iter()
            .filter_map(|r| {
                let v = self.value(r.event)?;
                let unit = match r.event.unit() {
                    "count" => "count/req",
                    "ms" => "ms/req",
                    _ => "cycles/req",
                };
                let name = format!("{prefix}{}_per_req", r.event.name().replace('-', "_"));
                Some((name, unit, v / n, "lower"))
            })
            .collect()
    }

    /// A warning for a trial whose counts were scaled (None when none was).
    pub fn warning(&self) -> Option<String> {
        let m = self.multiplexed();
        (!m.is_empty()).then(|| {
            format!(
                "counters multiplexed (counted part of the time and scaled): {}",
                m.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// The `counters.json` artifact: per event its value (scaled), raw count, times
    /// enabled and running, running ratio, multiplexed flag — or `missing` with the
    /// reason.
    pub fn to_json(&self) -> serde_json::Value {
        let events: serde_json::Map<String, serde_json::Value> = self
            .events
            .iter()
            .map(|r| {
                let v = match &r.outcome {
                    Ok(c) => serde_json::json!({
                        "value": c.value().map(|v| r.event.in_unit(v)),
                        "unit": r.event.unit(),
                        "raw": c.raw,
                        "time_enabled_ns": c.time_enabled_ns,
                        "time_running_ns": c.time_running_ns,
                        "running_ratio": c.running_ratio(),
                        "multiplexed": c.multiplexed(),
                        "user_only": c.user_only,
                    }),
                    Err(why) => serde_json::json!({ "missing": why }),
                };
                (r.event.name().to_string(), v)
            })
            .collect();
        serde_json::json!({ "events": events })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(raw: u64, enabled: u64, running: u64) -> Result<Count, String> {
        Ok(Count {
            raw,
            time_enabled_ns: enabled,
            time_running_ns: running,
            user_only: false,
        })
    }

    fn reading(v: Vec<(Event, Result<Count, String>)>) -> Reading {
        Reading {
            events: v
                .into_iter()
                .map(|(event, outcome)| EventReading { event, outcome })
                .collect(),
        }
    }

    #[test]
    fn a_multiplexed_count_is_scaled_and_flagged() {
        let r = reading(vec![
            (Event::Cycles, count(1000, 100, 50)),
            (Event::Instructions, count(3000, 100, 100)),
        ]);
        assert_eq!(r.value(Event::Cycles), Some(2000.0));
        assert_eq!(r.multiplexed(), vec![Event::Cycles]);
        assert!(r.warning().unwrap().contains("cycles"));
        let m = r.metrics();
        let ipc = m.iter().find(|x| x.0 == "counter.ipc").unwrap();
        assert_eq!((ipc.2, ipc.3), (1.5, "higher"));
        let j = r.to_json();
        assert_eq!(j["events"]["cycles"]["multiplexed"], true);
        assert_eq!(j["events"]["cycles"]["running_ratio"], 0.5);
    }

    #[test]
    fn a_missing_event_is_no_metric_and_says_why() {
        let r = reading(vec![
            (Event::Instructions, Err(crate::perfcount::NO_PMU.into())),
            (Event::PageFaults, count(42, 10, 10)),
            (Event::TaskClock, count(2_500_000, 10, 10)),
        ]);
        let names: Vec<String> = r.metrics().into_iter().map(|m| m.0).collect();
        assert_eq!(names, ["counter.page-faults", "counter.task-clock"]);
        assert_eq!(r.value(Event::TaskClock), Some(2.5));
        assert_eq!(
            r.to_json()["events"]["instructions"]["missing"],
            "not available: no hardware PMU"
        );
        assert!(r.warning().is_none());
    }

    #[test]
    fn a_never_scheduled_event_has_no_value() {
        let r = reading(vec![(Event::Cycles, count(0, 100, 0))]);
        assert_eq!(r.value(Event::Cycles), None);
        assert!(r.metrics().is_empty());
    }

    #[test]
    fn since_subtracts_and_per_request_names_use_underscores() {
        let before = reading(vec![(Event::ContextSwitches, count(100, 10, 10))]);
        let after = reading(vec![(Event::ContextSwitches, count(400, 30, 30))]);
        let d = after.since(&before);
        assert_eq!(d.value(Event::ContextSwitches), Some(300.0));
        let per = d.per_op_metrics("service_", 150.0);
        assert_eq!(per[0].0, "service_context_switches_per_req");
        assert_eq!(per[0].2, 2.0);
        assert!(d.per_op_metrics("service_", 0.0).is_empty());
    }
}
