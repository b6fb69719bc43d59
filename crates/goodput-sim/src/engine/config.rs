//! The engine's configuration: which model on which GPU at which precision,
//! and the vLLM-style limits (batch budget, sequence cap, block size, chunked
//! prefill, prefix caching), with the defaults vLLM uses.

use super::calibration::Calibration;
use super::catalog::{GpuSpec, KvCacheDtype, ModelSpec, Precision};
use super::disagg::{Disaggregation, KvLink};
use super::error::Error;
use super::roofline::kv_capacity;
use super::router::RouterPolicy;
use super::scheduler::{
    sglang_default_max_running, LoadBalance, ReplicaBalancer, SchedulerPolicy, TRTLLM_MAX_BATCH_SIZE,
};
use crate::template::ChatTemplate;
use goodput_core::doc::config::{ep_ranks, pool_gpus};
use serde::{Deserialize, Serialize};

/// What an MXFP4 mixture of experts' expert products multiply against:
/// FP8 activations (W4A8) or 16-bit ones (W4A16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mxfp4Activations {
    Fp8,
    Bf16,
}

impl std::fmt::Display for Mxfp4Activations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mxfp4Activations::Fp8 => "fp8",
            Mxfp4Activations::Bf16 => "bf16",
        })
    }
}

impl std::str::FromStr for Mxfp4Activations {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp8" | "mxfp8" | "w4a8" => Ok(Mxfp4Activations::Fp8),
            "bf16" | "fp16" | "16" | "w4a16" => Ok(Mxfp4Activations::Bf16),
            other => Err(format!(
                "unknown MXFP4 activations `{other}`: use fp8 (W4A8, MXFP4 × MXFP8) or bf16 (W4A16, 16-bit \
                 activations)"
            )),
        }
    }
}

/// Everything that defines one simulated engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineConfig {
    pub model: ModelSpec,
    pub gpu: GpuSpec,
    pub precision: Precision,
    pub kv_cache_dtype: KvCacheDtype,
    /// Tensor-parallel degree: GPUs that share one copy of the model.
    pub tp: u32,
    /// Share of each GPU's memory the engine may use, as given (vLLM's
    /// `--gpu-memory-utilization`, SGLang's `--mem-fraction-static`,
    /// TensorRT-LLM's `free_gpu_memory_fraction`); `None`: the scheduler's
    /// default ([`memory_share`](Self::memory_share)).
    #[serde(default)]
    pub gpu_memory_utilization: Option<f64>,
    /// `None`: vLLM's default, 1024 on GPUs with at least 70 GiB, else 256.
    pub max_num_seqs: Option<u32>,
    /// Token budget of one step.
    pub max_num_batched_tokens: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    pub enable_chunked_prefill: bool,
    pub enable_prefix_caching: bool,
    /// Use exactly this many KV blocks instead of what memory allows (vLLM's
    /// `num_gpu_blocks_override`); tests use it to build tiny caches.
    pub num_gpu_blocks_override: Option<u32>,
    pub calibration: Calibration,
    /// What the served model wraps around a chat's messages (and a raw
    /// prompt's BOS), counted in the prompt as a real server counts it.
    #[serde(default)]
    pub chat_template: ChatTemplate,
    /// Data-parallel degree: replicas of the engine (each on `tp` GPUs)
    /// behind a router.
    #[serde(default = "one")]
    pub dp: u32,
    /// How the router picks a replica (with `dp` > 1).
    #[serde(default)]
    pub router: RouterPolicy,
    /// Power-of-two's loads polled every this many seconds, as SGLang's
    /// router's load monitor polls them (`--worker-load-check-interval`,
    /// 10 by default), instead of its live counts ([`Router::polled`]).
    ///
    /// [`Router::polled`]: super::router::Router::polled
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_poll_s: Option<f64>,
    /// Speculative decoding: `None` decodes one token a step.
    #[serde(default)]
    pub spec: Option<SpecDecoding>,
    /// Whose scheduler runs the batch: vLLM's (the default) or
    /// TensorRT-LLM's guaranteed-no-evict one (`scheduler/trtllm.rs`).
    #[serde(default)]
    pub scheduler: SchedulerPolicy,
    /// Prefill/decode disaggregation: a pool of prefill instances and one of
    /// decode instances, each on `tp` GPUs (`None`: every replica does both).
    #[serde(default)]
    pub pd: Option<Disaggregation>,
    /// Expert-parallel degree (vLLM's EP size = TP × the DP ranks that share
    /// the experts): the GPUs a mixture of experts' experts are spread over,
    /// whole. 1: the experts are split by TP like every other weight. See
    /// `parallel.rs`.
    #[serde(default = "one")]
    pub ep: u32,
    /// Pipeline-parallel degree: stages the layers are split over, each on
    /// `tp` GPUs.
    #[serde(default = "one")]
    pub pp: u32,
    /// Whether a step may prefill and decode together (vLLM V1's and
    /// TensorRT-LLM's in-flight batching: the default). `false`: a step
    /// that computes any prompt decodes nothing, and the running requests
    /// decode in the steps with no prompt to compute, as SGLang does
    /// without `--enable-mixed-chunk` and vLLM V0 did without chunked
    /// prefill.
    #[serde(default = "yes")]
    pub mixed_batches: bool,
    /// SGLang's `--schedule-conservativeness` (under `--scheduler sglang`):
    /// scales the share of the running requests' remaining tokens that
    /// admission keeps free for them (0.7 of it at 1, the default).
    #[serde(default = "one_f64", skip_serializing_if = "is_one")]
    pub schedule_conservativeness: f64,
    /// SGLang's `--scheduler-recv-interval` (under `--scheduler sglang`):
    /// new requests are taken from the front end only once this many decode
    /// steps have run since the last time (a step that computes a prompt
    /// counts as all of them; an idle engine takes them at once), as its
    /// `SchedulerRecvSkipper` does. 1, SGLang's default: every step.
    #[serde(default = "one_u32", skip_serializing_if = "is_one_u32")]
    pub scheduler_recv_interval: u32,
    /// SGLang's `--max-prefill-tokens` (under `--scheduler sglang`): the
    /// prompt tokens one step takes past its first prompt's (a chunk's
    /// budget, `max_num_batched_tokens`, bounds them too).
    /// [`SGLANG_MAX_PREFILL_TOKENS`](super::scheduler::SGLANG_MAX_PREFILL_TOKENS),
    /// 16,384, SGLang's default.
    #[serde(default = "sglang_max_prefill_tokens", skip_serializing_if = "is_sglang_max_prefill_tokens")]
    pub max_prefill_tokens: u32,
    /// TensorRT-LLM's `batch_wait_timeout_iters` (under `--scheduler
    /// trtllm`): a step that would run prompts beside decodes holds the
    /// prompts back, for up to this many such steps in a row, until their
    /// tokens and the decodes' reach `batch_wait_max_tokens_ratio` of the
    /// step's budget (its `PyExecutor._waiting_requests`). 0, its default:
    /// never held.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub batch_wait_timeout_iters: u32,
    /// TensorRT-LLM's `batch_wait_max_tokens_ratio`: the share of the
    /// step's token budget (`max_num_tokens`) a step's prompts (counted
    /// whole) and decodes reach to stop the holding. 0, its default.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub batch_wait_max_tokens_ratio: f64,
    /// What an MXFP4 mixture of experts' expert products multiply against
    /// (`--mxfp4-activations`): FP8 activations (W4A8: MXFP4 × MXFP8, vLLM's
    /// `VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8`, TensorRT-LLM on Blackwell) or
    /// 16-bit ones (W4A16: vLLM's Marlin and Triton kernels, FlashInfer's
    /// MXFP4 × BF16, AITER's A16W4 on the MI355X). `None`: the server's own
    /// on the GPU ([`EngineConfig::default_mxfp4_activations`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mxfp4_activations: Option<Mxfp4Activations>,
    /// SGLang's `--load-balance-method` (under `--scheduler sglang`): which
    /// attention rank of DP attention a request goes to
    /// (`scheduler/balance.rs`).
    #[serde(default, skip_serializing_if = "is_auto")]
    pub load_balance: LoadBalance,
    /// The decode pool's own method under `--pd` (`--load-balance-method
    /// P:D`); `None`: `load_balance` is both pools'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_load_balance: Option<LoadBalance>,
    /// vLLM's internal load balancing (`--internal-lb`, under `--scheduler
    /// vllm`): a dense model's `dp` replicas are one `vllm serve
    /// --data-parallel-size`, balanced by its front end in the router's place
    /// ([`ReplicaBalancer::Vllm`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub internal_lb: bool,
    /// vLLM's `--api-server-count` under `--internal-lb`: its front ends,
    /// each balancing on its own; `None`: vLLM's default, one a replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server_count: Option<u32>,
    /// Whether the scheduler works a step ahead (vLLM's
    /// `--async-scheduling`, TensorRT-LLM's overlap scheduler, SGLang's
    /// overlap schedule): step N+1 is chosen while step N runs, so a
    /// request that reaches a busy engine joins the step after next; an
    /// idle engine takes it at once. Off: each step is chosen after the
    /// one before ends (the library's default; goodput's commands default it
    /// to the servers' own, [`EngineConfig::servers_schedule_ahead`]).
    /// TensorRT-LLM's prefill instances under `pd` never do
    /// ([`EngineConfig::pool`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub async_scheduling: bool,
}

