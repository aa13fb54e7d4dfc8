//! perflab-stats: pure statistics for repeated performance measurements, no I/O.
//!
//! * [`summarize`]: n, mean, sd, Student-t CI, median with an order-statistic CI,
//!   min/max, CV and robust outlier flags for one configuration and metric;
//!   [`precision_reached`] for "stop when the CI is within ±x %".
//! * [`compare`] / [`compare_rounds`]: ratio of means with a Fieller (or bootstrap)
//!   CI, Welch and Mann–Whitney p-values, the paired estimate when the values come in
//!   rounds, and a direction-aware verdict (better / worse / equivalent / undecided,
//!   worded by [`MetricKind`]) with its minimum detectable effect ([`mde_pct`],
//!   [`rounds_needed`]); [`geometric_mean_ratio`] over several metrics.
//! * [`paired_log_ratio`]: trials paired by round — the per-round log-ratio with a
//!   paired t interval and Wilcoxon's signed-rank p-value ([`wilcoxon_signed_rank`]).
//! * [`SequentialDesign`]: when a paired comparison is decided, looked at after every
//!   round with O'Brien–Fleming-type alpha spending (`repetitions = "auto"`,
//!   `stop = "decided"`).
//! * [`mean_difference`] / [`paired_difference`]: a difference of means with its CI
//!   (the why block's judge); [`holm`] and [`benjamini_hochberg`]: adjusted p-values
//!   over a family of tests.
//! * [`ratio_of_ratios`]: the interaction contrast of a two-by-two design.
//! * [`t_quantile`] and friends: Student's t to full double precision.
//!
//! Every formula, with its reference, is written down in `docs/methodology.md`;
//! the tests compare the numbers with scipy (values produced by
//! `tools/stats_reference.py` and checked in as `tests/reference/mod.rs`).

mod better;
mod bootstrap;
mod compare;
mod descriptive;
mod difference;
mod error;
mod geomean;
mod interaction;
mod kind;
mod mde;
mod metric;
mod multiple;
mod mwu;
mod order_ci;
mod outliers;
mod paired;
mod ratio;
mod rng;
mod sequential;
#[cfg(test)]
mod simulation;
mod summary;
mod tdist;
mod ttest;
mod wilcoxon;

pub use better::Better;
pub use bootstrap::{bootstrap_ratio_ci, BOOTSTRAP_RESAMPLES};
pub use compare::{
    compare, compare_rounds, Basis, CompareOptions, Comparison, Verdict, DEFAULT_EQUIVALENCE,
    MIN_PAIRED_ROUNDS,
};
pub use difference::{mean_difference, paired_difference, Difference};
pub use error::StatsError;
pub use geomean::{geometric_mean_ratio, GeoMean};
pub use interaction::{ratio_of_ratios, Interaction};
pub use kind::MetricKind;
pub use mde::{detectable_log_effect, mde_pct, rounds_needed, Design, DEFAULT_POWER, MAX_ROUNDS};
pub use metric::{compare_metric, compare_metric_rounds, MetricSide, Outcome};
pub use multiple::{benjamini_hochberg, holm};
pub use mwu::{mann_whitney_u, MwuMethod, MwuResult};
pub use order_ci::{binom_half_cdf, median_ci_sorted, order_stat_coverage, MedianCi};
pub use outliers::{mad_outliers, MAD_SCALE, MAD_THRESHOLD, MEAN_AD_SCALE};
pub use paired::{paired_log_ratio, Paired};
pub use ratio::{fieller_ratio_ci, CiMethod, RatioCi};
pub use rng::DEFAULT_SEED;
pub use sequential::{Decision, SequentialDesign, MAX_LOOKS, T_CALIBRATION};
pub use summary::{precision_reached, summarize, Summary, STOP_ON_PRECISION_CONFIDENCE};
pub use tdist::{normal_quantile, normal_sf, t_quantile, t_sf, t_two_sided_p};
pub use ttest::{welch_satterthwaite_df, welch_t_test, WelchResult};
pub use wilcoxon::{wilcoxon_signed_rank, WilcoxonMethod, WilcoxonResult};
