//! Run-level analysis: the measurement window, latency distributions,
//! throughput, in-flight load, failures, the error-adjusted view and the
//! vLLM-named compatibility view. A pure function of the records, so a saved
//! run re-analysed gives the live run's numbers.

use crate::analysis::cost::{CostConfig, CostReport};
use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::ratings::{rate, RatingThresholds, Ratings};
use crate::analysis::slo::{judge, Goodput, Slo, SloReport};
use crate::analysis::stability::JudgeContext;
use crate::analysis::stats::{Distribution, Moments};
use crate::doc::record::{CountSource, Outcome, RequestRecord};
pub use crate::doc::window::Window;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

mod vllm;
use vllm::vllm_compat;
pub use vllm::VllmCompat;

/// What to compute beyond the records themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisOptions {
    /// Percentiles to report for every latency metric (0..=100).
    pub percentiles: Vec<f64>,
    /// Limits and objectives to judge the run against.
    pub slo: Option<Slo>,
    /// Price of the hardware, for the cost block.
    pub cost: Option<CostConfig>,
    pub ratings: RatingThresholds,
    /// The confidence of the intervals on every percentile and rate
    /// (`--confidence`); none computes no intervals.
    pub confidence: Option<f64>,
    /// What the steady-state verdict names the command's cap on requests
    /// in flight by, and what ran before the window (a sweep's stage).
    pub stability: JudgeContext,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            percentiles: crate::DEFAULT_PERCENTILES.to_vec(),
            slo: None,
            cost: None,
            ratings: RatingThresholds::default(),
            confidence: Some(crate::analysis::interval::DEFAULT_CONFIDENCE),
            stability: JudgeContext::default(),
        }
    }
}

/// The result of analysing one run's records.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub window: Window,
    pub summary: Summary,
    pub vllm: VllmCompat,
    pub slo: Option<SloReport>,
    pub cost: Option<CostReport>,
    pub warnings: Vec<String>,
}

/// `summary` of the result (docs/result.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Summary {
    pub ttft_ms: Distribution,
    pub ttft_content_ms: Distribution,
    pub tpot_ms: Distribution,
    pub itl_ms: Distribution,
    pub chunk_gap_ms: Distribution,
    pub itl_max_ms: Distribution,
    pub e2e_ms: Distribution,
    pub ttfb_ms: Distribution,
    pub client_queue_ms: Distribution,
    /// Per request, the longest an output chunk had waited in the socket when
    /// the client read it (records' `read_lag_max_ns`, where the client sees
    /// the kernel's receive times): the client's own lateness on the
    /// receiving side. Read stamps carry it into every time.
    #[serde(default)]
    pub client_read_lag_ms: Distribution,
    /// Output chunks that came in one read with the output chunk before them
    /// (records' `shared_reads`): gaps the client could not see.
    #[serde(default)]
    pub shared_read_chunks: u64,
    /// Output chunks whose times are only upper bounds (records'
    /// `bound_chunks`: read with a later chunk, over more than 2 ms since
    /// the client last found the socket empty), and the requests whose TTFT
    /// is one (records' `ttft_bound`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub bound_chunks: u64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub ttft_bound_requests: u64,
    pub requests: RequestCounts,
    pub throughput: Throughput,
    pub in_flight: InFlight,
    pub tokens: TokenTotals,
    /// Latencies over all finished requests with each failure counted as +∞
    /// (`null` where a percentile lands on a failure).
    pub error_adjusted: ErrorAdjusted,
    /// Present when the run was judged against an SLO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    #[serde(default)]
    pub ratings: Ratings,
    /// Present when the load ran multi-turn sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::analysis::session::SessionSummary>,
    /// A row per model, when the run spread its requests over several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_model: Vec<crate::analysis::models::ModelStats>,
    /// The answers' scores against the dataset's references, and how alike
    /// repeated prompts came back (`--score`, `--repeat`): present when a
    /// request was scored or a prompt repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::quality::QualitySummary>,
    /// Whether the window measured a steady state, and the figures that
    /// say so (set by `assemble`, which knows the load; absent when no
    /// measured request succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<crate::analysis::stability::Stability>,
    /// How sure each figure is: intervals on the per-request percentiles,
    /// the rates and the attainment (docs/metrics.md, "Intervals");
    /// absent in documents written before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<crate::analysis::interval::Intervals>,
    /// Requests that carried images (`--images`): their count and bytes,
    /// and TTFT for them apart from text-only requests when a run mixes
    /// both (the image encoder and the images' tokens are prefill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multimodal: Option<Multimodal>,
}

/// What the images cost, where requests carried them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Multimodal {
    /// Completed requests with images, and those without.
    pub requests_with_images: u64,
    pub requests_text_only: u64,
    /// Images and their encoded bytes over the completed requests.
    pub images: u64,
    pub image_bytes: u64,
    /// TTFT of the completed requests with images, and of the text-only
    /// ones (empty when the run had none).
    pub ttft_ms_with_images: Distribution,
    pub ttft_ms_text_only: Distribution,
}

impl Multimodal {
    fn of(ok: &[&RequestRecord], ps: &[f64]) -> Option<Multimodal> {
        if ok.iter().all(|r| r.images == 0) {
            return None;
        }
        let ttft = |with: bool| {
            let mut v: Vec<f64> =
                ok.iter().filter(|r| (r.images > 0) == with).filter_map(|r| r.ttft()).map(ms).collect();
            Distribution::from_samples(&mut v, ps)
        };
        Some(Multimodal {
            requests_with_images: ok.iter().filter(|r| r.images > 0).count() as u64,
            requests_text_only: ok.iter().filter(|r| r.images == 0).count() as u64,
            images: ok.iter().map(|r| u64::from(r.images)).sum(),
            image_bytes: ok.iter().map(|r| r.image_bytes).fold(0u64, u64::saturating_add),
            ttft_ms_with_images: ttft(true),
            ttft_ms_text_only: ttft(false),
        })
    }
}

