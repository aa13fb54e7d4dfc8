//! The disk workload against real files and devices: the device's iostat figures
//! match the I/O the run did, read modes really read from the disk, bad input leaves
//! nothing behind, a full file system gives a flagged partial result.
//!
//! Every test takes `DEVICE_LOCK` first (and drops it last) so none counts another's
//! I/O. On a shared device other processes can still add I/O to a window;
//! that only ever adds, so the accuracy check keeps the closest of three attempts.
//! No assertion is about time. What this machine cannot give (a block device, root,
//! loop devices) skips with the reason, or fails under `PERFLAB_REQUIRE`
//! (tests/require.rs).

#[path = "../../../tests/require.rs"]
mod require;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use hdrhistogram::serialization::Deserializer;
use perflab_workloads::disk::{
    self, target, ByteSize, Control, DiskError, DiskSpec, Mode, Pattern,
};
use perflab_workloads::{TrialContext, Workload, WorkloadError};

static DEVICE_LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    DEVICE_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A scratch directory on a file system with a real block device behind it, or
/// `None` (with the reason printed, or a failure under `PERFLAB_REQUIRE`) when there
/// is none.
fn block_backed_dir() -> Option<tempfile::TempDir> {
    let candidates = [
        std::env::temp_dir(),
        PathBuf::from("/var/tmp"),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    ];
    for c in &candidates {
        let Ok(m) = std::fs::metadata(c) else {
            continue;
        };
        if target::device_of(m.dev()).is_some() {
            if let Ok(d) = tempfile::tempdir_in(c) {
                return Some(d);
            }
        }
    }
    require::missing(format!(
        "none of {candidates:?} is on a block device (tmpfs/overlay only), so there are no device counters to check"
    ));
    None
}

