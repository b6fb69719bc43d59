//! The check of the engine model against published measurements: parses the
//! reference CSV (validation/public.csv's format), predicts each row in
//! virtual time, and reports the relative errors and their median.

use super::calibration::Calibration;
use super::catalog::{GpuFamily, GpuSpec, KvCacheDtype, ModelSpec, Precision};
use super::config::EngineConfig;
use super::error::Error;
use super::roofline::kv_capacity;
use super::scheduler::SchedulerPolicy;
use super::virtual_time::SimRun;
use super::virtual_time::{simulate, PrefixBlocks, VirtualLoad, VirtualRequest};
use goodput_core::analysis::stats::percentile_of;
use goodput_core::{percentile, RequestMetrics};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// How the reference was loaded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReferenceLoad {
    /// Every request queued at once; output tokens over the whole run.
    MaxThroughput,
    /// A closed loop of this many users (AIPerf's `--concurrency`, `vllm
    /// bench serve --max-concurrency`): each user sends again when its
    /// request ends, and over a long run the users drift apart.
    Concurrency(u32),
    /// A batch of this many requests sent together, again and again (vLLM's
    /// latency benchmark): the same closed loop, never staggered.
    Batch(u32),
    /// An open loop at this many requests per second, Poisson arrivals
    /// (`sglang.bench_serving --request-rate`, `vllm bench serve
    /// --request-rate` with burstiness 1): the row's `requests` are sent.
    Rate(f64),
}

impl ReferenceLoad {
    /// Sent over HTTP to a serving front end, as every load but an offline
    /// benchmark's (`max_throughput`: trtllm-bench drives the engine in its
    /// own process) is, unless the row's `client` says `offline`.
    pub fn is_served(&self) -> bool {
        !matches!(self, ReferenceLoad::MaxThroughput)
    }
}

impl ReferenceRow {
    /// What shapes the row's run: every field but those that only name,
    /// place or judge it (its id, line, metric, value, source, split and
    /// queueing), so that rows differing only in those share one run, and a
    /// field added to the row is part of the key without being listed.
    fn run_key(&self) -> String {
        let run = ReferenceRow {
            line: 0,
            id: String::new(),
            metric: Metric::OutputTokensPerS,
            value: 0.0,
            source: String::new(),
            split: None,
            queueing: false,
            lengths: None,
            arrivals: None,
            prefix_blocks: None,
            ..self.clone()
        };
        // A measured run's requests, send times and prefix blocks, shared
        // by its rows, by where they are: formatted whole, a point of
        // 100,000 requests made each key megabytes long.
        let lengths = self.lengths.as_ref().map(|l| (l.as_ptr(), l.len()));
        let arrivals = self.arrivals.as_ref().map(|a| (a.as_ptr(), a.len()));
        let blocks = self.prefix_blocks.as_ref().map(|b| (b.as_ptr(), b.len()));
        format!("{run:?} {lengths:?} {arrivals:?} {blocks:?}")
    }

    /// Whether the row's requests went through a serving front end (HTTP):
    /// the `client` column's word (`offline`: trtllm-bench's closed loops,
    /// `--concurrency`, run in its process; `http`: every prompt sent at
    /// once to a server, as `vllm bench serve` without a rate sends them),
    /// else its load's kind. A `max_throughput` row marked `http` had been
    /// taken as offline whatever it said.
    pub fn is_served(&self) -> bool {
        !self.offline
    }
}

/// The metrics a reference row may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    OutputTokensPerS,
    E2eMsMean,
    TtftMsMean,
    TtftMsP50,
    TpotMsMean,
    TpotMsP50,
    /// The median gap between consecutive output tokens over every token of
    /// every request (SGLang's and vLLM's "Median ITL"), where TPOT is a
    /// mean per request.
    ItlMsP50,
    /// The GPUs' energy over the run per output token, joules: a measured
    /// run's from its GPUs' energy counters (DCGM), the engine's from its
    /// power model.
    JoulesPerOutputToken,
    /// The KV cache's size in tokens, every replica's together: a measured
    /// server's own (vLLM's `cache_config_info`, SGLang's
    /// `max_total_num_tokens`), the engine's from its memory model.
    KvCacheTokens,
}

impl Metric {
    const ALL: [Metric; 9] = [
        Metric::OutputTokensPerS,
        Metric::E2eMsMean,
        Metric::TtftMsMean,
        Metric::TtftMsP50,
        Metric::TpotMsMean,
        Metric::TpotMsP50,
        Metric::ItlMsP50,
        Metric::JoulesPerOutputToken,
        Metric::KvCacheTokens,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "output_tokens_per_s",
            Metric::E2eMsMean => "e2e_ms_mean",
            Metric::TtftMsMean => "ttft_ms_mean",
            Metric::TtftMsP50 => "ttft_ms_p50",
            Metric::TpotMsMean => "tpot_ms_mean",
            Metric::TpotMsP50 => "tpot_ms_p50",
            Metric::ItlMsP50 => "itl_ms_p50",
            Metric::JoulesPerOutputToken => "joules_per_output_token",
            Metric::KvCacheTokens => "kv_cache_tokens",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "tok/s",
            Metric::JoulesPerOutputToken => "J",
            Metric::KvCacheTokens => "tokens",
            _ => "ms",
        }
    }
}

/// The engine that produced a reference number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferenceEngine {
    Vllm,
    Sglang,
    TensorRtLlm,
}

/// Which part of a reference set a row belongs to (the optional `split`
/// column): the model's constants may be set on calibration rows; held-out
/// rows only check them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Split {
    Calibration,
    HeldOut,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Calibration => "calibration",
            Split::HeldOut => "held-out",
        }
    }
}

/// One row of the reference CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceRow {
    /// 1-based line in the file.
    pub line: usize,
    pub id: String,
    pub model: String,
    pub gpu: String,
    pub gpus: u32,
    pub tp: u32,
    pub precision: Precision,
    pub engine: ReferenceEngine,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub load: ReferenceLoad,
    pub metric: Metric,
    pub value: f64,
    pub source: String,
    /// `None` where the file has no `split` column or leaves it empty.
    pub split: Option<Split>,
    /// The reference point is past its server's capacity (the optional
    /// `queueing` column, `yes` or `no`): its TTFT is mostly the wait for a
    /// free slot, and the summary reports it apart.
    pub queueing: bool,
    /// Requests the benchmark sent (the optional `requests` column): needed
    /// by `rate` rows, since past the server's capacity the queue grows over
    /// the run.
    pub requests: Option<u32>,
    /// Spread of the prompt and answer lengths (the optional `range_ratio`
    /// column, `sglang.bench_serving --random-range-ratio`): each length is
    /// drawn uniformly from [max(⌊r·N⌋, 1), N], N being `input_tokens` or
    /// `output_tokens`. 1 (the default) is every request at N.
    pub range_ratio: f64,
    /// The expert-parallel size (the optional `ep` column; 1, none, where
    /// absent): a mixture of experts' experts spread over `ep` GPUs, each
    /// `tp` GPUs a data-parallel rank of one engine (`tp` 1 with `ep` 8:
    /// attention data-parallel over eight ranks, TensorRT-LLM's
    /// `enable_attention_dp`).
    pub ep: u32,
    /// Pipeline stages (the optional `pp` column; 1 where absent): each
    /// replica or expert-parallel group split into `pp` stages of its
    /// layers, each stage on GPUs of its own (TensorRT-LLM's `--pp`).
    pub pp: u32,
    /// The client started a closed loop's users together (the optional
    /// `start` column, `together` or `apart`; absent, the validator's
    /// option decides): genai-perf's concurrency mode sends its users'
    /// first requests at once, and a per-request export of one such run
    /// shows them staying together (docs/simulator.md, "Closed loops").
    pub together: bool,
    /// Whether the reference engine ran prompts and decodes in one step (the
    /// optional `mixed` column, `yes` or `no`; `yes` where absent): `no` for
    /// SGLang's default and for the older NIM whose per-request export shows
    /// its running requests making no token while others prefilled.
    pub mixed_batches: bool,
    /// Whether the reference engine scheduled a step ahead (the optional
    /// `async_scheduling` column, `yes` or `no`; `no` where absent):
    /// vLLM's `--async-scheduling`, TensorRT-LLM's overlap scheduler.
    pub async_scheduling: bool,
    /// SGLang's `--scheduler-recv-interval` (the optional column of that
    /// name, on `sglang` rows; 1 where absent).
    pub scheduler_recv_interval: u32,
    /// SGLang's `--max-prefill-tokens` (the optional column of that name, on
    /// `sglang` rows; SGLang's default, 16,384, where absent).
    pub max_prefill_tokens: Option<u32>,
    /// TensorRT-LLM's `batch_wait_timeout_iters` and
    /// `batch_wait_max_tokens_ratio` (the optional columns of those names,
    /// on `tensorrt-llm` rows; 0 where absent).
    pub batch_wait_timeout_iters: u32,
    pub batch_wait_max_tokens_ratio: f64,
    /// What an MXFP4 mixture of experts' expert products multiplied
    /// against (the optional `mxfp4_activations` column, `fp8` or `bf16`,
    /// on `mxfp4` rows; the GPU's default where absent).
    pub mxfp4_activations: Option<super::Mxfp4Activations>,
    /// The benchmark's own engine limits where it set them: sequences a step
    /// (per attention rank: TensorRT-LLM's `max_batch_size`, vLLM's
    /// `max_num_seqs`; the optional `max_num_seqs` column), tokens a step
    /// (per rank: `max_num_tokens`, `max_num_batched_tokens`; the optional
    /// `max_num_batched_tokens` column), the memory share for the KV cache
    /// (TensorRT-LLM's `kv_cache_free_gpu_mem_fraction`, vLLM's
    /// `gpu_memory_utilization`; `memory_fraction`) and the KV cache's
    /// dtype (`kv_cache`, `auto` or `fp8`). `None`: the engine's default.
    pub max_num_seqs: Option<u32>,
    pub max_num_batched_tokens: Option<u32>,
    pub memory_fraction: Option<f64>,
    pub kv_cache: Option<KvCacheDtype>,
    /// The client drove the engine in its own process, with no HTTP front
    /// end (the optional `client` column, `offline` or `http`; absent, a
    /// `max_throughput` row is offline and the others are served).
    pub offline: bool,
    /// Each request's prompt and answer lengths (and shared prefix), in the
    /// order the measured run sent them (its warm-up's first), where the
    /// row came from a run whose lengths were drawn again (`goodput
    /// estimate --validate RUN.json`): the simulation sends these, over
    /// again past their end, in place of `input_tokens` and
    /// `output_tokens` every time. Lengths that vary keep a closed
    /// loop's users apart, where their means send them in lockstep. Not a
    /// CSV column: `None` from [`parse_csv`].
    pub lengths: Option<RequestLengths>,
    /// Requests sent before the measured ones and left out of the figures
    /// (the optional `warmup` column; 0 where absent): a measured run's
    /// warm-up, which for a closed loop whose users started together holds
    /// their first wave. `lengths`, where given, begin with theirs.
    pub warmup: u32,
    /// The most requests a `rate` or `max_throughput` row's client had in
    /// flight (the optional `max_concurrency` column; none where absent):
    /// arrivals past it wait for a request to end.
    pub max_concurrency: Option<u32>,
    /// A `rate` row's send times, its warm-up's first, where the row came
    /// from a measured run whose schedule was drawn again (its rate,
    /// arrival process, ramp-up and seed): the simulation sends at these in
    /// place of Poisson times of its own. Not a CSV column: `None` from
    /// [`parse_csv`].
    pub arrivals: Option<SendTimes>,
    /// The blocks each request's prompt opened with, in the order of
    /// `lengths` (a replayed trace's prefix blocks, Mooncake's `hash_ids`),
    /// where the row came from a measured run that replayed a trace: the
    /// prefix cache serves what they share. Not a CSV column: `None` from
    /// [`parse_csv`].
    pub prefix_blocks: Option<BlockLists>,
}

/// Each request's prefix blocks (`None` for one that opened with none), in
/// the order they were sent.
pub type BlockLists = std::sync::Arc<[Option<PrefixBlocks>]>;

/// An open loop's send times, from its start, in order.
pub type SendTimes = std::sync::Arc<[std::time::Duration]>;

/// Each request's prompt and answer lengths (and the shared prefix its
/// prompt opened with), in the order they were sent.
pub type RequestLengths = std::sync::Arc<[VirtualRequest]>;

const COLUMNS: [&str; 15] = [
    "id",
    "model",
    "gpu",
    "gpus",
    "tp",
    "precision",
    "engine",
    "input_tokens",
    "output_tokens",
    "load_kind",
    "load_value",
    "metric",
    "value",
    "unit",
    "source",
];

/// Columns a file may add: `split` (`calibration` or `held-out`),
/// `queueing` (`yes` or `no`), `requests` (how many the benchmark sent),
/// `range_ratio` (0 to 1, the spread of the lengths), `ep` (the
/// expert-parallel size), `start` (`together` where the client sent its
/// users' first requests at once, `apart`), `mixed` (`no` where the
/// engine kept prompts and decodes in separate steps, `yes`), and the
/// engine limits the benchmark set: `max_num_seqs`, `max_num_batched_tokens`
/// (each per attention rank), `memory_fraction` and `kv_cache`; `client`
/// (`offline` where the benchmark ran the engine in its own process);
/// `warmup` (requests a closed loop or a rate sent first, left out of its
/// figures: a measured run's warm-up); and `max_concurrency` (the most
/// requests a rate or a burst had in flight, `vllm bench serve
/// --max-concurrency`, `goodput bench --rate R -c N`); `async_scheduling`
/// (`yes` where the engine chose each step while the one before ran:
/// vLLM's `--async-scheduling`, TensorRT-LLM's overlap scheduler; `no`);
/// `scheduler_recv_interval` (SGLang's `--scheduler-recv-interval`, on
/// `sglang` rows: new requests taken every that many decode steps; 1);
/// `max_prefill_tokens` (SGLang's `--max-prefill-tokens`, on `sglang`
/// rows: a step's prompt tokens past its first prompt's; 16,384);
/// `batch_wait_timeout_iters` and `batch_wait_max_tokens_ratio`
/// (TensorRT-LLM's batch waiting, on `tensorrt-llm` rows; 0);
/// `mxfp4_activations` (`fp8` or `bf16`, on `mxfp4` rows: what the
/// experts multiplied against, where the server's kernels said; the GPU's
/// default).
const OPTIONAL_COLUMNS: [&str; 21] = [
    "split",
    "queueing",
    "requests",
    "range_ratio",
    "ep",
    "start",
    "mixed",
    "max_num_seqs",
    "max_num_batched_tokens",
    "memory_fraction",
    "kv_cache",
    "client",
    "pp",
    "warmup",
    "max_concurrency",
    "async_scheduling",
    "scheduler_recv_interval",
    "max_prefill_tokens",
    "batch_wait_timeout_iters",
    "batch_wait_max_tokens_ratio",
    "mxfp4_activations",
];

/// The most requests a `concurrency` row's benchmark may have sent (its
/// `requests` column): more than are simulated, which are whole rounds of
/// its users up to `MAX_REQUESTS`.
const MAX_SENT: u32 = 10_000_000;

/// The most requests a `rate` row may send: each is simulated, and a larger
/// run says nothing a shorter one does not.
const MAX_REQUESTS: u32 = 100_000;

/// Requests a closed loop's (or a batch's) user sends in the simulation.
const REQUESTS_A_USER: u32 = 25;

/// The most users a `concurrency` or `batch` row may have: as many
/// requests as a `rate` row may send.
const MAX_USERS: u32 = MAX_REQUESTS / REQUESTS_A_USER;

