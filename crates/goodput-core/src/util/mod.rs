//! Utilities the rest of the crate and its users share: bounded reading of
//! input files ([`input`]), deterministic draws ([`hash`]), secrets kept out
//! of what is written ([`redact`]), and durations as integer nanoseconds in
//! serde ([`serde_ns`]).

pub mod hash;
pub mod input;
pub mod redact;
pub(crate) mod serde_ns;
