//! The differential flame graph (issue 31): the frames of a
//! [`DiffProfile`](perflab_analysis::diffprof::DiffProfile) drawn as a flame graph,
//! coloured only where the change of a frame's CPU time per operation passes —
//! Holm-adjusted p < α over the tested frames — red for more time, blue for less,
//! stronger for a larger relative change; grey otherwise. Each frame's `<title>` (the
//! hover text) gives both sides' time per operation, the change with its 95 % CI and
//! the adjusted p-value.
//!
//! Width: a frame is as wide as the *larger* of its two times per operation, so work
//! that the candidate no longer does stays visible; where its children's widths add up
//! to more (one grew, another shrank) it is widened to hold them. The layout is the
//! usual flame graph's (flamegraph.pl's, which `perflab_profile::flame` draws with
//! inferno): roots at the bottom, callees above, siblings in name order, 16 px a level
//! on a 1200 px canvas. It is drawn here rather than by inferno because inferno colours
//! by its own rule (a share difference of one pair of profiles) and cannot take a
//! colour and a title per frame path. The SVG has no script: it can be inlined in the
//! HTML report, where its titles show on hover.

use std::collections::BTreeMap;
use std::fmt::Write;

use perflab_analysis::diffprof::{DiffProfile, FrameDiff};
use perflab_analysis::format::{p_value, sig};

use crate::format::esc;

const WIDTH: f64 = 1200.0;
const PAD: f64 = 10.0;
const ROW: f64 = 16.0;
const TOP: f64 = 54.0;
/// Frames narrower than this are left out (as flamegraph.pl's `--minwidth`).
const MIN_PX: f64 = 0.1;

/// How a frame is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shade {
    /// More time per operation, significantly.
    More,
    /// Less time per operation, significantly.
    Less,
    /// No change beyond the noise, or not tested.
    Same,
}

impl Shade {
    /// The shade of a frame at level `alpha`.
    pub fn of(f: &FrameDiff, alpha: f64) -> Shade {
        if !(f.tested && f.adjusted_p < alpha) {
            Shade::Same
        } else if f.change.diff > 0.0 {
            Shade::More
        } else {
            Shade::Less
        }
    }

    fn class(self) -> &'static str {
        match self {
            Shade::More => "more",
            Shade::Less => "less",
            Shade::Same => "same",
        }
    }
}

/// The fill of a frame: saturation by the relative change (full at ±50 %; a frame
/// new on one side, full).
fn fill(f: &FrameDiff, shade: Shade) -> String {
    let rel = f.change.rel();
    let s = if rel.is_finite() {
        (rel.abs() / 0.5).clamp(0.15, 1.0)
    } else {
        1.0
    };
    let light = (225.0 - 185.0 * s).round() as u8;
    match shade {
        Shade::More => format!("rgb(255,{light},{light})"),
        Shade::Less => format!("rgb({light},{light},255)"),
        Shade::Same => "rgb(205,205,205)".into(),
    }
}

/// The frames in a tree: children per parent path.
struct Tree<'a> {
    children: BTreeMap<&'a [String], Vec<&'a FrameDiff>>,
    width: BTreeMap<&'a [String], f64>,
}

impl<'a> Tree<'a> {
    fn new(d: &'a DiffProfile) -> Tree<'a> {
        let mut children: BTreeMap<&[String], Vec<&FrameDiff>> = BTreeMap::new();
        for f in &d.frames {
            children
                .entry(&f.path[..f.path.len() - 1])
                .or_default()
                .push(f);
        }
        let mut t = Tree {
            children,
            width: BTreeMap::new(),
        };
        // Deepest first, so a frame's children are measured before it.
        let mut by_depth: Vec<&FrameDiff> = d.frames.iter().collect();
        by_depth.sort_by_key(|f| std::cmp::Reverse(f.path.len()));
        for f in by_depth {
            let own = f.change.baseline_mean.max(f.change.candidate_mean);
            let kids = t.children_width(&f.path);
            t.width.insert(&f.path, own.max(kids));
        }
        t
    }

    fn children_width(&self, path: &[String]) -> f64 {
        self.children
            .get(path)
            .map(|k| k.iter().map(|f| self.width[&f.path[..]]).sum())
            .unwrap_or(0.0)
    }

    fn depth(&self) -> usize {
        self.width.keys().map(|p| p.len()).max().unwrap_or(0)
    }
}

/// The hover text of a frame.
fn title(f: &FrameDiff, unit: &str, alpha: f64) -> String {
    let c = &f.change;
    let name = f.path.last().map(String::as_str).unwrap_or("");
    let rel = c.rel();
    let rel = if rel.is_finite() {
        format!(" ({:+.1} %)", rel * 100.0)
    } else {
        String::new()
    };
    let judged = if f.tested {
        format!(
            "adjusted p = {} (Holm; coloured when < {})",
            p_value(f.adjusted_p),
            sig(alpha)
        )
    } else {
        "not tested: under 0.5 % of the time on both sides".into()
    };
    format!(
        "{name}\nbaseline {} {unit}, candidate {} {unit}\nchange {}{} {unit} [{}, {}] (95 % CI){rel}\n{judged}",
        sig(c.baseline_mean),
        sig(c.candidate_mean),
        if c.diff >= 0.0 { "+" } else { "" },
        sig(c.diff),
        sig(c.lo),
        sig(c.hi),
    )
}

/// The differential flame graph of `d` as SVG, frames coloured at level `alpha`.
pub fn svg(d: &DiffProfile, alpha: f64, heading: &str) -> String {
    let tree = Tree::new(d);
    let height = TOP + (tree.depth() as f64 + 1.0) * ROW + PAD;
    let total: f64 = tree.children_width(&[]);
    let scale = if total > 0.0 {
        (WIDTH - 2.0 * PAD) / total
    } else {
        0.0
    };
    let coloured = d.judge(alpha).count();
    let tested = d.frames.iter().filter(|f| f.tested).count();
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#f8f8f8\"/>\n\
         <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"16\">{}</text>\n\
         <text x=\"{}\" y=\"38\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
        WIDTH / 2.0,
        esc(heading),
        WIDTH / 2.0,
        esc(&format!(
            "CPU time per operation ({}), {} vs {} profiled trials · red: more, blue: less — {coloured} of {tested} tested frames with Holm-adjusted p < {} · grey: no change beyond the noise · width: the larger side",
            d.unit,
            d.baseline_trials,
            d.candidate_trials,
            sig(alpha)
        )),
    );
    let mut stack: Vec<(&[String], f64)> = vec![(&[], PAD)];
    while let Some((parent, mut x)) = stack.pop() {
        let Some(kids) = tree.children.get(parent) else {
            continue;
        };
        for f in kids {
            let w = tree.width[&f.path[..]] * scale;
            if w >= MIN_PX {
                frame(
                    &mut o,
                    f,
                    x,
                    height - PAD - f.path.len() as f64 * ROW,
                    w,
                    d,
                    alpha,
                );
                stack.push((&f.path, x));
            }
            x += w;
        }
    }
    o.push_str("</svg>\n");
    o
}

