//! `perflab run --on`: experiments across hosts over the system ssh client. Each test
//! builds its own hosts — network namespaces, each with a veth pair to this one
//! (10.231.N.2 inside) and its own sshd with per-test host and user keys and a test
//! known_hosts named in the inventory — and removes them when it ends, also when it
//! fails. Skipped, with the reason, where namespaces or sshd are not available.

mod common;
use common::*;

use std::process::Stdio;
use std::time::Duration;

use common::netns::Hosts;

/// A command workload that reports which namespace it ran in (its 10.231.N.2).
const WHERE: &str = r#"
[experiment]
name = "where"
repetitions = 2
warmup = 0
noise_check = false

[matrix]
n = [1, 2]

[workload]
kind = "command"
shell = true
command = "ip -4 -o addr show | grep -o '10\\.231\\.[0-9]*\\.2' | head -n 1 | cut -d. -f3; echo n={n}"
metrics.net = { regex = '(?m)^(\d+)$', unit = "", better = "higher" }
"#;

#[test]
fn an_experiment_on_three_hosts_stores_each_hosts_trials() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 3) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory(""));
    let exp = lab.write("where.toml", WHERE);
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args(["run", exp.to_str().unwrap(), "--on", "h0,h1,h2", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let store = lab.open_store();
    let export = store.export_run(1).unwrap();
    assert_eq!(export.configs.len(), 6, "n × host");
    assert!(export
        .run
        .file_text
        .as_deref()
        .unwrap()
        .contains("on = [\"h0\", \"h1\", \"h2\"]"));
    for t in &export.trials {
        assert_eq!(t.status, "ok", "{t:?}");
        let config = export
            .configs
            .iter()
            .find(|c| c.ordinal == t.config)
            .unwrap();
        let host = config.params["host"].as_str().unwrap();
        let i: usize = host[1..].parse().unwrap();
        // It ran in that host's namespace ...
        let net = t.metrics.iter().find(|m| m.name == "net").unwrap().value;
        assert_eq!(net, hosts.nets[i] as f64, "{host}");
        // ... and came back with the host's facts and clock offset.
        let doc = t.artifacts.iter().find(|a| a.name == "host.json").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&doc.content).unwrap();
        assert_eq!(v["name"], host);
        assert!(v["facts"]["hostname"].is_string(), "{v}");
        assert!(
            v["clock"]["offset_ms"].as_f64().unwrap().abs() < 5_000.0,
            "{v}"
        );
    }
    // The export carries the host of every config.
    let exported = lab.run(&["export", "1"]);
    assert!(stdout(&exported).contains("\"host\": \"h2\""));
    // No private key anywhere perflab wrote: the store and its WAL, the run's
    // directory (logs, profiles), the reports, and what the commands printed.
    let key = std::fs::read_to_string(lab.path("id")).unwrap();
    let body = key.lines().nth(1).unwrap();
    let leaks = |what: &str, bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains("PRIVATE KEY") && !text.contains(body),
            "a private key in {what}"
        );
    };
    leaks("perflab run's output", &[out.stdout, out.stderr].concat());
    for args in [
        &["report", "1", "--html", "r.html"][..],
        &["report", "1", "--markdown", "r.md"],
        &["show", "1"],
        &["export", "1"],
    ] {
        let o = lab.run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        leaks(&format!("{args:?}"), &[o.stdout, o.stderr].concat());
    }
    let mut files = vec![lab.path("results.db-wal")];
    let mut dirs = vec![lab.dir.path().to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    let mut read = 0;
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        // The keys themselves (the test's user key, the hosts' keys) are where the
        // test put them; every other file is checked.
        if bytes.starts_with(b"-----BEGIN OPENSSH PRIVATE KEY") {
            continue;
        }
        leaks(&f.display().to_string(), &bytes);
        read += 1;
    }
    assert!(
        read >= 4,
        "the store, its run directory and the reports were read"
    );
}

/// A workload that says when it started and ended (seconds since the epoch).
const SPAN: &str = r#"
[experiment]
name = "span"
repetitions = 2
warmup = 0
noise_check = false

[workload]
kind = "command"
shell = true
command = "echo start=$(date +%s.%N); sleep 1; echo end=$(date +%s.%N)"
metrics.start = { regex = 'start=([0-9.]+)', unit = "s" }
metrics.end = { regex = 'end=([0-9.]+)', unit = "s" }
"#;

