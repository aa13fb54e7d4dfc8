//! The reducer on a recorded fixture: `tests/fixtures/perf-script.txt` is real
//! `perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso,symoff` output (cpu-clock,
//! call graphs, `-a`) trimmed to 73 samples: 46 of a program `hot` (40 in
//! hot_function, 4 in cold_function, 1 in the dynamic linker, 1 in the kernel), 10 of
//! rustc in clear_page_erms, 6 of LLVM threads, 8 of nginx, 1 without a call chain,
//! 2 of the idle task. The expected numbers below were counted from the text with an
//! independent script (awk/python), not with this crate.

use perflab_profile::{Mode, Profile, ReportOptions};

fn fixture() -> Profile {
    Profile::from_script(include_str!("fixtures/perf-script.txt"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.01
}

#[test]
fn every_line_is_understood() {
    let p = fixture();
    assert_eq!(p.samples.len(), 73);
    assert_eq!(p.skipped_lines, 0);
    assert_eq!(p.event, "cpu-clock");
}

#[test]
fn default_report_excludes_idle_and_splits_kernel_and_user() {
    let r = fixture().report(&ReportOptions::default());
    assert_eq!(r.samples, 71);
    assert!(close(r.kernel_pct, 100.0 * 19.0 / 71.0), "{}", r.kernel_pct);
    assert!(close(r.user_pct, 100.0 * 52.0 / 71.0));
    // Ties (1 sample each) are ordered by path.
    let names: Vec<&str> = r.images.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "hot",
            "[kernel.kallsyms]",
            "libLLVM.so.22.1-rust-1.95.0-stable",
            "ld-linux-x86-64.so.2",
            "[unknown]"
        ]
    );
    let hot = &r.images[0];
    assert_eq!(hot.samples, 44);
    assert_eq!(hot.path, "/tmp/fixture/hot");
    assert!(close(hot.pct_total, 100.0 * 44.0 / 71.0));
    let f = &hot.functions[0];
    assert_eq!((f.name.as_str(), f.samples), ("hot_function", 40));
    assert!(close(f.pct_image, 100.0 * 40.0 / 44.0));
    assert!(close(f.pct_total, 100.0 * 40.0 / 71.0));
    assert_eq!(hot.functions[1].name, "cold_function");
}

#[test]
fn threshold_drops_small_images_and_functions() {
    let r = fixture().report(&ReportOptions {
        threshold: 2.0,
        ..ReportOptions::default()
    });
    // 1 of 71 samples is 1.41 %: below 2 %.
    assert_eq!(r.images.len(), 3);
    let llvm = &r.images[2];
    assert_eq!(llvm.samples, 6);
    assert!(llvm.functions.is_empty(), "{:?}", llvm.functions);
    let kernel = &r.images[1];
    let kf: Vec<(&str, u64)> = kernel
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.samples))
        .collect();
    assert_eq!(
        kf,
        [("clear_page_erms", 10), ("_raw_spin_unlock_irqrestore", 3)]
    );
    // Totals are not changed by what is hidden.
    assert_eq!(r.samples, 71);
}

#[test]
fn kernel_mode_counts_kernel_samples_only() {
    let r = fixture().report(&ReportOptions {
        mode: Mode::Kernel,
        threshold: 0.0,
        ..ReportOptions::default()
    });
    assert_eq!(r.samples, 19);
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.images[0].name, "[kernel.kallsyms]");
    let f = &r.images[0].functions[0];
    assert_eq!((f.name.as_str(), f.samples), ("clear_page_erms", 10));
    assert!(close(f.pct_total, 100.0 * 10.0 / 19.0));
    assert_eq!(r.images[0].functions.len(), 8);
    // The split at the top is the same whatever the mode.
    assert!(close(r.kernel_pct, 100.0 * 19.0 / 71.0));
}

