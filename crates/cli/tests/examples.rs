//! Every shipped example experiment checks out (`perflab run FILE --dry-run`).

mod common;
use common::*;

#[test]
fn every_example_checks_out() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let lab = Lab::new();
            let out = lab.run(&["run", p.to_str().unwrap(), "--dry-run"]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}: {}",
                p.display(),
                stderr(&out)
            );
            n += 1;
        }
    }
    assert!(n >= 3, "examples found: {n}");
}