fn is_auto(m: &LoadBalance) -> bool {
    *m == LoadBalance::Auto
}

fn one_u32() -> u32 {
    1
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn sglang_max_prefill_tokens() -> u32 {
    super::scheduler::SGLANG_MAX_PREFILL_TOKENS
}

fn is_sglang_max_prefill_tokens(v: &u32) -> bool {
    *v == super::scheduler::SGLANG_MAX_PREFILL_TOKENS
}

fn is_one_u32(v: &u32) -> bool {
    *v == 1
}

fn one_f64() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

/// Speculative decoding, as vLLM runs it: each step, every decoding
/// sequence carries `tokens` draft tokens that the target model verifies in
/// the same forward pass (a prefill of `1 + tokens` positions over its
/// context); the accepted ones and one more (the bonus token the target
/// samples after the last accepted one) are emitted together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpecDecoding {
    /// Draft tokens proposed per sequence a step (vLLM's
    /// `num_speculative_tokens`).
    pub tokens: u32,
    /// The chance that a draft token is accepted when every one before it
    /// was: draws are independent, so position `i` (from 0) is accepted in
    /// `acceptance^(i+1)` of the proposals and a step yields
    /// `(1 − a^(k+1)) / (1 − a)` tokens on average. Real acceptance depends on
    /// the prompts and the drafter, not on this model: take it from a
    /// server's `vllm:spec_decode_*` counters.
    pub acceptance: f64,
    /// The drafter's time per draft token, as a share of the verifying
    /// step's time: a few percent for an EAGLE or MTP head, 0 for n-gram
    /// lookup. An assumption of this model, not a measurement.
    pub draft_cost: f64,
}

/// The most draft tokens a step may carry.
pub const MAX_SPEC_TOKENS: u32 = 16;

