use super::*;
use crate::profile::Profile;
use crate::reduce::ReportOptions;

/// A per-task recording (`perf record -- prog`): two cpu-clock samples in `compute`,
/// a blocking switch-out in `wait_for_io` closed by the switch-in record 8 ms later,
/// a preemption, and a last blocking switch-out still open at the end.
const PER_TASK: &str = "\
prog 100/100 [000] 10.000000:          cpu-clock: 
\t    1186 compute+0x3d (/tmp/prog)
\t    1239 main+0x20 (/tmp/prog)

prog 100/100 [000] 10.001000:          cpu-clock: 
\t    1186 compute+0x3d (/tmp/prog)
\t    1239 main+0x20 (/tmp/prog)

prog 100/100 [000] 10.002000: sched:sched_switch: prev_comm=prog prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\tffffffff822025be do_nanosleep+0x5e ([kernel.kallsyms])
\t    1200 wait_for_io+0x10 (/tmp/prog)
\t    1239 main+0x25 (/tmp/prog)

prog 100/100 [000] 10.002020: PERF_RECORD_SWITCH OUT        
prog 100/100 [000] 10.010000: PERF_RECORD_SWITCH IN         
prog 100/100 [000] 10.010500: sched:sched_switch: prev_comm=prog prev_pid=100 prev_prio=120 prev_state=R+ ==> next_comm=kworker next_pid=7 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\t    1186 compute+0x3d (/tmp/prog)
\t    1239 main+0x20 (/tmp/prog)

prog 100/100 [000] 10.010520: PERF_RECORD_SWITCH OUT preempt
prog 100/100 [000] 10.011000: PERF_RECORD_SWITCH IN         
prog 100/100 [000] 10.012000: sched:sched_switch: prev_comm=prog prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\tffffffff822025be do_nanosleep+0x5e ([kernel.kallsyms])
\t    1200 wait_for_io+0x10 (/tmp/prog)
\t    1239 main+0x25 (/tmp/prog)

prog 100/100 [001] 10.014000:          cpu-clock: 
\t    1186 compute+0x3d (/tmp/prog)
\t    1239 main+0x20 (/tmp/prog)

other 200/200 [001] 10.016000:          cpu-clock: 
\t    1186 spin+0x3d (/tmp/other)
";

#[test]
fn a_blocked_interval_runs_from_switch_out_to_switch_in() {
    let p = Profile::from_script(PER_TASK);
    // The switches are not on-CPU samples.
    assert_eq!(p.samples.len(), 4);
    assert_eq!(p.event, "cpu-clock");
    let off = p.off_cpu.as_ref().expect("off-CPU side");
    assert_eq!(off.switches, 3);
    // 10.002 → 10.010 (switch-in record), 10.012 → 10.014 (the next sample: an upper
    // bound where no switch-in was recorded).
    assert_eq!(off.total_us(), 8_000 + 2_000);
    assert_eq!(off.intervals, 2);
    assert_eq!(off.open_at_end, 0);
    // Preempted 10.0105 → 10.011: waiting for a CPU, apart.
    assert_eq!(off.waiting_us, 500);
    assert_eq!(off.stacks.len(), 1);
    let names: Vec<&str> = off.stacks[0].frames.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names, ["main", "wait_for_io", "do_nanosleep", "__schedule"]);
    assert_eq!(off.span_us, 16_000);
}

#[test]
fn the_report_gives_shares_of_the_wall_clock_profile() {
    let mut p = Profile::from_script(PER_TASK);
    p.frequency = Some(1000);
    let o = ReportOptions {
        comm: Some("prog".into()),
        ..ReportOptions::default()
    };
    let r = p.off_cpu_report(&o).unwrap();
    // 3 samples of prog at 1 ms, 10 ms blocked.
    assert_eq!(r.on_cpu_ms, 3.0);
    assert_eq!(r.off_cpu_ms, 10.0);
    assert!((r.off_cpu_pct - 100.0 * 10.0 / 13.0).abs() < 1e-9);
    let fns: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
    // User frames only, inclusive: main and wait_for_io both hold all of it.
    assert_eq!(fns, ["main", "wait_for_io"]);
    assert_eq!(
        r.stacks[0].stack,
        "prog;main;wait_for_io;do_nanosleep;__schedule"
    );
    assert!((r.waiting_ms - 0.5).abs() < 1e-9);
}

#[test]
fn wall_folded_weights_both_sides_in_microseconds() {
    let mut p = Profile::from_script(PER_TASK);
    p.frequency = Some(1000);
    let folded = p.wall_folded(&ReportOptions::default()).unwrap();
    assert_eq!(
        folded,
        "other;spin 1000\n\
         prog;main;compute 3000\n\
         prog;main;wait_for_io;do_nanosleep;__schedule;[off-cpu] 10000\n"
    );
    // The plain folded stacks stay samples, on-CPU only.
    assert!(!p.folded().contains(OFF_CPU_FRAME));
    let svg = String::from_utf8(p.flamegraph_svg().unwrap()).unwrap();
    assert!(
        svg.contains("wait_for_io (off-cpu)"),
        "off-CPU frames are named apart"
    );
    assert!(svg.contains("wall clock"));
}

