//! Engine metrics mapped to common server signals: which engines and
//! exporters a scrape comes from (vLLM, SGLang, TGI, llama.cpp, Triton /
//! TensorRT-LLM, TensorRT-LLM's own trtllm-serve, DCGM), and what one scrape says about queues, KV cache,
//! prefix cache, tokens, server-side latency and the GPUs.

use super::histogram::{Bucket, Histogram, MAX_HISTOGRAM_BOUNDS};
use super::parse::{Sample, Scrape};
use super::values::{prom_float, Labels};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An enum of signal names whose serde name is its exported name (with its
/// unit), listed once.
macro_rules! named_enum {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $var:ident => $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $var,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var,)*];

            /// The name used in exported documents.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$var => $s,)*
                }
            }
        }
    };
}

named_enum! {
    /// Where metrics come from, told by their name prefix. Several can share
    /// one scrape set (an engine plus DCGM).
    pub enum Source {
        /// `vllm:`
        Vllm => "vllm",
        /// `sglang:`
        Sglang => "sglang",
        /// `tgi_`
        Tgi => "tgi",
        /// `llamacpp:`
        LlamaCpp => "llamacpp",
        /// NVIDIA Triton (`nv_inference_*`), with or without its TensorRT-LLM
        /// backend (`nv_trt_llm_*`).
        Triton => "triton",
        /// TensorRT-LLM's own OpenAI server, `trtllm-serve` (`trtllm_*`, at
        /// `/prometheus/metrics`, with `return_perf_metrics` on; its
        /// iteration gauges with `enable_iter_perf_stats` too).
        Trtllm => "trtllm",
        /// NVIDIA's DCGM exporter (`DCGM_FI_*`): GPUs, not an engine.
        Dcgm => "dcgm",
    }
}

const PREFIXES: &[(&str, Source)] = &[
    ("vllm:", Source::Vllm),
    ("sglang:", Source::Sglang),
    ("tgi_", Source::Tgi),
    ("llamacpp:", Source::LlamaCpp),
    ("nv_inference_", Source::Triton),
    ("nv_trt_llm_", Source::Triton),
    ("trtllm_", Source::Trtllm),
    ("DCGM_FI_", Source::Dcgm),
];

impl Source {
    /// The source a metric name belongs to, if it is one we know.
    pub fn of_metric(name: &str) -> Option<Source> {
        PREFIXES.iter().find(|(p, _)| name.starts_with(p)).map(|&(_, s)| s)
    }

    /// True for inference engines, false for GPU exporters.
    pub fn is_engine(self) -> bool {
        self != Source::Dcgm
    }
}

/// Whether the samples of a family of this name may be read by
/// [`Signals::mapped`]: a family whose name begins a metric some signal
/// reads (`x` of a counter's `x_total`), or that such a metric begins (an
/// untyped `x_bucket`), and every known source's, whose samples without a
/// number a scraper names. The families a scraper keeps of a server's text
/// ([`parse_keeping`](super::parse::parse_keeping)).
pub fn is_read(family: &str) -> bool {
    let related = |m: &str| m.starts_with(family) || family.starts_with(m);
    PREFIXES.iter().any(|(p, _)| related(p))
        || GAUGES
            .iter()
            .flat_map(|g| g.2)
            .chain(COUNTERS.iter().flat_map(|c| c.1))
            .any(|r| r.metrics.iter().any(|m| related(m)))
        || HISTOGRAMS.iter().flat_map(|h| h.1).any(|r| r.metrics.iter().any(|m| related(m)))
}

/// The sources present in a scrape, in [`Source`] order.
pub fn detect(scrape: &Scrape) -> Vec<Source> {
    let mut found: Vec<Source> = scrape.families.iter().filter_map(|f| Source::of_metric(&f.name)).collect();
    found.sort();
    found.dedup();
    found
}

named_enum! {
    /// Instantaneous values; one number per scrape.
    pub enum GaugeSignal {
        /// Requests being processed (summed over engines / DP ranks).
        RunningRequests => "running_requests",
        /// Requests queued, not yet scheduled: the queue depth (summed).
        WaitingRequests => "waiting_requests",
        /// KV-cache use, 0..1 (mean over engines).
        KvCacheUsage => "kv_cache_usage_ratio",
        /// The engine's own prefix-cache hit rate gauge (SGLang), 0..1. Its
        /// averaging period is the engine's, not the window's.
        PrefixCacheHitRateReported => "prefix_cache_hit_rate_reported",
        /// GPU utilisation, 0..1 (mean over GPUs).
        GpuUtilization => "gpu_utilization_ratio",
        /// GPU memory in use, bytes (summed over GPUs).
        GpuMemoryUsed => "gpu_memory_used_bytes",
        /// GPU power draw, watts (summed over GPUs).
        GpuPower => "gpu_power_watts",
        /// The GPUs' power limits, watts (summed over GPUs): their TDP
        /// unless an operator lowered it; what they are provisioned for.
        GpuPowerLimit => "gpu_power_limit_watts",
        /// The GPUs whose power limit was read: the series summed in
        /// `gpu_power_limit_watts`, to set against the GPUs the energy
        /// counters cover.
        GpuPowerLimitGpus => "gpu_power_limit_gpus",
        /// The engine's own mean accepted length of a speculative step,
        /// the bonus token included (SGLang), over the engine's own
        /// logging period.
        SpecAcceptLengthReported => "spec_accept_length_reported",
        /// The engine's own share of draft tokens accepted (SGLang), 0..1.
        SpecAcceptRateReported => "spec_accept_rate_reported",
        /// Disaggregated serving, the prefill pool: requests prefilled or
        /// prefilling that wait for their decode instance to take them
        /// (SGLang's bootstrap, formerly prealloc, queue; summed).
        PdPrefillWaiting => "pd_prefill_waiting_requests",
        /// The prefill pool: requests whose KV cache is being sent
        /// (SGLang's inflight queue; summed).
        PdPrefillTransferring => "pd_prefill_transferring_requests",
        /// The decode pool: requests waiting for KV-cache room to receive
        /// into (SGLang's prealloc queue; summed).
        PdDecodeWaiting => "pd_decode_waiting_requests",
        /// The decode pool: requests whose KV cache is arriving (SGLang's
        /// transfer queue; summed).
        PdDecodeTransferring => "pd_decode_transferring_requests",
        /// goodput's simulated engine server: how many times faster than
        /// the engine's own time it runs (`--speed`), to read its lateness
        /// in the engine's time.
        SimSpeed => "sim_speed",
        /// The KV cache's size, tokens (summed over engines / DP ranks):
        /// vLLM's `cache_config_info` (its `num_gpu_blocks` × `block_size`
        /// labels), SGLang's `max_total_num_tokens`, Triton's TensorRT-LLM
        /// backend's `nv_trt_llm_kv_cache_block_metrics` (its `max` blocks
        /// × `tokens_per` block), trtllm-serve's `kv_cache_max_blocks` ×
        /// `kv_cache_tokens_per_block`.
        KvCacheTokens => "kv_cache_tokens",
    }
}

