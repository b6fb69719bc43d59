//! Tests on the per-request samples themselves, for runs that carry their
//! records (`--include-requests`, or `compare --records`): the
//! Mann–Whitney U test, Mood's quantile test, and Holm's correction for the `!` rules of a
//! `--fail-if` taken together (docs/metrics.md, "Is a change real?").

use goodput_core::analysis::interval::{ln_gamma, normal_cdf};
use goodput_core::analysis::metrics::ms;
use goodput_core::{RequestMetrics, RequestRecord};

/// The fewest requests on either side for the normal approximation of U;
/// with fewer, `compare` uses the percentile intervals instead.
pub const MIN_SAMPLES: usize = 10;

/// The result of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: the pairs (x, y) with x > y, ties counting ½.
    pub u: f64,
    /// The standardised U, with the continuity and tie corrections.
    pub z: f64,
    /// Two-sided, by the normal approximation.
    pub p: f64,
}

/// The Mann–Whitney U test of `x` against `y` (two-sided): the normal
/// approximation to U with the tie correction of its variance and a
/// continuity correction of ½ (as SciPy's `mannwhitneyu(x, y,
/// method="asymptotic")`). `None` when a sample is empty or holds a value
/// that is not a number.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    // Mid-ranks over both samples, and the ties' Σ(t³ − t).
    let mut all: Vec<(f64, bool)> = x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    all.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let n = all.len();
    let (mut r1, mut ties) = (0.0f64, 0.0f64);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        r1 += rank * all[i..=j].iter().filter(|e| e.1).count() as f64;
        i = j + 1;
    }
    let (a, b, nn) = (n1 as f64, n2 as f64, n as f64);
    let u = r1 - a * (a + 1.0) / 2.0;
    let mean = a * b / 2.0;
    let var = a * b / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)).max(1.0));
    if var <= 0.0 {
        // Every value the same on both sides.
        return Some(MannWhitney { u, z: 0.0, p: 1.0 });
    }
    let d = (u - mean).abs();
    let z = ((d - 0.5).max(0.0) / var.sqrt()).copysign(u - mean);
    let p = (2.0 * (1.0 - normal_cdf(z.abs()))).clamp(0.0, 1.0);
    Some(MannWhitney { u, z, p })
}

/// The result of Mood's quantile test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileTest {
    /// The pooled sample's quantile the two runs are split at.
    pub split: f64,
    /// Each run's values above the split.
    pub above: (u64, u64),
    /// Two-sided, by Fisher's exact test on the 2×2 table.
    pub p: f64,
    /// The smallest p these margins allow: every value above the split in
    /// one run (whichever of the two gives less). At or over the level,
    /// no count the runs could have had would be called: too few values
    /// lie above the split for the test to say anything.
    pub least_p: f64,
}

/// Mood's quantile test (the median test generalised to the `q`-th
/// quantile, 0 < q < 1; Conover, *Practical Nonparametric Statistics*,
/// §4.3): both runs' values are pooled, split at the pooled sample's
/// `q`-quantile (its ⌈q·N⌉-th smallest value), and each run's count above
/// the split is set against the other's by Fisher's exact test on the 2×2
/// table (two-sided: the tables no likelier than the one seen; SciPy's
/// `fisher_exact`). Unlike Mann–Whitney U it asks about that quantile
/// alone, so a change confined to the tail is seen at the tail's
/// percentile and not at the median. `None` when a sample is empty, holds a
/// value that is not a number, or `q` is not in (0, 1).
pub fn quantile_test(x: &[f64], y: &[f64], q: f64) -> Option<QuantileTest> {
    if x.is_empty() || y.is_empty() || x.iter().chain(y).any(|v| v.is_nan()) || !(q > 0.0 && q < 1.0) {
        return None;
    }
    let mut pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    pooled.sort_unstable_by(f64::total_cmp);
    let rank = ((q * pooled.len() as f64).ceil() as usize).clamp(1, pooled.len());
    let split = pooled[rank - 1];
    let above = |v: &[f64]| v.iter().filter(|&&t| t > split).count() as u64;
    let (a, b) = (above(x), above(y));
    let (n, m) = (x.len() as u64, y.len() as u64);
    let p = fisher_exact(a, n - a, b, m - b);
    // The two tables at the ends of the margins: all above in x, or in y
    // (as many of them as each run holds).
    let k = a + b;
    let (ax, ay) = (k.min(n), k.min(m));
    let least_p = fisher_exact(ax, n - ax, k - ax, m - (k - ax)).min(fisher_exact(k - ay, n - (k - ay), ay, m - ay));
    Some(QuantileTest { split, above: (a, b), p, least_p })
}

