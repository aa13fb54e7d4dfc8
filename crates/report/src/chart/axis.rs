//! The value axis of a chart, chosen from the data so that it tells the truth:
//!
//! - **Never below zero for a quantity that cannot be negative.** A Student-t
//!   interval of a few noisy trials can reach below zero (a p99.9 of 0.2, 0.3 and
//!   5 ms has a 95 % interval from −5 ms); padding the domain to take it in drew a
//!   latency axis from −2 ms. Such a bound is clipped at the axis (the chart draws
//!   that whisker end open, and its hover text keeps the true interval). What cannot
//!   be negative is read from the data ([`non_negative`]): every stored value ≥ 0
//!   and a name that does not say it is a difference. A metric with a negative
//!   value keeps a signed axis.
//! - **Logarithmic when the values span decades** ([`LOG_SPAN`]): 134 op/s of
//!   RSA-4096 beside millions of hashes, or cache against DRAM bandwidth, would be a
//!   bar no one can see on a linear axis. Only when every value is positive (a log
//!   axis has no place for 0); ticks at whole decades, labelled compactly.
//!
//! An [`Axis`] maps values to plot coordinates (their log10 on a log axis) that a
//! [`super::Frame`] then maps to the screen, so the frame and the line plot stay
//! linear and unaware of the scale.

use super::{domain, labelled, nice_ticks};

/// Values whose largest is more than this many times their smallest get a log axis.
pub const LOG_SPAN: f64 = 100.0;

/// How much of a decade a bar chart's log axis keeps below its smallest value.
pub const BAR_ROOM: f64 = 0.3;

/// A value axis: its range in plot coordinates and whether they are log10.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub log: bool,
    /// The range in plot coordinates (decades on a log axis).
    pub lo: f64,
    pub hi: f64,
}

impl Axis {
    /// The axis for `values` (the data points: trials, means, curve points) and
    /// `bounds` (interval ends, shown but never deciding the scale). A
    /// `non_negative` quantity's axis starts at 0 (linear) and its bounds below zero
    /// are clipped; bounds that do not fit a log axis are clipped at its floor.
    pub fn of(values: &[f64], bounds: &[f64], non_negative: bool) -> Axis {
        Axis::build(values, bounds, non_negative, 0.0)
    }

    /// [`Axis::of`] for bars, which start at the axis floor: a log axis keeps at
    /// least [`BAR_ROOM`] of a decade below the smallest value, so its bar is seen.
    pub fn bars(values: &[f64], bounds: &[f64], non_negative: bool) -> Axis {
        Axis::build(values, bounds, non_negative, BAR_ROOM)
    }

    fn build(values: &[f64], bounds: &[f64], non_negative: bool, room: f64) -> Axis {
        let finite = || values.iter().copied().filter(|v| v.is_finite());
        if spans_decades(values) {
            let positive = finite().chain(bounds.iter().copied().filter(|b| *b > 0.0));
            let (lo, hi) = decades(positive, room);
            return Axis { log: true, lo, hi };
        }
        let clip = |b: f64| if non_negative { b.max(0.0) } else { b };
        let all = finite().chain(bounds.iter().copied().map(clip));
        let (lo, hi) = domain(all, true);
        Axis { log: false, lo, hi }
    }

    /// A linear axis over a range already chosen.
    pub fn linear(lo: f64, hi: f64) -> Axis {
        Axis { log: false, lo, hi }
    }

    /// The plot coordinate of `v`, clipped into the axis (a value that cannot sit on
    /// a log axis, 0 or less, goes to its floor).
    pub fn at(&self, v: f64) -> f64 {
        let p = if self.log {
            if v > 0.0 {
                v.log10()
            } else {
                self.lo
            }
        } else {
            v
        };
        if p.is_nan() {
            return self.lo;
        }
        p.clamp(self.lo, self.hi)
    }

    /// Whether `v` lies below the axis (so its mark is clipped there).
    pub fn below(&self, v: f64) -> bool {
        if self.log {
            v <= 0.0 || v.log10() < self.lo - 1e-9
        } else {
            v < self.lo - 1e-9 * (self.hi - self.lo).abs().max(1e-300)
        }
    }

    /// Where a bar starts: the axis floor on a log axis, else 0 kept inside the axis.
    pub fn base(&self) -> f64 {
        if self.log {
            self.lo
        } else {
            0f64.clamp(self.lo, self.hi)
        }
    }

    /// About `n` labelled ticks, in plot coordinates: round values, or whole decades.
    pub fn ticks(&self, n: usize) -> Vec<(f64, String)> {
        if !self.log {
            return labelled(nice_ticks(self.lo, self.hi, n));
        }
        let (lo, hi) = (self.lo.round() as i32, self.hi.round() as i32);
        let step = ((hi - lo) as usize).div_ceil(12).max(1);
        (lo..=hi)
            .step_by(step)
            .map(|e| (f64::from(e), decade_label(e)))
            .collect()
    }

