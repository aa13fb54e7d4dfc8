//! `perflab bench --until-decided`: rounds are added until the wall-time comparison
//! with the first command is decided (paired ratio CI excludes 1, or lies within the
//! equivalence margin, with the repeated looks corrected) or the maximum is reached.
//! An A/A bench must never come out `slower` or `faster`.

mod common;
use common::*;

use serde_json::Value;

/// Benches measure time: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The wall-time comparison of the `--export-json` document.
fn wall(lab: &Lab, name: &str) -> Value {
    let text = std::fs::read_to_string(lab.path(name)).expect("export written");
    let doc: Value = serde_json::from_str(&text).expect("export is JSON");
    doc["comparison"]
        .as_array()
        .expect("comparison")
        .iter()
        .find(|c| c["metric"] == "wall_s")
        .expect("a wall_s comparison")
        .clone()
}

/// Rounds stored for each config of the lab's latest run.
fn rounds(lab: &Lab) -> Vec<usize> {
    let store = lab.open_store();
    let run = store.latest_run().unwrap();
    let trials = store.trials(run.id).unwrap();
    store
        .configs(run.id)
        .unwrap()
        .iter()
        .map(|c| trials.iter().filter(|t| t.config_id == c.id).count())
        .collect()
}

#[test]
fn an_a_a_bench_stops_within_its_maximum_and_is_never_slower_or_faster() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "--until-decided",
        "sleep 0.05",
        "sleep 0.05",
        "--export-json",
        "out.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (text, err) = (stdout(&out), stderr(&out));
    // Why it stopped, in words.
    assert!(
        err.contains("equivalent within 2 %")
            || err.contains("reached max_repetitions = 30, undecided"),
        "{err}"
    );
    let n = rounds(&lab);
    assert_eq!(n.len(), 2);
    assert!(n[0] == n[1] && (5..=30).contains(&n[0]), "{n:?}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("2: sleep 0.05"))
        .unwrap_or_else(|| panic!("no comparison row: {text}"));
    assert!(!row.contains("slower") && !row.contains("faster"), "{row}");
    let verdict = wall(&lab, "out.json")["verdict"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(verdict != "slower" && verdict != "faster", "{verdict}");
}

#[test]
fn a_clear_difference_is_decided_before_the_maximum() {
    let _one = serial();
    let lab = Lab::new();
    let out = lab.run(&[
        "bench",
        "--until-decided",
        "--equivalence",
        "1%",
        "sleep 0.01",
        "sleep 0.2",
        "--export-json",
        "out.json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("ratio CI excludes 1"), "{err}");
    let n = rounds(&lab);
    assert!(n[0] < 30, "{n:?}: {err}");
    assert_eq!(wall(&lab, "out.json")["verdict"], "slower");
}

#[test]
fn until_decided_refuses_a_fixed_count_a_bad_margin_and_one_command() {
    let lab = Lab::new();
    for args in [
        &["bench", "--until-decided", "-r", "5", "true", "true"][..],
        &[
            "bench",
            "--until-decided",
            "--equivalence",
            "150%",
            "true",
            "true",
        ],
        &["bench", "--equivalence", "2%", "true", "true"],
        &["bench", "--until-decided", "true"],
    ] {
        let out = lab.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}
