//! Off-CPU time (issue 33, item 3): `perflab profile --off-cpu` and `[profile] off_cpu
//! = true` measure blocked time per stack from the scheduler's switch-out to
//! switch-in. A program that sleeps ~85 % of its time in `nanosleep`, called from its
//! own `wait_for_io`, must show ≥ 75 % of the wall-clock profile off-CPU under that
//! function; without `--off-cpu` nothing of it appears; where perf cannot use the
//! tracepoint the user is told how to fix it.

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Command as Std;
use std::time::Duration;

use serde_json::Value;

/// Computes ~1.5 ms, then sleeps 8.5 ms in `wait_for_io`, for about 2 s. The sleep is
/// a raw `nanosleep` system call on x86-64 so that `wait_for_io` is in the stack with
/// frame pointers alone (libc's wrapper has none, and an fp walk skips the caller of a
/// function without one); elsewhere libc's `nanosleep`.
const SLEEPER_C: &str = r#"
#include <time.h>
static volatile double sink;
static volatile long calls;
__attribute__((noinline)) static void compute(void) {
    struct timespec a, b;
    double x = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 10000; i++) x += i * 0.5;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 1.5e6);
    sink = x;
}
__attribute__((noinline)) void wait_for_io(void) {
    struct timespec t = {0, 8500000};
    long r;
#if defined(__x86_64__)
    __asm__ volatile("syscall" : "=a"(r) : "0"(35L), "D"(&t), "S"(0L) : "rcx", "r11", "memory");
#else
    r = nanosleep(&t, 0);
#endif
    calls += r + 1;
}
int main(void) {
    struct timespec s, n;
    clock_gettime(CLOCK_MONOTONIC, &s);
    do {
        compute();
        wait_for_io();
        clock_gettime(CLOCK_MONOTONIC, &n);
    } while ((n.tv_sec - s.tv_sec) * 1e9 + (n.tv_nsec - s.tv_nsec) < 2e9);
    return 0;
}
"#;

/// Builds the sleeper in the lab; None (the reason printed, or a failure under
/// `PERFLAB_REQUIRE`) where perf or gcc is missing.
fn build_sleeper(lab: &Lab) -> Option<PathBuf> {
    if !require::perf_records() || require::program("gcc").is_none() {
        return None;
    }
    let src = lab.write("sleeper.c", SLEEPER_C);
    let bin = lab.path("sleeper");
    let out = Std::new("gcc")
        .args(["-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(bin)
}

/// `(stack, weight)` per folded line.
fn folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(s, n)| (s.to_string(), n.parse().expect("a weight")))
        .collect()
}

/// The wall-clock share (percent) of the off-CPU stacks that pass through `function`.
fn off_cpu_share_under(text: &str, function: &str) -> f64 {
    let stacks = folded(text);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let under: u64 = stacks
        .iter()
        .filter(|(s, _)| s.ends_with(";[off-cpu]") && s.split(';').any(|f| f == function))
        .map(|s| s.1)
        .sum();
    100.0 * under as f64 / total.max(1) as f64
}

