//! Stacked areas over time: named layers drawn bottom-up in the caller's fixed order,
//! so each band's thickness is that part and the top of the stack is their sum. Made
//! for the CPU breakdown, where separate lines hide what user + system + softirq add
//! up to.
//!
//! The geometry is a pure function, [`stack`], tested on its own; [`render`] only maps
//! it to the screen. Values are clamped into `0..=ceiling` and so is each running sum,
//! so a counter glitch or a rounded 100.2 % never pokes out of the frame. Layers are
//! put on one time grid: the monitor samples every figure at once, so they normally
//! share it; a layer that lacks one of the times is interpolated inside its own span
//! and counts as 0 outside it. The total is drawn as a line over the top, and every
//! sample has an invisible hover band whose `<title>` lists each value at that time
//! (the browser shows it as a tooltip, as the other charts' `<title>`s).

use std::fmt::Write;

use super::{
    domain, esc, labelled, legend_coloured, legend_width, legend_y, nice_ticks, open, x_axis,
    y_axis, Frame,
};
use perflab_analysis::format::with_unit;

/// Colour of the total line where the page's CSS (`svg.chart .total`, the text
/// colour, light or dark) does not reach, e.g. the SVG opened on its own.
const TOTAL_FALLBACK: &str = "#57606a";

/// At most this many hover bands; longer series share one band per few samples.
const MAX_BANDS: usize = 300;

/// One layer of the stack.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Shown in the legend and the hover text (`user`).
    pub name: String,
    /// Where the values come from (the stored series, `cpu.user_pct`), in the
    /// area's `<title>`.
    pub detail: String,
    pub colour: &'static str,
    /// (x, value) in data coordinates, in any order.
    pub points: Vec<(f64, f64)>,
}

/// A stacked-area plot's content.
#[derive(Debug, Clone)]
pub struct StackedPlot {
    pub title: String,
    /// Axis labels, each naming its unit in parentheses.
    pub x_label: String,
    pub y_label: String,
    /// Units of x and of the values in the hover text (`s`, `%`).
    pub x_unit: String,
    pub unit: String,
    /// Values clamp to `0..=ceiling` (100 for percentages), and so does the stack.
    pub ceiling: f64,
    /// The name of the line along the top of the stack.
    pub total_label: String,
    /// Bottom first.
    pub layers: Vec<Layer>,
}

/// The stack in data coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    /// Every x of every layer, ascending, once each.
    pub times: Vec<f64>,
    /// `values[layer][i]`: the layer's value at `times[i]`, clamped.
    pub values: Vec<Vec<f64>>,
    /// `tops[layer][i]`: the running sum up to and including that layer, at most
    /// the ceiling. A layer's bottom is the top of the one below (0 for the first).
    pub tops: Vec<Vec<f64>>,
}

impl Stack {
    /// The top of the whole stack at each time (zeros without layers).
    pub fn total(&self) -> Vec<f64> {
        self.tops
            .last()
            .cloned()
            .unwrap_or_else(|| vec![0.0; self.times.len()])
    }

    fn bottom(&self, layer: usize, i: usize) -> f64 {
        if layer == 0 {
            0.0
        } else {
            self.tops[layer - 1][i]
        }
    }
}

/// Puts `layers` on one time grid and stacks them, clamping into `0..=ceiling`.
pub fn stack(layers: &[Layer], ceiling: f64) -> Stack {
    // NaN or negative ceilings would make `clamp` panic: nothing fits, all is 0.
    let ceiling = if ceiling >= 0.0 { ceiling } else { 0.0 };
    let sorted: Vec<Vec<(f64, f64)>> = layers
        .iter()
        .map(|l| {
            let mut p: Vec<(f64, f64)> = l
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite())
                .collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            p
        })
        .collect();
    let mut times: Vec<f64> = sorted.iter().flatten().map(|p| p.0).collect();
    times.sort_by(f64::total_cmp);
    times.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    let values: Vec<Vec<f64>> = sorted
        .iter()
        .map(|pts| {
            times
                .iter()
                .map(|t| clamp(value_at(pts, *t), ceiling))
                .collect()
        })
        .collect();
    let mut tops = Vec::with_capacity(values.len());
    let mut running = vec![0.0; times.len()];
    for v in &values {
        for (r, x) in running.iter_mut().zip(v) {
            *r = (*r + x).min(ceiling);
        }
        tops.push(running.clone());
    }
    Stack {
        times,
        values,
        tops,
    }
}

fn clamp(v: f64, ceiling: f64) -> f64 {
    if v.is_finite() {
        v.clamp(0.0, ceiling)
    } else {
        0.0
    }
}