impl SpecDecoding {
    /// Refuses a draft length outside 1..=[`MAX_SPEC_TOKENS`], and an
    /// acceptance or draft cost outside [0, 1] (NaN among them), naming the
    /// flag that set it.
    pub fn check(&self) -> Result<(), String> {
        if self.tokens == 0 || self.tokens > MAX_SPEC_TOKENS {
            return Err(format!(
                "--spec-tokens {} must lie in 1..={MAX_SPEC_TOKENS}, or be 0 for none (vLLM's num_speculative_tokens; 3 \
                 to 5 is usual)",
                self.tokens
            ));
        }
        if !(0.0..=1.0).contains(&self.acceptance) {
            return Err(format!(
                "--spec-acceptance {} must lie in [0, 1]: the chance that a draft token is accepted",
                self.acceptance
            ));
        }
        if !(0.0..=1.0).contains(&self.draft_cost) {
            return Err(format!(
                "--spec-draft-cost {} must lie in [0, 1]: a draft token's time as a share of the verifying step's",
                self.draft_cost
            ));
        }
        Ok(())
    }
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

/// The most replicas one engine configuration may have.
pub const MAX_DP: u32 = 1024;

/// The most front ends `--api-server-count` takes.
pub const MAX_API_SERVERS: u32 = 1024;

/// The engine's effective settings, as the result keeps them
/// (`config.engine`, `engine.config`): the sequence cap resolved, the
/// calibration's constants by name.
impl From<&EngineConfig> for goodput_core::doc::config::EngineSettings {
    fn from(cfg: &EngineConfig) -> Self {
        // vLLM's front ends, where they balance the replicas.
        let vllm_front_ends = match cfg.dense_controller() {
            Some(ReplicaBalancer::Vllm { api_servers }) => Some(api_servers),
            _ => None,
        };
        goodput_core::doc::config::EngineSettings {
            model: cfg.model.name.clone(),
            gpu: cfg.gpu.name.clone(),
            precision: cfg.precision.to_string(),
            kv_cache_dtype: cfg.kv_cache_dtype.to_string(),
            // Disaggregated, the prefill pool's (the decode pool's is in `pd`
            // where it differs).
            tp: cfg.pool_tp(false),
            dp: cfg.dp,
            // The server's own balancer, where it takes the router's place,
            // is named by SGLang's method (`load_balance_method`) or vLLM's
            // `internal_lb`.
            router: ((cfg.dp > 1 || cfg.pd.is_some()) && cfg.dense_controller().is_none())
                .then(|| cfg.router.to_string()),
            router_poll_s: cfg.router_poll_s.filter(|_| cfg.dp > 1),
            ep: cfg.pool_ep(false),
            pp: cfg.pp,
            spec_decode: cfg.spec.map(|s| goodput_core::doc::config::SpecDecodeSettings {
                tokens: s.tokens,
                acceptance: s.acceptance,
                draft_cost: s.draft_cost,
            }),
            pd: KvLink::new(cfg).zip(cfg.pd).map(|(link, pd)| goodput_core::doc::config::PdSettings {
                prefill: pd.prefill,
                decode: pd.decode,
                decode_tp: pd.split_tp(cfg.tp).then(|| cfg.pool_tp(true)),
                decode_ep: pd.split_ep(cfg.ep).then(|| cfg.pool_ep(true)),
                kv_link: link.kind.as_str().to_string(),
                kv_link_gbps: link.gbps,
                kv_link_latency_us: link.latency.as_secs_f64() * 1e6,
            }),
            gpu_memory_utilization: cfg.memory_share(),
            max_num_seqs: cfg.resolved_max_num_seqs(),
            max_num_batched_tokens: cfg.max_num_batched_tokens,
            block_size: cfg.block_size,
            chat_template: cfg.chat_template.name().to_string(),
            enable_chunked_prefill: cfg.enable_chunked_prefill,
            enable_prefix_caching: cfg.enable_prefix_caching,
            scheduler: cfg.scheduler.to_string(),
            schedule_conservativeness: (cfg.scheduler == SchedulerPolicy::Sglang)
                .then_some(cfg.schedule_conservativeness),
            scheduler_recv_interval: (cfg.scheduler_recv_interval > 1).then_some(cfg.scheduler_recv_interval),
            max_prefill_tokens: (!is_sglang_max_prefill_tokens(&cfg.max_prefill_tokens))
                .then_some(cfg.max_prefill_tokens),
            batch_wait_timeout_iters: cfg.batch_waits_any().then_some(cfg.batch_wait_timeout_iters),
            batch_wait_max_tokens_ratio: cfg.batch_waits_any().then_some(cfg.batch_wait_max_tokens_ratio),
            mxfp4_activations: cfg.mxfp4_activations.map(|a| a.to_string()),
            load_balance_method: cfg.load_balance_words(),
            internal_lb: vllm_front_ends.is_some(),
            api_server_count: vllm_front_ends,
            mixed_batches: (!cfg.mixed_batches).then_some(false),
            async_scheduling: Some(cfg.async_scheduling),
            gpu_family: cfg.gpu.family.to_string(),
            calibrated: Some(super::calibration::Calibration::is_calibrated(cfg.gpu.family)),
            constants_from: (!super::calibration::Calibration::is_calibrated(cfg.gpu.family))
                .then(|| super::calibration::Calibration::constants_family(cfg.gpu.family).to_string()),
            // The constants by name, as the calibration's own serialisation
            // names them (every one a number, so the conversion cannot fail).
            calibration: serde_json::to_value(&cfg.calibration).and_then(serde_json::from_value).unwrap_or_default(),
        }
    }
}

/// Why vLLM refuses `tp` GPUs for `model` (the words after `--tp N`),
/// with the sizes it takes: TP must divide the attention heads, and the
/// KV heads must split evenly over the GPUs (KV heads a multiple of TP) or
/// replicate evenly (TP a multiple of the KV heads). Latent attention
/// (MLA) caches no per-head keys: the KV-head rule does not apply to it.
fn tp_refusal(model: &ModelSpec, tp: u32) -> Option<String> {
    let (heads, kv) = (model.num_heads, model.num_kv_heads);
    let kv_rule = |t: u32| model.mla.is_some() || kv == 0 || kv.is_multiple_of(t) || t.is_multiple_of(kv);
    let fits = |t: u32| t > 0 && heads.is_multiple_of(t) && kv_rule(t);
    if fits(tp) {
        return None;
    }
    // Every divisor of the heads that passes, up to the most GPUs a plan
    // takes (the sizes up to 16 and the powers of two past it had left
    // out 28 of 28 heads, which runs).
    let mut divisors: Vec<u32> = (1..)
        .take_while(|&d: &u32| d.saturating_mul(d) <= heads)
        .filter(|&d| heads.is_multiple_of(d))
        .flat_map(|d| [d, heads / d])
        .collect();
    divisors.sort_unstable();
    divisors.dedup();
    let choices: Vec<String> = divisors.into_iter().filter(|&t| t <= 4096 && fits(t)).map(|t| t.to_string()).collect();
    let choices = match choices.as_slice() {
        [] => "1".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    };
    Some(if !heads.is_multiple_of(tp.max(1)) {
        format!("does not divide {}'s {heads} attention heads; use {choices}", model.name)
    } else {
        format!(
            "does not fit {}'s {kv} KV heads: vLLM needs the KV heads to split evenly over the GPUs (a multiple of \
             TP) or each to be replicated evenly (TP a multiple of them); use {choices}",
            model.name
        )
    })
}

/// vLLM's step budget where none is given, on a GPU of 70 GiB or more
/// other than the A100 ([`vllm_large_gpu`]), and TensorRT-LLM's
/// `max_num_tokens`.
pub const DEFAULT_MAX_NUM_BATCHED_TOKENS: u32 = 8192;
/// vLLM's step budget where none is given on the other GPUs.
pub const SMALL_GPU_MAX_NUM_BATCHED_TOKENS: u32 = 2048;

/// Whether vLLM's OpenAI server takes its larger defaults on `gpu`: a
/// budget of 8,192 tokens and 1,024 sequences, where the others take
/// 2,048 and 256. Its `EngineArgs` asks for 70 GiB of memory or more and a
/// name without "a100" (the A100 80GB takes the smaller ones).
pub fn vllm_large_gpu(gpu: &GpuSpec) -> bool {
    gpu.memory_gib >= 70.0 && !gpu.name.to_ascii_lowercase().contains("a100")
}

/// vLLM's default step budget on `gpu` ([`vllm_large_gpu`]).
pub fn vllm_default_budget(gpu: &GpuSpec) -> u32 {
    if vllm_large_gpu(gpu) {
        DEFAULT_MAX_NUM_BATCHED_TOKENS
    } else {
        SMALL_GPU_MAX_NUM_BATCHED_TOKENS
    }
}

pub const DEFAULT_BLOCK_SIZE: u32 = 16;
/// The largest `--schedule-conservativeness` taken: past 1/0.7 the ratio's
/// start is 1 anyway, and only its floor (0.14 of the start) still moves.
pub const MAX_SCHEDULE_CONSERVATIVENESS: f64 = 100.0;
/// The largest `--scheduler-recv-interval` taken: a decode step weighs 1
/// and any other SGLang's default 1,000, so past it only decodes run out
/// the count and a prompt's step always takes new requests.
pub const MAX_SCHEDULER_RECV_INTERVAL: u32 = 1000;
/// The largest `--batch-wait-timeout-iters` taken: a thousand steps is
/// seconds of decodes, past any setting that serves.
pub const MAX_BATCH_WAIT_TIMEOUT_ITERS: u32 = 1000;
pub const DEFAULT_GPU_MEMORY_UTILIZATION: f64 = 0.9;

/// SGLang's default `--mem-fraction-static` for `cfg`, as its
/// `ServerArgs::_handle_gpu_memory_settings` sets it where none is given
/// (since sgl-project/sglang#10975, September 2025): the share left once
/// it reserves, in MiB, 512 for its attention backend's buffers,
/// max(chunk, 2,048) × 1.5 for a prefill's activations (the chunk:
/// `--chunked-prefill-size`, or with chunking off its 16,384-token
/// `--max-prefill-tokens`), `cuda_graph_max_bs` × 2 for its CUDA graphs
/// (by the GPU's memory and TP, `sglang_default_cuda_graph_max_bs`), tp × pp / 8 ×
/// 1,024 for parallelism's buffers, and under DP attention
/// `cuda_graph_max_bs` × its ranks × 3 (× 4.5 past 300); at least 10 GiB
/// on a GPU of over 60 GiB; 2 GiB more for a speculative drafter's model
/// and graphs (an EAGLE or MTP head; n-gram lookup, no cost here, takes
/// none). Rounded to three places, as SGLang rounds it. SGLang reads the
/// memory nvidia-smi reports, a few hundred MiB above what CUDA does (the
/// catalog's): under 0.1 point on the share. A disaggregated instance's
/// is [`sglang_role_mem_fraction_static`]'s.
pub fn sglang_mem_fraction_static(cfg: &EngineConfig) -> f64 {
    sglang_role_mem_fraction_static(cfg, None)
}

/// SGLang's default share for an instance of one role (`Some(true)`: a
/// decode instance, `Some(false)`: a prefill one; `None`: both, as
/// [`sglang_mem_fraction_static`]), as `--disaggregation-mode` gates the
/// reserve's terms since sgl-project/sglang#29615 (June 2026): a prefill
/// instance keeps no CUDA graphs' or DP attention's reserve (it runs no
/// decode graphs), and a decode instance sizes its activations to its
/// decode batch, max(`--max-running-requests`, else `cuda_graph_max_bs`) ×
/// the drafts a sequence verifies (1 without speculative decoding), at
/// least 2,048, × 1.5, in place of a prefill chunk's.
pub fn sglang_role_mem_fraction_static(cfg: &EngineConfig, decode: Option<bool>) -> f64 {
    let mib = cfg.gpu.memory_gib * 1024.0;
    let ranks = cfg.attention_ranks();
    // SGLang's TP size is the group's GPUs: under DP attention its TP
    // ranks are the attention ranks' GPUs together.
    let tp_size = cfg.tp.saturating_mul(ranks);
    let graph_bs = f64::from(super::scheduler::sglang_default_cuda_graph_max_bs(&cfg.gpu, tp_size));
    let tp = f64::from(tp_size);
    let activation_tokens = match decode {
        Some(true) => {
            let batch = cfg.max_num_seqs.map_or(graph_bs, f64::from);
            batch * cfg.spec.map_or(1.0, |s| f64::from(s.tokens.max(1)))
        }
        _ if cfg.enable_chunked_prefill => f64::from(cfg.max_num_batched_tokens),
        _ => f64::from(cfg.max_prefill_tokens),
    };
    // A prefill instance captures no decode graphs.
    let graphs = decode != Some(false);
    let mut reserved = 512.0
        + activation_tokens.max(2048.0) * 1.5
        + if graphs { graph_bs * 2.0 } else { 0.0 }
        + tp * f64::from(cfg.pp.max(1)) / 8.0 * 1024.0;
    if ranks > 1 && graphs {
        reserved += graph_bs * f64::from(ranks) * 3.0;
        if graph_bs > 300.0 {
            reserved += graph_bs * f64::from(ranks) * 1.5;
        }
    }
    if mib > 60.0 * 1024.0 {
        reserved = reserved.max(10.0 * 1024.0);
    }
    if cfg.spec.is_some_and(|s| s.draft_cost > 0.0) {
        reserved += 2.0 * 1024.0;
    }
    ((mib - reserved) / mib * 1000.0).round() / 1000.0
}

impl SchedulerPolicy {
    /// The precision weights of `precision` multiply at on `gpu` under this
    /// scheduler: their own, but FP8 on a GPU without FP8 tensor cores (the
    /// A100) under vLLM's or SGLang's runs as weight-only FP8, W8A16: their
    /// FP8 Marlin kernels widen the 1-byte weights to 16 bits inside the
    /// product ("FP8 models will run on compute capability >= 7.5 as
    /// weight-only W8A16, utilizing FP8 Marlin", vLLM's FP8 guide; SGLang's
    /// `fp8.py` turns Marlin on where `can_auto_enable_marlin_fp8()`), at
    /// the 16-bit peak, as INT8 does here. TensorRT-LLM's FP8 needs FP8
    /// cores, and [`EngineConfig::validate`] refuses it there.
    pub fn compute_precision(self, precision: Precision, gpu: &GpuSpec) -> Precision {
        match precision {
            Precision::Fp8 if gpu.fp8_tflops.is_none() && self != SchedulerPolicy::Trtllm => Precision::Int8,
            p => p,
        }
    }
}

impl EngineConfig {
    /// Whether TensorRT-LLM's batch waiting is set (either of its two
    /// settings): TensorRT-LLM's `enable_batch_waiting`.
    pub fn batch_waits_any(&self) -> bool {
        self.batch_wait_timeout_iters > 0 || self.batch_wait_max_tokens_ratio > 0.0
    }

