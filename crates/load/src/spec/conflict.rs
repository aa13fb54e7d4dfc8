//! The options that cannot go together, said with their fields.

use super::{Phrase, SpecError};

/// `find_max` without an SLO.
pub(crate) fn needs_slo() -> SpecError {
    SpecError::Conflict(
        Phrase::field("find_max")
            .then(" needs an SLO, like ")
            .and_field("slo")
            .then(" 'p99<20ms'"),
    )
}

/// `streams` on plain http:// without HTTP/2 asked for.
pub(crate) fn streams_need_h2() -> SpecError {
    SpecError::Conflict(
        Phrase::field("streams")
            .then(
                " multiplexes HTTP/2, and plain http:// URLs speak HTTP/1.1 unless HTTP/2 \
                 is asked for: add ",
            )
            .and_setting("http", "2")
            .then(" (h2c with prior knowledge)"),
    )
}

pub(super) fn streams_on_http1() -> SpecError {
    SpecError::Conflict(
        Phrase::field("streams")
            .then(" multiplexes HTTP/2; HTTP/1.1 was forced (drop ")
            .and_setting("http", "1.1")
            .then(", or use ")
            .and_field("pipeline")
            .then(")"),
    )
}

pub(super) fn pipeline_on_http2() -> SpecError {
    SpecError::Conflict(
        Phrase::field("pipeline")
            .then(" is HTTP/1.1's; HTTP/2 sends concurrent requests as ")
            .and_field("streams"),
    )
}

pub(super) fn pipeline_open_loop() -> SpecError {
    SpecError::Conflict(
        Phrase::text("pipelining is for closed-loop runs only (drop ")
            .and_field("pipeline")
            .then(" or ")
            .and_field("rate")
            .then(")"),
    )
}

pub(super) fn requests_with_rate() -> SpecError {
    SpecError::Conflict(
        Phrase::text("a request count (")
            .and_field("requests")
            .then(") is for closed-loop runs; use a duration (")
            .and_field("duration")
            .then(") with ")
            .and_field("rate"),
    )
}

pub(super) fn requests_with_ramp() -> SpecError {
    SpecError::Conflict(
        Phrase::text("a request count (")
            .and_field("requests")
            .then(") cannot be combined with ")
            .and_field("ramp")
            .then(" or ")
            .and_field("find_max"),
    )
}

pub(super) fn insecure_with_cacert() -> SpecError {
    SpecError::Conflict(
        Phrase::field("insecure")
            .then(" skips certificate verification, so ")
            .and_field("cacert")
            .then(" would be ignored: give one of them"),
    )
}