fn frame(o: &mut String, f: &FrameDiff, x: f64, y: f64, w: f64, d: &DiffProfile, alpha: f64) {
    let shade = Shade::of(f, alpha);
    let name = f.path.last().map(String::as_str).unwrap_or("");
    let _ = write!(
        o,
        "<g class=\"{}\" data-frame=\"{}\" data-path=\"{}\"><title>{}</title><rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{}\" rx=\"2\" fill=\"{}\" stroke=\"#f8f8f8\" stroke-width=\"0.5\"/>",
        shade.class(),
        esc(name),
        esc(&f.path.join(";")),
        esc(&title(f, &d.unit, alpha)),
        ROW - 1.0,
        fill(f, shade),
    );
    // A label where it fits (about 7 px a character), cut with "..".
    let fits = ((w - 6.0) / 7.0).floor() as usize;
    if fits >= 3 {
        let label: String = if name.chars().count() > fits {
            name.chars().take(fits - 2).collect::<String>() + ".."
        } else {
            name.to_string()
        };
        let _ = write!(
            o,
            "<text x=\"{:.2}\" y=\"{:.2}\">{}</text>",
            x + 3.0,
            y + ROW - 4.5,
            esc(&label)
        );
    }
    o.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_analysis::diffprof::TrialStacks;

    fn trials(work: &[u64]) -> Vec<TrialStacks> {
        work.iter()
            .map(|n| {
                TrialStacks::parse(
                    &format!("app;main;work {n}\napp;main;other 300\n"),
                    Some(1000.0),
                    1.0,
                )
            })
            .collect()
    }

    #[test]
    fn only_the_changed_frames_are_coloured_and_titles_carry_both_values() {
        let d = DiffProfile::from_stacks(
            &trials(&[300, 302, 298, 301]),
            &trials(&[400, 405, 398, 402]),
        )
        .unwrap();
        let s = svg(&d, 0.01, "a vs b");
        assert!(s.contains("<g class=\"more\" data-frame=\"work\" "), "{s}");
        assert!(s.contains("<g class=\"same\" data-frame=\"other\" "), "{s}");
        assert!(!s.contains("class=\"less\""), "{s}");
        assert!(
            s.contains("baseline 300.2 ms/op, candidate 401.2 ms/op"),
            "{s}"
        );
        // Nested: `work` above `main`.
        let y = |name: &str| -> f64 {
            let at = s.find(&format!("data-frame=\"{name}\"")).unwrap();
            let rest = &s[at..];
            let y = rest.find(" y=\"").unwrap() + 4;
            rest[y..y + rest[y..].find('"').unwrap()].parse().unwrap()
        };
        assert!(y("work") < y("main"));
        // A/A: nothing coloured.
        let same = trials(&[300, 302, 298, 301]);
        let aa = svg(
            &DiffProfile::from_stacks(&same, &same).unwrap(),
            0.01,
            "a vs a",
        );
        assert!(!aa.contains("class=\"more\"") && !aa.contains("class=\"less\""));
    }

    #[test]
    fn removed_work_keeps_its_width_and_is_blue() {
        let base: Vec<TrialStacks> = [200, 210, 190]
            .iter()
            .map(|n| {
                TrialStacks::parse(&format!("app;gone {n}\napp;kept 100\n"), Some(1000.0), 1.0)
            })
            .collect();
        let cand: Vec<TrialStacks> = [99, 101, 100]
            .iter()
            .map(|n| TrialStacks::parse(&format!("app;kept {n}\n"), Some(1000.0), 1.0))
            .collect();
        let d = DiffProfile::from_stacks(&base, &cand).unwrap();
        let s = svg(&d, 0.05, "x");
        assert!(s.contains("<g class=\"less\" data-frame=\"gone\" "), "{s}");
        assert!(s.contains("candidate 0 ms/op"), "{s}");
    }
}
