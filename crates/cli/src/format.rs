//! Human formatting of numbers with units, and the summary table.

use comfy_table::{Cell, CellAlignment, ContentArrangement, LineStyle, Table, TableStyle};
use perflab_lab::summary::{params_label, RunSummary};

/// A value with a sensible precision and a scaled unit: `1.23 MiB`, `12.3 ms`.
pub fn value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let (v, unit) = scale(v, unit);
    format!("{} {unit}", sig(v)).trim_end().to_string()
}

/// `mean ± half unit`, both scaled the same way.
pub fn mean_pm(mean: f64, half: f64, unit: &str) -> String {
    let (m, u) = scale(mean, unit);
    let factor = if mean != 0.0 { m / mean } else { 1.0 };
    if !half.is_finite() {
        return format!("{} {u}", sig(m)).trim_end().to_string();
    }
    let decimals = decimals_for(m);
    let h = half * factor;
    format!("{} ± {h:.decimals$} {u}", sig(m))
        .trim_end()
        .to_string()
}

fn scale(v: f64, unit: &str) -> (f64, String) {
    let a = v.abs();
    match unit {
        "B" => {
            const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
            let mut x = v;
            let mut i = 0;
            while x.abs() >= 1024.0 && i < U.len() - 1 {
                x /= 1024.0;
                i += 1;
            }
            (x, U[i].to_string())
        }
        "s" if a > 0.0 && a < 1e-3 => (v * 1e6, "µs".into()),
        "s" if a > 0.0 && a < 1.0 => (v * 1e3, "ms".into()),
        _ => (v, unit.to_string()),
    }
}

/// Four significant digits, no exponent for everyday magnitudes.
pub fn sig(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-4..1e9).contains(&a) {
        return format!("{v:.3e}");
    }
    let digits = decimals_for(v);
    format!("{v:.digits$}")
}

/// Decimals that give `v` four significant digits.
fn decimals_for(v: f64) -> usize {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return 0;
    }
    (3 - a.log10().floor() as i32).clamp(0, 12) as usize
}

/// Percent with two significant decimals.
pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1}%", v * 100.0)
    } else {
        "—".into()
    }
}

/// Plain columns with one rule under the header: reads well in a terminal and in a
/// pasted log alike.
pub const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─'));

/// The per-config, per-metric table `run` and `show` print.
pub fn summary_table(s: &RunSummary) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    let level = s
        .configs
        .iter()
        .flat_map(|c| c.metrics.first())
        .map(|m| m.stats.confidence)
        .next()
        .unwrap_or(0.95);
    t.set_header(vec![
        "config".to_string(),
        "metric".to_string(),
        format!("mean ± {:.0}% CI", level * 100.0),
        "n".to_string(),
        "CV".to_string(),
        "median".to_string(),
        "min … max".to_string(),
        "outliers".to_string(),
    ]);
    for c in &s.configs {
        let label = params_label(&c.params);
        for (i, m) in c.metrics.iter().enumerate() {
            let st = &m.stats;
            let arrow = if m.better == "higher" { "↑" } else { "↓" };
            t.add_row(vec![
                Cell::new(if i == 0 { label.as_str() } else { "" }),
                Cell::new(format!("{} {arrow}", m.name)),
                Cell::new(mean_pm(st.mean, st.ci_half_width(), &m.unit))
                    .set_alignment(CellAlignment::Right),
                Cell::new(st.n).set_alignment(CellAlignment::Right),
                Cell::new(pct(st.cv)).set_alignment(CellAlignment::Right),
                Cell::new(value(st.median, &m.unit)).set_alignment(CellAlignment::Right),
                Cell::new(format!(
                    "{} … {}",
                    value(st.min, &m.unit),
                    value(st.max, &m.unit)
                ))
                .set_alignment(CellAlignment::Right),
                Cell::new(st.outliers.len()).set_alignment(CellAlignment::Right),
            ]);
        }
        if c.metrics.is_empty() {
            t.add_row(vec![Cell::new(label), Cell::new("(no successful trial)")]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_scaled_with_units() {
        assert_eq!(value(1536.0, "B"), "1.500 KiB");
        assert_eq!(value(0.0123, "s"), "12.30 ms");
        assert_eq!(value(2.5, "s"), "2.500 s");
        assert_eq!(value(12345.0, "req/s"), "12345 req/s");
        assert_eq!(mean_pm(0.5, 0.01, "s"), "500.0 ± 10.0 ms");
        assert_eq!(mean_pm(2.012, 0.08459, "MiB"), "2.012 ± 0.085 MiB");
        assert_eq!(value(f64::NAN, "s"), "—");
    }
}
