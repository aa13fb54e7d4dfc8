//! Formatting for the Markdown and HTML outputs that is the report's own: sizes and
//! durations in its header, and escaping for each target. Numbers are written by
//! `perflab_analysis::format` (used directly by the renderers), the same rules as the
//! terminal's: mean ± CI, ratio [lo, hi] and p-values read alike in `perflab compare`
//! and in a report.

use perflab_analysis::format::num;

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
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(md_cell("a|b\nc <x>"), "a\\|b c &lt;x&gt;");
    }
}
