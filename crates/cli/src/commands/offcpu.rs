//! The off-CPU part of `perflab profile`'s text report (`--off-cpu`): the blocked
//! total and its share of the wall-clock profile, then the blocked functions and
//! stacks. Apart from `profile.rs` because it is one more view of the same document.

use comfy_table::{Cell, CellAlignment, Table};
use perflab_profile::OffCpuReport;

use crate::format::STYLE;

/// Frames a stack shows at most in the table: the task, then the innermost ones (the
/// JSON and the folded stacks have them all).
const SHOWN_FRAMES: usize = 8;

/// `comm;…;innermost frames` for a long stack.
fn short(stack: &str) -> String {
    let frames: Vec<&str> = stack.split(';').collect();
    if frames.len() <= SHOWN_FRAMES + 1 {
        return stack.to_string();
    }
    let tail = &frames[frames.len() - SHOWN_FRAMES..];
    format!("{};…;{}", frames[0], tail.join(";"))
}

/// Prints the off-CPU report under the on-CPU one.
pub fn print(r: &OffCpuReport) {
    println!();
    println!(
        "off-CPU {:.1} ms = {:.1}% of the wall-clock profile (on-CPU {:.1} ms + off-CPU) · \
         {} switches recorded over {:.1} ms, {} blocked intervals ({} closed at the end)",
        r.off_cpu_ms, r.off_cpu_pct, r.on_cpu_ms, r.switches, r.span_ms, r.intervals, r.open_at_end
    );
    if r.waiting_ms > 0.0 {
        println!(
            "runnable but preempted (waiting for a CPU, not counted as off-CPU): {:.1} ms",
            r.waiting_ms
        );
    }
    for n in &r.notes {
        println!("note: {n}");
    }
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let mut t = Table::new();
    t.load_style(STYLE);
    t.set_header(vec!["blocked under (user frames)", "off-CPU ms", "% wall"]);
    for f in &r.functions {
        t.add_row(vec![
            Cell::new(&f.name),
            right(format!("{:.1}", f.off_cpu_ms)),
            right(format!("{:.1}%", f.pct)),
        ]);
    }
    if !r.functions.is_empty() {
        println!("{t}");
    }
    let mut t = Table::new();
    t.load_style(STYLE);
    t.set_header(vec![
        "blocked stack (task;…;innermost frames)",
        "off-CPU ms",
        "% wall",
    ]);
    for s in &r.stacks {
        t.add_row(vec![
            Cell::new(short(&s.stack)),
            right(format!("{:.1}", s.off_cpu_ms)),
            right(format!("{:.1}%", s.pct)),
        ]);
    }
    if !r.stacks.is_empty() {
        println!("{t}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_stacks_keep_the_task_and_the_innermost_frames() {
        assert_eq!(super::short("a;b;c"), "a;b;c");
        let long = "task;1;2;3;4;5;6;7;8;9;10";
        assert_eq!(super::short(long), "task;…;3;4;5;6;7;8;9;10");
    }
}