    /// Whether the scheduler's current servers choose each step while the
    /// one before runs, by default: SGLang's overlap schedule (since
    /// sgl-project/sglang#2067, v0.4, November 2024), TensorRT-LLM's
    /// PyTorch backend's overlap scheduler (since NVIDIA/TensorRT-LLM#4174,
    /// May 2025) and vLLM's async scheduling (since vLLM 0.14, January 2026,
    /// vllm-project/vllm#27614), which that release left off with pipeline
    /// parallelism. What `estimate`, `serve --profile engine` and `plan` run
    /// unless told (`--async-scheduling`, `--no-async-scheduling`).
    pub fn servers_schedule_ahead(&self) -> bool {
        !(self.scheduler == SchedulerPolicy::Vllm && self.pp > 1)
    }

    /// Whether an MXFP4 mixture of experts multiplies its experts against
    /// 16-bit activations (W4A16): as `--mxfp4-activations` says, else as
    /// the server runs them unless told ([`EngineConfig::default_mxfp4_activations`]).
    /// False for anything else (FP8 activations on FP4 cores: W4A8).
    pub fn mxfp4_w4a16(&self) -> bool {
        if self.precision != Precision::Mxfp4 || self.model.moe.is_none() {
            return false;
        }
        self.mxfp4_activations.unwrap_or_else(|| self.default_mxfp4_activations()) == Mxfp4Activations::Bf16
    }

    /// The model as the server holds it in memory and multiplies it: the
    /// checkpoint's, but for an MXFP4 mixture of experts under vLLM's or
    /// SGLang's scheduler, whose experts they pad ([`EngineConfig::mxfp4_expert_padding`]):
    /// their inner size then stands for the padded matrices' (the same
    /// parameters a layer, so the same flops and bytes).
    pub fn served_model(&self) -> std::borrow::Cow<'_, ModelSpec> {
        match self.mxfp4_expert_padding() {
            Some((h, i)) => {
                let mut m = self.model.clone();
                let padded = u64::from(i) * u64::from(h) / u64::from(m.hidden_size.max(1));
                m.intermediate_size = u32::try_from(padded).unwrap_or(u32::MAX);
                std::borrow::Cow::Owned(m)
            }
            None => std::borrow::Cow::Borrowed(&self.model),
        }
    }

    /// An MXFP4 mixture of experts' padded expert matrices under vLLM's and
    /// SGLang's schedulers, where they differ from the checkpoint's: (hidden
    /// size, inner size over all of a layer's partitions). vLLM's MXFP4 method
    /// (`Mxfp4MoEMethod.create_weights`, vLLM 0.10 to 0.11) rounds each
    /// partition's inner size (the checkpoint's over TP, whole under expert
    /// parallelism) and the hidden size up to its kernels' tiles, and holds
    /// and multiplies the zeros:
    ///
    /// - Blackwell's FlashInfer kernels (TRT-LLM's MXFP4 × BF16 and × MXFP8,
    ///   either activations): both to 256;
    /// - Hopper and Blackwell's RTX cards (Triton's kernels): the inner size
    ///   to 64, the hidden size as it is;
    /// - the A100 and Ada (Marlin's): the inner size to 128, the hidden to
    ///   256;
    /// - ROCm: both to 256 on the MI355X (gfx950), 128 on the others
    ///   (`get_padding_alignment`).
    ///
    /// SGLang's (`Mxfp4MoEMethod.create_weights`, 0.5, with the MoE
    /// backend its `ServerArgs` picks for GPT-OSS) does the same with its
    /// own tiles:
    ///
    /// - Blackwell (SM100: FlashInfer's MXFP4 kernels): both to 256;
    /// - Hopper and Blackwell's RTX cards (`triton_kernels`, without expert
    ///   parallelism): the inner size to the MXFP4 block, 32;
    /// - ROCm's AITER path, the A100 and Ada, and expert parallelism off
    ///   Blackwell (where it upcasts the experts to 16 bits): not modelled.
    ///
    /// GPT-OSS-120B's 2,880 by 2,880 experts on a B200 become 3,072 by 3,072
    /// at TP 1 to 4 (+13.8 % flops and bytes) and 3,072 by 8 × 512 at TP 8
    /// (+51.7 %) under either. `None` for anything else, and under
    /// TensorRT-LLM's scheduler, whose own padding is not modelled.
    pub fn mxfp4_expert_padding(&self) -> Option<(u32, u32)> {
        if self.precision != Precision::Mxfp4 || self.model.moe.is_none() {
            return None;
        }
        use super::catalog::GpuFamily;
        let (h, i) = (self.model.hidden_size, self.model.intermediate_size);
        let (hidden_tile, inner_tile) = match (self.scheduler, self.gpu.family) {
            (SchedulerPolicy::Trtllm, _) => return None,
            (SchedulerPolicy::Vllm, GpuFamily::Blackwell) => (256, 256),
            (SchedulerPolicy::Vllm, GpuFamily::Hopper | GpuFamily::BlackwellRtx) => (1, 64),
            (SchedulerPolicy::Vllm, GpuFamily::Ampere | GpuFamily::Ada) => (256, 128),
            (SchedulerPolicy::Vllm, GpuFamily::Cdna4) => (256, 256),
            (SchedulerPolicy::Vllm, GpuFamily::Cdna3) => (128, 128),
            (SchedulerPolicy::Sglang, GpuFamily::Blackwell) => (256, 256),
            (SchedulerPolicy::Sglang, GpuFamily::Hopper | GpuFamily::BlackwellRtx) if self.ep <= 1 => (1, 32),
            (SchedulerPolicy::Sglang, _) => return None,
        };
        let parts = if self.ep > 1 { 1 } else { self.tp.max(1) };
        let up = |x: u32, tile: u32| x.div_ceil(tile).saturating_mul(tile);
        let padded = (up(h, hidden_tile), up(i.div_ceil(parts), inner_tile).saturating_mul(parts));
        (padded != (h, i)).then_some(padded)
    }

    /// What an MXFP4 mixture of experts' experts multiply against where
    /// `--mxfp4-activations` is not given: the scheduler's server's own
    /// choice on this GPU.
    ///
    /// - Without FP4 tensor cores (Hopper, the A100, the MI300X and
    ///   MI325X): 16-bit, the only kernels there (vLLM's Marlin and
    ///   Triton, TensorRT-LLM's Triton backend).
    /// - vLLM, on FP4 cores too: 16-bit. Its MXFP4 backend picks
    ///   FlashInfer's MXFP4 × BF16 on Blackwell unless
    ///   `VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1` (its log says "consider
    ///   setting" it), and Triton's on ROCm.
    /// - SGLang and TensorRT-LLM on FP4 cores: FP8 (W4A8). SGLang's
    ///   `--flashinfer-mxfp4-moe-precision default` quantizes the
    ///   activations to MXFP8 (`bf16` keeps them 16-bit); TensorRT-LLM's
    ///   Blackwell default MoE backend (TRTLLM) runs MXFP8 activations.
    pub fn default_mxfp4_activations(&self) -> Mxfp4Activations {
        match self.scheduler {
            _ if !self.gpu.runs_w4a8() => Mxfp4Activations::Bf16,
            SchedulerPolicy::Vllm => Mxfp4Activations::Bf16,
            SchedulerPolicy::Sglang | SchedulerPolicy::Trtllm => Mxfp4Activations::Fp8,
        }
    }

    /// `--mxfp4-activations` only where it applies: an MXFP4 mixture of
    /// experts, and FP8 activations only on FP4 tensor cores.
    fn check_mxfp4_activations(&self) -> Result<(), Error> {
        let Some(a) = self.mxfp4_activations else {
            return Ok(());
        };
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if self.precision != Precision::Mxfp4 || self.model.moe.is_none() {
            return bad(format!(
                "--mxfp4-activations {a} is for an MXFP4 mixture of experts (GPT-OSS), and this is {} at {}: drop \
                 it, or add --precision mxfp4 with such a model",
                self.model.name, self.precision
            ));
        }
        if a == Mxfp4Activations::Fp8 && !self.gpu.runs_w4a8() {
            return bad(format!(
                "--mxfp4-activations fp8 (W4A8, MXFP4 × MXFP8) runs on FP4 tensor cores, which the {} lacks: its \
                 MXFP4 experts run against 16-bit activations (--mxfp4-activations bf16, the default there)",
                self.gpu.name
            ));
        }
        Ok(())
    }