named_enum! {
    /// Monotonic totals; meaningful as increases over a window.
    pub enum CounterSignal {
        /// Prompt tokens, cached ones included.
        PromptTokens => "prompt_tokens",
        GenerationTokens => "generation_tokens",
        /// Prompt tokens looked up in the prefix cache.
        PrefixCacheQueries => "prefix_cache_query_tokens",
        /// Prompt tokens found in the prefix cache.
        PrefixCacheHits => "prefix_cache_hit_tokens",
        /// Requests preempted (vLLM) or retracted (SGLang).
        Preemptions => "preemptions",
        RequestsSucceeded => "requests_succeeded",
        /// Failed or aborted requests.
        RequestsFailed => "requests_failed",
        /// GPU energy, joules (summed over GPUs).
        GpuEnergy => "gpu_energy_joules",
        /// Speculative decoding: proposals (one per sequence per step that
        /// drafted), vLLM.
        SpecDrafts => "spec_drafts",
        /// Draft tokens proposed.
        SpecDraftTokens => "spec_draft_tokens",
        /// Draft tokens the target model accepted.
        SpecAcceptedTokens => "spec_accepted_tokens",
        /// Accepted draft tokens by their position in the proposal, one
        /// series per `position` label (vLLM).
        SpecAcceptedByPosition => "spec_accepted_tokens_by_position",
        /// Disaggregated serving: seconds spent moving KV caches from the
        /// prefill to the decode instances, summed over transfers (Triton's
        /// TensorRT-LLM backend counts milliseconds).
        KvTransferTime => "kv_transfer_time_seconds",
        /// The requests those transfers were for.
        KvTransferRequests => "kv_transfer_requests",
    }
}

impl CounterSignal {
    /// True for totals counted from long before the run: a GPU's energy
    /// since boot (DCGM's `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`) or since
    /// the server started (Triton's `nv_energy_consumption`). A series of
    /// one first seen inside a window (its exporter failed the first scrape,
    /// or a GPU was reported late) brings that whole past with it, so its
    /// first sample is its baseline, not an increase. An engine's counters
    /// are not: a labelled series of one (a new `finished_reason`, an engine
    /// started mid-run) is created when it first counts, from zero.
    pub fn since_boot(self) -> bool {
        matches!(self, CounterSignal::GpuEnergy)
    }
}

named_enum! {
    /// Server-side latency histograms, in seconds.
    pub enum HistogramSignal {
        Ttft => "ttft_seconds",
        /// Per-token inter-token latency.
        Itl => "itl_seconds",
        /// Per-request time per output token.
        Tpot => "tpot_seconds",
        E2e => "e2e_seconds",
        /// Time spent waiting before being scheduled.
        Queue => "queue_seconds",
        /// Duration of one prefill batch (TGI).
        PrefillBatch => "prefill_batch_seconds",
        /// Duration of one decode batch (TGI).
        DecodeBatch => "decode_batch_seconds",
        /// Disaggregated serving: one KV-cache transfer from a prefill to a
        /// decode instance (vLLM's NIXL connector, SGLang).
        KvTransfer => "kv_transfer_seconds",
        /// How late goodput's simulated server was against its own
        /// timeline (the engine's steps, the fixed profile's chunks): a
        /// busy machine, not the modelled engine.
        SimLateness => "sim_lateness_seconds",
    }
}

/// How the series of one gauge combine into one number.
#[derive(Clone, Copy)]
enum Combine {
    Sum,
    Mean,
}