#[test]
fn user_mode_and_filters() {
    let p = fixture();
    let u = p.report(&ReportOptions {
        mode: Mode::User,
        ..ReportOptions::default()
    });
    assert_eq!(u.samples, 52);
    assert!(u.images.iter().all(|i| !i.name.starts_with("[kernel")));
    let idle = p.report(&ReportOptions {
        include_idle: true,
        ..ReportOptions::default()
    });
    assert_eq!(idle.samples, 73);
    let comm = p.report(&ReportOptions {
        comm: Some("hot".into()),
        ..ReportOptions::default()
    });
    assert_eq!(comm.samples, 46);
    let pid = p.report(&ReportOptions {
        pid: Some(16728),
        ..ReportOptions::default()
    });
    assert_eq!(pid.samples, 46);
    let none = p.report(&ReportOptions {
        pid: Some(1),
        ..ReportOptions::default()
    });
    assert_eq!((none.samples, none.images.len()), (0, 0));
}

#[test]
fn json_has_the_documented_fields() {
    let r = fixture().report(&ReportOptions::default());
    let v = serde_json::to_value(&r).unwrap();
    for k in ["event", "samples", "kernel_pct", "user_pct", "images"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let img = &v["images"][0];
    for k in ["name", "samples", "pct_total", "functions"] {
        assert!(img.get(k).is_some(), "missing images[].{k}");
    }
    for k in ["name", "samples", "pct_image", "pct_total"] {
        assert!(
            img["functions"][0].get(k).is_some(),
            "missing functions[].{k}"
        );
    }
    assert_eq!(v["mode"], "ku");
    let back: perflab_profile::Report = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

#[test]
fn top_functions_are_shares_of_all_non_idle_samples() {
    let top = fixture().top_functions(3);
    assert_eq!(top[0].0, "hot_function");
    assert!(close(top[0].1, 100.0 * 40.0 / 71.0));
    assert_eq!(top[1].0, "clear_page_erms");
    assert_eq!(top[2].0, "cold_function");
}

#[test]
fn folded_stacks_root_at_the_command() {
    let p = fixture();
    let folded = p.folded();
    let total: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 71);
    assert!(folded
        .lines()
        .any(|l| l.starts_with("hot;__libc_start_call_main;hot_function ")));
    // A sample without a call chain is a command alone.
    assert!(folded.lines().any(|l| l == "opt cgu.06 1"), "{folded}");
    assert!(!folded.contains("swapper"));
}

#[test]
fn flame_graph_is_svg() {
    let svg = fixture().flamegraph_svg().unwrap();
    let text = String::from_utf8(svg).unwrap();
    assert!(text.contains("<svg"));
    assert!(text.contains("hot_function"));
}

#[test]
fn callers_and_callees_from_the_chains() {
    let p = fixture();
    let g = p.call_graph("hot_function", &ReportOptions::default());
    assert_eq!((g.self_samples, g.total_samples), (40, 40));
    assert_eq!(g.callers[0].name, "__libc_start_call_main");
    assert!(g.callees.is_empty());
    let k = p.call_graph("clear_page_erms", &ReportOptions::default());
    assert_eq!(k.self_samples, 10);
    assert!(!k.callers.is_empty());
    let caller_total: u64 = k.callers.iter().map(|e| e.samples).sum();
    assert_eq!(caller_total, 10);
}

#[test]
fn routine_view_falls_back_to_offsets_without_perf_data() {
    let p = fixture();
    let v = p
        .routine("hot_function", &ReportOptions::default())
        .unwrap();
    assert_eq!(v.samples, 40);
    assert_eq!(v.source, "sample offsets");
    let sum: f64 = v.lines.iter().map(|l| l.pct).sum();
    assert!(close(sum, 100.0));
    assert!(v.lines.iter().any(|l| l.hot));
    let err = p
        .routine("no_such_fn", &ReportOptions::default())
        .unwrap_err();
    assert!(err.is_bad_input());
}