fn spec(path: &Path, mode: Mode, bs: u64, size: u64) -> DiskSpec {
    DiskSpec {
        mode,
        bs: ByteSize(bs),
        size: Some(ByteSize(size)),
        ..DiskSpec::new(path)
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn within(actual: f64, expected: f64, tol: f64) -> bool {
    (actual - expected).abs() <= tol * expected
}

/// The fewest and the most requests the device can need for one page-aligned direct
/// I/O of `bs` bytes: a request carries at most `max_sectors_kb`, and at most
/// `max_segments` segments — one per page when the buffer's pages are not physically
/// contiguous (which the allocator decides), so e.g. a 1 MiB write (256 pages) on a
/// virtio disk with 254 segments per request takes one request or two.
fn requests_per_io(device: &str, bs: u64) -> (u64, u64) {
    let queue = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/block/{device}/queue/{name}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    };
    let max_bytes = queue("max_sectors_kb").unwrap_or(512) * 1024;
    let fewest = bs.div_ceil(max_bytes);
    let most = match queue("max_segments") {
        Some(segs) if segs > 0 => fewest.max(bs.div_ceil(4096).div_ceil(segs)),
        _ => fewest,
    };
    (fewest, most)
}

/// Runs `s` up to three times and returns the (writes, KiB) relative errors of the
/// closest attempt against what the run did.
fn best_write_accuracy(s: &DiskSpec) -> (f64, f64, disk::DiskReport) {
    let mut best: Option<(f64, f64, disk::DiskReport)> = None;
    for _ in 0..3 {
        let r = disk::run(s, &Control::default()).expect("disk run");
        assert!(!r.partial, "{:?}", r.problem);
        let dev = r.device.clone().expect("a device");
        let x = r.iostat.expect("iostat figures");
        let (fewest, most) = requests_per_io(&dev, r.bs);
        let per_s = |n: u64| (r.ios * n) as f64 / x.interval_s;
        let (lo, hi) = (per_s(fewest), per_s(most));
        let expected_wkb_s = r.bytes as f64 / 1024.0 / x.interval_s;
        // Relative distance of w/s from the range the I/Os can have been split into.
        let ew = if x.w_s < lo {
            (lo - x.w_s) / lo
        } else if x.w_s > hi {
            (x.w_s - hi) / hi
        } else {
            0.0
        };
        let ek = (x.wkb_s - expected_wkb_s).abs() / expected_wkb_s;
        eprintln!(
            "device {dev}: w/s {:.1} (expected {lo:.1} to {hi:.1}), wkB/s {:.1} (expected {expected_wkb_s:.1})",
            x.w_s, x.wkb_s
        );
        let better = match &best {
            Some(b) => ew.max(ek) < b.0.max(b.1),
            None => true,
        };
        if better {
            best = Some((ew, ek, r));
        }
        if ew <= 0.1 && ek <= 0.1 {
            break;
        }
    }
    best.unwrap()
}

#[test]
fn direct_sequential_writes_show_up_in_the_device_counters() {
    let _g = lock();
    let Some(dir) = block_backed_dir() else {
        return;
    };
    // 512 KiB: 128 pages, within a request's segment limit on common devices (virtio
    // takes 254), so each write is one request whatever pages the allocator gave.
    let mut s = spec(dir.path(), Mode::Write, 512 << 10, 32 << 20);
    s.direct = true;
    let (ew, ek, r) = best_write_accuracy(&s);
    assert_eq!(r.bytes, 32 << 20);
    assert!(ew <= 0.1, "w/s off by {:.1} %", ew * 100.0);
    assert!(ek <= 0.1, "wkB/s off by {:.1} %", ek * 100.0);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(entries(dir.path()).is_empty(), "the file is removed");
}

#[test]
fn buffered_writes_with_fdatasync_reach_the_device() {
    let _g = lock();
    let Some(dir) = block_backed_dir() else {
        return;
    };
    let mut s = spec(dir.path(), Mode::Write, 64 << 10, 32 << 20);
    s.fdatasync_end = true;
    // The page cache merges 64 KiB writes into larger requests: only the bytes are
    // predictable.
    let mut best = f64::MAX;
    for _ in 0..3 {
        let r = disk::run(&s, &Control::default()).unwrap();
        let x = r.iostat.unwrap();
        best = best.min((x.written_bytes as f64 - r.bytes as f64).abs() / r.bytes as f64);
        if best <= 0.1 {
            break;
        }
    }
    assert!(best <= 0.1, "device wrote {:.1} % off", best * 100.0);
    assert!(entries(dir.path()).is_empty());
}

/// Writes straight to a loop device: nothing else uses it, so the counters are exact.
#[test]
fn writes_to_an_allowed_loop_device_are_counted_exactly() {
    let _g = lock();
    let Some(dir) = block_backed_dir() else {
        return;
    };
    let backing = dir.path().join("loop.img");
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(48 << 20))
        .unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&backing)
        .output();
    let dev = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => {
            require::missing(format!(
                "losetup failed (needs root and loop devices): {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            return;
        }
        Err(e) => {
            require::missing(format!("{}: {e}", require::not_found("losetup")));
            return;
        }
    };
    struct Detach(String);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").args(["-d", &self.0]).status();
        }
    }
    let _detach = Detach(dev.clone());
    let mut s = spec(Path::new(&dev), Mode::Write, 256 << 10, 32 << 20);
    s.direct = true;
    match disk::run(&s, &Control::default()) {
        Err(DiskError::Invalid(m)) => {
            assert!(m.to_string().contains("`i_know_this_destroys_data`"), "{m}")
        }
        other => panic!("writing a device without the flag must be refused: {other:?}"),
    }
    s.i_know_this_destroys_data = Some(PathBuf::from("/dev/null"));
    assert!(matches!(
        disk::run(&s, &Control::default()),
        Err(DiskError::Invalid(_))
    ));
    s.i_know_this_destroys_data = Some(PathBuf::from(&dev));
    let r = disk::run(&s, &Control::default()).expect("write to the loop device");
    let x = r.iostat.expect("loop devices have diskstats");
    let name = dev.trim_start_matches("/dev/");
    assert_eq!(r.device.as_deref(), Some(name));
    let (fewest, most) = requests_per_io(name, r.bs);
    let (lo, hi) = ((r.ios * fewest) as f64, (r.ios * most) as f64);
    assert!(
        x.writes as f64 >= lo * 0.9 && x.writes as f64 <= hi * 1.1,
        "writes {} vs {lo} to {hi}",
        x.writes
    );
    assert!(within(x.written_bytes as f64, (32 << 20) as f64, 0.1));
    assert!(within(x.w_s, x.writes as f64 / x.interval_s, 0.1));
    assert!(within(x.wkb_s, 32.0 * 1024.0 / x.interval_s, 0.1));
    assert!(backing.exists(), "a device target is not removed");
}

