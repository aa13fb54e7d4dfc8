//! Human rendering of a [`Report`]: an aligned table with units (req/s, MB/s, ms),
//! failed requests named as everywhere else (HTTP errors and transport errors apart,
//! see [`crate::Failed`]),
//! the latency percentiles (corrected and, in open loop, uncorrected), the steps of a
//! ramp or knee search, the siege block and the warnings. Kept in the library so every
//! front end prints the same thing and tests can pin it.

use crate::report::{Latency, Mode, Report};
use std::fmt::Write;

/// The finer kinds inside the error counts, when there are any: requests stalled at
/// the end (inside `timeout`) and the HTTP/2 kinds.
fn h2_errors(r: &Report) -> String {
    let k = &r.error_kinds;
    let mut s = String::new();
    if k.stalled > 0 {
        let _ = write!(s, "; stalled at the end {}", k.stalled);
    }
    if k.rst_stream > 0 || k.goaway > 0 {
        let _ = write!(
            s,
            "; HTTP/2: RST_STREAM {}, refused by GOAWAY {}",
            k.rst_stream, k.goaway
        );
    }
    let bounds = [
        ("header block too large", k.header_block_too_large),
        ("output queue full", k.output_queue_full),
        ("FLOW_CONTROL_ERROR", k.flow_control),
    ];
    let bounds: Vec<String> = bounds
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{what} {n}"))
        .collect();
    if !bounds.is_empty() {
        let _ = write!(s, "; HTTP/2 bounds: {}", bounds.join(", "));
    }
    s
}

/// Renders `r` for a terminal.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    summary(&mut s, r);
    latency(&mut s, r);
    targets(&mut s, r);
    steps(&mut s, r);
    find_max(&mut s, r);
    let _ = writeln!(s);
    for line in r.siege.to_string().lines() {
        let _ = writeln!(s, "  {line}");
    }
    for w in &r.warnings {
        let _ = writeln!(s, "\nwarning: {w}");
    }
    s
}

/// One labelled line of the summary block.
fn row(s: &mut String, k: &str, v: String) {
    let _ = writeln!(s, "  {k:<18} {v}");
}

/// The summary block: mode, protocols, counts, rates, errors, client CPU.
fn summary(s: &mut String, r: &Report) {
    let mode = match r.mode {
        Mode::Closed => "closed loop".to_string(),
        Mode::Open => format!("open loop at {:.0} req/s", r.target_rate.unwrap_or(0.0)),
        Mode::Ramp => "ramp".to_string(),
        Mode::FindMax => format!("find-max, SLO {}", r.slo.as_deref().unwrap_or("")),
    };
    row(
        s,
        "Mode",
        format!(
            "{mode}, {} connections, {} thread{}, {}",
            r.connections,
            r.threads,
            if r.threads == 1 { "" } else { "s" },
            r.io.name()
        ),
    );
    if !r.protocols.is_empty() {
        let protocols: Vec<String> = r
            .protocols
            .iter()
            .map(|(p, n)| match p.as_str() {
                "h2" => format!("h2 ({n} connections, {} streams each)", r.streams),
                _ => format!("{p} ({n} connections)"),
            })
            .collect();
        row(s, "Protocol", protocols.join(", "));
    }
    row(s, "Requests", format!("{:>12}", r.requests));
    row(s, "Duration", format!("{:>12.2} s", r.duration_s));
    row(s, "Throughput", format!("{:>12.2} req/s", r.rps));
    if r.mode == Mode::Closed {
        row(
            s,
            "In flight",
            format!(
                "{:>12.2}   (effective concurrency: req/s × mean latency, {} clock)",
                r.effective_concurrency, r.latency_clock
            ),
        );
    }
    row(s, "Transfer", format!("{:>12.2} MB/s", r.mbps));
    failures(s, r);
    let status: Vec<String> = r.status.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    row(s, "Status", format!("{:>12}", status.join(", ")));
    if r.cancelled_at_end > 0 || r.late > 0 || r.reconnects > 0 {
        row(
            s,
            "Also",
            format!(
                "cancelled at end {}, late {}, reconnects {}",
                r.cancelled_at_end, r.late, r.reconnects
            ),
        );
    }
    row(
        s,
        "Client CPU",
        format!(
            "{:>12.2} µs/req   (threads {:.0} % busy)",
            r.client_cpu_per_req_us,
            r.client_busy * 100.0
        ),
    );
}

