//! The plan: configurations (the matrix's cartesian product) × repetitions, in an
//! order that keeps machine drift from looking like a difference.
//!
//! `interleaved` runs rounds — every config once per round — and shuffles the configs
//! within each round from the run's seed, *balanced*: rounds come in blocks of k (the
//! number of configs), each block a random Latin square (a random base order, its k
//! rotations in a random order), so over a block every config takes every slot once.
//! For two configs that is A B / B A in a random orientation: each goes first equally
//! often, and a slot effect (the first trial after a pause, a cache warmed by the
//! previous config) lands on both alike instead of always on the baseline. The round
//! stays the block a paired comparison pairs by. `random` shuffles all recorded trials
//! with a seeded generator; `sequential` runs all of A, then all of B (allowed, warned
//! about). Warm-up trials (unrecorded) come first, one round per warm-up, in file order.
//!
//! A round's order depends only on (seed, round number, k) — [`round_order`] — so the
//! rounds `repetitions = "auto"` adds one by one get the same orders as a plan made up
//! front, and `--resume` rebuilds the same plan from the stored seed.
//! The shuffle uses SplitMix64 + Fisher–Yates written here rather than `rand` so a
//! stored seed rebuilds the same plan in every future version (`--resume` relies on it).

use std::collections::BTreeMap;

use perflab_store::value_text;

use crate::experiment::{Experiment, Order, Param};

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// 0-based position in the cartesian product (file order, first parameter slowest).
    pub ordinal: u32,
    pub params: Vec<(String, serde_json::Value)>,
}