#[test]
fn read_modes_drop_the_laid_out_file_from_the_page_cache() {
    let _g = lock();
    let Some(dir) = block_backed_dir() else {
        return;
    };
    for mode in [Mode::Read, Mode::Randread] {
        let s = spec(dir.path(), mode, 64 << 10, 16 << 20);
        let r = disk::run(&s, &Control::default()).unwrap();
        assert_eq!(r.bytes, 16 << 20);
        let resident = r.resident_before.expect("mincore works on a regular file");
        assert!(
            resident < 0.05,
            "{mode}: {resident} of the file still cached"
        );
        let x = r.iostat.unwrap();
        assert!(
            x.read_bytes as f64 >= 0.9 * r.bytes as f64,
            "{mode}: the device read only {} of {} bytes",
            x.read_bytes,
            r.bytes
        );
        assert!(
            !r.warnings.iter().any(|w| w.contains("page cache")),
            "{:?}",
            r.warnings
        );
        assert!(entries(dir.path()).is_empty());
    }
}

#[test]
fn cached_reads_are_served_from_memory_and_say_so() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), Mode::Read, 64 << 10, 8 << 20);
    s.cached = true;
    let r = disk::run(&s, &Control::default()).unwrap();
    assert!(r.resident_before.unwrap() > 0.5);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("served from the page cache")));
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn the_classic_traps_are_named() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), Mode::Write, 16 << 10, 1 << 20);
    s.pattern = Pattern::Zero;
    let r = disk::run(&s, &Control::default()).unwrap();
    let all = r.warnings.join("\n");
    assert!(all.contains("this measured memory, not the disk; use `fdatasync_end` or `direct`"));
    assert!(all.contains("all-zero data"));
    assert!(all.contains("use `pattern` random"), "{all}");
    let mut named = r.clone();
    named.name_fields(&|f| perflab_units::flag_for(&[], f));
    let all = named.warnings.join("\n");
    assert!(all.contains("this measured memory, not the disk; use --fdatasync-end or --direct"));
    assert!(all.contains("use --pattern random"), "{all}");
}

#[test]
fn bad_input_is_refused_and_leaves_nothing_behind() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(DiskSpec, &str)> = vec![
        (
            DiskSpec {
                bs: ByteSize(0),
                count: Some(4),
                ..DiskSpec::new(dir.path())
            },
            "`bs` 0",
        ),
        (
            DiskSpec {
                bs: ByteSize(1000),
                count: Some(4),
                direct: true,
                ..DiskSpec::new(dir.path())
            },
            "not a multiple of",
        ),
        (
            DiskSpec {
                count: Some(1),
                ..DiskSpec::new(dir.path().join("missing/sub/file"))
            },
            "does not exist",
        ),
        (
            DiskSpec {
                count: Some(1),
                ..DiskSpec::new(dir.path().join("missing/"))
            },
            "does not exist",
        ),
    ];
    for (s, needle) in cases {
        match disk::run(&s, &Control::default()) {
            Err(DiskError::Invalid(m)) => {
                assert!(m.to_string().contains(needle), "{m:?} lacks {needle:?}")
            }
            other => panic!("{s:?}: expected invalid input, got {other:?}"),
        }
        assert!(
            entries(dir.path()).is_empty(),
            "{needle}: something left behind"
        );
    }
    let existing = dir.path().join("keep.txt");
    std::fs::write(&existing, "mine").unwrap();
    let s = DiskSpec {
        count: Some(1),
        ..DiskSpec::new(&existing)
    };
    assert!(
        matches!(disk::run(&s, &Control::default()), Err(DiskError::Invalid(m)) if m.to_string().contains("never overwrites"))
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "mine");
}

