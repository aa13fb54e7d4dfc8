//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// |got − want| ≤ rel·|want| (or both NaN, or the same infinity).
pub fn assert_close(what: &str, got: f64, want: f64, rel: f64) {
    if want.is_nan() {
        assert!(got.is_nan(), "{what}: got {got}, want NaN");
        return;
    }
    if want.is_infinite() {
        assert_eq!(got, want, "{what}");
        return;
    }
    let tol = rel * want.abs().max(f64::MIN_POSITIVE);
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got:e}, want {want:e} (rel err {:e})",
        ((got - want) / want).abs()
    );
}
