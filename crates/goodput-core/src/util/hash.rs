//! Deterministic draws: SplitMix64's finaliser over a seed and an index, so
//! that the `i`-th request of a run draws the same number whatever order
//! requests are made in, and neighbouring indices draw unrelated numbers.
//!
//! ```
//! use goodput_core::util::hash::{draw, unit};
//! assert_eq!(draw(7, 3), draw(7, 3));
//! assert_ne!(draw(7, 3), draw(7, 4));
//! assert!((0.0..1.0).contains(&unit(7, 3)));
//! ```

/// 2⁶⁴ divided by the golden ratio: SplitMix64's increment.
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser: a bijection of `u64` that spreads every input
/// bit over the output.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `i`-th draw of the stream named `seed`.
pub fn draw(seed: u64, i: u64) -> u64 {
    mix64(seed ^ i.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA))
}

/// [`draw`] as a uniform number in [0, 1), from its top 53 bits.
pub fn unit(seed: u64, i: u64) -> f64 {
    (draw(seed, i) >> 11) as f64 / (1u64 << 53) as f64
}

/// FNV-1a, 64 bits, over `bytes`: a hash that stays the same across
/// versions and machines (the standard library's does not promise to).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    Fnv1a64::default().write(bytes).finish()
}

/// [`fnv1a64`] fed in pieces: the hash of the pieces joined, so a text
/// read piece by piece is hashed without being kept.
///
/// ```
/// use goodput_core::util::hash::{fnv1a64, text_hash, Fnv1a64};
/// let mut h = Fnv1a64::default();
/// h.write(b"Hello").write(b" world");
/// assert_eq!(h.finish(), fnv1a64(b"Hello world"));
/// assert_eq!(h.hex(), text_hash("Hello world"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a64 {
    pub fn write(&mut self, bytes: &[u8]) -> &mut Self {
        self.0 = bytes.iter().fold(self.0, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
        self
    }

    pub fn finish(&self) -> u64 {
        self.0
    }

    /// The hash as records keep it (see [`text_hash`]).
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// A text's hash as records keep it: FNV-1a 64 in 16 hex digits.
///
/// ```
/// assert_eq!(goodput_core::util::hash::text_hash(""), "cbf29ce484222325");
/// assert_eq!(goodput_core::util::hash::text_hash("a"), "af63dc4c8601ec8c");
/// ```
pub fn text_hash(text: &str) -> String {
    Fnv1a64::default().write(text.as_bytes()).hex()
}

/// The 32-bit hash of each whitespace-separated word of `text`, in order
/// (FNV-1a 64 folded to 32 bits): a record's `output_words`.
pub fn word_hashes(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|w| {
            let h = fnv1a64(w.as_bytes());
            (h ^ (h >> 32)) as u32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_values() {
        // SplitMix64 seeded with 0 gives these first outputs (the state
        // advances by the gamma and is finalised), as in Vigna's reference.
        assert_eq!(mix64(GOLDEN_GAMMA), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(GOLDEN_GAMMA.wrapping_mul(2)), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn units_are_uniform_enough() {
        let n = 100_000;
        let below = (0..n).filter(|&i| unit(42, i) < 0.25).count() as f64 / n as f64;
        assert!((below - 0.25).abs() < 0.01, "{below}");
    }
}
