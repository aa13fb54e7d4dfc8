//! The far end of a distributed load (`perflab http URL --agents a,b`): `perflab
//! worker` whose first line is [`Order::Agent`] becomes an *agent*, which runs one
//! segment of the load with the same engine a local `perflab http` uses.
//!
//! The conversation, one JSON value per line each way (the controller's side is
//! [`crate::agents`]):
//!
//! 1. `"agent"` → [`Said::Hello`]: this host's clock (for the controller's offset
//!    estimate) and its facts (its cores weigh its share of the load);
//! 2. `{"spec": TABLE}` (this agent's segment, `LoadSpec`'s table form) → the spec is
//!    checked — URLs resolved, requests serialised, nothing sent — and [`Said::Armed`]
//!    (or [`Said::Failed`], and the agent exits). Under Slurm every task reads the same
//!    stdin (`srun --input=all`), so the controller cannot address one: it broadcasts
//!    `{"share": {"spec": TABLE, "tasks": [...], "weights": [...]}}` — the whole load,
//!    the task ids that take part and their weights — and each task computes the same
//!    split and takes its own segment by its `SLURM_PROCID` ([`segment_of`]);
//! 3. `"go"` — the barrier: every agent got its spec and armed before any starts →
//!    [`Said::Running`] with this host's clock at the start, then one [`Said::Second`]
//!    per recorded second (its interval histogram, compressed V2 in base64), then
//!    [`Said::Report`]: the engine's report and its whole latency histograms.
//!
//! The end of stdin at any point stops the agent: before `go` it exits, during the run
//! it sets the engine's stop flag (the load ends within milliseconds, what ran is
//! reported) — so a controller's Ctrl-C or a dropped connection leaves nothing behind
//! (no pty: no SIGHUP is needed).

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::wire::{now_ns, Order, Said, Task};
use perflab_load::{encode_histogram, LoadSpec, Observer, SecondPoint};

/// Task `task`'s segment of the whole load `spec` shared by `weights` among `tasks`
/// (the same split the controller made: [`crate::agents::segments`]); None when the
/// task takes no part (it was lost before the split).
pub fn segment_of(
    task: usize,
    spec: &LoadSpec,
    tasks: &[usize],
    weights: &[f64],
) -> Result<Option<LoadSpec>, String> {
    if tasks.len() != weights.len() {
        return Err(format!(
            "{} tasks but {} weights in the share",
            tasks.len(),
            weights.len()
        ));
    }
    let Some(at) = tasks.iter().position(|t| *t == task) else {
        return Ok(None);
    };
    let mut segs = crate::agents::segments(spec, weights).map_err(String::from)?;
    Ok(Some(segs.swap_remove(at)))
}

/// Writes one line; false when nobody listens any more.
fn say(out: &mut impl Write, s: &Said) -> bool {
    let Ok(mut line) = serde_json::to_string(s) else {
        return false;
    };
    line.push('\n');
    out.write_all(line.as_bytes())
        .and_then(|_| out.flush())
        .is_ok()
}

/// Says why the segment cannot run; the exit status (1).
fn fail(out: &mut impl Write, message: String) -> i32 {
    say(out, &Said::Failed { message });
    1
}

/// Reads the next order; `None` at the end of stdin (or a line that is not one).
fn next(input: &mut impl BufRead) -> Option<Result<Order, String>> {
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) if line.trim().is_empty() => continue,
            Ok(_) => {
                return Some(
                    serde_json::from_str(&line).map_err(|e| format!("not an agent order: {e}")),
                )
            }
        }
    }
}

/// Streams each recorded second's histogram to the controller.
struct Stream<'a, W: Write> {
    out: &'a mut W,
}

impl<W: Write> Observer for Stream<'_, W> {
    fn interval(&mut self, point: &SecondPoint, hist: &hdrhistogram::Histogram<u64>) {
        say(
            self.out,
            &Said::Second {
                second: point.second,
                histogram: encode_histogram(hist),
            },
        );
    }
}

