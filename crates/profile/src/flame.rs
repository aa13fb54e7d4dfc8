//! Folded stacks (`comm;outer;...;leaf count`, the format FlameGraph, inferno and
//! speedscope read) and the flame graph SVG drawn from them by `inferno`; with
//! off-CPU time, the wall-clock variant: on- and off-CPU stacks in microseconds, the
//! off-CPU ones ending in `[off-cpu]` and drawn in blues.
//!
//! inferno rather than hand-written SVG: its output is the familiar interactive
//! flamegraph.pl drawing (search, zoom, tooltips) that people know how to read, and it
//! is maintained. Its licence is CDDL-1.0 (file-level copyleft, it ports the CDDL
//! flamegraph.pl); perflab links it unmodified, which keeps perflab MIT OR Apache-2.0.

use std::collections::BTreeMap;

use crate::error::{ProfileError, Result};
use crate::offcpu::{OffCpu, OFF_CPU_FRAME};
use crate::reduce::ReportOptions;
use crate::script::Sample;

/// The suffix that tells an off-CPU frame from the on-CPU frame of the same function
/// in a wall-clock flame graph (inferno colours by name).
const OFF_SUFFIX: &str = " (off-cpu)";

/// Folded stacks of the samples that pass the filters, one line per distinct stack,
/// sorted. The process name is the root frame, as stackcollapse-perf does.
pub fn folded(samples: &[Sample], o: &ReportOptions) -> String {
    lines(stack_counts(samples, o))
}

/// Samples per distinct folded stack.
fn stack_counts(samples: &[Sample], o: &ReportOptions) -> BTreeMap<String, u64> {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples.iter().filter(|s| o.selects(s)) {
        let mut line = clean(&s.comm);
        for f in s.frames.iter().rev() {
            line.push(';');
            line.push_str(&clean(&f.name()));
        }
        *stacks.entry(line).or_default() += 1;
    }
    stacks
}

/// Wall-clock folded stacks: the on-CPU samples at `us_per_sample` microseconds each
/// and the off-CPU stacks (ending in `[off-cpu]`) in microseconds, one sorted list.
pub fn wall_folded(
    samples: &[Sample],
    off: &OffCpu,
    us_per_sample: f64,
    o: &ReportOptions,
) -> String {
    let mut stacks: BTreeMap<String, u64> = stack_counts(samples, o)
        .into_iter()
        .map(|(k, n)| (k, (n as f64 * us_per_sample).round() as u64))
        .collect();
    for (k, us) in off.folded_us(o) {
        *stacks.entry(k).or_default() += us;
    }
    stacks.retain(|_, us| *us > 0);
    lines(stacks)
}

fn lines(stacks: BTreeMap<String, u64>) -> String {
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
pub(crate) fn clean(name: &str) -> String {
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
    opts.count_name = "samples".into();
    draw(opts, folded, title, subtitle)
}

/// Draws wall-clock folded stacks ([`wall_folded`], microseconds): on-CPU frames in
/// the usual warm palette, off-CPU frames (every frame under the root of a stack that
/// ends in `[off-cpu]`) in blues, named with an ` (off-cpu)` suffix so that a function
/// seen both ways is two boxes of two colours.
pub fn wall_svg(folded: &str, title: &str, subtitle: Option<&str>) -> Result<Vec<u8>> {
    let mut map = inferno::flamegraph::color::PaletteMap::default();
    let mut input = String::with_capacity(folded.len());
    for line in folded.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let mut frames = stack.split(';');
        let off = stack.ends_with(OFF_CPU_FRAME);
        input.push_str(frames.next().unwrap_or("[unknown]"));
        for f in frames {
            input.push(';');
            if off {
                let name = if f == OFF_CPU_FRAME {
                    f.to_string()
                } else {
                    format!("{f}{OFF_SUFFIX}")
                };
                map.insert(&name, blue(&name));
                input.push_str(&name);
            } else {
                input.push_str(f);
            }
        }
        input.push(' ');
        input.push_str(n);
        input.push('\n');
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.count_name = "µs".into();
    opts.palette_map = Some(&mut map);
    draw(opts, &input, title, subtitle)
}

/// A blue that varies a little with the name (as the warm palette does), so that
/// neighbouring off-CPU boxes stay apart.
fn blue(name: &str) -> inferno::flamegraph::color::Color {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let v = (h % 60) as u8;
    inferno::flamegraph::color::Color {
        r: 40 + v / 2,
        g: 90 + v,
        b: 215 + v / 3,
    }
}

fn draw(
    mut opts: inferno::flamegraph::Options<'_>,
    folded: &str,
    title: &str,
    subtitle: Option<&str>,
) -> Result<Vec<u8>> {
    opts.title = title.to_string();
    opts.subtitle = subtitle.map(str::to_string);
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
