//! Terminal layout: the table style and the summary table `perflab run` and `perflab
//! show` print. How a number is written (mean ± CI, units, ratios, p-values) is
//! `perflab_analysis::format`, the same rules as the report's; commands use it directly.

use comfy_table::{Cell, CellAlignment, ContentArrangement, LineStyle, Table, TableStyle};
use perflab_analysis::format::{arrow, cv, level, mean_ci, value};
use perflab_analysis::summary::RunSummary;
use perflab_store::params_label;

/// Plain columns with one rule under the header: reads well in a terminal and in a
/// pasted log alike.
pub const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─'));

/// The per-config, per-metric table `run` and `show` print.
pub fn summary_table(s: &RunSummary) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec![
        "config".to_string(),
        "metric".to_string(),
        format!("mean ± {} CI", level(s.confidence())),
        "n".to_string(),
        "CV".to_string(),
        "median".to_string(),
        "min … max".to_string(),
        "outliers".to_string(),
    ]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for c in &s.configs {
        let label = params_label(&c.params);
        for (i, m) in c.metrics.iter().enumerate() {
            let st = &m.stats;
            t.add_row(vec![
                Cell::new(if i == 0 { label.as_str() } else { "" }),
                Cell::new(format!("{} {}", m.name, arrow(&m.better))),
                right(mean_ci(st, &m.unit)),
                right(st.n.to_string()),
                right(cv(st)),
                right(value(st.median, &m.unit)),
                right(format!(
                    "{} … {}",
                    value(st.min, &m.unit),
                    value(st.max, &m.unit)
                )),
                right(st.outliers.len().to_string()),
            ]);
        }
        if c.metrics.is_empty() {
            t.add_row(vec![Cell::new(label), Cell::new("(no successful trial)")]);
        }
    }
    t
}
