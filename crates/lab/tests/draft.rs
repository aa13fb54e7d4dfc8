//! Experiments built as values (`Draft`): serialised to the experiment file and read
//! back by the parser, they are what was built; a misnamed option is an error of the
//! build, not of the run.

use std::path::Path;

use perflab_lab::experiment::{Draft, DraftError, Experiment, Order, Repetitions, WorkloadSpec};
use perflab_workloads::mem::MemSpec;
use perflab_workloads::net::NetSpec;
use perflab_workloads::spec::Kind;

fn mem() -> MemSpec {
    MemSpec {
        op: "copy".into(),
        block: "4K".parse().unwrap(),
        threads: 1,
        min_time: 0.05,
    }
}

#[test]
fn a_draft_reads_back_as_it_was_built() {
    let d = Draft::new("mem", Kind::Mem, &mem())
        .and_then(|d| d.vary("block", vec!["4K", "1M"]))
        .and_then(|d| d.vary("op", vec!["copy", "read", "write"]))
        .unwrap();
    let d = Draft {
        repetitions: Some(Repetitions::Auto {
            min: 3,
            max: 9,
            target: 0.05,
        }),
        warmup: Some(0),
        order: Some(Order::Random),
        noise_check: Some(false),
        description: Some("a \"quoted\" {brace}\nline".into()),
        timeout: Some("30s".into()),
        ..d
    };
    let text = d.to_toml().unwrap();
    let e = Experiment::parse(Path::new("m.toml"), &text).unwrap();
    assert_eq!(e.text, text);
    assert_eq!(e.name, "mem");
    assert_eq!(e.description, d.description);
    assert_eq!(e.repetitions, d.repetitions.clone().unwrap());
    assert_eq!(
        (e.warmup, e.order, e.noise_check),
        (0, Order::Random, false)
    );
    // The matrix keeps the order it was built in: block varies slowest.
    let names: Vec<&str> = e.matrix.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["block", "op"]);
    assert_eq!(e.config_count(), 6);
    let WorkloadSpec::Options { kind, table } = &e.workload else {
        panic!("{text}")
    };
    assert_eq!(*kind, Kind::Mem);
    assert_eq!(table, &d.options);
    assert_eq!(table["block"].as_str(), Some("{block}"));
}

#[test]
fn options_left_unset_are_left_out() {
    let spec = NetSpec {
        mode: "rr".into(),
        peer: None,
        streams: 1,
        duration: 1.0,
        size: 64,
    };
    let d = Draft::new("net", Kind::Net, &spec).unwrap();
    let text = d.to_toml().unwrap();
    assert!(!text.contains("peer"), "{text}");
    assert!(!text.contains("[matrix]"), "{text}");
    d.check(Path::new("n.toml")).unwrap();
}

#[test]
fn varying_an_option_the_kind_lacks_is_an_error_of_the_build() {
    let e = Draft::new("mem", Kind::Mem, &mem())
        .and_then(|d| d.vary("blok", vec!["4K"]))
        .unwrap_err();
    assert!(matches!(e, DraftError::NoSuchOption { .. }), "{e}");
    assert!(e.to_string().contains("blok"), "{e}");
}

#[test]
fn a_draft_the_parser_refuses_says_where() {
    let d = Draft::new("mem", Kind::Mem, &mem())
        .unwrap()
        .option("threads", "two");
    let e = d.check(Path::new("m.toml")).unwrap_err();
    assert!(matches!(e, DraftError::File(_)), "{e}");
    assert!(e.to_string().contains("`threads`"), "{e}");
}