    /// The precision a step's matrix products run at
    /// ([`SchedulerPolicy::compute_precision`] of the weights' own).
    pub fn compute_precision(&self) -> Precision {
        self.scheduler.compute_precision(self.precision, &self.gpu)
    }

    /// The activation memory one GPU reserves before its KV cache. Under
    /// vLLM's scheduler, what its start-up profile measures (vLLM 0.11's
    /// `torch peak memory increase`): its sampler's run over
    /// `max_num_seqs` dummy requests, `vllm_sampler_bytes_per_logit` for
    /// each of their logits over the whole vocabulary, beside the
    /// step's hidden states, `max_num_batched_tokens` × d in 16 bits (the
    /// forward's other activations are freed by then). 4.76 GiB for
    /// Llama-3.1-8B on an H100, 7.4 GiB for GPT-OSS's 201,088-token
    /// vocabulary. Under TensorRT-LLM's, the calibration's flat
    /// `activation_gib`. Under SGLang's, none: it keeps its activations and
    /// CUDA graphs in the memory `--mem-fraction-static` leaves out
    /// ([`sglang_mem_fraction_static`]; the cache's size,
    /// `roofline::kv_capacity`).
    pub fn activation_bytes(&self) -> f64 {
        let c = &self.calibration;
        match self.scheduler {
            SchedulerPolicy::Vllm => {
                let logits = f64::from(self.resolved_max_num_seqs()) * f64::from(self.model.vocab_size);
                let hidden = f64::from(self.max_num_batched_tokens) * f64::from(self.model.hidden_size) * 2.0;
                logits * c.vllm_sampler_bytes_per_logit + hidden
            }
            SchedulerPolicy::Trtllm => c.activation_gib * super::catalog::GIB,
            SchedulerPolicy::Sglang => 0.0,
        }
    }

    /// The share of vLLM's fused-MoE activation traffic a step of a
    /// mixture of experts carries (`Calibration::moe_activation_traffic`):
    /// the calibration's under vLLM's and SGLang's schedulers, whose
    /// Triton fused-MoE kernels it describes, and none under
    /// TensorRT-LLM's, whose CUTLASS kernels permute, fuse and reduce
    /// otherwise and whose tables set the constants without it.
    pub fn moe_activation_traffic(&self) -> f64 {
        match self.scheduler {
            SchedulerPolicy::Trtllm => 0.0,
            SchedulerPolicy::Vllm | SchedulerPolicy::Sglang => self.calibration.moe_activation_traffic,
        }
    }

    /// The activation bytes one routed (token, expert) pair moves through
    /// one GPU's memory over all MoE layers, the experts' inner width split
    /// `split` ways (TP; 1 under expert parallelism, which keeps experts
    /// whole): (3 · d + 6 · I / split) × 2 bytes a layer, times
    /// [`moe_activation_traffic`](Self::moe_activation_traffic), d and I
    /// as the kernels pad them where vLLM pads MXFP4 experts
    /// ([`mxfp4_expert_padding`](Self::mxfp4_expert_padding): its kernels
    /// read and write the padded hidden states and inner products). 0 for
    /// a dense model.
    pub fn moe_activation_bytes_per_pair(&self, split: f64) -> f64 {
        let m = &self.model;
        if m.moe.is_none() {
            return 0.0;
        }
        let (d, i) = match self.mxfp4_expert_padding() {
            Some((h, i)) => (f64::from(h), f64::from(i)),
            None => (m.hidden_size as f64, m.intermediate_size as f64),
        };
        self.moe_activation_traffic() * m.moe_layers() as f64 * (3.0 * d + 6.0 * i / split) * 2.0
    }

