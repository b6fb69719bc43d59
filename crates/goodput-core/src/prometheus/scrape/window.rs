//! Server signals summarised over a measurement window [T1, T2] of the run's
//! clock: gauges as distributions of their samples; counters as
//! increases (resets handled) and rates; histograms as quantiles of their
//! bucket increases; the prefix-cache hit rate and energy per output token
//! from increases too, never from lifetime totals.

use super::histogram::Histogram;
use super::parse::Scrape;
use super::signals::{map, CounterSignal, GaugeSignal, HistogramSignal, SeriesValue, Signals, Source};
use crate::{Distribution, Window};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// Everything the server said during one window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct WindowSummary {
    pub window: Window,
    /// Scrapes stamped inside the window.
    pub scrapes: usize,
    /// From the first to the last of those scrapes: what counter rates are
    /// taken over.
    pub span_s: f64,
    /// The inference engine, when one was recognised.
    pub engine: Option<Source>,
    /// Every source recognised, exporters included.
    pub sources: Vec<Source>,
    /// Mean, std, min, max and [`GAUGE_PERCENTILES`] of each gauge's
    /// samples, in the shape of the run summary's latency distributions.
    pub gauges: BTreeMap<GaugeSignal, Distribution>,
    pub counters: BTreeMap<CounterSignal, CounterSummary>,
    pub histograms: BTreeMap<HistogramSignal, HistogramSummary>,
    /// Δ prefix-cache hit tokens / Δ query tokens over the window.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Δ GPU energy / Δ generation tokens over the window. Covers every GPU
    /// the exporter reports, whether the engine uses it or not.
    pub energy_per_output_token_joules: Option<f64>,
    /// Speculative decoding over the window, when the server reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecode>,
    /// The mean KV-cache transfer of a disaggregated deployment over the
    /// window, seconds: the transfer histogram's Δsum / Δcount, or Triton's
    /// Δtransfer time / Δrequests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_transfer_mean_s: Option<f64>,
    pub series: Series,
}

/// What a speculating server said of its drafts over a window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct SpecDecode {
    /// Draft tokens accepted / draft tokens proposed, from counter
    /// increases (vLLM), or the engine's own gauge's mean over the window
    /// (SGLang).
    pub acceptance_rate: Option<f64>,
    /// Tokens a speculative step yields per sequence, the bonus token
    /// included: 1 + accepted / proposals (vLLM), or the engine's gauge
    /// (SGLang).
    pub mean_accepted_length: Option<f64>,
    /// Per draft position, the share of proposals whose token at that
    /// position was accepted (vLLM): falls with the position, and sums to
    /// `mean_accepted_length` − 1.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub acceptance_by_position: Vec<f64>,
    /// Proposals and draft tokens over the window (vLLM's counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drafts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<f64>,
    /// `counters` (increases over the window) or `gauges` (the engine's own
    /// averages, over its logging period).
    pub basis: String,
    /// The acceptance rate scrape by scrape (Δaccepted / Δdrafted since the
    /// scrape before; `null` where nothing was drafted), beside
    /// `series.t_s`, to see acceptance move with the load.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub acceptance_series: Vec<Option<f64>>,
}

/// The percentiles reported for gauges.
pub const GAUGE_PERCENTILES: [f64; 2] = [50.0, 95.0];

/// A counter's increase over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct CounterSummary {
    pub delta: f64,
    /// `delta / span_s`; `None` when the span is zero.
    pub rate_per_s: Option<f64>,
    /// Series seen to go down (a server restart) inside the window.
    pub resets: u32,
}

/// A histogram's observations inside the window (bucket increases).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct HistogramSummary {
    pub count: f64,
    pub sum: Option<f64>,
    /// Δsum / Δcount.
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    /// The bucket that holds the p50, `[lower, upper]`: the p50 is
    /// interpolated inside it, and lies anywhere in it. Absent when that is
    /// the `+Inf` bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_bucket: Option<[f64; 2]>,
    /// The bucket that holds the p99, as `p50_bucket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_bucket: Option<[f64; 2]>,
}

/// The window's signals over time, as columns: `t_s[i]` is when scrape `i`
/// was taken; a gauge's `[i]` is its value then, a counter's `[i]` its rate
/// since scrape `i − 1` (`null` for the first scrape and where absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct Series {
    pub t_s: Vec<f64>,
    pub gauges: BTreeMap<GaugeSignal, Vec<Option<f64>>>,
    pub rates_per_s: BTreeMap<CounterSignal, Vec<Option<f64>>>,
}