#[test]
fn a_sleeper_shows_its_blocked_time_under_the_function_that_sleeps() {
    let lab = Lab::new();
    let Some(bin) = build_sleeper(&lab) else {
        return;
    };
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(60))
        .args(["profile", "--off-cpu", "--call-graph", "auto", "--json"])
        .args(["--folded", "wall.folded", "--flamegraph", "wall.svg", "--"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let off = &doc["off_cpu"];
    let share = off["off_cpu_pct"].as_f64().expect("off_cpu_pct");
    let wait = off["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "wait_for_io")
        .unwrap_or_else(|| panic!("wait_for_io is not among the blocked functions: {off}"));
    let under = wait["pct"].as_f64().unwrap();
    let text = std::fs::read_to_string(lab.path("wall.folded")).unwrap();
    let from_folded = off_cpu_share_under(&text, "wait_for_io");
    println!(
        "off-CPU {share:.1}% of the wall-clock profile ({} ms on, {} ms off, {} switches); \
         under wait_for_io: {under:.1}% (report), {from_folded:.1}% (folded)",
        off["on_cpu_ms"], off["off_cpu_ms"], off["switches"]
    );
    assert!(under >= 75.0, "{off}");
    assert!(from_folded >= 75.0, "{text}");
    // On-CPU stacks are in the same unit: the compute loop is there, in µs.
    let compute: u64 = folded(&text)
        .iter()
        .filter(|(s, _)| s.ends_with(";compute"))
        .map(|s| s.1)
        .sum();
    assert!(compute >= 50_000, "compute has {compute} µs: {text}");
    // The switch-outs are not on-CPU samples: on-CPU time under wait_for_io is only its
    // system call's entry and exit.
    let total: u64 = folded(&text).iter().map(|s| s.1).sum();
    let on_cpu_in_wait: u64 = folded(&text)
        .iter()
        .filter(|(s, _)| !s.ends_with(";[off-cpu]") && s.contains(";wait_for_io;"))
        .map(|s| s.1)
        .sum();
    assert!(
        on_cpu_in_wait * 100 < total * 3,
        "{on_cpu_in_wait} of {total} µs: {text}"
    );
    // Every switch is recorded: the tracepoint keeps its period of 1 (a global -F would
    // sample it by frequency, dropping switches once they come fast).
    let data = doc["perf_data"].as_str().expect("perf_data");
    let evlist = Std::new("perf")
        .args(["evlist", "-F", "-i", data])
        .output()
        .unwrap();
    let evlist = String::from_utf8_lossy(&evlist.stdout);
    assert!(
        evlist.contains("sched:sched_switch: sample_period=1"),
        "{evlist}"
    );
    let svg = std::fs::read_to_string(lab.path("wall.svg")).unwrap();
    assert!(svg.contains("wait_for_io (off-cpu)") && svg.contains("[off-cpu]"));
    // The stored run has the metrics.
    let show = lab.json(&["show", "1", "--json"]);
    let share_metric = metric(&show, "target", &Value::from("command"), "offcpu_share");
    assert!(
        share_metric["mean"].as_f64().unwrap() >= 75.0,
        "{share_metric}"
    );
    metric(
        &show,
        "target",
        &Value::from("command"),
        "offcpu:wait_for_io",
    );
}

#[test]
fn without_off_cpu_there_is_no_off_cpu_frame_and_no_share() {
    let lab = Lab::new();
    let Some(bin) = build_sleeper(&lab) else {
        return;
    };
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(60))
        .args(["profile", "--json", "--folded", "cpu.folded", "--"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(doc.get("off_cpu").is_none(), "{doc}");
    let text = std::fs::read_to_string(lab.path("cpu.folded")).unwrap();
    assert!(!text.contains("[off-cpu]"), "{text}");
    assert!(text.contains(";compute "), "{text}");
    let show = lab.json(&["show", "1", "--json"]);
    assert!(!show.to_string().contains("offcpu"), "{show}");
}

#[test]
fn a_trial_with_off_cpu_stores_its_metrics_and_wall_clock_stacks() {
    let lab = Lab::new();
    let Some(bin) = build_sleeper(&lab) else {
        return;
    };
    let f = lab.write(
        "e.toml",
        &format!(
            r#"
[experiment]
name = "offcpu-trial"
repetitions = 1
warmup = 0
noise_check = false
timeout = "30s"
[profile]
target = "workload"
off_cpu = true
[workload]
kind = "command"
command = "{}"
"#,
            bin.display()
        ),
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(90))
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let store = lab.open_store();
    let trial = &store.trials(1).unwrap()[0];
    let arts = store.trial_artifacts(trial.id).unwrap();
    let wall = arts
        .iter()
        .find(|a| a.0 == "stacks.wall.folded")
        .unwrap_or_else(|| panic!("no wall-clock stacks: {}", stderr(&out)));
    let share = off_cpu_share_under(&String::from_utf8_lossy(&wall.2), "wait_for_io");
    assert!(share >= 75.0, "{share}");
    // stacks.folded stays on-CPU samples (the differential profile reads it).
    let cpu = arts.iter().find(|a| a.0 == "stacks.folded").unwrap();
    assert!(!String::from_utf8_lossy(&cpu.2).contains("[off-cpu]"));
    let show = lab.json(&["show", "1", "--json"]);
    let m = show.to_string();
    for name in ["offcpu_share", "offcpu_ms", "offcpu:wait_for_io"] {
        assert!(m.contains(&format!("\"{name}\"")), "no {name}: {m}");
    }
}

/// `sh -c SCRIPT` in a private mount namespace where tracefs is unmounted: what a
/// machine without it looks like, without touching the host's mounts.
fn without_tracefs(lab: &Lab, script: &str) -> Option<std::process::Output> {
    if !require::root("unmounting tracefs in a private mount namespace")
        || !require::programs(&["unshare", "setpriv"])
        || !require::perf_records()
    {
        return None;
    }
    let perflab = assert_cmd::cargo::cargo_bin("perflab");
    let full = format!(
        "umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; exec {}",
        script.replace("$PERFLAB", &perflab.display().to_string())
    );
    let child = Std::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &full])
        .current_dir(lab.dir.path())
        .env("PERFLAB_STORE", lab.store())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run unshare");
    Some(bounded(child, Duration::from_secs(60)))
}

/// Waits for `child` at most `limit`, killing it (by its pid) past that.
fn bounded(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let done = wait_until(limit, || matches!(child.try_wait(), Ok(Some(_))));
    if !done {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait");
    assert!(done, "did not finish in {limit:?}: {}", stderr(&out));
    out
}

#[test]
fn off_cpu_without_tracefs_and_without_root_says_how_to_fix_it() {
    let lab = Lab::new();
    let Some(bin) = build_sleeper(&lab) else {
        return;
    };
    // nobody must reach the store and the program.
    let dir = lab.dir.path();
    Std::new("chmod").arg("0777").arg(dir).status().unwrap();
    Std::new("chmod").arg("0755").arg(&bin).status().unwrap();
    let Some(out) = without_tracefs(
        &lab,
        &format!(
            "setpriv --reuid=65534 --regid=65534 --clear-groups \"$PERFLAB\" profile --off-cpu \
             -- {}",
            bin.display()
        ),
    ) else {
        return;
    };
    let err = stderr(&out);
    assert!(!out.status.success(), "a silent success: {}", stdout(&out));
    assert!(
        err.contains("sched:sched_switch") && err.contains("mount -t tracefs"),
        "{err}"
    );
}

#[test]
fn off_cpu_as_root_mounts_tracefs_and_says_so() {
    let lab = Lab::new();
    let Some(bin) = build_sleeper(&lab) else {
        return;
    };
    let Some(out) = without_tracefs(
        &lab,
        &format!("\"$PERFLAB\" profile --off-cpu --json -- {}", bin.display()),
    ) else {
        return;
    };
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let notes = doc["off_cpu"]["notes"].to_string();
    assert!(notes.contains("mounted tracefs"), "{doc}");
    assert!(
        doc["off_cpu"]["off_cpu_pct"].as_f64().unwrap() > 50.0,
        "{doc}"
    );
}

#[test]
fn a_process_blocked_throughout_gets_a_note_not_a_silent_zero() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    // Blocked in nanosleep from before the recording to after it.
    let mut sleeper = Std::new("sleep").arg("30").spawn().expect("start sleep");
    let pid = sleeper.id().to_string();
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(60))
        .args(["profile", "--off-cpu", "--json", "-d", "1s", "-p", &pid])
        .output();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let off = &doc["off_cpu"];
    assert_eq!(off["switches"], 0, "{off}");
    assert!(
        off["notes"].to_string().contains("no switch-out"),
        "a zero without a word: {off}"
    );
}
