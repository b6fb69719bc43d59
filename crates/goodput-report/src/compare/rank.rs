//! Tests on the per-request samples themselves, for runs that carry their
//! records (`--include-requests`, or `compare --records`): the
//! Mann–Whitney U test, and Holm's correction for the `!` rules of a
//! `--fail-if` taken together (docs/metrics.md, "Is a change real?").

use goodput_core::analysis::interval::normal_cdf;
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