/// Which samples of a metric a rule takes, by one label.
#[derive(Clone, Copy)]
enum Filter {
    All,
    Only(&'static str, &'static [&'static str]),
    Except(&'static str, &'static [&'static str]),
}

impl Filter {
    fn keeps(self, labels: &Labels) -> bool {
        let value = |label: &str| labels.get(label).map(String::as_str).unwrap_or("");
        match self {
            Filter::All => true,
            Filter::Only(label, values) => values.contains(&value(label)),
            Filter::Except(label, values) => !values.contains(&value(label)),
        }
    }
}

/// One way to read a signal: the series of every metric listed that pass
/// the filter, multiplied by `scale` (bucket bounds and sums, for
/// histograms). A signal's rules are tried in order and the first that
/// finds anything wins, so newer names come before deprecated ones.
struct Rule {
    metrics: &'static [&'static str],
    filter: Filter,
    scale: f64,
    /// A label the series' identity names otherwise (the engine's, ours):
    /// TensorRT-LLM's `token_position` is vLLM's draft `position`.
    renamed: Option<(&'static str, &'static str)>,
}

const fn r(metrics: &'static [&'static str]) -> Rule {
    Rule { metrics, filter: Filter::All, scale: 1.0, renamed: None }
}

impl Rule {
    const fn only(self, label: &'static str, values: &'static [&'static str]) -> Rule {
        Rule { filter: Filter::Only(label, values), ..self }
    }

    const fn except(self, label: &'static str, values: &'static [&'static str]) -> Rule {
        Rule { filter: Filter::Except(label, values), ..self }
    }

    const fn scaled(self, scale: f64) -> Rule {
        Rule { scale, ..self }
    }

    const fn label_as(self, label: &'static str, ours: &'static str) -> Rule {
        Rule { renamed: Some((label, ours)), ..self }
    }

    /// A series' identity, its label renamed where the rule renames one.
    fn series(&self, metric: &str, labels: &Labels) -> String {
        match self.renamed.filter(|(from, _)| labels.contains_key(*from)) {
            Some((from, to)) => {
                let mut ours = labels.clone();
                if let Some(v) = ours.remove(from) {
                    ours.insert(to.to_string(), v);
                }
                series_id(metric, &ours)
            }
            None => series_id(metric, labels),
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The largest sample a mapped signal takes: past any real counter (a GPU's
/// energy in mJ reaches 1e18 after 45,000 years at 700 W), and far below
/// where a figure made of it overflows. A server that said 1e308 had shown
/// "KV peak inf%" and a queue of "inf ms"; such samples, and those below
/// zero (no mapped gauge, counter or histogram goes below zero: a queue of
/// -5 had been shown), are left out as if not exported.
const MAX_SAMPLE: f64 = 1e18;

/// A sample a mapped signal can take (see [`MAX_SAMPLE`]).
fn plausible(v: f64) -> bool {
    (0.0..=MAX_SAMPLE).contains(&v)
}

/// The gauges that are shares, at most 1: above it, left out.
fn is_share(signal: GaugeSignal) -> bool {
    matches!(
        signal,
        GaugeSignal::KvCacheUsage
            | GaugeSignal::PrefixCacheHitRateReported
            | GaugeSignal::GpuUtilization
            | GaugeSignal::SpecAcceptRateReported
    )
}

const GAUGES: &[(GaugeSignal, Combine, &[Rule])] = &[
    (
        GaugeSignal::RunningRequests,
        Combine::Sum,
        &[
            r(&["vllm:num_requests_running"]),
            r(&["sglang:num_running_reqs"]),
            r(&["tgi_batch_current_size"]),
            r(&["llamacpp:requests_processing"]),
            r(&["nv_trt_llm_request_metrics"]).only("request_type", &["active"]),
            r(&["trtllm_num_requests_running"]),
        ],
    ),
    (
        GaugeSignal::WaitingRequests,
        Combine::Sum,
        &[
            r(&["vllm:num_requests_waiting"]),
            r(&["sglang:num_queue_reqs"]),
            r(&["tgi_queue_size"]),
            r(&["llamacpp:requests_deferred"]),
            r(&["nv_trt_llm_request_metrics"]).only("request_type", &["waiting"]),
            r(&["nv_inference_pending_request_count"]),
            r(&["trtllm_num_requests_waiting"]),
        ],
    ),
    (
        GaugeSignal::KvCacheUsage,
        Combine::Mean,
        &[
            r(&["vllm:kv_cache_usage_perc"]),
            r(&["vllm:gpu_cache_usage_perc"]),
            r(&["sglang:token_usage"]),
            r(&["llamacpp:kv_cache_usage_ratio"]),
            r(&["nv_trt_llm_kv_cache_block_metrics"]).only("kv_cache_block_type", &["fraction"]),
            // Used over all blocks, 0..1.
            r(&["trtllm_kv_cache_utilization"]),
        ],
    ),
    (
        GaugeSignal::PrefixCacheHitRateReported,
        Combine::Mean,
        &[r(&["sglang:cache_hit_rate"]), r(&["trtllm_kv_cache_hit_rate"])],
    ),
    (
        GaugeSignal::GpuUtilization,
        Combine::Mean,
        &[r(&["DCGM_FI_DEV_GPU_UTIL"]).scaled(0.01), r(&["nv_gpu_utilization"])],
    ),
    (
        GaugeSignal::GpuMemoryUsed,
        Combine::Sum,
        &[r(&["DCGM_FI_DEV_FB_USED"]).scaled(MIB), r(&["nv_gpu_memory_used_bytes"])],
    ),
    (GaugeSignal::GpuPower, Combine::Sum, &[r(&["DCGM_FI_DEV_POWER_USAGE"]), r(&["nv_gpu_power_usage"])]),
    (
        GaugeSignal::GpuPowerLimit,
        Combine::Sum,
        &[r(&["DCGM_FI_DEV_ENFORCED_POWER_LIMIT"]), r(&["DCGM_FI_DEV_POWER_MGMT_LIMIT"]), r(&["nv_gpu_power_limit"])],
    ),
    (GaugeSignal::SpecAcceptLengthReported, Combine::Mean, &[r(&["sglang:spec_accept_length"])]),
    (GaugeSignal::SpecAcceptRateReported, Combine::Mean, &[r(&["sglang:spec_accept_rate"])]),
    (
        GaugeSignal::PdPrefillWaiting,
        Combine::Sum,
        &[r(&["sglang:num_prefill_bootstrap_queue_reqs"]), r(&["sglang:num_prefill_prealloc_queue_reqs"])],
    ),
    (GaugeSignal::PdPrefillTransferring, Combine::Sum, &[r(&["sglang:num_prefill_inflight_queue_reqs"])]),
    (GaugeSignal::PdDecodeWaiting, Combine::Sum, &[r(&["sglang:num_decode_prealloc_queue_reqs"])]),
    (GaugeSignal::PdDecodeTransferring, Combine::Sum, &[r(&["sglang:num_decode_transfer_queue_reqs"])]),
    (GaugeSignal::SimSpeed, Combine::Mean, &[r(&["goodput_sim_speed"])]),
    // vLLM's, an info metric whose labels hold it, is read in `map`.
    (GaugeSignal::KvCacheTokens, Combine::Sum, &[r(&["sglang:max_total_num_tokens"])]),
];

/// vLLM's finish reasons that are not a success.
const VLLM_FAILED: &[&str] = &["abort", "error"];

/// The label that says which pool of a disaggregated (P/D) deployment a
/// series is from: `prefill` or `decode` (goodput's simulated server puts
/// it on each instance's series; a Prometheus relabelling can put a
/// deployment's own role on them, llm-d's `llm-d.ai/role`, say). Both kinds
/// of instance count a request's prompt tokens, and the prefill instance
/// generates its one token too: so prompt tokens are read from the prefill
/// instances alone and generated tokens from the decode instances alone.
/// Series without it are all read, as one instance's.
pub const PD_ROLE: &str = "role";

const COUNTERS: &[(CounterSignal, &[Rule])] = &[
    (
        CounterSignal::PromptTokens,
        &[
            r(&["vllm:prompt_tokens_total"]).except(PD_ROLE, &["decode"]),
            r(&["sglang:prompt_tokens_total"]),
            // llama.cpp counts the prompt tokens it computed apart from those
            // it reused; both are prompt tokens.
            r(&["llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total"]),
            // TGI has no token counters; its per-request histograms' sums are.
            r(&["tgi_request_input_length_sum"]),
            r(&["trtllm_prompt_tokens_total"]),
        ],
    ),
    (
        CounterSignal::GenerationTokens,
        &[
            r(&["vllm:generation_tokens_total"]).except(PD_ROLE, &["prefill"]),
            r(&["sglang:generation_tokens_total"]),
            r(&["llamacpp:tokens_predicted_total"]),
            r(&["tgi_request_generated_tokens_sum"]),
            r(&["trtllm_generation_tokens_total"]),
        ],
    ),
    (
        CounterSignal::PrefixCacheQueries,
        &[
            r(&["vllm:prefix_cache_queries_total"]),
            r(&["vllm:gpu_prefix_cache_queries_total"]),
            // SGLang looks every prompt token up in its radix cache.
            r(&["sglang:prompt_tokens_total"]),
            r(&["llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total"]),
            // trtllm-serve looks every prompt's blocks up (block reuse is on
            // by default).
            r(&["trtllm_prompt_tokens_total"]),
        ],
    ),
    (
        CounterSignal::PrefixCacheHits,
        &[
            r(&["vllm:prefix_cache_hits_total"]),
            r(&["vllm:gpu_prefix_cache_hits_total"]),
            r(&["sglang:cached_tokens_total"]),
            r(&["llamacpp:prompt_tokens_cached_total"]),
            r(&["trtllm_prompt_cached_tokens_total"]),
        ],
    ),
    (CounterSignal::Preemptions, &[r(&["vllm:num_preemptions_total"]), r(&["sglang:num_retracted_requests_total"])]),
    (
        CounterSignal::RequestsSucceeded,
        &[
            r(&["vllm:request_success_total"]).except("finished_reason", VLLM_FAILED),
            r(&["sglang:num_requests_total"]),
            r(&["tgi_request_success"]),
            r(&["nv_inference_request_success"]),
            // Counted as each request finishes, whatever its reason.
            r(&["trtllm_request_success_total"]),
        ],
    ),
    (
        CounterSignal::RequestsFailed,
        &[
            r(&["vllm:request_success_total"]).only("finished_reason", VLLM_FAILED),
            r(&["sglang:num_aborted_requests_total"]),
            r(&["tgi_request_failure"]),
            r(&["nv_inference_request_failure"]),
            // By HTTP status.
            r(&["trtllm_request_error_total"]),
        ],
    ),
    (
        CounterSignal::GpuEnergy,
        &[r(&["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]).scaled(1e-3), r(&["nv_energy_consumption"])],
    ),
    // trtllm-serve: every proposal drafts a token at position 0.
    (
        CounterSignal::SpecDrafts,
        &[
            r(&["vllm:spec_decode_num_drafts_total"]),
            r(&["trtllm_spec_decode_drafted_tokens_total"]).only("token_position", &["0"]),
        ],
    ),
    // trtllm-serve's per-request counters, each a draft position's (its
    // `token_position`), summed: drafted and accepted draft tokens, the
    // bonus token apart by construction.
    (
        CounterSignal::SpecDraftTokens,
        &[r(&["vllm:spec_decode_num_draft_tokens_total"]), r(&["trtllm_spec_decode_drafted_tokens_total"])],
    ),
    (
        CounterSignal::SpecAcceptedTokens,
        &[r(&["vllm:spec_decode_num_accepted_tokens_total"]), r(&["trtllm_spec_decode_accepted_tokens_total"])],
    ),
    (
        CounterSignal::SpecAcceptedByPosition,
        &[
            r(&["vllm:spec_decode_num_accepted_tokens_per_pos_total"]),
            r(&["trtllm_spec_decode_accepted_tokens_total"]).label_as("token_position", "position"),
        ],
    ),
    (
        CounterSignal::KvTransferTime,
        &[r(&[TRT_DISAGG]).only(TRT_DISAGG_TYPE, &["kv_cache_transfer_ms", "kv_cache_transfer_time_ms"]).scaled(1e-3)],
    ),
    (CounterSignal::KvTransferRequests, &[r(&[TRT_DISAGG]).only(TRT_DISAGG_TYPE, &["request_count"])]),
];

/// Triton's TensorRT-LLM backend puts its disaggregated-serving counters in
/// one family, told apart by a label.
const TRT_DISAGG: &str = "nv_trt_llm_disaggregated_serving_metrics";
const TRT_DISAGG_TYPE: &str = "disaggregated_serving_type";

const HISTOGRAMS: &[(HistogramSignal, &[Rule])] = &[
    (
        HistogramSignal::Ttft,
        &[
            r(&["vllm:time_to_first_token_seconds"]),
            r(&["sglang:time_to_first_token_seconds"]),
            r(&["nv_inference_first_response_histogram_ms"]).scaled(1e-3),
            r(&["trtllm_time_to_first_token_seconds"]),
        ],
    ),
    (
        HistogramSignal::Itl,
        &[
            r(&["vllm:inter_token_latency_seconds"]),
            // The older names of the same per-token histograms.
            r(&["vllm:time_per_output_token_seconds"]),
            r(&["sglang:inter_token_latency_seconds"]),
            r(&["sglang:time_per_output_token_seconds"]),
        ],
    ),
    (
        HistogramSignal::Tpot,
        &[
            r(&["vllm:request_time_per_output_token_seconds"]),
            r(&["tgi_request_mean_time_per_token_duration"]),
            // Once a request, as it finishes.
            r(&["trtllm_time_per_output_token_seconds"]),
        ],
    ),
    (
        HistogramSignal::E2e,
        &[
            r(&["vllm:e2e_request_latency_seconds"]),
            r(&["sglang:e2e_request_latency_seconds"]),
            r(&["tgi_request_duration"]),
            r(&["trtllm_e2e_request_latency_seconds"]),
        ],
    ),
    (
        HistogramSignal::Queue,
        &[
            r(&["vllm:request_queue_time_seconds"]),
            r(&["sglang:queue_time_seconds"]),
            r(&["tgi_request_queue_duration"]),
            r(&["trtllm_request_queue_time_seconds"]),
        ],
    ),
    (HistogramSignal::PrefillBatch, &[r(&["tgi_batch_inference_duration"]).only("method", &["prefill"])]),
    (
        HistogramSignal::KvTransfer,
        &[r(&["vllm:nixl_xfer_time_seconds"]), r(&["sglang:kv_transfer_latency_ms"]).scaled(1e-3)],
    ),
    (HistogramSignal::DecodeBatch, &[r(&["tgi_batch_inference_duration"]).only("method", &["decode"])]),
    (
        HistogramSignal::SimLateness,
        &[r(&["goodput_sim_step_lateness_seconds"]), r(&["goodput_sim_chunk_lateness_seconds"])],
    ),
];

/// One series of a counter: its identity (metric name and labels) and value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesValue {
    pub series: String,
    /// A number, or "+Inf", "-Inf" or "NaN".
    #[serde(with = "prom_float")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub value: f64,
}

/// One series of a histogram signal, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesHistogram {
    pub series: String,
    pub histogram: Histogram,
}

/// What one scrape says, in common terms. Gauges are combined across series
/// already; counters and histograms stay per series, because increases must
/// be taken per series (each resets on its own) before they are summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Signals {
    pub sources: Vec<Source>,
    pub gauges: BTreeMap<GaugeSignal, f64>,
    pub counters: BTreeMap<CounterSignal, Vec<SeriesValue>>,
    pub histograms: BTreeMap<HistogramSignal, Vec<SeriesHistogram>>,
    /// Samples of the families no signal used, as exposed (not kept in a
    /// result).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub unmapped: Vec<Sample>,
    /// The histograms of more than [`MAX_HISTOGRAM_BOUNDS`] bounds, kept
    /// [coarsened](Histogram::coarsened) in `histograms`: for the scraper to
    /// warn of (not kept in a result, whose warnings say it).
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub coarsened: Vec<Coarsened>,
    /// What scrapes a long run dropped just before this one counted that
    /// its values no longer show (goodput-core's `scrape::thin`): absent
    /// from every scrape of a run that kept them all.
    #[serde(skip_serializing_if = "Carried::is_empty")]
    pub carried: Carried,
}

/// The increases since the kept scrape before that a kept scrape's values
/// no longer show, where the scrapes between were dropped to keep a long
/// run's scrapes bounded (`scrape::thin`): a series that went down
/// between them (a restart) counts what it counted before it went down,
/// which the kept values alone would not; a counter's series missing from
/// one of the two kept scrapes keeps its first or last value in the
/// dropped ones. A window that holds the kept scrape before reads them,
/// as it would have read the dropped scrapes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Carried {
    /// Each counter's increase, as one series (one a draft position for
    /// `spec_accepted_tokens_by_position`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<CounterSignal, Vec<SeriesValue>>,
    /// The resets (a series seen to go down) the dropped scrapes showed and
    /// the kept ones do not.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resets: BTreeMap<CounterSignal, u32>,
    /// Each histogram's observations, all series summed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<HistogramSignal, Histogram>,
    /// A counter's series missing from the kept scrape before and seen in
    /// a dropped one: the first value it took there, which a window reads
    /// before the rest as it would have read that scrape (from the series'
    /// last value in the window, a reset where lower, or as new).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub first: BTreeMap<CounterSignal, Vec<SeriesValue>>,
    /// A counter's series missing from this scrape and seen in a dropped
    /// one before it: the last value it took there, which a window holds
    /// it at after this scrape (its increase up to it is carried). This
    /// scrape does not show it: a window that starts here reads it as new
    /// when it comes back, and one that ends here counts it gone.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub last: BTreeMap<CounterSignal, Vec<SeriesValue>>,
}

impl Carried {
    /// Nothing carried: the kept values say it all.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
            && self.resets.is_empty()
            && self.histograms.is_empty()
            && self.first.is_empty()
            && self.last.is_empty()
    }
}

/// A histogram signal of one scrape with more distinct bounds than
/// [`MAX_HISTOGRAM_BOUNDS`], over all its series: kept without its buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coarsened {
    pub signal: HistogramSignal,
    /// The metric it was read from (`vllm:time_to_first_token_seconds`).
    pub metric: String,
    /// Its distinct bounds (`le`).
    pub bounds: usize,
}

impl Coarsened {
    /// What a result's warnings say of it.
    pub fn warning(&self) -> String {
        format!(
            "{HISTOGRAM_CAP_WARNING} {} had {} distinct bucket bounds (le) over its series in one scrape, more than \
             the {MAX_HISTOGRAM_BOUNDS} goodput keeps of one histogram (an engine's have a few dozen): its buckets were \
             not kept, so the server's {} quantiles (p50, p90, p99) are not computed; its count and mean are",
            self.metric,
            self.bounds,
            self.signal.name(),
        )
    }
}

/// How [`Coarsened::warning`] begins.
pub const HISTOGRAM_CAP_WARNING: &str = "server metrics: histogram";

/// Whether `w` is a [`Coarsened::warning`]: a saved run's, which its
/// samples no longer show, carried when it is analysed again.
pub fn is_histogram_cap_warning(w: &str) -> bool {
    w.starts_with(HISTOGRAM_CAP_WARNING)
}

impl Signals {
    /// Maps one scrape.
    pub fn from_scrape(scrape: &Scrape) -> Signals {
        map(scrape, true)
    }

    /// The distinct values of the `engine` label over this scrape's counter
    /// and histogram series: vLLM's engines (its data-parallel ranks behind
    /// one endpoint, `engine="0"` …). Empty where no series kept says.
    pub fn engine_labels(&self) -> std::collections::BTreeSet<String> {
        let counters = self.counters.values().flatten().map(|s| s.series.as_str());
        let histograms = self.histograms.values().flatten().map(|h| h.series.as_str());
        counters.chain(histograms).filter_map(|id| label_in(id, "engine")).map(str::to_owned).collect()
    }

    /// Maps one scrape without copying the samples no signal uses
    /// ([`Signals::unmapped`] left empty): what a scraper keeps of every
    /// scrape of a run, whose unmapped samples no one reads.
    pub fn mapped(scrape: &Scrape) -> Signals {
        map(scrape, false)
    }

    /// True when nothing was recognised: no known source, and no signal.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.gauges.is_empty() && self.counters.is_empty() && self.histograms.is_empty()
    }

    /// A counter's lifetime total over its series (not a window's increase).
    pub fn counter_total(&self, signal: CounterSignal) -> Option<f64> {
        self.counters.get(&signal).map(|series| series.iter().map(|s| s.value).sum())
    }

    /// A histogram's lifetime totals, all series merged.
    pub fn histogram(&self, signal: HistogramSignal) -> Option<Histogram> {
        Histogram::sum(self.histograms.get(&signal)?.iter().map(|s| &s.histogram))
    }
}

/// Maps a scrape; `keep_unmapped` false spares copying the samples no signal
/// uses when only the signals are wanted.
pub(crate) fn map(scrape: &Scrape, keep_unmapped: bool) -> Signals {
    let mut used = vec![false; scrape.families.len()];
    let mut signals = Signals { sources: detect(scrape), ..Signals::default() };

    for (signal, combine, rules) in GAUGES {
        let values = rules.iter().map(|rule| scalars(scrape, rule, false, &mut used)).find(|v| !v.is_empty());
        // A share above 1 (with a rounding's slack) is no share.
        let share = is_share(*signal);
        let values: Vec<f64> =
            values.into_iter().flatten().map(|s| s.value).filter(|&v| !share || v <= 1.0 + 1e-9).collect();
        if !values.is_empty() {
            let sum: f64 = values.iter().sum();
            let value = match combine {
                Combine::Sum => sum,
                Combine::Mean => sum / values.len() as f64,
            };
            signals.gauges.insert(*signal, value);
            if *signal == GaugeSignal::GpuPowerLimit {
                signals.gauges.insert(GaugeSignal::GpuPowerLimitGpus, values.len() as f64);
            }
        }
    }
    if let std::collections::btree_map::Entry::Vacant(e) = signals.gauges.entry(GaugeSignal::KvCacheTokens) {
        let tokens = vllm_cache_tokens(scrape, &mut used)
            .or_else(|| triton_cache_tokens(scrape))
            .or_else(|| trtllm_serve_cache_tokens(scrape, &mut used));
        if let Some(tokens) = tokens {
            e.insert(tokens);
        }
    }
    for (signal, rules) in COUNTERS {
        if let Some(series) = rules.iter().map(|rule| scalars(scrape, rule, true, &mut used)).find(|v| !v.is_empty()) {
            signals.counters.insert(*signal, series);
        }
    }
    for (signal, rules) in HISTOGRAMS {
        let found = rules.iter().map(|rule| histograms(scrape, rule, &mut used)).find(|(_, v)| !v.is_empty());
        if let Some((metric, mut series)) = found {
            let bounds = Histogram::distinct_bounds(series.iter().map(|s| &s.histogram));
            if bounds > MAX_HISTOGRAM_BOUNDS {
                series =
                    series.into_iter().map(|s| SeriesHistogram { histogram: s.histogram.coarsened(), ..s }).collect();
                signals.coarsened.push(Coarsened { signal: *signal, metric, bounds });
            }
            signals.histograms.insert(*signal, series);
        }
    }
    if keep_unmapped {
        signals.unmapped = scrape
            .families
            .iter()
            .zip(&used)
            .filter(|(_, &used)| !used)
            .flat_map(|(f, _)| f.samples.iter().cloned())
            .collect();
    }
    signals
}

/// The KV cache's tokens vLLM's `cache_config_info` gives in its labels,
/// `num_gpu_blocks` × `block_size`, summed over its engines (one series
/// each, `engine="0"` …), marking the family read; `None` where no series
/// gives both as whole numbers (`num_gpu_blocks="None"` before the cache is
/// sized).
fn vllm_cache_tokens(scrape: &Scrape, used: &mut [bool]) -> Option<f64> {
    let mut total = None;
    for (i, family) in scrape.families.iter().enumerate() {
        if family.name != "vllm:cache_config_info" {
            continue;
        }
        for s in &family.samples {
            let number = |label: &str| s.labels.get(label).and_then(|v| v.trim().parse::<u64>().ok());
            if let (Some(blocks), Some(size)) = (number("num_gpu_blocks"), number("block_size")) {
                let tokens = blocks.saturating_mul(size) as f64;
                *total.get_or_insert(0.0) += tokens;
                used[i] = true;
            }
        }
    }
    total.filter(|t: &f64| plausible(*t))
}

/// The KV cache's tokens Triton's TensorRT-LLM backend gives: each model's
/// `nv_trt_llm_kv_cache_block_metrics` of `kv_cache_block_type` `max` (its
/// blocks) times the one of `tokens_per` (a block's tokens) with the same
/// other labels, summed over models. (The family is read for its `fraction`
/// already, and marked so there.)
fn triton_cache_tokens(scrape: &Scrape) -> Option<f64> {
    let family = scrape.families.iter().find(|f| f.name == "nv_trt_llm_kv_cache_block_metrics")?;
    const KIND: &str = "kv_cache_block_type";
    fn others(s: &Sample) -> Vec<(&String, &String)> {
        s.labels.iter().filter(|(k, _)| k.as_str() != KIND).collect()
    }
    let of = |want: &'static str| {
        family.samples.iter().filter(move |s| s.labels.get(KIND).map(String::as_str) == Some(want))
    };
    blocks_times_size(of("max"), |max| of("tokens_per").find(|p| others(p) == others(max)))
}

/// The KV cache's tokens trtllm-serve gives: each `trtllm_kv_cache_max_blocks`
/// series times the `trtllm_kv_cache_tokens_per_block` of the same labels
/// (or the only one there is), summed over its series (its workers).
fn trtllm_serve_cache_tokens(scrape: &Scrape, used: &mut [bool]) -> Option<f64> {
    let find = |name: &str| scrape.families.iter().position(|f| f.name == name);
    let (blocks, per) = (find("trtllm_kv_cache_max_blocks")?, find("trtllm_kv_cache_tokens_per_block")?);
    let sizes = &scrape.families[per].samples;
    let only = match sizes.as_slice() {
        [only] => Some(only),
        _ => None,
    };
    // Its own worker's size, or the only one there is.
    let total = blocks_times_size(scrape.families[blocks].samples.iter(), |b| {
        sizes.iter().find(|p| p.labels == b.labels).or(only)
    })?;
    used[blocks] = true;
    used[per] = true;
    Some(total)
}

/// A KV cache's tokens from its blocks: each block count times the tokens a
/// block holds that `size_of` pairs with it, summed (those with no size, or
/// an implausible product, left out); `None` where none pairs.
fn blocks_times_size<'a>(
    blocks: impl Iterator<Item = &'a Sample>,
    size_of: impl Fn(&Sample) -> Option<&'a Sample>,
) -> Option<f64> {
    let mut total = None;
    for b in blocks {
        let tokens = size_of(b).map(|size| b.value * size.value).filter(|&t| plausible(t));
        if let Some(tokens) = tokens {
            *total.get_or_insert(0.0) += tokens;
        }
    }
    total
}

/// The finite, scaled values a rule finds, marking the families read;
/// each with its series' identity where `identified` (a counter's, whose
/// increases are taken series by series), else with none (a gauge's, summed
/// at once: 99,000 series of one had had their identities written out at
/// every scrape, and dropped).
fn scalars(scrape: &Scrape, rule: &Rule, identified: bool, used: &mut [bool]) -> Vec<SeriesValue> {
    let mut out = Vec::new();
    for metric in rule.metrics {
        let found_before = out.len();
        for (i, family) in scrape.families.iter().enumerate() {
            if !metric.starts_with(family.name.as_str()) {
                continue;
            }
            let before = out.len();
            out.extend(
                family
                    .samples
                    .iter()
                    .filter(|s| s.name == *metric && plausible(s.value) && rule.filter.keeps(&s.labels))
                    .map(|s| SeriesValue {
                        series: if identified { rule.series(metric, &s.labels) } else { String::new() },
                        value: s.value * rule.scale,
                    }),
            );
            used[i] |= out.len() > before;
        }
        // prometheus_client exposes a counter's creation time as a gauge
        // family of its own (`x_created` beside `x_total`): part of the
        // counter, not an unknown metric.
        if let Some(stem) = metric.strip_suffix("_total").filter(|_| out.len() > found_before) {
            for (i, family) in scrape.families.iter().enumerate() {
                used[i] |= family.name.strip_prefix(stem) == Some("_created");
            }
        }
    }
    out
}

/// The histogram series a rule finds, scaled to seconds, marking the
/// families read, and the metrics they were found in.
fn histograms(scrape: &Scrape, rule: &Rule, used: &mut [bool]) -> (String, Vec<SeriesHistogram>) {
    let mut out = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for metric in rule.metrics {
        let found: Vec<SeriesHistogram> = scrape
            .histograms(metric)
            .into_iter()
            .filter(|h| rule.filter.keeps(&h.labels) && plausible(h.count))
            .map(|mut h| {
                // What no exporter writes is left out: a sum, or a bucket.
                h.sum = h.sum.filter(|&s| plausible(s));
                h.buckets.retain(|b| plausible(b.count));
                SeriesHistogram { series: series_id(metric, &h.labels), histogram: scale(h, rule.scale) }
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        for (i, family) in scrape.families.iter().enumerate() {
            let part = family.name.strip_prefix(metric);
            used[i] |= matches!(part, Some("" | "_bucket" | "_sum" | "_count" | "_created"));
        }
        names.push(metric);
        out.extend(found);
    }
    (names.join(", "), out)
}

fn scale(h: Histogram, by: f64) -> Histogram {
    if by == 1.0 {
        return h;
    }
    Histogram {
        buckets: h.buckets.into_iter().map(|b| Bucket { le: b.le * by, count: b.count }).collect(),
        sum: h.sum.map(|s| s * by),
        ..h
    }
}

/// The value of one label in a series' identity (as [`series_id`] writes
/// it), e.g. the `position` of a per-position counter.
pub fn series_label<'a>(series: &'a str, label: &str) -> Option<&'a str> {
    let key = format!("{label:?}: \"");
    let at = series.find(&key)? + key.len();
    let rest = &series[at..];
    Some(&rest[..rest.find('"')?])
}

/// A series' identity across scrapes: metric name and labels.
pub(crate) fn series_id(metric: &str, labels: &Labels) -> String {
    if labels.is_empty() {
        return metric.to_string();
    }
    format!("{metric}{labels:?}")
}

/// The value of label `name` in a [`series_id`], where it has one and the
/// value needed no escaping.
fn label_in<'a>(id: &'a str, name: &str) -> Option<&'a str> {
    let labels = &id[id.find('{')?..];
    let key = format!("{name:?}: \"");
    let at =
        [format!("{{{key}"), format!(", {key}")].iter().find_map(|k| labels.find(k.as_str()).map(|i| i + k.len()))?;
    let value = &labels[at..];
    let value = &value[..value.find('"')?];
    (!value.contains('\\')).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::scrape::parse::parse;

