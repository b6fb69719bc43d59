//! How sure a run's figures are: confidence intervals on every percentile,
//! on the throughput and goodput rates and on SLO attainment
//! (docs/metrics.md, "Intervals").
//!
//! - A percentile's interval is a pair of order statistics: with `n`
//!   independent samples, the number below the true `q`-quantile is
//!   Binomial(n, q), so `[x(l), x(u)]` covers it with a probability that
//!   depends on `n`, `q`, `l` and `u` alone, whatever the distribution
//!   (continuous; ties only make it cover more). The ranks are equal-tailed:
//!   the lower the highest, and the upper the lowest, whose chance of
//!   missing the true quantile on its own side is at most `(1 − confidence)
//!   / 2`, so each side read alone ("at most hi") is wrong at most that
//!   often, and together they cover at least the confidence: exact, no
//!   resampling. When no rank is high enough (a p99 of 50 samples), the
//!   upper bound is none: the sample does not bound it, and the lower bound
//!   is then one-sided at the full confidence (and so, the other way round,
//!   for a low percentile).
//! - Attainment (good / judged requests) is a binomial proportion, with
//!   Wilson's score interval: closed-form, inside [0, 1] even when every
//!   request was good, and with coverage near the level asked (Brown, Cai
//!   and DasGupta 2001), where Clopper–Pearson's is guaranteed but wider,
//!   covering 97–99% at the sizes runs have.
//! - A rate (completions, output tokens, goodput per second) is a count
//!   process over the window: by batch means, the window split into
//!   [`BATCHES`] equal sub-windows, each request counted (with its tokens)
//!   in the one its end falls in, and Student's t over the sub-windows'
//!   rates. Their mean is the run's rate exactly; batches absorb the
//!   correlation between neighbouring requests that one request at a time
//!   would not.
//! - Requests of one session are not independent: in a run with sessions,
//!   percentile and attainment intervals resample whole sessions (a cluster
//!   bootstrap) rather than take requests one by one.

use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::slo::{Slo, SloMetric};
use crate::analysis::stats::{percentile, percentile_key};
use crate::doc::record::{Outcome, RequestRecord};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The confidence of the intervals unless `--confidence` says otherwise.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Sub-windows of a rate's batch means.
pub const BATCHES: usize = 10;

/// Resamples of a session bootstrap.
const SESSION_RESAMPLES: u64 = 1000;

/// A confidence interval; a side is `null` where the sample supports no
/// bound (too few requests for a p99 to have an upper one).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Interval {
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Interval {
    pub const NONE: Interval = Interval { lo: None, hi: None };

    /// Both sides bounded.
    pub fn bounded(&self) -> bool {
        self.lo.is_some() && self.hi.is_some()
    }

    /// Whether `x` is inside, an unbounded side reaching as far as it can.
    pub fn contains(&self, x: f64) -> bool {
        self.lo.is_none_or(|lo| lo <= x) && self.hi.is_none_or(|hi| x <= hi)
    }

    /// The interval moved to hold `est` where a bound falls past it: wider,
    /// and holding what it bounds at least as often. A side that is none
    /// stays none.
    pub fn holding(self, est: Option<f64>) -> Interval {
        match est {
            Some(e) => Interval { lo: self.lo.map(|l| l.min(e)), hi: self.hi.map(|h| h.max(e)) },
            None => self,
        }
    }
}

/// The intervals of the throughput rates.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RateIntervals {
    pub requests_per_s: Interval,
    pub output_tokens_per_s: Interval,
}

/// The intervals of the goodput figures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct GoodputIntervals {
    pub requests_per_s: Interval,
    pub output_tokens_per_s: Interval,
    /// Of `summary.goodput.slo_attainment`: the share that met every threshold.
    pub slo_attainment: Interval,
    /// Of the limits' attainment the verdict held to its target
    /// (`slo.attainment.measured`), where it counted the limits alone
    /// beside percentile objectives; absent otherwise (it is then
    /// `slo_attainment`'s share), and in documents written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits_attainment: Option<Interval>,
}

/// What the intervals took as independent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Each request (order statistics, Wilson).
    #[default]
    Requests,
    /// Each session: its requests resampled together.
    Sessions,
}

