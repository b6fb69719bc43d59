//! Exact statistics over a run's samples: percentiles by linear interpolation
//! between closest ranks (numpy's default), mean, population std, min, max.

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The sum of token counts, saturating at `u64::MAX` rather than wrapping:
/// a server may claim any count (2^64−1 tokens, twice, once summed to
/// 18446744073709551614), and a total past the largest is the largest.
pub fn total(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0u64, u64::saturating_add)
}

/// The `p`-th percentile (0..=100) of sorted `samples`, interpolating linearly
/// between closest ranks as numpy's default does. `None` when empty. An
/// infinite sample (a failure in the error-adjusted view) yields `+∞` once the
/// interpolation reaches it.
///
/// ```
/// use goodput_core::percentile;
/// let s = [1.0, 2.0, 3.0, 4.0];
/// assert_eq!(percentile(&s, 50.0), Some(2.5));
/// assert_eq!(percentile(&s, 0.0), Some(1.0));
/// assert_eq!(percentile(&s, 100.0), Some(4.0));
/// assert!((percentile(&s, 90.0).unwrap() - 3.7).abs() < 1e-12);
/// ```
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_by(sorted.len(), |i| sorted[i], p)
}

/// [`percentile`] of `n` sorted samples read by index (`at(i)`, in order).
fn percentile_by(n: usize, at: impl Fn(usize) -> f64, p: f64) -> Option<f64> {
    let (rank, lo, hi) = rank_of(n, p)?;
    between(at(lo), at(hi), rank, lo, hi)
}

/// Sorts `v` in [`f64::total_cmp`]'s order, as `sort_unstable_by(total_cmp)`
/// does, in about two thirds of its time (6.4 million ITL gaps: 115 ms
/// against 180): each value's bits are mapped once, in place, to those of
/// an unsigned integer in the same order (negatives' bits flipped, the sign
/// bit set on the rest), sorted as integers, and mapped back. The map is
/// one to one, so every value comes back bit for bit, and values that sort
/// equal are the same bits, so an unstable sort is as exact.
pub fn sort_total(v: &mut [f64]) {
    const SIGN: u64 = 1 << 63;
    for x in v.iter_mut() {
        let b = x.to_bits();
        *x = f64::from_bits(if b & SIGN != 0 { !b } else { b | SIGN });
    }
    v.sort_unstable_by_key(|x| x.to_bits());
    for x in v.iter_mut() {
        let k = x.to_bits();
        *x = f64::from_bits(if k & SIGN != 0 { k & !SIGN } else { !k });
    }
}

/// [`percentile`] of samples in any order, without sorting them all: the
/// same value, found by selection (the samples are reordered).
pub fn percentile_of(samples: &mut [f64], p: f64) -> Option<f64> {
    let (rank, lo, hi) = rank_of(samples.len(), p)?;
    let (_, &mut a, above) = samples.select_nth_unstable_by(lo, |x, y| x.total_cmp(y));
    let b = if hi == lo { a } else { above.iter().copied().min_by(|x, y| x.total_cmp(y))? };
    between(a, b, rank, lo, hi)
}

/// The rank of percentile `p` among `n` sorted samples, and the indices
/// either side of it.
fn rank_of(n: usize, p: f64) -> Option<(f64, usize, usize)> {
    if n == 0 {
        return None;
    }
    let rank = p.clamp(0.0, 100.0) / 100.0 * (n - 1) as f64;
    Some((rank, rank.floor() as usize, rank.ceil() as usize))
}

/// Linear interpolation between the samples `a` at `lo` and `b` at `hi`.
fn between(a: f64, b: f64, rank: f64, lo: usize, hi: usize) -> Option<f64> {
    if lo == hi || a == b {
        return Some(a);
    }
    if b.is_infinite() {
        return Some(f64::INFINITY);
    }
    Some(a + (b - a) * (rank - lo as f64))
}

/// Summary of one metric's samples. Fields are `None` when there were no
/// samples (or, for percentiles, when the value is infinite).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Distribution {
    pub count: u64,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// `(p, value)` pairs in the order asked for.
    pub percentiles: Vec<(f64, Option<f64>)>,
}

/// The mean and population variance of `n` samples, summed in their
/// order (as [`Distribution::from_sorted`] sums a sorted sample's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moments {
    pub mean: f64,
    pub var: f64,
}