    #[test]
    fn the_engine_label_is_read_back_from_a_series_id() {
        let labels =
            |pairs: &[(&str, &str)]| -> Labels { pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };
        let id = series_id("vllm:x", &labels(&[("engine", "3"), ("model_name", "m")]));
        assert_eq!(label_in(&id, "engine"), Some("3"));
        assert_eq!(label_in(&id, "model_name"), Some("m"));
        let id = series_id("vllm:x", &labels(&[("a", "1"), ("engine", "12")]));
        assert_eq!(label_in(&id, "engine"), Some("12"));
        // A value that holds the key's text is not the key.
        let id = series_id("vllm:x", &labels(&[("a", "\"engine\": \"9")]));
        assert_eq!(label_in(&id, "engine"), None);
        assert_eq!(label_in("vllm:x", "engine"), None);
        let s = signals(
            "# TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 1\n\
             vllm:time_to_first_token_seconds_count{engine=\"0\"} 1\n\
             vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\"} 2\n\
             vllm:time_to_first_token_seconds_count{engine=\"1\"} 2\n",
        );
        assert_eq!(s.engine_labels().into_iter().collect::<Vec<_>>(), ["0", "1"]);
    }

    fn signals(text: &str) -> Signals {
        let scrape = parse(text);
        assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
        Signals::from_scrape(&scrape)
    }

