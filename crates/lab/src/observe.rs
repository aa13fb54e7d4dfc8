//! What the runner tells whoever watches a run (the CLI's progress bar, the doctor's
//! live findings): trials starting and ending, and warnings to print.
//!
//! Its own module, not the runner's, because the runner's helpers (the doctor's trial
//! watch among them) report through it too: they depend on this trait, not on the
//! runner, and the runner on them — no circle.

use perflab_store::RunId;

/// What the runner tells whoever watches (the CLI's progress bar).
pub trait Observer {
    /// A run is starting: its id and number of trials (warm-ups included).
    fn started(&self, _run: RunId, _total: usize) {}
    /// Trial `index` (0-based, of `total`) starts.
    fn trial_started(&self, _index: usize, _total: usize, _config: &str, _warmup: bool) {}
    /// Trial finished; `error` when it failed.
    fn trial_finished(&self, _index: usize, _config: &str, _error: Option<&str>) {}
    /// Something the user should know (printed above the progress bar).
    fn warn(&self, _message: &str) {}
    /// Why `repetitions = "auto"` stopped adding rounds (`stop = "decided"`: "decided
    /// after 9 rounds: ratio CI excludes 1"); by default, said like a warning.
    fn stopped(&self, why: &str) {
        self.warn(why);
    }
    /// The noise check found the machine noisy; by default, warned about in the words
    /// of an experiment file (`cpus = "1"`).
    fn noisy(&self, n: &crate::noise::Noisy) {
        self.warn(&n.message("cpus = \"1\""));
    }
}

/// An observer that says nothing.
pub struct Silent;
impl Observer for Silent {}
