//! Stacks without frame pointers (issue 33, item 2): Debian's nginx and libc are built
//! without them, so `--call-graph fp` stacks of its worker stop at the first frame,
//! while `--call-graph auto` sees that, picks DWARF, says so, and its stacks reach
//! `ngx_process_events_and_timers` (a dynamic symbol: the binary is stripped). And the
//! bounds of a DWARF recording: a stack size out of range is refused, exit 2.

mod common;
use common::*;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BODY: &str = "hello, stacks\n";
const LOOP: &str = "ngx_process_events_and_timers";

/// nginx (one process) serving [`BODY`] on an OS-chosen port; None where nginx is not
/// installed (a failure under `PERFLAB_REQUIRE`).
fn nginx(lab: &Lab) -> Option<(Killed, u16)> {
    common::nginx_page(lab.dir.path(), BODY)
}

/// Keep-alive GETs on `connections` connections until `stop` or `limit`, each read
/// bounded by a timeout: the load nginx's worker is profiled under.
fn load(
    port: u16,
    connections: usize,
    stop: Arc<AtomicBool>,
    limit: Duration,
) -> Vec<std::thread::JoinHandle<u64>> {
    let until = Instant::now() + limit;
    (0..connections)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut done = 0u64;
                let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                    return 0;
                };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    if s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").is_err() {
                        break;
                    }
                    let mut got = Vec::new();
                    while !got.ends_with(BODY.as_bytes()) {
                        match s.read(&mut buf) {
                            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                            _ => return done,
                        }
                    }
                    done += 1;
                }
                done
            })
        })
        .collect()
}

/// The share of the folded stacks' samples whose stack holds `frame`.
fn share_reaching(folded: &str, frame: &str) -> (u64, u64) {
    let mut all = 0;
    let mut reaching = 0;
    for line in folded.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        all += n;
        if stack.split(';').any(|f| f == frame) {
            reaching += n;
        }
    }
    (reaching, all)
}

/// `perflab profile -p PID -d 3s --call-graph MODE --folded F` plus `extra`: its
/// output, the folded stacks' (reaching, all) sample counts, and the folded text.
fn profile(
    lab: &Lab,
    pid: u32,
    mode: &str,
    extra: &[&str],
) -> (std::process::Output, (u64, u64), String) {
    let folded = lab.path(&format!("{mode}.folded"));
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(90))
        .args(["profile", "-q", "-p", &pid.to_string(), "-d", "3s"])
        .args(["--call-graph", mode, "--folded", folded.to_str().unwrap()])
        .args(extra)
        .output()
        .expect("run perflab profile");
    assert!(out.status.success(), "{mode}: {}", stderr(&out));
    let text = std::fs::read_to_string(&folded).unwrap_or_default();
    let counts = share_reaching(&text, LOOP);
    (out, counts, text)
}