    /// The KV cache's size: vLLM's in its info metric's labels, engine by
    /// engine; SGLang's a gauge, rank by rank; none before vLLM sizes it.
    #[test]
    fn the_kv_cache_s_size_is_read_from_vllm_s_labels_and_sglang_s_gauge() {
        let vllm = "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"1000\"} 1.0\n\
                    vllm:cache_config_info{block_size=\"16\",engine=\"1\",num_gpu_blocks=\"500\"} 1.0\n";
        assert_eq!(signals(vllm).gauges[&GaugeSignal::KvCacheTokens], 24_000.0);
        let before_sizing = "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1.0\n";
        assert!(!signals(before_sizing).gauges.contains_key(&GaugeSignal::KvCacheTokens));
        let sglang =
            "sglang:max_total_num_tokens{dp_rank=\"0\"} 400000\nsglang:max_total_num_tokens{dp_rank=\"1\"} 400000\n";
        assert_eq!(signals(sglang).gauges[&GaugeSignal::KvCacheTokens], 800_000.0);
        // Triton's TensorRT-LLM backend: each model's max blocks × its tokens per block.
        let triton = "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"a\",version=\"1\"} 1000\n\
                      nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"tokens_per\",model=\"a\",version=\"1\"} 64\n\
                      nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"fraction\",model=\"a\",version=\"1\"} 0.5\n\
                      nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"b\",version=\"1\"} 10\n\
                      nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"tokens_per\",model=\"b\",version=\"1\"} 32\n";
        let s = signals(triton);
        assert_eq!(s.gauges[&GaugeSignal::KvCacheTokens], 64_320.0);
        assert_eq!(s.gauges[&GaugeSignal::KvCacheUsage], 0.5);
        // trtllm-serve: each worker's max blocks × its tokens per block.
        let serve = "trtllm_kv_cache_max_blocks{model_name=\"m\",pid=\"1\"} 1000\n\
                     trtllm_kv_cache_max_blocks{model_name=\"m\",pid=\"2\"} 500\n\
                     trtllm_kv_cache_tokens_per_block{model_name=\"m\",pid=\"1\"} 32\n\
                     trtllm_kv_cache_tokens_per_block{model_name=\"m\",pid=\"2\"} 64\n";
        assert_eq!(signals(serve).gauges[&GaugeSignal::KvCacheTokens], 64_000.0);
        let one_size = "trtllm_kv_cache_max_blocks{pid=\"1\"} 1000\ntrtllm_kv_cache_tokens_per_block 32\n";
        assert_eq!(signals(one_size).gauges[&GaugeSignal::KvCacheTokens], 32_000.0);
    }