/// A quantile's bucket as `[lower, upper]`, unless it is the `+Inf` one.
fn finite_bucket(b: Option<(f64, f64)>) -> Option<[f64; 2]> {
    b.filter(|(_, hi)| hi.is_finite()).map(|(lo, hi)| [lo, hi])
}

/// Summarises the scrapes stamped inside [`start`, `end`] (run clock).
pub fn summarize(scrapes: &[(Duration, Scrape)], start: Duration, end: Duration) -> WindowSummary {
    let signals: Vec<(Duration, Signals)> =
        scrapes.iter().filter(|(t, _)| (start..=end).contains(t)).map(|(t, s)| (*t, map(s, false))).collect();
    summarize_signals(&signals, start, end)
}

/// [`summarize`] for scrapes already mapped with [`Signals::from_scrape`],
/// for a scraper that keeps signals rather than whole scrapes.
pub fn summarize_signals(signals: &[(Duration, Signals)], start: Duration, end: Duration) -> WindowSummary {
    summarize_points(signals.iter().map(|(t, s)| (*t, s)), start, end)
}

/// [`summarize_signals`] over scrapes however they are held.
pub fn summarize_points<'a>(
    signals: impl Iterator<Item = (Duration, &'a Signals)>,
    start: Duration,
    end: Duration,
) -> WindowSummary {
    let mut points: Vec<(Duration, &Signals)> = signals.filter(|(t, _)| (start..=end).contains(t)).collect();
    points.sort_by_key(|p| p.0);
    let span_s = match (points.first(), points.last()) {
        (Some(first), Some(last)) => (last.0 - first.0).as_secs_f64(),
        _ => 0.0,
    };

    let mut sources: Vec<Source> = points.iter().flat_map(|(_, s)| s.sources.iter().copied()).collect();
    sources.sort();
    sources.dedup();

    let mut series = Series { t_s: points.iter().map(|p| p.0.as_secs_f64()).collect(), ..Series::default() };
    let mut gauges = BTreeMap::new();
    for &signal in GaugeSignal::ALL {
        let column: Vec<Option<f64>> = points.iter().map(|(_, s)| s.gauges.get(&signal).copied()).collect();
        let mut values: Vec<f64> = column.iter().flatten().copied().collect();
        if values.is_empty() {
            continue;
        }
        gauges.insert(signal, Distribution::from_samples(&mut values, &GAUGE_PERCENTILES));
        series.gauges.insert(signal, column);
    }

    let mut counters = BTreeMap::new();
    for &signal in CounterSignal::ALL {
        let (steps, resets) = counter_steps(&points, signal);
        if steps.iter().all(Option::is_none) {
            continue;
        }
        let delta: f64 = steps.iter().flatten().sum();
        let rate_per_s = (span_s > 0.0).then(|| delta / span_s);
        counters.insert(signal, CounterSummary { delta, rate_per_s, resets });
        let rates = steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let dt = (points[i].0 - points[i.saturating_sub(1)].0).as_secs_f64();
                step.filter(|_| dt > 0.0).map(|d| d / dt)
            })
            .collect();
        series.rates_per_s.insert(signal, rates);
    }

    let mut histograms = BTreeMap::new();
    for &signal in HistogramSignal::ALL {
        if let Some(h) = histogram_increase(&points, signal) {
            let summary = HistogramSummary {
                count: h.count,
                sum: h.sum,
                mean: h.mean(),
                p50: h.quantile(0.5),
                p90: h.quantile(0.9),
                p99: h.quantile(0.99),
                p50_bucket: finite_bucket(h.quantile_bucket(0.5)),
                p99_bucket: finite_bucket(h.quantile_bucket(0.99)),
            };
            histograms.insert(signal, summary);
        }
    }

    let delta = |c| counters.get(&c).map(|s: &CounterSummary| s.delta);
    let ratio = |num: Option<f64>, den: Option<f64>| num.zip(den.filter(|&d| d > 0.0)).map(|(n, d)| n / d);
    let spec_decode = spec_decode(&points, &counters, &gauges);
    let kv_transfer_mean_s = histograms
        .get(&HistogramSignal::KvTransfer)
        .and_then(|h| h.mean)
        .or_else(|| ratio(delta(CounterSignal::KvTransferTime), delta(CounterSignal::KvTransferRequests)));
    WindowSummary {
        window: Window {
            start_s: start.as_secs_f64(),
            end_s: end.as_secs_f64(),
            duration_s: end.saturating_sub(start).as_secs_f64(),
        },
        scrapes: points.len(),
        span_s,
        engine: sources.iter().copied().find(|s| s.is_engine()),
        prefix_cache_hit_rate: ratio(delta(CounterSignal::PrefixCacheHits), delta(CounterSignal::PrefixCacheQueries)),
        energy_per_output_token_joules: ratio(delta(CounterSignal::GpuEnergy), delta(CounterSignal::GenerationTokens)),
        spec_decode,
        kv_transfer_mean_s,
        sources,
        gauges,
        counters,
        histograms,
        series,
    }
}