/// `summary.intervals` of the result: how sure each figure is
/// (docs/metrics.md, "Intervals").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Intervals {
    /// The confidence level, e.g. 0.95.
    pub confidence: f64,
    /// What the percentile and attainment intervals took as independent:
    /// `requests` (order statistics and Wilson's interval), or `sessions`
    /// (a bootstrap over whole sessions).
    pub unit: Unit,
    /// Per distribution path (`ttft_ms`, `error_adjusted.e2e_ms`), per
    /// percentile key (`p99`), the interval of that percentile. Only
    /// per-request figures: ITL and chunk gaps are many samples of one
    /// request each, not independent, and have none.
    pub latency: BTreeMap<String, BTreeMap<String, Interval>>,
    /// Per distribution path, per percentile key, where requests taken one
    /// by one were found to depend on their neighbours (in the order they
    /// ended: requests sent in waves, a drifting server), how many times
    /// the count below the percentile varied as much as independent
    /// requests' would (Student's t on the batches folded in): its interval
    /// in `latency` is that of this many times fewer requests. A tail with
    /// too few requests beyond it to tell its own has the median's. Under
    /// `goodput`, `slo_attainment` and `limits_attainment` alike for the
    /// attainments' intervals (too few misses to tell: the largest median
    /// factor of the latencies the SLO judges). Absent for a figure taken as independent,
    /// and in documents written before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dependence: BTreeMap<String, BTreeMap<String, f64>>,
    /// Sub-windows of the rates' batch means.
    pub batches: u32,
    pub throughput: RateIntervals,
    /// Present when the run was judged against an SLO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputIntervals>,
}

impl Intervals {
    /// The interval of distribution `key`'s percentile `p`, if computed.
    pub fn percentile(&self, key: &str, p: f64) -> Option<&Interval> {
        self.latency.get(key)?.get(&percentile_key(p))
    }
}

/// Whether `c` is a confidence level: above 0.5 and below 1.
pub fn valid_confidence(c: f64) -> bool {
    c.is_finite() && c > 0.5 && c < 1.0
}

