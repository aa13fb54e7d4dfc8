//! Number and text formatting shared by the Markdown and HTML outputs: sensible
//! precision, units always printed, and escaping for each target.

use perflab_stats::Summary;

/// A number with about four significant digits (no exponent for usual magnitudes).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let a = v.abs();
    let decimals = if a == 0.0 || a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        // Four significant digits below 1, at most 9 decimals.
        ((-a.log10()).floor() as usize + 4).min(9)
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `value unit` (no trailing space when the unit is empty).
pub fn with_unit(v: f64, unit: &str) -> String {
    if unit.is_empty() {
        num(v)
    } else {
        format!("{} {unit}", num(v))
    }
}

/// `mean ± half unit`, or just `value unit` for a single trial (no pretend CI).
pub fn mean_ci(s: &Summary, unit: &str) -> String {
    let half = s.ci_half_width();
    if s.n < 2 || !half.is_finite() {
        with_unit(s.mean, unit)
    } else {
        let u = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        format!("{} ± {}{u}", num(s.mean), num(half))
    }
}

/// Coefficient of variation in percent, `—` for a single trial.
pub fn cv(s: &Summary) -> String {
    if s.n < 2 || !s.cv.is_finite() {
        "—".into()
    } else {
        format!("{:.1}%", s.cv * 100.0)
    }
}

/// `1.234 [1.1, 1.3]`.
pub fn ratio_ci(r: f64, lo: f64, hi: f64) -> String {
    format!("{} [{}, {}]", ratio(r), ratio(lo), ratio(hi))
}

fn ratio(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "—".into()
    }
}

/// A p-value with sensible precision.
pub fn p(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{v:.4}")
    }
}

/// Bytes as GiB/MiB.
pub fn bytes(b: u64) -> String {
    let g = b as f64 / (1u64 << 30) as f64;
    if g >= 1.0 {
        format!("{} GiB", num(g))
    } else {
        format!("{} MiB", num(b as f64 / (1u64 << 20) as f64))
    }
}

/// A duration in seconds, human sized.
pub fn duration(s: f64) -> String {
    if s >= 3600.0 {
        format!(
            "{}h {}m",
            (s / 3600.0).floor(),
            ((s % 3600.0) / 60.0).floor()
        )
    } else if s >= 60.0 {
        format!("{}m {:.0}s", (s / 60.0).floor(), s % 60.0)
    } else {
        format!("{} s", num(s))
    }
}

/// Escapes text for HTML and SVG content and attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text for one Markdown table cell: one line, pipes escaped, HTML-significant
/// characters escaped so an error message cannot break the table.
pub fn md_cell(s: &str) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_about_four_significant_digits() {
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(123.456), "123.5");
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(0.0012344), "0.001234");
        assert_eq!(num(f64::NAN), "—");
    }

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(md_cell("a|b\nc <x>"), "a\\|b c &lt;x&gt;");
    }
}