/// Serves an agent whose first order ([`Order::Agent`]) was read; returns the exit
/// status: 0 when a report was sent (or the controller ended the conversation before
/// `go`), 1 when the segment could not run.
pub fn serve(
    mut input: impl BufRead + Send + 'static,
    mut out: impl Write,
    host: serde_json::Value,
) -> i32 {
    let cores = host.get("cores").and_then(|c| c.as_u64()).map(|c| c as u32);
    let task = Task::from_env(|k| std::env::var(k).ok());
    if !say(
        &mut out,
        &Said::Hello {
            unix_ns: now_ns(),
            cores,
            host,
            task: task.clone(),
        },
    ) {
        return 1;
    }
    let read = |table: serde_json::Value| -> Result<LoadSpec, String> {
        serde_json::from_value(table).map_err(|e| format!("the segment's spec: {e}"))
    };
    let order = next(&mut input);
    let received_ns = now_ns();
    let segment = match order {
        None => return 0,
        Some(Ok(Order::Spec(table))) => read(table).map(Some),
        Some(Ok(Order::Share {
            spec,
            tasks,
            weights,
        })) => match &task {
            None => Err("a shared load needs SLURM_PROCID and SLURM_NTASKS (srun)".into()),
            Some(t) => read(spec).and_then(|s| segment_of(t.id, &s, &tasks, &weights)),
        },
        Some(Ok(o)) => return fail(&mut out, format!("expected a spec, got {o:?}")),
        Some(Err(e)) => return fail(&mut out, e),
    };
    let (spec, checked) = match segment {
        // Left out of the split (lost before it): nothing to run.
        Ok(None) => return 0,
        Ok(Some(spec)) => match perflab_load::check(&spec) {
            Ok(c) => (spec, c),
            Err(e) => return fail(&mut out, e.to_string()),
        },
        Err(e) => return fail(&mut out, e),
    };
    let armed = Said::Armed {
        received_ns: Some(received_ns),
        unix_ns: Some(now_ns()),
    };
    if !say(&mut out, &armed) {
        return 1;
    }
    match next(&mut input) {
        None => return 0,
        Some(Ok(Order::Go)) => {}
        Some(Ok(o)) => return fail(&mut out, format!("expected go, got {o:?}")),
        Some(Err(e)) => return fail(&mut out, e),
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        // From now on stdin only ever brings its end: the controller stops us, or is gone.
        let flag = stop.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            while matches!(input.read_until(b'\n', &mut sink), Ok(n) if n > 0) {
                sink.clear();
            }
            flag.store(true, Ordering::SeqCst);
        });
    }
    say(&mut out, &Said::Running { unix_ns: now_ns() });
    let result = perflab_load::run_until(&spec, &checked, &mut Stream { out: &mut out }, stop);
    let said = match result.map_err(|e| e.to_string()).and_then(|r| {
        Ok(Said::Report {
            report: serde_json::to_value(&r).map_err(|e| e.to_string())?,
            histogram: encode_histogram(r.histogram()),
            histogram_uncorrected: r.histogram_uncorrected().map(encode_histogram),
        })
    }) {
        Ok(s) => s,
        Err(message) => Said::Failed { message },
    };
    let ok = matches!(said, Said::Report { .. });
    if say(&mut out, &said) && ok {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(out: &[u8]) -> Vec<Said> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn the_end_of_stdin_before_go_ends_the_agent() {
        let spec = LoadSpec::new("http://127.0.0.1:9/").to_table().unwrap();
        let input = serde_json::to_string(&Order::Spec(spec)).unwrap() + "\n";
        let mut out = Vec::new();
        let code = serve(
            std::io::Cursor::new(input.into_bytes()),
            &mut out,
            serde_json::json!({"cores": 3}),
        );
        assert_eq!(code, 0);
        let said = lines(&out);
        assert!(
            matches!(said[0], Said::Hello { cores: Some(3), .. }),
            "{said:?}"
        );
        assert!(
            matches!(said[1], Said::Armed { received_ns: Some(r), unix_ns: Some(u) } if r <= u),
            "{said:?}"
        );
        assert_eq!(said.len(), 2);
    }

    #[test]
    fn a_bad_segment_is_a_failed_line() {
        let input = "{\"spec\": {\"urls\": [\"ftp://x/\"]}}\n";
        let mut out = Vec::new();
        let code = serve(
            std::io::Cursor::new(input.as_bytes().to_vec()),
            &mut out,
            serde_json::Value::Null,
        );
        assert_eq!(code, 1);
        let said = lines(&out);
        assert!(
            matches!(&said[1], Said::Failed { message } if message.contains("ftp")),
            "{said:?}"
        );
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_task_comes_from_slurms_environment() {
        let t = Task::from_env(env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURMD_NODENAME", "n2"),
        ]));
        assert_eq!(
            t,
            Some(Task {
                id: 1,
                count: 2,
                node: Some("n2".into())
            })
        );
        assert_eq!(Task::from_env(env(&[("SLURM_PROCID", "0")])), None);
        assert_eq!(
            Task::from_env(env(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "2")])),
            None
        );
        assert_eq!(Task::from_env(env(&[])), None);
    }

    #[test]
    fn each_task_takes_its_own_segment_of_the_share() {
        let mut spec = LoadSpec::new("http://127.0.0.1:9/");
        spec.connections = 4;
        spec.requests = Some(2001);
        // Tasks 0, 1, 2 took part; the segments add up and follow the weights.
        let (tasks, weights) = ([0, 1, 2], [1.0, 1.0, 2.0]);
        let segs: Vec<LoadSpec> = (0..3)
            .map(|t| segment_of(t, &spec, &tasks, &weights).unwrap().unwrap())
            .collect();
        assert_eq!(segs.iter().map(|s| s.requests.unwrap()).sum::<u64>(), 2001);
        assert_eq!(segs.iter().map(|s| s.connections).sum::<usize>(), 4);
        assert_eq!(segs[2].connections, 2);
        // The controller's split, exactly.
        let want = crate::agents::segments(&spec, &weights).unwrap();
        for (a, b) in segs.iter().zip(&want) {
            assert_eq!((a.requests, a.connections), (b.requests, b.connections));
        }
        // A task lost before the split (1 here) takes no part; the others share all.
        assert!(segment_of(1, &spec, &[0, 2], &[1.0, 1.0])
            .unwrap()
            .is_none());
        let s0 = segment_of(0, &spec, &[0, 2], &[1.0, 1.0]).unwrap().unwrap();
        let s2 = segment_of(2, &spec, &[0, 2], &[1.0, 1.0]).unwrap().unwrap();
        assert_eq!(s0.requests.unwrap() + s2.requests.unwrap(), 2001);
        assert!(segment_of(0, &spec, &[0], &[1.0, 2.0]).is_err());
    }

    #[test]
    fn orders_are_one_json_value_per_line() {
        assert_eq!(serde_json::to_string(&Order::Agent).unwrap(), "\"agent\"");
        assert_eq!(serde_json::to_string(&Order::Go).unwrap(), "\"go\"");
    }
}
