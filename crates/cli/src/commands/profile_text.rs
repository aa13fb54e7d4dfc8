//! The per-routine views of `perflab profile --routine NAME` as text: the routine's
//! per-instruction shares and its callers and callees. Apart from `profile.rs`, which
//! records and dispatches, because they are views of their own (one table each).

use comfy_table::{Cell, CellAlignment, Table};
use perflab_profile::{CallGraph, RoutineView};

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
