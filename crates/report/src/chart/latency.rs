//! Latency percentile distribution, HdrHistogram style: one curve per config from
//! the merged `latency` histograms of its ok trials, percentile on a log scale of
//! 1/(1−q) from 50 % to 99.999 %, latency in milliseconds.

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::line::{render, LinePlot};
use super::{domain, labelled, nice_ticks};

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
    let y_range = domain(
        lines.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)),
        true,
    );
    Some(render(&LinePlot {
        title: "latency by percentile".into(),
        x_label: "percentile (%, log scale)".into(),
        y_label: "latency (ms)".into(),
        x_range: (a, b),
        y_range,
        x_ticks: TICKS
            .iter()
            .map(|(q, l)| (x_of(*q), l.to_string()))
            .collect(),
        y_ticks: labelled(nice_ticks(y_range.0, y_range.1, 5)),
        lines,
    }))
}