/// Parses the reference CSV: a header naming the columns (any order), then
/// one measurement per line. Blank lines and lines starting with `#` are
/// skipped; fields may be quoted, with `""` for a quote.
pub fn parse_csv(text: &str) -> Result<Vec<ReferenceRow>, Error> {
    let mut lines = csv_lines(text);
    let Some((header_line, header)) = lines.next() else {
        return Err(Error::Csv { line: 1, message: "the file is empty; expected a header line".into() });
    };
    let names = split_fields(header, header_line)?;
    let mut at = [0usize; COLUMNS.len()];
    for (k, col) in COLUMNS.iter().enumerate() {
        at[k] = names.iter().position(|n| n.trim() == *col).ok_or_else(|| Error::Csv {
            line: header_line,
            message: format!("missing column `{col}`; the header needs {}", COLUMNS.join(",")),
        })?;
    }
    let optional: Vec<Option<usize>> =
        OPTIONAL_COLUMNS.iter().map(|col| names.iter().position(|n| n.trim() == *col)).collect();
    let rows = lines
        .map(|(line, text)| {
            let fields = split_fields(text, line)?;
            if fields.len() != names.len() {
                return Err(Error::Csv {
                    line,
                    message: format!("{} fields where the header has {}", fields.len(), names.len()),
                });
            }
            let cols: Vec<&str> = at.iter().map(|&k| fields[k].trim()).collect();
            let mut row = parse_row(line, &cols)?;
            let extra = |k: usize| optional[k].map(|i| fields[i].trim()).filter(|v| !v.is_empty());
            let err = |message: String| Error::Csv { line, message };
            row.split = match extra(0) {
                None => None,
                Some("calibration") => Some(Split::Calibration),
                Some("held-out") => Some(Split::HeldOut),
                Some(other) => return Err(err(format!("unknown split `{other}`; known: calibration, held-out"))),
            };
            // A yes-or-no column, `absent` where the file leaves it out.
            let switch = |k: usize, absent: bool| match extra(k) {
                None => Ok(absent),
                Some("yes") => Ok(true),
                Some("no") => Ok(false),
                Some(other) => Err(err(format!("`{}` must be yes or no, got `{other}`", OPTIONAL_COLUMNS[k]))),
            };
            row.queueing = switch(1, false)?;
            // A closed loop's benchmark may have sent more than are
            // simulated (whole rounds of its users are, up to MAX_REQUESTS).
            let most = if matches!(row.load, ReferenceLoad::Concurrency(_)) { MAX_SENT } else { MAX_REQUESTS };
            row.requests =
                match extra(2) {
                    None => None,
                    Some(v) => Some(v.parse::<u32>().ok().filter(|&n| n > 0 && n <= most).ok_or_else(|| {
                        err(format!("`requests` must be a whole number from 1 to {most}, got `{v}`"))
                    })?),
                };
            if let Some(v) = extra(3) {
                row.range_ratio = v
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| err(format!("`range_ratio` must be a number from 0 to 1, got `{v}`")))?;
            }
            if let Some(v) = extra(4) {
                row.ep =
                    v.parse::<u32>().ok().filter(|&e| (1..=4096).contains(&e)).ok_or_else(|| {
                        err(format!("`ep` must be an expert-parallel size from 1 to 4096, got `{v}`"))
                    })?;
            }
            if let Some(v) = extra(12) {
                row.pp =
                    v.parse::<u32>().ok().filter(|&p| (1..=64).contains(&p)).ok_or_else(|| {
                        err(format!("`pp` must be a number of pipeline stages from 1 to 64, got `{v}`"))
                    })?;
            }
            row.together = match extra(5) {
                None | Some("apart") => false,
                Some("together") => true,
                Some(other) => return Err(err(format!("`start` must be together or apart, got `{other}`"))),
            };
            row.mixed_batches = switch(6, true)?;
            row.async_scheduling = switch(15, false)?;
            if let Some(v) = extra(16) {
                row.scheduler_recv_interval = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=super::MAX_SCHEDULER_RECV_INTERVAL).contains(n))
                    .filter(|&n| n == 1 || row.engine == ReferenceEngine::Sglang)
                    .ok_or_else(|| {
                        err(format!(
                            "`scheduler_recv_interval` is SGLang's: a number of decode steps from 1 to {}, above 1 \
                             on an sglang row alone, got `{v}`",
                            super::MAX_SCHEDULER_RECV_INTERVAL
                        ))
                    })?;
            }
            let positive = |k: usize, what: &str| -> Result<Option<u32>, Error> {
                extra(k)
                    .map(|v| {
                        v.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                            err(format!("`{}` must be a positive integer ({what}), got `{v}`", OPTIONAL_COLUMNS[k]))
                        })
                    })
                    .transpose()
            };
            row.max_prefill_tokens = positive(17, "SGLang's prompt tokens a step past its first prompt's")?;
            if row.max_prefill_tokens.is_some() && row.engine != ReferenceEngine::Sglang {
                return Err(err("`max_prefill_tokens` is SGLang's: leave it empty on other engines' rows".into()));
            }
            if let Some(v) = extra(18) {
                row.batch_wait_timeout_iters =
                    v.parse::<u32>().ok().filter(|&n| n <= super::MAX_BATCH_WAIT_TIMEOUT_ITERS).ok_or_else(|| {
                        err(format!(
                            "`batch_wait_timeout_iters` must be a number of steps from 0 to {}, got `{v}`",
                            super::MAX_BATCH_WAIT_TIMEOUT_ITERS
                        ))
                    })?;
            }
            if let Some(v) = extra(19) {
                row.batch_wait_max_tokens_ratio =
                    v.parse::<f64>().ok().filter(|r| (0.0..=1.0).contains(r)).ok_or_else(|| {
                        err(format!("`batch_wait_max_tokens_ratio` must be a share from 0 to 1, got `{v}`"))
                    })?;
            }
            if (row.batch_wait_timeout_iters > 0 || row.batch_wait_max_tokens_ratio > 0.0)
                && row.engine != ReferenceEngine::TensorRtLlm
            {
                return Err(err("`batch_wait_timeout_iters` and `batch_wait_max_tokens_ratio` are TensorRT-LLM's: \
                     leave them empty on other engines' rows"
                    .into()));
            }
            if let Some(v) = extra(20) {
                row.mxfp4_activations = Some(v.parse().map_err(|m: String| err(format!("`mxfp4_activations`: {m}")))?);
                if row.precision != Precision::Mxfp4 {
                    return Err(err(format!(
                        "`mxfp4_activations` is for `mxfp4` rows, and this row's precision is `{}`: leave it empty",
                        row.precision
                    )));
                }
            }
            row.max_num_seqs = positive(7, "sequences a step per attention rank")?;
            row.max_num_batched_tokens = positive(8, "tokens a step per attention rank")?;
            row.memory_fraction = extra(9)
                .map(|v| {
                    v.parse::<f64>().ok().filter(|f| *f > 0.0 && *f <= 1.0).ok_or_else(|| {
                        err(format!("`memory_fraction` must be a share above 0 and at most 1, got `{v}`"))
                    })
                })
                .transpose()?;
            row.kv_cache = match extra(10) {
                None => None,
                Some("auto") => Some(KvCacheDtype::Auto),
                Some("fp8") => Some(KvCacheDtype::Fp8),
                Some(other) => return Err(err(format!("`kv_cache` must be auto or fp8, got `{other}`"))),
            };
            row.offline = match extra(11) {
                None => !row.load.is_served(),
                Some("offline") => true,
                Some("http") => false,
                Some(other) => return Err(err(format!("`client` must be offline or http, got `{other}`"))),
            };
            if let Some(v) = extra(13) {
                row.warmup = v.parse::<u32>().ok().filter(|&n| n <= MAX_REQUESTS).ok_or_else(|| {
                    err(format!("`warmup` must be a whole number of requests from 0 to {MAX_REQUESTS}, got `{v}`"))
                })?;
                if row.warmup > 0 && !matches!(row.load, ReferenceLoad::Concurrency(_) | ReferenceLoad::Rate(_)) {
                    return Err(err("`warmup` counts a closed loop's or a rate's first requests: give it on \
                                    `concurrency` and `rate` rows only"
                        .into()));
                }
            }
            if let Some(v) = extra(14) {
                row.max_concurrency = Some(v.parse::<u32>().ok().filter(|&n| n >= 1).ok_or_else(|| {
                    err(format!("`max_concurrency` must be a whole number of requests, 1 or more, got `{v}`"))
                })?);
                if !matches!(row.load, ReferenceLoad::Rate(_) | ReferenceLoad::MaxThroughput) {
                    return Err(err("`max_concurrency` caps a rate's or a burst's requests in flight: a closed \
                                    loop's users are its `load_value`"
                        .into()));
                }
            }
            if let (ReferenceLoad::Concurrency(users), Some(sent)) = (row.load, row.requests) {
                if sent < users {
                    return Err(err(format!(
                        "`requests` {sent} is fewer than the {users} users: a closed loop sends at least one each"
                    )));
                }
            }
            if let ReferenceLoad::Concurrency(users) | ReferenceLoad::Batch(users) = row.load {
                // Without a count of its own a row simulates 25 requests a user.
                if users > MAX_USERS && !(matches!(row.load, ReferenceLoad::Concurrency(_)) && row.requests.is_some()) {
                    return Err(err(users_out_of_range(&users.to_string())));
                }
            }
            if row.together && !matches!(row.load, ReferenceLoad::Concurrency(_)) {
                return Err(err("`start` describes a closed loop's users: give it on `concurrency` rows only".into()));
            }
            if matches!(row.load, ReferenceLoad::Rate(_)) && row.requests.is_none() {
                return Err(err(
                    "a `rate` row needs the `requests` column: how many requests the benchmark sent".into()
                ));
            }
            Ok(row)
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if rows.is_empty() {
        // It had printed an empty table and exited 0.
        return Err(Error::Csv {
            line: header_line,
            message: "a header and no rows: give a measurement a line after it".into(),
        });
    }
    Ok(rows)
}

/// Why a closed loop's or a batch's users (`got`) are refused: too many
/// for the requests simulated, or not a count.
fn users_out_of_range(got: &str) -> String {
    format!(
        "a `concurrency` or `batch` row's `load_value` is its users, from 1 to {MAX_USERS} (each simulated for \
         {REQUESTS_A_USER} requests; a `concurrency` row with a `requests` column may have up to {MAX_REQUESTS}); \
         got `{got}`"
    )
}

/// `cols` holds the fields in `COLUMNS` order.
fn parse_row(line: usize, cols: &[&str]) -> Result<ReferenceRow, Error> {
    let f = |k: usize| cols[k];
    let err = |message: String| Error::Csv { line, message };
    let count = |k: usize| -> Result<u32, Error> {
        f(k).parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| err(format!("`{}` must be a positive integer, got `{}`", COLUMNS[k], f(k))))
    };
    // Each user is simulated for 25 requests: past MAX_USERS a row would
    // hold more requests than a `rate` row may (it had aborted, allocating
    // for a billion users); a `concurrency` row with a `requests` column may
    // have up to MAX_REQUESTS (checked with the optional columns).
    let users = || -> Result<u32, Error> {
        f(10)
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_REQUESTS).contains(n))
            .ok_or_else(|| err(users_out_of_range(f(10))))
    };
    let precision = f(5).parse::<Precision>().map_err(|e| err(e.to_string()))?;
    let engine = match f(6).to_ascii_lowercase().as_str() {
        "vllm" => ReferenceEngine::Vllm,
        "sglang" => ReferenceEngine::Sglang,
        "tensorrt-llm" | "trt-llm" | "trtllm" => ReferenceEngine::TensorRtLlm,
        other => return Err(err(format!("unknown engine `{other}`; known: vllm, sglang, tensorrt-llm"))),
    };
    let load = match f(9) {
        "max_throughput" => ReferenceLoad::MaxThroughput,
        "concurrency" => ReferenceLoad::Concurrency(users()?),
        "batch" => ReferenceLoad::Batch(users()?),
        "rate" => {
            ReferenceLoad::Rate(f(10).parse::<f64>().ok().filter(|r| (0.001..=1e6).contains(r)).ok_or_else(|| {
                err(format!("a `rate` row's `load_value` is requests per second, from 0.001 to 1e6; got `{}`", f(10)))
            })?)
        }
        other => {
            return Err(err(format!("unknown load_kind `{other}`; known: max_throughput, concurrency, batch, rate")))
        }
    };
    let metric = Metric::ALL.into_iter().find(|m| m.as_str() == f(11)).ok_or_else(|| {
        let known: Vec<&str> = Metric::ALL.iter().map(|m| m.as_str()).collect();
        err(format!("unknown metric `{}`; known: {}", f(11), known.join(", ")))
    })?;
    if f(13) != metric.unit() {
        return Err(err(format!("{} is measured in {}, not `{}`", metric.as_str(), metric.unit(), f(13))));
    }
    let value = f(12)
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| err(format!("`value` must be a positive number, got `{}`", f(12))))?;
    Ok(ReferenceRow {
        line,
        id: f(0).to_string(),
        model: f(1).to_string(),
        gpu: f(2).to_string(),
        gpus: count(3)?,
        tp: count(4)?,
        precision,
        engine,
        input_tokens: count(7)?,
        output_tokens: count(8)?,
        load,
        metric,
        value,
        source: f(14).to_string(),
        split: None,
        queueing: false,
        requests: None,
        range_ratio: 1.0,
        ep: 1,
        pp: 1,
        together: false,
        mixed_batches: true,
        async_scheduling: false,
        scheduler_recv_interval: 1,
        max_prefill_tokens: None,
        batch_wait_timeout_iters: 0,
        batch_wait_max_tokens_ratio: 0.0,
        mxfp4_activations: None,
        max_num_seqs: None,
        max_num_batched_tokens: None,
        memory_fraction: None,
        kv_cache: None,
        offline: matches!(load, ReferenceLoad::MaxThroughput),
        lengths: None,
        warmup: 0,
        max_concurrency: None,
        arrivals: None,
        prefix_blocks: None,
    })
}

/// A CSV's lines that hold something, each with its line number: blank
/// lines and `#` comments are skipped, a Windows line end is cut, and a
/// byte-order mark (a spreadsheet's export) is not taken for part of the
/// first column's name (it had been refused as a missing `id`).
pub(super) fn csv_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
}

fn split_fields(line: &str, line_no: usize) -> Result<Vec<String>, Error> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.trim().is_empty() => {
                field.clear();
                quoted = true;
            }
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err(Error::Csv { line: line_no, message: "a quoted field is not closed".into() });
    }
    fields.push(field);
    Ok(fields)
}