/// A counter's increase from each scrape to the next (`None` for the first
/// scrape and where the counter is absent), and the resets seen. Increases
/// are taken per series, then summed: a value below the series' last one
/// means the server restarted and counted again from zero, so the new value
/// is all increase (Prometheus' `increase`). A series first seen after the
/// window's first scrape was created inside it and counts from zero, unless
/// the counter is a total [since boot](CounterSignal::since_boot) (a GPU's
/// energy): then its first sample is its baseline, and a scrape where every
/// series is new has no step. A series missing from a scrape keeps its last
/// value. A scrape after the window's first reads what scrapes dropped
/// before it carried into it ([`Carried`](super::signals::Carried)): the
/// first values of series missing from the scrape before (read as a
/// sample), then the last values of series missing from it (held), then
/// the increases carried, then its own values.
fn counter_steps(points: &[(Duration, &Signals)], signal: CounterSignal) -> (Vec<Option<f64>>, u32) {
    let since_boot = signal.since_boot();
    let mut last: HashMap<&str, f64> = HashMap::new();
    let mut resets: u32 = 0;
    let steps = points
        .iter()
        .enumerate()
        .map(|(i, (_, s))| {
            let (carried, first, held) = carried_of(s, signal, i);
            if !s.counters.contains_key(&signal) && carried.is_none() && first.is_empty() && held.is_empty() {
                return None;
            }
            let series = s.counters.get(&signal).map_or(&[][..], Vec::as_slice);
            let mut increase = 0.0;
            let mut measured = !since_boot;
            for (v, is_held) in read_order(first, held, series) {
                let prev = last.insert(v.series.as_str(), v.value);
                if is_held {
                    // Held: its increase up to it is carried.
                    measured |= prev.is_some();
                    continue;
                }
                match prev {
                    Some(prev) if v.value >= prev => increase += v.value - prev,
                    Some(_) => {
                        increase += v.value;
                        resets = resets.saturating_add(1);
                    }
                    None if i == 0 || since_boot => continue,
                    None => increase += v.value,
                }
                measured = true;
            }
            if let Some(carried) = carried {
                increase += carried.iter().map(|v| v.value).sum::<f64>();
                measured = true;
            }
            if i > 0 {
                resets = resets.saturating_add(s.carried.resets.get(&signal).copied().unwrap_or(0));
            }
            (i > 0 && measured).then_some(increase)
        })
        .collect();
    (steps, resets)
}

/// What scrape `i` of a window carried of `signal`: the increases, the
/// first values and the last values ([`counter_steps`]); nothing for the
/// window's first scrape.
fn carried_of(
    s: &Signals,
    signal: CounterSignal,
    i: usize,
) -> (Option<&Vec<SeriesValue>>, &[SeriesValue], &[SeriesValue]) {
    if i == 0 {
        return (None, &[], &[]);
    }
    let c = &s.carried;
    let first = c.first.get(&signal).map_or(&[][..], Vec::as_slice);
    let last = c.last.get(&signal).map_or(&[][..], Vec::as_slice);
    (c.counters.get(&signal), first, last)
}

/// A scrape's values of one counter in the order a window reads them:
/// the first values carried (read as samples), the last values carried
/// (held, `true`: the increase up to each is carried), then its own
/// ([`carried_of`]).
fn read_order<'a>(
    first: &'a [SeriesValue],
    held: &'a [SeriesValue],
    own: &'a [SeriesValue],
) -> impl Iterator<Item = (&'a SeriesValue, bool)> {
    let sample = |v| (v, false);
    first.iter().map(sample).chain(held.iter().map(|v| (v, true))).chain(own.iter().map(sample))
}

