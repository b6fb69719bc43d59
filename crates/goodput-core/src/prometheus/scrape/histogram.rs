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

    /// Whether [`increase_since`](Histogram::increase_since) reads
    /// `self` after `earlier` as a reset: a count or bucket went down, or
    /// the bucket layout changed.
    pub fn went_down_since(&self, earlier: &Histogram) -> bool {
        let same_layout = self.buckets.len() == earlier.buckets.len()
            && self.buckets.iter().zip(&earlier.buckets).all(|(a, b)| a.le == b.le);
        !same_layout
            || self.count < earlier.count
            || self.buckets.iter().zip(&earlier.buckets).any(|(a, b)| a.count < b.count)
    }

    /// The observations made between `earlier` and `self`. A count or bucket
    /// that went down means the server restarted in between (a counter
    /// reset), and then all of `self` is new, as Prometheus' `increase`
    /// assumes; a changed bucket layout is read the same way, since the two
    /// cannot be subtracted.
    pub fn increase_since(&self, earlier: &Histogram) -> Histogram {
        if self.went_down_since(earlier) {
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
    ///
    /// One pass over both bucket lists, sorted by bound as
    /// [`Scrape::histograms`](super::parse::Scrape::histograms) leaves them
    /// (bounds compared in IEEE total order, so a `NaN` one, which no
    /// exporter writes, sorts last and leaves the quantiles undefined): it
    /// had looked each union bound up in both lists from their start, so a
    /// merge of 64,000 buckets took seconds and a run's analysis minutes.
    pub fn merged(&self, other: &Histogram) -> Histogram {
        let (a, b) = (&self.buckets, &other.buckets);
        let mut buckets = Vec::with_capacity(a.len().max(b.len()));
        let (mut i, mut j) = (0, 0);
        // Each list's cumulative count at the bound reached.
        let (mut in_a, mut in_b) = (0.0, 0.0);
        loop {
            let le = match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) => match x.le.total_cmp(&y.le) {
                    std::cmp::Ordering::Greater => y.le,
                    _ => x.le,
                },
                (Some(x), None) => x.le,
                (None, Some(y)) => y.le,
                (None, None) => break,
            };
            while let Some(x) = a.get(i).filter(|x| x.le.total_cmp(&le).is_le()) {
                in_a = x.count;
                i += 1;
            }
            while let Some(y) = b.get(j).filter(|y| y.le.total_cmp(&le).is_le()) {
                in_b = y.count;
                j += 1;
            }
            buckets.push(Bucket { le, count: in_a + in_b });
        }
        Histogram {
            labels: self
                .labels
                .iter()
                .filter(|(k, v)| other.labels.get(*k) == Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            buckets,
            count: self.count + other.count,
            sum: self.sum.zip(other.sum).map(|(a, b)| a + b),
        }
    }

    /// The sum of all of `series`, as [`merged`](Histogram::merged) pair by
    /// pair; `None` for none. Merged in rounds of pairs, so that each
    /// bucket is in O(log n) merges: folded one series at a time, each
    /// merge walks the whole union so far, and a thousand series of their
    /// own bounds had cost a thousand walks of twenty thousand.
    pub fn sum<'a>(series: impl IntoIterator<Item = &'a Histogram>) -> Option<Histogram> {
        Histogram::sum_owned(series.into_iter().cloned().collect())
    }

    /// [`Histogram::sum`] of series already owned.
    pub fn sum_owned(mut round: Vec<Histogram>) -> Option<Histogram> {
        while round.len() > 1 {
            let mut next = Vec::with_capacity(round.len().div_ceil(2));
            let mut pairs = round.into_iter();
            while let Some(a) = pairs.next() {
                next.push(match pairs.next() {
                    Some(b) => a.merged(&b),
                    None => a,
                });
            }
            round = next;
        }
        round.pop()
    }

    /// The distinct bounds (`le`) of `series` together: the buckets their
    /// sum would hold.
    pub fn distinct_bounds<'a>(series: impl IntoIterator<Item = &'a Histogram>) -> usize {
        let mut bounds: Vec<f64> = series.into_iter().flat_map(|h| h.buckets.iter().map(|b| b.le)).collect();
        bounds.sort_unstable_by(f64::total_cmp);
        bounds.dedup_by(|a, b| a.total_cmp(b).is_eq());
        bounds.len()
    }

    /// The series without its buckets but the `+Inf` one: its count and
    /// sum kept, its quantiles gone (what is left of a histogram of more
    /// than [`MAX_HISTOGRAM_BOUNDS`] bounds).
    pub fn coarsened(mut self) -> Histogram {
        self.buckets.retain(|b| b.le == f64::INFINITY);
        self
    }
}