    #[test]
    fn sources_are_told_by_prefix() {
        let cases = [
            ("vllm:num_requests_running", Some(Source::Vllm)),
            ("sglang:token_usage", Some(Source::Sglang)),
            ("tgi_queue_size", Some(Source::Tgi)),
            ("llamacpp:requests_deferred", Some(Source::LlamaCpp)),
            ("nv_inference_request_success", Some(Source::Triton)),
            ("nv_trt_llm_request_metrics", Some(Source::Triton)),
            ("DCGM_FI_DEV_GPU_UTIL", Some(Source::Dcgm)),
            ("process_cpu_seconds_total", None),
            ("vllm_num_requests_running", None),
        ];
        for (name, want) in cases {
            assert_eq!(Source::of_metric(name), want, "{name}");
        }
        assert!(Source::Triton.is_engine() && !Source::Dcgm.is_engine());
    }

    /// Samples no exporter writes are left out as if absent: a share above
    /// 1, a queue below zero, a sum of 1e308 (a server that said so had
    /// shown "KV peak inf%" and a queue of -5).
    #[test]
    fn samples_no_exporter_writes_are_left_out() {
        let s = signals(
            "vllm:kv_cache_usage_perc 1e308\n\
             vllm:num_requests_waiting -5\n\
             vllm:num_requests_running 3\n\
             vllm:generation_tokens_total 1e300\n\
             vllm:time_per_output_token_seconds_bucket{le=\"0.05\"} 3\n\
             vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 4\n\
             vllm:time_per_output_token_seconds_sum 1e308\n\
             vllm:time_per_output_token_seconds_count 4\n",
        );
        assert!(!s.gauges.contains_key(&GaugeSignal::KvCacheUsage), "{:?}", s.gauges);
        assert!(!s.gauges.contains_key(&GaugeSignal::WaitingRequests), "{:?}", s.gauges);
        assert_eq!(s.gauges[&GaugeSignal::RunningRequests], 3.0);
        assert_eq!(s.counter_total(CounterSignal::GenerationTokens), None);
        let itl = s.histogram(HistogramSignal::Itl).unwrap();
        assert_eq!((itl.count, itl.sum), (4.0, None));
        // A share of 1 is kept.
        assert_eq!(signals("vllm:kv_cache_usage_perc 1\n").gauges[&GaugeSignal::KvCacheUsage], 1.0);
    }