/// How the series of one counter covered a window's scrapes: how many were
/// seen, how many were first seen after its first scrape (an exporter that
/// failed it, a GPU reported late), how many were missing from its last.
/// A total [since boot](CounterSignal::since_boot) counts nothing of such a
/// series before it was seen, nor after. Nothing is known of series a run
/// kept [folded](super::fold::Folder): all zero then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeriesCoverage {
    pub series: usize,
    pub late: usize,
    pub gone: usize,
}

/// The [`SeriesCoverage`] of `signal` over the scrapes in [start, end].
pub fn series_coverage<'a>(
    signals: impl Iterator<Item = (Duration, &'a Signals)>,
    start: Duration,
    end: Duration,
    signal: CounterSignal,
) -> SeriesCoverage {
    let mut points: Vec<(Duration, &Signals)> = signals.filter(|(t, _)| (start..=end).contains(t)).collect();
    points.sort_by_key(|p| p.0);
    let names = |s: &'a Signals| -> std::collections::HashSet<&'a str> {
        s.counters.get(&signal).into_iter().flatten().map(|v| v.series.as_str()).collect()
    };
    // A series seen in a dropped scrape inside the window (carried first
    // or last values) was seen, though no kept scrape shows it.
    let carried = points.iter().enumerate().flat_map(|(i, (_, s))| {
        let (_, first, held) = carried_of(s, signal, i);
        first.iter().chain(held).map(|v| v.series.as_str())
    });
    let all: std::collections::HashSet<&str> = points.iter().flat_map(|(_, s)| names(s)).chain(carried).collect();
    // Series summed as they were scraped are no longer told apart.
    if all.iter().any(|n| super::fold::is_folded_series(n)) {
        return SeriesCoverage::default();
    }
    let (Some(first), Some(last)) = (points.first(), points.last()) else { return SeriesCoverage::default() };
    let (first, last) = (names(first.1), names(last.1));
    SeriesCoverage {
        series: all.len(),
        late: all.iter().filter(|n| !first.contains(*n)).count(),
        gone: all.iter().filter(|n| !last.contains(*n)).count(),
    }
}

/// Speculative decoding over the window: from vLLM's counters when they
/// moved, else from SGLang's gauges.
fn spec_decode(
    points: &[(Duration, &Signals)],
    counters: &BTreeMap<CounterSignal, CounterSummary>,
    gauges: &BTreeMap<GaugeSignal, Distribution>,
) -> Option<SpecDecode> {
    let delta = |c| counters.get(&c).map(|s: &CounterSummary| s.delta).filter(|&d| d > 0.0);
    if let Some(drafts) = delta(CounterSignal::SpecDrafts) {
        let accepted = delta(CounterSignal::SpecAcceptedTokens).unwrap_or(0.0);
        let draft_tokens = delta(CounterSignal::SpecDraftTokens);
        let by_position = increase_by_label(points, CounterSignal::SpecAcceptedByPosition, "position");
        // Positions in order; a gap (a position never exported) ends the list.
        let acceptance_by_position =
            (0..).map_while(|k: usize| by_position.get(&k.to_string()).map(|a| a / drafts)).collect();
        let (acc, drafted) = (
            counter_steps(points, CounterSignal::SpecAcceptedTokens).0,
            counter_steps(points, CounterSignal::SpecDraftTokens).0,
        );
        let acceptance_series =
            acc.iter().zip(&drafted).map(|(a, d)| a.zip(d.filter(|&d| d > 0.0)).map(|(a, d)| a / d)).collect();
        return Some(SpecDecode {
            acceptance_rate: draft_tokens.map(|d| accepted / d),
            mean_accepted_length: Some(1.0 + accepted / drafts),
            acceptance_by_position,
            drafts: Some(drafts),
            draft_tokens,
            basis: "counters".into(),
            acceptance_series,
        });
    }
    let rate = gauges.get(&GaugeSignal::SpecAcceptRateReported).and_then(|d| d.mean);
    let length = gauges.get(&GaugeSignal::SpecAcceptLengthReported).and_then(|d| d.mean);
    if rate.is_none() && length.is_none() {
        return None;
    }
    let acceptance_series =
        points.iter().map(|(_, s)| s.gauges.get(&GaugeSignal::SpecAcceptRateReported).copied()).collect::<Vec<_>>();
    Some(SpecDecode {
        acceptance_rate: rate,
        mean_accepted_length: length,
        basis: "gauges".into(),
        acceptance_series: if rate.is_some() { acceptance_series } else { Vec::new() },
        ..SpecDecode::default()
    })
}

