//! The rule of tests/require.rs, shown on the multi-host harness: with
//! `PERFLAB_REQUIRE=1` and no sshd on `PATH`, making hosts fails naming sshd and its
//! package; without the switch it gives None and the skip line says why. And the
//! programs the tests require are the ones `scripts/test.sh` installs.
//!
//! This file is its own test binary because it changes `PATH` and `PERFLAB_REQUIRE` of
//! the process: one `#[test]` does that, in order, and no other test here runs a
//! program.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::netns::Hosts;
use common::require;

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn without_sshd_a_multi_host_test_fails_under_the_switch_and_skips_without() {
    let empty = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Edition 2021: `set_var` is safe; this is the only test of this binary that reads
    // the environment (see the module doc).
    std::env::set_var("PATH", empty.path());

    std::env::set_var(require::SWITCH, "1");
    let under_ci = catch_unwind(AssertUnwindSafe(|| Hosts::bridged(dir.path(), 2)));
    let Err(e) = under_ci else {
        panic!("PERFLAB_REQUIRE=1 and no sshd must fail");
    };
    let message = panic_message(&*e);
    assert!(
        message.contains("`sshd`") && message.contains("openssh-server"),
        "the failure names sshd and its package: {message}"
    );
    assert!(message.contains("PERFLAB_REQUIRE"), "{message}");

    std::env::remove_var(require::SWITCH);
    let outside = catch_unwind(AssertUnwindSafe(|| Hosts::new(dir.path(), 1)));
    assert!(
        matches!(outside, Ok(None)),
        "without the switch the test skips"
    );
    let why = Hosts::make(dir.path(), 1, false).err().expect("no sshd");
    let line = require::verdict(false, &why).expect("a skip line");
    assert!(
        line.starts_with("skipped: `sshd` is not on PATH (Debian package: openssh-server)"),
        "{line}"
    );
}

#[test]
fn the_verdict_fails_under_the_switch_and_skips_without() {
    assert!(require::verdict(true, "x").is_err());
    assert!(require::verdict(false, "x")
        .unwrap()
        .starts_with("skipped: x"));
}

/// Each program a test requires is installed by scripts/test.sh, from the same package.
#[test]
fn scripts_test_sh_installs_every_required_program() {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/test.sh"
    ))
    .unwrap();
    for (program, package) in require::PACKAGES {
        let pair = format!("[{program}]={package}");
        assert!(
            script.contains(&pair),
            "scripts/test.sh lacks {pair} in its PKG table"
        );
    }
    assert!(
        script.contains("export PERFLAB_REQUIRE=1"),
        "scripts/test.sh sets the switch"
    );
}
