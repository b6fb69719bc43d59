//! What the charts plot, computed from a result document: latency CDFs (from
//! per-request records, else from the summary's percentiles) and time series
//! over the run (output throughput, requests in flight, TTFT by send time).

use goodput_core::analysis::metrics::ms;
use goodput_core::{Distribution, RequestMetrics, RequestRecord, RunResult};

/// The most points a CDF line carries; more samples are thinned to evenly
/// spaced quantiles, which a chart this size cannot tell apart.
pub const CDF_POINTS: usize = 400;
/// The most TTFT dots in the scatter over time.
pub const SCATTER_POINTS: usize = 3000;

/// The latency metrics shown as distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    Ttft,
    Tpot,
    Itl,
    E2e,
}

impl Latency {
    pub const ALL: [Latency; 4] = [Latency::Ttft, Latency::Tpot, Latency::Itl, Latency::E2e];

    pub fn id(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::E2e => "e2e",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Latency::Ttft => "Time to first token",
            Latency::Tpot => "Time per output token",
            Latency::Itl => "Inter-token latency",
            Latency::E2e => "End-to-end latency",
        }
    }

    /// Its place in the result.
    pub fn field(self) -> &'static str {
        match self {
            Latency::Ttft => "summary.ttft_ms",
            Latency::Tpot => "summary.tpot_ms",
            Latency::Itl => "summary.itl_ms",
            Latency::E2e => "summary.e2e_ms",
        }
    }

    fn summary(self, r: &RunResult) -> &Distribution {
        let s = &r.summary;
        match self {
            Latency::Ttft => &s.ttft_ms,
            Latency::Tpot => &s.tpot_ms,
            Latency::Itl => &s.itl_ms,
            Latency::E2e => &s.e2e_ms,
        }
    }

    /// Samples in ms from successful measured requests, as the summary
    /// computes them (ITL pooled per token: a chunk of k tokens is k
    /// samples, held as one), finite ones only, sorted. One buffer of the
    /// exact size holds them: 8 bytes a sample, or 16 a chunk where some
    /// chunk carries other than one token (a run's ITL gaps are tens of
    /// millions).
    fn samples(self, records: &[RequestRecord]) -> Sorted {
        let ok = || records.iter().filter(|r| !r.warmup && r.outcome.is_success());
        let each = |f: fn(&RequestRecord) -> Option<std::time::Duration>| {
            let values = || ok().filter_map(f).map(ms).filter(|x| x.is_finite());
            Sorted::once(exactly(values().count(), values()))
        };
        match self {
            Latency::Ttft => each(|r| r.ttft()),
            Latency::Tpot => each(|r| r.tpot()),
            Latency::E2e => each(|r| r.e2e()),
            Latency::Itl => {
                // Chunks after a first, which each give their gap: one
                // sample a token, none for a chunk of none.
                let later = || ok().flat_map(|r| r.chunks.iter().skip(1));
                let (mut gaps, mut ones) = (0usize, true);
                for c in later() {
                    gaps += usize::from(c.tokens > 0);
                    ones &= c.tokens == 1;
                }
                // Each request's `(Δ/k ms, k)` as the summary reads them:
                // what a request holds, never the run's, at a time.
                let pairs = || ok().flat_map(|r| r.itl_repeated()).map(|(d, k)| (ms(d), k));
                // Every gap is a finite number of ms: none is left out.
                if ones {
                    Sorted::once(exactly(gaps, pairs().map(|p| p.0)))
                } else {
                    Sorted::repeated(exactly(gaps, pairs()))
                }
            }
        }
    }
}

/// `n` items from `items` in a buffer of exactly their size.
fn exactly<T>(n: usize, items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.extend(items.take(n));
    v
}

/// A metric's samples in rising order, read as the sorted list of all of
/// them: each value once, or values with how many samples each stands for
/// (as [`goodput_core::Repeated`], in one buffer rather than its three).
enum Sorted {
    Once(Vec<f64>),
    /// `(value, samples up to and including it)`.
    Repeated(Vec<(f64, u64)>),
}

impl Sorted {
    fn once(mut v: Vec<f64>) -> Self {
        // The sort the summary gives its samples: `total_cmp`'s order.
        goodput_core::analysis::stats::sort_total(&mut v);
        Sorted::Once(v)
    }