/// How predictions are made.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationOptions {
    /// Calibration per GPU family; families not listed use the shipped one.
    pub calibrations: BTreeMap<GpuFamily, Calibration>,
    /// KV-cache dtype for TensorRT-LLM rows of FP8 or FP4 weights. NVIDIA's
    /// published FP8 numbers exceed what a 16-bit cache could stream (see
    /// docs/simulator.md, "Calibration"), so the default is FP8; `Auto`
    /// shows what stock vLLM settings would give. Rows of 16-bit weights
    /// keep a 16-bit cache: TensorRT-LLM quantizes the KV cache only when
    /// asked, as its FP8 checkpoints ask.
    pub tensorrt_llm_kv_cache: KvCacheDtype,
    /// Closed loops start with their users spread over one request's time
    /// (measured by a pilot run) and count from the second request of each
    /// user on; else every user sends at time zero and every request counts.
    pub stagger: bool,
    /// Requests each user of a closed loop sends where the row gives no
    /// `requests` column (`None`: the validator's own 25). NVIDIA's NIM
    /// benchmarking guide sends 3 a user (`--request-count` three times
    /// `--concurrency`), every one counted (docs/simulator.md, "What NIM's
    /// own procedure says").
    pub requests_a_user: Option<u32>,
    /// Front-end overhead of TensorRT-LLM rows, in ms (NIM's: see
    /// [`NIM_FRONTEND_MS`]); `None` keeps the calibration's.
    pub tensorrt_llm_frontend_ms: Option<f64>,
    /// The front end's serial work per output token on TensorRT-LLM rows
    /// served over HTTP (NIM's: see [`NIM_FRONTEND_US_PER_OUTPUT_TOKEN`]),
    /// in µs; `None` keeps the calibration's. Rows of an offline benchmark
    /// (`max_throughput`: trtllm-bench, no front end) keep the calibration's.
    pub tensorrt_llm_frontend_us_per_output_token: Option<f64>,
    /// The scheduler TensorRT-LLM rows run under: TensorRT-LLM's own
    /// (guaranteed-no-evict) by default, or vLLM's to compare.
    pub tensorrt_llm_scheduler: SchedulerPolicy,
    /// Chunked context for TensorRT-LLM rows.
    pub tensorrt_llm_chunked_context: bool,
    /// Prompts and decodes in one step (`Some(true)`) or apart
    /// (`Some(false)`) on every row, to compare; `None` follows each row's
    /// `mixed` column.
    pub mixed_batches: Option<bool>,
    /// Scheduling a step ahead (`Some(true)`) or not (`Some(false)`) on
    /// every row, to compare; `None` follows each row's `async_scheduling`
    /// column.
    pub async_scheduling: Option<bool>,
    /// Whether rows take their `mxfp4_activations` column (true, the
    /// default) or run every MXFP4 row on its GPU's kernels whatever the
    /// engine (FP8 activations on FP4 cores, 16-bit elsewhere), as before
    /// the column (false), to compare.
    pub mxfp4_activations_column: bool,
    /// The scheduler SGLang rows run under: SGLang's own by default (with
    /// its default chunk budget by GPU), or vLLM's to compare (as before
    /// session 74).
    pub sglang_scheduler: SchedulerPolicy,
}

/// NIM's time from a request's send to its prefill, less the prefill: the
/// one-user TTFT of NVIDIA's NIM 1.8.0 tables minus the engine's own
/// prefill step, on the calibration rows (200/200 and 1000/1000 on both
/// models: 5.3, 4.0, 9.2 and 5.5 ms). vLLM's 15 ms front end is the default
/// for every other row.
pub const NIM_FRONTEND_MS: f64 = 5.0;

/// NIM's front end's serial work per output token it streams, in µs: where
/// it, not the engine, sets the pace, a user's next token waits for every
/// user's, so the mean ITL is the users times this. On the calibration rows
/// where the measured ITL exceeds the engine's own step (Llama-3.1-8B,
/// 200/200, at 150, 200 and 250 users: 9.81, 12.65 and 16.14 ms) that is
/// 65.4, 63.3 and 64.6 µs a token (docs/simulator.md, "The front end's work
/// per output token").
pub const NIM_FRONTEND_US_PER_OUTPUT_TOKEN: f64 = 65.0;

impl Default for ValidationOptions {
    fn default() -> Self {
        ValidationOptions {
            calibrations: BTreeMap::new(),
            tensorrt_llm_kv_cache: KvCacheDtype::Fp8,
            stagger: true,
            requests_a_user: None,
            tensorrt_llm_frontend_ms: Some(NIM_FRONTEND_MS),
            tensorrt_llm_frontend_us_per_output_token: Some(NIM_FRONTEND_US_PER_OUTPUT_TOKEN),
            tensorrt_llm_scheduler: SchedulerPolicy::Trtllm,
            tensorrt_llm_chunked_context: true,
            mixed_batches: None,
            async_scheduling: None,
            mxfp4_activations_column: true,
            sglang_scheduler: SchedulerPolicy::Sglang,
        }
    }
}

/// One row's prediction beside its reference, with what the engine saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub row: ReferenceRow,
    pub predicted: f64,
    /// (predicted − reference) / reference.
    pub rel_error: f64,
    /// Sequences per step, averaged over the run (one replica).
    pub mean_batch_seqs: f64,
    pub preemptions: u64,
    pub kv_capacity_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ValidationReport {
    pub predictions: Vec<Prediction>,
    pub median_abs_rel_error: Option<f64>,
}

/// The engine configuration a row describes: one replica of `tp` GPUs, or
/// with `ep`, one expert-parallel group of its ranks.
pub fn row_config(row: &ReferenceRow, options: &ValidationOptions) -> Result<EngineConfig, Error> {
    let gpu = GpuSpec::lookup(&row.gpu)?;
    let mut cfg = EngineConfig::new(ModelSpec::lookup(&row.model)?, gpu.clone(), row.precision);
    cfg.tp = row.tp;
    cfg.ep = row.ep;
    cfg.pp = row.pp;
    cfg.dp = cfg.attention_ranks();
    if let Some(c) = options.calibrations.get(&gpu.family) {
        cfg.calibration = c.clone();
    }
    cfg.mixed_batches = options.mixed_batches.unwrap_or(row.mixed_batches);
    cfg.async_scheduling = options.async_scheduling.unwrap_or(row.async_scheduling);
    cfg.mxfp4_activations = match options.mxfp4_activations_column {
        true => row.mxfp4_activations,
        // The GPU's kernels whatever the engine, as before the column (and
        // before the servers' own defaults: vLLM's 16-bit on FP4 cores).
        false if cfg.precision == Precision::Mxfp4 && cfg.model.moe.is_some() => {
            Some(if cfg.gpu.runs_w4a8() { super::Mxfp4Activations::Fp8 } else { super::Mxfp4Activations::Bf16 })
        }
        false => None,
    };
    if row.engine == ReferenceEngine::TensorRtLlm {
        if row.precision != Precision::Bf16 {
            cfg.kv_cache_dtype = options.tensorrt_llm_kv_cache;
        }
        if let Some(ms) = options.tensorrt_llm_frontend_ms {
            cfg.calibration.frontend_overhead_ms = ms;
        }
        if let Some(us) = options.tensorrt_llm_frontend_us_per_output_token.filter(|_| row.is_served()) {
            cfg.calibration.frontend_serial_us_per_output_token = us;
        }
        cfg.scheduler = options.tensorrt_llm_scheduler;
        // Its batch waiting, where the row's server set it and the row runs
        // TensorRT-LLM's own scheduler (`--trt-scheduler vllm` compares
        // without).
        if cfg.scheduler == SchedulerPolicy::Trtllm {
            cfg.batch_wait_timeout_iters = row.batch_wait_timeout_iters;
            cfg.batch_wait_max_tokens_ratio = row.batch_wait_max_tokens_ratio;
        }
        cfg.enable_chunked_prefill = options.tensorrt_llm_chunked_context;
        // TensorRT-LLM's max_num_tokens on every GPU (vLLM's default
        // budget, which the configuration starts from, is 2,048 on some).
        cfg.max_num_batched_tokens = super::config::DEFAULT_MAX_NUM_BATCHED_TOKENS;
    }
    if row.engine == ReferenceEngine::Sglang && options.sglang_scheduler == SchedulerPolicy::Sglang {
        cfg.scheduler = SchedulerPolicy::Sglang;
        cfg.scheduler_recv_interval = row.scheduler_recv_interval;
        if let Some(n) = row.max_prefill_tokens {
            cfg.max_prefill_tokens = n;
        }
        cfg.max_num_batched_tokens = super::sglang_default_chunk(&gpu);
    }
    // The benchmark's own limits, where the row gives them.
    if let Some(n) = row.max_num_seqs {
        cfg.max_num_seqs = Some(n);
    }
    if let Some(n) = row.max_num_batched_tokens {
        cfg.max_num_batched_tokens = n;
    }
    if let Some(f) = row.memory_fraction {
        cfg.gpu_memory_utilization = Some(f);
    }
    if let Some(kv) = row.kv_cache {
        cfg.kv_cache_dtype = kv;
    }
    Ok(cfg)
}

/// Predicts one row's metric. Several replicas (gpus / tp) serve a load
/// split evenly between them.
pub fn predict(row: &ReferenceRow, options: &ValidationOptions) -> Result<Prediction, Error> {
    let (run, replicas) = simulate_row(row, options)?;
    prediction(row, &run, replicas)
}

/// The engine run a row describes, and its number of replicas.
fn simulate_row(row: &ReferenceRow, options: &ValidationOptions) -> Result<(SimRun, u32), Error> {
    let bad = |message: String| Error::Csv { line: row.line, message };
    let cfg = row_config(row, options)?;
    cfg.validate()?;
    // GPUs one engine (a replica, or an expert-parallel group) takes, its
    // pipeline's stages each on GPUs of their own.
    let unit = row.tp * cfg.attention_ranks() * row.pp;
    if !row.gpus.is_multiple_of(unit) {
        let what = match (row.ep > 1, row.pp > 1) {
            (true, false) => "expert-parallel groups",
            (false, false) => "tensor-parallel groups",
            (_, true) => "pipelines",
        };
        return Err(bad(format!("{} GPUs is not a whole number of {what} of {unit}", row.gpus)));
    }
    let replicas = row.gpus / unit;
    let request = VirtualRequest::new(row.input_tokens, row.output_tokens);
    let mut rng = StdRng::seed_from_u64(LENGTHS_SEED);
    // A replica's share of a measured warm-up (sent first and left out, as
    // it was) and of a rate's or a burst's cap on requests in flight (the
    // parser takes each only on the loads it applies to).
    let warmup = (row.warmup / replicas) as usize;
    let cap = row.max_concurrency.map(|c| (c / replicas).max(1) as usize);
    // A measured run's multi-turn sessions: a replica's whole sessions,
    // sent as they were, and its share of the warm-up in sessions.
    let sessions = sessions_share(row, replicas);
    let load = match row.load {
        ReferenceLoad::MaxThroughput => {
            // What the benchmark sent, where the row says, a replica's share:
            // its throughput is over the whole run, the drain at the end
            // included. Else enough requests for about ten generations of a
            // full batch, so the drain weighs little (trtllm-bench uses
            // 1,000 to 30,000 for the same reason).
            let n = match row.requests {
                Some(sent) => (sent / replicas).max(1) as usize,
                None => {
                    let cap = kv_capacity(&cfg)?;
                    let per_request = (row.input_tokens + row.output_tokens) as u64;
                    let seqs = u64::from(cfg.group_max_num_seqs());
                    let batch = (cap.tokens() / per_request).clamp(1, seqs);
                    (10 * batch).clamp(1000, 30_000) as usize
                }
            };
            let mut load = VirtualLoad::burst(match (&sessions, &row.lengths) {
                (Some(s), _) => s.requests(row),
                (None, Some(_)) => row_requests(row, n, &mut rng),
                (None, None) => vec![request; n],
            });
            // A capped burst sends as requests end.
            load.plan.users = cap;
            load
        }
        ReferenceLoad::Concurrency(c) | ReferenceLoad::Batch(c) => {
            if c % replicas != 0 {
                return Err(bad(format!("concurrency {c} does not split evenly over {replicas} replicas")));
            }
            let users = c / replicas;
            let n = match row.requests {
                // What the benchmark sent, its share a replica; past
                // MAX_REQUESTS whole rounds of the users (with requests alike
                // and the users started together, the rounds repeat).
                Some(sent) if matches!(row.load, ReferenceLoad::Concurrency(_)) => {
                    let share = (sent / replicas) as usize;
                    let most = (MAX_REQUESTS / users).max(1) as usize * users as usize;
                    share.min(most).max(users as usize)
                }
                _ => match (row.load, options.requests_a_user) {
                    (ReferenceLoad::Concurrency(_), Some(a_user)) => {
                        a_user.clamp(1, REQUESTS_A_USER) as usize * users as usize
                    }
                    _ => (REQUESTS_A_USER as usize * users as usize).max(200),
                },
            };
            let mut load = match &sessions {
                Some(s) => {
                    let mut load = VirtualLoad::closed_loop(s.requests(row), users);
                    load.plan.warmup = s.warmup;
                    load
                }
                None => {
                    let mut load = VirtualLoad::closed_loop(row_requests(row, n + warmup, &mut rng), users);
                    load.plan.warmup = warmup as u64;
                    load
                }
            };
            if options.stagger && !row.together && matches!(row.load, ReferenceLoad::Concurrency(_)) {
                // A pilot of two requests a user gives the time one takes at
                // this load; the users join over it, and their first
                // requests (sent while others were still joining) are warm-up.
                let pilot_requests = row_requests(row, 2 * users as usize, &mut rng);
                let pilot = simulate(&cfg, &VirtualLoad::closed_loop(pilot_requests, users))?;
                let e2e: Vec<f64> = pilot.records.iter().filter_map(|r| r.e2e()).map(|d| d.as_secs_f64()).collect();
                let mean = e2e.iter().sum::<f64>() / e2e.len().max(1) as f64;
                load.plan.ramp_up = std::time::Duration::from_secs_f64(mean);
                load.plan.warmup = (users as u64).max(load.plan.warmup);
            }
            load
        }
        ReferenceLoad::Rate(per_s) => {
            let requests = row.requests.unwrap_or(0);
            let mut load = match &row.arrivals {
                // The measured run's own send times, and its requests, every
                // replicas-th (a replica's share, as round robin gives it):
                // of the warm-up, the share that came first.
                Some(times) => {
                    let (ours, warm): (Vec<usize>, u64) = match &sessions {
                        Some(s) => (s.indices.iter().copied().filter(|&i| i < times.len()).collect(), s.warmup),
                        None => {
                            let sent = (row.warmup as usize).saturating_add(requests as usize).min(times.len());
                            let warm = (row.warmup as usize).div_ceil(replicas as usize) as u64;
                            ((0..sent).step_by(replicas as usize).collect(), warm)
                        }
                    };
                    let arrivals = ours.iter().map(|&i| times[i]).collect();
                    // Its own lengths where it carries them (over again past
                    // their end), else the row's.
                    let requests = match row.lengths.as_deref().filter(|l| !l.is_empty()) {
                        Some(lengths) => ours.iter().map(|&i| lengths[i % lengths.len()]).collect(),
                        None => row_requests(row, ours.len(), &mut rng),
                    };
                    let mut load = VirtualLoad::open_loop(requests, arrivals);
                    if let Some(blocks) = &row.prefix_blocks {
                        load.prefix_blocks = ours.iter().map(|&i| blocks.get(i).cloned().flatten()).collect();
                    }
                    load.plan.warmup = warm;
                    load
                }
                // Poisson arrivals, the first at time zero, as
                // sglang.bench_serving and vllm bench serve send them
                // (exponential gaps of mean 1/rate), each replica an even
                // share of the requests and the rate.
                None => {
                    if !requests.is_multiple_of(replicas) {
                        return Err(bad(format!("{requests} requests do not split evenly over {replicas} replicas")));
                    }
                    let n = (requests / replicas) as usize + warmup;
                    let rate = per_s / replicas as f64;
                    let mut t = 0.0;
                    let arrivals = (0..n)
                        .map(|i| {
                            if i > 0 {
                                t += -(1.0 - rng.random::<f64>()).ln() / rate;
                            }
                            std::time::Duration::from_secs_f64(t)
                        })
                        .collect();
                    let mut load = VirtualLoad::open_loop(row_requests(row, n, &mut rng), arrivals);
                    load.plan.warmup = warmup as u64;
                    load
                }
            };
            // Arrivals past the cap wait for a request to end.
            load.plan.users = cap;
            load
        }
    };
    let run = simulate(&cfg, &load)?;
    // A request the engine refuses ends as a failed record and the run goes
    // on (as a server answers a 400); a reference row's benchmark had every
    // request served, so a refusal is the row's configuration at fault, not
    // a figure to compare.
    let refused: Vec<&goodput_core::RequestRecord> = run.records.iter().filter(|r| !r.outcome.is_success()).collect();
    if let Some(first) = refused.first() {
        let why = match &first.outcome {
            goodput_core::Outcome::Failed { message, .. } => message.as_str(),
            _ => "not served",
        };
        return Err(bad(format!(
            "{} of the row's {} requests were refused by the engine ({why}): the reference served them all",
            refused.len(),
            run.records.len()
        )));
    }
    Ok((run, replicas))
}