    #[test]
    fn deprecated_vllm_names_are_read_when_the_new_ones_are_absent() {
        let s = signals(
            "vllm:gpu_cache_usage_perc{engine=\"0\"} 0.25\n\
             vllm:gpu_cache_usage_perc{engine=\"1\"} 0.75\n\
             vllm:gpu_prefix_cache_hits_total 12\n\
             vllm:time_per_output_token_seconds_bucket{le=\"0.05\"} 3\n\
             vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 4\n",
        );
        assert_eq!(s.gauges[&GaugeSignal::KvCacheUsage], 0.5);
        assert_eq!(s.counter_total(CounterSignal::PrefixCacheHits), Some(12.0));
        assert_eq!(s.histogram(HistogramSignal::Itl).unwrap().count, 4.0);
        // and the new names win when both are there
        let s = signals("vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.1\n");
        assert_eq!(s.gauges[&GaugeSignal::KvCacheUsage], 0.1);
        assert_eq!(s.unmapped[0].name, "vllm:gpu_cache_usage_perc");
    }

    #[test]
    fn the_simulators_lateness_is_read_from_either_profile() {
        let engine = signals(
            "goodput_sim_step_lateness_seconds_bucket{le=\"0.2\"} 7\n\
             goodput_sim_step_lateness_seconds_bucket{le=\"+Inf\"} 9\n\
             goodput_sim_step_lateness_seconds_sum 1.5\ngoodput_sim_step_lateness_seconds_count 9\n",
        );
        assert_eq!(engine.histogram(HistogramSignal::SimLateness).unwrap().count, 9.0);
        let fixed = signals(
            "goodput_sim_chunk_lateness_seconds_bucket{le=\"0.001\"} 3\n\
             goodput_sim_chunk_lateness_seconds_bucket{le=\"+Inf\"} 4\ngoodput_sim_chunk_lateness_seconds_count 4\n",
        );
        assert_eq!(fixed.histogram(HistogramSignal::SimLateness).unwrap().count, 4.0);
    }

