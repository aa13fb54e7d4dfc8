//! `perflab worker`, the far end of a remote trial: it reads one [`TrialSpec`] as a
//! JSON line on stdin, runs it with the same workloads the runner uses, and writes
//! [`Event`]s as JSON lines on stdout — `started` (its clock, for the controller's
//! offset estimate), then `measurement` or `error` — and exits. (A first line that is
//! a session request instead starts a session: [`crate::session`]; `"agent"` makes it
//! an agent of a distributed load: [`crate::agent`].) When its stdin closes
//! before the trial ends (the controller was interrupted, or the ssh session died) it
//! interrupts the trial, which stops what it started, and exits: no pty, no SIGHUP, no
//! orphan.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use perflab_workloads::spec::{TrialSpec, WorkloadFactory};
use perflab_workloads::{TrialContext, WorkloadError};

use crate::wire::{now_ns, Event};

fn send(out: &mut impl Write, e: &Event) -> std::io::Result<()> {
    let mut line = serde_json::to_string(e).map_err(std::io::Error::other)?;
    line.push('\n');
    out.write_all(line.as_bytes())?;
    out.flush()
}

/// Serves one trial: reads its spec from `input`, runs it, answers on `out`. Returns
/// the process's exit status: 0 when a measurement was sent, 1 otherwise.
pub fn serve(
    mut input: impl BufRead + Send + 'static,
    mut out: impl Write,
    factory: &dyn WorkloadFactory,
    host: serde_json::Value,
    scratch: &std::path::Path,
) -> i32 {
    let mut line = String::new();
    let read = input.read_line(&mut line);
    // A session request instead of a trial: the service under test (and its monitor)
    // on this host, for a workload that runs elsewhere.
    if let Ok(req) = serde_json::from_str::<crate::wire::Request>(&line) {
        return crate::session::serve(req, input, out, scratch);
    }
    // An agent of a distributed load (`perflab http --agents`): crate::agent.
    if let Ok(crate::wire::Order::Agent) = serde_json::from_str(&line) {
        return crate::agent::serve(input, out, host);
    }
    let spec: Result<TrialSpec, String> = match read {
        Ok(0) => Err("stdin closed before a trial spec came".into()),
        Ok(_) => serde_json::from_str(&line).map_err(|e| format!("the trial spec: {e}")),
        Err(e) => Err(format!("reading the trial spec: {e}")),
    };
    let spec = match spec {
        Ok(s) => s,
        Err(message) => {
            let _ = send(
                &mut out,
                &Event::Error {
                    kind: "setup".into(),
                    message,
                    partial: None,
                },
            );
            return 1;
        }
    };
    let interrupted = interrupted_at_eof(input);
    let _ = send(
        &mut out,
        &Event::Started {
            unix_ns: now_ns(),
            perflab: env!("CARGO_PKG_VERSION").into(),
            host,
        },
    );
    let result = run_trial(&spec, factory, interrupted, scratch);
    let ok = result.is_ok();
    let sent = send(&mut out, &Event::of(result));
    if ok && sent.is_ok() {
        0
    } else {
        1
    }
}

/// A flag set when `input` ends: the rest of stdin is only ever its end (the
/// controller is gone, or hung up).
fn interrupted_at_eof(mut input: impl BufRead + Send + 'static) -> Arc<AtomicBool> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        loop {
            sink.clear();
            match input.read_until(b'\n', &mut sink) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        flag.store(true, Ordering::SeqCst);
    });
    interrupted
}

/// Runs the trial in a scratch directory of its own, removed after.
fn run_trial(
    spec: &TrialSpec,
    factory: &dyn WorkloadFactory,
    interrupted: Arc<AtomicBool>,
    scratch: &std::path::Path,
) -> Result<perflab_workloads::Measurement, WorkloadError> {
    // One trial per worker process, but pipe links (crate::pipe) run several workers
    // in one process: a counter keeps their directories apart.
    static TRIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = TRIALS.fetch_add(1, Ordering::SeqCst);
    let run_dir = scratch.join(format!("trial-{}-{n}", std::process::id()));
    let result = (|| {
        std::fs::create_dir_all(&run_dir)
            .map_err(|e| WorkloadError::Setup(format!("{}: {e}", run_dir.display())))?;
        let ctx = TrialContext {
            cpus: spec.cpu_set()?,
            timeout: spec.timeout(),
            interrupted,
            run_dir: run_dir.clone(),
            attach: None,
            jit: spec.jit(),
        };
        factory.build(spec)?.run(&ctx)
    })();
    let _ = std::fs::remove_dir_all(&run_dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use perflab_workloads::spec::{Attachments, KindSpec};
    use perflab_workloads::{Measurement, MetricValue, Workload};
    use std::time::Duration;

    struct Fake;
    struct Sleepy;
    impl Workload for Sleepy {
        fn run(&self, ctx: &TrialContext) -> Result<Measurement, WorkloadError> {
            // 60 s unless interrupted: far beyond the bound below, however busy the
            // machine.
            for _ in 0..6000 {
                if ctx.interrupted.load(Ordering::SeqCst) {
                    return Err(WorkloadError::Interrupted);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(Measurement::default())
        }
    }
    impl WorkloadFactory for Fake {
        fn build(&self, t: &TrialSpec) -> Result<Box<dyn Workload>, WorkloadError> {
            if t.repetition == 9 {
                return Ok(Box::new(Sleepy));
            }
            struct One;
            impl Workload for One {
                fn run(&self, _: &TrialContext) -> Result<Measurement, WorkloadError> {
                    Ok(Measurement {
                        metrics: vec![MetricValue::new("x", "s", 1.5, "lower")],
                        ..Default::default()
                    })
                }
            }
            Ok(Box::new(One))
        }
    }

    fn spec(repetition: u32) -> String {
        let t = TrialSpec {
            workload: KindSpec::Command(Default::default()),
            params: Default::default(),
            repetition,
            ordinal: 1,
            warmup: false,
            cpus: None,
            timeout_s: None,
            attachments: Attachments::default(),
        };
        serde_json::to_string(&t).unwrap() + "\n"
    }

    fn events(out: &[u8]) -> Vec<Event> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_spec_in_a_measurement_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        let input = std::io::Cursor::new(spec(1).into_bytes());
        let code = serve(
            input,
            &mut out,
            &Fake,
            serde_json::json!({"hostname": "w"}),
            dir.path(),
        );
        assert_eq!(code, 0);
        let ev = events(&out);
        assert!(matches!(&ev[0], Event::Started { host, .. } if host["hostname"] == "w"));
        let m = ev[1].clone().into_result().unwrap().unwrap();
        assert_eq!(m.metrics[0].value, 1.5);
    }

    #[test]
    fn a_closed_stdin_interrupts_the_trial() {
        // The spec, then the end of stdin while the trial runs: interrupted, quickly.
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        let input = std::io::Cursor::new(spec(9).into_bytes());
        let t = std::time::Instant::now();
        let code = serve(input, &mut out, &Fake, serde_json::Value::Null, dir.path());
        assert_eq!(code, 1);
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        let last = events(&out).pop().unwrap().into_result().unwrap();
        assert!(matches!(last, Err(WorkloadError::Interrupted)));
    }

    #[test]
    fn a_bad_spec_is_an_error_event() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        let input = std::io::Cursor::new(b"{not json\n".to_vec());
        assert_eq!(
            serve(input, &mut out, &Fake, serde_json::Value::Null, dir.path()),
            1
        );
        let e = events(&out)
            .pop()
            .unwrap()
            .into_result()
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("trial spec"), "{e}");
    }
}