impl Summary {
    /// The run completed requests and none brought output: an embeddings or
    /// rerank run, answered whole with input tokens only. Its output-side
    /// figures (TTFT, TPOT, output rates) are absent, not zero.
    pub fn no_output(&self) -> bool {
        self.requests.completed > 0 && self.tokens.output == 0 && self.ttft_ms.count == 0
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RequestCounts {
    /// Measured requests sent (warm-up excluded).
    pub sent: u64,
    /// Succeeded.
    pub completed: u64,
    /// Failed, of any kind.
    pub failed: u64,
    /// Stopped before they finished (Ctrl-C, end of run, `--cancel-rate`); neither success nor failure.
    pub cancelled: u64,
    /// Of those, the ones the load gave up on on purpose (`--cancel-rate`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub abandoned: u64,
    /// Times a request was sent again: only on a kept connection that
    /// closed before any of the response came (a server that closes idle
    /// connections races the next request); every one is counted here, as
    /// it loads the server once more.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub retried: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The message of each kind's first failure (the earliest sent), so
    /// that a count comes with what the server said (`HTTP 503 Service
    /// Unavailable: …`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_samples: BTreeMap<String, String>,
    /// Warm-up requests, sent before the window and excluded from it.
    pub warmup: u64,
}

impl RequestCounts {
    /// The requests a run's records hold: one a request sent, measured or
    /// warm-up (what `report` and `merge` count a records file against).
    pub fn recorded(&self) -> u64 {
        self.sent.saturating_add(self.warmup)
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Throughput {
    pub requests_per_s: f64,
    pub input_tokens_per_s: f64,
    pub output_tokens_per_s: f64,
    pub total_tokens_per_s: f64,
    /// Highest output rate over any whole 1 s bucket of the window, and
    /// never below `output_tokens_per_s`: the window's own rate is one over
    /// a second or more (and over all of a window shorter than a second).
    pub peak_output_tokens_per_s: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct InFlight {
    /// Time-weighted mean of requests in flight over the window.
    pub mean: f64,
    pub peak: u64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct TokenTotals {
    /// Input and output tokens of completed requests.
    pub input: u64,
    pub output: u64,
    /// Output tokens of every measured request, failed and cancelled included.
    pub output_all: u64,
    /// How many completed requests took their output count from each source.
    pub output_sources: BTreeMap<String, u64>,
    /// Completed requests whose output length differs from the `max_tokens` asked.
    pub length_mismatches: u64,
    /// Requests where the server's usage and the client tokenizer disagree.
    pub usage_tokenizer_disagreements: u64,
    /// Of those, the requests where they differ by more than a tokenizer of
    /// the served model would ([`crate::tokenizer_fits`]): the tokenizer is
    /// another model's, and those requests' per-chunk counts were spread
    /// evenly rather than taken from it.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub tokenizer_mismatches: u64,
    /// How many completed requests took their per-chunk counts from each
    /// source (`continuous_usage`, `tokenizer`, `apportioned`, `even`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chunk_sources: BTreeMap<String, u64>,
    /// How many completed requests took their input count from each source.
    #[serde(default)]
    pub input_sources: BTreeMap<String, u64>,
    /// The server's prompt count beyond the workload's, over completed
    /// requests with both: what its chat template and special tokens add
    /// (and, with no `--tokenizer`, how its tokenizer splits the words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_extra: Option<PromptExtra>,
    /// Tokens per output chunk, over the completed requests whose per-chunk
    /// counts were measured (not spread evenly): a server that speculates,
    /// or streams a step's tokens together, delivers them in bursts that an
    /// ITL per token hides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_chunk: Option<ChunkTokens>,
}

/// The distribution of tokens per output chunk.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ChunkTokens {
    /// Chunks counted (those carrying at least one token).
    pub chunks: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    /// Share of those chunks that carried more than one token.
    pub multi_token_share: f64,
}

impl ChunkTokens {
    /// Over the chunks of `records` whose counts were measured; `None`
    /// when there are none. Held as counts per size, so a run's millions of
    /// chunks cost a few entries.
    pub fn of<'a>(records: impl Iterator<Item = &'a RequestRecord>) -> Option<ChunkTokens> {
        let mut sizes = ChunkSizes::default();
        for r in records.filter(|r| sizes_measured(r)) {
            for c in r.chunks.iter() {
                sizes.add(c.tokens);
            }
        }
        ChunkTokens::from_sizes(sizes.into_map())
    }

    /// From chunks counted per size (chunks of no token left out).
    fn from_sizes(sizes: BTreeMap<u64, u64>) -> Option<ChunkTokens> {
        let chunks: u64 = sizes.values().sum();
        if chunks == 0 {
            return None;
        }
        let tokens: f64 = sizes.iter().map(|(&k, &n)| k as f64 * n as f64).sum();
        // The nearest-rank percentile: the smallest size with at least p of the chunks at or below it.
        let at = |p: f64| {
            let rank = ((p / 100.0) * chunks as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            sizes.iter().find(|(_, &n)| {
                seen += n;
                seen >= rank
            })
        };
        let pick = |p| at(p).map_or(0, |(&k, _)| k);
        Some(ChunkTokens {
            chunks,
            mean: tokens / chunks as f64,
            p50: pick(50.0),
            p90: pick(90.0),
            p99: pick(99.0),
            max: sizes.keys().next_back().copied().unwrap_or(0),
            multi_token_share: sizes.range(2..).map(|(_, &n)| n).sum::<u64>() as f64 / chunks as f64,
        })
    }
}

/// Whether a record's chunk sizes were measured: neither a spread nor a
/// whole body (`--no-stream`) measured a chunk.
fn sizes_measured(r: &RequestRecord) -> bool {
    use crate::ChunkTokenSource::{Even, WholeBody};
    !matches!(r.chunk_tokens_source, Even | WholeBody)
}

/// Chunks counted per size: the small sizes nearly every chunk has in an
/// array, the rest in a map.
struct ChunkSizes {
    small: [u64; 64],
    large: BTreeMap<u64, u64>,
}

impl Default for ChunkSizes {
    fn default() -> ChunkSizes {
        ChunkSizes { small: [0; 64], large: BTreeMap::new() }
    }
}

impl ChunkSizes {
    fn add(&mut self, tokens: u32) {
        match self.small.get_mut(tokens as usize) {
            Some(n) => *n += 1,
            None => *self.large.entry(u64::from(tokens)).or_default() += 1,
        }
    }

    /// Chunks of no token are not counted.
    fn into_map(self) -> BTreeMap<u64, u64> {
        let mut sizes = self.large;
        sizes.extend((1..).zip(&self.small[1..]).filter(|&(_, &n)| n > 0).map(|(k, &n)| (k, n)));
        sizes
    }
}

/// What one walk over the successful requests' chunks gives: every gap
/// between neighbouring chunks (in ms), whether every chunk after a
/// request's first carries one token, the chunks' sizes where they were
/// measured, and the output tokens of each whole second of the window from
/// T1 (`full` of them). A point of `plan` had decoded the packed chunks four
/// times for these.
struct ChunkWalk {
    gaps: Gaps,
    single_after_first: bool,
    sizes: BTreeMap<u64, u64>,
    buckets: std::collections::HashMap<u64, u64>,
}

fn walk_chunks(ok: &[&RequestRecord], t1: Duration, full: u64) -> ChunkWalk {
    let mut gaps = Gaps::with_capacity(ok.iter().map(|r| r.chunks.len().saturating_sub(1)).sum());
    let (mut single_after_first, mut sizes) = (true, ChunkSizes::default());
    // Only the buckets that hold a chunk: a record's time read from a
    // damaged file can put T2 years after T1, and a bucket a second for
    // all of them would not fit in memory.
    let mut buckets: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    // A request's chunks mostly fall in one bucket after another: each run
    // of chunks in one bucket is summed before the map is touched.
    let mut add = |i: Option<u64>, n: u64| {
        if let Some(i) = i.filter(|&i| i < full) {
            let b = buckets.entry(i).or_default();
            *b = b.saturating_add(n);
        }
    };
    for r in ok {
        let measured = sizes_measured(r);
        let (mut prev, mut at, mut n) = (None::<Duration>, None, 0u64);
        for c in r.chunks.iter() {
            if let Some(p) = prev {
                gaps.push(nanos(c.t.saturating_sub(p)));
                single_after_first &= c.tokens == 1;
            }
            prev = Some(c.t);
            if measured {
                sizes.add(c.tokens);
            }
            if full > 0 {
                let i = c.t.checked_sub(t1).map(|d| d.as_secs());
                if i != at {
                    add(at, n);
                    (at, n) = (i, 0);
                }
                n = n.saturating_add(u64::from(c.tokens));
            }
        }
        add(at, n);
    }
    ChunkWalk { gaps, single_after_first, sizes: sizes.into_map(), buckets }
}

/// A duration in whole nanoseconds, held to `u64::MAX` (584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Every gap between neighbouring chunks of a run, in whole nanoseconds:
/// four bytes each while every one is under 2^32 ns (4.29 s), else eight.
/// 300,000 requests of 64 chunks hold 18.9 million gaps: 76 MB where they
/// had been 151 MB as milliseconds in `f64`. Sorted as integers, they are
/// in the order of their milliseconds (`ms` never decreases as the
/// nanoseconds grow), and each reads as exactly the `f64` it had been.
enum Gaps {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Gaps {
    fn with_capacity(n: usize) -> Gaps {
        Gaps::Narrow(Vec::with_capacity(n))
    }

    fn push(&mut self, ns: u64) {
        match self {
            Gaps::Narrow(v) => match u32::try_from(ns) {
                Ok(x) => v.push(x),
                Err(_) => {
                    let mut w = Vec::with_capacity(v.capacity().max(v.len() + 1));
                    w.extend(v.iter().map(|&x| u64::from(x)));
                    w.push(ns);
                    *self = Gaps::Wide(w);
                }
            },
            Gaps::Wide(v) => v.push(ns),
        }
    }

    fn sort(&mut self) {
        match self {
            Gaps::Narrow(v) => v.sort_unstable(),
            Gaps::Wide(v) => v.sort_unstable(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Gaps::Narrow(v) => v.len(),
            Gaps::Wide(v) => v.len(),
        }
    }

    fn ns(&self, i: usize) -> u64 {
        match self {
            Gaps::Narrow(v) => u64::from(v[i]),
            Gaps::Wide(v) => v[i],
        }
    }

    /// Gap `i` in milliseconds.
    fn ms(&self, i: usize) -> f64 {
        ms(Duration::from_nanos(self.ns(i)))
    }

    fn moments(&self) -> Moments {
        Moments::of(self.len(), |i| self.ms(i))
    }

    /// The sorted gaps' distribution in milliseconds, their moments given.
    fn distribution(&self, ps: &[f64], m: Moments) -> Distribution {
        Distribution::from_sorted_by(self.len(), |i| self.ms(i), ps, m)
    }

    /// These sorted gaps and the sorted `more` (ns) as one sorted list.
    fn merged(&self, more: &[u64]) -> Gaps {
        let mut out = Vec::with_capacity(self.len() + more.len());
        let (mut i, mut j) = (0, 0);
        while i < self.len() && j < more.len() {
            if more[j] < self.ns(i) {
                out.push(more[j]);
                j += 1;
            } else {
                out.push(self.ns(i));
                i += 1;
            }
        }
        out.extend((i..self.len()).map(|k| self.ns(k)));
        out.extend_from_slice(&more[j..]);
        Gaps::Wide(out)
    }
}

/// Prompt tokens the server counted beyond those the workload intended, per
/// request (server's `usage.prompt_tokens` − the workload's count).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PromptExtra {
    /// Completed requests with both counts.
    pub requests: u64,
    pub mean: f64,
    pub min: i64,
    pub max: i64,
}

impl PromptExtra {
    /// Over `(server, intended)` pairs; `None` when there are none.
    fn of(pairs: impl Iterator<Item = (u64, u64)>) -> Option<PromptExtra> {
        let mut e = PromptExtra { min: i64::MAX, max: i64::MIN, ..Default::default() };
        let mut sum = 0i64;
        for (server, intended) in pairs {
            let d = server as i64 - intended as i64;
            e.requests += 1;
            sum += d;
            e.min = e.min.min(d);
            e.max = e.max.max(d);
        }
        (e.requests > 0).then(|| PromptExtra { mean: sum as f64 / e.requests as f64, ..e })
    }

    /// The server counted exactly what the workload intended.
    pub fn is_zero(&self) -> bool {
        self.min == 0 && self.max == 0
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ErrorAdjusted {
    pub ttft_ms: Distribution,
    pub e2e_ms: Distribution,
}

/// Analyses a run's records.
pub fn analyze(records: &[RequestRecord], opts: &AnalysisOptions) -> Analysis {
    let ps = &opts.percentiles;
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.outcome.is_success()).collect();

    let (t1, t2) = window_of(&measured);
    let dur = t2.saturating_sub(t1).as_secs_f64();

    let dist = |f: &dyn Fn(&RequestRecord) -> Option<Duration>| {
        let mut v: Vec<f64> = ok.iter().filter_map(|r| f(r)).map(ms).collect();
        Distribution::from_samples(&mut v, ps)
    };

    // Every gap between chunks, sorted once for both views that take them
    // (the summary's and vLLM's ITL); on a long run, tens of millions.
    let walk = walk_chunks(&ok, t1, t2.saturating_sub(t1).as_secs());
    let mut gaps = walk.gaps;
    gaps.sort();
    let moments = gaps.moments();
    // Where every chunk after a first carries one token, the ITL samples
    // are the gaps themselves.
    let itl_ms = if walk.single_after_first {
        gaps.distribution(ps, moments)
    } else {
        // One buffer of a pair a gap, sized once (a growing one had
        // doubled past it).
        let mut itl = Vec::with_capacity(gaps.len());
        itl.extend(ok.iter().flat_map(|r| r.itl_repeated()).map(|(d, k)| (ms(d), k)));
        crate::analysis::stats::Repeated::new(itl).distribution(ps)
    };

    let counts = request_counts(records, &measured);
    let tokens = token_totals(&measured, &ok, walk.sizes);
    let throughput = throughput(&counts, &tokens, &ok, t1, t2, dur, walk.buckets);

    let summary = Summary {
        ttft_ms: dist(&|r| r.ttft()),
        ttft_content_ms: dist(&|r| r.ttft_content()),
        tpot_ms: dist(&|r| r.tpot()),
        itl_ms,
        chunk_gap_ms: gaps.distribution(ps, moments),
        itl_max_ms: dist(&|r| r.itl_max()),
        e2e_ms: dist(&|r| r.e2e()),
        ttfb_ms: dist(&|r| r.ttfb()),
        client_queue_ms: {
            let mut v: Vec<f64> = measured.iter().map(|r| ms(r.client_queue())).collect();
            Distribution::from_samples(&mut v, ps)
        },
        client_read_lag_ms: {
            let mut v: Vec<f64> = measured.iter().filter_map(|r| r.read_lag_max).map(ms).collect();
            Distribution::from_samples(&mut v, ps)
        },
        shared_read_chunks: measured.iter().map(|r| u64::from(r.shared_reads)).sum(),
        bound_chunks: measured.iter().map(|r| u64::from(r.bound_chunks)).sum(),
        ttft_bound_requests: measured.iter().filter(|r| r.ttft_bound).count() as u64,
        requests: counts,
        throughput,
        in_flight: in_flight(records, t1, t2),
        tokens,
        error_adjusted: error_adjusted(&measured, ps),
        goodput: None,
        ratings: Ratings::default(),
        sessions: crate::analysis::session::summarize(&measured, ps, dur),
        by_model: crate::analysis::models::by_model(&measured, ps, dur),
        quality: crate::quality::summarize(&measured),
        stability: None,
        intervals: None,
        multimodal: Multimodal::of(&ok, ps),
    };
    let mut summary = summary;
    // The ratings are at p50 and p95 whatever --percentiles lists.
    let rating_dist = |f: &dyn Fn(&RequestRecord) -> Option<Duration>| {
        let mut v: Vec<f64> = ok.iter().filter_map(|r| f(r)).map(ms).collect();
        Distribution::from_samples(&mut v, &crate::analysis::ratings::RATED_PERCENTILES)
    };
    summary.ratings = rate(&ok, &rating_dist(&|r| r.ttft()), &rating_dist(&|r| r.tpot()), &opts.ratings);
    let slo = opts.slo.as_ref().map(|slo| {
        let (g, report) = judge(records, slo, dur);
        summary.goodput = Some(g);
        report
    });
    let cost = opts.cost.map(|c| cost_report(c, &summary));
    summary.intervals =
        opts.confidence.map(|c| crate::analysis::interval::intervals(&measured, t1, dur, ps, opts.slo.as_ref(), c));

    // vLLM's ITL: the same gaps and the few its stamps add (an empty
    // keep-alive before the first token), merged in order; none on a server
    // that sends its first token with its first counted payload.
    let mut edges: Vec<u64> = ok.iter().flat_map(|r| r.vllm_edge_gaps()).map(nanos).collect();
    let vllm_itl = |ps: &[f64]| {
        if edges.is_empty() {
            gaps.distribution(ps, moments)
        } else {
            edges.sort_unstable();
            let all = gaps.merged(&edges);
            all.distribution(ps, all.moments())
        }
    };
    let vllm = vllm_compat(&ok, &summary, ps, dur, vllm_itl);
    let short: Vec<&RequestRecord> = ok.iter().copied().filter(|r| usage_short(r)).collect();
    let short_by_chunks = short.iter().filter(|r| r.output_tokens_source == CountSource::Chunks).count() as u64;
    let mut warnings = warnings(&summary, short_by_chunks);
    warnings.extend(usage_short_warning(&short));
    warnings.extend(even_spread_warning(&ok));
    warnings.extend(implausible_counts(&measured));
    // A percentile objective passed on too few requests to bound it is
    // said, never passed silently (the verdict stands).
    warnings
        .extend(slo.iter().flat_map(|s| {
            s.unbounded_passes(opts.confidence.unwrap_or(crate::analysis::interval::DEFAULT_CONFIDENCE))
        }));
    Analysis {
        window: Window { start_s: t1.as_secs_f64(), end_s: t2.as_secs_f64(), duration_s: dur },
        summary,
        vllm,
        slo,
        cost,
        warnings,
    }
}

/// How the measured requests ended.
fn request_counts(records: &[RequestRecord], measured: &[&RequestRecord]) -> RequestCounts {
    let mut counts = RequestCounts {
        sent: measured.len() as u64,
        warmup: (records.len() - measured.len()) as u64,
        ..Default::default()
    };
    let mut first_sent: BTreeMap<String, (Duration, u64)> = BTreeMap::new();
    for r in measured {
        match &r.outcome {
            Outcome::Success => counts.completed += 1,
            Outcome::Failed { kind, message } => {
                counts.failed += 1;
                let kind = kind.to_string();
                *counts.errors_by_kind.entry(kind.clone()).or_default() += 1;
                // The earliest sent, whatever order the records come in.
                let at = (r.sent, r.id);
                if first_sent.get(&kind).is_none_or(|&f| at < f) {
                    first_sent.insert(kind.clone(), at);
                    counts.error_samples.insert(kind, message.chars().take(300).collect());
                }
            }
            Outcome::Cancelled => counts.cancelled += 1,
        }
        counts.abandoned += u64::from(r.abandoned);
        counts.retried += u64::from(r.retries);
    }
    counts
}

/// Token totals over the successful requests, and where their counts came from.
fn token_totals(measured: &[&RequestRecord], ok: &[&RequestRecord], sizes: BTreeMap<u64, u64>) -> TokenTotals {
    let mut tokens = TokenTotals {
        input: crate::analysis::stats::total(ok.iter().map(|r| r.input_tokens)),
        output: crate::analysis::stats::total(ok.iter().map(|r| r.output_tokens)),
        output_all: crate::analysis::stats::total(measured.iter().map(|r| r.output_tokens)),
        ..Default::default()
    };
    for r in ok {
        *tokens.input_sources.entry(r.input_tokens_source.to_string()).or_default() += 1;
        // A successful answer with no output chunks is a pooling one
        // (embeddings, rerank): it has no output whose count has a source.
        if r.chunks.is_empty() {
            continue;
        }
        *tokens.output_sources.entry(r.output_tokens_source.to_string()).or_default() += 1;
        if r.counts.requested_completion.is_some_and(|asked| asked != r.output_tokens) {
            tokens.length_mismatches += 1;
        }
    }
    tokens.prompt_extra =
        PromptExtra::of(ok.iter().filter_map(|r| Some((r.counts.usage_prompt?, r.counts.intended_prompt?))));
    for r in ok.iter().filter(|r| !r.chunks.is_empty()) {
        *tokens.chunk_sources.entry(r.chunk_tokens_source.to_string()).or_default() += 1;
    }
    tokens.per_chunk = ChunkTokens::from_sizes(sizes);
    // A usage not taken (fewer than the chunks: `usage_short`) is no count
    // the tokenizer's is held to.
    let both = || {
        measured
            .iter()
            .filter(|r| !usage_short(r))
            .filter_map(|r| Some((r.counts.usage_completion?, r.counts.tokenizer_completion?)))
    };
    tokens.usage_tokenizer_disagreements = both().filter(|(a, b)| a != b).count() as u64;
    tokens.tokenizer_mismatches = both().filter(|&(a, b)| !crate::tokenizer_fits(a, b)).count() as u64;
    tokens
}

/// Rates over the window `[t1, t2]`, `dur` seconds long.
fn throughput(
    counts: &RequestCounts,
    tokens: &TokenTotals,
    ok: &[&RequestRecord],
    t1: Duration,
    t2: Duration,
    dur: f64,
    buckets: std::collections::HashMap<u64, u64>,
) -> Throughput {
    let per_s = |x: f64| if dur > 0.0 { x / dur } else { 0.0 };
    let output_tokens_per_s = per_s(tokens.output as f64);
    Throughput {
        requests_per_s: per_s(counts.completed as f64),
        input_tokens_per_s: per_s(tokens.input as f64),
        output_tokens_per_s,
        // In floating point: the two totals may each be the largest u64.
        total_tokens_per_s: per_s(tokens.input as f64 + tokens.output as f64),
        // The whole buckets leave out the window's last part second: a run
        // of 1.45 s whose answers came mostly after its first second had
        // shown a peak of 384 tokens/s beside a mean of 441.
        peak_output_tokens_per_s: peak_rate(ok, t1, t2, buckets).max(output_tokens_per_s),
    }
}

/// TTFT and e2e with every failed request counted as infinitely slow
/// (cancelled ones left out).
fn error_adjusted(measured: &[&RequestRecord], ps: &[f64]) -> ErrorAdjusted {
    let finished: Vec<&RequestRecord> =
        measured.iter().copied().filter(|r| !matches!(r.outcome, Outcome::Cancelled)).collect();
    let adjusted = |f: &dyn Fn(&RequestRecord) -> Option<Duration>| {
        let mut v: Vec<f64> = finished
            .iter()
            .map(|r| if r.outcome.is_success() { f(r).map(ms).unwrap_or(f64::INFINITY) } else { f64::INFINITY })
            .collect();
        Distribution::from_samples(&mut v, ps)
    };
    ErrorAdjusted { ttft_ms: adjusted(&|r| r.ttft()), e2e_ms: adjusted(&|r| r.e2e()) }
}

/// The cost report for the run's throughput (and goodput, sessions): what
/// `analyze` gives, and `report` a saved run priced anew from its summary,
/// which needs none of its records.
pub fn cost_report(c: CostConfig, summary: &Summary) -> CostReport {
    let th = &summary.throughput;
    c.report(
        th.output_tokens_per_s,
        th.total_tokens_per_s,
        th.requests_per_s,
        summary.goodput.as_ref().map(|g| g.output_tokens_per_s),
        summary.sessions.as_ref().map(|s| s.per_s),
    )
}

/// [T1, T2]: from the first measured request's send to the last one's end.
fn window_of(measured: &[&RequestRecord]) -> (Duration, Duration) {
    let t1 = measured.iter().map(|r| r.sent).min().unwrap_or_default();
    let t2 = measured.iter().map(|r| r.end).max().unwrap_or_default();
    (t1, t2.max(t1))
}

/// Peak output tokens/s over whole 1 s buckets starting at T1 (`buckets`,
/// from `walk_chunks`); over the whole window when it is shorter than a
/// second.
fn peak_rate(ok: &[&RequestRecord], t1: Duration, t2: Duration, buckets: std::collections::HashMap<u64, u64>) -> f64 {
    let dur = t2.saturating_sub(t1);
    if dur.as_secs() == 0 {
        let total = crate::analysis::stats::total(ok.iter().map(|r| r.output_tokens));
        return if dur.is_zero() { 0.0 } else { total as f64 / dur.as_secs_f64() };
    }
    buckets.into_values().max().unwrap_or(0) as f64
}

/// Time-weighted mean and peak of requests in flight (warm-up included: they
/// load the server too) over [T1, T2].
fn in_flight(records: &[RequestRecord], t1: Duration, t2: Duration) -> InFlight {
    let mut events: Vec<(Duration, i64)> = Vec::with_capacity(records.len() * 2);
    for r in records {
        events.push((r.sent, 1));
        events.push((r.end.max(r.sent), -1));
    }
    // Ends sort before starts at the same instant: a request that ends as
    // another begins does not overlap it.
    events.sort_by_key(|&(t, d)| (t, d));
    let (mut level, mut peak, mut area) = (0i64, 0i64, 0f64);
    for (i, &(t, d)) in events.iter().enumerate() {
        level += d;
        // `level` holds on [t, next event).
        let next = events.get(i + 1).map_or(Duration::MAX, |e| e.0);
        let (from, until) = (t.max(t1), next.min(t2));
        if until > from {
            peak = peak.max(level);
            area += level as f64 * (until - from).as_secs_f64();
        }
    }
    let dur = t2.saturating_sub(t1).as_secs_f64();
    InFlight { mean: if dur > 0.0 { area / dur } else { 0.0 }, peak: peak.max(0) as u64 }
}

/// Whether `r`'s usage counted fewer output tokens than the output chunks
/// it streamed (each carries text, a token at least), and the client did not
/// take that count (goodput-load's reader) but counted the output itself.
/// Running counts that held together are taken however many chunks came (a
/// token's text split over two events): the usage is then the count.
pub fn usage_short(r: &RequestRecord) -> bool {
    r.counts.usage_completion.is_some_and(|u| u < r.chunks.len() as u64)
        && !(r.output_tokens_source == CountSource::Usage
            && r.chunk_tokens_source == crate::ChunkTokenSource::ContinuousUsage)
}

/// The warning for requests whose usage contradicted their stream (see [`usage_short`]).
fn usage_short_warning(short: &[&RequestRecord]) -> Option<String> {
    let first = short.first()?;
    Some(format!(
        "on {} completed requests the server's usage.completion_tokens was fewer than the output chunks streamed \
         (request {}: {} for {} chunks, each carrying text): that count was not taken, and their output tokens \
         were counted from the stream ({}); the server's usage is wrong",
        short.len(),
        first.id,
        first.counts.usage_completion.unwrap_or(0),
        first.chunks.len(),
        match first.output_tokens_source {
            CountSource::Tokenizer => "by --tokenizer",
            _ => "a token a chunk, which undercounts where a chunk carries several",
        }
    ))
}

/// The mean tokens a chunk above which chunks spread evenly are told of.
const EVEN_SPREAD_WARN_TOKENS_PER_CHUNK: f64 = 1.1;

/// The warning for requests whose chunks carried several tokens each and
/// no count of their own (no running usage, no tokenizer): their tokens
/// were spread evenly over their chunks, which keeps TPOT and throughput
/// but not the ITL percentiles (a speculating server's chunks carry 1 to
/// k + 1 tokens, each gap a step). Requests a tokenizer counted are left
/// to the tokenizer's own warning.
fn even_spread_warning(ok: &[&RequestRecord]) -> Option<String> {
    let even = ok.iter().filter(|r| {
        r.chunk_tokens_source == crate::ChunkTokenSource::Even
            && r.counts.tokenizer_completion.is_none()
            && !r.chunks.is_empty()
    });
    let (requests, tokens, chunks) = even.fold((0u64, 0u64, 0u64), |(n, t, c), r| {
        (n + 1, t.saturating_add(r.output_tokens), c.saturating_add(r.chunks.len() as u64))
    });
    let mean = tokens as f64 / chunks.max(1) as f64;
    (requests > 0 && mean > EVEN_SPREAD_WARN_TOKENS_PER_CHUNK).then(|| {
        format!(
            "on {requests} completed requests the chunks carried {mean:.2} tokens each on average and no count of \
             their own (no running usage, no --tokenizer): each request's tokens were spread evenly over its chunks, \
             which keeps TPOT and throughput but not the ITL percentiles (a speculating server's chunks carry \
             different numbers of tokens): ask for usage on every chunk, --extra-body \
             '{{\"stream_options\":{{\"continuous_usage_stats\":true}}}}' (vLLM, goodput serve), or give --tokenizer"
        )
    })
}

/// The run's warnings from its summary; `short_by_chunks` of the requests
/// counted by their chunks had a usage, not taken (see [`usage_short`]).
fn warnings(s: &Summary, short_by_chunks: u64) -> Vec<String> {
    let mut w = Vec::new();
    let t = &s.tokens;
    if t.length_mismatches > 0 {
        w.push(format!(
            "{} of {} completed requests returned a different number of output tokens than the length asked for; \
             the server may stop at end-of-sequence: pass --ignore-eos if it supports ignore_eos/min_tokens, \
             or its own field with --extra-body",
            t.length_mismatches, s.requests.completed
        ));
    }
    if t.tokenizer_mismatches > 0 {
        w.push(format!(
            "on {} requests --tokenizer's count of the output is more than 10% off the server's usage: it is not \
             the served model's tokenizer (pass that model's tokenizer.json), or the answers do not tokenise back \
             into the tokens generated (bytes that make no character do not). Usage counts were used, and those \
             requests' tokens spread evenly over their chunks",
            t.tokenizer_mismatches
        ));
    } else if t.usage_tokenizer_disagreements > 0 {
        w.push(format!(
            "the server's usage and the client tokenizer differ slightly on the output length of {} requests (an \
             end-of-sequence or special token): usage counts were used, shared out over the chunks in proportion to \
             the tokenizer's counts",
            t.usage_tokenizer_disagreements
        ));
    }
    let by_chunks =
        t.output_sources.get(&CountSource::Chunks.to_string()).copied().unwrap_or(0).saturating_sub(short_by_chunks);
    if by_chunks > 0 {
        w.push(format!(
            "{by_chunks} completed requests had no usage block and no tokenizer: output tokens were counted as \
             chunks, which undercounts when a chunk carries several tokens: a server that sends usage (goodput asks \
             for it unless --no-usage) or --tokenizer counts them exactly"
        ));
    }
    // A prompt whose length nothing gave (a dataset's text, no usage block,
    // no tokenizer) counts 0 in the input totals: they are then short.
    let unknown_input = t.input_sources.get(&CountSource::Unknown.to_string()).copied().unwrap_or(0);
    if unknown_input > 0 {
        w.push(format!(
            "{unknown_input} of {} completed requests' prompts have no token count (no usage block, no tokenizer, no \
             intended length): the input totals, input and total tokens/s, and any cost per input token leave them \
             out, and are short; --tokenizer counts them (and leave out --no-usage where it was given)",
            s.requests.completed
        ));
    }
    if s.requests.sent > 0 && s.requests.completed == 0 {
        w.push("no request succeeded: latency figures are empty".to_string());
    }
    w
}

/// Share of output chunks that came in one read with the one before,
/// from which late reads hide enough gaps to tell.
const SHARED_READS_WARN: f64 = 0.05;

/// The warning for a client that read output late (the median request's
/// longest wait in the socket past 1 ms), told only where it bends the
/// figures: with read stamps (`stamp` is the run's `config.client.stamp`)
/// the wait is inside TTFT and ITL; with kernel stamps it stays out, and
/// only the gaps of chunks read together are lost, worth telling when they
/// are a share of the chunks.
pub fn read_lag_warning(s: &Summary, stamp: Option<&str>, chunks: u64) -> Option<String> {
    let lag = s.client_read_lag_ms.p(50.0).filter(|l| *l > CLIENT_READ_LAG_WARN_MS)?;
    let head =
        format!("the client read output late: in half the requests a chunk waited {lag:.1} ms or more in the socket");
    if stamp == Some("read") {
        return Some(format!(
            "{head}, and with read stamps that wait is inside TTFT and ITL (kernel stamps, --stamp kernel on Linux \
             over http://, keep it out): a busy machine, or too many streams for one client process"
        ));
    }
    let shared = s.shared_read_chunks as f64 / chunks.max(1) as f64;
    (shared >= SHARED_READS_WARN).then(|| {
        format!(
            "{head}, and {:.0}% of output chunks came in one read with the chunk before, so their gaps went unseen \
             (kernel stamps keep the wait itself out of TTFT and ITL): a busy machine, or too many streams for one \
             client process",
            shared * 100.0
        )
    })
}

/// More tokens than any model's context holds (the longest hold some
/// millions): a count past it is the server's error, not work done.
pub const IMPLAUSIBLE_TOKENS: u64 = 1 << 24;

/// The warning for requests whose usage claims more than
/// [`IMPLAUSIBLE_TOKENS`] (a server that claimed 2^64−1 output tokens for
/// three chunks): the totals take the claims as they are, saturating, and
/// say so here rather than pass a figure that means nothing.
fn implausible_counts(measured: &[&RequestRecord]) -> Option<String> {
    let claimed = |r: &RequestRecord| r.output_tokens.max(r.input_tokens);
    let over: Vec<&RequestRecord> = measured.iter().copied().filter(|r| claimed(r) > IMPLAUSIBLE_TOKENS).collect();
    let worst = over.iter().max_by_key(|r| claimed(r))?;
    let asked = match worst.counts.requested_completion {
        Some(m) => format!(" (it asked for at most {m})"),
        None => String::new(),
    };
    // Whose count it is: the usage block's, or the chunks' (a stream that
    // did not end had been said to "claim" in a usage it never sent).
    let whose = if worst.output_tokens_source == crate::doc::record::CountSource::Usage {
        "the server's usage claims"
    } else {
        "the server's answers come to"
    };
    Some(format!(
        "{whose} more tokens than any model's context holds ({IMPLAUSIBLE_TOKENS}) on {} requests: \
         request {} claimed {} output tokens{asked} and {} input tokens in {} chunks. The counts are the server's \
         error; the token totals and rates take them as claimed (summing to at most {}), and mean nothing",
        over.len(),
        worst.id,
        worst.output_tokens,
        worst.input_tokens,
        worst.chunks.len(),
        u64::MAX
    ))
}

/// A read lag beyond this (ms) in half the requests is warned about: the
/// ITL error budget that a client should stay well inside. The median, not a
/// tail: one pause of the machine touches every request in flight at once,
/// and that is not a client that keeps falling behind.
const CLIENT_READ_LAG_WARN_MS: f64 = 1.0;

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{Channel, FailureKind, OutputChunk};

    fn ms_(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// A request sent at `sent` ms with `n` one-token chunks every `gap` ms after `ttft` ms.
    fn req(id: u64, sent: u64, ttft: u64, gap: u64, n: u64) -> RequestRecord {
        let mut r = RequestRecord::new(id, ms_(sent), ms_(sent));
        r.first_byte = Some(ms_(sent + 1));
        r.chunks = (0..n)
            .map(|i| OutputChunk { t: ms_(sent + ttft + i * gap), tokens: 1, channel: Channel::Content })
            .collect();
        r.end = r.chunks.last().map(|c| c.t).unwrap_or(ms_(sent));
        r.stream_end = Some(r.end);
        r.input_tokens = 10;
        r.output_tokens = n;
        r.output_tokens_source = CountSource::Usage;
        r.outcome = Outcome::Success;
        r
    }

    /// The gaps are held in four bytes each until one passes 2^32 ns, then
    /// in eight, and either way read back as the milliseconds they were,
    /// in order, merged with vLLM's extra gaps in order.
    #[test]
    fn gaps_widen_past_four_seconds_and_keep_their_order_and_values() {
        let ns = [7_000_000u64, 1, u64::from(u32::MAX), 0, 3_000_000];
        let mut g = Gaps::with_capacity(2);
        for &x in &ns {
            g.push(x);
        }
        assert!(matches!(g, Gaps::Narrow(_)), "every gap fits in 32 bits");
        g.push(u64::from(u32::MAX) + 1);
        g.push(12);
        assert!(matches!(g, Gaps::Wide(_)), "a gap past 2^32 − 1 ns widens them all");
        g.sort();
        let mut want: Vec<u64> = ns.iter().copied().chain([u64::from(u32::MAX) + 1, 12]).collect();
        want.sort_unstable();
        assert_eq!((0..g.len()).map(|i| g.ns(i)).collect::<Vec<_>>(), want);
        for (i, &w) in want.iter().enumerate() {
            assert_eq!(g.ms(i).to_bits(), ms(Duration::from_nanos(w)).to_bits());
        }
        let merged = g.merged(&[2, 5_000_000_000]);
        let mut all = [want.as_slice(), &[2, 5_000_000_000]].concat();
        all.sort_unstable();
        assert_eq!((0..merged.len()).map(|i| merged.ns(i)).collect::<Vec<_>>(), all);
        let narrow = Gaps::Narrow(vec![1, 4]).merged(&[0, 2, 9]);
        assert_eq!((0..narrow.len()).map(|i| narrow.ns(i)).collect::<Vec<_>>(), [0, 1, 2, 4, 9]);
    }

    /// A stall of 5 s between two tokens (past what four bytes of
    /// nanoseconds hold) is one ITL sample of 5,000 ms among 20 ms ones.
    #[test]
    fn a_gap_of_seconds_is_an_itl_sample_of_its_length() {
        let mut recs: Vec<RequestRecord> = (0..4).map(|i| req(i, i * 10_000, 100, 20, 11)).collect();
        let stalled: Vec<OutputChunk> = recs[3]
            .chunks
            .iter()
            .enumerate()
            .map(|(k, c)| OutputChunk { t: c.t + if k >= 5 { ms_(5_000 - 20) } else { Duration::ZERO }, ..c })
            .collect();
        recs[3].chunks = stalled.into_iter().collect();
        recs[3].end = recs[3].chunks.last().map(|c| c.t).unwrap();
        recs[3].stream_end = Some(recs[3].end);
        let s = analyze(&recs, &AnalysisOptions::default()).summary;
        assert_eq!(s.itl_ms.count, 40);
        assert_eq!(s.itl_ms.max, Some(5_000.0));
        assert_eq!(s.itl_ms.min, Some(20.0));
        assert_eq!(s.itl_ms.p(50.0), Some(20.0));
        let mean = (39.0 * 20.0 + 5_000.0) / 40.0;
        assert!((s.itl_ms.mean.unwrap() - mean).abs() < 1e-9, "{:?}", s.itl_ms.mean);
        assert_eq!(s.chunk_gap_ms, s.itl_ms, "one token a chunk: the chunk gaps are the ITL samples");
    }

    #[test]
    fn chunk_sizes_past_the_array_and_of_no_token_are_counted_as_such() {
        let mut sizes = ChunkSizes::default();
        for tokens in [0, 1, 3, 63, 64, 100, 100, u32::MAX, 0] {
            sizes.add(tokens);
        }
        let want: BTreeMap<u64, u64> = [(1, 1), (3, 1), (63, 1), (64, 1), (100, 2), (u64::from(u32::MAX), 1)].into();
        assert_eq!(sizes.into_map(), want);
    }

    #[test]
    fn tokens_per_chunk_are_counted_over_measured_chunks_only() {
        // A speculating server's bursts: 1, 3, 3, 4 tokens a chunk, counted
        // by the server's continuous usage; and a request whose counts were
        // spread evenly, which says nothing of its chunks.
        let burst = |tokens: &[u32]| {
            let mut r = req(0, 0, 10, 5, 0);
            r.chunks = tokens
                .iter()
                .enumerate()
                .map(|(i, &t)| OutputChunk { t: ms_(10 + 5 * i as u64), tokens: t, channel: Channel::Content })
                .collect();
            r.chunk_tokens_source = crate::ChunkTokenSource::ContinuousUsage;
            r
        };
        let mut even = req(1, 0, 10, 5, 4);
        even.chunk_tokens_source = crate::ChunkTokenSource::Even;
        let recs = [burst(&[1, 3, 3, 4]), burst(&[1, 3, 3, 4]), even];
        let c = ChunkTokens::of(recs.iter()).unwrap();
        assert_eq!((c.chunks, c.p50, c.p90, c.p99, c.max), (8, 3, 4, 4, 4));
        assert!((c.mean - 11.0 / 4.0).abs() < 1e-12 && (c.multi_token_share - 0.75).abs() < 1e-12, "{c:?}");
        // The summary counts them in its one walk of the chunks: the same.
        let a = analyze(&recs, &AnalysisOptions::default());
        assert_eq!(a.summary.tokens.per_chunk.as_ref(), Some(&c));
        // Only evenly spread counts: no distribution.
        assert_eq!(ChunkTokens::of(recs[2..].iter()), None);
        assert_eq!(analyze(&recs[2..], &AnalysisOptions::default()).summary.tokens.per_chunk, None);
    }

    #[test]
    fn chunks_of_several_tokens_spread_evenly_are_told_with_the_fix() {
        // Ten requests of 8 chunks and 20 tokens (2.5 a chunk), spread evenly.
        let run = |tokens: u64, source: crate::ChunkTokenSource| {
            let recs: Vec<_> = (0..10)
                .map(|i| {
                    let mut r = req(i, i * 1000, 10, 5, 8);
                    (r.output_tokens, r.chunk_tokens_source) = (tokens, source);
                    r
                })
                .collect();
            let w = analyze(&recs, &AnalysisOptions::default()).warnings;
            w.into_iter().find(|w| w.contains("spread evenly over its chunks"))
        };
        let w = run(20, crate::ChunkTokenSource::Even).expect("told");
        assert!(w.starts_with("on 10 completed requests the chunks carried 2.50 tokens each"), "{w}");
        assert!(w.contains(r#"--extra-body '{"stream_options":{"continuous_usage_stats":true}}'"#), "{w}");
        // One token a chunk: the spread is exact.
        assert_eq!(run(8, crate::ChunkTokenSource::Even), None);
        // Counted by the server's running usage: nothing spread.
        assert_eq!(run(20, crate::ChunkTokenSource::ContinuousUsage), None);
    }

    /// The quirks server of docs/metrics.md as vLLM 0.33's client sees it:
    /// a role-only chunk on arrival (not counted), an empty keep-alive at
    /// 75 ms (counted: vLLM's TTFT), 64 tokens two a chunk from 150 ms every
    /// 20 ms. vLLM gives TTFT 75, TPOT (770 − 75)/63, and 32 ITL gaps a
    /// request: the 75 ms one from the keep-alive to the first token, then
    /// 31 of 20 ms (mean 695/32, p99 75 since 1 gap in 32 is the long one).
    #[test]
    fn vllm_compat_counts_the_gap_from_an_empty_keep_alive() {
        let recs: Vec<RequestRecord> = (0..10)
            .map(|i| {
                let sent = i * 1000;
                let mut r = req(i, sent, 150, 20, 32);
                r.chunks = r.chunks.iter().map(|c| OutputChunk { tokens: 2, ..c }).collect();
                r.output_tokens = 64;
                r.first_choice = Some(ms_(sent + 75));
                r
            })
            .collect();
        let v = analyze(&recs, &AnalysisOptions::default()).vllm;
        let close = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-5);
        assert!(close(v.mean_ttft_ms, 75.0), "{:?}", v.mean_ttft_ms);
        assert!(close(v.mean_tpot_ms, 695.0 / 63.0), "{:?}", v.mean_tpot_ms);
        assert!(close(v.mean_itl_ms, 695.0 / 32.0), "{:?}", v.mean_itl_ms);
        assert!(close(v.p99_itl_ms, 75.0) && close(v.median_itl_ms, 20.0), "{:?} {:?}", v.p99_itl_ms, v.median_itl_ms);
        assert!(close(v.mean_e2el_ms, 770.0), "{:?}", v.mean_e2el_ms);
    }

    #[test]
    fn window_throughput_and_counts() {
        let mut recs = vec![req(0, 0, 100, 10, 11), req(1, 1000, 100, 10, 11), req(2, 2000, 100, 10, 11)];
        recs[0].warmup = true;
        let mut failed = req(3, 1500, 100, 10, 3);
        failed.outcome = Outcome::Failed { kind: FailureKind::MidStreamError, message: "x".into() };
        failed.retries = 1;
        recs.push(failed);
        let a = analyze(&recs, &AnalysisOptions::default());
        assert_eq!(a.summary.requests.retried, 1, "every resend is counted");
        // Window: first measured send (1000) to last end (2000 + 100 + 100).
        assert_eq!(a.window.start_s, 1.0);
        assert!((a.window.end_s - 2.2).abs() < 1e-9);
        let s = &a.summary;
        assert_eq!((s.requests.sent, s.requests.completed, s.requests.failed, s.requests.warmup), (3, 2, 1, 1));
        assert_eq!(s.requests.errors_by_kind.get("mid_stream_error"), Some(&1));
        assert_eq!(s.requests.error_samples.get("mid_stream_error").map(String::as_str), Some("x"));
        assert!((s.throughput.requests_per_s - 2.0 / 1.2).abs() < 1e-9);
        assert!((s.throughput.output_tokens_per_s - 22.0 / 1.2).abs() < 1e-9);
        assert!((s.throughput.input_tokens_per_s - 20.0 / 1.2).abs() < 1e-9);
        assert_eq!(s.ttft_ms.p(50.0), Some(100.0));
        assert_eq!(s.tpot_ms.p(50.0), Some(10.0));
        assert_eq!(s.tokens.output_all, 25);
        // Error-adjusted: one of three is +inf, so p50 is finite and p99 is not.
        assert_eq!(s.error_adjusted.ttft_ms.p(50.0), Some(100.0));
        assert_eq!(s.error_adjusted.ttft_ms.p(99.0), None);
        assert_eq!(a.vllm.completed, 2);
        assert_eq!(a.vllm.median_tpot_ms, Some(10.0));
        assert_eq!(a.vllm.mean_itl_ms, Some(10.0));
    }

    #[test]
    fn read_lag_and_shared_reads_sum_up_the_clients_own_lateness() {
        let mut recs: Vec<RequestRecord> = (0..4).map(|i| req(i, i * 10, 100, 10, 5)).collect();
        // Three requests saw the kernel's receive times, one did not.
        for (r, lag_us) in recs.iter_mut().zip([200, 400, 600]) {
            r.read_lag_max = Some(Duration::from_micros(lag_us));
        }
        recs[1].shared_reads = 2;
        recs[2].shared_reads = 1;
        let a = analyze(&recs, &AnalysisOptions::default());
        let lag = &a.summary.client_read_lag_ms;
        assert_eq!((lag.count, lag.min, lag.p(50.0), lag.max), (3, Some(0.2), Some(0.4), Some(0.6)));
        assert_eq!(a.summary.shared_read_chunks, 3);
        let late = |a: &Analysis, stamp: Option<&str>| read_lag_warning(&a.summary, stamp, 20);
        assert_eq!(late(&a, Some("kernel")), None);
        // 5 ms behind in one request of four is a tail, not a late client.
        recs[3].read_lag_max = Some(ms_(5));
        let a = analyze(&recs, &AnalysisOptions::default());
        assert_eq!(late(&a, Some("read")), None);
        // In three of four, with the median wait: told with read stamps,
        // where the wait is inside the figures; with kernel stamps only where
        // chunks read together hid their gaps (3 of 20 here).
        recs[1].read_lag_max = Some(ms_(3));
        recs[2].read_lag_max = Some(ms_(4));
        let a = analyze(&recs, &AnalysisOptions::default());
        assert!(late(&a, Some("read")).is_some_and(|w| w.contains("3.5 ms") && w.contains("inside TTFT")));
        assert!(late(&a, Some("kernel")).is_some_and(|w| w.contains("15% of output chunks")));
        assert_eq!(read_lag_warning(&a.summary, Some("kernel"), 1000), None, "3 of 1000 chunks shared: no word");
        // Documents from before the field read as empty.
        let mut v = serde_json::to_value(&a.summary).unwrap();
        v.as_object_mut().unwrap().remove("client_read_lag_ms");
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back.client_read_lag_ms.count, 0);
    }

    #[test]
    fn the_p95_ratings_are_given_whatever_the_percentiles_listed() {
        let recs: Vec<RequestRecord> = (0..20).map(|i| req(i, i * 10, 100 + i, 10, 5)).collect();
        let opts = AnalysisOptions { percentiles: vec![50.0, 99.0, 99.9], ..Default::default() };
        let a = analyze(&recs, &opts);
        assert_eq!(a.summary.ttft_ms.p(95.0), None, "p95 is not among the listed percentiles");
        let rated = a.summary.ratings.ttft_p95.expect("the p95 rating");
        assert!((rated.value_ms - 118.05).abs() < 1e-9, "{rated:?}");
        assert!(a.summary.ratings.tpot_p95.is_some());
    }

    #[test]
    fn peak_rate_uses_whole_buckets() {
        // 0..1 s: 10 tokens; 1..2 s: 30 tokens; trailing 0.5 s (20
        // tokens, 40 a second) ignored.
        let mut r = RequestRecord::new(0, ms_(0), ms_(0));
        r.chunks = (0..10).map(|i| OutputChunk { t: ms_(i * 100), tokens: 1, channel: Channel::Content }).collect();
        r.chunks.extend((0..10).map(|i| OutputChunk { t: ms_(1000 + i * 100), tokens: 3, channel: Channel::Content }));
        r.chunks.push(OutputChunk { t: ms_(2400), tokens: 20, channel: Channel::Content });
        r.end = ms_(2500);
        r.output_tokens = 60;
        r.outcome = Outcome::Success;
        let a = analyze(&[r], &AnalysisOptions::default());
        assert_eq!(a.summary.throughput.peak_output_tokens_per_s, 30.0);
    }

    /// The whole buckets leave out the window's last part second: a short
    /// run whose output came mostly there had a peak below its mean (a run
    /// of 1.45 s against `serve --profile fixed`: 384 tokens/s beside 441).
    #[test]
    fn the_peak_rate_is_never_below_the_mean() {
        let run = |chunks: &[(u64, u32)], end: u64| {
            let mut r = RequestRecord::new(0, ms_(0), ms_(0));
            r.chunks = chunks
                .iter()
                .map(|&(t, tokens)| OutputChunk { t: ms_(t), tokens, channel: Channel::Content })
                .collect();
            r.end = ms_(end);
            r.output_tokens = chunks.iter().map(|c| u64::from(c.1)).sum();
            r.outcome = Outcome::Success;
            analyze(&[r], &AnalysisOptions::default()).summary.throughput
        };
        // 1.5 s: 10 tokens in the first second (its only whole bucket), 90
        // in the last half second.
        let chunks: Vec<(u64, u32)> = std::iter::once((500, 10)).chain((0..9).map(|i| (1050 + i * 50, 10))).collect();
        let th = run(&chunks, 1500);
        assert!((th.output_tokens_per_s - 100.0 / 1.5).abs() < 1e-9, "{th:?}");
        assert_eq!(th.peak_output_tokens_per_s, th.output_tokens_per_s, "the first second's 10 tokens/s");
        // Under a second: the whole window is the peak's, its rate the mean.
        let th = run(&[(100, 20), (400, 30)], 500);
        assert_eq!((th.output_tokens_per_s, th.peak_output_tokens_per_s), (100.0, 100.0));
        // A whole bucket above the mean is the peak.
        let th = run(&[(100, 50), (1200, 10)], 1500);
        assert_eq!(th.peak_output_tokens_per_s, 50.0);
        assert!(th.output_tokens_per_s < 50.0, "{th:?}");
    }

    /// What a damaged records file or a lying server can put in a record:
    /// an end years after its start, a chunk of four billion tokens. The
    /// analysis holds a pair a chunk and a bucket a second that has a
    /// chunk, not a sample a token or a bucket a second of the span (it
    /// once asked for 147 GB and aborted).
    #[test]
    fn absurd_times_and_token_counts_are_analysed_in_bounded_memory() {
        let mut r = req(0, 0, 100, 10, 3);
        r.chunks = vec![
            OutputChunk { t: ms_(100), tokens: 1, channel: Channel::Content },
            OutputChunk { t: ms_(110), tokens: u32::MAX, channel: Channel::Content },
            OutputChunk { t: Duration::from_secs(10 * 365 * 86_400), tokens: 2, channel: Channel::Content },
        ]
        .into();
        r.end = Duration::from_secs(10 * 365 * 86_400);
        r.output_tokens = u32::MAX as u64 + 3;
        let a = analyze(&[r, req(1, 0, 100, 10, 3)], &AnalysisOptions::default());
        let itl = &a.summary.itl_ms;
        assert_eq!(itl.count, u32::MAX as u64 + 2 + 2, "every token a sample");
        assert_eq!(
            itl.p(50.0),
            Some(0.0),
            "most samples are the huge chunk's 10 ms over 4e9 tokens: under a nanosecond"
        );
        // The first second: both requests' first chunks and the huge one.
        assert_eq!(a.summary.throughput.peak_output_tokens_per_s, u32::MAX as f64 + 4.0);
    }

    #[test]
    fn in_flight_is_time_weighted() {
        // Two requests overlapping for half of a 2 s window.
        let mut a = req(0, 0, 500, 500, 4); // 0 .. 2000
        a.end = ms_(2000);
        let mut b = req(1, 1000, 500, 500, 2); // 1000 .. 2000
        b.end = ms_(2000);
        let s = analyze(&[a, b], &AnalysisOptions::default()).summary;
        assert!((s.in_flight.mean - 1.5).abs() < 1e-9, "{}", s.in_flight.mean);
        assert_eq!(s.in_flight.peak, 2);
    }

    #[test]
    fn back_to_back_requests_do_not_overlap() {
        let mut a = req(0, 0, 500, 500, 2);
        a.end = ms_(1000);
        let mut b = req(1, 1000, 500, 500, 2);
        b.end = ms_(2000);
        let s = analyze(&[a, b], &AnalysisOptions::default()).summary;
        assert_eq!(s.in_flight.peak, 1);
        assert!((s.in_flight.mean - 1.0).abs() < 1e-9);
    }

    #[test]
    fn extra_percentiles_reach_every_view() {
        let recs: Vec<_> = (0..100).map(|i| req(i, i * 10, 100 + i, 10, 5)).collect();
        let a = analyze(&recs, &AnalysisOptions { percentiles: vec![50.0, 90.0, 99.9], ..Default::default() });
        let v = serde_json::to_value(&a.summary).unwrap();
        assert!(v["ttft_ms"]["p99_9"].is_number());
        let c = serde_json::to_value(&a.vllm).unwrap();
        assert!(c["p99.9_ttft_ms"].is_number(), "{c}");
        assert!(c["p99_ttft_ms"].is_number());
    }

    #[test]
    fn prompt_extra_is_the_servers_count_beyond_the_workloads() {
        // (usage prompt, intended prompt, succeeded)
        type Req = (Option<u64>, Option<u64>, bool);
        type Want = Option<(u64, f64, i64, i64)>;
        let cases: &[(&[Req], Want)] = &[
            // A chat template: 35 more on every request; the failed one is not counted.
            (
                &[(Some(291), Some(256), true), (Some(163), Some(128), true), (Some(9), Some(1), false)],
                Some((2, 35.0, 35, 35)),
            ),
            // Turns: the template's share grows with the messages.
            (&[(Some(40), Some(30), true), (Some(95), Some(70), true)], Some((2, 17.5, 10, 25))),
            // A tokenizer that merges the workload's words.
            (&[(Some(250), Some(256), true)], Some((1, -6.0, -6, -6))),
            // No usage, or no intended count (a dataset): nothing to compare.
            (&[(None, Some(256), true), (Some(300), None, true)], None),
        ];
        for (reqs, want) in cases {
            let recs: Vec<_> = reqs
                .iter()
                .enumerate()
                .map(|(i, &(usage, intended, ok))| {
                    let mut r = req(i as u64, i as u64 * 10, 100, 10, 5);
                    (r.counts.usage_prompt, r.counts.intended_prompt) = (usage, intended);
                    r.input_tokens_source = if usage.is_some() { CountSource::Usage } else { CountSource::Intended };
                    if !ok {
                        r.outcome = Outcome::Failed { kind: FailureKind::HttpStatus, message: "HTTP 500".into() };
                    }
                    r
                })
                .collect();
            let t = analyze(&recs, &AnalysisOptions::default()).summary.tokens;
            let got = t.prompt_extra.map(|e| (e.requests, e.mean, e.min, e.max));
            assert_eq!(got, *want, "{reqs:?}");
            let counted: u64 = t.input_sources.values().sum();
            assert_eq!(counted, reqs.iter().filter(|r| r.2).count() as u64, "{reqs:?}: sources cover the completed");
        }
    }

    #[test]
    fn empty_run_is_well_defined() {
        let a = analyze(&[], &AnalysisOptions::default());
        assert_eq!(a.summary.requests.sent, 0);
        assert_eq!(a.summary.throughput.requests_per_s, 0.0);
        assert_eq!(a.summary.ttft_ms.p(50.0), None);
    }
}