    /// `(value, times)` pairs in any order; a pair of zero times is none.
    fn repeated(mut v: Vec<(f64, u64)>) -> Self {
        // Values equal under `total_cmp` are the same bits: their order
        // among themselves changes nothing.
        v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut total = 0u64;
        for p in &mut v {
            total = total.saturating_add(p.1);
            p.1 = total;
        }
        Sorted::Repeated(v)
    }

    /// How many samples, each repeat counted.
    fn len(&self) -> u64 {
        match self {
            Sorted::Once(v) => v.len() as u64,
            Sorted::Repeated(v) => v.last().map_or(0, |p| p.1),
        }
    }

    /// The `i`-th of the samples in sorted order (`i < len`).
    fn at(&self, i: u64) -> f64 {
        match self {
            Sorted::Once(v) => v[i as usize],
            // The first value whose samples reach past `i`: one of zero
            // times ends where the one before it ends, and is passed over.
            Sorted::Repeated(v) => v[v.partition_point(|p| p.1 <= i).min(v.len() - 1)].0,
        }
    }
}

/// A cumulative distribution: `(value_ms, share ≤ value)` in rising order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cdf {
    pub points: Vec<(f64, f64)>,
    /// True when drawn from the summary's percentiles (the run was saved
    /// without per-request records): a handful of points, joined by lines.
    pub from_percentiles: bool,
    pub samples: u64,
    /// (percentile, value ms) where a chart may cut its x axis when a few
    /// outliers lie far beyond the rest: p99.9 of the samples, or the
    /// highest percentile up to p99.9 that the summary lists.
    pub body_end: Option<(f64, f64)>,
}

/// The percentile a CDF's axis is cut at, at most, when its tail is far out.
pub const CUT_PERCENTILE: f64 = 99.9;

/// The CDF of one latency metric of a run.
pub fn cdf(r: &RunResult, m: Latency) -> Cdf {
    // An imported run whose file cannot give the metric has no samples of
    // it, whatever its rebuilt records would say.
    if !crate::read::peers::recomputed(r, m.field()) {
        return Cdf::default();
    }
    if let Some(recs) = &r.requests {
        return cdf_of_records(recs, m);
    }
    let d = m.summary(r);
    let mut points = Vec::new();
    if let Some(min) = d.min {
        points.push((min, 0.0));
    }
    for &(p, v) in &d.percentiles {
        if let Some(v) = v {
            points.push((v, p / 100.0));
        }
    }
    if let Some(max) = d.max {
        points.push((max, 1.0));
    }
    points.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.total_cmp(&b.0)));
    let body_end = d
        .percentiles
        .iter()
        .filter(|(p, _)| *p <= CUT_PERCENTILE)
        .filter_map(|&(p, v)| Some((p, v?)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    Cdf { points, from_percentiles: true, samples: d.count, body_end }
}

/// The CDF of one latency metric over `records` (successful measured
/// requests, as the summary counts them): what a command that holds a
/// run's records in memory keeps of them for its page.
pub fn cdf_of_records(records: &[RequestRecord], m: Latency) -> Cdf {
    let v = m.samples(records);
    let n = v.len();
    Cdf { samples: n, points: cdf_at(n, |i| v.at(i)), from_percentiles: false, body_end: body_end(n, |i| v.at(i)) }
}

/// Where the body of `n` sorted samples (the `i`-th at `at(i)`) ends: p99.9,
/// or with fewer than 1,000 samples (where p99.9 is the slowest itself) the
/// one before the slowest, one stall then being a tail to cut too; its
/// percentile and value. `None` without samples.
fn body_end(n: u64, at: impl Fn(u64) -> f64) -> Option<(f64, f64)> {
    (n > 0).then(|| {
        let i = ((CUT_PERCENTILE / 100.0 * n as f64).ceil() as u64).clamp(1, n) - 1;
        let i = if n >= 2 { i.min(n - 2) } else { i };
        let p = (1000.0 * (i + 1) as f64 / n as f64).floor() / 10.0;
        (p.min(CUT_PERCENTILE), at(i))
    })
}

/// Step points of the empirical CDF of `samples`, thinned to
/// [`CDF_POINTS`] evenly spaced quantiles when there are more.
pub fn cdf_of(samples: &goodput_core::Repeated) -> Vec<(f64, f64)> {
    cdf_at(samples.len(), |i| samples.at(i))
}

/// [`cdf_of`] of `n` sorted samples, `at(i)` the `i`-th.
fn cdf_at(n: u64, at: impl Fn(u64) -> f64) -> Vec<(f64, f64)> {
    if n == 0 {
        return Vec::new();
    }
    if n <= CDF_POINTS as u64 {
        // (x_i, i/n) then (x_i, (i+1)/n): the vertical step at each sample.
        let mut pts = Vec::with_capacity(2 * n as usize);
        for i in 0..n {
            let x = at(i);
            pts.push((x, i as f64 / n as f64));
            pts.push((x, (i + 1) as f64 / n as f64));
        }
        return pts;
    }
    (0..=CDF_POINTS)
        .map(|k| {
            let q = k as f64 / CDF_POINTS as f64;
            let i = ((q * n as f64).ceil() as u64).clamp(1, n) - 1;
            (at(i), q)
        })
        .collect()
}

/// Series over the run's clock, in seconds from its origin.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimeSeries {
    /// Bucket width, seconds (1 s, finer for short runs).
    pub bucket_s: f64,
    /// (bucket start, output tokens/s over the bucket).
    pub output_tokens_per_s: Vec<(f64, f64)>,
    /// (bucket start, time-weighted mean requests in flight over the bucket).
    pub in_flight: Vec<(f64, f64)>,
    /// (sent, TTFT ms) of successful requests.
    pub ttft: Vec<(f64, f64)>,
    /// Send times of failed requests.
    pub failures: Vec<f64>,
    /// The measurement window, shaded on the charts.
    pub window: (f64, f64),
}