#[test]
fn hosts_run_their_trials_in_parallel_each_one_at_a_time() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory(""));
    let exp = lab.write("span.toml", SPAN);
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(120))
        .args(["run", exp.to_str().unwrap(), "--on", "h0,h1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    assert_eq!(export.trials.len(), 4);
    // (host, start, end) of every trial, from the workload's own clock.
    let spans: Vec<(String, f64, f64)> = export
        .trials
        .iter()
        .map(|t| {
            assert_eq!(t.status, "ok", "{t:?}");
            let c = export.configs.iter().find(|c| c.ordinal == t.config);
            let host = c.unwrap().params["host"].as_str().unwrap().to_string();
            let v = |n: &str| t.metrics.iter().find(|m| m.name == n).unwrap().value;
            (host, v("start"), v("end"))
        })
        .collect();
    let overlap = |a: &(String, f64, f64), b: &(String, f64, f64)| a.1 < b.2 && b.1 < a.2;
    let mut across = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0 == b.0 {
                // One host runs one trial at a time.
                assert!(!overlap(a, b), "two trials at once on {}: {spans:?}", a.0);
            } else if overlap(a, b) {
                across += 1;
            }
        }
    }
    // The two hosts ran at the same time (one after the other, no two would overlap).
    assert!(across >= 1, "the hosts ran one after the other: {spans:?}");
}

