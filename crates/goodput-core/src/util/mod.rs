//! Utilities the rest of the crate and its users share: bounded reading of
//! input files ([`input`]), deterministic draws ([`hash`]), secrets kept out
//! of what is written ([`redact`]), durations as integer nanoseconds in
//! serde ([`serde_ns`]), and the simulated engine's tokens ([`words`]).

pub mod hash;
pub mod input;
pub mod redact;
pub(crate) mod serde_ns;
pub mod words;

/// A number as a message names it: as written, or in exponent form from a
/// million on and below a thousandth (`1e308` and `1e-300`, not their
/// hundreds of digits).
pub fn number_text(v: f64) -> String {
    if v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// `n` with commas between its thousands: `20,000,000`.
///
/// ```
/// assert_eq!(goodput_core::util::thousands(1_234_567), "1,234,567");
/// assert_eq!(goodput_core::util::thousands(999), "999");
/// ```
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_named_as_written() {
        use super::number_text;
        assert_eq!(number_text(1e-300), "1e-300");
        assert_eq!(number_text(1e308), "1e308");
        assert_eq!(number_text(-3.0), "-3");
        assert_eq!(number_text(0.0), "0");
        assert_eq!(number_text(1.625), "1.625");
    }
}