/// What a sweep command computes from the records it holds as its points
/// run, for its page to draw: its document may hold no records (they are
/// kept only with --include-requests), and the page embeds the document
/// as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepSeries {
    /// Each point's TTFT distribution from its records, in the order of
    /// the document's points; `None` where none were held.
    pub ttft: Vec<Option<Cdf>>,
    /// A stages sweep's one run over time, from all its records.
    pub timeline: Option<TimeSeries>,
}

/// The most buckets a time series has: a run of over five and a half
/// hours takes wider ones.
pub const MAX_BUCKETS: f64 = 20_000.0;

/// 1 s buckets, as the peak throughput of docs/metrics.md uses; a short run gets a
/// finer width so its chart still has a shape, and a run of hours a wider
/// one (the width is labelled).
pub fn bucket_width(span_s: f64) -> f64 {
    // A run of hours (or a record's time read from a damaged file, years
    // on) takes whole seconds a bucket, as many as keep the buckets below
    // MAX_BUCKETS.
    if span_s > MAX_BUCKETS {
        return (span_s / MAX_BUCKETS).ceil();
    }
    for w in [1.0, 0.5, 0.2, 0.1, 0.05, 0.02] {
        if span_s / w >= 10.0 {
            return w;
        }
    }
    0.01
}

/// Time series of a run; `None` without per-request records.
pub fn time_series(r: &RunResult) -> Option<TimeSeries> {
    time_series_of(r.requests.as_ref()?, (r.window.start_s, r.window.end_s))
}

/// Time series of `recs`, `window` the measurement window to shade;
/// `None` without records.
pub fn time_series_of(recs: &[RequestRecord], window: (f64, f64)) -> Option<TimeSeries> {
    if recs.is_empty() {
        return None;
    }
    let end = recs.iter().map(|r| r.end.max(r.sent)).max().unwrap_or_default();
    let span = end.as_secs_f64();
    let w = bucket_width(span);
    let n = ((span / w).ceil() as usize).max(1);
    let mut tokens = vec![0u64; n];
    for c in recs.iter().filter(|r| r.outcome.is_success()).flat_map(|r| r.chunks.iter()) {
        let i = ((c.t.as_secs_f64() / w) as usize).min(n - 1);
        tokens[i] += c.tokens as u64;
    }
    // Each bucket divides by the time it covers: the last one may be partial.
    let width = |i: usize| (span - i as f64 * w).clamp(0.0, w);
    let output_tokens_per_s = tokens
        .iter()
        .enumerate()
        .filter(|&(i, _)| width(i) > w * 0.05)
        .map(|(i, &t)| (i as f64 * w, t as f64 / width(i)))
        .collect();

    let mut busy = vec![0f64; n];
    for r in recs {
        let (a, b) = (r.sent.as_secs_f64(), r.end.max(r.sent).as_secs_f64());
        let (first, last) = ((a / w) as usize, ((b / w) as usize).min(n - 1));
        for (i, slot) in busy.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (i as f64 * w, (i + 1) as f64 * w);
            *slot += (b.min(hi) - a.max(lo)).max(0.0);
        }
    }
    let in_flight = busy
        .iter()
        .enumerate()
        .filter(|&(i, _)| width(i) > w * 0.05)
        .map(|(i, &t)| (i as f64 * w, t / width(i)))
        .collect();

    let ok: Vec<&RequestRecord> = recs.iter().filter(|r| r.outcome.is_success()).collect();
    let stride = ok.len().div_ceil(SCATTER_POINTS).max(1);
    let ttft = ok.iter().step_by(stride).filter_map(|r| r.ttft().map(|t| (r.sent.as_secs_f64(), ms(t)))).collect();
    let failures = recs.iter().filter(|r| r.outcome.failure_kind().is_some()).map(|r| r.sent.as_secs_f64()).collect();
    Some(TimeSeries { bucket_s: w, output_tokens_per_s, in_flight, ttft, failures, window })
}

