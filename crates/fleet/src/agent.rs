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
//!    (or [`Said::Failed`], and the agent exits);
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

use perflab_load::{encode_histogram, LoadSpec, Observer, SecondPoint};
use serde::{Deserialize, Serialize};

use crate::worker::now_ns;

/// What the controller sends an agent, one JSON value per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The first line: be an agent (answered with [`Said::Hello`]).
    Agent,
    /// This agent's segment, in `LoadSpec`'s table form (`LoadSpec::to_table`).
    Spec(serde_json::Value),
    /// The barrier is passed: start now.
    Go,
}

/// What an agent says, one JSON object per line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Said {
    /// This host's clock now, ns since the epoch, and its facts (`HostInfo`).
    Hello {
        unix_ns: u64,
        cores: Option<u32>,
        host: serde_json::Value,
    },
    /// The segment is checked and ready to start.
    Armed,
    /// The load starts now, by this host's clock.
    Running { unix_ns: u64 },
    /// One recorded second: its latency histogram (µs), compressed V2 in base64.
    Second { second: u64, histogram: String },
    /// The segment's result: the report (its JSON form) and its latency histograms.
    Report {
        report: serde_json::Value,
        histogram: String,
        #[serde(default)]
        histogram_uncorrected: Option<String>,
    },
    /// The segment could not run, and why.
    Failed { message: String },
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
    if !say(
        &mut out,
        &Said::Hello {
            unix_ns: now_ns(),
            cores,
            host,
        },
    ) {
        return 1;
    }
    let (spec, checked) = match next(&mut input) {
        None => return 0,
        Some(Ok(Order::Spec(table))) => {
            let spec: LoadSpec = match serde_json::from_value(table) {
                Ok(s) => s,
                Err(e) => return fail(&mut out, format!("the segment's spec: {e}")),
            };
            match perflab_load::check(&spec) {
                Ok(c) => (spec, c),
                Err(e) => return fail(&mut out, e.to_string()),
            }
        }
        Some(Ok(o)) => return fail(&mut out, format!("expected a spec, got {o:?}")),
        Some(Err(e)) => return fail(&mut out, e),
    };
    if !say(&mut out, &Said::Armed) {
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
        assert!(matches!(said[1], Said::Armed), "{said:?}");
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

    #[test]
    fn orders_are_one_json_value_per_line() {
        assert_eq!(serde_json::to_string(&Order::Agent).unwrap(), "\"agent\"");
        assert_eq!(serde_json::to_string(&Order::Go).unwrap(), "\"go\"");
    }
}