/// A counter's increase over the window per value of one of its labels
/// (series without it are left out), with [`counter_steps`]'s rules.
fn increase_by_label(points: &[(Duration, &Signals)], signal: CounterSignal, label: &str) -> BTreeMap<String, f64> {
    let mut last: HashMap<&str, f64> = HashMap::new();
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for (i, (_, s)) in points.iter().enumerate() {
        let (carried, first, held) = carried_of(s, signal, i);
        for v in carried.into_iter().flatten() {
            if let Some(key) = super::signals::series_label(&v.series, label) {
                *out.entry(key.to_string()).or_default() += v.value;
            }
        }
        let own = s.counters.get(&signal).map_or(&[][..], Vec::as_slice);
        for (v, is_held) in read_order(first, held, own) {
            let prev = last.insert(v.series.as_str(), v.value);
            if is_held {
                continue;
            }
            let Some(key) = super::signals::series_label(&v.series, label) else { continue };
            let increase = match prev {
                Some(prev) if v.value >= prev => v.value - prev,
                Some(_) => v.value,
                None if i == 0 => 0.0,
                None => v.value,
            };
            *out.entry(key.to_string()).or_default() += increase;
        }
    }
    out
}

/// The observations a histogram gained inside the window, all series
/// merged; `None` when it never appears after the first scrape. Same
/// per-series rules as [`counter_steps`]. The increases are summed at
/// once ([`Histogram::sum_owned`]), not folded one by one into a growing union.
fn histogram_increase(points: &[(Duration, &Signals)], signal: HistogramSignal) -> Option<Histogram> {
    let mut last: HashMap<&str, &Histogram> = HashMap::new();
    let mut increases = Vec::new();
    for (i, (_, s)) in points.iter().enumerate() {
        if let Some(carried) = s.carried.histograms.get(&signal).filter(|_| i > 0) {
            increases.push(carried.clone());
        }
        for h in s.histograms.get(&signal).into_iter().flatten() {
            let increase = match last.insert(h.series.as_str(), &h.histogram) {
                Some(prev) => h.histogram.increase_since(prev),
                None if i == 0 => continue,
                None => h.histogram.clone(),
            };
            increases.push(increase);
        }
    }
    Histogram::sum_owned(increases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::scrape::parse::parse;

    fn at(s: u64, text: &str) -> (Duration, Scrape) {
        let scrape = parse(text);
        assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
        (Duration::from_secs(s), scrape)
    }

    /// What one synthetic scrape says: two engines, one GPU.
    struct Point {
        running: [f64; 2],
        kv: [f64; 2],
        queries: f64,
        hits: f64,
        generated: [f64; 2],
        /// Cumulative TTFT buckets at 0.1, 0.5 and 1.0 s; the last is the total.
        ttft: [f64; 3],
        ttft_sum: f64,
        energy_mj: f64,
    }

    impl Point {
        fn text(&self) -> String {
            let Point { running, kv, queries, hits, generated, ttft, ttft_sum, energy_mj } = self;
            format!(
                "# TYPE vllm:num_requests_running gauge\n\
                 vllm:num_requests_running{{engine=\"0\"}} {}\n\
                 vllm:num_requests_running{{engine=\"1\"}} {}\n\
                 # TYPE vllm:kv_cache_usage_perc gauge\n\
                 vllm:kv_cache_usage_perc{{engine=\"0\"}} {}\n\
                 vllm:kv_cache_usage_perc{{engine=\"1\"}} {}\n\
                 # TYPE vllm:prefix_cache_queries_total counter\n\
                 vllm:prefix_cache_queries_total{{engine=\"0\"}} {queries}\n\
                 # TYPE vllm:prefix_cache_hits_total counter\n\
                 vllm:prefix_cache_hits_total{{engine=\"0\"}} {hits}\n\
                 # TYPE vllm:generation_tokens_total counter\n\
                 vllm:generation_tokens_total{{engine=\"0\"}} {}\n\
                 vllm:generation_tokens_total{{engine=\"1\"}} {}\n\
                 # TYPE vllm:time_to_first_token_seconds histogram\n\
                 vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.1\"}} {}\n\
                 vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\"}} {}\n\
                 vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"1.0\"}} {}\n\
                 vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"+Inf\"}} {}\n\
                 vllm:time_to_first_token_seconds_sum{{engine=\"0\"}} {ttft_sum}\n\
                 vllm:time_to_first_token_seconds_count{{engine=\"0\"}} {}\n\
                 # TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n\
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"0\"}} {energy_mj}\n",
                running[0],
                running[1],
                kv[0],
                kv[1],
                generated[0],
                generated[1],
                ttft[0],
                ttft[1],
                ttft[2],
                ttft[2],
                ttft[2],
            )
        }
    }

    /// Two scrapes in the window [10 s, 20 s], one before and one after.
    fn run() -> Vec<(Duration, Scrape)> {
        let before = Point {
            running: [1.0, 1.0],
            kv: [0.1, 0.1],
            queries: 10.0,
            hits: 1.0,
            generated: [10.0, 10.0],
            ttft: [1.0, 1.0, 1.0],
            ttft_sum: 0.1,
            energy_mj: 0.0,
        };
        let first = Point {
            running: [4.0, 2.0],
            kv: [0.5, 0.3],
            queries: 1000.0,
            hits: 900.0,
            generated: [5000.0, 7000.0],
            ttft: [10.0, 20.0, 30.0],
            ttft_sum: 9.0,
            energy_mj: 1_000_000.0,
        };
        let last = Point {
            running: [6.0, 4.0],
            kv: [0.7, 0.5],
            queries: 3000.0,
            hits: 1400.0,
            // engine 1 restarted: its counter fell from 7000 to 300
            generated: [5600.0, 300.0],
            ttft: [10.0, 50.0, 130.0],
            ttft_sum: 71.0,
            energy_mj: 1_900_000.0,
        };
        let after = Point {
            running: [90.0, 90.0],
            kv: [0.9, 0.9],
            queries: 9e6,
            hits: 9e6,
            generated: [9e6, 9e6],
            ttft: [1e6, 1e6, 1e6],
            ttft_sum: 1e6,
            energy_mj: 9e9,
        };
        vec![at(5, &before.text()), at(10, &first.text()), at(20, &last.text()), at(30, &after.text())]
    }

    #[test]
    fn a_two_scrape_window_by_hand() {
        let w = summarize(&run(), Duration::from_secs(10), Duration::from_secs(20));
        let window = (w.window.start_s, w.window.end_s, w.window.duration_s);
        assert_eq!(window, (10.0, 20.0, 10.0));
        assert_eq!((w.scrapes, w.span_s), (2, 10.0));
        assert_eq!((w.engine, w.sources.clone()), (Some(Source::Vllm), vec![Source::Vllm, Source::Dcgm]));

        // gauges: running sums engines (6 then 10), KV use averages them (0.4 then 0.6)
        let running = &w.gauges[&GaugeSignal::RunningRequests];
        assert_eq!((running.count, running.mean, running.max, running.p(50.0)), (2, Some(8.0), Some(10.0), Some(8.0)));
        assert!((running.p(95.0).unwrap() - 9.8).abs() < 1e-12);
        let kv = w.gauges[&GaugeSignal::KvCacheUsage].mean.unwrap();
        assert!((kv - 0.5).abs() < 1e-12);

        // counters: engine 0 gained 600; engine 1 reset, so its 300 is all new
        let generated = &w.counters[&CounterSignal::GenerationTokens];
        assert_eq!((generated.delta, generated.rate_per_s, generated.resets), (900.0, Some(90.0), 1));
        let queries = &w.counters[&CounterSignal::PrefixCacheQueries];
        assert_eq!((queries.delta, queries.rate_per_s, queries.resets), (2000.0, Some(200.0), 0));
        // the window's hit rate is 500 / 2000, not the lifetime 1400 / 3000
        assert_eq!(w.prefix_cache_hit_rate, Some(0.25));
        // 900 J (from mJ) over 900 tokens
        assert_eq!(w.counters[&CounterSignal::GpuEnergy].delta, 900.0);
        assert_eq!(w.energy_per_output_token_joules, Some(1.0));

        // TTFT bucket increases: (0, 0.1] 0, (0.1, 0.5] 30, (0.5, 1] 70, none above
        let ttft = &w.histograms[&HistogramSignal::Ttft];
        assert_eq!((ttft.count, ttft.sum, ttft.mean), (100.0, Some(62.0), Some(0.62)));
        // rank 50 is the 20th of the 70 in (0.5, 1]; rank 90 the 60th; rank 99 the 69th
        assert_eq!(ttft.p50, Some(0.5 + 0.5 * 20.0 / 70.0));
        assert_eq!(ttft.p90, Some(0.5 + 0.5 * 60.0 / 70.0));
        assert!((ttft.p99.unwrap() - (0.5 + 0.5 * 69.0 / 70.0)).abs() < 1e-12);

        assert_eq!(w.series.t_s, vec![10.0, 20.0]);
        assert_eq!(w.series.gauges[&GaugeSignal::RunningRequests], vec![Some(6.0), Some(10.0)]);
        assert_eq!(w.series.rates_per_s[&CounterSignal::GenerationTokens], vec![None, Some(90.0)]);
    }

    #[test]
    fn one_scrape_gives_gauges_but_no_increases() {
        let w = summarize(&run(), Duration::from_secs(9), Duration::from_secs(11));
        assert_eq!((w.scrapes, w.span_s), (1, 0.0));
        assert_eq!(w.gauges[&GaugeSignal::RunningRequests].mean, Some(6.0));
        assert!(w.counters.is_empty() && w.histograms.is_empty());
        assert_eq!((w.prefix_cache_hit_rate, w.energy_per_output_token_joules), (None, None));
        let empty = summarize(&run(), Duration::from_secs(40), Duration::from_secs(50));
        assert_eq!((empty.scrapes, empty.engine, empty.gauges.len()), (0, None, 0));
    }

    #[test]
    fn series_that_appear_vanish_or_restart_inside_the_window() {
        let text = |lines: &str| format!("# TYPE vllm:prompt_tokens_total counter\n{lines}");
        let run = vec![
            at(0, &text("vllm:prompt_tokens_total{engine=\"0\"} 100\n")),
            // engine 1 appears: created inside the window, it counts from zero
            at(1, &text("vllm:prompt_tokens_total{engine=\"0\"} 150\nvllm:prompt_tokens_total{engine=\"1\"} 20\n")),
            // engine 0 missing from this scrape: it keeps its last value
            at(3, &text("vllm:prompt_tokens_total{engine=\"1\"} 25\n")),
            // engine 0 back at 170 (+20), engine 1 restarted at 4 (+4)
            at(4, &text("vllm:prompt_tokens_total{engine=\"0\"} 170\nvllm:prompt_tokens_total{engine=\"1\"} 4\n")),
        ];
        let w = summarize(&run, Duration::ZERO, Duration::from_secs(4));
        let c = &w.counters[&CounterSignal::PromptTokens];
        assert_eq!((c.delta, c.rate_per_s, c.resets), (99.0, Some(24.75), 1));
        assert_eq!(w.series.rates_per_s[&CounterSignal::PromptTokens], vec![None, Some(70.0), Some(2.5), Some(24.0)]);
    }

    #[test]
    fn an_energy_series_first_seen_late_counts_from_its_first_sample() {
        // DCGM counts millijoules since boot. GPU 1 is first reported at 2 s
        // (or its exporter failed the first scrape): its 5 MJ since boot are
        // its baseline, not energy drawn in the window.
        let energy = |g0: Option<f64>, g1: Option<f64>| {
            let mut t = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n".to_owned();
            for (gpu, mj) in [("0", g0), ("1", g1)] {
                if let Some(mj) = mj {
                    t += &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {mj}\n");
                }
            }
            t
        };
        let run = vec![
            at(0, &energy(Some(5e9), None)),
            at(1, &energy(Some(5e9 + 300e3), None)),
            at(2, &energy(Some(5e9 + 600e3), Some(5e9 + 1000e3))),
            at(3, &energy(Some(5e9 + 900e3), Some(5e9 + 1500e3))),
            // GPU 0 missing from the last scrape: it keeps its last value
            at(4, &energy(None, Some(5e9 + 2000e3))),
        ];
        let w = summarize(&run, Duration::ZERO, Duration::from_secs(4));
        let c = &w.counters[&CounterSignal::GpuEnergy];
        // GPU 0: 900 J over 0–3 s; GPU 1: 1000 J over 2–4 s
        assert_eq!((c.delta, c.resets), (1900.0, 0));
        let rates = &w.series.rates_per_s[&CounterSignal::GpuEnergy];
        assert_eq!(rates, &vec![None, Some(300.0), Some(300.0), Some(800.0), Some(500.0)]);
        let signals: Vec<(Duration, Signals)> = run.iter().map(|(t, s)| (*t, Signals::from_scrape(s))).collect();
        let points = || signals.iter().map(|(t, s)| (*t, s));
        let cover = series_coverage(points(), Duration::ZERO, Duration::from_secs(4), CounterSignal::GpuEnergy);
        assert_eq!(cover, SeriesCoverage { series: 2, late: 1, gone: 1 });
        let inner = series_coverage(points(), Duration::from_secs(2), Duration::from_secs(3), CounterSignal::GpuEnergy);
        assert_eq!(inner, SeriesCoverage { series: 2, late: 0, gone: 0 });

        // Every series new at once (the exporter's first scrape failed): no
        // step there, and none of the since-boot total.
        let late = vec![
            at(0, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total 10\n"),
            at(1, &energy(Some(5e9), Some(6e9))),
            at(2, &energy(Some(5e9 + 300e3), Some(6e9 + 500e3))),
        ];
        let w = summarize(&late, Duration::ZERO, Duration::from_secs(2));
        assert_eq!(w.counters[&CounterSignal::GpuEnergy].delta, 800.0);
        assert_eq!(w.series.rates_per_s[&CounterSignal::GpuEnergy], vec![None, None, Some(800.0)]);
    }

    #[test]
    fn a_restarted_histogram_counts_its_new_observations() {
        let text = |fast: u32, total: u32, sum: f64| {
            format!(
                "# TYPE vllm:e2e_request_latency_seconds histogram\n\
                 vllm:e2e_request_latency_seconds_bucket{{le=\"1.0\"}} {fast}\n\
                 vllm:e2e_request_latency_seconds_bucket{{le=\"+Inf\"}} {total}\n\
                 vllm:e2e_request_latency_seconds_sum {sum}\n\
                 vllm:e2e_request_latency_seconds_count {total}\n"
            )
        };
        let run = vec![at(0, &text(50, 100, 80.0)), at(5, &text(60, 120, 100.0)), at(10, &text(3, 4, 3.0))];
        let w = summarize(&run, Duration::ZERO, Duration::from_secs(10));
        let e2e = &w.histograms[&HistogramSignal::E2e];
        // +10 fast, +10 slow before the restart; 3 fast, 1 slow after it
        assert_eq!((e2e.count, e2e.sum), (24.0, Some(23.0)));
        // rank 12 is the 12th of 13 in (0, 1]
        assert_eq!(e2e.p50, Some(12.0 / 13.0));
        // rank above 13 falls in +Inf: the highest finite bound
        assert_eq!(e2e.p90, Some(1.0));
    }

    #[test]
    fn summarizing_signals_is_summarizing_scrapes() {
        let run = run();
        let signals: Vec<(Duration, Signals)> = run.iter().map(|(t, s)| (*t, Signals::from_scrape(s))).collect();
        let (start, end) = (Duration::from_secs(5), Duration::from_secs(20));
        assert_eq!(summarize_signals(&signals, start, end), summarize(&run, start, end));
    }

    #[test]
    fn the_summary_serialises_with_units_in_its_names() {
        let w = summarize(&run(), Duration::from_secs(10), Duration::from_secs(20));
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["engine"], "vllm");
        assert_eq!(json["gauges"]["kv_cache_usage_ratio"]["mean"], 0.5);
        assert_eq!(json["gauges"]["running_requests"]["p95"], 9.8);
        assert_eq!(json["window"]["duration_s"], 10.0);
        assert_eq!(json["counters"]["generation_tokens"]["rate_per_s"], 90.0);
        assert_eq!(json["counters"]["gpu_energy_joules"]["delta"], 900.0);
        assert_eq!(json["histograms"]["ttft_seconds"]["count"], 100.0);
        assert_eq!(json["series"]["rates_per_s"]["generation_tokens"], serde_json::json!([null, 90.0]));
        assert_eq!(json["energy_per_output_token_joules"], 1.0);
        let back: WindowSummary = serde_json::from_value(json).unwrap();
        assert_eq!(back, w);
    }
}
