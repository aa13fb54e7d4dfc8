//! `perflab disk` end to end: the report (text and `--json`), the store record, the
//! exit codes (0 ok, 2 bad input, 4 flagged partial result), and that its file is
//! always removed. Sizes are a few MiB; no assertion is about time.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use common::{require, stderr, stdout, Lab};

/// Names in `dir` other than the store's files.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("results.db"))
        .collect();
    v.sort();
    v
}

#[test]
fn json_report_has_the_documented_fields_and_the_run_is_stored() {
    let lab = Lab::new();
    let out = lab.run(&[
        "disk",
        lab.dir.path().to_str().unwrap(),
        "--bs",
        "64k",
        "--size",
        "4M",
        "--fdatasync-end",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    for k in [
        "mode",
        "bs",
        "bytes",
        "seconds",
        "mb_s",
        "iops",
        "latency_us",
        "device",
        "iostat",
        "warnings",
    ] {
        assert!(v.get(k).is_some(), "missing {k} in {v}");
    }
    assert_eq!(v["mode"], "write");
    assert_eq!(v["bs"], 65536);
    assert_eq!(v["bytes"], 4 << 20);
    for k in ["p50", "p99", "max"] {
        assert!(v["latency_us"][k].as_f64().unwrap() > 0.0, "latency_us.{k}");
    }
    if !v["iostat"].is_null() {
        for k in [
            "w_s", "wkb_s", "wrqm_s", "r_s", "rkb_s", "rrqm_s", "aqu_sz", "await", "util",
        ] {
            assert!(v["iostat"][k].is_number(), "iostat.{k} in {}", v["iostat"]);
        }
        assert!(v["device"].is_string());
    }
    assert!(v["warnings"].is_array());
    assert!(stderr(&out).contains("run 1 recorded"), "{}", stderr(&out));
    assert!(leftovers(lab.dir.path()).is_empty());

    let store = lab.open_store();
    let run = store.run(1).unwrap();
    assert_eq!(
        (run.kind.as_str(), run.status.as_str()),
        ("disk", "complete")
    );
    let config = &store.configs(1).unwrap()[0];
    assert_eq!(config.params["bs"], 65536);
    assert_eq!(config.params["fdatasync_end"], true);
    let names: Vec<String> = store
        .metrics(1)
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    for n in [
        "mb_s",
        "iops",
        "latency_p50_us",
        "latency_p99_us",
        "latency_max_us",
    ] {
        assert!(names.iter().any(|m| m == n), "{n} not stored: {names:?}");
    }
}

#[test]
fn human_report_shows_units_the_device_and_the_dirty_cache_warning() {
    let lab = Lab::new();
    let out = lab.run(&[
        "disk",
        lab.dir.path().to_str().unwrap(),
        "--bs",
        "16k",
        "--size",
        "2M",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in ["MB/s", "IOPS", "µs", "p99", "16k × 128 I/Os"] {
        assert!(text.contains(needle), "{needle:?} missing in:\n{text}");
    }
    assert!(
        text.contains("iostat -x") || text.contains("device: none"),
        "{text}"
    );
    assert!(
        text.contains("this measured memory, not the disk; use --fdatasync-end or --direct"),
        "{text}"
    );
    assert!(leftovers(lab.dir.path()).is_empty());
}

#[test]
fn read_mode_reports_the_page_cache_state() {
    let lab = Lab::new();
    let out = lab.run(&[
        "disk",
        lab.dir.path().join("f.dat").to_str().unwrap(),
        "--mode",
        "randread",
        "--bs",
        "4k",
        "--size",
        "2M",
        "--iodepth",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("disk randread"), "{text}");
    assert!(text.contains("pool of 2 threads"), "{text}");
    assert!(text.contains("page cache"), "{text}");
    assert!(leftovers(lab.dir.path()).is_empty());
}

#[test]
fn bad_input_exits_2_with_a_clear_message_and_leaves_nothing() {
    let lab = Lab::new();
    let d = lab.dir.path().to_str().unwrap().to_string();
    let missing = lab.path("no/such/dir/f").to_str().unwrap().to_string();
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["disk", &d, "--bs", "0"], "--bs 0"),
        (
            vec!["disk", &d, "--bs", "1000", "--count", "4", "--direct"],
            "is not a multiple of",
        ),
        (vec!["disk", &missing, "--count", "1"], "does not exist"),
        (vec!["disk", &d, "--bs", "16kB"], "ambiguous"),
        (
            vec![
                "disk",
                &d,
                "--mode",
                "read",
                "--fdatasync-end",
                "--count",
                "1",
            ],
            "only applies to writes",
        ),
    ];
    for (args, needle) in cases {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(leftovers(lab.dir.path()).is_empty(), "{args:?} left a file");
    }
    assert!(!lab.store().exists(), "nothing ran, nothing stored");
}

#[test]
fn writing_to_a_block_device_needs_the_explicit_flag() {
    let Some(dev) = std::fs::read_dir("/sys/block")
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| PathBuf::from("/dev").join(e.file_name()))
        .filter(|p| p.exists())
    else {
        require::missing("no block device node under /dev");
        return;
    };
    let lab = Lab::new();
    let out = lab.run(&["disk", dev.to_str().unwrap(), "--count", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--i-know-this-destroys-data"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_full_disk_gives_exit_4_a_flagged_partial_result_and_no_file() {
    let lab = Lab::new();
    let mnt = lab.path("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = StdCommand::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !mounted {
        require::missing("cannot mount a 4 MiB tmpfs here (needs root / CAP_SYS_ADMIN)");
        return;
    }
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = StdCommand::new("umount").arg(&self.0).status();
        }
    }
    let _umount = Umount(mnt.clone());
    let out = lab.run(&[
        "disk",
        mnt.to_str().unwrap(),
        "--bs",
        "64k",
        "--size",
        "8M",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["partial"], true);
    assert!(v["problem"]
        .as_str()
        .unwrap()
        .contains("no space left on device"));
    let bytes = v["bytes"].as_u64().unwrap();
    assert!(bytes > 0 && bytes < 8 << 20, "{bytes}");
    assert!(stderr(&out).contains("partial result"), "{}", stderr(&out));
    assert!(
        std::fs::read_dir(&mnt).unwrap().next().is_none(),
        "file removed"
    );
    let run = lab.open_store().run(1).unwrap();
    assert_eq!(run.status, "complete_with_failures");
    assert_eq!(run.trials_failed, 1);
}