impl Config {
    /// `k=v,k=v` (the form `compare RUN:k=v` takes), or `-` without parameters.
    pub fn label(&self) -> String {
        if self.params.is_empty() {
            return "-".into();
        }
        self.params
            .iter()
            .map(|(k, v)| format!("{k}={}", value_text(v)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Parameters as the store keeps them.
    pub fn params_map(&self) -> BTreeMap<String, serde_json::Value> {
        self.params.iter().cloned().collect()
    }
}

/// One planned trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedTrial {
    /// Index into the config list.
    pub config: usize,
    /// 1-based repetition of that config (warm-ups: 1-based warm-up number).
    pub repetition: u32,
    /// 1-based position among recorded trials (0 for warm-ups).
    pub ordinal: u32,
    pub warmup: bool,
}

/// All configs of an experiment.
pub fn configs(exp: &Experiment) -> Vec<Config> {
    product(&exp.matrix)
}

/// The configs of a matrix: its cartesian product, the first parameter varying
/// slowest (also how `perflab bench` orders its parameters, as hyperfine does).
pub fn product(matrix: &[Param]) -> Vec<Config> {
    let mut out = vec![Vec::new()];
    for p in matrix {
        let mut next = Vec::with_capacity(out.len() * p.values.len());
        for prefix in &out {
            for v in &p.values {
                let mut c: Vec<(String, serde_json::Value)> = prefix.clone();
                c.push((p.name.clone(), v.clone()));
                next.push(c);
            }
        }
        out = next;
    }
    out.into_iter()
        .enumerate()
        .map(|(i, params)| Config {
            ordinal: i as u32,
            params,
        })
        .collect()
}

/// The trials to run, warm-ups first.
pub fn plan(exp: &Experiment, n_configs: usize, seed: u64) -> Vec<PlannedTrial> {
    let mut out = Vec::new();
    for w in 1..=exp.warmup {
        for c in 0..n_configs {
            out.push(PlannedTrial {
                config: c,
                repetition: w,
                ordinal: 0,
                warmup: true,
            });
        }
    }
    let mut recorded = Vec::with_capacity(n_configs * exp.repetitions.initial() as usize);
    match exp.order {
        Order::Interleaved => {
            for r in 1..=exp.repetitions.initial() {
                for c in round_order(seed, r, n_configs) {
                    recorded.push((c, r));
                }
            }
        }
        Order::Random => {
            for r in 1..=exp.repetitions.initial() {
                for c in 0..n_configs {
                    recorded.push((c, r));
                }
            }
        }
        Order::Sequential => {
            for c in 0..n_configs {
                for r in 1..=exp.repetitions.initial() {
                    recorded.push((c, r));
                }
            }
        }
    }
    if exp.order == Order::Random {
        shuffle(&mut recorded, seed);
        // Repetition numbers follow the order each config is met in.
        let mut seen = vec![0u32; n_configs];
        for (c, r) in recorded.iter_mut() {
            seen[*c] += 1;
            *r = seen[*c];
        }
    }
    out.extend(
        recorded
            .into_iter()
            .enumerate()
            .map(|(i, (config, repetition))| PlannedTrial {
                config,
                repetition,
                ordinal: i as u32 + 1,
                warmup: false,
            }),
    );
    out
}

/// One more round of every config (repetition `rep`), for `repetitions = "auto"`: in
/// the round's balanced order for interleaved runs ([`round_order`]), shuffled with a
/// per-round seed for random order. Ordinals continue from `after`.
pub fn round(
    exp: &Experiment,
    n_configs: usize,
    seed: u64,
    rep: u32,
    after: u32,
) -> Vec<PlannedTrial> {
    let configs = match exp.order {
        Order::Interleaved => round_order(seed, rep, n_configs),
        _ => {
            let mut configs: Vec<usize> = (0..n_configs).collect();
            if exp.order == Order::Random {
                shuffle(
                    &mut configs,
                    seed ^ (rep as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
            }
            configs
        }
    };
    configs
        .into_iter()
        .enumerate()
        .map(|(i, config)| PlannedTrial {
            config,
            repetition: rep,
            ordinal: after + i as u32 + 1,
            warmup: false,
        })
        .collect()
}

/// The order of the `n_configs` configs in round `rep` (1-based) of an interleaved run
/// with `seed`: rounds form blocks of `n_configs`; block b draws a base order and an
/// order of its rotations from `seed` and b alone, and its `i`th round is the base order
/// rotated by the `i`th rotation. Every config takes every slot once per block.
pub fn round_order(seed: u64, rep: u32, n_configs: usize) -> Vec<usize> {
    if n_configs < 2 {
        return (0..n_configs).collect();
    }
    let k = n_configs as u64;
    let index = (rep.max(1) - 1) as u64;
    let (block, within) = (index / k, (index % k) as usize);
    // One stream per block, apart from the per-round streams of `random` order.
    let block_seed =
        SplitMix64(seed ^ 0x726F_756E_6473_0000 ^ block.wrapping_mul(0xD1B5_4A32_D192_ED03))
            .next_u64();
    let mut rng = SplitMix64(block_seed);
    let mut base: Vec<usize> = (0..n_configs).collect();
    shuffle_with(&mut base, &mut rng);
    let mut rotations: Vec<usize> = (0..n_configs).collect();
    shuffle_with(&mut rotations, &mut rng);
    let by = rotations[within];
    (0..n_configs).map(|i| base[(i + by) % n_configs]).collect()
}

/// SplitMix64 (Steele, Lea & Flood 2014): small, fast, stable forever.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; bias < 2^-64·n, irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

fn shuffle<T>(v: &mut [T], seed: u64) {
    shuffle_with(v, &mut SplitMix64(seed));
}

/// Fisher–Yates with the generator given.
fn shuffle_with<T>(v: &mut [T], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// A fresh seed from the clock and pid, for random order without a stored seed.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    SplitMix64(t ^ ((std::process::id() as u64) << 32)).next_u64() >> 11
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn exp(order: &str, reps: u32, warmup: u32) -> Experiment {
        let text = format!(
            "[experiment]\nrepetitions = {reps}\nwarmup = {warmup}\norder = \"{order}\"\n[matrix]\na = [1, 2]\nb = [\"x\", \"y\", \"z\"]\n[workload]\nkind = \"command\"\ncommand = \"true\"\n"
        );
        Experiment::parse(Path::new("t.toml"), &text).unwrap()
    }

    #[test]
    fn configs_are_the_cartesian_product_in_file_order() {
        let e = exp("interleaved", 2, 0);
        let c = configs(&e);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0].label(), "a=1,b=x");
        assert_eq!(c[1].label(), "a=1,b=y");
        assert_eq!(c[5].label(), "a=2,b=z");
    }

    #[test]
    fn interleaved_runs_whole_rounds() {
        let e = exp("interleaved", 2, 1);
        let p = plan(&e, 2, 0);
        let seq: Vec<(usize, u32, bool)> = p
            .iter()
            .map(|t| (t.config, t.repetition, t.warmup))
            .collect();
        // Warm-ups in file order, then each round holds both configs once.
        assert_eq!(seq[..2], [(0, 1, true), (1, 1, true)]);
        for (r, round) in seq[2..].chunks(2).enumerate() {
            let mut c: Vec<usize> = round.iter().map(|t| t.0).collect();
            c.sort();
            assert_eq!(c, [0, 1]);
            assert!(round.iter().all(|t| t.1 == r as u32 + 1 && !t.2));
        }
        let ord: Vec<u32> = p.iter().map(|t| t.ordinal).collect();
        assert_eq!(ord, vec![0, 0, 1, 2, 3, 4]);
    }

    #[test]
    fn interleaved_rounds_are_shuffled_balanced_and_reproducible() {
        let e = exp("interleaved", 20, 0);
        let firsts = |seed: u64| -> Vec<usize> {
            plan(&e, 2, seed)
                .chunks(2)
                .map(|round| round[0].config)
                .collect()
        };
        for seed in [0, 1, 42, 0xDEAD_BEEF] {
            let f = firsts(seed);
            let a_first = f.iter().filter(|c| **c == 0).count();
            assert!((7..=13).contains(&a_first), "seed {seed}: {f:?}");
            assert_eq!(f, firsts(seed), "the same seed gives the same order");
        }
        assert_ne!(firsts(1), firsts(2), "another seed gives another order");
        // Not always the baseline first (today's order), nor a fixed alternation.
        assert!(firsts(3).windows(3).any(|w| w[0] == w[1] || w[1] == w[2]));
    }

    #[test]
    fn every_config_takes_every_slot_once_per_block() {
        for k in 2..=5usize {
            for seed in [7u64, 8, 9] {
                for block in 0..3u32 {
                    let mut seen = vec![vec![0; k]; k];
                    for i in 1..=k as u32 {
                        let order = round_order(seed, block * k as u32 + i, k);
                        for (slot, c) in order.into_iter().enumerate() {
                            seen[c][slot] += 1;
                        }
                    }
                    assert!(seen.iter().flatten().all(|n| *n == 1), "k {k}: {seen:?}");
                }
            }
        }
    }

    #[test]
    fn added_rounds_follow_the_plans_order() {
        let e = exp("interleaved", 6, 0);
        let full = plan(&e, 3, 5);
        for rep in 1..=6u32 {
            let r = round(&e, 3, 5, rep, (rep - 1) * 3);
            assert_eq!(r[..], full[(rep as usize - 1) * 3..rep as usize * 3]);
        }
    }

    #[test]
    fn sequential_runs_each_config_in_turn() {
        let e = exp("sequential", 3, 0);
        let p = plan(&e, 2, 0);
        let cfg: Vec<usize> = p.iter().map(|t| t.config).collect();
        assert_eq!(cfg, vec![0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn random_order_is_reproducible_from_its_seed_and_complete() {
        let e = exp("random", 5, 0);
        let a = plan(&e, 6, 42);
        let b = plan(&e, 6, 42);
        let c = plan(&e, 6, 43);
        assert_eq!(a, b);
        assert_ne!(a, c);
        for cfg in 0..6 {
            let mut reps: Vec<u32> = a
                .iter()
                .filter(|t| t.config == cfg)
                .map(|t| t.repetition)
                .collect();
            reps.sort();
            assert_eq!(reps, vec![1, 2, 3, 4, 5]);
        }
    }

    #[test]
    fn splitmix64_matches_reference_vector() {
        // Reference: SplitMix64 seeded with 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }
}
