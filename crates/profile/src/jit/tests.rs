//! The jit module's unit tests.

use super::*;
use crate::script::Frame;

#[test]
fn flags_are_appended_to_what_the_user_set_never_replacing_it() {
    assert_eq!(appended(None, NODE_FLAGS), "--perf-basic-prof");
    assert_eq!(
        appended(Some("-Xmx1g"), JAVA_FLAGS),
        format!("-Xmx1g {JAVA_FLAGS}")
    );
    // Turned off by the user: left off.
    assert_eq!(
        appended(Some("-XX:-PreserveFramePointer"), JAVA_FLAGS),
        "-XX:-PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit"
    );
    // Already there: not twice.
    assert_eq!(
        appended(
            Some("--perf-basic-prof --max-old-space-size=64"),
            NODE_FLAGS
        ),
        "--perf-basic-prof --max-old-space-size=64"
    );
    let mut cmd = Command::new("true");
    cmd.env("JAVA_TOOL_OPTIONS", "-Dx=1");
    inject_env(&mut cmd);
    let env: BTreeMap<String, String> = cmd
        .get_envs()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.unwrap_or_default().to_string_lossy().into_owned(),
            )
        })
        .collect();
    assert_eq!(env["JAVA_TOOL_OPTIONS"], format!("-Dx=1 {JAVA_FLAGS}"));
    assert!(env["NODE_OPTIONS"].ends_with("--perf-basic-prof"));
}

#[test]
fn map_names_are_made_readable() {
    assert_eq!(
        pretty("void Scimark.sorExecute(int, int, double, double[][], long)"),
        "Scimark.sorExecute"
    );
    assert_eq!(
        pretty("java.lang.Object java.lang.invoke.MethodHandle.linkToStatic(java.lang.Object)"),
        "java.lang.invoke.MethodHandle.linkToStatic"
    );
    assert_eq!(pretty("StubRoutines (2)"), "StubRoutines");
    assert_eq!(pretty("Interpreter"), "Interpreter");
    assert_eq!(pretty("I2C/C2I adapters"), "I2C/C2I adapters");
    assert_eq!(
        pretty("JS:*hotLoop /tmp/x/hot.js:1:17"),
        "hotLoop (hot.js:1)"
    );
    assert_eq!(
        pretty("LazyCompile:~sorExecute /k/scimark.js:170"),
        "sorExecute (scimark.js:170)"
    );
    assert_eq!(pretty("JS:~ /k/a.js:3:1"), "(anonymous) (a.js:3)");
    assert_eq!(pretty("Builtin:CallFunction"), "Builtin:CallFunction");
}

#[test]
fn a_map_resolves_addresses_the_last_writer_winning() {
    let m = PerfMap::parse(
        "0x00007f0000001000 0x0000000000000100 void A.a()\n\
         garbage line\n\
         7f0000001080 40 B.b\n\
         0x00007f0000002000 0x10 Interpreter\n",
    );
    assert_eq!(m.lookup(0x7f00_0000_1010), Some("void A.a()"));
    assert_eq!(m.lookup(0x7f00_0000_1090), Some("B.b"));
    assert_eq!(m.lookup(0x7f00_0000_10f0), Some("void A.a()"));
    assert_eq!(m.lookup(0x7f00_0000_2010), None);
    assert_eq!(m.lookup(0x10), None);
}

#[test]
fn kept_maps_name_the_frames_perf_left_unnamed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("perf-77.map"), "1000 100 int K.run(int)\n").unwrap();
    let frame = |ip, dso: &str| Frame {
        ip,
        sym: None,
        dso: dso.into(),
        offset: None,
    };
    let mut s = vec![Sample {
        comm: "java".into(),
        pid: 77,
        tid: 78,
        cpu: None,
        time: None,
        event: "cpu-clock".into(),
        trace: None,
        frames: vec![
            frame(0x1010, "/tmp/perf-77.map"),
            frame(0x5000, "/tmp/perf-77.map"),
            frame(0x1010, "/usr/lib/libc.so.6"),
        ],
    }];
    assert_eq!(resolve(&mut s, dir.path()), 1);
    assert_eq!(s[0].frames[0].sym.as_deref(), Some("K.run"));
    assert_eq!(s[0].frames[1].sym, None);
    assert_eq!(s[0].frames[2].sym, None);
}

