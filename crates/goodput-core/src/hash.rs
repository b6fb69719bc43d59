//! Deterministic draws: SplitMix64's finaliser over a seed and an index, so
//! that the `i`-th request of a run draws the same number whatever order
//! requests are made in, and neighbouring indices draw unrelated numbers.
//!
//! ```
//! use goodput_core::hash::{draw, unit};
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