/// Failed requests, HTTP errors and transport errors apart, as the JSON's `failed`
/// names them; the transport errors by class, a connect failure by its kind
/// (`error_kinds`' names: refused, TLS).
fn failures(s: &mut String, r: &Report) {
    let f = &r.failed;
    row(
        s,
        "Failed requests",
        format!(
            "{:>12}   (HTTP errors {}, transport errors {})",
            f.requests, f.http_errors, f.transport_errors
        ),
    );
    let e = &r.errors;
    let k = &r.error_kinds;
    let connect = if e.connect > 0 {
        format!(
            "connect {} [refused {}, TLS {}]",
            e.connect, k.connect_refused, k.tls
        )
    } else {
        "connect 0".to_string()
    };
    row(
        s,
        "Transport errors",
        format!(
            "{:>12}   ({connect}, timeout {}, reset {}, malformed {}, closed {}){}",
            e.total,
            e.timeout,
            e.reset,
            e.malformed,
            e.closed,
            h2_errors(r)
        ),
    );
}

/// The latency table: corrected and, in open loop, uncorrected.
fn latency(s: &mut String, r: &Report) {
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "Latency (ms)", "mean", "sd", "p50", "p75", "p90", "p99", "p99.9", "p99.99", "max"
    );
    let label = if r.latency_uncorrected_ms.is_some() {
        "corrected"
    } else {
        ""
    };
    latency_row(s, label, &r.latency_ms);
    if let Some(u) = &r.latency_uncorrected_ms {
        latency_row(s, "uncorrected", u);
    }
    if let Some(g) = &r.generator_late_ms {
        latency_row(s, "generator late", g);
    }
}

/// The per-target table, when the run had several targets.
fn targets(s: &mut String, r: &Report) {
    if r.targets.is_empty() {
        return;
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  {:<28} {:>9} {:>11} {:>9} {:>9} {:>9} {:>11}  status",
        "Target", "requests", "req/s", "p50 ms", "p99 ms", "max ms", "HTTP errors"
    );
    for t in &r.targets {
        let status: Vec<String> = t.status.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let name: String = t.name.chars().take(28).collect();
        let _ = writeln!(
            s,
            "  {:<28} {:>9} {:>11.2} {:>9.3} {:>9.3} {:>9.3} {:>11}  {}",
            name,
            t.requests,
            t.rps,
            t.latency_ms.p50,
            t.latency_ms.p99,
            t.latency_ms.max,
            t.errors,
            status.join(", ")
        );
    }
    if r.failed.transport_errors > 0 {
        let _ = writeln!(
            s,
            "  (the {} transport errors have no target: a failed connection carries no \
             request)",
            r.failed.transport_errors
        );
    }
}

/// The steps of a ramp or knee search.
fn steps(s: &mut String, r: &Report) {
    if r.steps.is_empty() {
        return;
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  {:<6} {:>10} {:>12} {:>10} {:>10} {:>9} {:>6}",
        "Step", "target", "req/s", "p50 ms", "p99 ms", "errors", "SLO"
    );
    let searches = r
        .steps
        .iter()
        .filter_map(|st| st.repetition)
        .max()
        .unwrap_or(0);
    for (i, st) in r.steps.iter().enumerate() {
        let mut slo = match st.passed {
            Some(true) => "ok",
            Some(false) => "broke",
            None => "",
        }
        .to_string();
        if st.retest {
            slo.push_str(" (retest)");
        }
        if let Some(k) = st.repetition.filter(|_| searches > 1) {
            let _ = write!(slo, " search {k}");
        }
        let _ = writeln!(
            s,
            "  {:<6} {:>10.1} {:>12.2} {:>10.3} {:>10.3} {:>8.2}% {:<6}",
            i + 1,
            st.target,
            st.rps,
            st.latency_ms.p50,
            st.latency_ms.p99,
            st.error_rate * 100.0,
            slo
        );
    }
}

/// A knee search's verdict: the highest rate that met the SLO (with its interval when
/// the search was repeated), where it broke, and what limited it.
fn find_max(s: &mut String, r: &Report) {
    if r.mode != Mode::FindMax {
        return;
    }
    let _ = writeln!(s);
    row(s, "Max rate", max_rate_line(r));
    if let Some(b) = r.broke_at {
        row(s, "Broke at", format!("{b:.1} req/s"));
    }
    limit_line(s, r);
}

/// What ran out at the knee, with its evidence (`report.limit`, set by the caller that
/// watched the host: crate workloads' knee module).
fn limit_line(s: &mut String, r: &Report) {
    if let Some(l) = &r.limit {
        row(
            s,
            "Limited by",
            format!("{} ({}): {}", l.resource.phrase(), l.resource, l.evidence),
        );
    }
}