/// Fisher's exact test, two-sided, of the 2×2 table [[a, b], [c, d]]
/// (rows: the two runs; columns: above, not above): with the margins held,
/// the sum of the hypergeometric probabilities of the tables no likelier
/// than this one (a relative tolerance of 1e-7 for ties, as R and SciPy).
pub fn fisher_exact(a: u64, b: u64, c: u64, d: u64) -> f64 {
    let (row1, col1, n) = (a + b, a + c, a + b + c + d);
    let ln_choose =
        |n: u64, k: u64| ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0);
    let denom = ln_choose(n, col1);
    // P(a = k): k of row 1's values above, out of col1 above in all.
    let ln_p = |k: u64| ln_choose(row1, k) + ln_choose(n - row1, col1 - k) - denom;
    let lo = col1.saturating_sub(n - row1);
    let hi = row1.min(col1);
    let seen = ln_p(a);
    let mut p = 0.0;
    for k in lo..=hi {
        let l = ln_p(k);
        if l <= seen + 1e-7f64.ln_1p() {
            p += l.exp();
        }
    }
    p.clamp(0.0, 1.0)
}

/// The measured, successful requests' values of the distribution at `key`
/// (`ttft_ms`, `e2e_ms`…), in ms; `None` for a distribution with no single
/// value per request (ITL) or one a failure enters (error-adjusted).
pub fn samples(key: &str, records: &[RequestRecord]) -> Option<Vec<f64>> {
    let f: fn(&RequestRecord) -> Option<std::time::Duration> = match key {
        "ttft_ms" => |r| r.ttft(),
        "ttft_content_ms" => |r| r.ttft_content(),
        "tpot_ms" => |r| r.tpot(),
        "e2e_ms" => |r| r.e2e(),
        "ttfb_ms" => |r| r.ttfb(),
        "itl_max_ms" => |r| r.itl_max(),
        _ => return None,
    };
    Some(records.iter().filter(|r| !r.warmup && r.outcome.is_success()).filter_map(|r| f(r).map(ms)).collect())
}

