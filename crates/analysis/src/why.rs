//! The "why" block under every verdict (issue 31). PLACEHOLDER, to be written by the
//! why work: gathers [`crate::evidence::Evidence`] from every source, judges each
//! difference with its CI across the trials, controls the family-wise / false-discovery
//! rate over everything checked, and orders what passes (functions first).