/// `22,400 ± 1,100 req/s under p99<20ms (5 searches, 95 % CI 21,300–23,500)`; with a
/// precision target `(7 searches until within ±10 %; CI … at 97 %, …)`; for one search
/// `22400.0 req/s meets the SLO`.
pub fn max_rate_line(r: &Report) -> String {
    let slo = r.slo.as_deref().unwrap_or("the SLO");
    let n = r.repetitions.unwrap_or(0);
    match (r.max_rate, r.max_rate_ci_low, r.max_rate_ci_high) {
        (Some(m), Some(lo), Some(hi)) => {
            let how =
                match (r.max_rate_precision, r.max_rate_precision_met) {
                    (Some(p), Some(met)) => {
                        format!(
                    "{n} searches {} ±{:.0} %; CI {}–{} at {:.0} %, which covers 95 % when \
                     searches stop on it",
                    if met { "until within" } else { "without reaching" },
                    p * 100.0,
                    grouped(lo),
                    grouped(hi),
                    100.0 * r.max_rate_ci_level.unwrap_or(0.95)
                )
                    }
                    _ => format!("{n} searches, 95 % CI {}–{}", grouped(lo), grouped(hi)),
                };
            format!(
                "{} ± {} req/s under {slo} ({how})",
                grouped(m),
                grouped((hi - lo) / 2.0)
            )
        }
        (Some(m), _, _) => format!("{m:.1} req/s meets the SLO"),
        (None, _, _) => "no rate tried met the SLO".to_string(),
    }
}

/// A rate rounded to a whole number with thousands separators: `22,400`.
fn grouped(x: f64) -> String {
    let n = x.round().abs() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if x.round() < 0.0 {
        out.insert(0, '-');
    }
    out
}

fn latency_row(s: &mut String, label: &str, l: &Latency) {
    let _ = writeln!(
        s,
        "  {:<18} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
        label, l.mean, l.sd, l.p50, l.p75, l.p90, l.p99, l.p999, l.p9999, l.max
    );
}

#[cfg(test)]
mod tests {
    use super::{grouped, max_rate_line};
    use crate::limit::{Limit, LimitResource};
    use crate::report::{Mode, Report};

    #[test]
    fn the_limit_follows_the_max_rate_line() {
        let mut r = Report::from_phases(&[], Mode::FindMax, 1, 1);
        r.max_rate = Some(22_400.0);
        r.broke_at = Some(24_000.0);
        r.limit = Some(Limit {
            resource: LimitResource::ListenQueue,
            evidence: "1,427 listen-queue overflows on :8080 during the step at 24,000 req/s"
                .into(),
        });
        let text = super::render(&r);
        let max = text.find("Max rate").unwrap();
        let lim = text.find("Limited by").unwrap();
        assert!(lim > max, "{text}");
        assert!(
            text.contains("the listen queue (listen_queue): 1,427 listen-queue overflows on :8080"),
            "{text}"
        );
        r.limit = None;
        assert!(!super::render(&r).contains("Limited by"));
    }

    #[test]
    fn a_repeated_knee_prints_its_interval() {
        let mut r = crate::report::empty_find_max();
        r.max_rate = Some(22_400.0);
        r.slo = Some("p99<20ms".into());
        assert_eq!(max_rate_line(&r), "22400.0 req/s meets the SLO");
        r.max_rate_ci_low = Some(21_300.0);
        r.max_rate_ci_high = Some(23_500.0);
        r.repetitions = Some(5);
        assert_eq!(
            max_rate_line(&r),
            "22,400 ± 1,100 req/s under p99<20ms (5 searches, 95 % CI 21,300–23,500)"
        );
        r.max_rate_precision = Some(0.1);
        r.max_rate_precision_met = Some(true);
        r.max_rate_ci_level = Some(0.97);
        r.repetitions = Some(7);
        assert_eq!(
            max_rate_line(&r),
            "22,400 ± 1,100 req/s under p99<20ms (7 searches until within ±10 %; CI \
             21,300–23,500 at 97 %, which covers 95 % when searches stop on it)"
        );
        r.max_rate_precision_met = Some(false);
        assert!(max_rate_line(&r).contains("(7 searches without reaching ±10 %; CI"));
        assert_eq!(grouped(999.6), "1,000");
        assert_eq!(grouped(1_234_567.0), "1,234,567");
        assert_eq!(grouped(12.0), "12");
    }
}