/// The value of sorted `pts` at `t`: exact, interpolated inside, 0 outside.
fn value_at(pts: &[(f64, f64)], t: f64) -> f64 {
    let i = pts.partition_point(|p| p.0 < t - 1e-9);
    match (pts.get(i), i.checked_sub(1).and_then(|j| pts.get(j))) {
        (Some(p), _) if (p.0 - t).abs() < 1e-9 => p.1,
        (Some(b), Some(a)) => a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0),
        _ => 0.0,
    }
}

/// The data ranges of a stack: x from 0, y from 0 to a round value above the
/// highest total (so a light load is not a flat sliver), at most the ceiling.
fn ranges(s: &Stack, ceiling: f64) -> ((f64, f64), (f64, f64)) {
    let x = domain(s.times.iter().copied(), true);
    let hi = domain(s.total().into_iter(), true).1;
    let hi = if ceiling > 0.0 { hi.min(ceiling) } else { hi };
    (x, (0.0, hi))
}

/// The SVG of a stacked-area plot; None when no layer has a point.
pub fn render(p: &StackedPlot) -> Option<String> {
    let s = stack(&p.layers, p.ceiling);
    if s.times.is_empty() || s.values.is_empty() {
        return None;
    }
    let (x_range, y_range) = ranges(&s, p.ceiling);
    let f = Frame::plot(x_range, y_range);
    let mut out = String::new();
    open(&mut out, f.w, f.h, &p.title);
    x_axis(
        &mut out,
        &f,
        &labelled(nice_ticks(x_range.0, x_range.1, 8)),
        &p.x_label,
    );
    y_axis(
        &mut out,
        &f,
        &labelled(nice_ticks(y_range.0, y_range.1, 5)),
        &p.y_label,
    );
    // Screen columns: one per time; a single sample becomes a narrow bar.
    let cols: Vec<(f64, usize)> = if s.times.len() == 1 {
        let x = f.x(s.times[0]);
        vec![(x - 4.0, 0), (x + 4.0, 0)]
    } else {
        s.times
            .iter()
            .enumerate()
            .map(|(i, t)| (f.x(*t), i))
            .collect()
    };
    for (k, layer) in p.layers.iter().enumerate() {
        area(&mut out, &f, &s, &cols, k, layer, &p.unit);
    }
    let total = s.total();
    let pts: Vec<String> = cols
        .iter()
        .map(|(x, i)| format!("{x:.1},{:.1}", f.y(total[*i])))
        .collect();
    let _ = write!(
        out,
        r#"<polyline class="total" fill="none" stroke="{TOTAL_FALLBACK}" stroke-width="1.6" points="{}"/>"#,
        pts.join(" ")
    );
    hover_bands(&mut out, &f, &s, p);
    let items: Vec<(String, &str)> = p
        .layers
        .iter()
        .map(|l| (l.name.clone(), l.colour))
        .collect();
    let x = legend_coloured(&mut out, &f, &items);
    if x + legend_width(&p.total_label) <= f.w {
        let y = legend_y(&f) - 4.0;
        let _ = write!(
            out,
            r#"<line class="total" x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{TOTAL_FALLBACK}" stroke-width="2"/><text class="legend" x="{:.1}" y="{:.1}">{}</text>"#,
            x + 10.0,
            x + 14.0,
            legend_y(&f),
            esc(&p.total_label)
        );
    }
    out.push_str("</svg>");
    Some(out)
}