/// The seed of the lengths and arrival times drawn for a row, fixed so that
/// a check repeats exactly.
const LENGTHS_SEED: u64 = 0;

/// A replica's share of a measured run's multi-turn sessions.
struct SessionsShare {
    /// Its requests' places in the row's `lengths`: every `replicas`-th
    /// session, each whole, in order.
    indices: Vec<usize>,
    /// Its sessions sent as warm-up: those of its share that the run's
    /// warm-up (`warmup`, in requests: whole sessions, the first ones) held.
    warmup: u64,
}

impl SessionsShare {
    fn requests(&self, row: &ReferenceRow) -> Vec<VirtualRequest> {
        let lengths = row.lengths.as_deref().unwrap_or_default();
        self.indices.iter().map(|&i| lengths[i]).collect()
    }
}

/// Where the row's `lengths` hold turns of sessions (a measured run of
/// `--turns`), a replica's share of them: round robin gives each replica
/// whole sessions, every `replicas`-th.
fn sessions_share(row: &ReferenceRow, replicas: u32) -> Option<SessionsShare> {
    let lengths = row.lengths.as_deref().filter(|l| l.iter().any(|r| r.turn.is_some()))?;
    let (mut indices, mut warmup, mut session) = (Vec::new(), 0, 0usize);
    for (i, r) in lengths.iter().enumerate() {
        if i > 0 && !r.follows() {
            session += 1;
        }
        if session.is_multiple_of(replicas as usize) {
            if !r.follows() && i < row.warmup as usize {
                warmup += 1;
            }
            indices.push(i);
        }
    }
    Some(SessionsShare { indices, warmup })
}

/// `n` requests of the row's lengths: its measured run's own where it
/// carries them (`lengths`), else every one at `input_tokens` and
/// `output_tokens`, or, with a `range_ratio` r below 1, each length drawn as
/// `sglang.bench_serving --random-range-ratio r` draws it: uniformly from
/// [max(⌊r·N⌋, 1), N].
fn row_requests(row: &ReferenceRow, n: usize, rng: &mut StdRng) -> Vec<VirtualRequest> {
    if let Some(lengths) = row.lengths.as_deref().filter(|l| !l.is_empty()) {
        return lengths.iter().cycle().take(n).copied().collect();
    }
    if row.range_ratio >= 1.0 {
        return vec![VirtualRequest::new(row.input_tokens, row.output_tokens); n];
    }
    let mut draw = |len: u32| rng.random_range(((row.range_ratio * len as f64) as u32).max(1)..=len);
    (0..n)
        .map(|_| {
            let input = draw(row.input_tokens);
            VirtualRequest::new(input, draw(row.output_tokens))
        })
        .collect()
}

fn prediction(row: &ReferenceRow, run: &SimRun, replicas: u32) -> Result<Prediction, Error> {
    let predicted = match row.metric {
        // The replica's energy over its whole run, warm-up and idle time
        // included, over every token it generated: each replica's share
        // alike.
        Metric::JoulesPerOutputToken if run.engine.generation_tokens > 0 => {
            run.engine.energy_j / run.engine.generation_tokens as f64
        }
        Metric::JoulesPerOutputToken => {
            return Err(Error::Csv { line: row.line, message: "no output token was generated".into() })
        }
        // Each replica's cache alike.
        Metric::KvCacheTokens => run.engine.kv_capacity_tokens as f64 * f64::from(replicas),
        _ => metric_value(row, &run.records, replicas)?,
    };
    Ok(Prediction {
        row: row.clone(),
        predicted,
        rel_error: (predicted - row.value) / row.value,
        mean_batch_seqs: run.engine.mean_batch_seqs,
        preemptions: run.engine.preemptions,
        kv_capacity_tokens: run.engine.kv_capacity_tokens,
    })
}

fn metric_value(row: &ReferenceRow, all: &[goodput_core::RequestRecord], replicas: u32) -> Result<f64, Error> {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let measured: Vec<&goodput_core::RequestRecord> = all.iter().filter(|r| !r.warmup).collect();
    let records = &measured[..];
    let mut samples: Vec<f64> = match row.metric {
        Metric::OutputTokensPerS => {
            let first = records.iter().map(|r| r.sent).min().unwrap_or_default();
            let last = records.iter().map(|r| r.end).max().unwrap_or_default();
            let tokens: u64 = records.iter().map(|r| r.output_tokens).sum();
            let span = (last - first).as_secs_f64();
            return Ok(tokens as f64 / span * replicas as f64);
        }
        Metric::E2eMsMean => records.iter().filter_map(|r| r.e2e()).map(ms).collect(),
        Metric::TtftMsMean | Metric::TtftMsP50 => records.iter().filter_map(|r| r.ttft()).map(ms).collect(),
        Metric::TpotMsMean | Metric::TpotMsP50 => records.iter().filter_map(|r| r.tpot()).map(ms).collect(),
        Metric::ItlMsP50 => records.iter().flat_map(|r| r.itl_samples()).map(ms).collect(),
        // Set from the run's energy and cache (`prediction`).
        Metric::JoulesPerOutputToken | Metric::KvCacheTokens => Vec::new(),
    };
    if samples.is_empty() {
        return Err(Error::Csv {
            line: row.line,
            message: format!("{} is undefined for this load", row.metric.as_str()),
        });
    }
    let value = match row.metric {
        Metric::TtftMsP50 | Metric::TpotMsP50 | Metric::ItlMsP50 => {
            samples.sort_by(f64::total_cmp);
            percentile(&samples, 50.0).unwrap_or(f64::NAN)
        }
        _ => samples.iter().sum::<f64>() / samples.len() as f64,
    };
    Ok(value)
}

/// Predicts every row and summarises the errors.
/// Rows that describe the same run (a table's TTFT, ITL and throughput at
/// one point) share one simulation.
pub fn validate(rows: &[ReferenceRow], options: &ValidationOptions) -> Result<ValidationReport, Error> {
    // Everything that shapes the run: rows that differ only in their metric
    // share one. A run is kept until its last row is predicted, and no
    // longer: its records hold every token's time, and keeping them all had
    // taken 13 GB for trtllm-overview.csv.
    let keys: Vec<String> = rows.iter().map(ReferenceRow::run_key).collect();
    let mut rows_left: HashMap<&str, usize> = HashMap::new();
    for key in &keys {
        *rows_left.entry(key.as_str()).or_default() += 1;
    }
    let mut runs: HashMap<String, (SimRun, u32)> = HashMap::new();
    let mut predictions = Vec::with_capacity(rows.len());
    for (row, key) in rows.iter().zip(&keys) {
        if !runs.contains_key(key) {
            // An engine that cannot run the row (an unknown model, a TP that
            // does not divide its heads) is named with the row's line.
            let run = simulate_row(row, options).map_err(|e| match e {
                Error::Csv { .. } => e,
                other => Error::Csv { line: row.line, message: format!("row {}: {other}", row.id) },
            })?;
            runs.insert(key.clone(), run);
        }
        let (run, replicas) = &runs[key];
        predictions.push(prediction(row, run, *replicas)?);
        let left = rows_left.get_mut(key.as_str()).expect("every key was counted");
        *left -= 1;
        if *left == 0 {
            runs.remove(key);
        }
    }
    let mut abs: Vec<f64> = predictions.iter().map(|p| p.rel_error.abs()).collect();
    abs.sort_by(f64::total_cmp);
    Ok(ValidationReport { median_abs_rel_error: percentile(&abs, 50.0), predictions })
}

impl ValidationReport {
    /// A Markdown table of the rows, then the median absolute error.
    pub fn to_markdown(&self) -> String {
        let mut s = String::from(
            "| id | engine | metric | reference | predicted | error | mean batch | preemptions | KV tokens |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|\n",
        );
        for p in &self.predictions {
            let engine = match p.row.engine {
                ReferenceEngine::Vllm => "vllm",
                ReferenceEngine::Sglang => "sglang",
                ReferenceEngine::TensorRtLlm => "tensorrt-llm",
            };
            // A fraction of a joule keeps its figures.
            let predicted = match p.row.metric {
                Metric::JoulesPerOutputToken => format!("{:.3}", p.predicted),
                Metric::KvCacheTokens => format!("{}", p.predicted.round()),
                _ => format!("{:.0}", p.predicted),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} {} | {predicted} | {:+.1} % | {:.0} | {} | {} |",
                p.row.id,
                engine,
                p.row.metric.as_str(),
                p.row.value,
                p.row.metric.unit(),
                p.rel_error * 100.0,
                p.mean_batch_seqs,
                p.preemptions,
                p.kv_capacity_tokens
            );
        }
        if let Some(m) = self.median_abs_rel_error {
            let _ = writeln!(s, "\nmedian |error|: {:.1} %", m * 100.0);
        }
        s.push_str(&self.closed_loop_markdown(SUMMARY_MIN_USERS));
        s.push_str(&self.open_loop_markdown());
        s
    }

    /// Median |error| per metric over the closed-loop rows of at least
    /// `min_users` users, per set (calibration, held-out, or neither) and
    /// with the queueing rows apart.
    pub fn closed_loop_summary(&self, min_users: u32) -> Vec<SummaryCell> {
        self.summary(|row| matches!(row.load, ReferenceLoad::Concurrency(c) if c >= min_users))
    }

    /// The same over the open-loop (`rate`) rows.
    pub fn open_loop_summary(&self) -> Vec<SummaryCell> {
        self.summary(|row| matches!(row.load, ReferenceLoad::Rate(_)))
    }

    fn summary(&self, keep: impl Fn(&ReferenceRow) -> bool) -> Vec<SummaryCell> {
        let mut groups: BTreeMap<(bool, Option<Split>, usize), Vec<f64>> = BTreeMap::new();
        for p in &self.predictions {
            if !keep(&p.row) {
                continue;
            }
            let m = Metric::ALL.iter().position(|&m| m == p.row.metric).unwrap_or(0);
            groups.entry((p.row.queueing, p.row.split, m)).or_default().push(p.rel_error.abs());
        }
        groups
            .into_iter()
            .map(|((queueing, split, m), mut errors)| {
                errors.sort_by(f64::total_cmp);
                SummaryCell {
                    split,
                    queueing,
                    metric: Metric::ALL[m],
                    rows: errors.len(),
                    median_abs_rel_error: percentile(&errors, 50.0).unwrap_or(f64::NAN),
                }
            })
            .collect()
    }

    /// [`closed_loop_summary`](Self::closed_loop_summary) as a Markdown
    /// table, a line per set and a column per metric; empty without
    /// closed-loop rows.
    pub fn closed_loop_markdown(&self, min_users: u32) -> String {
        summary_markdown(&self.closed_loop_summary(min_users), &format!("closed loops of {min_users} users or more"))
    }

    /// [`open_loop_summary`](Self::open_loop_summary) as a Markdown table;
    /// empty without `rate` rows.
    pub fn open_loop_markdown(&self) -> String {
        summary_markdown(&self.open_loop_summary(), "open loops (rate rows)")
    }
}

/// Summary cells as a Markdown table, a line per set and a column per
/// metric, under `title`; empty without cells.
fn summary_markdown(cells: &[SummaryCell], title: &str) -> String {
    if cells.is_empty() {
        return String::new();
    }
    let metrics: Vec<Metric> = Metric::ALL.into_iter().filter(|m| cells.iter().any(|c| c.metric == *m)).collect();
    let mut s = format!("\n{title}, median |error| (rows):\n\n| set |");
    for m in &metrics {
        let _ = write!(s, " {} |", m.as_str());
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(metrics.len()));
    s.push('\n');
    let mut sets: Vec<(bool, Option<Split>)> = cells.iter().map(|c| (c.queueing, c.split)).collect();
    sets.dedup();
    for (queueing, split) in sets {
        let name = split.map_or("no split", Split::as_str);
        let _ = write!(s, "| {name}{} |", if queueing { ", queueing" } else { "" });
        for m in &metrics {
            match cells.iter().find(|c| c.queueing == queueing && c.split == split && c.metric == *m) {
                Some(c) => {
                    let _ = write!(s, " {:.1} % ({}) |", c.median_abs_rel_error * 100.0, c.rows);
                }
                None => s.push_str(" |"),
            }
        }
        s.push('\n');
    }
    s
}

/// The fewest users a closed-loop row needs to count in the summary: at one
/// user nothing overlaps, and the question is how requests interleave.
pub const SUMMARY_MIN_USERS: u32 = 5;

/// One metric's median |error| over one set of rows (closed or open loops).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryCell {
    pub split: Option<Split>,
    pub queueing: bool,
    pub metric: Metric,
    pub rows: usize,
    pub median_abs_rel_error: f64,
}

/// How a glance line's reference rows were loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LoadClass {
    /// Every request sent at once, throughput over the run (trtllm-bench's
    /// saturation, a served burst).
    AllAtOnce,
    /// Closed loops of fewer than [`SUMMARY_MIN_USERS`] users.
    FewUsers,
    /// Closed loops of [`SUMMARY_MIN_USERS`] users or more: the load the
    /// issue's TTFT target is set on.
    ManyUsers,
    /// A batch sent together, again and again (vLLM's latency benchmark).
    Batches,
    /// An open loop at a rate.
    Rate,
}

impl LoadClass {
    pub fn of(load: ReferenceLoad) -> LoadClass {
        match load {
            ReferenceLoad::MaxThroughput => LoadClass::AllAtOnce,
            ReferenceLoad::Concurrency(c) if c < SUMMARY_MIN_USERS => LoadClass::FewUsers,
            ReferenceLoad::Concurrency(_) => LoadClass::ManyUsers,
            ReferenceLoad::Batch(_) => LoadClass::Batches,
            ReferenceLoad::Rate(_) => LoadClass::Rate,
        }
    }

    /// The load as the glance's table names it.
    pub fn label(self) -> String {
        match self {
            LoadClass::AllAtOnce => "all at once".into(),
            LoadClass::FewUsers => format!("1–{} users", SUMMARY_MIN_USERS - 1),
            LoadClass::ManyUsers => format!("{SUMMARY_MIN_USERS}+ users"),
            LoadClass::Batches => "batches".into(),
            LoadClass::Rate => "open loop".into(),
        }
    }
}

/// The metrics a glance groups: TTFT (mean or median), the time between
/// tokens (TPOT's mean or median, the median ITL), output throughput and
/// mean end-to-end latency.
pub const GLANCE_METRICS: [&str; 6] = ["TTFT", "ITL / TPOT", "output tok/s", "E2E", "J / token", "KV tokens"];

fn glance_column(metric: Metric) -> usize {
    match metric {
        Metric::TtftMsMean | Metric::TtftMsP50 => 0,
        Metric::TpotMsMean | Metric::TpotMsP50 | Metric::ItlMsP50 => 1,
        Metric::OutputTokensPerS => 2,
        Metric::E2eMsMean => 3,
        Metric::JoulesPerOutputToken => 4,
        Metric::KvCacheTokens => 5,
    }
}