/// A 4 MiB tmpfs holds half of an 8 MiB write: the result is partial and flagged,
/// and the file is gone.
#[test]
fn a_full_file_system_gives_a_flagged_partial_result_and_no_file() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        require::missing("cannot mount a 4 MiB tmpfs here (needs root / CAP_SYS_ADMIN)");
        return;
    }
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _umount = Umount(mnt.clone());
    for iodepth in [1, 4] {
        let mut s = spec(&mnt, Mode::Write, 64 << 10, 8 << 20);
        s.iodepth = iodepth;
        let r = disk::run(&s, &Control::default()).expect("a partial result, not an error");
        assert!(r.partial);
        let p = r.problem.as_deref().unwrap();
        assert!(p.contains("no space left on device"), "{p}");
        assert!(r.bytes > 0 && r.bytes < 8 << 20, "{}", r.bytes);
        assert!(entries(&mnt).is_empty(), "the file is removed");
        // As a trial: a failed trial that keeps its partial measurement.
        let ctx = TrialContext {
            cpus: None,
            timeout: None,
            interrupted: Default::default(),
            run_dir: dir.path().to_path_buf(),
            attach: None,
            jit: false,
        };
        match s.run(&ctx) {
            Err(WorkloadError::Failed { message, partial }) => {
                assert!(message.contains("no space"));
                assert!(partial.metrics.iter().any(|m| m.name == "mb_s"));
            }
            other => panic!("expected a failed trial, got {other:?}"),
        }
        assert!(entries(&mnt).is_empty());
    }
}

#[test]
fn as_a_workload_it_measures_metrics_and_a_latency_histogram() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), Mode::Randwrite, 4 << 10, 4 << 20);
    s.iodepth = 3;
    s.fdatasync_end = true;
    let ctx = TrialContext {
        cpus: None,
        timeout: None,
        interrupted: Default::default(),
        run_dir: dir.path().to_path_buf(),
        attach: None,
        jit: false,
    };
    let m = s.run(&ctx).expect("measurement");
    let names: Vec<&str> = m.metrics.iter().map(|m| m.name.as_str()).collect();
    for n in [
        "mb_s",
        "iops",
        "latency_p50_us",
        "latency_p99_us",
        "latency_max_us",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    if target::device_of(std::fs::metadata(dir.path()).unwrap().dev()).is_some() {
        for n in [
            "dev_aqu_sz",
            "dev_util_pct",
            "dev_await_ms",
            "dev_wrqm_s",
            "dev_w_s",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
    }
    let h = &m.histograms[0];
    assert_eq!((h.name.as_str(), h.unit.as_str()), ("latency", "us"));
    let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
        .deserialize(&mut h.data.as_slice())
        .expect("V2 histogram");
    assert_eq!(hist.len(), 1024, "one value per I/O");
    assert!(m.method.unwrap().contains("pool of 3 threads"));
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn an_interrupt_stops_the_run_and_removes_the_file() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let ctl = Control::default();
    ctl.interrupted.store(true, Ordering::SeqCst);
    let s = spec(dir.path(), Mode::Write, 64 << 10, 8 << 20);
    assert!(matches!(disk::run(&s, &ctl), Err(DiskError::Interrupted)));
    assert!(entries(dir.path()).is_empty());
}
