//! Two commands at once on one store (the brief's careless user): several `perflab run`s
//! started together on a store none of them has yet, and several `perflab import`s of
//! the same export, racing. Every run lands with all its trials; of the imports exactly
//! one lands and the others say the run is already there (exit 2) — none dies with
//! "database is locked".

mod common;
use common::*;

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

const TINY: &str = r#"
[experiment]
repetitions = 3
warmup = 0
noise_check = false
[workload]
kind = "command"
command = "true"
"#;

/// Children started together, killed by pid if the test ends before they do.
struct Together(Vec<Option<Child>>);

impl Together {
    fn start(lab: &Lab, n: usize, args: &[&str]) -> Together {
        Together(
            (0..n)
                .map(|_| {
                    let child = lab
                        .process()
                        .args(args)
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("start perflab");
                    Some(child)
                })
                .collect(),
        )
    }

    /// Every child's output, each waited for at most until `limit` from now.
    fn outputs(&mut self, limit: Duration) -> Vec<Output> {
        let end = Instant::now() + limit;
        let mut out = Vec::new();
        for slot in self.0.iter_mut() {
            let mut child = slot.take().unwrap();
            let left = end.saturating_duration_since(Instant::now());
            if !wait_until(left, || child.try_wait().unwrap().is_some()) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("a perflab started together with others did not finish");
            }
            out.push(child.wait_with_output().unwrap());
        }
        out
    }
}

impl Drop for Together {
    fn drop(&mut self) {
        for mut c in self.0.iter_mut().filter_map(Option::take) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Process start-up spreads the racers out, so each test races several fresh stores.
const ROUNDS: usize = 8;

#[test]
fn runs_started_together_on_a_new_store_all_land() {
    for round in 0..ROUNDS {
        let lab = Lab::new();
        let f = lab.write("tiny.toml", TINY);
        let outs = Together::start(&lab, 6, &["run", f.to_str().unwrap()])
            .outputs(Duration::from_secs(120));
        for o in &outs {
            assert_eq!(o.status.code(), Some(0), "round {round}: {}", stderr(o));
        }
        let runs = lab.json(&["runs", "--json"]);
        let runs = runs.as_array().unwrap();
        assert_eq!(runs.len(), 6, "{runs:?}");
        for r in runs {
            assert_eq!(r["status"], "complete", "{r}");
            assert_eq!(r["trials_ok"], 3, "{r}");
        }
    }
}

#[test]
fn imports_of_one_run_racing_land_it_once() {
    let a = Lab::new();
    let f = a.write("tiny.toml", TINY);
    assert_eq!(a.run(&["run", f.to_str().unwrap()]).status.code(), Some(0));
    let doc = a.path("run.json");
    let out = a.run(&["export", "1", "-o", doc.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    for round in 0..ROUNDS {
        let b = Lab::new();
        let outs = Together::start(&b, 6, &["import", doc.to_str().unwrap()])
            .outputs(Duration::from_secs(60));
        let all: Vec<String> = outs.iter().map(stderr).collect();
        let landed = outs.iter().filter(|o| o.status.code() == Some(0)).count();
        assert_eq!(landed, 1, "round {round}: {all:?}");
        for o in outs.iter().filter(|o| o.status.code() != Some(0)) {
            assert_eq!(o.status.code(), Some(2), "round {round}: {}", stderr(o));
            assert!(stderr(o).contains("is already in"), "{}", stderr(o));
        }
        let runs = b.json(&["runs", "--json"]);
        assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    }
}
