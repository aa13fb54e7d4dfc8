//! Differences of kernel counters between two snapshots.
//!
//! Kernel counters only grow, but some are 32-bit (`unsigned int` fields of
//! /proc/diskstats such as the tick counters wrap after 49.7 days of busy time) and a
//! device or interface that is removed and added again starts from zero. The rule here is
//! sysstat's: a smaller value that fits in 32 bits is a 32-bit wrap; anything else that
//! went down is a reset, and the delta is taken from zero.

/// `cur - prev` for a monotonic counter, allowing for a 32-bit wrap or a reset.
pub fn delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else if prev <= u64::from(u32::MAX) {
        // 32-bit wrap: the counter went past 2^32 and started again.
        cur + (1u64 << 32) - prev
    } else {
        // Reset (device re-attached, counters cleared): count from zero.
        cur
    }
}

/// Per-second rate of a counter over `secs` seconds (0 when `secs` is not positive).
pub fn rate(prev: u64, cur: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        delta(prev, cur) as f64 / secs
    } else {
        0.0
    }
}

/// `part / whole * 100`, or 0 when `whole` is 0.
pub fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_wraps_and_resets() {
        assert_eq!(delta(10, 15), 5);
        // 32-bit wrap: 2^32 - 6 -> 4 is 10 steps.
        assert_eq!(delta(u64::from(u32::MAX) - 5, 4), 10);
        // A 64-bit counter that went down was reset.
        assert_eq!(delta(1 << 40, 7), 7);
        assert_eq!(rate(0, 50, 0.5), 100.0);
        assert_eq!(rate(0, 50, 0.0), 0.0);
        assert_eq!(pct(1.0, 4.0), 25.0);
        assert_eq!(pct(1.0, 0.0), 0.0);
    }
}
