//! How perflab writes a number for a person — the one rule set the terminal (`perflab
//! show/compare/run`) and the report (HTML and Markdown) share, so the same run reads
//! the same everywhere (see `docs/architecture.md`, "the rooms": `analysis`).
//!
//! The rules:
//! * a lone value: four significant digits, trailing zeros dropped (`12 pts`, `1.5 s`),
//!   its unit scaled to a readable size (`12.3 ms`, `1.5 KiB`) — [`value`];
//! * mean ± CI: the mean to four significant digits and the half-width at the same
//!   decimals, zeros kept so that the two line up (`13.00 ± 1.96 pts`); a single trial
//!   (no interval) is a lone value, never a pretend `± NaN` — [`mean_ci`];
//! * a ratio and its interval: four significant digits each, zeros kept
//!   (`0.9000 [0.8800, 0.9200]`) — [`ratio_ci`];
//! * a p-value: three decimals, below 0.001 in scientific notation (`0.043`, `2.5e-7`) —
//!   [`p_value`]; the terminal's form, kept because a reader can still tell 1e-4 from
//!   1e-12, which `<0.0001` hides;
//! * a minimum detectable effect: `±1.8 %` with the rounds ±1 % would need — [`mde`];
//! * anything undefined (NaN, ∞) is `—`.
//!
//! Markup (HTML escaping, Markdown cells) is not here: it belongs to each output.

use perflab_stats::Summary;

/// Undefined numbers print as this.
pub const NONE: &str = "—";

/// Four significant digits with trailing zeros kept, scientific notation outside
/// [1e-4, 1e9): `0.9000`, `13.00`, `12346`, `2.500e-7`.
pub fn sig(v: f64) -> String {
    if !v.is_finite() {
        return NONE.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-4..1e9).contains(&a) {
        return format!("{v:.3e}");
    }
    let digits = decimals_for(v);
    format!("{v:.digits$}")
}

/// A plain number: four significant digits, trailing zeros dropped, never an exponent
/// (`12`, `1.5`, `0.001234`, `12346`). Chart ticks and counts use it as is.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return NONE.into();
    }
    let decimals = decimals_for(v).min(9);
    trim_zeros(format!("{v:.decimals$}"))
}

/// A lone value with its unit scaled to a readable size: `12.3 ms`, `1.5 KiB`, `12 pts`.
pub fn value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return NONE.into();
    }
    let (v, unit) = scale(v, unit);
    join_unit(num(v), &unit)
}

/// A value with its unit as given (no scaling): for chart labels, whose axis fixes
/// the unit.
pub fn with_unit(v: f64, unit: &str) -> String {
    join_unit(num(v), unit)
}

/// `mean ± half unit`, both scaled alike; a lone value when `half` is undefined.
pub fn mean_pm(mean: f64, half: f64, unit: &str) -> String {
    if !mean.is_finite() {
        return NONE.into();
    }
    if !half.is_finite() {
        return value(mean, unit);
    }
    let (m, u) = scale(mean, unit);
    let factor = if mean != 0.0 { m / mean } else { 1.0 };
    let decimals = decimals_for(m);
    let h = half * factor;
    join_unit(format!("{} ± {h:.decimals$}", sig(m)), &u)
}

/// The mean of a summary with its interval (a lone value for a single trial).
pub fn mean_ci(s: &Summary, unit: &str) -> String {
    if s.n < 2 {
        value(s.mean, unit)
    } else {
        mean_pm(s.mean, s.ci_half_width(), unit)
    }
}

/// `1.100 [1.090, 1.110]`.
pub fn ratio_ci(r: f64, lo: f64, hi: f64) -> String {
    format!("{} [{}, {}]", sig(r), sig(lo), sig(hi))
}