/// One metric's errors over a glance line's rows, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GlanceCell {
    pub rows: usize,
    /// The median of |predicted − reference| / reference.
    pub median_abs_pct: f64,
    /// The median of the signed error: above 0, the engine's figure is the
    /// larger (faster for throughput, slower for a latency).
    pub median_signed_pct: f64,
}

/// A file's rows of one split, load and queueing, a cell per metric group
/// ([`GLANCE_METRICS`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GlanceLine {
    pub split: Option<Split>,
    pub load: LoadClass,
    pub queueing: bool,
    pub cells: [Option<GlanceCell>; 6],
}

impl ValidationReport {
    /// The report in a few lines: its rows grouped by split, load and
    /// queueing, each metric group's median |error| and signed median.
    pub fn glance(&self) -> Vec<GlanceLine> {
        let mut groups: BTreeMap<(Option<Split>, LoadClass, bool), [Vec<f64>; 6]> = BTreeMap::new();
        for p in &self.predictions {
            let key = (p.row.split, LoadClass::of(p.row.load), p.row.queueing);
            groups.entry(key).or_default()[glance_column(p.row.metric)].push(p.rel_error * 100.0);
        }
        groups
            .into_iter()
            .map(|((split, load, queueing), errors)| GlanceLine {
                split,
                load,
                queueing,
                cells: errors.map(|mut signed| {
                    let mut abs: Vec<f64> = signed.iter().map(|e| e.abs()).collect();
                    Some(GlanceCell {
                        rows: signed.len(),
                        median_abs_pct: percentile_of(&mut abs, 50.0)?,
                        median_signed_pct: percentile_of(&mut signed, 50.0)?,
                    })
                }),
            })
            .collect()
    }

    /// [`glance`](Self::glance) under a heading, as one file's table:
    /// what `estimate --validate` and the `validate` example end with.
    pub fn glance_section(&self, file: &str) -> String {
        format!(
            "\nat a glance, median |error| (signed median, rows):\n\n{}",
            glance_markdown(&[(file.to_string(), self.glance())])
        )
    }
}

/// The repository's reference files (data/validation), in the order
/// docs/simulator.md's "Accuracy at a glance" lists them: the calibration
/// set, the closed and open loops under load, TensorRT-LLM's tables, the
/// served runs, and the MI300X's (CDNA3's calibration and its checks).
pub const GLANCE_FILES: [&str; 25] = [
    "public.csv",
    "nim-closed-loop.csv",
    "nim-dli-closed-loop.csv",
    "sglang-open-loop.csv",
    "trtllm-overview.csv",
    "trtllm-overview-1.2.csv",
    "trtllm-llama4-1.0.csv",
    "trtllm-maverick.csv",
    "trtllm-gpt-oss.csv",
    "trtllm-deepseek.csv",
    "trtllm-rtx-pro-6000.csv",
    "gpustack-hopper.csv",
    "gpustack-h100-latency.csv",
    "gpustack-a100.csv",
    "served-b200.csv",
    "oci-mi300x.csv",
    "amd-mi300x.csv",
    "amd-mi300x-releases.csv",
    "inferencemax-cdna3.csv",
    "inferencemax-hopper.csv",
    "inferencemax-blackwell.csv",
    "inferencemax-cdna4.csv",
    "inferencemax-trtllm.csv",
    "inferencemax-gptoss.csv",
    "inferencemax-dsr1.csv",
];

/// Each named set of rows validated and glanced at, in the order given,
/// the sets shared out over the cores (a set is one thread's).
pub fn glance_sets(
    sets: &[(String, Vec<ReferenceRow>)],
    options: &ValidationOptions,
) -> Result<Vec<(String, Vec<GlanceLine>)>, Error> {
    let glances = in_parallel(sets, |(name, rows)| {
        // A row that cannot run is named with its set.
        validate(rows, options).map(|r| r.glance()).map_err(|e| match e {
            Error::Csv { line, message } => Error::Csv { line, message: format!("{message} (in {name})") },
            other => other,
        })
    });
    sets.iter().zip(glances).map(|((name, _), glance)| Ok((name.clone(), glance?))).collect()
}

/// `f` of each item, in the items' order, the items taken in turn by as
/// many threads as there are cores (fewer where there are fewer items).
pub(crate) fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            for (i, r) in worker.join().expect("a worker thread panicked") {
                results[i] = Some(r);
            }
        }
    });
    results.into_iter().map(|r| r.expect("every item was taken")).collect()
}

/// What each named set of rows covers, as a Markdown table: its rows, and
/// the engines, GPUs, models and precisions they name (the catalog's names
/// for the GPUs and models), each list sorted and without repeats.
pub fn coverage_markdown(sets: &[(String, Vec<ReferenceRow>)]) -> String {
    let mut s = String::from("| file | rows | engines | GPUs | models | precisions |\n|---|---:|---|---|---|---|\n");
    for (name, rows) in sets {
        let list = |f: &dyn Fn(&ReferenceRow) -> String| {
            let mut v: Vec<String> = rows.iter().map(f).collect();
            v.sort();
            v.dedup();
            v.join(", ")
        };
        let engine = |r: &ReferenceRow| {
            match r.engine {
                ReferenceEngine::Vllm => "vLLM",
                ReferenceEngine::Sglang => "SGLang",
                ReferenceEngine::TensorRtLlm => "TensorRT-LLM",
            }
            .to_string()
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} | {} |",
            rows.len(),
            list(&engine),
            list(&|r| GpuSpec::lookup(&r.gpu).map_or_else(|_| r.gpu.clone(), |g| g.name.clone())),
            list(&|r| ModelSpec::lookup(&r.model).map_or_else(|_| r.model.clone(), |m| m.name.clone())),
            list(&|r| r.precision.to_string()),
        );
    }
    s
}

