//! Classic Prometheus histograms (cumulative buckets) and the arithmetic a
//! window summary needs on them: the increase between two scrapes, the sum of
//! several series, and `histogram_quantile` computed the way Prometheus does.

use super::values::{prom_float, Labels};
use serde::{Deserialize, Serialize};

/// One histogram series: cumulative buckets sorted by upper bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Histogram {
    /// The series' labels, `le` excluded.
    pub labels: Labels,
    pub buckets: Vec<Bucket>,
    /// `_count`, or the `+Inf` bucket when `_count` is missing.
    pub count: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<f64>,
}

/// A cumulative bucket: the observations ≤ `le`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Bucket {
    /// A number, or "+Inf".
    #[serde(with = "prom_float")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub le: f64,
    pub count: f64,
}

impl Histogram {
    /// The `q`-quantile (0..=1) by [`histogram_quantile`].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        histogram_quantile(q, &self.buckets)
    }

    /// The bucket holding the `q`-quantile, by [`quantile_bucket`].
    pub fn quantile_bucket(&self, q: f64) -> Option<(f64, f64)> {
        quantile_bucket(q, &self.buckets)
    }

    /// `sum / count`, when there were observations and a sum.
    pub fn mean(&self) -> Option<f64> {
        let sum = self.sum?;
        (self.count > 0.0).then(|| sum / self.count)
    }

    /// The observations made between `earlier` and `self`. A count or bucket
    /// that went down means the server restarted in between (a counter
    /// reset), and then all of `self` is new, as Prometheus' `increase`
    /// assumes; a changed bucket layout is read the same way, since the two
    /// cannot be subtracted.
    pub fn increase_since(&self, earlier: &Histogram) -> Histogram {
        let same_layout = self.buckets.len() == earlier.buckets.len()
            && self.buckets.iter().zip(&earlier.buckets).all(|(a, b)| a.le == b.le);
        let reset = !same_layout
            || self.count < earlier.count
            || self.buckets.iter().zip(&earlier.buckets).any(|(a, b)| a.count < b.count);
        if reset {
            return self.clone();
        }
        Histogram {
            labels: self.labels.clone(),
            buckets: self
                .buckets
                .iter()
                .zip(&earlier.buckets)
                .map(|(a, b)| Bucket { le: a.le, count: a.count - b.count })
                .collect(),
            count: self.count - earlier.count,
            sum: self.sum.zip(earlier.sum).map(|(a, b)| a - b),
        }
    }

    /// The sum of two series over the union of their bounds, keeping the
    /// labels they share. Exact when the layouts match (the usual case: one
    /// metric, several engines or label values). Where one series lacks a
    /// bound the other has, its count at its next lower bound stands in,
    /// which undercounts inside that bucket only.
    pub fn merged(&self, other: &Histogram) -> Histogram {
        let mut bounds: Vec<f64> = self.buckets.iter().chain(&other.buckets).map(|b| b.le).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        Histogram {
            labels: self
                .labels
                .iter()
                .filter(|(k, v)| other.labels.get(*k) == Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            buckets: bounds
                .into_iter()
                .map(|le| Bucket { le, count: self.count_at(le) + other.count_at(le) })
                .collect(),
            count: self.count + other.count,
            sum: self.sum.zip(other.sum).map(|(a, b)| a + b),
        }
    }

    /// Cumulative count at `le`: that of the greatest bound ≤ `le`.
    fn count_at(&self, le: f64) -> f64 {
        self.buckets.iter().take_while(|b| b.le <= le).last().map_or(0.0, |b| b.count)
    }
}

