//! The text views of `perflab profile`: the per-image / per-function report, and for
//! `--routine NAME` the routine's per-instruction shares and its callers and callees.
//! Apart from `profile.rs`, which records and dispatches, because they are views of
//! their own (one table each).

use comfy_table::{Cell, CellAlignment, Table};
use perflab_profile::{CallGraph, Report, ReportOptions, RoutineView};

use crate::format::STYLE;

pub fn print_routine(v: &RoutineView) {
    println!(
        "{} in {} · {} samples · from {} · » marks the instructions holding half of them",
        v.routine, v.image, v.samples, v.source
    );
    if let Some(n) = &v.note {
        println!("note: {n}");
    }
    let mut t = Table::new();
    t.load_style(STYLE);
    let by_offset = v.source != "perf annotate";
    t.set_header(vec![
        "",
        "% routine",
        if by_offset { "offset" } else { "address" },
        "instruction",
        "source",
    ]);
    let mut last_source: Option<&str> = None;
    for l in &v.lines {
        // A source line is shown where it changes, not on every instruction.
        let src = l.source_line.as_deref();
        let shown = if src == last_source {
            ""
        } else {
            src.unwrap_or("")
        };
        last_source = src;
        t.add_row(vec![
            Cell::new(if l.hot { "»" } else { "" }),
            Cell::new(format!("{:.1}%", l.pct)).set_alignment(CellAlignment::Right),
            Cell::new(format!(
                "{}{:x}",
                if by_offset { "+0x" } else { "" },
                l.addr
            )),
            Cell::new(&l.asm),
            Cell::new(shown),
        ]);
    }
    println!("{t}");
}

pub fn print_call_graph(cg: &CallGraph) {
    println!(
        "{}: self {:.1}%, with callees {:.1}% of the samples",
        cg.routine, cg.self_pct, cg.total_pct
    );
    let list = |title: &str, edges: &[perflab_profile::Edge]| {
        if edges.is_empty() {
            println!("{title}: (none recorded)");
            return;
        }
        let parts: Vec<String> = edges
            .iter()
            .take(10)
            .map(|e| format!("{} {:.1}%", e.name, e.pct))
            .collect();
        println!("{title}: {}", parts.join(", "));
    };
    list("callers", &cg.callers);
    list("callees", &cg.callees);
}

/// The ipreduce-style report: the event and filters, the kernel/user split, and a
/// table of images with their functions.
pub fn print_report(event_note: Option<&str>, r: &Report, o: &ReportOptions) {
    let note = event_note.map(|n| format!(" ({n})")).unwrap_or_default();
    let mut filters = vec![format!("mode {}", r.mode.as_str())];
    if !o.include_idle {
        filters.push("idle excluded".into());
    }
    if let Some(c) = &o.comm {
        filters.push(format!("comm {c}"));
    }
    if let Some(p) = o.pid {
        filters.push(format!("pid {p}"));
    }
    println!(
        "event {}{note} · {} samples · {}",
        r.event,
        r.samples,
        filters.join(" · ")
    );
    println!(
        "kernel {:.1}% · user {:.1}%   (rows under {}% of the total left out)",
        r.kernel_pct, r.user_pct, r.threshold
    );
    let mut t = Table::new();
    t.load_style(STYLE);
    t.set_header(vec!["image / function", "samples", "% image", "% total"]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for img in &r.images {
        t.add_row(vec![
            Cell::new(&img.name),
            right(img.samples.to_string()),
            right(String::new()),
            right(format!("{:.1}%", img.pct_total)),
        ]);
        for f in &img.functions {
            t.add_row(vec![
                Cell::new(format!("  {}", f.name)),
                right(f.samples.to_string()),
                right(format!("{:.1}%", f.pct_image)),
                right(format!("{:.1}%", f.pct_total)),
            ]);
        }
    }
    println!("{t}");
    if r.samples == 0 {
        println!("(no samples passed the filters)");
    }
}
