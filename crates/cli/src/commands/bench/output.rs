//! What `perflab bench` prints: a block per command in hyperfine's layout (with
//! confidence intervals where hyperfine shows a standard deviation), then each command
//! against the baseline, each with its why block (the differences that explain it,
//! `crate::compare::why`); and `--show-output`, which prints what each command wrote.

use std::cell::Cell;
use std::io::Write;

use perflab_analysis::format::{mean_pm, p_value as p_text, ratio_ci, value};
use perflab_lab::observe::Observer;
use perflab_store::{RunId, Store};

use super::export::Outcome;

fn pm(o: &Outcome, i: usize, metric: &str) -> String {
    match o.results[i].stat(metric) {
        Some(s) => mean_pm(s.mean, s.half, &s.unit),
        None => "—".into(),
    }
}

/// The summary and the comparisons, as the terminal shows them.
pub fn print(o: &Outcome) {
    let level = format!("{:.0}%", o.confidence * 100.0);
    for (i, r) in o.results.iter().enumerate() {
        println!("Benchmark {}: {}", i + 1, r.bench.name);
        let Some(wall) = r.stat("wall_s") else {
            println!("  (no successful run)");
            continue;
        };
        println!(
            "  Wall time (mean ± {level} CI):  {:<22} [n = {}, min … max: {} … {}]",
            pm(o, i, "wall_s"),
            wall.n,
            value(wall.min, &wall.unit),
            value(wall.max, &wall.unit),
        );
        println!(
            "  User, system:  {}, {}    Peak RSS: {}",
            pm(o, i, "user_s"),
            pm(o, i, "sys_s"),
            pm(o, i, "max_process_rss_bytes")
        );
        if !o.counters.is_empty() {
            println!("  Counters:  {}", counters_line(o, i));
        }
    }
    if o.comparisons.is_empty() {
        return;
    }
    println!(
        "\nCompared with benchmark {} ({}): ratio of wall times [{level} CI], its basis and p",
        o.baseline + 1,
        o.results[o.baseline].bench.name
    );
    for (i, rows) in &o.comparisons {
        let name = &o.results[*i].bench.name;
        match rows.iter().find(|v| v.metric == "wall_s") {
            Some(v) if v.ratio.is_finite() => {
                println!(
                    "  {}: {name}  {}  {}  p = {}  {}",
                    i + 1,
                    ratio_ci(v.ratio, v.ratio_ci_low, v.ratio_ci_high),
                    v.basis,
                    p_text(v.p),
                    v.verdict
                );
                for note in &v.notes {
                    println!("     {note}");
                }
            }
            Some(v) => println!("  {}: {name}  {}", i + 1, v.verdict),
            None => println!("  {}: {name}  not compared (no successful run)", i + 1),
        }
        if let Some((_, block)) = o.whys.iter().find(|(j, _)| j == i) {
            crate::compare::why::print(block, o.confidence);
        }
    }
}

/// `--counters`: each event's mean ± CI, or why it has none.
fn counters_line(o: &Outcome, i: usize) -> String {
    use perflab_telemetry::perfcount::{has_hardware_pmu, NO_PMU};
    let pmu = has_hardware_pmu();
    let mut parts: Vec<String> = o
        .counters
        .iter()
        .map(|e| match o.results[i].stat(&e.metric()) {
            Some(_) => format!("{} {}", e.name(), pm(o, i, &e.metric())),
            None if e.is_hardware() && !pmu => format!("{}: {NO_PMU}", e.name()),
            None => format!("{}: missing (see the trial's counters.json)", e.name()),
        })
        .collect();
    if o.results[i].stat("counter.ipc").is_some() {
        parts.push(format!("IPC {}", pm(o, i, "counter.ipc")));
    }
    parts.join(", ")
}

/// `--show-output`: after each recorded run, what the command wrote to stdout and
/// stderr (as the store keeps it). The runner records a trial after telling its
/// observer it finished, so each trial is shown when the next starts, and the last by
/// [`ShowOutput::flush`].
pub struct ShowOutput<'a> {
    pub inner: &'a dyn Observer,
    pub store: &'a Store,
    run: Cell<Option<RunId>>,
    shown: Cell<u32>,
}

impl<'a> ShowOutput<'a> {
    pub fn new(inner: &'a dyn Observer, store: &'a Store) -> ShowOutput<'a> {
        ShowOutput {
            inner,
            store,
            run: Cell::new(None),
            shown: Cell::new(0),
        }
    }

    /// Prints the output of every recorded trial not shown yet.
    pub fn flush(&self) {
        let Some(run) = self.run.get() else { return };
        let Ok(trials) = self.store.trials(run) else {
            return;
        };
        for t in trials.iter().filter(|t| t.ordinal > self.shown.get()) {
            for (name, _, content) in self.store.trial_artifacts(t.id).unwrap_or_default() {
                match name.as_str() {
                    "stdout" => {
                        let _ = std::io::stdout().write_all(&content);
                    }
                    "stderr" => {
                        let _ = std::io::stderr().write_all(&content);
                    }
                    _ => {}
                }
            }
            self.shown.set(self.shown.get().max(t.ordinal));
        }
        let _ = std::io::stdout().flush();
    }
}

impl Observer for ShowOutput<'_> {
    fn started(&self, run: RunId, total: usize) {
        self.run.set(Some(run));
        self.inner.started(run, total);
    }

    fn trial_started(&self, index: usize, total: usize, config: &str, warmup: bool) {
        self.flush();
        self.inner.trial_started(index, total, config, warmup);
    }

    fn trial_finished(&self, index: usize, config: &str, error: Option<&str>) {
        self.inner.trial_finished(index, config, error);
    }

    fn warn(&self, message: &str) {
        self.inner.warn(message);
    }

    fn noisy(&self, n: &perflab_lab::noise::Noisy) {
        self.inner.noisy(n);
    }
}