/// The `q`-quantile (0..=1) of cumulative `buckets`, as Prometheus'
/// `histogram_quantile` computes it: find the bucket holding rank
/// `q × total`, then interpolate linearly inside it, the lowest bucket
/// starting at 0. A rank that falls in the `+Inf` bucket answers the highest
/// finite bound; counts that decrease are first made monotonic. `None` where
/// Prometheus answers NaN: no `+Inf` bucket, fewer than two buckets, no
/// observations; and for `q` outside 0..=1 (Prometheus: ±Inf).
///
/// ```
/// use goodput_core::prometheus::scrape::histogram::{histogram_quantile, Bucket};
/// let b = |le, count| Bucket { le, count };
/// let buckets = [b(0.1, 20.0), b(0.5, 60.0), b(1.0, 100.0), b(f64::INFINITY, 100.0)];
/// // rank 50 lies 30 of the 40 observations into (0.1, 0.5]
/// assert_eq!(histogram_quantile(0.5, &buckets), Some(0.1 + 0.4 * 30.0 / 40.0));
/// ```
pub fn histogram_quantile(q: f64, buckets: &[Bucket]) -> Option<f64> {
    let (b, i, rank) = rank_bucket(q, buckets)?;
    if i == b.len() - 1 {
        return Some(b[b.len() - 2].le);
    }
    if i == 0 && b[0].le <= 0.0 {
        return Some(b[0].le);
    }
    let (start, below) = if i == 0 { (0.0, 0.0) } else { (b[i - 1].le, b[i - 1].count) };
    let inside = b[i].count - below;
    if inside <= 0.0 {
        return Some(start);
    }
    Some(start + (b[i].le - start) * (rank - below) / inside)
}

/// The bounds of the bucket that holds the `q`-quantile's rank: all that
/// the histogram knows of that quantile, which lies somewhere in
/// `(lower, upper]` (`upper` is infinite for the `+Inf` bucket). `None`
/// where [`histogram_quantile`] is.
pub fn quantile_bucket(q: f64, buckets: &[Bucket]) -> Option<(f64, f64)> {
    let (b, i, _) = rank_bucket(q, buckets)?;
    Some((if i == 0 { 0.0_f64.min(b[0].le) } else { b[i - 1].le }, b[i].le))
}