    #[test]
    fn triton_tensorrt_llm_signals_come_from_labelled_families() {
        let s = signals(
            "# TYPE nv_trt_llm_request_metrics gauge\n\
             nv_trt_llm_request_metrics{model=\"tensorrt_llm\",request_type=\"active\",version=\"1\"} 5\n\
             nv_trt_llm_request_metrics{model=\"tensorrt_llm\",request_type=\"waiting\",version=\"1\"} 2\n\
             nv_trt_llm_request_metrics{model=\"tensorrt_llm\",request_type=\"max\",version=\"1\"} 256\n\
             # TYPE nv_trt_llm_kv_cache_block_metrics gauge\n\
             nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"fraction\",model=\"tensorrt_llm\",version=\"1\"} 0.55\n\
             nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"tensorrt_llm\",version=\"1\"} 110\n\
             # TYPE nv_inference_request_success counter\n\
             nv_inference_request_success{model=\"ensemble\",version=\"1\"} 40\n\
             nv_inference_request_success{model=\"tensorrt_llm\",version=\"1\"} 40\n\
             # TYPE nv_gpu_utilization gauge\n\
             nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.5\n\
             nv_gpu_utilization{gpu_uuid=\"GPU-b\"} 0.7\n\
             # TYPE nv_inference_first_response_histogram_ms histogram\n\
             nv_inference_first_response_histogram_ms_bucket{model=\"ensemble\",version=\"1\",le=\"100\"} 30\n\
             nv_inference_first_response_histogram_ms_bucket{model=\"ensemble\",version=\"1\",le=\"+Inf\"} 40\n\
             nv_inference_first_response_histogram_ms_sum{model=\"ensemble\",version=\"1\"} 3000\n\
             nv_inference_first_response_histogram_ms_count{model=\"ensemble\",version=\"1\"} 40\n",
        );
        assert_eq!(s.sources, vec![Source::Triton]);
        assert_eq!(s.gauges[&GaugeSignal::RunningRequests], 5.0);
        assert_eq!(s.gauges[&GaugeSignal::WaitingRequests], 2.0);
        assert_eq!(s.gauges[&GaugeSignal::KvCacheUsage], 0.55);
        assert!((s.gauges[&GaugeSignal::GpuUtilization] - 0.6).abs() < 1e-12);
        // a sum over models: an ensemble counts its requests again
        assert_eq!(s.counter_total(CounterSignal::RequestsSucceeded), Some(80.0));
        // milliseconds scaled to seconds, bounds and sum alike
        let ttft = s.histogram(HistogramSignal::Ttft).unwrap();
        assert_eq!((ttft.buckets[0].le, ttft.sum, ttft.mean()), (0.1, Some(3.0), Some(0.075)));
    }

    /// A histogram whose series hold more distinct bounds together than
    /// MAX_HISTOGRAM_BOUNDS keeps its count and sum, not its buckets, and
    /// says so; one at the cap is kept whole.
    #[test]
    fn a_histogram_of_too_many_bounds_is_coarsened_and_named() {
        // Two series, each with bounds of its own: `per` each, +Inf shared.
        let text = |per: usize| {
            let mut t = String::from("# TYPE vllm:time_to_first_token_seconds histogram\n");
            for pod in 0..2 {
                for i in 0..per {
                    let le = (pod * per + i) as f64 / 1000.0 + 0.0005;
                    t += &format!("vllm:time_to_first_token_seconds_bucket{{pod=\"{pod}\",le=\"{le}\"}} {}\n", i + 1);
                }
                t += &format!("vllm:time_to_first_token_seconds_bucket{{pod=\"{pod}\",le=\"+Inf\"}} {per}\n");
                t += &format!("vllm:time_to_first_token_seconds_sum{{pod=\"{pod}\"}} 3\n");
                t += &format!("vllm:time_to_first_token_seconds_count{{pod=\"{pod}\"}} {per}\n");
            }
            t
        };
        // 2 × 500 + the shared +Inf: 1,001 bounds.
        let over = signals(&text(500));
        assert_eq!(
            over.coarsened,
            vec![Coarsened {
                signal: HistogramSignal::Ttft,
                metric: "vllm:time_to_first_token_seconds".into(),
                bounds: MAX_HISTOGRAM_BOUNDS + 1
            }]
        );
        let ttft = over.histogram(HistogramSignal::Ttft).unwrap();
        assert_eq!((ttft.buckets.len(), ttft.count, ttft.mean(), ttft.quantile(0.5)), (1, 1000.0, Some(0.006), None));
        let said = over.coarsened[0].warning();
        assert!(is_histogram_cap_warning(&said), "{said}");
        for part in ["vllm:time_to_first_token_seconds", "1001 distinct bucket bounds", "1000", "not computed"] {
            assert!(said.contains(part), "{part:?} in {said}");
        }
        // 2 × 499 + 1 = 999 bounds: whole.
        let under = signals(&text(499));
        assert!(under.coarsened.is_empty());
        let ttft = under.histogram(HistogramSignal::Ttft).unwrap();
        assert_eq!((ttft.buckets.len(), ttft.count), (999, 998.0));
        assert!(ttft.quantile(0.5).is_some());
    }

    #[test]
    fn non_finite_values_are_left_out() {
        let s = signals("vllm:num_requests_running{engine=\"0\"} NaN\nvllm:num_requests_running{engine=\"1\"} 3\n");
        assert_eq!(s.gauges[&GaugeSignal::RunningRequests], 3.0);
        let s = signals("vllm:num_requests_running NaN\n");
        assert!(s.gauges.is_empty());
    }
}