impl Moments {
    /// Of the samples `at(0)` … `at(n − 1)`; both 0 when there are none.
    pub fn of(n: usize, at: impl Fn(usize) -> f64) -> Moments {
        if n == 0 {
            return Moments { mean: 0.0, var: 0.0 };
        }
        let mean = (0..n).map(&at).sum::<f64>() / n as f64;
        let var = (0..n)
            .map(|i| {
                let x = at(i);
                (x - mean) * (x - mean)
            })
            .sum::<f64>()
            / n as f64;
        Moments { mean, var }
    }
}

impl Distribution {
    /// Summarises `samples` (any order; sorted in place).
    pub fn from_samples(samples: &mut [f64], percentiles: &[f64]) -> Self {
        // Unstable is as exact here: values equal under `total_cmp` are the
        // same bits. It needs no buffer beside millions of ITL samples, and
        // is the faster.
        sort_total(samples);
        Self::from_sorted(samples, percentiles)
    }

    pub fn from_sorted(sorted: &[f64], percentiles: &[f64]) -> Self {
        let at = |i: usize| sorted[i];
        Self::from_sorted_by(sorted.len(), at, percentiles, Moments::of(sorted.len(), at))
    }

    /// [`Distribution::from_sorted`] of `n` sorted samples read by index
    /// (`at(i)`, in order), their [`Moments`] given: a sample held in
    /// another form (the ITL's gaps as whole nanoseconds) is summarised
    /// without a copy of it as floats, and its moments are summed once
    /// for the views that share it.
    pub fn from_sorted_by(n: usize, at: impl Fn(usize) -> f64, percentiles: &[f64], m: Moments) -> Self {
        let ps = percentiles.iter().map(|&p| (p, percentile_by(n, &at, p))).collect();
        if n == 0 {
            return Distribution::of(0, ps, [0.0; 4]);
        }
        Distribution::of(n as u64, ps, [m.mean, m.var, at(0), at(n - 1)])
    }

    /// `count` samples' percentiles and `[mean, variance, min, max]`, an
    /// infinite figure given as none.
    fn of(count: u64, percentiles: Vec<(f64, Option<f64>)>, [mean, var, min, max]: [f64; 4]) -> Self {
        let finite = |v: f64| if v.is_finite() { Some(v) } else { None };
        let percentiles = percentiles.into_iter().map(|(p, v)| (p, v.and_then(finite))).collect();
        if count == 0 {
            return Distribution { percentiles, ..Default::default() };
        }
        Distribution {
            count,
            mean: finite(mean),
            std: finite(var.sqrt()),
            min: finite(min),
            max: finite(max),
            percentiles,
        }
    }

    /// The value at percentile `p`, if it was computed.
    pub fn p(&self, p: f64) -> Option<f64> {
        self.percentiles.iter().find(|(q, _)| *q == p).and_then(|(_, v)| *v)
    }
}

/// Samples that each stand for a number of equal ones, sorted: read as the
/// sorted list of all of them, without writing it out. A response chunk of
/// `k` tokens is `k` ITL samples, and a server that claims billions of
/// tokens in a chunk must not make the client hold billions of samples.
#[derive(Debug, Clone, Default)]
pub struct Repeated {
    /// Each value, sorted, beside how many samples there are up to and
    /// including it: the pairs given, turned in place (a copy of the values
    /// and another of the counts had held three times their size).
    sorted: Vec<(f64, u64)>,
}

impl Repeated {
    /// `(value, times)` pairs in any order; a pair of zero times is none.
    pub fn new(mut pairs: Vec<(f64, u64)>) -> Self {
        pairs.retain(|p| p.1 > 0);
        pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut total = 0u64;
        for p in &mut pairs {
            total = total.saturating_add(p.1);
            p.1 = total;
        }
        Repeated { sorted: pairs }
    }