#[test]
fn only_maps_perflab_caused_are_moved_others_are_copied() {
    let dir = tempfile::tempdir().unwrap();
    // Two pids of this test's own making, far above pid_max's default.
    let (ours, theirs) = (4_000_001, 4_000_002);
    for p in [ours, theirs] {
        std::fs::write(map_path(p), "1000 10 X.y\n").unwrap();
    }
    let sample = |pid| Sample {
        comm: "java".into(),
        pid,
        tid: pid,
        cpu: None,
        time: None,
        event: "cpu-clock".into(),
        trace: None,
        frames: vec![],
    };
    started(ours, Runtime::Java);
    let claim = Claim {
        all_ours: false,
        dumped: None,
        since: SystemTime::now() - Duration::from_secs(60),
    };
    let info = keep_maps(&[sample(ours), sample(theirs)], &claim, dir.path());
    let moved = !map_path(ours).exists();
    let left = map_path(theirs).exists();
    let _ = std::fs::remove_file(map_path(ours));
    let _ = std::fs::remove_file(map_path(theirs));
    assert!(moved, "perflab's map is moved out of /tmp");
    assert!(left, "someone else's map stays in /tmp");
    assert_eq!(info.maps.len(), 2);
    assert_eq!(info.java.as_deref(), Some(JAVA_FLAGS));
    assert_eq!(info.node, None);
    assert_eq!(
        info.header().unwrap(),
        format!("jit: java {JAVA_FLAGS} · 2 perf maps kept")
    );
    assert_eq!(JitInfo::default().header(), None);
    assert!(dir.path().join(format!("perf-{theirs}.map")).exists());
}

#[test]
fn a_map_older_than_the_recording_is_not_taken_for_perflabs() {
    let dir = tempfile::tempdir().unwrap();
    // A pid of this test's own making; its map is older than the recording (a
    // process that had the pid before).
    let stale = 4_000_003;
    std::fs::write(map_path(stale), "1000 10 X.y\n").unwrap();
    started(stale, Runtime::Java);
    let claim = Claim {
        all_ours: true,
        dumped: Some(stale),
        since: SystemTime::now() + Duration::from_secs(60),
    };
    let sample = Sample {
        comm: "java".into(),
        pid: stale,
        tid: stale,
        cpu: None,
        time: None,
        event: "cpu-clock".into(),
        trace: None,
        frames: vec![],
    };
    keep_maps(&[sample], &claim, dir.path());
    let left = map_path(stale).exists();
    let _ = std::fs::remove_file(map_path(stale));
    assert!(left, "a stale map stays in /tmp");
    assert!(dir.path().join(format!("perf-{stale}.map")).exists());
}

/// A command under perf had both runtimes' flags in its environment, but the header
/// names only a runtime that ran: a C program's profile says nothing of Java or Node.
#[test]
fn only_a_runtime_that_ran_is_said_to_have_had_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let claim = Claim {
        all_ours: true,
        dumped: None,
        since: SystemTime::now(),
    };
    let sample = |comm: &str, dso: &str| Sample {
        comm: comm.into(),
        pid: 4_000_010,
        tid: 4_000_010,
        cpu: None,
        time: None,
        event: "cpu-clock".into(),
        trace: None,
        frames: vec![Frame {
            ip: 0x1010,
            sym: None,
            dso: dso.into(),
            offset: None,
        }],
    };
    let c = keep_maps(&[sample("spin", "/usr/bin/spin")], &claim, dir.path());
    assert_eq!((c.java.as_deref(), c.node.as_deref()), (None, None));
    assert_eq!(c.header(), None, "a C program's profile has no jit line");
    let jvm = sample(
        "C2 CompilerThre",
        "/usr/lib/jvm/java-17/lib/server/libjvm.so",
    );
    let j = keep_maps(&[sample("sh", "/usr/bin/dash"), jvm], &claim, dir.path());
    assert_eq!((j.java.as_deref(), j.node), (Some(JAVA_FLAGS), None));
    let n = keep_maps(&[sample("node", "/usr/bin/node")], &claim, dir.path());
    assert_eq!((n.java, n.node.as_deref()), (None, Some(NODE_FLAGS)));
}
