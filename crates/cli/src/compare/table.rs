//! Terminal tables of comparisons: the benchstat-like baseline/candidate table and
//! the ratio-of-ratios table. Every number is written by `perflab_analysis::format`,
//! so it reads as in the report.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use perflab_analysis::compare::{PairReport, Row};
use perflab_analysis::format::{arrow, level, ratio_ci, sig};
use perflab_analysis::interaction::Design;

use crate::format::STYLE;

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn new_table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(header);
    t
}

/// The benchstat-like table of one baseline/candidate pair, geomeans last. The ratio
/// is the verdict's estimate (`basis`: paired or Welch); metrics that cannot be
/// compared are left to [`notes`]' one line.
pub fn pair(r: &PairReport) -> Table {
    pair_with(r, &Row::verdict_text)
}

/// [`pair`] with each row's verdict written by `verdict` (`perflab compare` across
/// runs says "within noise" there: `perflab_analysis::across`).
pub fn pair_with(r: &PairReport, verdict: &dyn Fn(&Row) -> String) -> Table {
    let level = level(r.confidence);
    let mut t = new_table(vec![
        "metric".to_string(),
        format!("baseline ± {level} CI"),
        format!("candidate ± {level} CI"),
        format!("ratio [{level} CI]"),
        "Δ%".to_string(),
        "basis".to_string(),
        "p (Welch)".to_string(),
        "verdict".to_string(),
    ]);
    for row in r.shown_rows() {
        t.add_row(vec![
            Cell::new(format!("{} {}", row.name, arrow(&row.better))),
            right(row.baseline.text(&row.unit)),
            right(row.candidate.text(&row.unit)),
            right(row.ratio_text()),
            right(row.delta_text()),
            Cell::new(row.basis_text()),
            right(row.p_text()),
            Cell::new(verdict(row)),
        ]);
    }
    for g in &r.geomean {
        t.add_row(vec![
            Cell::new(g.label()),
            Cell::new(""),
            Cell::new(""),
            right(ratio_ci(g.geo.ratio, g.geo.ci_low, g.geo.ci_high)),
            right(perflab_analysis::format::delta_pct(
                (g.geo.ratio - 1.0) * 100.0,
            )),
            Cell::new(""),
            Cell::new(""),
            Cell::new(g.combines()),
        ]);
    }
    t
}

/// The lines under a pair's table: per compared metric its basis, minimum detectable
/// effect and any warning; then every metric that could not be compared, in one line.
pub fn notes(r: &PairReport) -> Vec<String> {
    let mut out: Vec<String> = r
        .shown_rows()
        .flat_map(|row| {
            row.notes()
                .into_iter()
                .map(move |n| format!("  {}: {n}", row.name))
        })
        .collect();
    out.extend(r.not_comparable_line());
    out
}

/// The ratio-of-ratios table of a design.
pub fn interaction(
    d: &Design,
    rows: &[perflab_analysis::interaction::Row],
    confidence: f64,
) -> Table {
    let level = level(confidence);
    let mut t = new_table(vec![
        "metric".to_string(),
        format!("{} [{level} CI]", d.x.title),
        format!("{} [{level} CI]", d.y.title),
        format!("ratio of ratios [{level} CI]"),
        "bootstrap CI".to_string(),
    ]);
    for r in rows {
        let name = Cell::new(format!("{} {}", r.name, arrow(&r.better)));
        match &r.result {
            Ok(i) => t.add_row(vec![
                name,
                right(ratio_ci(
                    i.ratio_x.ratio,
                    i.ratio_x.ci_low,
                    i.ratio_x.ci_high,
                )),
                right(ratio_ci(
                    i.ratio_y.ratio,
                    i.ratio_y.ci_low,
                    i.ratio_y.ci_high,
                )),
                right(ratio_ci(i.ratio_of_ratios, i.ci_low, i.ci_high)),
                right(format!(
                    "[{}, {}]",
                    sig(i.bootstrap_ci_low),
                    sig(i.bootstrap_ci_high)
                )),
            ]),
            Err(why) => t.add_row(vec![name, Cell::new(format!("not computed: {why}"))]),
        };
    }
    t
}
