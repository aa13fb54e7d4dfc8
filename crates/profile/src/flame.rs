//! Folded stacks (`comm;outer;...;leaf count`, the format FlameGraph, inferno and
//! speedscope read) and the flame graph SVG drawn from them by `inferno`.
//!
//! inferno rather than hand-written SVG: its output is the familiar interactive
//! flamegraph.pl drawing (search, zoom, tooltips) that people know how to read, and it
//! is maintained. Its licence is CDDL-1.0 (file-level copyleft, it ports the CDDL
//! flamegraph.pl); perflab links it unmodified, which keeps perflab MIT OR Apache-2.0.

use std::collections::BTreeMap;

use crate::error::{ProfileError, Result};
use crate::reduce::ReportOptions;
use crate::script::Sample;

/// Folded stacks of the samples that pass the filters, one line per distinct stack,
/// sorted. The process name is the root frame, as stackcollapse-perf does.
pub fn folded(samples: &[Sample], o: &ReportOptions) -> String {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples.iter().filter(|s| o.selects(s)) {
        let mut line = clean(&s.comm);
        for f in s.frames.iter().rev() {
            line.push(';');
            line.push_str(&clean(&f.name()));
        }
        *stacks.entry(line).or_default() += 1;
    }
    let mut out = String::new();
    for (stack, n) in stacks {
        out.push_str(&stack);
        out.push(' ');
        out.push_str(&n.to_string());
        out.push('\n');
    }
    out
}

/// Frame names may not hold the separator, nor a line break.
fn clean(name: &str) -> String {
    let n: String = name
        .chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect();
    if n.is_empty() {
        "[unknown]".into()
    } else {
        n
    }
}

/// Draws folded stacks as an interactive SVG flame graph.
pub fn svg(folded: &str, title: &str, subtitle: Option<&str>) -> Result<Vec<u8>> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.subtitle = subtitle.map(str::to_string);
    opts.count_name = "samples".into();
    let mut out = Vec::new();
    if folded.trim().is_empty() {
        // inferno refuses empty input; an empty but valid drawing says more.
        opts.subtitle = Some("no samples".into());
        inferno::flamegraph::from_lines(&mut opts, ["[no samples] 1"].iter().copied(), &mut out)
            .map_err(|e| ProfileError::FlameGraph(e.to_string()))?;
        return Ok(out);
    }
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)
        .map_err(|e| ProfileError::FlameGraph(e.to_string()))?;
    Ok(out)
}