// ---------------------------------------------------------------------------
// Special functions: ln Γ, the regularised incomplete beta, the normal and
// Student's t quantiles.

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: 15 digits).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta I_x(a, b), by its continued fraction
/// (Lentz), on the side where it converges fast.
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The standard normal quantile (Acklam's rational approximation, relative
/// error under 1.2e-9), for 0 < p < 1.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The standard normal CDF (by erfc's Chebyshev fit, Numerical Recipes'
/// `erfcc`: relative error under 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// Student's t CDF with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Student's t quantile with `df` degrees of freedom, for 0.5 < p < 1 (by
/// bisection on the CDF: 60 halvings of [0, 1e6]).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1e6f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

// ---------------------------------------------------------------------------
// Percentiles.

/// The ranks (1-based) of the order statistics that bound the `q`-quantile
/// of `n` samples at confidence `conf`, equal-tailed: `(l, u)` with `l = 0`
/// for no lower bound and `u = n + 1` for no upper one, and the exact
/// coverage. With K ~ Binomial(n, q), each bounded side misses at most
/// `(1 − conf) / 2`: P(K ≤ l − 1) below, P(K ≥ u) above; when one side is
/// none, the other misses at most `1 − conf`.
pub fn percentile_ranks(n: u64, q: f64, conf: f64) -> (u64, u64, f64) {
    if n == 0 || q <= 0.0 || q >= 1.0 {
        return (0, n + 1, 1.0);
    }
    let alpha = 1.0 - conf;
    // P(K ≤ k) for K ~ Binomial(n, q), over the window of k where it moves
    // (outside it, 0 or 1 to within 1e-14), from the pmf by recurrence.
    let nf = n as f64;
    let sd = (nf * q * (1.0 - q)).sqrt();
    let from = ((nf * q - 9.0 * sd - 10.0).floor().max(0.0)) as u64;
    let to = ((nf * q + 9.0 * sd + 10.0).ceil().min(nf)) as u64;
    let ln_pmf = |k: u64| {
        let k = k as f64;
        ln_gamma(nf + 1.0) - ln_gamma(k + 1.0) - ln_gamma(nf - k + 1.0) + k * q.ln() + (nf - k) * (1.0 - q).ln()
    };
    // The mass below the window, exactly (it is tiny, but at small n it is not nothing).
    // P(K ≤ from − 1) = I_{1−q}(n − from + 1, from).
    let below = if from == 0 { 0.0 } else { inc_beta(nf - from as f64 + 1.0, from as f64, 1.0 - q) };
    let below = below.clamp(0.0, 1.0);
    let mut cdf = Vec::with_capacity((to - from + 1) as usize);
    let mut acc = below;
    for k in from..=to {
        acc += ln_pmf(k).exp();
        cdf.push(acc.min(1.0));
    }
    // P(K ≤ k) for any k ≥ −1.
    let at = |k: i64| -> f64 {
        if k < from as i64 {
            if k < 0 {
                0.0
            } else {
                below
            }
        } else if k > to as i64 {
            1.0
        } else {
            cdf[(k - from as i64) as usize]
        }
    };
    // Equal tails: the lower rank is the largest l whose miss, P(K ≤ l − 1)
    // (the true quantile below x(l)), is at most `tail`; the upper the
    // smallest u whose miss, P(K ≥ u) (the quantile above x(u)), is at most
    // `tail`. The misses only shrink as the ranks move outward, so each is a
    // bisection (l = 0 and u = n + 1, no bound, always qualify).
    let first = |mut a: u64, mut b: u64, ok: &dyn Fn(u64) -> bool| {
        // The least k in [a, b] with ok(k), ok(b) being true and ok monotone.
        while a < b {
            let m = a + (b - a) / 2;
            if ok(m) {
                b = m;
            } else {
                a = m + 1;
            }
        }
        a
    };
    let lower = |tail: f64| first(0, n, &|l| at(l as i64) > tail);
    let upper = |tail: f64| first(1, n + 1, &|u| 1.0 - at(u as i64 - 1) <= tail);
    let (mut l, mut u) = (lower(alpha / 2.0), upper(alpha / 2.0));
    // A side the sample cannot bound is none, and the other is then
    // one-sided at the full confidence (a lower bound where neither can be
    // bounded at half the miss each).
    if u > n {
        l = lower(alpha);
    } else if l == 0 {
        u = upper(alpha);
    }
    // Coverage of [x(l), x(u)] = P(l ≤ K ≤ u − 1).
    (l, u, at(u as i64 - 1) - at(l as i64 - 1))
}

/// The fewest independent samples whose percentile `p` (0..=100) has an
/// upper bound at confidence `conf` (a p99 at 95%: 368); none for a
/// percentile of 100 or more, which no sample bounds.
pub fn samples_to_bound(p: f64, conf: f64) -> Option<u64> {
    let q = p / 100.0;
    if !(q > 0.0 && q < 1.0 && valid_confidence(conf)) {
        return None;
    }
    let bounded = |n: u64| percentile_ranks(n, q, conf).1 <= n;
    let mut hi = 1u64;
    while !bounded(hi) {
        hi = hi.checked_mul(2).filter(|&h| h <= 1 << 40)?;
    }
    let mut lo = hi / 2 + 1;
    while lo < hi {
        let m = lo + (hi - lo) / 2;
        if bounded(m) {
            hi = m;
        } else {
            lo = m + 1;
        }
    }
    Some(hi)
}

/// The interval of percentile `p` (0..=100) of `sorted` samples at
/// confidence `conf`, taking the samples as independent.
///
/// The interval holds the percentile shown beside it (linearly
/// interpolated, as numpy gives it): a bound of the order statistics can
/// fall past it (a p99 of 3 samples lies below the largest, the one-sided
/// bound; a p99.9 of 80 too), and printed as `24.04 [24.07, —]` the
/// interval had left out its own figure. Moved to it, a bound is wider,
/// and holds at least as often.
pub fn percentile_interval(sorted: &[f64], p: f64, conf: f64) -> Interval {
    shown(percentile_bounds(sorted, p, conf), sorted, p)
}

/// A percentile's bounds `b` as its interval is shown: an infinite side
/// (a failure counted infinitely slow) unbounded, and moved to hold the
/// percentile of `sorted` ([`percentile_interval`]).
fn shown(b: Interval, sorted: &[f64], p: f64) -> Interval {
    let finite = |v: f64| v.is_finite().then_some(v);
    let est = crate::analysis::stats::percentile(sorted, p).filter(|v| v.is_finite());
    Interval { lo: b.lo.and_then(finite), hi: b.hi.and_then(finite) }.holding(est)
}

/// Fewest samples a batch of [`dependence`] holds: below [`BATCHES`] × this
/// the samples are taken as independent, as before.
pub const DEPENDENCE_MIN_BATCH: usize = 5;

/// How much more the count of samples at or below `est` varies, over
/// `in_order` (the samples in the order the run took them), than it would
/// for independent samples: the variance of that count by batch means
/// ([`BATCHES`] runs of consecutive samples, as the rates' sub-windows),
/// over the binomial `n p̂ (1 − p̂)`. Near 1 for independent samples (a
/// χ² of nine degrees over nine); in lockstep, where a wave's requests share
/// one TTFT, the number of requests a wave holds or more. None where it
/// cannot be told: fewer than [`DEPENDENCE_MIN_BATCH`] samples a batch, or
/// fewer than [`BATCHES`] on one side of `est` (a p99 of under 1,000).
pub fn dependence(in_order: &[f64], est: f64) -> Option<(f64, usize)> {
    let n = in_order.len();
    if n < BATCHES * DEPENDENCE_MIN_BATCH {
        return None;
    }
    let b = dependence_batches(n);
    // A sample equal to `est` counts half (mid-rank): ties, a wave's
    // requests that share one value, would otherwise put every sample on
    // one side of a percentile that falls on them.
    let below = |v: &f64| match v.total_cmp(&est) {
        std::cmp::Ordering::Less => 1.0,
        std::cmp::Ordering::Equal => 0.5,
        std::cmp::Ordering::Greater => 0.0,
    };
    // Batch j holds samples [j n / B, (j + 1) n / B): sizes differ by one
    // at most. Each batch's size and count at or below `est`.
    let batches: Vec<(f64, f64)> = (0..b)
        .map(|j| {
            let batch = &in_order[j * n / b..(j + 1) * n / b];
            (batch.len() as f64, batch.iter().map(below).sum::<f64>())
        })
        .collect();
    let k: f64 = batches.iter().map(|&(_, c)| c).sum();
    // Fewer than one sample a batch (of ten) on a side: too few to tell
    // how they cluster (one alone gives a factor near 1 wherever it falls).
    if k.min(n as f64 - k) < BATCHES as f64 {
        return None;
    }
    let p = k / n as f64;
    let ss: f64 = batches.iter().map(|&(m, c)| m * (c / m - p) * (c / m - p)).sum();
    Some((ss / (b as f64 - 1.0) / (p * (1.0 - p)), b))
}

/// The factor [`dependence`] over `b` batches of independent samples
/// exceeds one time in a hundred: it is then a χ² of `b − 1` degrees over
/// `b − 1`, whose 99th percentile this is (Wilson and Hilferty's cube
/// root, within 0.5% from nine degrees up: 2.41 for nine, 1.69 for 29).
/// One in a hundred, not one in twenty: a run has some thirty
/// percentiles, and at one in twenty one or two of them were widened in a
/// run of independent requests.
pub fn dependence_threshold(b: usize) -> f64 {
    let nu = b as f64 - 1.0;
    let c = 2.0 / (9.0 * nu);
    (1.0 - c + normal_quantile(0.99) * c.sqrt()).powi(3)
}

/// Batches of [`dependence`] over `n` samples: √n / 2, at least
/// [`BATCHES`] and at most 30.
pub fn dependence_batches(n: usize) -> usize {
    ((n as f64).sqrt() / 2.0).round().clamp(BATCHES as f64, 30.0) as usize
}

/// [`percentile_interval`] of samples that need not be independent:
/// `in_order` as the run took them, `sorted` the same sorted. Where
/// [`dependence`] finds the count below the percentile varying `τ` times
/// as much as independent samples' would, beyond [`dependence_threshold`],
/// the ranks are those of `n / τ` independent samples (the effective
/// sample size; τ with Student's t on the batches folded in), carried
/// over to the `n` at the same fractions: wider, about `√τ` times near
/// the middle. A tail with too few samples beyond it to tell takes the
/// median's factor ([`tail_widening`]). Otherwise exactly
/// [`percentile_interval`]. The factor is returned beside it where it
/// widened the interval.
pub fn percentile_interval_dependent(in_order: &[f64], sorted: &[f64], p: f64, conf: f64) -> (Interval, Option<f64>) {
    let (b, tau) = dependent_bounds(in_order, sorted, p, conf);
    (shown(b, sorted, p), tau)
}

/// [`percentile_objective_bounds`] of samples that need not be
/// independent, as [`percentile_interval_dependent`] widens them.
pub fn percentile_objective_bounds_dependent(in_order: &[f64], sorted: &[f64], p: f64, conf: f64) -> Interval {
    dependent_bounds(in_order, sorted, p, conf).0.holding(crate::analysis::stats::percentile(sorted, p))
}

/// How many times fewer independent samples `in_order` is worth for the
/// share at or below `est` ([`dependence`]'s τ′), where it is worth fewer:
/// only where the factor is beyond what independent samples would give
/// one time in a hundred ([`dependence_threshold`]), and then by it with
/// Student's t on the batches (their few degrees of freedom) in place of
/// the normal's z.
fn widening(in_order: &[f64], est: f64, conf: f64) -> Option<f64> {
    widened_by(dependence(in_order, est)?, conf)
}

/// τ′ of [`dependence`]'s `(τ, b)`, where τ passes [`dependence_threshold`].
fn widened_by((t, b): (f64, usize), conf: f64) -> Option<f64> {
    let k = (t_quantile(0.5 + conf / 2.0, b as f64 - 1.0) / normal_quantile(0.5 + conf / 2.0)).powi(2);
    (t > dependence_threshold(b)).then_some(t * k).filter(|&t| t > 1.0)
}

/// [`widening`] at a percentile `est` of `sorted`; where too few samples lie
/// beyond it to tell (a p99 of under 1,000), the median's. A tail's
/// requests come in the same waves as the rest of the run's, and had been
/// taken as independent, most narrowly where they are fewest: in lockstep
/// a p95 showed `[89.7, 98.0]` beside a p90 of `[83.3, —]`. Where neighbours
/// depend on each other less in the tail than at the middle (a drift's
/// indicator is most correlated at its median), the median's factor widens
/// the tail more than its own would have: on the safe side.
fn tail_widening(in_order: &[f64], sorted: &[f64], est: f64, conf: f64) -> Option<f64> {
    match dependence(in_order, est) {
        Some(d) => widened_by(d, conf),
        None => median_widening(in_order, sorted, conf),
    }
}

/// [`widening`] at the median of `sorted`, `in_order` sorted: what a tail,
/// or an attainment, too thin to tell its own takes.
fn median_widening(in_order: &[f64], sorted: &[f64], conf: f64) -> Option<f64> {
    widening(in_order, crate::analysis::stats::percentile(sorted, 50.0)?, conf)
}

/// Wilson's interval of the share of `met` among requests that need not be
/// independent, in the order they ended: where neighbours were found to
/// depend on each other ([`dependence`], as a percentile's), the share's
/// interval over `n / τ′` requests, returned with τ′; otherwise
/// [`wilson`]'s exactly. Where too few requests missed (or met) to tell,
/// as a tail with too few beyond it ([`tail_widening`]), the largest
/// factor at the median of `alike`, the latencies the SLO's terms judge
/// (each in the same order): a request meets a limit as its latency lies
/// below it, and in waves a wave's latencies and verdicts are shared alike.
pub fn wilson_dependent(met_in_order: &[bool], alike: &[&[f64]], conf: f64) -> (Interval, Option<f64>) {
    let n = met_in_order.len() as u64;
    let good = met_in_order.iter().filter(|&&m| m).count() as u64;
    // A miss is 1 and a met request 0: the share at or below ½ is the met share.
    let v: Vec<f64> = met_in_order.iter().map(|&m| if m { 0.0 } else { 1.0 }).collect();
    let tau = match dependence(&v, 0.5) {
        Some(d) => widened_by(d, conf),
        None if v.len() >= BATCHES * DEPENDENCE_MIN_BATCH => alike
            .iter()
            .filter_map(|&x| {
                let mut sorted = x.to_vec();
                crate::analysis::stats::sort_total(&mut sorted);
                median_widening(x, &sorted, conf)
            })
            .max_by(f64::total_cmp),
        None => None,
    };
    match tau {
        Some(tau) => {
            let n_eff = ((n as f64 / tau).floor() as u64).max(1);
            (wilson_share(good as f64 / n as f64, n_eff, conf), Some(tau))
        }
        None => (wilson(good, n, conf), None),
    }
}

/// [`percentile_bounds`] at the effective sample size, and the factor where
/// it is below `n`.
fn dependent_bounds(in_order: &[f64], sorted: &[f64], p: f64, conf: f64) -> (Interval, Option<f64>) {
    let n = sorted.len() as u64;
    let est = crate::analysis::stats::percentile(sorted, p);
    let Some(tau) = est.and_then(|e| tail_widening(in_order, sorted, e, conf)) else {
        return (percentile_bounds(sorted, p, conf), None);
    };
    let n_eff = ((n as f64 / tau).floor() as u64).max(1);
    let (l, u, _) = percentile_ranks(n_eff, p / 100.0, conf);
    // Rank k of n_eff sits at the fraction k / (n_eff + 1) of the sample;
    // the rank at that fraction of n, rounded outward.
    let scale = (n + 1) as f64 / (n_eff + 1) as f64;
    let at = |k: u64| sorted[k as usize - 1];
    let lo = (l >= 1).then(|| at(((l as f64 * scale).floor() as u64).clamp(1, n)));
    let hi = (u <= n_eff).then(|| at(((u as f64 * scale).ceil() as u64).clamp(1, n)));
    (Interval { lo, hi }, Some(tau))
}

/// [`percentile_interval`]'s order statistics as they are, an infinite one
/// (a failure counted infinitely slow) kept: an SLO objective's bound that
/// falls on one is missed, where a figure's interval calls that side
/// unbounded. Not moved to the estimate: [`percentile_objective_bounds`]
/// is, for deciding a side.
pub fn percentile_bounds(sorted: &[f64], p: f64, conf: f64) -> Interval {
    let n = sorted.len() as u64;
    if n == 0 {
        return Interval::NONE;
    }
    let (l, u, _) = percentile_ranks(n, p / 100.0, conf);
    Interval { lo: (l >= 1).then(|| sorted[l as usize - 1]), hi: (u <= n).then(|| sorted[u as usize - 1]) }
}

/// [`percentile_bounds`] moved to hold the percentile itself, an infinite
/// one too ([`Interval::holding`]): what `--stop-on-slo` decides an
/// objective's side on, so that a side it decides is the side of the
/// estimate the verdict judges. At p99.99 of 50 samples the lower bound is
/// the largest sample, past the estimate: a limit between them had been
/// decided missed where the verdict passes.
pub fn percentile_objective_bounds(sorted: &[f64], p: f64, conf: f64) -> Interval {
    percentile_bounds(sorted, p, conf).holding(crate::analysis::stats::percentile(sorted, p))
}

/// The intervals of percentiles `ps` over samples grouped in clusters (a
/// session's requests), by resampling whole clusters: for each, the
/// `(1 − conf)/2` and `(1 + conf)/2` quantiles of the percentile over the
/// resamples (one resampling serves every percentile). `seed` makes it repeat.
pub fn clustered_percentile_intervals(clusters: &[Vec<f64>], ps: &[f64], conf: f64, seed: u64) -> Vec<Interval> {
    let k = clusters.len();
    if k < 2 {
        return vec![Interval::NONE; ps.len()];
    }
    let mut stats = vec![Vec::with_capacity(SESSION_RESAMPLES as usize); ps.len()];
    let mut pool = Vec::new();
    for b in 0..SESSION_RESAMPLES {
        pool.clear();
        for i in 0..k {
            let c = crate::util::hash::draw(seed, b * k as u64 + i as u64) % k as u64;
            pool.extend_from_slice(&clusters[c as usize]);
        }
        for (j, &p) in ps.iter().enumerate() {
            // Selection reorders the pool, never changes what it holds.
            if let Some(v) = crate::analysis::stats::percentile_of(&mut pool, p) {
                stats[j].push(v);
            }
        }
    }
    // Each interval holds the percentile of all the samples, as
    // [`percentile_interval`]'s does.
    let mut all: Vec<f64> = clusters.iter().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    stats
        .into_iter()
        .zip(ps)
        .map(|(s, &p)| {
            let b = bootstrap_bounds(s, conf);
            match percentile(&all, p).filter(|v| v.is_finite()) {
                Some(e) => Interval { lo: b.lo.map(|l| l.min(e)), hi: b.hi.map(|h| h.max(e)) },
                None => b,
            }
        })
        .collect()
}

/// [`clustered_percentile_intervals`] of one percentile.
pub fn clustered_percentile_interval(clusters: &[Vec<f64>], p: f64, conf: f64, seed: u64) -> Interval {
    clustered_percentile_intervals(clusters, &[p], conf, seed)[0]
}

fn bootstrap_bounds(mut stats: Vec<f64>, conf: f64) -> Interval {
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - conf) / 2.0 * 100.0;
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    Interval { lo: finite(percentile(&stats, tail)), hi: finite(percentile(&stats, 100.0 - tail)) }
}

