//! The profile section: the top functions of the first profiled trial (its profile
//! artifact under `perflab_store::vocab::ARTIFACT_PROFILE`, or the name older `perflab
//! profile` runs stored, see `perflab_analysis::profile`) and its flame graph.

use std::fmt::Write;

use perflab_analysis::profile::{find_artifact, profile_artifact, top_functions};
use perflab_store::base64;
use perflab_store::vocab::ARTIFACT_FLAMEGRAPH;

use super::{head, row};
use crate::data::ReportData;
use crate::format::esc;

pub(super) fn section(o: &mut String, d: &ReportData) {
    let json = profile_artifact(&d.export.trials);
    let flame = find_artifact(&d.export.trials, ARTIFACT_FLAMEGRAPH);
    if json.is_none() && flame.is_none() {
        return;
    }
    let _ = writeln!(o, "<h2>Profile</h2>");
    if let Some((t, a)) = json {
        let top = top_functions(&a.content, 15);
        if !top.is_empty() {
            let _ = writeln!(
                o,
                "<p class=\"muted\">Top functions, trial {}.</p>",
                t.ordinal
            );
            head(o, &["function", "image", "% of samples"]);
            for f in top {
                row(
                    o,
                    &[esc(&f.name), esc(&f.image), format!("{:.2}%", f.pct_total)],
                );
            }
            o.push_str("</tbody></table>\n");
        }
    }
    if let Some((t, a)) = flame {
        // As an <img> data URI: the flame graph's own scripts and links stay inert.
        let _ = writeln!(
            o,
            "<p class=\"muted\">Flame graph, trial {}.</p><img class=\"flame\" alt=\"flame graph\" src=\"data:image/svg+xml;base64,{}\">",
            t.ordinal,
            base64::encode(&a.content)
        );
    }
}
