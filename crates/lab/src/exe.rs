//! Where this perflab binary is, for `{perflab}` in templates — rendered by the runner
//! for a local service and by a host's worker for a service it starts there
//! ([`crate::site`]), so it lives apart from both.

/// This perflab binary, for `{perflab}` (so `perflab serve` can be the service under
/// test even when perflab is not on the PATH, e.g. under `cargo run`).
pub fn perflab_exe() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "perflab".into())
}