#[test]
fn an_unreachable_host_fails_only_its_own_trials() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 1) else {
        return;
    };
    // 10.231.99.2: no route from here, ssh fails at once.
    let gone = format!(
        "[[hosts]]\nname = \"gone\"\naddress = \"10.231.99.2\"\nidentity = \"{}/id\"\n",
        lab.dir.path().display()
    );
    lab.write("inv.toml", &hosts.inventory(&gone));
    let exp = lab.write("where.toml", WHERE);
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args([
            "run",
            exp.to_str().unwrap(),
            "--on",
            "h0,gone",
            "--hosts",
            "inv.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let export = lab.open_store().export_run(1).unwrap();
    for t in &export.trials {
        let config = export
            .configs
            .iter()
            .find(|c| c.ordinal == t.config)
            .unwrap();
        if config.params["host"] == "gone" {
            assert_eq!(t.status, "failed");
            let e = t.error.as_deref().unwrap();
            assert!(e.contains("gone") && e.contains("10.231.99.2"), "{e}");
        } else {
            assert_eq!(t.status, "ok", "{t:?}");
        }
    }
}

#[test]
fn an_unknown_host_or_a_password_is_refused_before_anything_runs() {
    let lab = Lab::new();
    lab.write(
        "hosts.toml",
        "[[hosts]]\nname = \"a\"\npassword = \"hunter2\"\n",
    );
    let exp = lab.write("where.toml", WHERE);
    let out = lab.run(&["run", exp.to_str().unwrap(), "--on", "a"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ssh-agent"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("hunter2"));
    lab.write("hosts.toml", "[[hosts]]\nname = \"a\"\n");
    let out = lab.run(&["run", exp.to_str().unwrap(), "--on", "a,b"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"b\" is not in the inventory"),
        "{}",
        stderr(&out)
    );
    assert!(!exists(&lab.store()) || ok_trials(&lab) == 0);
}

#[test]
fn ctrl_c_during_a_three_host_run_keeps_finished_trials_and_leaves_no_worker() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 3) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory(""));
    let exp = lab.write(
        "sleepy.toml",
        "[experiment]\nname = \"sleepy\"\nrepetitions = 3\nwarmup = 0\nnoise_check = false\n\n\
         [matrix]\nt = [\"0.05\", \"30\"]\n\n[workload]\nkind = \"command\"\ncommand = \"sleep {t}\"\n",
    );
    let mut child = lab
        .process()
        .args(["-q", "run", exp.to_str().unwrap(), "--on", "h0,h1,h2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a 30-s sleep runs in some namespace, after at least one finished trial.
    let sleeping = wait_until(Duration::from_secs(60), || {
        (0..3).any(|i| hosts.processes(i).contains("sleep 30")) && ok_trials(&lab) >= 1
    });
    if !sleeping {
        let _ = child.kill();
        panic!("no remote trial started");
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let done = wait_until(Duration::from_secs(20), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !done {
        let _ = child.kill();
        panic!("perflab did not stop within 20 s of Ctrl-C");
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(ok_trials(&lab) >= 1, "finished trials are kept");
    // The workers and their sleeps are gone from every namespace.
    let clean = wait_until(Duration::from_secs(10), || {
        (0..3).all(|i| {
            let p = hosts.processes(i);
            !p.contains("worker") && !p.contains("sleep 30")
        })
    });
    assert!(
        clean,
        "left behind: {:?}",
        (0..3).map(|i| hosts.processes(i)).collect::<Vec<_>>()
    );
}

#[test]
fn compare_gives_the_ratio_of_ratios_across_hosts() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    lab.write("hosts.toml", &hosts.inventory(""));
    // Where the workload runs decides its speed: on h0's namespace (its own address,
    // seen from inside) java is half as fast as c; on h1 they are equal. So c/java is
    // 2 on h0 and 1 on h1, and the ratio of ratios across hosts is 2.
    let h0 = hosts.nets[0];
    let exp = lab.write(
        "langs.toml",
        &format!(
            r#"
[experiment]
name = "langs"
repetitions = 4
warmup = 0
noise_check = false
on = ["h0", "h1"]

[matrix]
lang = ["c", "java"]

[workload]
kind = "command"
shell = true
command = "b=1000; if [ {{lang}} = java ] && ip -4 -o addr show | grep -q '10\\.231\\.{h0}\\.2'; then b=500; fi; set -- 0 7 -5 3; shift $(( {{repetition}} - 1 )); echo v=$(( b + $1 ))"
metrics.v = {{ regex = 'v=(\d+)', unit = "ops/s", better = "higher" }}
"#
        ),
    );
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(120))
        .args(["run", exp.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = lab.json(&[
        "compare",
        "1",
        "--interaction",
        "lang",
        "--by",
        "host",
        "--metric",
        "v",
        "--json",
    ]);
    let i = &doc["interactions"][0];
    assert_eq!(i["factor"], "lang", "{doc}");
    assert_eq!(i["by"], "host");
    assert_eq!(i["ratios"][0]["level"], "h0");
    assert_eq!(i["ratios"][1]["level"], "h1");
    let rr = i["ratio_of_ratios"].as_f64().unwrap();
    assert!((rr - 2.0).abs() < 0.05, "{i}");
    // And the other way round: the host ratio (h0 / h1) for c over that for java.
    let doc = lab.json(&[
        "compare",
        "1",
        "--interaction",
        "host",
        "--by",
        "lang",
        "--metric",
        "v",
        "--json",
    ]);
    let i = &doc["interactions"][0];
    assert_eq!(i["factor"], "host", "{doc}");
    assert!(
        (i["ratio_of_ratios"].as_f64().unwrap() - 2.0).abs() < 0.05,
        "{i}"
    );
    let text = stdout(&lab.run(&["compare", "1", "--interaction", "lang", "--by", "host"]));
    assert!(text.contains("lang: c / java"), "{text}");
    // One config on two hosts is a comparison across hosts: it has a noise floor and
    // the host facts that differ (here, with both namespaces on one machine, maybe none).
    let doc = lab.json(&[
        "compare",
        "1:lang=java,host=h0",
        "1:lang=java,host=h1",
        "--metric",
        "v",
        "--json",
    ]);
    assert!(doc["host_facts_differ"].is_array(), "{doc}");
    let v = &doc["comparisons"][0];
    assert!(v["noise_floor"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["verdict"], "faster", "java on h1 is twice h0's: {v}");
}

#[test]
fn resume_runs_a_failed_hosts_trials_once_it_is_back() {
    let lab = Lab::new();
    let Some(hosts) = Hosts::new(lab.dir.path(), 2) else {
        return;
    };
    // h1 is first named at an address nobody answers (its trials fail), then fixed.
    let inventory = hosts.inventory("");
    let broken = inventory.replacen(&hosts.addrs[1], "10.231.99.2", 1);
    assert_ne!(broken, inventory);
    lab.write("hosts.toml", &broken);
    let exp = lab.write("where.toml", WHERE);
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args(["run", exp.to_str().unwrap(), "--on", "h0,h1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let statuses = |lab: &Lab| {
        let e = lab.open_store().export_run(1).unwrap();
        let mut v: Vec<(String, String)> = e
            .trials
            .iter()
            .map(|t| {
                let c = e.configs.iter().find(|c| c.ordinal == t.config).unwrap();
                (
                    c.params["host"].as_str().unwrap().to_string(),
                    t.status.clone(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = statuses(&lab);
    assert_eq!(
        before
            .iter()
            .filter(|(h, s)| h == "h1" && s == "failed")
            .count(),
        4
    );
    lab.write("hosts.toml", &inventory);
    let out = lab
        .cmd()
        .timeout(Duration::from_secs(180))
        .args(["run", "--resume", "1", "--retry-failed"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let after = statuses(&lab);
    assert_eq!(after.len(), 8, "{after:?}");
    assert!(after.iter().all(|(_, s)| s == "ok"), "{after:?}");
    // Each h1 trial ran in h1's namespace.
    let e = lab.open_store().export_run(1).unwrap();
    for t in &e.trials {
        let c = e.configs.iter().find(|c| c.ordinal == t.config).unwrap();
        let i: usize = c.params["host"].as_str().unwrap()[1..].parse().unwrap();
        let net = t.metrics.iter().find(|m| m.name == "net").unwrap().value;
        assert_eq!(net, hosts.nets[i] as f64);
    }
}
