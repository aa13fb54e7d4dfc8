//! The differential flame graph section: each config against the report's baseline
//! config, where both have at least 2 profiled ok trials ([`crate::diffflame`] draws
//! it, at α = 0.05, the why block's default). Inlined rather than an `<img>`: the SVG
//! has no script, and inline its frames' titles show on hover.

use std::fmt::Write;

use perflab_analysis::diffprof::DiffProfile;
use perflab_store::ExportedTrial;

use crate::data::ReportData;
use crate::format::esc;

/// The level frames are judged at.
const ALPHA: f64 = 0.05;

pub(super) fn section(o: &mut String, d: &ReportData) {
    let Some(base_ord) = d.baseline else {
        return;
    };
    let trials = |ordinal: u32| -> Vec<ExportedTrial> {
        d.export
            .trials
            .iter()
            .filter(|t| t.config == ordinal)
            .cloned()
            .collect()
    };
    let base = trials(base_ord);
    let mut heading = false;
    for c in d.configs.iter().filter(|c| c.ordinal != base_ord) {
        let Some(diff) = DiffProfile::of(&base, &trials(c.ordinal)) else {
            continue;
        };
        if !heading {
            let _ = writeln!(
                o,
                "<h2>Differential flame graph</h2>\n<p class=\"muted\">CPU time per operation of every frame, candidate against the baseline config {}, across the profiled trials: red where the candidate spends more, blue less (Holm-adjusted p &lt; {ALPHA}), grey otherwise. Hover a frame for both values and the 95 % CI of its change.</p>",
                esc(d.config_label(base_ord))
            );
            heading = true;
        }
        let title = format!(
            "{} vs {}",
            d.config_label(c.ordinal),
            d.config_label(base_ord)
        );
        let _ = writeln!(
            o,
            "<div class=\"diffflame\" style=\"overflow-x:auto\">{}</div>",
            crate::diffflame::svg(&diff, ALPHA, &title)
        );
    }
}