// ---------------------------------------------------------------------------
// Proportions and rates.

/// Wilson's score interval for `good` of `n`.
pub fn wilson(good: u64, n: u64, conf: f64) -> Interval {
    wilson_share(if n == 0 { 0.0 } else { good as f64 / n as f64 }, n, conf)
}

/// Wilson's score interval for a share `ph` of `n`: a proportion, or the
/// mean of `n` values each in [0, 1] (a ROUGE-L, a chrF over 100), whose
/// variance is at most μ(1 − μ), a proportion's, so the interval is at
/// least as wide as their own would be.
pub fn wilson_share(ph: f64, n: u64, conf: f64) -> Interval {
    if n == 0 {
        return Interval::NONE;
    }
    let z = normal_quantile(0.5 + conf / 2.0);
    let nf = n as f64;
    let d = 1.0 + z * z / nf;
    let c = (ph + z * z / (2.0 * nf)) / d;
    let h = z * (ph * (1.0 - ph) / nf + z * z / (4.0 * nf * nf)).sqrt() / d;
    // At 0% or 100% the side is the share itself, which rounding had left
    // just short of it (100% of 400 requests: hi 0.9999999999999999).
    let lo = if ph <= 0.0 { 0.0 } else { (c - h).max(0.0) };
    let hi = if ph >= 1.0 { 1.0 } else { (c + h).min(1.0) };
    Interval { lo: Some(lo), hi: Some(hi) }
}