/// Glances at several files as one Markdown table, a line per file's split,
/// load and queueing: `17.1 % (+3.0, 488)` is a median |error| of 17.1 %,
/// a signed median of +3.0 % and 488 rows.
pub fn glance_markdown(files: &[(String, Vec<GlanceLine>)]) -> String {
    // The energy's and the cache's columns only where a row measured them
    // (a run whose GPUs' energy counters, or whose server's cache size, were
    // read): no public table gives them.
    let lines = || files.iter().flat_map(|(_, lines)| lines);
    let columns: Vec<usize> =
        (0..GLANCE_METRICS.len()).filter(|&i| i < 4 || lines().any(|l| l.cells[i].is_some())).collect();
    let mut s = String::from("| file | split | load |");
    for &i in &columns {
        let _ = write!(s, " {} |", GLANCE_METRICS[i]);
    }
    s.push_str("\n|---|---|---|");
    s.push_str(&"---:|".repeat(columns.len()));
    s.push('\n');
    for (file, lines) in files {
        for line in lines {
            let split = line.split.map_or("—", Split::as_str);
            let queueing = if line.queueing { ", queueing" } else { "" };
            let _ = write!(s, "| {file} | {split} | {}{queueing} |", line.load.label());
            for cell in columns.iter().map(|&i| &line.cells[i]) {
                match cell {
                    Some(c) => {
                        // Rounded first, so that a small negative median
                        // reads +0.0, not -0.0.
                        let signed = (c.median_signed_pct * 10.0).round() / 10.0 + 0.0;
                        let _ = write!(s, " {:.1} % ({signed:+.1}, {}) |", c.median_abs_pct, c.rows);
                    }
                    None => s.push_str(" |"),
                }
            }
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source
# a comment
a,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,e2e_ms_mean,150,ms,\"CI, build 1\"
b,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,128,128,max_throughput,,output_tokens_per_s,28312,tok/s,docs
";

    #[test]
    fn parses_the_public_format_with_quotes_and_comments() {
        let rows = parse_csv(SAMPLE).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].source, "CI, build 1");
        assert_eq!(rows[0].load, ReferenceLoad::Concurrency(2));
        assert_eq!(rows[0].line, 3);
        assert_eq!(rows[1].load, ReferenceLoad::MaxThroughput);
        assert_eq!(rows[1].engine, ReferenceEngine::TensorRtLlm);
        assert_eq!(rows[1].precision, Precision::Fp8);
    }

    #[test]
    fn bad_rows_name_their_line_and_problem() {
        let header = SAMPLE.lines().next().unwrap();
        let cases = [
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,open,2,e2e_ms_mean,1,ms,s", "load_kind"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,e2e_ms_mean,1,s,s", "measured in ms"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,0,16,concurrency,2,e2e_ms_mean,1,ms,s", "input_tokens"),
            ("x,llama-3.1-8b,h200,1,1,bf16,tgi,32,16,concurrency,2,e2e_ms_mean,1,ms,s", "engine"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,p99,1,ms,s", "metric"),
            ("x,llama-3.1-8b,h200,1", "fields"),
            // A billion users had aborted, allocating for their requests.
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,1000000000,e2e_ms_mean,1,ms,s", "from 1 to 4000"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,batch,4001,e2e_ms_mean,1,ms,s", "users"),
        ];
        for (row, needle) in cases {
            let err = parse_csv(&format!("{header}\n{row}\n")).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("line 2") && text.contains(needle), "{row}: {text}");
        }
        assert!(parse_csv("id,model\n").unwrap_err().to_string().contains("gpu"));
        let empty = parse_csv(&format!("{header}\n\n")).unwrap_err().to_string();
        assert!(empty.contains("line 1") && empty.contains("no rows"), "{empty}");
        // A spreadsheet's byte-order mark is not part of the first column's name.
        let row = "x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,e2e_ms_mean,1,ms,s";
        assert_eq!(parse_csv(&format!("\u{feff}{header}\n{row}\n")).unwrap().len(), 1);
        // An engine that cannot run a row names its line.
        let rows = parse_csv(&format!("{header}\n{}\n", row.replace("llama-3.1-8b", "no-such-model"))).unwrap();
        let e = validate(&rows, &ValidationOptions::default()).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("no-such-model"), "{e}");
    }

    /// The `mixed` column: `no` runs the row's engine with prompts and
    /// decodes in separate steps, `yes` or nothing mixes them, and the
    /// validator's option overrides it.
    #[test]
    fn the_mixed_column_sets_the_rows_steps() {
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,mixed,metric,value,unit,source
a,llama-3.1-8b,h100-sxm,1,1,bf16,sglang,32,16,concurrency,2,no,e2e_ms_mean,150,ms,s
b,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,32,16,concurrency,2,yes,e2e_ms_mean,150,ms,s
c,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,32,16,concurrency,2,,e2e_ms_mean,150,ms,s
";
        let rows = parse_csv(text).unwrap();
        assert_eq!(rows.iter().map(|r| r.mixed_batches).collect::<Vec<_>>(), [false, true, true]);
        let options = ValidationOptions::default();
        assert!(!row_config(&rows[0], &options).unwrap().mixed_batches);
        assert!(row_config(&rows[1], &options).unwrap().mixed_batches);
        let all_mixed = ValidationOptions { mixed_batches: Some(true), ..ValidationOptions::default() };
        assert!(row_config(&rows[0], &all_mixed).unwrap().mixed_batches);
        let err = parse_csv(&text.replace(",no,", ",sometimes,")).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("`mixed` must be yes or no"), "{err}");
    }

    /// The `async_scheduling` column: `yes` runs the row's engine a step
    /// ahead, `no` or nothing does not, and the validator's option
    /// overrides it; its TTFT under load is the longer.
    #[test]
    fn the_async_scheduling_column_schedules_the_rows_steps_ahead() {
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,async_scheduling,metric,value,unit,source
a,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,concurrency,16,yes,ttft_ms_mean,50,ms,s
b,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,concurrency,16,no,ttft_ms_mean,50,ms,s
c,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,concurrency,16,,ttft_ms_mean,50,ms,s
";
        let rows = parse_csv(text).unwrap();
        assert_eq!(rows.iter().map(|r| r.async_scheduling).collect::<Vec<_>>(), [true, false, false]);
        let options = ValidationOptions::default();
        assert!(row_config(&rows[0], &options).unwrap().async_scheduling);
        assert!(!row_config(&rows[2], &options).unwrap().async_scheduling);
        let none = ValidationOptions { async_scheduling: Some(false), ..ValidationOptions::default() };
        assert!(!row_config(&rows[0], &none).unwrap().async_scheduling);
        let report = validate(&rows[..2], &options).unwrap();
        let (ahead, not) = (report.predictions[0].predicted, report.predictions[1].predicted);
        assert!(ahead > not, "TTFT {ahead} ms a step ahead, {not} ms not");
        let err = parse_csv(&text.replace(",yes,", ",maybe,")).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("`async_scheduling` must be yes or no"), "{err}");
    }

    /// The `scheduler_recv_interval` column: an sglang row's engine takes
    /// SGLang's receive interval, 1 where absent; another's refuses it.
    #[test]
    fn the_scheduler_recv_interval_column_is_sglang_s() {
        let options = ValidationOptions::default();
        let recv = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,scheduler_recv_interval,metric,value,unit,source
a,llama-3.1-8b,h100,1,1,bf16,sglang,512,128,concurrency,8,30,ttft_ms_mean,1,ms,x
b,llama-3.1-8b,h100,1,1,bf16,sglang,512,128,concurrency,8,,ttft_ms_mean,1,ms,x
";
        let rows = parse_csv(recv).unwrap();
        assert_eq!(rows.iter().map(|r| r.scheduler_recv_interval).collect::<Vec<_>>(), [30, 1]);
        assert_eq!(row_config(&rows[0], &options).unwrap().scheduler_recv_interval, 30);
        let vllm = recv.replace("sglang,512,128,concurrency,8,30", "vllm,512,128,concurrency,8,30");
        let err = parse_csv(&vllm).unwrap_err().to_string();
        assert!(err.contains("`scheduler_recv_interval` is SGLang's"), "{err}");
    }

    /// The batch-waiting columns: a tensorrt-llm row's engine takes
    /// TensorRT-LLM's two settings, 0 where absent; another's refuses them.
    #[test]
    fn the_batch_waiting_columns_are_tensorrt_llm_s() {
        let options = ValidationOptions::default();
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,batch_wait_timeout_iters,batch_wait_max_tokens_ratio,metric,value,unit,source
a,llama-3.1-8b,h100,1,1,fp8,tensorrt-llm,512,128,concurrency,8,20,0.9,ttft_ms_mean,1,ms,x
b,llama-3.1-8b,h100,1,1,fp8,tensorrt-llm,512,128,concurrency,8,,,ttft_ms_mean,1,ms,x
";
        let rows = parse_csv(text).unwrap();
        let set: Vec<(u32, f64)> = rows
            .iter()
            .map(|r| row_config(r, &options).unwrap())
            .map(|c| (c.batch_wait_timeout_iters, c.batch_wait_max_tokens_ratio))
            .collect();
        assert_eq!(set, [(20, 0.9), (0, 0.0)]);
        let vllm = text.replace("tensorrt-llm,512,128,concurrency,8,20", "vllm,512,128,concurrency,8,20");
        let err = parse_csv(&vllm).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("are TensorRT-LLM's"), "{err}");
        let err = parse_csv(&text.replace(",20,0.9,", ",20,1.5,")).unwrap_err().to_string();
        assert!(err.contains("`batch_wait_max_tokens_ratio` must be a share from 0 to 1"), "{err}");
    }

    /// The `max_prefill_tokens` column: an sglang row's engine takes
    /// SGLang's cap on a step's prompt tokens, its default where absent;
    /// another's refuses it.
    #[test]
    fn the_max_prefill_tokens_column_is_sglang_s() {
        let options = ValidationOptions::default();
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,max_prefill_tokens,metric,value,unit,source
a,llama-3.1-8b,h100,1,1,bf16,sglang,512,128,concurrency,8,196608,ttft_ms_mean,1,ms,x
b,llama-3.1-8b,h100,1,1,bf16,sglang,512,128,concurrency,8,,ttft_ms_mean,1,ms,x
";
        let rows = parse_csv(text).unwrap();
        let caps: Vec<u32> = rows.iter().map(|r| row_config(r, &options).unwrap().max_prefill_tokens).collect();
        assert_eq!(caps, [196_608, crate::engine::SGLANG_MAX_PREFILL_TOKENS]);
        let vllm = text.replace("sglang,512,128,concurrency,8,196608", "vllm,512,128,concurrency,8,196608");
        let err = parse_csv(&vllm).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("`max_prefill_tokens` is SGLang's"), "{err}");
        let err = parse_csv(&text.replace(",196608,", ",0,")).unwrap_err().to_string();
        assert!(err.contains("`max_prefill_tokens` must be a positive integer"), "{err}");
    }

    /// The `mxfp4_activations` column: an mxfp4 row's engine takes what
    /// its experts multiplied against, the GPU's default where absent;
    /// another precision's row refuses it.
    #[test]
    fn the_mxfp4_activations_column_names_the_experts_kernels() {
        use crate::engine::Mxfp4Activations;
        let options = ValidationOptions::default();
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,mxfp4_activations,metric,value,unit,source
a,gpt-oss-120b,mi355x,1,1,mxfp4,vllm,1024,1024,concurrency,8,bf16,ttft_ms_mean,1,ms,x
b,gpt-oss-120b,mi355x,1,1,mxfp4,vllm,1024,1024,concurrency,8,,ttft_ms_mean,1,ms,x
c,gpt-oss-120b,b200,1,1,mxfp4,vllm,1024,1024,concurrency,8,fp8,ttft_ms_mean,1,ms,x
";
        let rows = parse_csv(text).unwrap();
        let set: Vec<(Option<Mxfp4Activations>, bool)> = rows
            .iter()
            .map(|r| row_config(r, &options).unwrap())
            .map(|c| (c.mxfp4_activations, c.mxfp4_w4a16()))
            .collect();
        // An empty cell: vLLM's own default, 16-bit on FP4 cores too.
        assert_eq!(set, [(Some(Mxfp4Activations::Bf16), true), (None, true), (Some(Mxfp4Activations::Fp8), false)]);
        // `--mxfp4-activations gpu`: every row on its GPU's kernels, as
        // before the column: FP8 activations on FP4 cores, whatever the
        // engine's own default.
        let gpu = ValidationOptions { mxfp4_activations_column: false, ..ValidationOptions::default() };
        let kinds: Vec<_> = rows.iter().map(|r| row_config(r, &gpu).unwrap().mxfp4_activations).collect();
        assert_eq!(kinds, [Some(Mxfp4Activations::Fp8); 3]);
        let err = parse_csv(&text.replace(",8,bf16,", ",8,int4,")).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("`mxfp4_activations`: unknown MXFP4 activations"), "{err}");
        let fp8 = text.replace(
            "gpt-oss-120b,mi355x,1,1,mxfp4,vllm,1024,1024,concurrency,8,bf16",
            "gpt-oss-120b,mi355x,1,1,fp8,vllm,1024,1024,concurrency,8,bf16",
        );
        let err = parse_csv(&fp8).unwrap_err().to_string();
        assert!(err.contains("is for `mxfp4` rows"), "{err}");
    }

    #[test]
    fn predicts_a_small_closed_loop_row_and_reports_its_error() {
        let rows = parse_csv(SAMPLE).unwrap();
        let report = validate(&rows[..1], &ValidationOptions::default()).unwrap();
        let p = &report.predictions[0];
        assert!(p.predicted > 50.0 && p.predicted < 500.0, "{}", p.predicted);
        assert_eq!(p.rel_error, (p.predicted - 150.0) / 150.0);
        assert_eq!(report.median_abs_rel_error, Some(p.rel_error.abs()));
        assert!(report.to_markdown().contains("| a | vllm | e2e_ms_mean | 150 ms |"));
    }

    #[test]
    fn splits_and_queueing_are_read_and_summarised_apart() {
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,split,queueing,source
t,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,8,ttft_ms_mean,20,ms,calibration,no,s
i,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,8,tpot_ms_mean,5,ms,calibration,,s
h,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,8,ttft_ms_mean,20,ms,held-out,yes,s
o,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,1,ttft_ms_mean,20,ms,held-out,no,s
";
        let rows = parse_csv(text).unwrap();
        assert_eq!(rows[0].split, Some(Split::Calibration));
        assert!(!rows[0].queueing && !rows[1].queueing && rows[2].queueing);
        assert_eq!(parse_csv(SAMPLE).unwrap()[0].split, None);
        let bad = text.replace("held-out,yes", "holdout,yes");
        assert!(parse_csv(&bad).unwrap_err().to_string().contains("line 4"));
        let bad = text.replace("held-out,yes", "held-out,maybe");
        assert!(parse_csv(&bad).unwrap_err().to_string().contains("queueing"));

        let report = validate(&rows, &ValidationOptions::default()).unwrap();
        // The three rows at 8 users share one run: the same engine view.
        assert_eq!(report.predictions[0].mean_batch_seqs, report.predictions[2].mean_batch_seqs);
        let cells = report.closed_loop_summary(SUMMARY_MIN_USERS);
        // One user is left out; queueing rows are apart.
        assert_eq!(cells.len(), 3, "{cells:?}");
        assert!(cells.iter().all(|c| c.rows == 1));
        let held = cells.iter().find(|c| c.split == Some(Split::HeldOut)).unwrap();
        assert!(held.queueing && held.metric == Metric::TtftMsMean);
        let md = report.to_markdown();
        assert!(md.contains("| calibration |") && md.contains("| held-out, queueing |"), "{md}");
        assert!(!md.contains("no split"), "{md}");
    }

    #[test]
    fn a_glance_groups_rows_by_split_load_and_metric_with_signed_medians() {
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,split,queueing,source,requests
a,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,8,ttft_ms_mean,100,ms,held-out,no,s,
b,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,16,ttft_ms_p50,100,ms,held-out,no,s,
c,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,25,ttft_ms_mean,100,ms,held-out,no,s,
d,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,8,tpot_ms_mean,10,ms,held-out,no,s,
e,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,8,itl_ms_p50,10,ms,held-out,no,s,
f,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,2,ttft_ms_mean,100,ms,held-out,no,s,
g,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,concurrency,250,ttft_ms_mean,100,ms,held-out,yes,s,
h,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,max_throughput,,output_tokens_per_s,100,tok/s,calibration,no,s,
i,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,32,rate,2,e2e_ms_mean,100,ms,,no,s,100
";
        let rows = parse_csv(text).unwrap();
        // Errors set by hand: three TTFTs at 5 users or more, −60, +10 and
        // +30 %; two inter-token rows, −20 and −10 %.
        let errors = [-0.6, 0.1, 0.3, -0.2, -0.1, 0.05, 2.0, 0.25, -0.4];
        let predictions = rows
            .iter()
            .zip(errors)
            .map(|(row, e)| Prediction {
                row: row.clone(),
                predicted: row.value * (1.0 + e),
                rel_error: e,
                mean_batch_seqs: 1.0,
                preemptions: 0,
                kv_capacity_tokens: 1,
            })
            .collect();
        let report = ValidationReport { predictions, median_abs_rel_error: None };
        let lines = report.glance();
        let find = |split, load, queueing| {
            lines.iter().find(|l| l.split == split && l.load == load && l.queueing == queueing).unwrap()
        };
        let many = find(Some(Split::HeldOut), LoadClass::ManyUsers, false);
        let ttft = many.cells[0].unwrap();
        // Mean and median TTFTs share a column; |−60|, 10, 30 → 30, signed +10.
        assert_eq!((ttft.rows, ttft.median_abs_pct, ttft.median_signed_pct), (3, 30.0, 10.0));
        let itl = many.cells[1].unwrap();
        assert_eq!(itl.rows, 2);
        assert!((itl.median_abs_pct - 15.0).abs() < 1e-9 && (itl.median_signed_pct + 15.0).abs() < 1e-9, "{itl:?}");
        assert!(many.cells[2].is_none() && many.cells[3].is_none());
        // Two users, the queueing row, the saturation row and the open loop
        // each stand apart.
        assert_eq!(find(Some(Split::HeldOut), LoadClass::FewUsers, false).cells[0].unwrap().rows, 1);
        assert_eq!(find(Some(Split::HeldOut), LoadClass::ManyUsers, true).cells[0].unwrap().median_signed_pct, 200.0);
        assert_eq!(find(Some(Split::Calibration), LoadClass::AllAtOnce, false).cells[2].unwrap().median_abs_pct, 25.0);
        assert_eq!(find(None, LoadClass::Rate, false).cells[3].unwrap().median_signed_pct, -40.0);
        assert_eq!(lines.len(), 5);
        let md = glance_markdown(&[("x.csv".into(), lines)]);
        assert!(md.starts_with("| file | split | load | TTFT | ITL / TPOT | output tok/s | E2E |\n"), "{md}");
        assert!(md.contains("| x.csv | held-out | 5+ users | 30.0 % (+10.0, 3) | 15.0 % (-15.0, 2) | | |"), "{md}");
        assert!(md.contains("| x.csv | held-out | 5+ users, queueing | 200.0 % (+200.0, 1) |"), "{md}");
        assert!(md.contains("| x.csv | — | open loop | | | | 40.0 % (-40.0, 1) |"), "{md}");
        assert!(md.contains("| x.csv | held-out | 1–4 users |"), "{md}");
        // A median a hair below zero reads as none.
        let tiny = GlanceLine {
            cells: [
                Some(GlanceCell { rows: 2, median_abs_pct: 0.01, median_signed_pct: -0.01 }),
                None,
                None,
                None,
                None,
                None,
            ],
            ..lines_first(&report)
        };
        let md = glance_markdown(&[("y.csv".into(), vec![tiny])]);
        assert!(md.contains(" 0.0 % (+0.0, 2) |"), "{md}");
    }

    #[test]
    fn glancing_at_sets_keeps_their_order_and_names_a_failing_one() {
        let header = SAMPLE.lines().next().unwrap();
        let row = "a,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,64,8,max_throughput,,output_tokens_per_s,100,tok/s,s";
        let good = parse_csv(&format!("{header}\n{row}\n")).unwrap();
        let sets: Vec<(String, Vec<ReferenceRow>)> = (0..5).map(|i| (format!("s{i}.csv"), good.clone())).collect();
        let got = glance_sets(&sets, &ValidationOptions::default()).unwrap();
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["s0.csv", "s1.csv", "s2.csv", "s3.csv", "s4.csv"]);
        assert!(got.iter().all(|(_, lines)| lines == &got[0].1));
        let bad = parse_csv(&format!("{header}\n{}\n", row.replace("llama-3.1-8b", "no-such-model"))).unwrap();
        let err = glance_sets(&[("good.csv".into(), good), ("bad.csv".into(), bad)], &ValidationOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("no-such-model") && err.contains("(in bad.csv)"), "{err}");
    }

    fn lines_first(report: &ValidationReport) -> GlanceLine {
        report.glance().remove(0)
    }

    /// The glance's list is every reference file the repository carries.
    #[test]
    fn the_glance_names_every_reference_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation");
        let mut found: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".csv"))
            .collect();
        found.sort();
        let mut listed: Vec<String> = GLANCE_FILES.iter().map(|f| f.to_string()).collect();
        listed.sort();
        assert_eq!(found, listed, "add the file to GLANCE_FILES and to docs/simulator.md's glance");
    }

    /// docs/simulator.md's table of what each reference file covers is
    /// what the files hold.
    /// The repository's reference files, named as the glance names them.
    fn repository_sets() -> Vec<(String, Vec<ReferenceRow>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation");
        GLANCE_FILES
            .iter()
            .map(|f| (f.to_string(), parse_csv(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()))
            .collect()
    }

    /// The Markdown table docs/simulator.md holds under this header line,
    /// each line ended.
    fn doc_table(header: &str) -> String {
        let doc = include_str!("../../../../docs/simulator.md");
        let start = doc.find(header).unwrap_or_else(|| panic!("docs/simulator.md holds no table `{header}`"));
        doc[start..].lines().take_while(|l| l.starts_with('|')).map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn the_coverage_in_the_docs_is_the_files() {
        let got = coverage_markdown(&repository_sets());
        assert!(got.contains("| public.csv | 10 | TensorRT-LLM, vLLM | H100 SXM, H200 |"), "{got}");
        let table = doc_table("| file | rows | engines |");
        assert_eq!(table, got, "a reference file changed: put coverage_markdown's table in docs/simulator.md");
    }

    /// docs/simulator.md's "Accuracy at a glance" is what the validator
    /// gives today: every reference file run again (several minutes in
    /// release on two cores; `cargo test --release -p goodput-sim --lib --
    /// --ignored glance_in_the_docs`).
    #[test]
    #[ignore]
    fn the_glance_in_the_docs_is_the_validators() {
        let got = glance_markdown(&glance_sets(&repository_sets(), &ValidationOptions::default()).unwrap());
        let table = doc_table("| file | split | load |");
        assert_eq!(table, got, "the engine moved: put the validator's glance in docs/simulator.md");
    }

    #[test]
    fn staggered_users_start_apart_and_their_first_requests_are_warm_up() {
        let header = SAMPLE.lines().next().unwrap();
        let row = "a,llama-3.1-70b,h100-sxm,2,2,fp8,tensorrt-llm,1000,64,concurrency,16,ttft_ms_mean,100,ms,s";
        let rows = parse_csv(&format!("{header}\n{row}\n")).unwrap();
        let staggered = predict(&rows[0], &ValidationOptions::default()).unwrap();
        let lockstep =
            predict(&rows[0], &ValidationOptions { stagger: false, ..ValidationOptions::default() }).unwrap();
        // All at once, 16 prompts of 1,000 tokens prefill as one wave every
        // time; spread out, a prompt mostly prefills beside decodes.
        assert!(staggered.predicted < 0.5 * lockstep.predicted, "{} vs {}", staggered.predicted, lockstep.predicted);
        // A batch (vLLM's latency benchmark) is sent together every time.
        let batch = parse_csv(&format!("{header}\n{}\n", row.replace("concurrency", "batch"))).unwrap();
        assert_eq!(batch[0].load, ReferenceLoad::Batch(16));
        assert_eq!(predict(&batch[0], &ValidationOptions::default()).unwrap().predicted, lockstep.predicted);
        // The NIM front end and TensorRT-LLM's scheduler apply to
        // TensorRT-LLM rows; vLLM rows keep vLLM's.
        let cfg = row_config(&rows[0], &ValidationOptions::default()).unwrap();
        assert_eq!(cfg.calibration.frontend_overhead_ms, NIM_FRONTEND_MS);
        assert_eq!((cfg.scheduler, cfg.enable_chunked_prefill), (SchedulerPolicy::Trtllm, true));
        let vllm_row = &parse_csv(SAMPLE).unwrap()[0];
        assert_eq!(row_config(vllm_row, &ValidationOptions::default()).unwrap().scheduler, SchedulerPolicy::Vllm);
        let compare =
            ValidationOptions { tensorrt_llm_scheduler: SchedulerPolicy::Vllm, ..ValidationOptions::default() };
        assert_eq!(row_config(&rows[0], &compare).unwrap().scheduler, SchedulerPolicy::Vllm);
        // TensorRT-LLM's 8,192-token max_num_tokens on an A100 too, where
        // vLLM's default budget is 2,048.
        let a100 = parse_csv(&format!("{header}\n{}\n", row.replace("h100-sxm", "a100-80gb"))).unwrap();
        for o in [ValidationOptions::default(), compare.clone()] {
            assert_eq!(row_config(&a100[0], &o).unwrap().max_num_batched_tokens, 8192);
        }
        let kept = ValidationOptions { tensorrt_llm_frontend_ms: None, ..ValidationOptions::default() };
        assert_eq!(row_config(&rows[0], &kept).unwrap().calibration.frontend_overhead_ms, 15.0);
        // NIM's work per output token on rows served over HTTP; an offline
        // benchmark's rows have no front end.
        let per_token = |row: &ReferenceRow, o: &ValidationOptions| {
            row_config(row, o).unwrap().calibration.frontend_serial_us_per_output_token
        };
        assert_eq!(per_token(&rows[0], &ValidationOptions::default()), NIM_FRONTEND_US_PER_OUTPUT_TOKEN);
        assert_eq!(per_token(&batch[0], &ValidationOptions::default()), NIM_FRONTEND_US_PER_OUTPUT_TOKEN);
        let offline = parse_csv(&format!("{header}\n{}\n", row.replace("concurrency,16", "max_throughput,"))).unwrap();
        assert_eq!(per_token(&offline[0], &ValidationOptions::default()), 0.0);
        let none =
            ValidationOptions { tensorrt_llm_frontend_us_per_output_token: None, ..ValidationOptions::default() };
        assert_eq!(per_token(&rows[0], &none), 0.0);
    }

    #[test]
    fn rate_rows_send_poisson_arrivals_of_drawn_lengths() {
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,range_ratio,metric,value,unit,source
r,llama-3.1-8b,h100-sxm,1,1,bf16,sglang,256,64,rate,4,40,0,ttft_ms_p50,50,ms,s
i,llama-3.1-8b,h100-sxm,1,1,bf16,sglang,256,64,rate,4,40,0,itl_ms_p50,10,ms,s
t,llama-3.1-8b,h100-sxm,1,1,bf16,sglang,256,64,rate,4,40,0,output_tokens_per_s,100,tok/s,s
";
        let rows = parse_csv(text).unwrap();
        assert_eq!(rows[0].load, ReferenceLoad::Rate(4.0));
        assert_eq!((rows[0].requests, rows[0].range_ratio), (Some(40), 0.0));
        for (from, to, needle) in [
            (",4,40,0,", ",4,,0,", "requests"),
            (",4,40,0,", ",4,40,2,", "range_ratio"),
            ("rate,4,", "rate,-1,", "requests per second"),
        ] {
            let err = parse_csv(&text.replacen(from, to, 1)).unwrap_err().to_string();
            assert!(err.contains("line 2") && err.contains(needle), "{err}");
        }

        let report = validate(&rows, &ValidationOptions::default()).unwrap();
        // The draws are seeded: a second check gives the same numbers.
        assert_eq!(validate(&rows, &ValidationOptions::default()).unwrap().predictions, report.predictions);
        let [ttft, itl, tput] = [0, 1, 2].map(|k| report.predictions[k].predicted);
        assert!(ttft > 0.0 && ttft < 1000.0 && itl > 0.0 && itl < 100.0, "{ttft} {itl}");
        // At 4 a second the server keeps up: about 4 × the mean answer
        // (32.5 tokens of 1 to 64) a second.
        assert!(tput > 60.0 && tput < 200.0, "{tput}");
        // Every answer at 64 tokens: twice the tokens at the same rate.
        let fixed = parse_csv(&text.replace(",4,40,0,", ",4,40,1,")).unwrap();
        let fixed_tput = validate(&fixed, &ValidationOptions::default()).unwrap().predictions[2].predicted;
        assert!(fixed_tput > 1.5 * tput && fixed_tput < 2.5 * tput, "{fixed_tput} vs {tput}");
        assert_eq!(report.open_loop_summary().len(), 3);
        assert!(report.closed_loop_summary(SUMMARY_MIN_USERS).is_empty());
        assert!(report.to_markdown().contains("open loops (rate rows)"));
    }

    /// A replayed trace's row sends at its own times its own requests,
    /// whose prompts open with its blocks: what they share, the prefix
    /// cache serves. Over replicas, each takes every other request, its
    /// lengths and blocks with its times, however many there are.
    #[test]
    fn a_replayed_rows_prefix_blocks_are_served_from_the_cache_and_split_over_replicas() {
        use std::time::Duration;
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,metric,value,unit,source
t,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,2048,32,rate,10,41,ttft_ms_mean,50,ms,s
";
        let mut row = parse_csv(text).unwrap().remove(0);
        let n = 41;
        row.lengths = Some((0..n).map(|i| VirtualRequest::new(2048, 16 + i % 32)).collect());
        row.arrivals = Some((0..n).map(|i| Duration::from_millis(100 * u64::from(i))).collect());
        let opts = ValidationOptions::default();
        let cold = predict(&row, &opts).unwrap().predicted;
        // Every prompt opens with the same three blocks of 512 tokens.
        let shared: PrefixBlocks = (0..3).map(|k| (k, 512)).collect();
        row.prefix_blocks = Some((0..n).map(|_| Some(shared.clone())).collect());
        let warm = predict(&row, &opts).unwrap().predicted;
        assert!(warm < 0.6 * cold, "shared blocks {warm} ms against {cold} ms");
        // Two replicas: 41 requests are no even split, and need none.
        let mut two = parse_csv(&text.replace(",1,1,bf16,", ",2,1,bf16,")).unwrap().remove(0);
        two.lengths = row.lengths.clone();
        two.arrivals = row.arrivals.clone();
        two.prefix_blocks = row.prefix_blocks.clone();
        let split = predict(&two, &opts).unwrap().predicted;
        assert!(split > 0.0 && split <= warm * 1.05, "{split} against {warm}");
    }

    /// A measured run's sessions split over replicas whole, every other
    /// one to each, their warm-up counted in sessions: the first two
    /// sessions' five requests are two sessions of warm-up, one of them a
    /// replica's.
    #[test]
    fn a_measured_runs_sessions_go_whole_to_each_replica() {
        use super::super::virtual_time::VirtualTurn;
        let text = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,metric,value,unit,source
s,llama-3.1-8b,h100-sxm,2,1,bf16,vllm,500,50,concurrency,4,10,ttft_ms_mean,50,ms,s
";
        let mut row = parse_csv(text).unwrap().remove(0);
        // Sessions of 2, 3, 1, 4 and 2 turns.
        let mut lengths = Vec::new();
        for (session, turns) in [2u32, 3, 1, 4, 2].into_iter().enumerate() {
            for turn in 1..=turns {
                let think = std::time::Duration::from_millis(if turn > 1 { 300 } else { 0 });
                let t = VirtualTurn { session: session as u64, turn, turns, think };
                lengths.push(VirtualRequest { turn: Some(t), ..VirtualRequest::new(200 * turn, 50) });
            }
        }
        row.lengths = Some(lengths.into());
        row.warmup = 5;
        let share = sessions_share(&row, 2).unwrap();
        assert_eq!(share.indices, [0, 1, 5, 10, 11]);
        assert_eq!(share.warmup, 1);
        let whole = sessions_share(&row, 1).unwrap();
        assert_eq!((whole.indices.len(), whole.warmup), (12, 2));
        // The replica's share runs as sessions: no turn before its first.
        let p = predict(&row, &ValidationOptions::default()).unwrap();
        assert!(p.predicted > 0.0, "{}", p.predicted);
        row.lengths = Some(vec![VirtualRequest::new(500, 50); 4].into());
        assert!(sessions_share(&row, 2).is_none());
    }

    #[test]
    fn an_expert_parallel_row_runs_groups_of_its_ranks() {
        let header = "id,model,gpu,gpus,tp,ep,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,\
                      value,unit,source";
        let rows = parse_csv(&format!(
            "{header}\none,qwen3-30b-a3b,h100,2,1,2,bf16,vllm,64,16,concurrency,8,output_tokens_per_s,1,tok/s,s\n\
             two,qwen3-30b-a3b,h100,4,1,2,bf16,vllm,64,16,concurrency,16,output_tokens_per_s,1,tok/s,s\n\
             bad,qwen3-30b-a3b,h100,3,1,2,bf16,vllm,64,16,concurrency,8,output_tokens_per_s,1,tok/s,s\n"
        ))
        .unwrap();
        assert_eq!((rows[0].ep, rows[0].tp), (2, 1));
        // One group of two ranks (two GPUs) takes the eight users; two
        // groups take twice the users at twice the rate.
        let opts = ValidationOptions::default();
        let (one, two) = (predict(&rows[0], &opts).unwrap(), predict(&rows[1], &opts).unwrap());
        assert!((two.predicted / one.predicted - 2.0).abs() < 1e-9, "{} {}", one.predicted, two.predicted);
        let err = predict(&rows[2], &opts).unwrap_err().to_string();
        assert!(err.contains("expert-parallel groups of 2"), "{err}");
        let bad = parse_csv(&format!(
            "{header}\nx,qwen3-30b-a3b,h100,2,1,0,bf16,vllm,64,16,concurrency,8,output_tokens_per_s,1,tok/s,s\n"
        ))
        .unwrap_err();
        assert!(bad.to_string().contains("`ep`"), "{bad}");
    }

    /// SGLang's rows run SGLang's scheduler with its default chunk on the
    /// GPU (8,192 on an H200), or vLLM's to compare.
    #[test]
    fn sglang_rows_run_sglangs_own_scheduler() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation");
        let rows = parse_csv(&std::fs::read_to_string(dir.join("sglang-open-loop.csv")).unwrap()).unwrap();
        let row = &rows[0];
        assert_eq!(row.engine, ReferenceEngine::Sglang);
        let cfg = row_config(row, &ValidationOptions::default()).unwrap();
        assert_eq!(
            (cfg.scheduler, cfg.max_num_batched_tokens, cfg.mixed_batches),
            (SchedulerPolicy::Sglang, 8192, false)
        );
        let before = ValidationOptions { sglang_scheduler: SchedulerPolicy::Vllm, ..ValidationOptions::default() };
        assert_eq!(row_config(row, &before).unwrap().scheduler, SchedulerPolicy::Vllm);
    }

    #[test]
    fn the_repositorys_reference_files_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation");
        let rows = |f: &str| parse_csv(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
        for f in GLANCE_FILES {
            assert!(!rows(f).is_empty(), "{f}");
        }
        // CDNA3's constants were fitted on AMD's October 2025 table alone;
        // its other releases and Oracle's runs only check them.
        for (f, split) in [
            ("amd-mi300x.csv", Split::Calibration),
            ("amd-mi300x-releases.csv", Split::HeldOut),
            ("oci-mi300x.csv", Split::HeldOut),
            ("inferencemax-cdna3.csv", Split::HeldOut),
            ("inferencemax-hopper.csv", Split::HeldOut),
            ("inferencemax-blackwell.csv", Split::HeldOut),
            ("inferencemax-cdna4.csv", Split::HeldOut),
            ("inferencemax-trtllm.csv", Split::HeldOut),
            ("inferencemax-gptoss.csv", Split::HeldOut),
            ("inferencemax-dsr1.csv", Split::HeldOut),
        ] {
            assert!(rows(f).iter().all(|r| r.split == Some(split)), "{f}");
        }
        // Held out but for five of the dense B200 rows (Blackwell's
        // calibration), and each row's model, GPU and precision known.
        let overview = rows("trtllm-overview.csv");
        assert_eq!(overview.len(), 139);
        for r in &overview {
            let split = if r.split == Some(Split::Calibration) { "calibration" } else { "held-out" };
            assert_eq!(r.load, ReferenceLoad::MaxThroughput, "{}", r.id);
            assert!(split == "held-out" || r.id.starts_with("trt-70b-b200-"), "{} is {split}", r.id);
            row_config(r, &ValidationOptions::default()).unwrap().validate().unwrap();
        }
        let calibration = overview.iter().filter(|r| r.split == Some(Split::Calibration)).count();
        assert_eq!(calibration, 5);
        // DeepSeek-R1 under trtllm-bench's closed loops: held out, offline,
        // attention data-parallel over eight ranks of one expert-parallel
        // group, with the benchmark's own limits.
        let deepseek = rows("trtllm-deepseek.csv");
        assert_eq!(deepseek.len(), 3);
        for r in &deepseek {
            assert!(r.split == Some(Split::HeldOut) && r.offline && r.together && r.max_num_seqs.is_some(), "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            assert_eq!((cfg.attention_ranks(), cfg.calibration.frontend_serial_us_per_output_token), (8, 0.0));
        }
        // TensorRT-LLM's per-GPU tables of a later page: held out but for
        // the one row of a calibration row's model, GPU, layout and shape;
        // the DEP columns attention data-parallel over their GPUs with the
        // experts over all of them.
        let later = rows("trtllm-overview-1.2.csv");
        assert_eq!(later.len(), 62);
        for r in &later {
            let calibration = r.split == Some(Split::Calibration);
            assert_eq!(calibration, r.id == "trt12-70b-b200-tp1-1000-1000", "{}", r.id);
            assert!(r.offline && r.load == ReferenceLoad::MaxThroughput, "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            let (ranks, ep) = if r.id.contains("-dep") { (r.gpus, r.gpus) } else { (1, 1) };
            assert_eq!((cfg.attention_ranks(), r.ep), (ranks, ep), "{}", r.id);
        }
        // GPT-OSS: held out, MXFP4, its sliding window and the DEP columns'
        // ranks in the row's engine; an FP8 cache on Blackwell alone.
        let gpt_oss = rows("trtllm-gpt-oss.csv");
        assert_eq!(gpt_oss.len(), 44);
        for r in &gpt_oss {
            assert!(r.split == Some(Split::HeldOut) && r.offline && r.precision == Precision::Mxfp4, "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            assert_eq!(cfg.model.sliding_window.map(|w| w.window), Some(128), "{}", r.id);
            let ranks = if r.id.contains("-dep") { r.gpus } else { 1 };
            assert_eq!(cfg.attention_ranks(), ranks, "{}", r.id);
            let blackwell = r.gpu.contains("b200");
            assert_eq!(cfg.kv_cache_dtype == KvCacheDtype::Fp8, blackwell, "{}", r.id);
        }
        // GPUStack's vLLM, SGLang and TensorRT-LLM runs on H100s and H200s:
        // served, every prompt at once; the GPT-OSS-20B rows calibration,
        // the 120B's, Qwen3-235B-A22B's, DeepSeek-R1's, Qwen3-14B's and
        // Qwen3-32B's held out; TensorRT-LLM's on a 16-bit cache.
        let gpustack = rows("gpustack-hopper.csv");
        assert_eq!(gpustack.len(), 30);
        assert_eq!(gpustack.iter().filter(|r| r.engine == ReferenceEngine::Sglang).count(), 4);
        let trt: Vec<_> = gpustack.iter().filter(|r| r.engine == ReferenceEngine::TensorRtLlm).collect();
        assert!(trt.len() == 4 && trt.iter().all(|r| r.model == "qwen3-32b"));
        for r in &gpustack {
            assert!(r.is_served() && r.load == ReferenceLoad::MaxThroughput, "{}", r.id);
            let calibration = r.split == Some(Split::Calibration);
            assert_eq!(calibration, r.model == "gpt-oss-20b", "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            assert!(cfg.kv_cache_dtype != KvCacheDtype::Fp8, "{}", r.id);
        }
        // Llama-4-Maverick: held out, attention data-parallel over the
        // row's GPUs, its chunked attention in the row's engine.
        let maverick = rows("trtllm-maverick.csv");
        assert_eq!(maverick.len(), 17);
        for r in &maverick {
            assert!(r.split == Some(Split::HeldOut) && r.offline, "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            assert_eq!((cfg.attention_ranks(), r.ep), (r.gpus, r.gpus), "{}", r.id);
            assert!(cfg.model.sliding_window.is_some_and(|w| w.chunked && w.window == 8192), "{}", r.id);
        }
        // GPUStack's Qwen3-14B, Qwen3-32B, GPT-OSS-20B and Qwen3-235B-A22B
        // on A100s: served, held out, 16-bit caches; the FP8 rows under
        // vLLM, whose FP8 Marlin runs them as W8A16.
        let a100 = rows("gpustack-a100.csv");
        assert_eq!(a100.len(), 23);
        for r in &a100 {
            assert!(r.split == Some(Split::HeldOut) && r.is_served() && r.gpu == "a100-80gb", "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            assert!(cfg.kv_cache_dtype != KvCacheDtype::Fp8, "{}", r.id);
            if r.precision == Precision::Fp8 {
                assert_eq!((r.engine, cfg.compute_precision()), (ReferenceEngine::Vllm, Precision::Int8), "{}", r.id);
            }
        }
        // vLLM and SGLang served on B200s (and the SGLang source's H100
        // row): held out; vLLM's users started together on an FP8 cache in
        // 0.85 of the memory, SGLang's one request a batch.
        let b200 = rows("served-b200.csv");
        assert_eq!(b200.len(), 4);
        for r in &b200 {
            assert!(r.split == Some(Split::HeldOut) && r.is_served(), "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            if r.engine == ReferenceEngine::Vllm {
                assert!(r.together && cfg.kv_cache_dtype == KvCacheDtype::Fp8, "{}", r.id);
                assert_eq!(cfg.gpu_memory_utilization, Some(0.85), "{}", r.id);
            } else {
                assert_eq!((r.engine, r.load), (ReferenceEngine::Sglang, ReferenceLoad::Batch(1)), "{}", r.id);
            }
        }
        // GPUStack's four users on one H100: served, the users started
        // together, held out; TensorRT-LLM's run on a 16-bit cache.
        let latency = rows("gpustack-h100-latency.csv");
        assert_eq!(latency.len(), 12);
        for r in &latency {
            assert!(r.split == Some(Split::HeldOut) && r.is_served() && r.together, "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            assert!(cfg.kv_cache_dtype != KvCacheDtype::Fp8, "{}", r.id);
        }
        // Llama 4 on the earlier page: held out, the columns' TP with no EP
        // (its layout is not given), Scout on one Blackwell GPU or four
        // Hopper ones, Maverick on eight; both with chunked attention.
        let llama4 = rows("trtllm-llama4-1.0.csv");
        assert_eq!(llama4.len(), 63);
        for r in &llama4 {
            assert!(r.split == Some(Split::HeldOut) && r.offline && r.ep == 1 && r.tp == r.gpus, "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            cfg.validate().unwrap();
            assert_eq!(cfg.attention_ranks(), 1, "{}", r.id);
            assert!(cfg.model.sliding_window.is_some_and(|w| w.chunked && w.window == 8192), "{}", r.id);
            let hopper = r.gpu.starts_with("h");
            assert_eq!(r.precision, if hopper { Precision::Fp8 } else { Precision::Fp4 }, "{}", r.id);
        }
        assert_eq!(llama4.iter().filter(|r| r.model.contains("scout")).count(), 38);
        // genai-perf's closed loops: every row held out, every user started
        // together, 16-bit rows on a 16-bit cache.
        let dli = rows("nim-dli-closed-loop.csv");
        assert_eq!(dli.len(), 2361);
        for r in &dli {
            assert!(r.split == Some(Split::HeldOut) && r.together, "{}", r.id);
            let cfg = row_config(r, &ValidationOptions::default()).unwrap();
            let fp8 = cfg.kv_cache_dtype == KvCacheDtype::Fp8;
            assert_eq!(fp8, r.precision == Precision::Fp8, "{}", r.id);
        }
    }

    /// A benchmark's own limits reach the row's engine; an offline client
    /// has no front end's work per token; a closed loop that gives its
    /// `requests` sends that many (whole rounds of its users past the
    /// simulator's limit), and may then have more users than 25 requests
    /// each would allow.
    #[test]
    fn a_rows_engine_limits_client_and_requests_reach_its_run() {
        let header = "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,start,\
                      client,requests,max_num_seqs,max_num_batched_tokens,memory_fraction,kv_cache,metric,value,unit,\
                      source";
        let row = |extra: &str| {
            format!(
                "t,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,64,8,concurrency,8,{extra},output_tokens_per_s,1,tok/s,s"
            )
        };
        let rows = parse_csv(&format!(
            "{header}\n{}\n{}\n",
            row("together,offline,40,4,512,0.5,auto"),
            row("together,http,,,,,")
        ))
        .unwrap();
        let opts = ValidationOptions::default();
        let (limited, plain) = (row_config(&rows[0], &opts).unwrap(), row_config(&rows[1], &opts).unwrap());
        assert_eq!((limited.max_num_seqs, limited.max_num_batched_tokens), (Some(4), 512));
        assert_eq!((limited.gpu_memory_utilization, limited.kv_cache_dtype), (Some(0.5), KvCacheDtype::Auto));
        assert_eq!(limited.calibration.frontend_serial_us_per_output_token, 0.0);
        // The defaults where the row is silent: TensorRT-LLM's FP8 cache
        // beside FP8 weights, NIM's work per streamed token over HTTP.
        assert_eq!((plain.max_num_seqs, plain.kv_cache_dtype), (None, KvCacheDtype::Fp8));
        assert_eq!(plain.calibration.frontend_serial_us_per_output_token, NIM_FRONTEND_US_PER_OUTPUT_TOKEN);
        let (run, _) = simulate_row(&rows[0], &opts).unwrap();
        assert_eq!(run.records.len(), 40);
        assert!(run.engine.mean_batch_seqs <= 4.0, "{}", run.engine.mean_batch_seqs);
        let (run, _) = simulate_row(&rows[1], &opts).unwrap();
        assert_eq!(run.records.len(), 200);
        // A row whose requests the engine refuses (a prompt past the
        // context) is an error, not a throughput of the rest.
        let long =
            parse_csv(&format!("{header}\n{}\n", row("together,offline,40,,,,").replace(",64,8,", ",200000,8,")))
                .unwrap();
        let e = simulate_row(&long[0], &opts).unwrap_err().to_string();
        assert!(e.contains("40 of the row's 40 requests were refused") && e.contains("200000"), "{e}");
        // 5,000 users: too many at 25 requests each, not with a count.
        let many = |requests: &str| {
            parse_csv(&format!(
                "{header}\n{}\n",
                row(&format!("together,offline,{requests},,,,")).replace(",concurrency,8,", ",concurrency,5000,")
            ))
        };
        assert!(many("").unwrap_err().to_string().contains("`requests` column"));
        assert!(many("4999").unwrap_err().to_string().contains("fewer than the 5000 users"));
        assert_eq!(many("1000000").unwrap()[0].requests, Some(1_000_000));
        for (bad, says) in [
            ("together,offline,40,0,,,", "`max_num_seqs`"),
            ("together,offline,40,,x,,", "`max_num_batched_tokens`"),
            ("together,offline,40,,,1.5,", "`memory_fraction`"),
            ("together,offline,40,,,,fp16", "`kv_cache`"),
            ("together,local,40,,,,", "`client`"),
        ] {
            let e = parse_csv(&format!("{header}\n{}\n", row(bad))).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// A row's pipeline stages reach its engine, and its GPUs must be whole
    /// pipelines: two stages of one GPU each on two GPUs are one replica.
    #[test]
    fn a_rows_pipeline_stages_reach_its_engine() {
        let header =
            "id,model,gpu,gpus,tp,pp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,\
                      metric,value,unit,source";
        let row = |gpus: u32, pp: &str| {
            format!(
                "t,llama-3.1-8b,h100-sxm,{gpus},1,{pp},fp8,tensorrt-llm,64,8,max_throughput,,40,output_tokens_per_s,1,\
                 tok/s,s"
            )
        };
        let rows = parse_csv(&format!("{header}\n{}\n{}\n", row(2, "2"), row(2, ""))).unwrap();
        let opts = ValidationOptions::default();
        assert_eq!((rows[0].pp, rows[1].pp), (2, 1));
        assert_eq!(row_config(&rows[0], &opts).unwrap().pp, 2);
        let (run, replicas) = simulate_row(&rows[0], &opts).unwrap();
        assert_eq!((run.records.len(), replicas), (40, 1));
        assert_eq!(simulate_row(&rows[1], &opts).unwrap().1, 2);
        let odd = parse_csv(&format!("{header}\n{}\n", row(3, "2"))).unwrap();
        let e = simulate_row(&odd[0], &opts).unwrap_err().to_string();
        assert!(e.contains("3 GPUs is not a whole number of pipelines of 2"), "{e}");
        let e = parse_csv(&format!("{header}\n{}\n", row(2, "0"))).unwrap_err().to_string();
        assert!(e.contains("`pp` must be a number of pipeline stages"), "{e}");
    }

    /// An offline row that gives its `requests` sends that many, its
    /// replicas each their share (trtllm-bench's throughput is over the whole
    /// run, its drain included); without, ten batches' worth.
    #[test]
    fn an_offline_row_sends_the_requests_it_gives() {
        let header = "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,\
                      metric,value,unit,source";
        let row = |gpus: u32, requests: &str| {
            format!(
                "t,llama-3.1-8b,h100-sxm,{gpus},1,fp8,tensorrt-llm,64,8,max_throughput,,{requests},output_tokens_per_s,1,\
                 tok/s,s"
            )
        };
        let rows = parse_csv(&format!("{header}\n{}\n{}\n{}\n", row(1, "300"), row(2, "300"), row(1, ""))).unwrap();
        let opts = ValidationOptions::default();
        let sent = |k: usize| {
            let (run, replicas) = simulate_row(&rows[k], &opts).unwrap();
            (run.records.len(), replicas)
        };
        assert_eq!(sent(0), (300, 1));
        assert_eq!(sent(1), (150, 2));
        assert!(sent(2).0 >= 1000, "{:?}", sent(2));
    }

    #[test]
    fn users_started_together_are_not_staggered() {
        let header = "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,start,\
                      metric,value,unit,source";
        let row = "t,llama-3.1-8b,h100-sxm,1,1,bf16,tensorrt-llm,1000,16,concurrency,8,together,ttft_ms_mean,1,ms,s";
        let rows = parse_csv(&format!("{header}\n{row}\n{}\n", row.replace("together", "apart"))).unwrap();
        assert!(rows[0].together && !rows[1].together);
        let opts = ValidationOptions::default();
        let (together, apart) = (predict(&rows[0], &opts).unwrap(), predict(&rows[1], &opts).unwrap());
        // Eight prompts prefilled as one wave wait for each other.
        assert!(together.predicted > 2.0 * apart.predicted, "{} vs {}", together.predicted, apart.predicted);
        let bad = parse_csv(&format!("{header}\n{}\n", row.replace("together", "soon"))).unwrap_err();
        assert!(bad.to_string().contains("`start` must be together or apart"), "{bad}");
        let bad = parse_csv(&format!("{header}\n{}\n", row.replace("concurrency", "batch"))).unwrap_err();
        assert!(bad.to_string().contains("on `concurrency` rows only"), "{bad}");
    }

    #[test]
    fn a_closed_loop_sends_the_requests_a_user_asked_unless_the_row_says() {
        let header = "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,\
                      metric,value,unit,source";
        let row = "g,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,8,concurrency,6,,ttft_ms_mean,1,ms,s";
        let rows = parse_csv(&format!("{header}\n{row}\n{}\n", row.replace(",6,,", ",6,30,"))).unwrap();
        let guide = ValidationOptions { stagger: false, requests_a_user: Some(3), ..ValidationOptions::default() };
        let sent =
            |row: &ReferenceRow, options: &ValidationOptions| simulate_row(row, options).unwrap().0.records.len();
        // NIM's guide: three a user; the validator's own: 25 a user, at
        // least 200; a row's `requests` column wins over both.
        assert_eq!(sent(&rows[0], &guide), 18);
        assert_eq!(sent(&rows[0], &ValidationOptions { stagger: false, ..ValidationOptions::default() }), 200);
        assert_eq!(sent(&rows[1], &guide), 30);
        // A measured warm-up is sent first and left out of the figures.
        let header = header.replace("requests,", "requests,warmup,");
        let warm = parse_csv(&format!("{header}\n{}\n", row.replace(",6,,", ",6,30,12,"))).unwrap();
        assert_eq!(warm[0].warmup, 12);
        let (run, _) = simulate_row(&warm[0], &guide).unwrap();
        assert_eq!((run.records.len(), run.records.iter().filter(|r| r.warmup).count()), (42, 12));
        let batch = row.replace("concurrency", "batch").replace(",6,,", ",6,,12,");
        let err = parse_csv(&format!("{header}\n{batch}\n")).unwrap_err().to_string();
        assert!(err.contains("`warmup` counts a closed loop's or a rate's first requests"), "{err}");
        let err = parse_csv(&format!("{header}\n{}\n", row.replace(",6,,", ",6,30,-1,"))).unwrap_err().to_string();
        assert!(err.contains("`warmup` must be a whole number of requests"), "{err}");
    }

    /// A rate's or a burst's cap on requests in flight holds: the engine
    /// never runs more at once; a closed loop's users are refused one.
    #[test]
    fn a_rate_or_a_burst_keeps_its_cap_on_requests_in_flight() {
        let header = "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,requests,\
                      max_concurrency,metric,value,unit,source";
        let rate = "r,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,rate,40,200,8,ttft_ms_mean,1,ms,s";
        let burst = "b,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,max_throughput,0,200,8,ttft_ms_mean,1,ms,s";
        let rows = parse_csv(&format!("{header}\n{rate}\n{burst}\n{}\n", rate.replace(",200,8,", ",200,,"))).unwrap();
        assert_eq!((rows[0].max_concurrency, rows[2].max_concurrency), (Some(8), None));
        let opts = ValidationOptions::default();
        let most = |row: &ReferenceRow| {
            let (run, _) = simulate_row(row, &opts).unwrap();
            let mut ends: Vec<(std::time::Duration, i32)> =
                run.records.iter().flat_map(|r| [(r.sent, 1), (r.end, -1)]).collect();
            ends.sort();
            ends.iter()
                .scan(0, |n, (_, d)| {
                    *n += d;
                    Some(*n)
                })
                .max()
                .unwrap()
        };
        assert!(most(&rows[0]) <= 8 && most(&rows[1]) <= 8, "{} {}", most(&rows[0]), most(&rows[1]));
        // At 40 a second uncapped, far more are in flight.
        assert!(most(&rows[2]) > 16, "{}", most(&rows[2]));
        let closed = rate.replace(",rate,40,", ",concurrency,4,");
        let err = parse_csv(&format!("{header}\n{closed}\n")).unwrap_err().to_string();
        assert!(err.contains("`max_concurrency` caps a rate's or a burst's requests in flight"), "{err}");
    }

    #[test]
    fn replicas_split_the_load() {
        let header = SAMPLE.lines().next().unwrap();
        let row = "r,llama-3.1-8b,h200,2,1,bf16,vllm,32,16,concurrency,3,e2e_ms_mean,1,ms,s";
        let rows = parse_csv(&format!("{header}\n{row}\n")).unwrap();
        let err = predict(&rows[0], &ValidationOptions::default()).unwrap_err();
        assert!(err.to_string().contains("replicas"), "{err}");
    }
}