    /// The model as its KV cache holds it. vLLM's hybrid KV-cache manager
    /// and SGLang's hybrid SWA memory pool (Llama 4 and GPT-OSS by
    /// default) free the blocks a sliding window or an attention chunk has
    /// left; TensorRT-LLM's frees only a
    /// sliding window's (the windows it derives from a config's
    /// `sliding_window` and `layer_types`, or `max_attention_window`), so
    /// chunked attention's layers (Llama 4's `attention_chunk_size`) keep
    /// every token there. Their attention still reads within the chunk.
    pub fn kv_model(&self) -> std::borrow::Cow<'_, ModelSpec> {
        match self.model.sliding_window {
            Some(s) if s.chunked && self.scheduler == SchedulerPolicy::Trtllm => {
                let mut m = self.model.clone();
                m.sliding_window = None;
                std::borrow::Cow::Owned(m)
            }
            _ => std::borrow::Cow::Borrowed(&self.model),
        }
    }

    /// vLLM's defaults for this model, GPU and precision, with the GPU
    /// family's calibration.
    pub fn new(model: ModelSpec, gpu: GpuSpec, precision: Precision) -> EngineConfig {
        let calibration = Calibration::for_family(gpu.family);
        let max_num_batched_tokens = vllm_default_budget(&gpu);
        EngineConfig {
            gpu,
            precision,
            kv_cache_dtype: KvCacheDtype::Auto,
            tp: 1,
            gpu_memory_utilization: None,
            max_num_seqs: None,
            max_num_batched_tokens,
            block_size: DEFAULT_BLOCK_SIZE,
            enable_chunked_prefill: true,
            enable_prefix_caching: true,
            num_gpu_blocks_override: None,
            calibration,
            chat_template: model.chat_template(),
            model,
            dp: 1,
            router: RouterPolicy::default(),
            router_poll_s: None,
            spec: None,
            scheduler: SchedulerPolicy::default(),
            pd: None,
            ep: 1,
            pp: 1,
            mixed_batches: true,
            schedule_conservativeness: 1.0,
            scheduler_recv_interval: 1,
            max_prefill_tokens: super::scheduler::SGLANG_MAX_PREFILL_TOKENS,
            batch_wait_timeout_iters: 0,
            batch_wait_max_tokens_ratio: 0.0,
            mxfp4_activations: None,
            load_balance: LoadBalance::Auto,
            decode_load_balance: None,
            internal_lb: false,
            api_server_count: None,
            async_scheduling: false,
        }
    }

    /// Looks the model and GPU up in the catalog by name.
    pub fn from_names(model: &str, gpu: &str, precision: Precision) -> Result<EngineConfig, Error> {
        Ok(EngineConfig::new(ModelSpec::lookup(model)?, GpuSpec::lookup(gpu)?, precision))
    }

    /// Every GPU the configuration runs on: TP × PP × DP, or, when
    /// disaggregated, PP × each instance's data-parallel ranks (an
    /// expert-parallel instance has EP / TP) × each pool's instances times
    /// its TP.
    pub fn gpus(&self) -> u32 {
        match self.pd {
            Some(pd) => pool_gpus(self.pool_sizes(pd), self.pp),
            None => self.tp.saturating_mul(self.pp).saturating_mul(self.all_ranks()),
        }
    }

    /// The share of each GPU's memory the engine takes: as given, else its
    /// scheduler's default: vLLM's and TensorRT-LLM's 0.9, SGLang's its own
    /// heuristic ([`sglang_mem_fraction_static`]).
    pub fn memory_share(&self) -> f64 {
        self.gpu_memory_utilization.unwrap_or(match self.scheduler {
            SchedulerPolicy::Vllm | SchedulerPolicy::Trtllm => DEFAULT_GPU_MEMORY_UTILIZATION,
            SchedulerPolicy::Sglang => sglang_mem_fraction_static(self),
        })
    }

    /// The largest share a refusal offers: 0.95 of the memory, but under
    /// SGLang's scheduler, whose activations and CUDA graphs live outside
    /// its share, no more than leaves them 5 GiB (its documentation's
    /// "reserving 5–8 GB of memory for activations is typically
    /// sufficient"), in whole hundredths.
    pub fn fullest_share(&self) -> f64 {
        match self.scheduler {
            SchedulerPolicy::Sglang => {
                let gib = self.gpu.memory_gib;
                (((gib - 5.0) / gib * 100.0).floor() / 100.0).clamp(0.0, 0.95)
            }
            SchedulerPolicy::Vllm | SchedulerPolicy::Trtllm => 0.95,
        }
    }

    /// The sequence cap in force: the configured one, else the scheduler's
    /// default (vLLM's by GPU, [`vllm_large_gpu`], held to the step's token budget as
    /// its `EngineArgs` holds it, `min(default, max_num_batched_tokens)`;
    /// TensorRT-LLM's `max_batch_size`).
    pub fn resolved_max_num_seqs(&self) -> u32 {
        self.max_num_seqs.unwrap_or(match self.scheduler {
            SchedulerPolicy::Vllm => {
                let default = if vllm_large_gpu(&self.gpu) { 1024 } else { 256 };
                default.min(self.max_num_batched_tokens.max(1))
            }
            SchedulerPolicy::Trtllm => TRTLLM_MAX_BATCH_SIZE,
            // SGLang's by its KV pool (one attention rank's).
            SchedulerPolicy::Sglang => {
                let tokens = kv_capacity(self).map_or(0, |c| c.tokens() / u64::from(self.attention_ranks().max(1)));
                sglang_default_max_running(tokens, self.model.max_context)
            }
        })
    }

    /// Disaggregated under SGLang's scheduler: a request's decode instance
    /// reserves for it before its prefill starts (SGLang's order), where
    /// vLLM's proxy and TensorRT-LLM prefill first.
    pub fn decode_first(&self) -> bool {
        self.pd.is_some() && self.scheduler == SchedulerPolicy::Sglang
    }

    /// `--load-balance-method` as given, where it is not SGLang's default:
    /// one method, or under `--pd` the prefill pool's and the decode pool's
    /// (`auto:total-tokens`).
    pub fn load_balance_words(&self) -> Option<String> {
        match self.decode_load_balance {
            Some(d) => Some(format!("{}:{d}", self.load_balance)),
            None => (self.load_balance != LoadBalance::Auto).then(|| self.load_balance.to_string()),
        }
    }

    /// Whether `--load-balance-method` picks among a dense model's replicas
    /// ([`EngineConfig::dense_controller`]: no DP attention, not
    /// disaggregated) rather than among SGLang's DP-attention ranks.
    pub fn balances_replicas(&self) -> bool {
        self.attention_ranks() <= 1 && self.pd.is_none()
    }

    /// The server's own balancer in front of `--dp` replicas of a dense
    /// model (no DP attention, not disaggregated): SGLang's data-parallel
    /// controller where `--load-balance-method` names one of its methods,
    /// vLLM's front end with `--internal-lb`. It takes the router's place
    /// ([`crate::engine::Router::controlled`]).
    pub fn dense_controller(&self) -> Option<ReplicaBalancer> {
        if !(self.balances_replicas() && self.dp > 1) {
            return None;
        }
        let method = matches!(
            self.load_balance,
            LoadBalance::RoundRobin | LoadBalance::TotalRequests | LoadBalance::TotalTokens
        );
        match self.scheduler {
            SchedulerPolicy::Sglang if method => Some(ReplicaBalancer::Sglang(self.load_balance)),
            SchedulerPolicy::Vllm if self.internal_lb => {
                Some(ReplicaBalancer::Vllm { api_servers: self.api_server_count.unwrap_or(self.dp) })
            }
            _ => None,
        }
    }

    /// `--internal-lb` is vLLM's balancing of a dense model's replicas in
    /// one server: refused under another scheduler, with one replica, with
    /// ranks of DP attention (which vLLM balances so already), disaggregated,
    /// and beside a router of another policy than the default.
    fn check_internal_lb(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if let Some(n) = self.api_server_count {
            if !self.internal_lb {
                return bad(format!(
                    "--api-server-count {n} sets the front ends of vLLM's own balancing: add --internal-lb, or drop it"
                ));
            }
            if !(1..=MAX_API_SERVERS).contains(&n) {
                return bad(format!(
                    "--api-server-count {n} must lie in 1..={MAX_API_SERVERS} (vLLM's default is one a replica)"
                ));
            }
        }
        if !self.internal_lb {
            return Ok(());
        }
        if self.scheduler != SchedulerPolicy::Vllm {
            let sglang = if self.scheduler == SchedulerPolicy::Sglang {
                " (SGLang's own controller is --load-balance-method round-robin, total-requests or total-tokens)"
            } else {
                ""
            };
            return bad(format!(
                "--internal-lb is vLLM's balancing of its --data-parallel-size replicas, and the scheduler is {}: \
                 add --scheduler vllm, or drop it{sglang}",
                self.scheduler
            ));
        }
        if self.pd.is_some() {
            return bad("--internal-lb balances one server's replicas, and --pd runs pools of instances behind a \
                        router: drop one of them"
                .into());
        }
        if self.attention_ranks() > 1 {
            return bad("--internal-lb balances a dense model's replicas, and these are ranks of DP attention (more \
                        --ep than --tp), which vLLM balances by the same rule already: drop it"
                .into());
        }
        if self.dp <= 1 {
            return bad("--internal-lb balances --dp replicas, and there is one: add --dp N, or drop it".into());
        }
        if self.router != RouterPolicy::default() || self.router_poll_s.is_some() {
            return bad(format!(
                "--internal-lb puts vLLM's own balancer in the router's place, and --router {} names a router in \
                 front of separate servers: drop one of them",
                self.router
            ));
        }
        Ok(())
    }

    /// `--load-balance-method` chooses among the ranks of SGLang's DP
    /// attention, or (a dense model's `--dp` replicas) among the replicas:
    /// refused under another scheduler, where no instance has
    /// ranks (or, given for each pool, where that pool has none), and
    /// (`follow-bootstrap-room`) where no router gives a room.
    fn check_load_balance(&self) -> Result<(), Error> {
        let Some(given) = self.load_balance_words() else { return Ok(()) };
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if self.scheduler != SchedulerPolicy::Sglang {
            return bad(format!(
                "--load-balance-method {given} is SGLang's, for the ranks of its DP attention, and the scheduler is \
                 {}: add --scheduler sglang, or drop it",
                self.scheduler
            ));
        }
        let one_rank = |which: &str, has: &str| {
            bad(format!(
                "--load-balance-method {given} picks one of {which} DP-attention ranks, and {has} one: give a mixture \
                 of experts more --ep than --tp (--tp 1 --ep 8 --dp 8: eight ranks, each with its own scheduler), or \
                 without --pd several replicas (--dp 2: SGLang's controller picks one of them), or drop it"
            ))
        };
        match (self.pd, self.decode_load_balance) {
            (None, Some(_)) => {
                return bad(format!(
                    "--load-balance-method {given} gives the prefill pool's and the decode pool's methods, and there \
                     are no pools without --pd: give one method, or add --pd P:D"
                ))
            }
            (Some(pd), Some(decode)) => {
                let [(_, ptp, pep), (_, dtp, dep)] = pd.pools(self.tp, self.ep);
                for (m, tp, ep, which) in
                    [(self.load_balance, ptp, pep, "a prefill instance's"), (decode, dtp, dep, "a decode instance's")]
                {
                    if m != LoadBalance::Auto && ep_ranks(tp, ep) <= 1 {
                        return one_rank(which, "it has");
                    }
                }
            }
            (Some(pd), None) => {
                if pd.most_ranks(self.tp, self.ep) <= 1 {
                    return one_rank("an instance's", "each instance here has");
                }
            }
            (None, None) => {
                // Replicas of a dense model: SGLang's controller picks one.
                let replicas = self.balances_replicas();
                if replicas && self.dp <= 1 {
                    return one_rank("an instance's", "each instance here has");
                }
                if self.load_balance == LoadBalance::FollowBootstrapRoom {
                    // Disaggregated pools of replicas have no ranks to pick.
                    let fix = if replicas { "use" } else { "add --pd P:D, or use" };
                    return bad(format!(
                        "--load-balance-method follow-bootstrap-room follows the room SGLang's router gives a \
                         disaggregated request, and without --pd there is none (SGLang refuses such a request): \
                         {fix} round-robin, total-requests or total-tokens"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks every setting; the roofline and KV sizing check the rest.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        if self.tp == 0 {
            return bad("--tp must be at least 1".into());
        }
        if self.dp == 0 || self.dp > MAX_DP {
            return bad(format!("--dp {} must lie in 1..={MAX_DP}", self.dp));
        }
        if let Some(s) = self.router_poll_s {
            if !(s > 0.0 && s <= 3600.0) {
                return bad(format!(
                    "--router-poll {s}s must lie in (0, 3600] seconds (SGLang's router polls every 10 s)"
                ));
            }
            if self.router != RouterPolicy::PowerOfTwo {
                return bad(format!(
                    "--router-poll polls the loads that power-of-two compares, and the router is {}: add \
                     --router power-of-two, or drop --router-poll",
                    self.router
                ));
            }
        }
        if let Some(pd) = &self.pd {
            for (decode, which) in [(false, "prefill"), (true, "decode")] {
                let tp = self.pool_tp(decode);
                if let Some(why) = tp_refusal(&self.model, tp).filter(|_| tp != 0) {
                    return bad(format!("--pd {} runs the {which} pool on TP{tp}, which {why}", pd.spec()));
                }
            }
        }
        if let Some(why) = tp_refusal(&self.model, self.tp) {
            return bad(format!("--tp {} {why}", self.tp));
        }
        if let Some(share) = self.gpu_memory_utilization.filter(|s| !(*s > 0.0 && *s <= 1.0)) {
            return bad(format!("--gpu-memory-utilization {share} must lie in (0, 1]"));
        }
        if self.max_num_batched_tokens == 0 {
            return bad("--max-num-batched-tokens must be at least 1".into());
        }
        if self.max_num_seqs == Some(0) {
            return bad("--max-num-seqs must be at least 1".into());
        }
        // Each running sequence takes a token of a step's budget; vLLM's
        // SchedulerConfig refuses a cap the budget cannot decode at once.
        if let (SchedulerPolicy::Vllm, Some(seqs)) = (self.scheduler, self.max_num_seqs) {
            let budget = self.max_num_batched_tokens;
            if seqs > budget {
                return bad(format!(
                    "--max-num-seqs {seqs} is above --max-num-batched-tokens {budget}: vLLM refuses it \
                     (max_num_batched_tokens must be greater than or equal to max_num_seqs, each running sequence \
                     taking a token of a step's budget); give --max-num-seqs {budget} or fewer, or \
                     --max-num-batched-tokens {seqs} or more"
                ));
            }
        }
        if !(0.0..=MAX_SCHEDULE_CONSERVATIVENESS).contains(&self.schedule_conservativeness) {
            return bad(format!(
                "--schedule-conservativeness {} must lie in [0, {MAX_SCHEDULE_CONSERVATIVENESS}] (SGLang's default \
                 is 1; lower admits more)",
                self.schedule_conservativeness
            ));
        }
        match self.scheduler_recv_interval {
            n if !(1..=MAX_SCHEDULER_RECV_INTERVAL).contains(&n) => {
                return bad(format!(
                    "--scheduler-recv-interval {n} must lie in 1..={MAX_SCHEDULER_RECV_INTERVAL} (SGLang's default is \
                     1: new requests taken at every step)"
                ))
            }
            n if n > 1 && self.scheduler != SchedulerPolicy::Sglang => {
                return bad(format!(
                    "--scheduler-recv-interval {n} is SGLang's, and the scheduler is {}: add --scheduler sglang, or \
                     drop it",
                    self.scheduler
                ))
            }
            _ => {}
        }
        match self.max_prefill_tokens {
            0 => {
                return bad(format!(
                    "--max-prefill-tokens 0 takes no prompt: give a number of tokens (SGLang's default is {})",
                    super::scheduler::SGLANG_MAX_PREFILL_TOKENS
                ))
            }
            n if !is_sglang_max_prefill_tokens(&n) && self.scheduler != SchedulerPolicy::Sglang => {
                return bad(format!(
                    "--max-prefill-tokens {n} is SGLang's, and the scheduler is {}: add --scheduler sglang, or drop \
                     it (vLLM's and TensorRT-LLM's step budget is --max-num-batched-tokens)",
                    self.scheduler
                ))
            }
            _ => {}
        }
        if self.batch_wait_timeout_iters > MAX_BATCH_WAIT_TIMEOUT_ITERS {
            return bad(format!(
                "--batch-wait-timeout-iters {} must lie in 0..={MAX_BATCH_WAIT_TIMEOUT_ITERS} (TensorRT-LLM's default \
                 is 0: prompts never held)",
                self.batch_wait_timeout_iters
            ));
        }
        if !(0.0..=1.0).contains(&self.batch_wait_max_tokens_ratio) {
            return bad(format!(
                "--batch-wait-max-tokens-ratio {} must lie in 0..=1 (a share of the step's token budget; \
                 TensorRT-LLM's default is 0)",
                self.batch_wait_max_tokens_ratio
            ));
        }
        self.check_mxfp4_activations()?;
        if self.batch_waits_any() && self.scheduler != SchedulerPolicy::Trtllm {
            return bad(format!(
                "--batch-wait-timeout-iters and --batch-wait-max-tokens-ratio are TensorRT-LLM's, and the \
                 scheduler is {}: add --scheduler trtllm, or drop them",
                self.scheduler
            ));
        }
        self.check_load_balance()?;
        self.check_internal_lb()?;
        if self.block_size == 0 || self.block_size > 1024 {
            return bad(format!("--block-size {} must lie in 1..=1024 (vLLM uses 16)", self.block_size));
        }
        if let Some(sd) = &self.spec {
            sd.check().map_err(Error::InvalidConfig)?;
        }
        if let Some(pd) = &self.pd {
            pd.check().map_err(Error::InvalidConfig)?;
            if self.dp > 1 {
                return bad(format!(
                    "--pd {} and --dp {} both set the replicas: the prefill and decode pools are the instances \
                     with --pd; drop --dp (for more instances raise P or D)",
                    pd.spec(),
                    self.dp
                ));
            }
            if self.router_poll_s.is_some() {
                return bad(format!(
                    "--router-poll polls the loads of --dp replicas; with --pd {} each pool's router counts its \
                     instances' requests as it sends them: drop --router-poll",
                    pd.spec()
                ));
            }
            if !self.mixed_batches {
                return bad(format!(
                    "--no-mixed-batches keeps prompts and decodes in separate steps, and with --pd {} they are on \
                     separate instances already: drop one of them",
                    pd.spec()
                ));
            }
        }
        self.validate_parallel()?;
        if self.num_gpu_blocks_override == Some(0) {
            return bad("num_gpu_blocks_override must be at least 1".into());
        }
        self.gpu.peak_flops(self.compute_precision())?;
        self.calibration.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(c: &EngineConfig) -> String {
        match c.validate() {
            Err(Error::InvalidConfig(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn with_tp(model: ModelSpec, tp: u32) -> EngineConfig {
        let mut c = EngineConfig::new(model, GpuSpec::lookup("h100").unwrap(), Precision::Bf16);
        c.tp = tp;
        c
    }

    /// The servers' own default a step ahead: every scheduler's, but
    /// vLLM's pipeline stages (0.14 left them without); TensorRT-LLM's
    /// prefill instances run without it whatever is asked, its decode
    /// instances and every other pool as asked.
    #[test]
    fn a_step_ahead_is_the_servers_default_but_vllm_s_stages_and_trtllm_s_prefill_pool() {
        let mut c = with_tp(ModelSpec::lookup("llama-3.1-8b").unwrap(), 1);
        for policy in [SchedulerPolicy::Vllm, SchedulerPolicy::Sglang, SchedulerPolicy::Trtllm] {
            c.scheduler = policy;
            c.pp = 1;
            assert!(c.servers_schedule_ahead(), "{policy}");
            c.pp = 2;
            assert_eq!(c.servers_schedule_ahead(), policy != SchedulerPolicy::Vllm, "{policy}");
        }
        c.pp = 1;
        c.async_scheduling = true;
        c.pd = Some(Disaggregation::parse("1:1").unwrap());
        for (policy, prefill) in
            [(SchedulerPolicy::Vllm, true), (SchedulerPolicy::Sglang, true), (SchedulerPolicy::Trtllm, false)]
        {
            c.scheduler = policy;
            let ahead: Vec<bool> = c.engine_configs().iter().map(|e| e.async_scheduling).collect();
            assert_eq!(ahead, [prefill, true], "{policy}");
        }
    }

    #[test]
    fn a_tp_that_does_not_divide_the_heads_is_told_the_sizes_that_do() {
        // Qwen2.5-7B: 28 heads over 4 KV heads. It had been told to use 8.
        let qwen = ModelSpec::lookup("qwen2.5-7b").unwrap();
        let m = refusal(&with_tp(qwen.clone(), 8));
        assert_eq!(m, "--tp 8 does not divide Qwen2.5-7B's 28 attention heads; use 1, 2, 4 or 28");
        // 7 and 14 divide the heads, not the 4 KV heads.
        let m = refusal(&with_tp(qwen, 7));
        assert!(m.contains("--tp 7 does not fit Qwen2.5-7B's 4 KV heads") && m.ends_with("use 1, 2, 4 or 28"), "{m}");
        let llama = ModelSpec::lookup("llama-3.1-8b").unwrap();
        let m = refusal(&with_tp(llama.clone(), 3));
        assert!(m.starts_with("--tp 3 does not divide") && m.ends_with("use 1, 2, 4, 8, 16 or 32"), "{m}");
        // Past the 8 KV heads each is replicated: 16 and 32 run.
        for tp in [1, 2, 4, 8, 16, 32] {
            assert!(with_tp(llama.clone(), tp).validate().is_ok(), "TP {tp}");
        }
        // A pool's TP is checked alike.
        let mut pd = with_tp(ModelSpec::lookup("qwen2.5-7b").unwrap(), 1);
        pd.pd = Some(Disaggregation::parse("1:1xTP8").unwrap());
        let m = refusal(&pd);
        assert!(m.contains("the decode pool on TP8, which does not divide") && m.ends_with("use 1, 2, 4 or 28"), "{m}");
    }

    #[test]
    fn the_kv_heads_must_split_or_replicate_evenly() {
        // 30 heads over 10 KV heads: TP 3 divides the heads, but 10 KV heads
        // neither split over 3 GPUs nor replicate evenly on them (vLLM
        // refuses it); TP 20 past them replicates each twice.
        let text = r#"{"num_hidden_layers": 2, "hidden_size": 3840, "num_attention_heads": 30,
            "num_key_value_heads": 10, "intermediate_size": 8192, "vocab_size": 32000}"#;
        let model = ModelSpec::from_hf_config_str(text, "thirty").unwrap();
        let m = refusal(&with_tp(model.clone(), 3));
        assert!(m.starts_with("--tp 3 does not fit thirty's 10 KV heads: vLLM needs"), "{m}");
        assert!(m.ends_with("use 1, 2, 5, 10 or 30"), "{m}");
        assert!(refusal(&with_tp(model.clone(), 6)).contains("10 KV heads"));
        for tp in [1, 2, 5, 10, 30] {
            assert!(with_tp(model.clone(), tp).validate().is_ok(), "TP {tp}");
        }
        // Latent attention caches no per-head keys: only the heads count.
        let mla = ModelSpec { mla: ModelSpec::lookup("deepseek-v3").unwrap().mla, ..model };
        assert!(with_tp(mla.clone(), 3).validate().is_ok());
        assert!(with_tp(mla, 6).validate().is_ok());
        let m = refusal(&with_tp(ModelSpec::lookup("deepseek-v3").unwrap(), 3));
        assert_eq!(m, "--tp 3 does not divide DeepSeek-V3's 128 attention heads; use 1, 2, 4, 8, 16, 32, 64 or 128");
    }

    /// `--load-balance-method` chooses among SGLang's ranks of DP attention:
    /// under another scheduler, with one rank an instance, or following a
    /// bootstrap room no router gives, it is refused with what to change.
    #[test]
    fn the_load_balance_method_needs_sglangs_ranks_of_dp_attention() {
        let moe = |tp, ep, dp, method: &str| {
            let mut c = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
            (c.tp, c.ep, c.dp, c.scheduler) = (tp, ep, dp, SchedulerPolicy::Sglang);
            c.load_balance = method.parse().unwrap();
            c
        };
        moe(1, 4, 4, "total-tokens").validate().unwrap();
        moe(1, 1, 1, "auto").validate().unwrap();
        let mut vllm = moe(1, 4, 4, "total-requests");
        vllm.scheduler = SchedulerPolicy::Vllm;
        let e = vllm.validate().unwrap_err().to_string();
        assert!(
            e.contains("--load-balance-method total-requests is SGLang's") && e.contains("--scheduler sglang"),
            "{e}"
        );
        let e = moe(4, 4, 1, "total-tokens").validate().unwrap_err().to_string();
        assert!(e.contains("has one") && e.contains("--tp 1 --ep 8"), "{e}");
        let e = moe(1, 4, 4, "follow-bootstrap-room").validate().unwrap_err().to_string();
        assert!(e.contains("without --pd") && e.contains("add --pd P:D"), "{e}");
        // Disaggregated, a room is given, and the decode pool's ranks count.
        let mut pd = moe(2, 2, 1, "follow-bootstrap-room");
        pd.pd = Some(Disaggregation::parse("1xEP2:1xEP8").unwrap());
        pd.validate().unwrap();
        let mut one = moe(2, 2, 1, "round-robin");
        one.pd = Some(Disaggregation::parse("1:1").unwrap());
        assert!(one.validate().unwrap_err().to_string().contains("has one"));
        // One method for both pools applies where a pool has ranks: the
        // prefill pool of one rank keeps SGLang's default.
        let mut both = moe(2, 2, 1, "total-tokens");
        both.pd = Some(Disaggregation::parse("1xEP2:1xEP8").unwrap());
        both.validate().unwrap();
        let methods = |c: &EngineConfig| [c.pool(false).load_balance, c.pool(true).load_balance];
        assert_eq!(methods(&both), [LoadBalance::Auto, LoadBalance::TotalTokens]);
        // P:D gives each pool its own, refused on a pool of one rank and
        // without pools.
        let mut split = moe(1, 4, 1, "auto");
        split.pd = Some(Disaggregation::parse("1:1").unwrap());
        split.decode_load_balance = Some(LoadBalance::TotalTokens);
        split.validate().unwrap();
        assert_eq!(methods(&split), [LoadBalance::Auto, LoadBalance::TotalTokens]);
        assert_eq!(split.load_balance_words().as_deref(), Some("auto:total-tokens"));
        let mut narrow = both.clone();
        (narrow.load_balance, narrow.decode_load_balance) = (LoadBalance::TotalTokens, Some(LoadBalance::Auto));
        let e = narrow.validate().unwrap_err().to_string();
        assert!(e.contains("total-tokens:auto picks one of a prefill instance's") && e.contains("it has one"), "{e}");
        let mut colocated = moe(1, 4, 4, "auto");
        colocated.decode_load_balance = Some(LoadBalance::TotalTokens);
        let e = colocated.validate().unwrap_err().to_string();
        assert!(e.contains("no pools without --pd"), "{e}");
    }

    /// vLLM's sequence cap and its step's token budget: the default cap is
    /// held to the budget (its EngineArgs), and a cap given above it is
    /// refused (its SchedulerConfig), with both fixes named; TensorRT-LLM's
    /// batch size is not held to its token budget.
    #[test]
    fn a_sequence_cap_above_the_token_budget_is_vllms_refusal() {
        let llama = || ModelSpec::lookup("llama-3.1-8b").unwrap();
        let mut c = with_tp(llama(), 1);
        assert_eq!(c.resolved_max_num_seqs(), 1024, "an 80 GB GPU's default");
        c.max_num_batched_tokens = 512;
        assert_eq!(c.resolved_max_num_seqs(), 512);
        assert!(c.validate().is_ok());
        let mut l4 = EngineConfig::new(llama(), GpuSpec::lookup("l4").unwrap(), Precision::Bf16);
        l4.max_num_batched_tokens = 512;
        assert_eq!(l4.resolved_max_num_seqs(), 256, "a smaller GPU's default is below the budget");
        c.max_num_seqs = Some(512);
        assert!(c.validate().is_ok(), "a cap equal to the budget runs");
        c.max_num_seqs = Some(1024);
        assert_eq!(
            refusal(&c),
            "--max-num-seqs 1024 is above --max-num-batched-tokens 512: vLLM refuses it (max_num_batched_tokens \
             must be greater than or equal to max_num_seqs, each running sequence taking a token of a step's \
             budget); give --max-num-seqs 512 or fewer, or --max-num-batched-tokens 1024 or more"
        );
        c.scheduler = SchedulerPolicy::Trtllm;
        assert!(c.validate().is_ok());
        c.max_num_seqs = None;
        assert_eq!(c.resolved_max_num_seqs(), TRTLLM_MAX_BATCH_SIZE);
    }

    /// vLLM's OpenAI server's defaults by GPU: 8,192 tokens a step and
    /// 1,024 sequences on 70 GiB or more, but the A100 80GB, which takes
    /// 2,048 and 256 as the smaller GPUs do.
    #[test]
    fn vllms_defaults_follow_the_gpu_as_its_engine_args_choose_them() {
        for (gpu, budget, seqs) in [
            ("h100", 8192, 1024),
            ("h200", 8192, 1024),
            ("b200", 8192, 1024),
            ("mi300x", 8192, 1024),
            ("a100-80gb", 2048, 256),
            ("l40s", 2048, 256),
            ("l4", 2048, 256),
        ] {
            let gpu = GpuSpec::lookup(gpu).unwrap();
            let c = EngineConfig::new(ModelSpec::lookup("llama-3.1-8b").unwrap(), gpu.clone(), Precision::Bf16);
            assert_eq!((c.max_num_batched_tokens, c.resolved_max_num_seqs()), (budget, seqs), "{}", gpu.name);
            assert_eq!(vllm_default_budget(&gpu), budget, "{}", gpu.name);
        }
    }
}
