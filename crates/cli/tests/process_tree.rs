//! Whole-tree measurement: a command that daemonizes a grandchild which burns CPU and
//! memory after the command itself has exited; both must be counted — with cgroups
//! and with the subreaper fallback.

mod common;
use common::*;

/// The main process starts a detached (setsid, double-forked) Python grandchild and
/// exits at once. The grandchild touches 160 MiB and burns ≥ 0.5 s of user CPU.
const DAEMON: &str = r#"
[experiment]
repetitions = 1
warmup = 0
timeout = "60s"
[workload]
kind = "command"
shell = true
command = """
( setsid python3 -c "
import time
block = b'x' * (160 << 20)
t = time.process_time()
while time.process_time() - t < 0.6:
    sum(range(20000))
" > /dev/null 2>&1 & )
exit 0
"""
"#;

fn check(no_cgroup: bool) {
    let lab = Lab::new();
    let file = lab.write("e.toml", DAEMON);
    let mut cmd = lab.cmd();
    if no_cgroup {
        cmd.env("PERFLAB_NO_CGROUP", "1");
    }
    let out = cmd.args(["run", file.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let show = lab.json(&["show", "--json"]);
    let cfg = &show["configs"][0]["metrics"];
    let get = |name: &str| {
        cfg.as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()["mean"]
            .as_f64()
            .unwrap()
    };
    assert!(
        get("user_s") >= 0.4,
        "user_s {} misses the grandchild ({show})",
        get("user_s")
    );
    assert!(
        get("peak_rss_bytes") >= 150.0 * 1024.0 * 1024.0,
        "peak_rss_bytes {} misses the grandchild",
        get("peak_rss_bytes")
    );
    assert!(get("wall_s") >= 0.45, "the trial waited for the grandchild");
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let method = store.trials(run.id).unwrap()[0].method.clone().unwrap();
    if no_cgroup {
        assert_eq!(method, "subreaper+proc");
    }
}

#[test]
fn grandchild_counts_with_the_best_method_available() {
    check(false);
}

#[test]
fn grandchild_counts_with_the_subreaper_fallback() {
    check(true);
}
