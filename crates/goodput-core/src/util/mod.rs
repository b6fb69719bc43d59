//! Utilities the rest of the crate and its users share: bounded reading of
//! input files ([`input`]), deterministic draws ([`hash`]), secrets kept out
//! of what is written ([`redact`]), and durations as integer nanoseconds in
//! serde ([`serde_ns`]).

pub mod hash;
pub mod input;
pub mod redact;
pub(crate) mod serde_ns;

/// A number as a message names it: as written, or in exponent form from a
/// million on (`1e308`, not its 309 digits).
pub fn number_text(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}