/// Holm's step-down adjustment of `ps`: the i-th smallest p times the
/// number of p-values not smaller, kept monotone and at most 1. Each
/// adjusted p is held to the level alone, and the family then keeps its
/// chance of any false call under that level.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * ps[i]).min(1.0));
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn fisher_exact_matches_the_textbook_tables() {
        // Fisher's tea-tasting table [[3, 1], [1, 3]]: p = 34/70 = 0.4857
        // (two-sided; R's and SciPy's fisher_exact).
        assert!(close(fisher_exact(3, 1, 1, 3), 34.0 / 70.0, 1e-9));
        // SciPy's documented example [[6, 2], [1, 4]]: p = 0.10256410256410
        // (hypergeometric tables of 13 with margins 8 and 7).
        assert!(close(fisher_exact(6, 2, 1, 4), 0.10256410256410256, 1e-9));
        // A table as likely as any: p = 1.
        assert!(close(fisher_exact(5, 5, 5, 5), 1.0, 1e-9));
        assert!(close(fisher_exact(0, 10, 0, 10), 1.0, 1e-12));
    }

    #[test]
    fn the_quantile_test_sees_the_tail_alone() {
        // Two runs of 1,000 with the same body; in the second the slowest
        // 3% take three times as long. The p99 differs, the median does not.
        let base: Vec<f64> = (0..1000).map(|i| 50.0 + (i as f64 * 0.618_034).fract() * 50.0).collect();
        let mut tail = base.clone();
        tail.sort_by(f64::total_cmp);
        for v in tail.iter_mut().skip(970) {
            *v *= 3.0;
        }
        let p99 = quantile_test(&base, &tail, 0.99).unwrap();
        assert!(p99.p < 1e-3, "{p99:?}");
        // Pooled 2,000, split at the 1,980th: the 20 above all in the
        // second run.
        assert_eq!(p99.above, (0, 20), "{p99:?}");
        let p50 = quantile_test(&base, &tail, 0.5).unwrap();
        assert!(p50.p > 0.5, "{p50:?}");
        // Mann–Whitney U sees 3% of the values move: less than the p99.
        assert!(mann_whitney(&base, &tail).unwrap().p > p99.p);
        // The same sample twice: nothing to see.
        assert!(close(quantile_test(&base, &base, 0.99).unwrap().p, 1.0, 1e-9));
        assert!(quantile_test(&base, &[], 0.5).is_none() && quantile_test(&base, &base, 1.0).is_none());
    }

    #[test]
    fn scipy_documented_example() {
        // SciPy's mannwhitneyu documentation (Conover's example): males'
        // and females' ages; U1 = 17 and, by the asymptotic method, p =
        // 0.11134688653314041. By hand: mean 10, σ = √(5·4·10/12) =
        // 4.0825, z = (17 − 10 − ½)/σ = 1.5922, p = 2(1 − Φ(z)).
        let males = [19.0, 22.0, 16.0, 29.0, 24.0];
        let females = [20.0, 11.0, 17.0, 12.0];
        let t = mann_whitney(&males, &females).unwrap();
        assert_eq!(t.u, 17.0);
        assert!(close(t.z, 1.592168, 1e-5), "{t:?}");
        assert!(close(t.p, 0.11134688653314041, 1e-6), "{t:?}");
        // The other way round: U2 = n1·n2 − U1 and the same p.
        let r = mann_whitney(&females, &males).unwrap();
        assert_eq!(r.u, 3.0);
        assert!(close(r.p, t.p, 1e-12) && r.z < 0.0);
    }

    #[test]
    fn ties_shrink_the_variance() {
        // x = 1 2 2 3, y = 2 3 3 4. Ranks of the pooled 8: 1 → 1; 2 ×3 → 3;
        // 3 ×3 → 6; 4 → 8. R1 = 1 + 3 + 3 + 6 = 13, U1 = 13 − 10 = 3.
        // Ties: two groups of 3, Σ(t³ − t) = 48. σ² = 16/12 · (9 − 48/56)
        // = 10.857; z = (8 − 3 − ½)/3.2950 = 1.3657 (negative: x lower);
        // p = 2(1 − Φ(1.3657)) = 0.17203.
        let t = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 3.0, 4.0]).unwrap();
        assert_eq!(t.u, 3.0);
        let sigma = (16.0f64 / 12.0 * (9.0 - 48.0 / 56.0)).sqrt();
        assert!(close(t.z, -4.5 / sigma, 1e-12), "{t:?}");
        assert!(close(t.p, 0.17203, 1e-4), "{t:?}");
    }

    #[test]
    fn equal_samples_and_separated_samples() {
        let same = mann_whitney(&[5.0; 20], &[5.0; 30]).unwrap();
        assert_eq!(same.p, 1.0);
        // Every x above every y: U1 = n1·n2, the smallest p there is.
        let x: Vec<f64> = (0..50).map(|i| 100.0 + f64::from(i)).collect();
        let y: Vec<f64> = (0..50).map(f64::from).collect();
        let t = mann_whitney(&x, &y).unwrap();
        assert_eq!(t.u, 2500.0);
        assert!(t.p < 1e-15 && t.z > 8.0, "{t:?}");
        assert!(mann_whitney(&[], &y).is_none());
        assert!(mann_whitney(&[f64::NAN], &y).is_none());
    }

    /// A uniform draw on [0, 1) (splitmix64), so the tests need no crate.
    fn unit(state: &mut u64) -> f64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Of 60 and 60 values, the pooled p95 leaves 6 above it: all six in
    /// one run is the least likely split, p = 2 · C(60,6) / C(120,6) =
    /// 0.0274, which the test reaches when the runs are apart. Of 30 and 30
    /// the pooled p99 is the largest value, and nothing is above it: no
    /// split can say anything.
    #[test]
    fn the_quantile_test_knows_the_least_p_its_margins_allow() {
        let x: Vec<f64> = (0..60).map(|i| 50.0 + f64::from(i)).collect();
        let y: Vec<f64> = x.iter().map(|v| v * 3.0).collect();
        let t = quantile_test(&x, &y, 0.95).unwrap();
        assert_eq!(t.above, (0, 6), "{t:?}");
        let want = 2.0 * (50_063_860.0 / 3_652_745_460.0);
        assert!(close(t.least_p, want, 1e-9) && close(t.p, want, 1e-9), "{t:?}");
        // The same margins split evenly: the least p stays the margins'.
        let mixed: Vec<f64> = x.iter().take(57).copied().chain(y.iter().skip(57).copied()).collect();
        let t = quantile_test(&mixed, &y, 0.95).unwrap();
        assert_eq!(t.above.0 + t.above.1, 6, "{t:?}");
        assert!(close(t.least_p, want, 1e-9) && t.p > 0.5, "{t:?}");
        // Unequal runs: all above in the smaller one is the least likely.
        let t = quantile_test(&x[..20], &y, 0.9).unwrap();
        let (k, n, m) = (t.above.0 + t.above.1, 20, 60);
        let ends =
            [fisher_exact(k.min(n), n - k.min(n), k - k.min(n), m - (k - k.min(n))), fisher_exact(0, n, k, m - k)];
        assert!(close(t.least_p, ends[0].min(ends[1]), 1e-12), "{t:?} {ends:?}");
        let t = quantile_test(&x[..30], &y[..30], 0.99).unwrap();
        assert_eq!((t.above, t.least_p), ((0, 0), 1.0), "{t:?}");
    }

    /// Mood's test at the p95 of 60 and 60 values of one skewed
    /// distribution, 4000 times: it calls them different at 0.05 at most 5%
    /// of the time (Fisher's exact test is conservative: fewer).
    #[test]
    fn the_quantile_test_of_small_runs_keeps_its_level() {
        let mut st = 5u64;
        let trials = 4000;
        let mut called = 0;
        for _ in 0..trials {
            let mut draw =
                |n: usize| -> Vec<f64> { (0..n).map(|_| 50.0 * (1.0 - unit(&mut st)).ln().abs() + 20.0).collect() };
            let (x, y) = (draw(60), draw(60));
            if quantile_test(&x, &y, 0.95).unwrap().p < 0.05 {
                called += 1;
            }
        }
        let rate = f64::from(called) / f64::from(trials);
        assert!(rate <= 0.05, "called {rate}");
    }

    /// Two samples of one skewed distribution (a latency's long tail), 2000
    /// times: the test calls them different at 0.05 about 5% of the time,
    /// and with every value rounded to whole milliseconds (many ties) too.
    #[test]
    fn under_no_change_it_calls_about_five_in_a_hundred() {
        let mut st = 11u64;
        for rounded in [false, true] {
            let trials = 2000;
            let mut called = 0;
            for _ in 0..trials {
                let mut draw = |n: usize| -> Vec<f64> {
                    (0..n)
                        .map(|_| {
                            let v = 50.0 * (1.0 - unit(&mut st)).ln().abs() + 20.0;
                            if rounded {
                                v.round()
                            } else {
                                v
                            }
                        })
                        .collect()
                };
                let (x, y) = (draw(60), draw(80));
                if mann_whitney(&x, &y).unwrap().p < 0.05 {
                    called += 1;
                }
            }
            let rate = f64::from(called) / f64::from(trials);
            assert!((0.03..=0.07).contains(&rate), "rounded {rounded}: called {rate}");
        }
    }

    /// Three rules on two samples of one distribution, 2000 times: Holm's
    /// adjustment keeps the chance that any of the three is called under
    /// 5%, where unadjusted it is near 1 − 0.95³ = 14%.
    #[test]
    fn holm_keeps_a_family_of_three_at_its_level() {
        let mut st = 5u64;
        let trials = 2000;
        let (mut any_raw, mut any_holm) = (0, 0);
        for _ in 0..trials {
            let ps: Vec<f64> = (0..3)
                .map(|_| {
                    let x: Vec<f64> = (0..40).map(|_| unit(&mut st)).collect();
                    let y: Vec<f64> = (0..40).map(|_| unit(&mut st)).collect();
                    mann_whitney(&x, &y).unwrap().p
                })
                .collect();
            any_raw += usize::from(ps.iter().any(|&p| p < 0.05));
            any_holm += usize::from(holm(&ps).iter().any(|&p| p < 0.05));
        }
        let (raw, adj) = (any_raw as f64 / trials as f64, any_holm as f64 / trials as f64);
        assert!(raw > 0.10, "unadjusted {raw}");
        assert!(adj <= 0.06, "Holm {adj}");
    }

    #[test]
    fn holm_by_hand() {
        // Sorted 0.01, 0.02, 0.04 (m = 3): 0.03, 0.04, 0.04 (kept monotone).
        let adj = holm(&[0.04, 0.01, 0.02]);
        assert!(close(adj[1], 0.03, 1e-12) && close(adj[2], 0.04, 1e-12) && close(adj[0], 0.04, 1e-12), "{adj:?}");
        assert_eq!(holm(&[0.6, 0.7]), vec![1.0, 1.0]);
        assert_eq!(holm(&[0.2]), vec![0.2]);
        assert!(holm(&[]).is_empty());
    }
}