    /// How many samples, each repeat counted.
    pub fn len(&self) -> u64 {
        self.sorted.last().map_or(0, |p| p.1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th of the samples in sorted order (`i < len`).
    pub fn at(&self, i: u64) -> f64 {
        self.sorted[self.sorted.partition_point(|p| p.1 <= i).min(self.sorted.len() - 1)].0
    }

    /// What [`Distribution::from_samples`] gives of the samples written out.
    pub fn distribution(&self, percentiles: &[f64]) -> Distribution {
        let n = self.len();
        let at = |p: f64| {
            let (rank, lo, hi) = rank_of(n as usize, p)?;
            between(self.at(lo as u64), self.at(hi as u64), rank, lo, hi)
        };
        let ps = percentiles.iter().map(|&p| (p, at(p))).collect();
        if n == 0 {
            return Distribution::of(0, ps, [0.0; 4]);
        }
        let s = &self.sorted;
        let times = |k: usize| (s[k].1 - k.checked_sub(1).map_or(0, |j| s[j].1)) as f64;
        let mean = s.iter().enumerate().map(|(k, p)| p.0 * times(k)).sum::<f64>() / n as f64;
        let var = s.iter().enumerate().map(|(k, p)| (p.0 - mean) * (p.0 - mean) * times(k)).sum::<f64>() / n as f64;
        let (min, max) = (s[0].0, s[s.len() - 1].0);
        Distribution::of(n, ps, [mean, var, min, max])
    }
}

/// `p99.9` → `p99_9`, `p50` → `p50`: the JSON key of a percentile.
pub fn percentile_key(p: f64) -> String {
    let s = format!("{p}");
    format!("p{}", s.replace('.', "_"))
}

fn parse_percentile_key(k: &str) -> Option<f64> {
    k.strip_prefix('p')?.replace('_', ".").parse().ok()
}

impl Serialize for Distribution {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("count", &self.count)?;
        m.serialize_entry("mean", &self.mean)?;
        m.serialize_entry("std", &self.std)?;
        m.serialize_entry("min", &self.min)?;
        for (p, v) in &self.percentiles {
            m.serialize_entry(&percentile_key(*p), v)?;
        }
        m.serialize_entry("max", &self.max)?;
        m.end()
    }
}

/// The schema of what `Serialize` writes: the fixed keys, and a `pNN` key
/// per percentile asked for (`p50`, `p99_9`), each a number or `null`.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Distribution {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Distribution".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let value = serde_json::json!({ "type": ["number", "null"] });
        schemars::json_schema!({
            "description": "One metric over a run's samples, in the unit its name ends with (`_ms`). \
                `count` samples; `mean`, population `std`, `min`, `max` and a `pNN` key per percentile \
                asked for (`p50`, `p99_9` for 99.9), by linear interpolation as numpy's default. A figure \
                is `null` when there were no samples, or when it is infinite (a failure in the \
                error-adjusted view).",
            "type": "object",
            "properties": {
                "count": { "type": "integer", "minimum": 0 },
                "mean": value,
                "std": value,
                "min": value,
                "max": value,
            },
            "patternProperties": { "^p[0-9]+(_[0-9]+)?$": value },
            "additionalProperties": false,
            "required": ["count", "mean", "std", "min", "max"],
        })
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Distribution;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a distribution {count, mean, std, min, pNN…, max}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Distribution, A::Error> {
                let mut d = Distribution::default();
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "count" => d.count = map.next_value()?,
                        "mean" => d.mean = map.next_value()?,
                        "std" => d.std = map.next_value()?,
                        "min" => d.min = map.next_value()?,
                        "max" => d.max = map.next_value()?,
                        other => match parse_percentile_key(other) {
                            Some(p) => d.percentiles.push((p, map.next_value()?)),
                            None => {
                                return Err(de::Error::unknown_field(
                                    other,
                                    &["count", "mean", "std", "min", "pNN", "max"],
                                ))
                            }
                        },
                    }
                }
                Ok(d)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// An independent oracle: numpy's "linear" method written from its
    /// definition (virtual index (n−1)·q, then interpolate).
    fn oracle(samples: &[f64], p: f64) -> f64 {
        let mut v = samples.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let h = (v.len() as f64 - 1.0) * p / 100.0;
        let i = h as usize;
        if i + 1 >= v.len() {
            return v[v.len() - 1];
        }
        v[i] + (h - i as f64) * (v[i + 1] - v[i])
    }

    #[test]
    fn table_of_known_values() {
        // numpy.percentile([15, 20, 35, 40, 50], [5, 30, 40, 50, 100])
        let s = [15.0, 20.0, 35.0, 40.0, 50.0];
        let cases = [(5.0, 16.0), (30.0, 23.0), (40.0, 29.0), (50.0, 35.0), (100.0, 50.0)];
        for (p, want) in cases {
            let got = percentile(&s, p).unwrap();
            assert!((got - want).abs() < 1e-9, "p{p}: {got} != {want}");
        }
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
    }

    #[test]
    fn infinite_samples_propagate() {
        let s = [1.0, 2.0, f64::INFINITY];
        assert_eq!(percentile(&s, 50.0), Some(2.0));
        assert_eq!(percentile(&s, 75.0), Some(f64::INFINITY));
        let d = Distribution::from_sorted(&s, &[50.0, 99.0]);
        assert_eq!(d.p(50.0), Some(2.0));
        assert_eq!(d.p(99.0), None);
        assert_eq!(d.max, None);
    }

    #[test]
    fn std_is_population() {
        let d = Distribution::from_samples(&mut [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], &[50.0]);
        assert_eq!(d.mean, Some(5.0));
        assert_eq!(d.std, Some(2.0));
    }

    #[test]
    fn serialises_with_percentile_keys_and_reads_back() {
        let d = Distribution::from_samples(&mut [1.0, 2.0, 3.0], &[50.0, 99.9]);
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["p50"], 2.0);
        assert!(v.get("p99_9").is_some());
        let back: Distribution = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }

    proptest! {
        #[test]
        fn matches_oracle(mut v in prop::collection::vec(-1e6f64..1e6, 1..200), p in 0.0f64..=100.0) {
            let want = oracle(&v, p);
            v.sort_by(|a, b| a.total_cmp(b));
            let got = percentile(&v, p).unwrap();
            prop_assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{} vs {}", got, want);
        }

        #[test]
        fn selection_gives_the_sorted_percentile_exactly(
            mut v in prop::collection::vec(prop_oneof![-1e6f64..1e6, Just(0.0), Just(-0.0), Just(f64::INFINITY)], 1..200),
            p in 0.0f64..=100.0,
        ) {
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| a.total_cmp(b));
            let want = percentile(&sorted, p);
            prop_assert_eq!(percentile_of(&mut v, p).map(f64::to_bits), want.map(f64::to_bits));
        }

        /// Every value, NaNs and zeros of both signs among them, comes back
        /// bit for bit in `total_cmp`'s order.
        #[test]
        fn sort_total_is_total_cmps_order_bit_for_bit(
            mut v in prop::collection::vec(prop_oneof![
                any::<f64>(),
                -1e6f64..1e6,
                Just(0.0),
                Just(-0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(f64::NAN),
                Just(-f64::NAN),
            ], 0..300),
        ) {
            let mut want = v.clone();
            want.sort_by(|a, b| a.total_cmp(b));
            sort_total(&mut v);
            prop_assert_eq!(v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        }

        #[test]
        fn monotonic_and_bounded(mut v in prop::collection::vec(-1e6f64..1e6, 1..200), a in 0.0f64..=100.0, b in 0.0f64..=100.0) {
            v.sort_by(|a, b| a.total_cmp(b));
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (x, y) = (percentile(&v, lo).unwrap(), percentile(&v, hi).unwrap());
            prop_assert!(x <= y);
            prop_assert!(v[0] <= x && y <= v[v.len() - 1]);
        }
    }

    proptest! {
        /// Samples held as (value, times) read as the samples written out.
        #[test]
        fn repeated_samples_are_the_samples_written_out(
            pairs in proptest::collection::vec((0.0f64..100.0, 0u64..5), 0..40),
        ) {
            let mut out: Vec<f64> =
                pairs.iter().flat_map(|&(v, k)| std::iter::repeat_n(v, k as usize)).collect();
            let ps = [0.0, 25.0, 50.0, 90.0, 99.0, 100.0];
            let want = Distribution::from_samples(&mut out, &ps);
            let rep = Repeated::new(pairs.clone());
            prop_assert_eq!(rep.len(), out.len() as u64);
            for (i, &x) in out.iter().enumerate() {
                prop_assert_eq!(rep.at(i as u64), x);
            }
            let got = rep.distribution(&ps);
            prop_assert_eq!((got.count, got.min, got.max), (want.count, want.min, want.max));
            prop_assert_eq!(&got.percentiles, &want.percentiles);
            let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                (a, b) => a == b,
            };
            prop_assert!(close(got.mean, want.mean) && close(got.std, want.std), "{:?} {:?}", got, want);
        }
    }
}
