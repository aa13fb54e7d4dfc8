//! The library's recording path against the real perf: start/wait on a command,
//! start/stop on the whole system. Skipped, with the reason printed, where perf is
//! missing or may not record — failed for it under `PERFLAB_REQUIRE` (tests/require.rs).

#[path = "../../../tests/require.rs"]
mod require;

use std::time::Duration;

use perflab_profile::{
    CommandOutput, Event, ProfileError, ProfileSpec, Profiler, ReportOptions, Target,
};

#[test]
fn a_command_is_recorded_to_its_end() {
    if !require::perf_records() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = ProfileSpec {
        target: Target::Command(vec![
            "sh".into(),
            "-c".into(),
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3".into(),
        ]),
        output_dir: Some(dir.path().to_path_buf()),
        command_output: CommandOutput::File(dir.path().join("out.txt")),
        ..ProfileSpec::default()
    };
    let p = Profiler::start(&spec).unwrap().wait().unwrap();
    assert!(dir.path().join("perf.data").is_file());
    assert_eq!(p.command_status, Some(3));
    assert!(p.event == "cycles" || p.event == "cpu-clock", "{}", p.event);
    assert_eq!(p.event_note.is_some(), p.event == "cpu-clock");
    let r = p.report(&ReportOptions::default());
    assert!(r.samples > 0);
    assert!(p.samples.iter().all(|s| s.comm == "sh"));
}

#[test]
fn the_system_is_recorded_until_stopped() {
    if !require::perf_records() {
        return;
    }
    let running = Profiler::start(&ProfileSpec {
        target: Target::System,
        event: Event::CpuClock,
        duration: Some(Duration::from_secs(30)),
        ..ProfileSpec::default()
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t = std::time::Instant::now();
    let p = running.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(20), "stop() did not stop");
    assert_eq!(p.event, "cpu-clock");
    assert!(p.perf_data.as_ref().unwrap().is_file());
    let _ = std::fs::remove_dir_all(p.perf_data.as_ref().unwrap().parent().unwrap());
}

#[test]
fn impossible_requests_are_bad_input() {
    let bad = |spec: ProfileSpec| Profiler::start(&spec).unwrap_err();
    let e = bad(ProfileSpec {
        frequency: 0,
        ..ProfileSpec::default()
    });
    assert!(e.is_bad_input(), "{e}");
    let e = bad(ProfileSpec {
        target: Target::Command(vec![]),
        ..ProfileSpec::default()
    });
    assert!(e.is_bad_input());
    let e = bad(ProfileSpec {
        target: Target::Pid(i32::MAX),
        ..ProfileSpec::default()
    });
    assert!(matches!(e, ProfileError::NoSuchProcess(_)));
}
