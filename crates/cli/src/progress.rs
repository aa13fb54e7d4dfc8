//! The progress bar on stderr (trial i/N, config, ETA). Hidden when stderr is not a
//! terminal or with `--quiet`; warnings and failed trials are still printed.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use perflab_lab::observe::Observer;
use perflab_store::RunId;

pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
    /// How the command at hand pins CPUs, for the noise warning.
    pin: &'static str,
    /// The flag that keeps measuring failing commands, for a failed trial's hint.
    allow_failure: Option<&'static str>,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(0),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} trial {pos}/{len} · {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            quiet,
            pin: "cpus = \"1\" in the experiment file",
            allow_failure: None,
        }
    }

    /// A failed command's hint names `flag` (e.g. `-i`) rather than the file's key.
    pub fn allowing_failure_with(self, flag: &'static str) -> Progress {
        Progress {
            allow_failure: Some(flag),
            ..self
        }
    }

    /// The noise warning names `pin` (e.g. `--cpus 1`): how this command pins CPUs.
    pub fn pinning_with(self, pin: &'static str) -> Progress {
        Progress { pin, ..self }
    }

    fn say(&self, line: &str) {
        if self.bar.is_hidden() {
            if !self.quiet {
                eprintln!("{line}");
            }
        } else {
            self.bar.println(line);
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for Progress {
    fn started(&self, run: RunId, total: usize) {
        self.bar.set_length(total as u64);
        self.say(&format!("run {run}: {total} trials"));
    }

    fn trial_started(&self, index: usize, _total: usize, config: &str, warmup: bool) {
        self.bar.set_position(index as u64);
        let kind = if warmup { " (warm-up)" } else { "" };
        self.bar.set_message(format!("{config}{kind}"));
    }

    fn trial_finished(&self, index: usize, config: &str, error: Option<&str>) {
        self.bar.set_position(index as u64 + 1);
        if let Some(e) = error {
            if e != "interrupted" {
                let e = match self.allow_failure {
                    Some(flag) => e.replace(
                        perflab_workloads::command::FAILURE_HINT,
                        &format!("(run with {flag} if that is expected)"),
                    ),
                    None => e.to_string(),
                };
                let mut lines = e.lines();
                let first = lines.next().unwrap_or("");
                let rest: Vec<&str> = lines.collect();
                let mut msg = format!("trial {} ({config}) failed: {first}", index + 1);
                for l in rest {
                    msg.push_str("\n    ");
                    msg.push_str(l);
                }
                self.say(&msg);
            }
        }
    }

    fn stopped(&self, why: &str) {
        // Shown even with --quiet, like a warning: it says how far the run went.
        if self.bar.is_hidden() {
            eprintln!("{why}");
        } else {
            self.bar.println(why);
        }
    }

    fn noisy(&self, n: &perflab_lab::noise::Noisy) {
        self.warn(&n.message(self.pin));
    }

    fn warn(&self, message: &str) {
        // Warnings are shown even with --quiet: they change how to read the numbers.
        if self.bar.is_hidden() {
            eprintln!("warning: {message}");
        } else {
            self.bar.println(format!("warning: {message}"));
        }
    }
}