/// The first `limit` distinct failure messages with their kind and count,
/// most frequent first: what a reader needs to see why requests failed.
pub fn failure_messages(r: &RunResult, limit: usize) -> Vec<(String, String, u64)> {
    r.requests.as_deref().map(|recs| failure_messages_of(recs, limit)).unwrap_or_default()
}

/// [`failure_messages`] of records that need not be in a document.
pub fn failure_messages_of(recs: &[RequestRecord], limit: usize) -> Vec<(String, String, u64)> {
    let mut seen: Vec<(String, String, u64)> = Vec::new();
    for rec in recs {
        if let goodput_core::Outcome::Failed { kind, message } = &rec.outcome {
            match seen.iter_mut().find(|(k, m, _)| k == kind.as_str() && m == message) {
                Some(e) => e.2 += 1,
                None => seen.push((kind.to_string(), message.clone(), 1)),
            }
        }
    }
    seen.sort_by_key(|e| std::cmp::Reverse(e.2));
    seen.truncate(limit);
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of `v` once.
    fn once(v: &[f64]) -> goodput_core::Repeated {
        goodput_core::Repeated::new(v.iter().map(|&x| (x, 1)).collect())
    }

    #[test]
    fn small_cdf_steps_through_every_sample() {
        let pts = cdf_of(&once(&[1.0, 2.0]));
        assert_eq!(pts, vec![(1.0, 0.0), (1.0, 0.5), (2.0, 0.5), (2.0, 1.0)]);
    }

    #[test]
    fn large_cdf_is_thinned_to_quantiles() {
        let v: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let pts = cdf_of(&once(&v));
        assert_eq!(pts.len(), CDF_POINTS + 1);
        assert_eq!(pts.first(), Some(&(1.0, 0.0)));
        assert_eq!(pts.last(), Some(&(10_000.0, 1.0)));
        assert_eq!(pts[CDF_POINTS / 2], (5000.0, 0.5));
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }

    /// `cdf_of_records` as it was before the samples were held in one
    /// buffer: every `(value, times)` pair collected, filtered, and read
    /// through [`goodput_core::Repeated`].
    fn cdf_of_records_as_before(records: &[RequestRecord], m: Latency) -> Cdf {
        let ok = records.iter().filter(|r| !r.warmup && r.outcome.is_success());
        let once = |d: std::time::Duration| (ms(d), 1);
        let pairs: Vec<(f64, u64)> = match m {
            Latency::Ttft => ok.filter_map(|r| r.ttft()).map(once).collect(),
            Latency::Tpot => ok.filter_map(|r| r.tpot()).map(once).collect(),
            Latency::Itl => ok.flat_map(|r| r.itl_repeated()).map(|(d, k)| (ms(d), k)).collect(),
            Latency::E2e => ok.filter_map(|r| r.e2e()).map(once).collect(),
        };
        let v = goodput_core::Repeated::new(pairs.into_iter().filter(|p| p.0.is_finite()).collect());
        let n = v.len();
        Cdf { samples: n, points: cdf_of(&v), from_percentiles: false, body_end: body_end(n, |i| v.at(i)) }
    }

    /// `requests` records whose times repeat (whole ms, few of them) and,
    /// with `chunked`, whose chunks carry 0 to 4 tokens; a warm-up and a
    /// failed request among them, which no CDF counts.
    fn records(requests: u64, chunks: u64, chunked: bool) -> Vec<RequestRecord> {
        use goodput_core::{Channel, FailureKind, Outcome, OutputChunk};
        use std::time::Duration;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut draw = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        (0..requests)
            .map(|id| {
                let sent = Duration::from_millis(id * 7);
                let mut r = RequestRecord::new(id, sent, sent);
                let mut t = sent + Duration::from_millis(20 + 5 * draw(4));
                let mut out = 0u64;
                for i in 0..=draw(chunks) {
                    // Gaps of 1 to 5 ms, 3 ms and 3 tokens at times: one
                    // chunk of 3 tokens gives three samples of 1 ms, as
                    // three chunks of one 1 ms apart do.
                    t += Duration::from_millis(1 + draw(5));
                    let tokens = if !chunked || i == 0 { 1 } else { [1, 1, 3, 0, 4][draw(5) as usize] as u32 };
                    out += u64::from(tokens);
                    r.chunks.push(OutputChunk { t, tokens, channel: Channel::Content });
                }
                r.output_tokens = out;
                r.end = t;
                r.outcome = Outcome::Success;
                match id % 11 {
                    3 => r.warmup = true,
                    5 => r.outcome = Outcome::Failed { kind: FailureKind::MidStreamError, message: "x".into() },
                    _ => {}
                }
                r
            })
            .collect()
    }

    #[test]
    fn record_cdfs_draw_the_points_they_drew_when_every_pair_was_collected() {
        // Few samples (a step at each) and many (thinned to quantiles); a
        // token a chunk (the gaps alone) and chunks of several.
        for (requests, chunks) in [(1, 1), (3, 4), (12, 30), (60, 40), (500, 80)] {
            for chunked in [false, true] {
                let recs = records(requests, chunks, chunked);
                for m in Latency::ALL {
                    let (new, old) = (cdf_of_records(&recs, m), cdf_of_records_as_before(&recs, m));
                    // Bit for bit: the same values at the same shares.
                    let bits = |c: &Cdf| c.points.iter().map(|p| (p.0.to_bits(), p.1.to_bits())).collect::<Vec<_>>();
                    let what = format!("{} of {requests} requests (chunked {chunked})", m.id());
                    assert_eq!(bits(&new), bits(&old), "{what}");
                    assert_eq!((new.samples, new.body_end), (old.samples, old.body_end), "{what}");
                }
            }
        }
        // The sets above cover both ways the ITL is drawn, with more
        // samples than CDF_POINTS and repeated values.
        let (ones, chunked) = (records(500, 80, false), records(500, 80, true));
        assert!(cdf_of_records(&ones, Latency::Itl).samples > 4 * CDF_POINTS as u64);
        assert!(Latency::Itl.samples(&chunked).len() > cdf_of_records(&chunked, Latency::Ttft).samples);
    }

    #[test]
    fn record_samples_are_held_in_one_buffer_of_their_size() {
        // A token a chunk: the gaps' values alone, 8 bytes each.
        match Latency::Itl.samples(&records(200, 60, false)) {
            Sorted::Once(v) => assert_eq!(v.capacity(), v.len()),
            Sorted::Repeated(_) => panic!("single-token chunks held with their counts"),
        }
        // Chunks of several tokens: a (value, count) pair a chunk that
        // carried any.
        let recs = records(200, 60, true);
        let carried = recs
            .iter()
            .filter(|r| !r.warmup && r.outcome.is_success())
            .flat_map(|r| r.chunks.iter().skip(1))
            .filter(|c| c.tokens > 0)
            .count();
        match Latency::Itl.samples(&recs) {
            Sorted::Repeated(v) => assert_eq!((v.len(), v.capacity()), (carried, carried)),
            Sorted::Once(_) => panic!("multi-token chunks held once each"),
        }
        match Latency::E2e.samples(&recs) {
            Sorted::Once(v) => assert_eq!(v.capacity(), v.len()),
            Sorted::Repeated(_) => panic!("one sample a request held with counts"),
        }
    }

    #[test]
    fn bucket_width_keeps_ten_buckets() {
        assert_eq!(bucket_width(60.0), 1.0);
        assert_eq!(bucket_width(MAX_BUCKETS), 1.0);
        assert_eq!(bucket_width(86_400.0), 5.0, "a day: 17,280 buckets of 5 s");
        assert!(3e8 / bucket_width(3e8) <= MAX_BUCKETS, "ten years from a damaged record");
        assert_eq!(bucket_width(10.0), 1.0);
        assert_eq!(bucket_width(1.27), 0.1);
        assert_eq!(bucket_width(0.05), 0.01);
    }
}
