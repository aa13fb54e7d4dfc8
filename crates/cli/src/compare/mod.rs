//! What `perflab compare` computes and prints, kept out of the command module so that
//! each concept has its file: which samples a `RUN[:key=value,...]` names
//! ([`select`]), a baseline/candidate comparison ([`pair`]) and a ratio of ratios
//! ([`interaction`]). The statistics themselves live in `perflab-stats`; these
//! modules only gather samples from the store, call it, and lay out the answers.

pub mod interaction;
pub mod pair;
pub mod select;