    /// What an axis label adds after its `(unit)`: `, log scale` on a log axis.
    pub fn note(&self) -> &'static str {
        if self.log {
            ", log scale"
        } else {
            ""
        }
    }
}

/// Whether every finite value is positive and the largest is more than [`LOG_SPAN`]
/// times the smallest.
pub fn spans_decades(values: &[f64]) -> bool {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() || finite.iter().any(|v| *v <= 0.0) {
        return false;
    }
    let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let max = finite.iter().copied().fold(0.0, f64::max);
    max / min > LOG_SPAN
}

/// Whole decades (log10) around positive values, with at least `room` of a decade
/// below the smallest.
fn decades(values: impl Iterator<Item = f64>, room: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v.log10());
        hi = hi.max(v.log10());
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let lo = (lo - room).floor();
    let hi = hi.ceil().max(lo + 1.0);
    (lo, hi)
}

/// `10^e` compactly: `0.01`, `1`, `100`, `1k`, `10M`, `1G`.
fn decade_label(e: i32) -> String {
    match e {
        e if e >= 12 => format!("1e{e}"),
        e if e >= 9 => format!("{}G", 10u64.pow((e - 9) as u32)),
        e if e >= 6 => format!("{}M", 10u64.pow((e - 6) as u32)),
        e if e >= 3 => format!("{}k", 10u64.pow((e - 3) as u32)),
        e if e >= 0 => 10u64.pow(e as u32).to_string(),
        e if e >= -6 => format!("{:.*}", (-e) as usize, 10f64.powi(e)),
        e => format!("1e{e}"),
    }
}

/// Whether metric `name` with these stored `values` is a quantity that cannot be
/// negative: none of its values is, and its name does not say it is a difference
/// (`delta`, `diff`, `change`), whose interval may honestly cross zero.
pub fn non_negative(name: &str, values: &[f64]) -> bool {
    let lower = name.to_ascii_lowercase();
    let signed = ["delta", "diff", "change"]
        .iter()
        .any(|w| lower.contains(w));
    !signed && !values.iter().any(|v| *v < 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_interval_of_a_non_negative_quantity_does_not_pull_the_axis_below_zero() {
        // p99.9 of three trials, 0.2, 0.3 and 5 ms: the 95 % interval reaches −5 ms.
        let a = Axis::of(&[0.2, 0.3, 5.0, 1.833], &[-5.0, 8.7], true);
        assert_eq!(a.lo, 0.0);
        assert!(a.hi >= 8.7);
        assert!(a.below(-5.0) && a.at(-5.0) == 0.0);
        // A difference keeps its negative side.
        let d = Axis::of(&[-1.0, 2.0], &[-3.0, 4.0], false);
        assert!(d.lo <= -3.0);
        assert!(!non_negative("latency_delta_ms", &[1.0, 2.0]));
        assert!(!non_negative("x", &[1.0, -2.0]));
        assert!(non_negative("latency_p999_ms", &[0.2, 0.3, 5.0]));
    }

    #[test]
    fn values_over_decades_get_a_log_axis_with_decade_ticks() {
        let a = Axis::bars(&[134.0, 40_000.0, 2_500_000.0], &[-20.0, 3e6], true);
        assert!(a.log);
        assert_eq!((a.lo, a.hi), (1.0, 7.0));
        let labels: Vec<String> = a.ticks(5).into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["10", "100", "1k", "10k", "100k", "1M", "10M"]);
        // The smallest value's bar, from the floor, has a length.
        assert!(a.at(134.0) > a.base());
        // A bound at or below zero sits on the floor.
        assert_eq!(a.at(-20.0), a.lo);
        assert!(a.below(-20.0));
        assert_eq!(a.note(), ", log scale");
        // 100 exactly at the floor: for bars the floor moves a decade down, for a
        // line it stays.
        assert_eq!(Axis::bars(&[100.0, 1e5], &[], true).lo, 1.0);
        assert_eq!(Axis::of(&[100.0, 1e5], &[], true).lo, 2.0);
        assert_eq!(Axis::of(&[0.163, 415.5], &[], true).lo, -1.0);
    }

    #[test]
    fn a_narrow_span_or_a_zero_stays_linear() {
        assert!(!Axis::of(&[10.0, 900.0], &[], true).log);
        assert!(!Axis::of(&[0.0, 1.0, 5000.0], &[], true).log);
        assert!(!spans_decades(&[]));
        assert!(spans_decades(&[1.0, 101.0]));
    }

    #[test]
    fn decades_are_labelled_compactly() {
        let l: Vec<String> = [-2, 0, 2, 3, 4, 6, 9, 10].map(decade_label).into();
        assert_eq!(l, ["0.01", "1", "100", "1k", "10k", "1M", "1G", "10G"]);
    }
}