/// The most distinct bucket bounds (`le`) one histogram signal may hold in
/// one scrape, over all its series (every engine, label value and endpoint):
/// vLLM's, SGLang's and TGI's histograms have a few dozen buckets at most,
/// shared by their series, so even endpoints of several bucket layouts stay
/// far below it. Past it a histogram is [coarsened](Histogram::coarsened):
/// its count and sum are read, its quantiles are not, and the result warns.
/// A server that sent one series of 99,000 buckets, or 1,500 series of 20
/// bounds of their own, had kept a run's analysis (or monitor) busy for
/// minutes; one of 64,000 had a 3 s run write 100 MB.
pub const MAX_HISTOGRAM_BOUNDS: usize = 1_000;

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

    /// The merge as it was defined (and computed, a bound at a time): at
    /// each bound of the union, each series' cumulative count at its
    /// greatest bound at or below it.
    fn merged_by_definition(a: &Histogram, b: &Histogram) -> Vec<Bucket> {
        let count_at =
            |h: &Histogram, le: f64| h.buckets.iter().take_while(|b| b.le <= le).last().map_or(0.0, |b| b.count);
        let mut bounds: Vec<f64> = a.buckets.iter().chain(&b.buckets).map(|b| b.le).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        bounds.into_iter().map(|le| Bucket { le, count: count_at(a, le) + count_at(b, le) }).collect()
    }

    #[test]
    fn merging_differing_bounds_takes_each_series_count_at_every_union_bound() {
        let a = hist(&[(0.1, 1.0), (0.5, 3.0), (1.0, 6.0), (INF, 7.0)], 4.0);
        let b = hist(&[(0.05, 2.0), (0.5, 4.0), (2.0, 9.0), (INF, 10.0)], 9.0);
        let m = a.merged(&b);
        // 0.05: a has nothing below it; 0.1: b's count at 0.05 stands in; …
        let want = buckets(&[(0.05, 2.0), (0.1, 3.0), (0.5, 7.0), (1.0, 10.0), (2.0, 15.0), (INF, 17.0)]);
        assert_eq!(m.buckets, want);
        assert_eq!(m.buckets, merged_by_definition(&a, &b));
        assert_eq!(b.merged(&a).buckets, want, "either order");
        assert_eq!((m.count, m.sum), (17.0, Some(13.0)));
        // disjoint bounds, one list empty, and a series without +Inf
        let c = hist(&[(3.0, 1.0), (4.0, 2.0)], 1.0);
        let empty = Histogram { labels: Labels::new(), buckets: Vec::new(), count: 0.0, sum: None };
        for (x, y) in [(&a, &c), (&c, &a), (&c, &empty), (&empty, &c), (&empty, &empty), (&b, &b)] {
            assert_eq!(x.merged(y).buckets, merged_by_definition(x, y), "{x:?} + {y:?}");
        }
        assert_eq!(c.merged(&empty).sum, None);

        // Many series of bounds of their own, against the definition folded.
        let many: Vec<Histogram> = (0..40)
            .map(|s| {
                let pairs: Vec<(f64, f64)> = (0..=(s % 7))
                    .map(|j| (f64::from(s * 3 + j * 11 % 17) / 8.0, f64::from((j + 1) * (s + 1))))
                    .chain([(INF, f64::from(10 * (s + 1)))])
                    .collect();
                let mut pairs = pairs;
                pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
                pairs.dedup_by(|x, y| x.0 == y.0);
                hist(&pairs, f64::from(s))
            })
            .collect();
        let folded = many[1..].iter().fold(many[0].clone(), |acc, h| Histogram {
            buckets: merged_by_definition(&acc, h),
            count: acc.count + h.count,
            sum: acc.sum.zip(h.sum).map(|(a, b)| a + b),
            labels: Labels::new(),
        });
        let summed = Histogram::sum(&many).unwrap();
        assert_eq!(summed, folded);
        assert_eq!(Histogram::distinct_bounds(&many), folded.buckets.len());
        assert_eq!(Histogram::sum(&many[..1]), Some(many[0].clone()));
        assert_eq!(Histogram::sum(&[]), None);
    }

    /// One merge of two 20,000-bucket series of interleaved bounds, and the
    /// sum of 2,000 series of 10 bounds of their own: their output checked
    /// whole, and their time against a bound wide enough for any machine
    /// (each takes milliseconds; merged a bound at a time, folded one
    /// series at a time, they were about 10⁹ and 10¹¹ steps).
    #[test]
    fn merging_is_linear_in_the_buckets() {
        let n = 20_000;
        let series = |offset: f64| {
            let mut b: Vec<Bucket> = (0..n).map(|i| Bucket { le: i as f64 * 2.0 + offset, count: i as f64 }).collect();
            b.push(Bucket { le: INF, count: n as f64 });
            Histogram { labels: Labels::new(), buckets: b, count: n as f64, sum: None }
        };
        let started = std::time::Instant::now();
        let m = series(0.0).merged(&series(1.0));
        assert_eq!(m.buckets.len(), 2 * n + 1);
        assert!(m.buckets.windows(2).all(|w| w[0].le < w[1].le));
        // bound 2k + 1 holds k of each
        assert_eq!(m.buckets[2 * 123 + 1], Bucket { le: 247.0, count: 246.0 });
        let many: Vec<Histogram> = (0..2_000)
            .map(|s| {
                let mut b: Vec<Bucket> =
                    (0..10).map(|j| Bucket { le: f64::from(s * 10 + j) + 0.5, count: f64::from(j + 1) }).collect();
                b.push(Bucket { le: INF, count: 10.0 });
                Histogram { labels: Labels::new(), buckets: b, count: 10.0, sum: None }
            })
            .collect();
        let total = Histogram::sum(&many).unwrap();
        assert_eq!((total.buckets.len(), total.count), (20_001, 20_000.0));
        assert_eq!(total.buckets[19_999].count, 20_000.0);
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    }

    #[test]
    fn a_coarsened_histogram_keeps_its_count_and_sum_but_no_quantile() {
        let h = hist(&[(0.1, 1.0), (0.5, 3.0), (INF, 7.0)], 4.0).coarsened();
        assert_eq!(h.buckets, buckets(&[(INF, 7.0)]));
        assert_eq!((h.count, h.sum, h.quantile(0.5)), (7.0, Some(4.0), None));
    }
}