/// The interval of a rate by batch means: `events` are (seconds into the
/// window, amount); the window of `dur` seconds is split into `batches`
/// equal sub-windows, and Student's t with `batches − 1` degrees of freedom
/// is put on their rates. No interval under two events or for an empty window.
pub fn rate_interval(events: &[(f64, f64)], dur: f64, batches: usize, conf: f64) -> Interval {
    if dur.is_nan() || dur <= 0.0 || events.len() < 2 || batches < 2 {
        return Interval::NONE;
    }
    let width = dur / batches as f64;
    let mut sums = vec![0.0; batches];
    for &(t, x) in events {
        let i = ((t / width).floor().max(0.0) as usize).min(batches - 1);
        sums[i] += x;
    }
    let rates: Vec<f64> = sums.iter().map(|s| s / width).collect();
    let k = batches as f64;
    let mean = rates.iter().sum::<f64>() / k;
    let var = rates.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / (k - 1.0);
    let half = t_quantile(0.5 + conf / 2.0, k - 1.0) * (var / k).sqrt();
    Interval { lo: Some((mean - half).max(0.0)), hi: Some(mean + half) }
}

// ---------------------------------------------------------------------------
// A run's intervals.

/// The distributions that take one sample per request, by their path in
/// `summary`, and how each request gives it (`None` for none).
type PerRequest = (&'static str, fn(&RequestRecord) -> Option<Duration>);

const PER_REQUEST: [PerRequest; 6] = [
    ("ttft_ms", |r| r.ttft()),
    ("ttft_content_ms", |r| r.ttft_content()),
    ("tpot_ms", |r| r.tpot()),
    ("itl_max_ms", |r| r.itl_max()),
    ("e2e_ms", |r| r.e2e()),
    ("ttfb_ms", |r| r.ttfb()),
];

/// The paths in `summary` of the distributions that have intervals.
pub const PER_REQUEST_KEYS: [&str; 8] = [
    "ttft_ms",
    "ttft_content_ms",
    "tpot_ms",
    "itl_max_ms",
    "e2e_ms",
    "ttfb_ms",
    "error_adjusted.ttft_ms",
    "error_adjusted.e2e_ms",
];

/// The intervals of a run: `measured` its measured requests, `[t1, t1 +
/// dur]` its window, `ps` its percentiles, `slo` what it was judged by.
pub fn intervals(
    measured: &[&RequestRecord],
    t1: Duration,
    dur: f64,
    ps: &[f64],
    slo: Option<&Slo>,
    conf: f64,
) -> Intervals {
    let sessions = measured.iter().any(|r| r.session.is_some());
    let unit = if sessions { Unit::Sessions } else { Unit::Requests };
    // A request's cluster: its session, or itself.
    let cluster_of = |r: &RequestRecord| match &r.session {
        Some(s) => (0u8, s.id),
        None => (1u8, r.id),
    };
    // In the order the requests ended, as `--until`'s watch takes them, for
    // the dependence between neighbours (sorted once for every figure).
    let mut by_end: Vec<&RequestRecord> = measured.to_vec();
    by_end.sort_by_key(|r| (r.end, r.id));
    let ok: Vec<&RequestRecord> = by_end.iter().copied().filter(|r| r.outcome.is_success()).collect();
    let finished: Vec<&RequestRecord> =
        by_end.iter().copied().filter(|r| !matches!(r.outcome, Outcome::Cancelled)).collect();
    let mut latency = BTreeMap::new();
    let mut dependence = BTreeMap::new();
    let mut add = |key: &str, of: &dyn Fn(&RequestRecord) -> Option<f64>, over: &[&RequestRecord]| {
        let mut row = BTreeMap::new();
        let mut factors = BTreeMap::new();
        if sessions {
            let mut groups: BTreeMap<(u8, u64), Vec<f64>> = BTreeMap::new();
            for r in over {
                if let Some(v) = of(r) {
                    groups.entry(cluster_of(r)).or_default().push(v);
                }
            }
            let clusters: Vec<Vec<f64>> = groups.into_values().collect();
            let seed = crate::util::hash::fnv1a64(key.as_bytes());
            for (&p, i) in ps.iter().zip(clustered_percentile_intervals(&clusters, ps, conf, seed)) {
                row.insert(percentile_key(p), i);
            }
        } else {
            // `over` is in the order the requests ended.
            let in_order: Vec<f64> = over.iter().filter_map(|r| of(r)).collect();
            let mut v = in_order.clone();
            crate::analysis::stats::sort_total(&mut v);
            for &p in ps {
                let (iv, factor) = percentile_interval_dependent(&in_order, &v, p, conf);
                row.insert(percentile_key(p), iv);
                if let Some(f) = factor {
                    factors.insert(percentile_key(p), f);
                }
            }
        }
        latency.insert(key.to_string(), row);
        if !factors.is_empty() {
            dependence.insert(key.to_string(), factors);
        }
    };
    for (key, f) in PER_REQUEST {
        add(key, &|r| f(r).map(ms), &ok);
    }
    // A failure as +∞, over every finished request.
    let adjusted = |f: fn(&RequestRecord) -> Option<Duration>| {
        move |r: &RequestRecord| {
            Some(if r.outcome.is_success() { f(r).map(ms).unwrap_or(f64::INFINITY) } else { f64::INFINITY })
        }
    };
    add("error_adjusted.ttft_ms", &adjusted(|r| r.ttft()), &finished);
    add("error_adjusted.e2e_ms", &adjusted(|r| r.e2e()), &finished);

    // Rates: each request at its end, with its output tokens.
    let at = |r: &RequestRecord| r.end.saturating_sub(t1).as_secs_f64();
    let rate = |rs: &[&RequestRecord], tokens: bool| {
        let ev: Vec<(f64, f64)> =
            rs.iter().map(|r| (at(r), if tokens { r.output_tokens as f64 } else { 1.0 })).collect();
        rate_interval(&ev, dur, BATCHES, conf)
    };
    let throughput = RateIntervals { requests_per_s: rate(&ok, false), output_tokens_per_s: rate(&ok, true) };
    let goodput = slo.map(|slo| {
        // With a quality limit no request was scored by, none is good (as `judge` has it).
        let scored = slo.unscored_limits(&finished).is_empty();
        // The latencies the SLO's terms judge, over the successes in the
        // order they ended: where too few requests missed to tell how they
        // cluster, the attainment takes the largest of their medians' factors.
        let mut judged: Vec<SloMetric> = Vec::new();
        for m in slo.limits.iter().map(|l| l.metric).chain(slo.objectives.iter().map(|o| o.metric)) {
            if !judged.contains(&m) {
                judged.push(m);
            }
        }
        let alike: Vec<Vec<f64>> = judged.iter().map(|m| ok.iter().filter_map(|r| m.of(r)).map(ms).collect()).collect();
        let alike: Vec<&[f64]> = alike.iter().map(Vec::as_slice).collect();
        let good: Vec<&RequestRecord> = finished.iter().copied().filter(|r| scored && slo.is_good(r)).collect();
        // A share, as `judge` takes it: of the finished requests that `met`
        // counts, over them and the cancelled ones `missed` counts (each a
        // miss), as Wilson's interval, or by whole sessions. The cancelled
        // misses had been left out, and an interval of 100% beside a share
        // they had brought to 50%.
        let share = |met: &dyn Fn(&RequestRecord) -> bool, missed: &dyn Fn(&RequestRecord) -> bool| {
            // In the order they ended (`by_end`), for the dependence between neighbours.
            let over: Vec<&RequestRecord> =
                by_end.iter().copied().filter(|r| !matches!(r.outcome, Outcome::Cancelled) || missed(r)).collect();
            let met = |r: &RequestRecord| scored && !matches!(r.outcome, Outcome::Cancelled) && met(r);
            if sessions {
                (attainment_by_sessions(&over, &met, conf, &cluster_of), None)
            } else {
                let in_order: Vec<bool> = over.iter().map(|r| met(r)).collect();
                wilson_dependent(&in_order, &alike, conf)
            }
        };
        let (slo_attainment, every) = share(&|r| slo.is_good(r), &|r| slo.certainly_missed(r));
        let limits =
            slo.attains_by_limits().then(|| share(&|r| slo.attains(r), &|r| slo.attainment_counts_cancelled(r)));
        let factors: BTreeMap<String, f64> =
            [("slo_attainment", every), ("limits_attainment", limits.and_then(|l| l.1))]
                .into_iter()
                .filter_map(|(k, f)| Some((k.to_string(), f?)))
                .collect();
        if !factors.is_empty() {
            dependence.insert("goodput".to_string(), factors);
        }
        GoodputIntervals {
            requests_per_s: rate(&good, false),
            output_tokens_per_s: rate(&good, true),
            slo_attainment,
            limits_attainment: limits.map(|l| l.0),
        }
    });
    Intervals { confidence: conf, unit, latency, dependence, batches: BATCHES as u32, throughput, goodput }
}

/// Attainment's interval by resampling whole sessions: the share of the
/// requests `met` counts over the resampled sessions' requests.
fn attainment_by_sessions(
    finished: &[&RequestRecord],
    met: &dyn Fn(&RequestRecord) -> bool,
    conf: f64,
    cluster_of: &dyn Fn(&RequestRecord) -> (u8, u64),
) -> Interval {
    let mut groups: BTreeMap<(u8, u64), (f64, f64)> = BTreeMap::new();
    for r in finished {
        let g = groups.entry(cluster_of(r)).or_default();
        g.0 += f64::from(u8::from(met(r)));
        g.1 += 1.0;
    }
    let clusters: Vec<(f64, f64)> = groups.into_values().collect();
    let k = clusters.len();
    if k < 2 {
        return Interval::NONE;
    }
    let stats: Vec<f64> = (0..SESSION_RESAMPLES)
        .map(|b| {
            let (mut good, mut all) = (0.0, 0.0);
            for i in 0..k {
                let c = crate::util::hash::draw(0x00a7_7a1e, b * k as u64 + i as u64) % k as u64;
                good += clusters[c as usize].0;
                all += clusters[c as usize].1;
            }
            good / all
        })
        .collect();
    bootstrap_bounds(stats, conf)
}

#[cfg(test)]
mod tests;