#[test]
fn system_wide_switch_ins_come_from_next_pid_and_exits_open_nothing() {
    let text = "\
a 5/5 [000] 1.000000: sched:sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=D ==> next_comm=b next_pid=6 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])
\tffffffff821fb643 io_schedule+0x23 ([kernel.kallsyms])

b 6/6 [000] 1.003000: sched:sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=X ==> next_comm=a next_pid=5 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])

swapper 0/0 [001] 1.004000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=9 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])

c 9/9 [001] 1.005000: sched:sched_switch: prev_comm=c prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])

a 5/5 [000] 1.009000: cpu-clock: 
\t    1186 f+0x3d (/tmp/a)
";
    let p = Profile::from_script(text);
    let off = p.off_cpu.unwrap();
    // a: 1.000 → 1.003 (next_pid=5); b exits; idle opens nothing; c open at the end
    // (1.005 → 1.009).
    assert_eq!(off.total_us(), 3_000 + 4_000);
    assert_eq!((off.intervals, off.open_at_end), (2, 1));
    assert_eq!(off.waiting_us, 0);
}

#[test]
fn a_profile_without_switches_has_no_off_cpu_side() {
    let p = Profile::from_script("prog 1/1 [000] 1.0: cpu-clock: \n\t    1186 f+0x3d (/tmp/a)\n");
    assert!(p.off_cpu.is_none());
    assert!(p.off_cpu_report(&ReportOptions::default()).is_none());
    assert!(p.wall_folded(&ReportOptions::default()).is_none());
}

#[test]
fn the_sampling_frequency_moves_into_the_event_so_every_switch_is_kept() {
    let mut spec = ProfileSpec {
        target: Target::Command(vec!["x".into()]),
        off_cpu: true,
        ..ProfileSpec::default()
    };
    let base = |e: &str| -> Vec<String> {
        ["-q", "-e", e, "-F", "999", "--sample-cpu", "-g"]
            .map(String::from)
            .to_vec()
    };
    let mut args = base("cpu-clock");
    add_record_args(&spec, &mut args);
    assert_eq!(
        args,
        [
            "-q",
            "-e",
            "cpu-clock/freq=999,name=cpu-clock/",
            "--sample-cpu",
            "-g",
            "-e",
            "sched:sched_switch",
            "--switch-events"
        ]
    );
    spec.target = Target::System;
    let mut args = base("cycles");
    add_record_args(&spec, &mut args);
    assert!(!args.contains(&"--switch-events".to_string()));
    spec.off_cpu = false;
    let mut args = base("cycles");
    add_record_args(&spec, &mut args);
    assert_eq!(args, base("cycles"));
}

#[test]
fn perf_refusing_the_tracepoint_names_the_fix() {
    let no_tracefs = "event syntax error: 'sched:sched_switch'\n  \\___ unknown tracepoint\n\n\
                      Error:\tUnable to find debugfs/tracefs\nHint:\tWas your kernel compiled...\n";
    let e = crate::perf::classify_failure("perf record", "exit status: 129", no_tracefs);
    assert!(
        matches!(e, ProfileError::TracepointsUnavailable { .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("Unable to find debugfs/tracefs"), "{msg}");
    assert!(
        msg.contains("mount -t tracefs nodev /sys/kernel/tracing"),
        "{msg}"
    );
    // perf's "No permissions to read" is about tracefs here, not perf_event_paranoid.
    let unreadable = "event syntax error: 'sched:sched_switch'\n  \\___ can't access trace events\n\n\
                      Error:\tNo permissions to read /sys/kernel/tracing/events/sched/sched_switch\n";
    let e = crate::perf::classify_failure("perf record", "exit status: 129", unreadable);
    assert!(
        matches!(e, ProfileError::TracepointsUnavailable { .. }),
        "{e}"
    );
    assert!(tracepoint_failure("Error:\nfile is corrupt\n").is_none());
}

#[test]
fn a_malformed_switch_is_skipped_and_time_never_runs_backwards() {
    let text = "\
a 5/5 [000] 2.000000: sched:sched_switch: prev_comm=a prev_state=S ==> next_comm=b
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])

a 5/5 [000] 2.000000: sched:sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=b next_pid=6 next_prio=120
\tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])

a 5/5 [001] 1.000000: cpu-clock: 
\t    1186 f+0x3d (/tmp/a)
";
    let off = Profile::from_script(text).off_cpu.unwrap();
    // The first switch lacks prev_pid and next_pid: not counted, nothing opened.
    assert_eq!(off.switches, 1);
    // A sample stamped before the switch-out closes the interval at zero length.
    assert_eq!((off.total_us(), off.intervals), (0, 1));
}