/// Layer `k` as a closed path: along its top left to right, back along its bottom.
fn area(
    out: &mut String,
    f: &Frame,
    s: &Stack,
    cols: &[(f64, usize)],
    k: usize,
    layer: &Layer,
    unit: &str,
) {
    let v = &s.values[k];
    if v.iter().all(|x| *x == 0.0) {
        return;
    }
    let mut d = String::new();
    for (j, (x, i)) in cols.iter().enumerate() {
        let _ = write!(
            d,
            "{}{x:.1},{:.1} ",
            if j == 0 { 'M' } else { 'L' },
            f.y(s.tops[k][*i])
        );
    }
    for (x, i) in cols.iter().rev() {
        let _ = write!(d, "L{x:.1},{:.1} ", f.y(s.bottom(k, *i)));
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let max = v.iter().copied().fold(0.0, f64::max);
    let _ = write!(
        out,
        r#"<path class="area" d="{}Z" fill="{c}" stroke="{c}" stroke-width="0.5"><title>{} ({}): mean {}, max {}</title></path>"#,
        d.trim_end(),
        esc(&layer.name),
        esc(&layer.detail),
        esc(&with_unit(mean, unit)),
        esc(&with_unit(max, unit)),
        c = layer.colour
    );
}

/// Transparent full-height bands, one per sample (or per few, when there are many),
/// each with every value at that time in its `<title>`, top layer first.
fn hover_bands(out: &mut String, f: &Frame, s: &Stack, p: &StackedPlot) {
    let n = s.times.len();
    let stride = n.div_ceil(MAX_BANDS).max(1);
    let chosen: Vec<usize> = (0..n).step_by(stride).collect();
    let xs: Vec<f64> = chosen.iter().map(|i| f.x(s.times[*i])).collect();
    let total = s.total();
    for (j, i) in chosen.iter().enumerate() {
        let (l, r) = if xs.len() == 1 {
            (xs[0] - 4.0, xs[0] + 4.0)
        } else {
            let l = if j == 0 {
                xs[0] - (xs[1] - xs[0]) / 2.0
            } else {
                (xs[j - 1] + xs[j]) / 2.0
            };
            let r = if j + 1 == xs.len() {
                xs[j] + (xs[j] - xs[j - 1]) / 2.0
            } else {
                (xs[j] + xs[j + 1]) / 2.0
            };
            (l.max(f.left), r.min(f.plot_right()))
        };
        let mut text = format!(
            "at {}\n{} {}",
            with_unit(s.times[*i], &p.x_unit),
            p.total_label,
            with_unit(total[*i], &p.unit)
        );
        for (k, layer) in p.layers.iter().enumerate().rev() {
            let _ = write!(
                text,
                "\n{} {}",
                layer.name,
                with_unit(s.values[k][*i], &p.unit)
            );
        }
        let _ = write!(
            out,
            r##"<rect class="hover" x="{l:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#000" fill-opacity="0"><title>{}</title></rect>"##,
            f.top,
            (r - l).max(0.5),
            f.plot_bottom() - f.top,
            esc(&text)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, points: &[(f64, f64)]) -> Layer {
        Layer {
            name: name.into(),
            detail: format!("cpu.{name}_pct"),
            colour: "#4e79a7",
            points: points.to_vec(),
        }
    }

    fn plot(layers: Vec<Layer>) -> StackedPlot {
        StackedPlot {
            title: "CPU time by state".into(),
            x_label: "time since trial start (s)".into(),
            y_label: "CPU time (% of all CPUs)".into(),
            x_unit: "s".into(),
            unit: "%".into(),
            ceiling: 100.0,
            total_label: "total".into(),
            layers,
        }
    }

    /// The numbers of a `points` or `d` attribute, as (x, y) pairs.
    fn coords(attr: &str) -> Vec<(f64, f64)> {
        let nums: Vec<f64> = attr
            .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().unwrap())
            .collect();
        nums.chunks(2).map(|c| (c[0], c[1])).collect()
    }

    fn attr<'a>(svg: &'a str, element: &str, name: &str) -> Vec<&'a str> {
        svg.split(element)
            .skip(1)
            .filter_map(|e| {
                let e = &e[e.find(&format!(" {name}=\""))? + name.len() + 3..];
                Some(&e[..e.find('"')?])
            })
            .collect()
    }

    #[test]
    fn the_top_of_the_stack_is_the_sum_of_its_layers() {
        let layers = vec![
            layer("user", &[(1.0, 10.0), (2.0, 30.0), (3.0, 20.0)]),
            layer("system", &[(1.0, 5.0), (2.0, 15.0), (3.0, 0.0)]),
            layer("softirq", &[(1.0, 2.5), (2.0, 5.0), (3.0, 40.0)]),
        ];
        let s = stack(&layers, 100.0);
        assert_eq!(s.times, vec![1.0, 2.0, 3.0]);
        assert_eq!(s.tops[0], vec![10.0, 30.0, 20.0]);
        assert_eq!(s.tops[1], vec![15.0, 45.0, 20.0]);
        assert_eq!(s.total(), vec![17.5, 50.0, 60.0]);

        // On screen: the total line is the sum, and it is also the top edge of the
        // last area, whose bottom edge is the top of the one below.
        let (xr, yr) = ranges(&s, 100.0);
        let f = Frame::plot(xr, yr);
        let svg = render(&plot(layers)).unwrap();
        let total = coords(attr(&svg, "<polyline", "points")[0]);
        let want: Vec<(f64, f64)> = s
            .times
            .iter()
            .zip(s.total())
            .map(|(t, v)| (f.x(*t), f.y(v)))
            .collect();
        assert_eq!(total.len(), 3);
        for (got, want) in total.iter().zip(&want) {
            assert!((got.0 - want.0).abs() < 0.06 && (got.1 - want.1).abs() < 0.06);
        }
        let areas = attr(&svg, "<path", "d");
        assert_eq!(areas.len(), 3);
        let top = coords(areas[2]);
        assert_eq!(&top[..3], &total[..]);
        let middle = coords(areas[1]);
        let mut bottom_of_top: Vec<_> = top[3..].to_vec();
        bottom_of_top.reverse();
        assert_eq!(&middle[..3], &bottom_of_top[..]);
        // The first area stands on the x axis.
        let first = coords(areas[0]);
        assert!(first[3..]
            .iter()
            .all(|p| (p.1 - f.plot_bottom()).abs() < 0.06));
    }

    #[test]
    fn values_clamp_to_zero_and_the_ceiling() {
        let layers = vec![
            layer("user", &[(0.0, -5.0), (1.0, 150.0), (2.0, f64::NAN)]),
            layer("system", &[(0.0, 20.0), (1.0, 10.0), (2.0, f64::INFINITY)]),
        ];
        let s = stack(&layers, 100.0);
        assert_eq!(s.values[0], vec![0.0, 100.0, 0.0]);
        assert_eq!(s.values[1], vec![20.0, 10.0, 0.0]);
        assert_eq!(s.total(), vec![20.0, 100.0, 0.0]);
        let svg = render(&plot(layers)).unwrap();
        let (xr, yr) = ranges(&s, 100.0);
        assert_eq!(yr, (0.0, 100.0));
        let f = Frame::plot(xr, yr);
        for d in attr(&svg, "<path", "d") {
            for (_, y) in coords(d) {
                assert!(y >= f.top - 0.06 && y <= f.plot_bottom() + 0.06, "{y}");
            }
        }
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn layers_on_different_times_share_one_grid() {
        let layers = vec![
            layer("user", &[(0.0, 10.0), (2.0, 30.0)]),
            layer("system", &[(1.0, 4.0), (3.0, 8.0)]),
        ];
        let s = stack(&layers, 100.0);
        assert_eq!(s.times, vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.values[0], vec![10.0, 20.0, 30.0, 0.0]);
        assert_eq!(s.values[1], vec![0.0, 4.0, 6.0, 8.0]);
    }

    #[test]
    fn empty_and_one_point_series_do_not_panic() {
        assert!(render(&plot(vec![])).is_none());
        assert!(render(&plot(vec![layer("user", &[])])).is_none());
        assert_eq!(stack(&[], 100.0).total(), Vec::<f64>::new());
        assert_eq!(
            stack(&[layer("user", &[(1.0, 5.0)])], f64::NAN).total(),
            [0.0]
        );
        let svg = render(&plot(vec![
            layer("user", &[(0.0, 40.0)]),
            layer("system", &[]),
        ]))
        .unwrap();
        // One sample: a narrow bar, 8 px wide.
        let user = coords(attr(&svg, "<path", "d")[0]);
        assert_eq!(user.len(), 4);
        assert!(((user[1].0 - user[0].0) - 8.0).abs() < 0.06);
        let svg = render(&plot(vec![layer("user", &[(0.0, 0.0), (1.0, 0.0)])])).unwrap();
        assert!(svg.ends_with("</svg>"));
    }

    #[test]
    fn axes_name_their_units_and_hover_shows_the_values() {
        let svg = render(&plot(vec![
            layer("user", &[(1.0, 12.5), (2.0, 30.0)]),
            layer("iowait", &[(1.0, 1.0), (2.0, 2.0)]),
        ]))
        .unwrap();
        assert!(svg.contains(r#"class="axis-label""#));
        assert!(svg.contains(">time since trial start (s)</text>"));
        assert!(svg.contains(">CPU time (% of all CPUs)</text>"));
        assert!(svg.contains(r#"class="tick""#));
        assert!(svg.contains(r#"<text class="legend""#) && svg.contains(">total</text>"));
        assert!(
            svg.contains("<title>at 1 s\ntotal 13.5 %\niowait 1 %\nuser 12.5 %</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>user (cpu.user_pct): mean 21.25 %, max 30 %</title>"));
    }

    #[test]
    fn long_series_get_at_most_max_bands_hover_bands() {
        let pts: Vec<(f64, f64)> = (0..1000).map(|i| (i as f64 * 0.1, 50.0)).collect();
        let svg = render(&plot(vec![layer("user", &pts)])).unwrap();
        let bands = svg.matches(r#"class="hover""#).count();
        assert!((MAX_BANDS / 2..=MAX_BANDS).contains(&bands), "{bands}");
    }
}