/// A p-value: `0.043`, `1.000`, `2.5e-7`, `0.000` for an exact zero.
pub fn p_value(p: f64) -> String {
    if !p.is_finite() {
        NONE.into()
    } else if p >= 0.001 || p == 0.0 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

/// A relative difference in percent, signed: `+4.2%`, `-10.0%`.
pub fn delta_pct(pct: f64) -> String {
    if pct.is_finite() {
        format!("{pct:+.1}%")
    } else {
        NONE.into()
    }
}

/// The minimum detectable effect and what ±1 % would take, as every comparison
/// states it: `minimum detectable effect ±1.8 %; ±1 % would need ≈ 14 rounds`
/// (the second part left out once ±1 % is within reach; `—` when unknown).
pub fn mde(mde_pct: f64, rounds_for_1pct: Option<u64>) -> String {
    if !mde_pct.is_finite() {
        return format!("minimum detectable effect {NONE}");
    }
    let head = format!("minimum detectable effect ±{} %", mde_number(mde_pct));
    match rounds_for_1pct {
        _ if mde_pct <= 1.0 => head,
        Some(n) => format!("{head}; ±1 % would need ≈ {n} rounds"),
        None => format!("{head}; ±1 % is out of reach"),
    }
}

/// An MDE in %: one decimal, two below 1 (`1.8`, `0.35`).
fn mde_number(pct: f64) -> String {
    if pct < 1.0 {
        format!("{pct:.2}")
    } else {
        format!("{pct:.1}")
    }
}

/// A fraction as a percentage with one decimal: `0.123` → `12.3%`.
pub fn pct(fraction: f64) -> String {
    if fraction.is_finite() {
        format!("{:.1}%", fraction * 100.0)
    } else {
        NONE.into()
    }
}

/// The coefficient of variation of a summary, `—` for a single trial.
pub fn cv(s: &Summary) -> String {
    if s.n < 2 {
        NONE.into()
    } else {
        pct(s.cv)
    }
}

/// A confidence level as a percentage: `95%`, `99.9%`.
pub fn level(confidence: f64) -> String {
    format!("{}%", num(confidence * 100.0))
}

/// The direction of a metric as an arrow: `↑` higher is better, `↓` lower.
pub fn arrow(better: &str) -> &'static str {
    if better == "higher" {
        "↑"
    } else {
        "↓"
    }
}

/// Seconds below 1 as ms or µs; bytes as KiB, MiB, ... (powers of 1024).
fn scale(v: f64, unit: &str) -> (f64, String) {
    let a = v.abs();
    match unit {
        "B" => {
            const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
            let mut x = v;
            let mut i = 0;
            while x.abs() >= 1024.0 && i < U.len() - 1 {
                x /= 1024.0;
                i += 1;
            }
            (x, U[i].to_string())
        }
        "s" if a > 0.0 && a < 1e-3 => (v * 1e6, "µs".into()),
        "s" if a > 0.0 && a < 1.0 => (v * 1e3, "ms".into()),
        _ => (v, unit.to_string()),
    }
}

/// Decimals that give `v` four significant digits.
fn decimals_for(v: f64) -> usize {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return 0;
    }
    (3 - a.log10().floor() as i32).clamp(0, 12) as usize
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn join_unit(number: String, unit: &str) -> String {
    if unit.is_empty() {
        number
    } else {
        format!("{number} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(values: &[f64]) -> Summary {
        perflab_stats::summarize(values, 0.95).unwrap()
    }

    #[test]
    fn lone_values_have_four_significant_digits_and_scaled_units() {
        assert_eq!(value(1536.0, "B"), "1.5 KiB");
        assert_eq!(value(0.0123, "s"), "12.3 ms");
        assert_eq!(value(2.5, "s"), "2.5 s");
        assert_eq!(value(12.0, "pts"), "12 pts");
        assert_eq!(value(12345.0, "req/s"), "12345 req/s");
        assert_eq!(value(0.5, ""), "0.5");
        assert_eq!(value(f64::NAN, "s"), "—");
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(123.456), "123.5");
        assert_eq!(num(0.0012344), "0.001234");
        assert_eq!(with_unit(0.0123, "s"), "0.0123 s");
    }

    #[test]
    fn an_interval_keeps_its_zeros_and_shares_the_means_decimals() {
        assert_eq!(mean_pm(13.0, 1.96, "pts"), "13.00 ± 1.96 pts");
        assert_eq!(mean_pm(0.5, 0.01, "s"), "500.0 ± 10.0 ms");
        assert_eq!(mean_pm(2.012, 0.08459, "MiB"), "2.012 ± 0.085 MiB");
        assert_eq!(mean_pm(990.5, f64::NAN, "x"), "990.5 x");
        assert_eq!(mean_ci(&summary(&[4.0]), "s"), "4 s");
        let s = summary(&[10.0, 12.5]);
        assert!(
            mean_ci(&s, "s").starts_with("11.25 ± "),
            "{}",
            mean_ci(&s, "s")
        );
    }

    #[test]
    fn ratios_and_p_values_follow_one_rule() {
        assert_eq!(ratio_ci(1.1, 1.09, 1.11), "1.100 [1.090, 1.110]");
        assert_eq!(ratio_ci(0.9, 0.88, f64::INFINITY), "0.9000 [0.8800, —]");
        assert_eq!(p_value(0.04321), "0.043");
        assert_eq!(p_value(1.0), "1.000");
        assert_eq!(p_value(2.5e-7), "2.5e-7");
        assert_eq!(p_value(1.2e-5), "1.2e-5");
        assert_eq!(p_value(f64::NAN), "—");
        assert_eq!(sig(2.5e-7), "2.500e-7");
        assert_eq!(delta_pct(-10.0), "-10.0%");
        assert_eq!(level(0.95), "95%");
        assert_eq!(level(0.999), "99.9%");
        assert_eq!(cv(&summary(&[4.0])), "—");
        assert_eq!(arrow("higher"), "↑");
    }
}
