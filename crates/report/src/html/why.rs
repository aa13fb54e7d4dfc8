//! The HTML why section: under the comparison, per compared config, the differences
//! that explain its verdict (`crate::why`), or the sentence that says none passed.

use std::fmt::Write;

use super::{head, row};
use crate::data::ReportData;
use crate::format::esc;

pub(super) fn section(o: &mut String, d: &ReportData) {
    if d.whys.is_empty() {
        return;
    }
    let _ = writeln!(o, "<h2 id=\"why\">Why</h2>");
    for w in &d.whys {
        let _ = writeln!(
            o,
            "<h3>{} vs {}</h3>\n<p class=\"muted\">{}</p>",
            esc(&w.candidate),
            esc(&w.baseline),
            esc(&w.block.headline())
        );
        if w.block.reasons.is_empty() {
            continue;
        }
        let change = format!("change [{} CI]", d.level());
        head(
            o,
            &[
                "kind",
                "what",
                "baseline",
                "candidate",
                &change,
                "p (adjusted)",
            ],
        );
        for r in &w.block.reasons {
            row(
                o,
                &[
                    esc(r.kind_text()),
                    esc(&r.name),
                    esc(&r.baseline_text()),
                    esc(&r.candidate_text()),
                    esc(&r.change_text()),
                    esc(&r.p_text()),
                ],
            );
        }
        o.push_str("</tbody></table>\n");
    }
}
