//! Latency percentile distribution, HdrHistogram style: one curve per config from
//! the merged `latency` histograms of its ok trials, percentile on a log scale of
//! 1/(1−q) from 50 % to 99.999 %, latency in milliseconds — from zero, or on decades
//! when the tail is over a hundred times the median ([`super::axis`]).

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::axis::Axis;
use super::line::{render, LinePlot};

/// Decodes a stored HdrHistogram (V2, optionally deflated); None when malformed.
pub fn decode(bytes: &[u8]) -> Option<Histogram<u64>> {
    Deserializer::new().deserialize(&mut &bytes[..]).ok()
}

/// Adds `b` into `a` (None when they cannot merge).
pub fn merge(a: &mut Histogram<u64>, b: &Histogram<u64>) -> Option<()> {
    a.add(b).ok()
}

fn x_of(q: f64) -> f64 {
    (1.0 / (1.0 - q)).log10()
}

const TICKS: [(f64, &str); 6] = [
    (0.5, "50%"),
    (0.9, "90%"),
    (0.99, "99%"),
    (0.999, "99.9%"),
    (0.9999, "99.99%"),
    (0.99999, "99.999%"),
];

/// The percentile plot of `(config, histogram in µs)` curves; None without data.
pub fn chart(curves: &[(String, Histogram<u64>)]) -> Option<String> {
    let curves: Vec<_> = curves.iter().filter(|(_, h)| !h.is_empty()).collect();
    if curves.is_empty() {
        return None;
    }
    let steps = 80;
    let (a, b) = (x_of(0.5), x_of(0.99999));
    let lines: Vec<(String, Vec<(f64, f64)>)> = curves
        .iter()
        .map(|(name, h)| {
            let pts = (0..=steps)
                .map(|i| {
                    let x = a + (b - a) * i as f64 / steps as f64;
                    let q = 1.0 - 10f64.powf(-x);
                    (x, h.value_at_quantile(q) as f64 / 1000.0)
                })
                .collect();
            (name.clone(), pts)
        })
        .collect();
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .collect();
    let axis = Axis::of(&ys, &[], true);
    let lines = lines
        .into_iter()
        .map(|(n, p)| (n, p.into_iter().map(|(x, y)| (x, axis.at(y))).collect()))
        .collect();
    Some(render(&LinePlot {
        title: "latency by percentile".into(),
        x_label: "percentile (%, log scale)".into(),
        y_label: format!("latency (ms){}", axis.note()),
        x_range: (a, b),
        y_range: (axis.lo, axis.hi),
        x_ticks: TICKS
            .iter()
            .map(|(q, l)| (x_of(*q), l.to_string()))
            .collect(),
        y_ticks: axis.ticks(5),
        lines,
    }))
}
