//! RFC 3339 timestamps (UTC, millisecond precision) for the store.

use std::time::SystemTime;

/// Now, as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// A point in time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}