#[test]
fn auto_picks_dwarf_for_nginx_and_its_stacks_reach_the_event_loop() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    let Some((nginx_child, port)) = nginx(&lab) else {
        return;
    };
    let pid = nginx_child.0.id();
    let stop = Arc::new(AtomicBool::new(false));
    let clients = load(port, 3, stop.clone(), Duration::from_secs(60));

    let started = Instant::now();
    let (auto, (a_reach, a_all), a_folded) = profile(&lab, pid, "auto", &["--json"]);
    let auto_took = started.elapsed();
    let (fp, (f_reach, f_all), _) = profile(&lab, pid, "fp", &[]);
    stop.store(true, Ordering::Relaxed);
    let requests: u64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    drop(nginx_child);

    let j: serde_json::Value = serde_json::from_slice(&auto.stdout).expect("JSON report");
    let a_share = a_reach as f64 / a_all.max(1) as f64;
    let f_share = f_reach as f64 / f_all.max(1) as f64;
    eprintln!(
        "{requests} requests; auto: {a_reach} of {a_all} samples reach {LOOP} ({:.1} %), \
         perf.data {} bytes, {:.1} s for a 3 s profile; fp: {f_reach} of {f_all} ({:.1} %)",
        100.0 * a_share,
        j["perf_data_bytes"],
        auto_took.as_secs_f64(),
        100.0 * f_share,
    );
    // auto chose dwarf, bounded, and said why (naming nginx's binary).
    assert_eq!(j["call_graph_mode"], "dwarf", "{j}");
    assert_eq!(j["dwarf_stack_bytes"], 8192);
    assert!(j["perf_data_bytes"].as_u64().unwrap_or(0) > 0);
    let note = j["call_graph_note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("auto: ") && note.contains("nginx has no frame pointers"),
        "{note}"
    );
    assert!(a_all >= 100, "too few samples under load: {a_all}");
    assert!(a_share >= 0.8, "auto: {a_reach} of {a_all} reach {LOOP}");
    // Through libc: nginx's main is called by libc's start code, whose unwind table is
    // libc's (a stripped library's .eh_frame).
    let (through_libc, _) = share_reaching(&a_folded, "__libc_start_call_main");
    eprintln!("auto: {through_libc} of {a_all} reach __libc_start_call_main (libc)");
    assert!(through_libc as f64 >= 0.8 * a_all as f64);
    // The guard: frame pointers lose the event loop; the text report says fp.
    assert!(
        stdout(&fp).starts_with("call graph fp · perf.data "),
        "{}",
        stdout(&fp)
    );
    assert!(f_all >= 100, "too few samples under load: {f_all}");
    assert!(
        f_share <= 0.2,
        "fp: {f_reach} of {f_all} reach {LOOP}: is nginx built with frame pointers now?"
    );
}

#[test]
fn a_dwarf_stack_size_out_of_range_is_refused_naming_the_bounds() {
    let lab = Lab::new();
    for (value, says) in [
        ("dwarf,65536", "65528"),
        ("dwarf,512", "1024"),
        ("dwarf,8190", "multiple of 8"),
        ("dwarf,big", "number of bytes"),
        ("fp,8192", "dwarf or auto only"),
        ("lbr", "expected fp, dwarf, auto or off"),
    ] {
        let out = lab
            .cmd()
            .args(["profile", "--call-graph", value, "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{value}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{value}: {}", stderr(&out));
    }
}

#[test]
fn a_trial_profiled_with_auto_records_the_mode_it_chose_and_why() {
    if !require::perf_records() {
        return;
    }
    let lab = Lab::new();
    let f = lab.write(
        "e.toml",
        r#"
[experiment]
name = "stacks-auto"
repetitions = 1
warmup = 0
noise_check = false
timeout = "30s"
[profile]
target = "workload"
frequency = 499
call_graph = "auto"
dwarf_stack_bytes = 16384
[workload]
kind = "command"
command = "sh -c 'i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done'"
"#,
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(90))
        .args(["run", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = lab.open_store();
    let trial = &store.trials(1).unwrap()[0];
    let arts = store.trial_artifacts(trial.id).unwrap();
    let doc = arts
        .iter()
        .find(|a| a.0 == "profile.json")
        .expect("profile.json");
    let j: serde_json::Value = serde_json::from_slice(&doc.2).unwrap();
    // The command is held before its exec while perf attaches: it is still perflab
    // then, so auto cannot judge it and records with dwarf, saying so.
    assert_eq!(j["call_graph_mode"], "dwarf", "{j}");
    assert_eq!(j["dwarf_stack_bytes"], 16384);
    let note = j["call_graph_note"].as_str().unwrap_or_default();
    assert!(note.contains("held before its exec"), "{note}");
    assert!(j["samples"].as_u64().unwrap_or(0) > 0, "{j}");
}

#[test]
fn an_experiment_with_a_dwarf_stack_size_out_of_range_is_refused_naming_the_key() {
    let lab = Lab::new();
    for bad in ["70000", "1000", "-8"] {
        let f = lab.write(
            "e.toml",
            &format!(
                "[experiment]\nname = \"x\"\n[profile]\ncall_graph = \"dwarf\"\n\
                 dwarf_stack_bytes = {bad}\n[workload]\nkind = \"command\"\ncommand = \"true\"\n"
            ),
        );
        let out = lab
            .cmd()
            .args(["run", f.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("profile.dwarf_stack_bytes") && err.contains("65528"),
            "{bad}: {err}"
        );
    }
}