/// The buckets sorted and made monotonic, the index of the one holding rank
/// `q × total`, and that rank.
fn rank_bucket(q: f64, buckets: &[Bucket]) -> Option<(Vec<Bucket>, usize, f64)> {
    if !(0.0..=1.0).contains(&q) || buckets.iter().any(|b| b.le.is_nan() || b.count.is_nan()) {
        return None;
    }
    let mut b = buckets.to_vec();
    b.sort_by(|x, y| x.le.total_cmp(&y.le));
    b.dedup_by(|later, first| later.le == first.le);
    if b.len() < 2 || b[b.len() - 1].le != f64::INFINITY {
        return None;
    }
    let mut max = f64::NEG_INFINITY;
    for bucket in &mut b {
        max = max.max(bucket.count);
        bucket.count = max;
    }
    let total = b[b.len() - 1].count;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let i = b.iter().position(|x| x.count >= rank)?;
    Some((b, i, rank))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets(pairs: &[(f64, f64)]) -> Vec<Bucket> {
        pairs.iter().map(|&(le, count)| Bucket { le, count }).collect()
    }

    fn hist(pairs: &[(f64, f64)], sum: f64) -> Histogram {
        let buckets = buckets(pairs);
        let count = buckets.last().map_or(0.0, |b| b.count);
        Histogram { labels: Labels::new(), buckets, count, sum: Some(sum) }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn quantiles_as_prometheus_computes_them() {
        let b = buckets(&[(0.1, 10.0), (0.5, 30.0), (1.0, 100.0), (INF, 100.0)]);
        let cases = [
            // rank 5 of the first bucket's 10, which starts at 0
            (0.05, Some(0.05)),
            // rank 50: 20 of the 70 in (0.5, 1]
            (0.5, Some(0.5 + 0.5 * 20.0 / 70.0)),
            (0.99, Some(0.5 + 0.5 * 69.0 / 70.0)),
            (1.0, Some(1.0)),
            (1.5, None),
            (-0.1, None),
            (f64::NAN, None),
        ];
        for (q, want) in cases {
            assert_eq!(histogram_quantile(q, &b), want, "q={q}");
        }
    }

    #[test]
    fn a_rank_in_the_inf_bucket_answers_the_highest_finite_bound() {
        let b = buckets(&[(1.0, 5.0), (2.0, 8.0), (INF, 10.0)]);
        assert_eq!(histogram_quantile(0.9, &b), Some(2.0));
        assert_eq!(histogram_quantile(0.8, &b), Some(2.0));
        assert_eq!(histogram_quantile(0.65, &b), Some(1.5));
    }

    #[test]
    fn a_quantile_s_bucket_is_the_one_its_rank_falls_in() {
        let b = buckets(&[(0.1, 20.0), (0.5, 60.0), (1.0, 100.0), (f64::INFINITY, 100.0)]);
        assert_eq!(quantile_bucket(0.5, &b), Some((0.1, 0.5)));
        assert_eq!(quantile_bucket(0.1, &b), Some((0.0, 0.1)));
        assert_eq!(quantile_bucket(0.6, &b), Some((0.1, 0.5)), "rank 60 is the last observation ≤ 0.5");
        assert_eq!(quantile_bucket(0.61, &b), Some((0.5, 1.0)));
        let tail = buckets(&[(0.1, 20.0), (f64::INFINITY, 100.0)]);
        assert_eq!(quantile_bucket(0.9, &tail), Some((0.1, f64::INFINITY)));
        assert_eq!(quantile_bucket(0.5, &buckets(&[(0.1, 2.0)])), None, "no +Inf bucket");
    }

    #[test]
    fn quantiles_of_unusable_buckets_are_none() {
        assert_eq!(histogram_quantile(0.5, &[]), None);
        assert_eq!(histogram_quantile(0.5, &buckets(&[(INF, 3.0)])), None);
        assert_eq!(histogram_quantile(0.5, &buckets(&[(1.0, 3.0), (2.0, 3.0)])), None);
        assert_eq!(histogram_quantile(0.5, &buckets(&[(1.0, 0.0), (INF, 0.0)])), None);
        assert_eq!(histogram_quantile(0.5, &buckets(&[(1.0, f64::NAN), (INF, 1.0)])), None);
    }

    #[test]
    fn decreasing_counts_are_made_monotonic_and_order_does_not_matter() {
        let b = buckets(&[(INF, 10.0), (2.0, 4.0), (1.0, 5.0)]);
        // counts read 5, 5, 10: rank 4.5 lies in the first bucket
        assert_eq!(histogram_quantile(0.45, &b), Some(0.9));
    }

    #[test]
    fn a_non_positive_lowest_bound_is_answered_as_is() {
        let b = buckets(&[(-1.0, 2.0), (0.0, 4.0), (INF, 4.0)]);
        assert_eq!(histogram_quantile(0.25, &b), Some(-1.0));
    }

    #[test]
    fn increase_subtracts_or_restarts() {
        let earlier = hist(&[(1.0, 4.0), (INF, 10.0)], 12.0);
        let later = hist(&[(1.0, 6.0), (INF, 15.0)], 20.0);
        let inc = later.increase_since(&earlier);
        assert_eq!(inc.buckets, buckets(&[(1.0, 2.0), (INF, 5.0)]));
        assert_eq!((inc.count, inc.sum), (5.0, Some(8.0)));
        // a restart: the count went down, so all of `restarted` is new
        let restarted = hist(&[(1.0, 1.0), (INF, 3.0)], 2.0);
        assert_eq!(restarted.increase_since(&earlier), restarted);
        // a new layout cannot be subtracted either
        let relaid = hist(&[(2.0, 9.0), (INF, 16.0)], 21.0);
        assert_eq!(relaid.increase_since(&earlier), relaid);
        assert_eq!(inc.mean(), Some(1.6));
    }

    #[test]
    fn merging_sums_over_the_union_of_bounds() {
        let mut a = hist(&[(1.0, 4.0), (2.0, 6.0), (INF, 10.0)], 10.0);
        a.labels.insert("engine".into(), "0".into());
        a.labels.insert("model_name".into(), "m".into());
        let mut b = hist(&[(1.0, 1.0), (INF, 2.0)], 3.0);
        b.labels.insert("engine".into(), "1".into());
        b.labels.insert("model_name".into(), "m".into());
        let m = a.merged(&b);
        assert_eq!(m.buckets, buckets(&[(1.0, 5.0), (2.0, 7.0), (INF, 12.0)]));
        assert_eq!((m.count, m.sum), (12.0, Some(13.0)));
        assert_eq!(m.labels.into_iter().collect::<Vec<_>>(), vec![("model_name".to_string(), "m".to_string())]);
    }
}
