//! The step-time model of docs/simulator.md (a roofline per step: matrix products,
//! attention, tensor-parallel all-reduce, fixed overheads), the calibration
//! constants it runs on, and the KV-cache sizing from GPU memory.

use super::catalog::{KvCacheDtype, Moe, Precision, SlidingWindow, GIB};
use super::config::EngineConfig;
use super::error::Error;
use serde::Serialize;
use std::time::Duration;

#[path = "parallel.rs"]
mod parallel;

/// How much KV cache the engine holds, and where the memory went.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KvCapacity {
    pub weight_bytes_per_gpu: f64,
    /// Memory left for the KV cache on each GPU.
    pub kv_bytes_per_gpu: f64,
    pub kv_bytes_per_token_per_gpu: f64,
    pub block_size: u32,
    pub num_blocks: u32,
}

impl KvCapacity {
    /// Tokens the cache holds when full.
    pub fn tokens(&self) -> u64 {
        self.num_blocks as u64 * self.block_size as u64
    }
}

/// KV capacity, in whole blocks, as each scheduler's engine sizes it:
/// vLLM's memory × share − W/TP − activations − runtime, SGLang's (memory −
/// what it found taken) × share − W/TP, TensorRT-LLM's (memory − W/TP −
/// activations − runtime) × share ([`EngineConfig::memory_share`]); an
/// error that suggests what would fit when nothing is left.
pub fn kv_capacity(cfg: &EngineConfig) -> Result<KvCapacity, Error> {
    cfg.validate()?;
    let cap = kv_capacity_unchecked(cfg);
    if let Some(blocks) = cfg.num_gpu_blocks_override {
        return Ok(KvCapacity { num_blocks: blocks, ..cap });
    }
    if cap.num_blocks == 0 && cap.kv_bytes_per_gpu > 0.0 {
        // The weights fit; a block of the cache does not.
        return Err(Error::KvBlockDoesNotFit {
            model: cfg.model.name.clone(),
            gpu: cfg.gpu.name.clone(),
            tp: cfg.tp,
            weights_gib: cap.weight_bytes_per_gpu / GIB,
            block_size: cfg.block_size,
            block_bytes: cap.kv_bytes_per_token_per_gpu * cfg.block_size as f64,
            left_bytes: cap.kv_bytes_per_gpu,
            suggestion: suggest_fit(cfg, true),
        });
    }
    if cap.num_blocks == 0 {
        return Err(Error::ModelDoesNotFit {
            model: cfg.model.name.clone(),
            gpu: cfg.gpu.name.clone(),
            precision: cfg.precision.to_string(),
            tp: cfg.tp,
            gpu_memory_utilization: cfg.memory_share(),
            weights_gib: cap.weight_bytes_per_gpu / GIB,
            budget_gib: (cap.kv_bytes_per_gpu + cap.weight_bytes_per_gpu) / GIB,
            suggestion: suggest_fit(cfg, false),
        });
    }
    Ok(cap)
}

fn kv_capacity_unchecked(cfg: &EngineConfig) -> KvCapacity {
    let c = &cfg.calibration;
    let (weight_bytes_per_gpu, kv_bytes_per_token_per_gpu) = parallel::per_gpu(
        cfg,
        cfg.served_model().weight_bytes(cfg.precision),
        cfg.kv_model().kv_pool_bytes_per_token_per_gpu(cfg.kv_cache_dtype, cfg.tp),
    );
    let reserved = weight_bytes_per_gpu + cfg.activation_bytes() + c.runtime_gib * GIB;
    let share = cfg.memory_share();
    let kv_bytes_per_gpu = match cfg.scheduler {
        // vLLM's gpu_memory_utilization: a share of the whole memory, the
        // weights and the rest inside it.
        super::SchedulerPolicy::Vllm => cfg.gpu.memory_bytes() * share - reserved,
        // SGLang's mem_fraction_static: the share of what was free before
        // the weights loaded that the weights and the cache take
        // (`profile_max_num_token`: free after loading, less free before ×
        // (1 − share)); its activations and CUDA graphs use the rest.
        super::SchedulerPolicy::Sglang => {
            (cfg.gpu.memory_bytes() - c.sglang_preload_gib * GIB) * share - weight_bytes_per_gpu
        }
        // TensorRT-LLM's kv_cache_free_gpu_mem_fraction: a share of what
        // is free once the weights and the rest are loaded.
        super::SchedulerPolicy::Trtllm => (cfg.gpu.memory_bytes() - reserved) * share,
    };
    let block_bytes = kv_bytes_per_token_per_gpu * cfg.block_size as f64;
    // An expert-parallel group's ranks each hold a cache for their own sequences.
    let ranks = cfg.attention_ranks() as f64;
    let num_blocks = if kv_bytes_per_gpu > 0.0 {
        ((kv_bytes_per_gpu / block_bytes).floor() * ranks).min(u32::MAX as f64) as u32
    } else {
        0
    };
    KvCapacity {
        weight_bytes_per_gpu,
        kv_bytes_per_gpu,
        kv_bytes_per_token_per_gpu,
        block_size: cfg.block_size,
        num_blocks,
    }
}

/// Lists the single changes that would make the model fit; `block`: the
/// weights fit and a block of the cache does not.
fn suggest_fit(cfg: &EngineConfig, block: bool) -> String {
    let fits = |c: &EngineConfig| c.validate().is_ok() && kv_capacity_unchecked(c).num_blocks > 0;
    let mut options = Vec::new();
    if let Some(tp) = [2, 4, 8, 16].into_iter().filter(|&t| t > cfg.tp).find(|&t| {
        let mut c = cfg.clone();
        c.tp = t;
        fits(&c)
    }) {
        // Where the weights fit already, it is the KV heads it splits (a
        // latent cache it does not split: there it frees weights' memory).
        let heads = block && cfg.model.mla.is_none();
        options.push(if heads { format!("--tp {tp} (it splits the KV heads)") } else { format!("--tp {tp}") });
    }
    if let Some(pp) = [2, 4, 8].into_iter().filter(|&p| p > cfg.pp).find(|&p| {
        let mut c = cfg.clone();
        c.pp = p;
        fits(&c)
    }) {
        options.push(format!("--pp {pp}"));
    }
    if let Some(ep) = parallel::suggest_ep(cfg, &fits) {
        options.push(ep);
    }
    let narrower =
        Precision::ALL.into_iter().filter(|p| p.bytes_per_weight() < cfg.precision.bytes_per_weight()).find(|&p| {
            let mut c = cfg.clone();
            c.precision = p;
            fits(&c)
        });
    if let Some(p) = narrower {
        options.push(format!("--precision {p}"));
    }
    // Options that shrink the cache alone: they help only where the weights
    // fit and a block does not.
    if cfg.kv_cache_dtype != KvCacheDtype::Fp8 {
        let mut c = cfg.clone();
        c.kv_cache_dtype = KvCacheDtype::Fp8;
        if fits(&c) {
            options.push("--kv-cache-dtype fp8".into());
        }
    }
    let smaller_block = halvings(cfg.block_size).find(|&b| {
        let mut c = cfg.clone();
        c.block_size = b;
        fits(&c)
    });
    if let Some(b) = smaller_block {
        options.push(format!("--block-size {b}"));
    }
    let fullest = cfg.fullest_share();
    if cfg.memory_share() < fullest {
        let mut c = cfg.clone();
        c.gpu_memory_utilization = Some(fullest);
        if fits(&c) {
            options.push(format!("--gpu-memory-utilization {fullest}"));
        }
    }
    // vLLM's start-up profile reserves its sampler's memory for
    // max_num_seqs requests over the whole vocabulary
    // ([`EngineConfig::activation_bytes`]): fewer free it.
    if cfg.scheduler == super::SchedulerPolicy::Vllm {
        let seqs = cfg.resolved_max_num_seqs();
        let fewer = halvings(seqs).find(|&s| {
            let mut c = cfg.clone();
            c.max_num_seqs = Some(s);
            fits(&c)
        });
        if let Some(s) = fewer {
            options.push(format!("--max-num-seqs {s} (vLLM reserves its sampler's memory for {seqs} requests)"));
        }
    }
    if options.is_empty() {
        "use a GPU with more memory".into()
    } else if block {
        format!("try {}, or a GPU with more memory", options.join(", or "))
    } else {
        format!("try {}", options.join(", or "))
    }
}

/// `n / 2`, `n / 4`, … down to 1: the smaller settings `suggest_fit` tries,
/// largest first (none where `n` is 1 or 0).
fn halvings(n: u32) -> impl Iterator<Item = u32> {
    std::iter::successors(Some(n / 2), |&k| (k > 1).then_some(k / 2)).filter(|&k| k >= 1)
}

/// What one step computes, summed over its sequences: prefill chunks of
/// `c_i` new tokens after `p_i` cached ones, and decodes with contexts `s_j`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchShape {
    /// N: tokens computed this step.
    pub tokens: u64,
    /// B: sequences in the batch.
    pub seqs: u64,
    /// Σ s_j over decodes.
    pub decode_context: u64,
    /// Σ p_i over prefill chunks.
    pub prefill_context: u64,
    /// Σ c_i (p_i + c_i / 2) over prefill chunks.
    pub prefill_attention: f64,
    /// Prefill chunks (a verification of drafts counts as one), their
    /// tokens Σ c_i, and the largest c_i: with attention data-parallel ranks
    /// a chunk runs whole on its request's rank.
    pub prefills: u64,
    pub prefill_tokens: u64,
    pub largest_prefill: u64,
    /// Sliding-window (or chunked) attention ([`BatchShape::of_model`]):
    /// the window, and the share of the layers that slide (0 where none do).
    pub sliding: Option<SlidingWindow>,
    pub window_share: f64,
    /// Within the window: Σ min(s_j, W) over decodes, Σ min(p_i, W) over
    /// prefill chunks, and the chunks' (query, key) pairs (chunked: s_j mod
    /// W and p_i mod W, the tokens before each in its own chunk).
    pub windowed_decode_context: u64,
    pub windowed_prefill_context: u64,
    pub windowed_prefill_attention: f64,
}

/// What a step's attention reads and computes, averaged over the layers: a
/// sliding layer attends within its window, a full one to every token.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Attended {
    pub decode_context: f64,
    pub prefill_context: f64,
    pub prefill_attention: f64,
}

impl BatchShape {
    /// An empty batch of `model`'s: its sliding window, where it has one,
    /// counted in the sums the attention is timed from.
    pub fn of_model(model: &crate::engine::ModelSpec) -> BatchShape {
        let (sliding, window_share) = model.sliding_share().map_or((None, 0.0), |(s, share)| (Some(s), share));
        BatchShape { sliding, window_share, ..BatchShape::default() }
    }

    /// One decode whose new token attends to `context` cached tokens.
    pub fn add_decode(&mut self, context: u32) {
        self.tokens += 1;
        self.seqs += 1;
        self.decode_context += context as u64;
        if let Some(s) = self.sliding {
            self.windowed_decode_context += u64::from(s.within(context));
        }
    }

    /// A prefill chunk of `new` tokens after `cached` ones.
    pub fn add_prefill(&mut self, cached: u32, new: u32) {
        self.tokens += new as u64;
        self.seqs += 1;
        self.prefills += 1;
        self.prefill_tokens += new as u64;
        self.largest_prefill = self.largest_prefill.max(new as u64);
        self.prefill_context += cached as u64;
        self.prefill_attention += new as f64 * (cached as f64 + new as f64 / 2.0);
        if let Some(s) = self.sliding {
            self.windowed_prefill_context += u64::from(s.within(cached));
            self.windowed_prefill_attention += s.pairs(cached, new);
        }
    }

    /// The attention's context and pairs, the sliding layers' within their
    /// window: with none, `decode_context`, `prefill_context` and
    /// `prefill_attention` themselves.
    pub fn attended(&self) -> Attended {
        let s = self.window_share;
        if self.sliding.is_none() || s <= 0.0 {
            return Attended {
                decode_context: self.decode_context as f64,
                prefill_context: self.prefill_context as f64,
                prefill_attention: self.prefill_attention,
            };
        }
        let mix = |full: f64, windowed: f64| (1.0 - s) * full + s * windowed;
        Attended {
            decode_context: mix(self.decode_context as f64, self.windowed_decode_context as f64),
            prefill_context: mix(self.prefill_context as f64, self.windowed_prefill_context as f64),
            prefill_attention: mix(self.prefill_attention, self.windowed_prefill_attention),
        }
    }
}

/// A step's time, term by term.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepBreakdown {
    pub gemm: Duration,
    pub attention: Duration,
    pub tensor_parallel: Duration,
    pub overhead: Duration,
}

impl StepBreakdown {
    pub fn total(&self) -> Duration {
        self.gemm + self.attention + self.tensor_parallel + self.overhead
    }
}

/// The step-time model for one configuration, with every per-configuration
/// product folded in so a step costs a handful of flops.
#[derive(Debug, Clone)]
pub struct Roofline {
    /// 2·P per token.
    flops_per_token: f64,
    /// TP · peak · η_c.
    compute_rate: f64,
    /// The attention's: TP · the peak of the type it computes in · η_c.
    /// Attention kernels multiply in the KV cache's element type, not the
    /// weights': 16-bit unless the cache is FP8 on a GPU with FP8 tensor
    /// cores (FP4 or FP8 weights beside a 16-bit cache attend in 16 bits).
    attention_rate: f64,
    /// Weights read every step whatever the batch: every weight but the
    /// routed experts and the input embedding (of which a step reads only its
    /// tokens' rows, `embedding_row_bytes` each); the LM head's table is read
    /// whole (tied or not).
    fixed_weight_bytes: f64,
    /// One row of the embedding table (16-bit): read per token.
    embedding_row_bytes: f64,
    /// The LM head's seconds for one sequence's logits: 2 · vocabulary · d
    /// flops at the 16-bit peak (the head stays 16-bit, as its weights do).
    lm_head_s_per_seq: f64,
    /// The LM head's table (16-bit), read whole every step: part of
    /// `fixed_weight_bytes`, apart for a pipeline's last stage.
    lm_head_bytes: f64,
    /// One routed expert's weights over all MoE layers; with `moe`, read per
    /// expert hit.
    expert_bytes: f64,
    moe: Option<Moe>,
    /// A mixture of experts' activation bytes through memory per routed
    /// (token, expert) pair over all MoE layers, summed over the TP group's
    /// GPUs, each of which reads the token's whole hidden state and moves
    /// its 1/TP of the experts' inner width (`moe_activation_traffic`; it
    /// streams at `weight_rate`, the group's); 0 where not counted.
    moe_act_bytes_per_pair: f64,
    /// 2 · (one routed expert's parameters over all MoE layers): its flops
    /// per routed pair, and the experts' own rate (TP · their peak · η_c).
    expert_flops_per_pair: f64,
    expert_rate: f64,
    /// TP · BW · η_w.
    weight_rate: f64,
    /// 4·L·H·h_d (latent attention: `ModelSpec::attention_flops_per_pair`).
    attention_flops_per_pair: f64,
    /// A prefill's, where it differs (latent attention's non-absorbed form).
    prefill_attention_flops_per_pair: Option<f64>,
    kv_bytes_per_token_per_gpu: f64,
    /// The sliding window the model's batches carry.
    sliding: Option<SlidingWindow>,
    /// BW · η_kv per GPU.
    kv_rate: f64,
    allreduce_calls: f64,
    allreduce_latency: f64,
    /// Ring all-reduce: each GPU sends 2(TP−1)/TP of the message.
    allreduce_bytes_per_token: f64,
    link_rate: f64,
    fixed_overhead: f64,
    per_seq_overhead: f64,
    /// The power model: idle watts and the dynamic range (TDP − idle) of
    /// the replica's TP GPUs together, and the shares of that range busy
    /// tensor cores and busy memory draw.
    idle_w: f64,
    dynamic_w: f64,
    /// The GPUs those watts are drawn by.
    gpus: u32,
    power_compute: f64,
    power_memory: f64,
    /// Expert or pipeline parallelism: `None` with EP and PP at 1.
    parallel: Option<parallel::Parallel>,
}

/// What one step draws: its GPUs' mean power over it, and how busy their
/// tensor cores and memory were (each the share of the step's time the
/// roofline spends on that side, 0..1).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepPower {
    pub compute_utilisation: f64,
    pub memory_utilisation: f64,
    /// Watts, all of the replica's GPUs together.
    pub watts: f64,
}

impl Roofline {
    pub fn new(cfg: &EngineConfig) -> Result<Roofline, Error> {
        cfg.validate()?;
        // The experts as the server pads them (vLLM's MXFP4).
        let served = cfg.served_model();
        let m = served.as_ref();
        let c = &cfg.calibration;
        let tp = cfg.tp as f64;
        // FP8 weights where the GPU has no FP8 cores run as W8A16 under
        // vLLM and SGLang ([`EngineConfig::compute_precision`]).
        let peak = cfg.gpu.peak_flops(cfg.compute_precision())?;
        let attention_peak = match cfg.kv_cache_dtype {
            KvCacheDtype::Fp8 if cfg.gpu.fp8_tflops.is_some() => cfg.gpu.peak_flops(Precision::Fp8)?,
            _ => cfg.gpu.peak_flops(Precision::Bf16)?,
        };
        let bw = cfg.gpu.bandwidth_bytes_per_s();
        let b_w = cfg.precision.bytes_per_weight();
        let all_weights = m.weight_bytes(cfg.precision);
        // The routed experts apart: the rest (attention, embeddings, router,
        // shared experts, a mixture of experts' dense layers) is read every step.
        let expert_bytes = m.moe.map_or(0.0, |_| m.expert_params_all_layers() as f64 * b_w);
        let routed_bytes = m.moe.map_or(0.0, |moe| expert_bytes * moe.num_experts as f64);
        let fixed_weight_bytes = all_weights - routed_bytes;
        // Untied, the input embedding is a second table of which a step reads
        // only its tokens' rows (it had counted as read whole every step:
        // 6.5 % of the 8B's BF16 decode bytes).
        let table = m.vocab_size as f64 * m.hidden_size as f64 * 2.0;
        let fixed_weight_bytes = fixed_weight_bytes - (m.embedding_params() as f64 * 2.0 - table);
        // 4-bit dense weights read at a share of η_w where the family's
        // kernels fall short (`eta_fp4_weights`, CDNA4's AITER): counted as
        // the bytes that η_w would read in their time. A mixture of
        // experts' routed ones run in its fused kernels, apart.
        let fp4_dense_bytes = match cfg.precision {
            Precision::Fp4 => m.body_params() as f64 * b_w - routed_bytes,
            _ => 0.0,
        };
        let fixed_weight_bytes = fixed_weight_bytes + fp4_dense_bytes * (1.0 / c.eta_fp4_weights - 1.0);
        let (allreduce_calls, allreduce_bytes_per_token) = if cfg.tp > 1 {
            // Two all-reduces per layer (after attention and after the MLP) of
            // N × d 16-bit activations.
            (2.0 * m.num_layers as f64, 2.0 * (tp - 1.0) / tp * m.hidden_size as f64 * 2.0)
        } else {
            (0.0, 0.0)
        };
        // A TP group within one NVLink domain all-reduces over NVLink; one
        // wider than it (TP 16 of H100s: two boards) over the network, as
        // an expert-parallel group that leaves the domain does
        // (`parallel.rs`).
        let (allreduce_latency_us, link_rate) = if cfg.tp <= cfg.gpu.nvlink_domain {
            (c.allreduce_latency_us, cfg.gpu.interconnect_bytes_per_s() * c.eta_link)
        } else {
            (
                c.allreduce_latency_us + parallel::NETWORK_LATENCY_US,
                cfg.gpu.network_bytes_per_s().min(cfg.gpu.interconnect_bytes_per_s()) * c.eta_link,
            )
        };
        // The GPUs one engine drives: TP × PP, times the ranks of an
        // expert-parallel group.
        let gpus = tp * (cfg.pp * cfg.attention_ranks()) as f64;
        // MXFP4 experts against 16-bit activations (without FP4 tensor
        // cores, or as `--mxfp4-activations bf16` says) multiply at a share
        // of the 16-bit rate (W4A16 kernels: `eta_w4a16_moe`); against FP8
        // ones (W4A8) at the FP8 rate.
        let peak = match m.moe {
            Some(_) if cfg.mxfp4_w4a16() => cfg.gpu.peak_flops(Precision::Bf16)? * c.eta_w4a16_moe,
            Some(_) if cfg.precision == Precision::Mxfp4 => cfg.gpu.peak_flops(Precision::Fp8)?,
            _ => peak,
        };
        // MXFP4 runs the routed experts at its rate and the rest of a
        // mixture of experts 16-bit: one rate for a token's products, their
        // times added (`peak` stays the experts', which expert parallelism
        // times apart).
        let gemm_peak = match m.moe {
            Some(moe) if cfg.precision == Precision::Mxfp4 => {
                let all = m.active_params() as f64;
                let experts = m.expert_params_all_layers() as f64 * f64::from(moe.experts_per_token);
                all / (experts / peak + (all - experts) / cfg.gpu.peak_flops(Precision::Bf16)?)
            }
            _ => peak,
        };
        Ok(Roofline {
            flops_per_token: 2.0 * m.active_params() as f64,
            compute_rate: tp * gemm_peak * c.eta_compute,
            attention_rate: tp * attention_peak * c.eta_compute,
            fixed_weight_bytes,
            embedding_row_bytes: m.hidden_size as f64 * 2.0,
            lm_head_s_per_seq: 2.0 * m.vocab_size as f64 * m.hidden_size as f64
                / (tp * cfg.gpu.peak_flops(Precision::Bf16)? * c.eta_compute),
            lm_head_bytes: table,
            expert_bytes,
            moe: m.moe,
            moe_act_bytes_per_pair: tp * cfg.moe_activation_bytes_per_pair(tp),
            expert_flops_per_pair: 2.0 * m.expert_params_all_layers() as f64,
            expert_rate: tp * peak * c.eta_compute,
            weight_rate: tp * bw * c.eta_weights,
            attention_flops_per_pair: m.attention_flops_per_pair(),
            prefill_attention_flops_per_pair: m.prefill_attention_flops_per_pair(),
            kv_bytes_per_token_per_gpu: m.kv_bytes_per_token_per_gpu(cfg.kv_cache_dtype, cfg.tp),
            sliding: m.sliding_window,
            kv_rate: bw * c.eta_kv,
            allreduce_calls,
            allreduce_latency: allreduce_latency_us * 1e-6,
            allreduce_bytes_per_token,
            link_rate,
            fixed_overhead: m.num_layers as f64 * c.c_layer_us * 1e-6 + c.c_step_us * 1e-6,
            per_seq_overhead: c.c_seq_us * 1e-6,
            idle_w: cfg.gpu.idle_w * c.power_idle * gpus,
            dynamic_w: (cfg.gpu.tdp_w - cfg.gpu.idle_w * c.power_idle).max(0.0) * gpus,
            gpus: gpus.round() as u32,
            power_compute: c.power_compute,
            power_memory: c.power_memory,
            parallel: parallel::Parallel::new(cfg, peak),
        })
    }

    /// Watts the replica's GPUs draw while no step runs.
    pub fn idle_watts(&self) -> f64 {
        self.idle_w
    }

    /// The GPUs the replica runs on (TP × PP, times the ranks of an
    /// expert-parallel group): those its watts are drawn by.
    pub fn gpus(&self) -> u32 {
        self.gpus
    }

    /// Watts the replica's GPUs are provisioned for (TDP × TP × PP, times
    /// the ranks of an expert-parallel group).
    pub fn provisioned_watts(&self) -> f64 {
        self.idle_w + self.dynamic_w
    }

    /// T_step and what the step draws: idle power plus the dynamic range
    /// times min(1, power_compute · u_c + power_memory · u_m), where u_c and
    /// u_m are the shares of the step the roofline's compute and memory
    /// sides take (docs/simulator.md, "Power and energy").
    pub fn step_time_and_power(&self, b: &BatchShape) -> (Duration, StepPower) {
        self.step_time_and_power_ranked(b, None)
    }

    /// [`Roofline::step_time_and_power`] of an expert-parallel group whose
    /// attention ranks' parts of the batch are `ranks` (each rank's own
    /// sequences; the slowest rank sets the step); `None`, or a group of one
    /// rank, as the batch spread evenly.
    pub fn step_time_and_power_ranked(&self, b: &BatchShape, ranks: Option<&[BatchShape]>) -> (Duration, StepPower) {
        let t = self.split_ranked(b, ranks);
        let total = t.total();
        (seconds(total), self.power_over(&t, total))
    }

    /// What the step's kernels draw while they run: the power of
    /// [`Roofline::step_time_and_power`] over the step's matrix products,
    /// attention and all-reduces alone, without the overheads (an engine's
    /// software, counted at idle). A step timed back to back on a GPU, as
    /// `scripts/gpu-step-times.py` times it, has no such gaps.
    pub fn kernel_power(&self, b: &BatchShape) -> StepPower {
        let t = self.split(b);
        self.power_over(&t, t.gemm + t.attention + t.tp)
    }

    /// Idle power plus the dynamic range times min(1, a_c·u_c + a_m·u_m),
    /// u_c and u_m the step's compute and memory seconds as shares of `over`;
    /// idle power where `over` is no time.
    fn power_over(&self, t: &Terms, over: f64) -> StepPower {
        if over <= 0.0 {
            return StepPower { watts: self.idle_w, ..StepPower::default() };
        }
        let u_c = (t.compute_s / over).min(1.0);
        let u_m = (t.memory_s / over).min(1.0);
        let activity = (self.power_compute * u_c + self.power_memory * u_m).min(1.0);
        StepPower { compute_utilisation: u_c, memory_utilisation: u_m, watts: self.idle_w + self.dynamic_w * activity }
    }

    /// How long after a step of `step` ends a chunk of `chunk` tokens in
    /// it gets its output: a pipeline's micro-batch trip that outlasts the
    /// step (`parallel.rs`); zero elsewhere. `rank`: the part of the batch
    /// on the chunk's attention rank, where the engine counted it.
    pub fn chunk_late(&self, b: &BatchShape, rank: Option<&BatchShape>, chunk: u32, step: Duration) -> Duration {
        match &self.parallel {
            Some(p) => seconds(p.chunk_late(self, b, rank, chunk, step.as_secs_f64())),
            None => Duration::ZERO,
        }
    }

    /// T_step for one batch.
    pub fn step_time(&self, b: &BatchShape) -> Duration {
        let [gemm, attention, tp, overhead] = self.terms(b);
        seconds(gemm + attention + tp + overhead)
    }

    pub fn breakdown(&self, b: &BatchShape) -> StepBreakdown {
        let [gemm, attention, tp, overhead] = self.terms(b).map(seconds);
        StepBreakdown { gemm, attention, tensor_parallel: tp, overhead }
    }

    /// Seconds: [T_gemm, T_att, T_tp, overheads] (each finite and ≥ 0 for a
    /// checked calibration, but as large as an efficiency of 1e-300 makes it).
    fn terms(&self, b: &BatchShape) -> [f64; 4] {
        let t = self.split(b);
        [t.gemm, t.attention, t.tp, t.overhead]
    }

    /// The weight bytes a step of `n` tokens reads: every dense weight, the
    /// LM head, its tokens' rows of the embedding, and of a mixture of
    /// experts the experts its tokens reach. Tokens route independently, so a
    /// batch of N touches E·(1 − (1 − k/E)^N) distinct experts per layer on
    /// average.
    pub(super) fn weight_bytes(&self, n: f64) -> f64 {
        let dense = self.dense_weight_bytes(n);
        match self.moe {
            None => dense,
            Some(moe) => {
                let e = moe.num_experts as f64;
                let miss = 1.0 - moe.experts_per_token as f64 / e;
                dense + self.expert_bytes * e * (1.0 - miss.powf(n))
            }
        }
    }

    /// The bytes of a step of `n` tokens that are not routed experts.
    pub(super) fn dense_weight_bytes(&self, n: f64) -> f64 {
        self.fixed_weight_bytes + n * self.embedding_row_bytes
    }

    /// Matrix-product compute seconds of `n` tokens over `seqs` sequences:
    /// 2·P a token at the precision's peak, and the LM head's logits once a
    /// sequence (a prefill chunk's last token, a decode's one).
    pub(super) fn gemm_compute_s(&self, n: f64, seqs: f64) -> f64 {
        n * self.flops_per_token / self.compute_rate + seqs * self.lm_head_s_per_seq
    }

    /// The routed experts' share of [`gemm_compute_s`](Self::gemm_compute_s)
    /// for `n` tokens, at the experts' own rate: k pairs a token, 2 · (one
    /// expert's parameters) flops a pair. 0 for a dense model.
    pub(super) fn expert_compute_s(&self, n: f64) -> f64 {
        self.moe.map_or(0.0, |moe| n * moe.experts_per_token as f64 * self.expert_flops_per_pair / self.expert_rate)
    }

    /// Attention flops of `part` of a step's prefill and decode pairs (the
    /// share one pipeline stage or rank computes; 1 for the whole step).
    pub(super) fn attention_flops(&self, prefill_pairs: f64, decode_pairs: f64, part: f64) -> f64 {
        match self.prefill_attention_flops_per_pair {
            None => self.attention_flops_per_pair * ((prefill_pairs + decode_pairs) * part),
            Some(prefill) => (prefill * prefill_pairs + self.attention_flops_per_pair * decode_pairs) * part,
        }
    }

    /// The terms, and the seconds of compute and of memory traffic in them.
    fn split(&self, b: &BatchShape) -> Terms {
        self.split_ranked(b, None)
    }

    /// [`Roofline::split`] with the attention ranks' parts of the batch.
    fn split_ranked(&self, b: &BatchShape, ranks: Option<&[BatchShape]>) -> Terms {
        debug_assert!(b.tokens == 0 || b.sliding == self.sliding, "a batch built without the model's sliding window");
        if let Some(p) = &self.parallel {
            return p.split(self, b, ranks);
        }
        if b.tokens == 0 {
            return Terms::default();
        }
        let n = b.tokens as f64;
        let (gemm_c, gemm_m) = (self.gemm_compute_s(n, b.seqs as f64), self.weight_bytes(n) / self.weight_rate);
        let (gemm, act_m) = match self.moe {
            // The experts' products a roofline of their own, their
            // activations' traffic with their weights'.
            Some(moe) if self.moe_act_bytes_per_pair > 0.0 => {
                let pairs = n * moe.experts_per_token as f64;
                let expert_c = self.expert_compute_s(n);
                // The experts' seconds within `gemm_c` are at their own
                // rate (MXFP4's blend adds the two kinds' times).
                let dense_c = (gemm_c - expert_c).max(0.0);
                let dense_m = self.dense_weight_bytes(n) / self.weight_rate;
                let act_m = pairs * self.moe_act_bytes_per_pair / self.weight_rate;
                (dense_c.max(dense_m) + expert_c.max(gemm_m - dense_m + act_m), act_m)
            }
            _ => (gemm_c.max(gemm_m), 0.0),
        };
        let a = b.attended();
        let kv_tokens = a.decode_context + a.prefill_context + b.tokens as f64;
        let (att_c, att_m) = (
            self.attention_flops(a.prefill_attention, a.decode_context, 1.0) / self.attention_rate,
            kv_tokens * self.kv_bytes_per_token_per_gpu / self.kv_rate,
        );
        let tp = self.allreduce_calls * (self.allreduce_latency + n * self.allreduce_bytes_per_token / self.link_rate);
        let overhead = self.fixed_overhead + self.per_seq_overhead * b.seqs as f64;
        // The activations' traffic streams memory as the weights do (the
        // power model's memory side).
        let memory_s = gemm_m + act_m + att_m;
        Terms { gemm, attention: att_c.max(att_m), tp, overhead, compute_s: gemm_c + att_c, memory_s }
    }
}

/// One step's terms in seconds, and the compute and memory seconds within.
#[derive(Debug, Clone, Copy, Default)]
struct Terms {
    gemm: f64,
    attention: f64,
    tp: f64,
    overhead: f64,
    compute_s: f64,
    memory_s: f64,
}

impl Terms {
    /// The step's seconds: the terms' sum.
    fn total(&self) -> f64 {
        self.gemm + self.attention + self.tp + self.overhead
    }

    /// Each term times `k` (the busy seconds too).
    fn scaled(&self, k: f64) -> Terms {
        Terms {
            gemm: self.gemm * k,
            attention: self.attention * k,
            tp: self.tp * k,
            overhead: self.overhead * k,
            compute_s: self.compute_s * k,
            memory_s: self.memory_s * k,
        }
    }

    /// Each term summed with `o`'s.
    fn plus(&self, o: &Terms) -> Terms {
        Terms {
            gemm: self.gemm + o.gemm,
            attention: self.attention + o.attention,
            tp: self.tp + o.tp,
            overhead: self.overhead + o.overhead,
            compute_s: self.compute_s + o.compute_s,
            memory_s: self.memory_s + o.memory_s,
        }
    }
}

/// Seconds of a step as a duration: a calibration's extreme constants (an
/// efficiency of 1e-300) make steps longer than any clock holds, which the
/// virtual clock would overflow on; a step takes at most the horizon.
fn seconds(s: f64) -> Duration {
    goodput_core::clamped_secs(s).min(goodput_core::HORIZON)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::catalog::{GpuSpec, ModelSpec};
    use crate::engine::{Calibration, SchedulerPolicy};

    fn cfg(model: &str, gpu: &str, precision: Precision) -> EngineConfig {
        EngineConfig::from_names(model, gpu, precision).unwrap()
    }

    #[test]
    fn kv_capacity_of_llama_8b_bf16_on_h100_by_hand() {
        // 79.18 GiB × 0.9 = 76,516,989,861.9 B; weights 8,029,995,008 × 2 =
        // 16,059,990,016 B; vLLM's activations 1,024 sequences × 128,256
        // logits × 38.4 B + 8,192 tokens × 4,096 × 2 B = 5,110,339,993.6 B;
        // runtime 0.15 GiB = 161,061,273.6 B. Left: 55,185,598,578.7 B. A
        // token takes 2 × 32 × 8 × 128 × 2 = 131,072 B, a 16-token block
        // 2,097,152 B: 26,314 whole blocks, 421,024 tokens.
        let cap = kv_capacity(&cfg("llama-3.1-8b", "h100", Precision::Bf16)).unwrap();
        assert_eq!(cap.weight_bytes_per_gpu, 16_059_990_016.0);
        assert!((cap.kv_bytes_per_gpu - 55_185_598_578.7).abs() < 1.0);
        assert_eq!(cap.num_blocks, 26_314);
        assert_eq!(cap.tokens(), 421_024);
    }

    /// vLLM 0.11.0's own memory log on one or two H100s (79.18 GiB each,
    /// the catalog's since session 91; `--gpu-memory-utilization 0.9`;
    /// llm-d/llm-d-benchmark@0fa12aa9788a,
    /// `config_explorer/empirical-vllm-memory-results.md`, Apache-2.0):
    /// model, precision, TP, the weights, the activations (its profile's
    /// peak) and the cache it logged per GPU (GiB; a negative cache: it
    /// refused to start, and logged no activations), and the engine's
    /// weights and cache, as docs/simulator.md ("The KV cache's size,
    /// checked") quotes them.
    type LoggedMemory = (&'static str, Precision, u32, f64, Option<f64>, f64, f64, f64);
    const VLLM_MEMORY_LOG: [LoggedMemory; 7] = [
        ("gpt-oss-20b", Precision::Mxfp4, 1, 13.47, Some(7.38), 50.28, 12.80, 50.90),
        ("gpt-oss-120b", Precision::Mxfp4, 1, 64.38, Some(7.38), 3.33, 60.69, 3.01),
        ("llama-3.3-70b", Precision::Fp8, 2, 33.88, Some(4.84), 32.00, 33.83, 32.46),
        ("llama-3.3-70b", Precision::Fp8, 1, 67.72, None, -1.44, 67.66, -1.37),
        ("llama-3.1-8b", Precision::Bf16, 1, 14.99, Some(4.76), 51.38, 14.96, 51.40),
        ("qwen3-32b", Precision::Bf16, 1, 61.03, Some(5.64), 4.45, 61.02, 4.45),
        ("qwen3-32b", Precision::Bf16, 2, 30.59, Some(5.64), 34.49, 30.51, 34.96),
    ];

    #[test]
    fn the_cache_s_size_is_checked_against_vllm_s_memory_log() {
        for (model, precision, tp, logged_w, logged_act, logged_kv, w, kv) in VLLM_MEMORY_LOG {
            let mut c = cfg(model, "h100", precision);
            c.tp = tp;
            let cap = kv_capacity_unchecked(&c);
            let (got_w, got_kv) = (cap.weight_bytes_per_gpu / GIB, cap.kv_bytes_per_gpu / GIB);
            let what = format!("{model} TP {tp}: weights {got_w:.2}, cache {got_kv:.2} GiB");
            assert!((got_w - w).abs() < 0.005 && (got_kv - kv).abs() < 0.005, "{what}: quote the new figures");
            // Both refuse the model that vLLM refused, and start the others.
            assert_eq!(logged_kv < 0.0, kv_capacity(&c).is_err(), "{what}");
            // A dense model's weights are the checkpoint's, as vLLM loads
            // them (MXFP4's experts vLLM pads for its kernels).
            if precision != Precision::Mxfp4 {
                assert!((got_w / logged_w - 1.0).abs() < 0.01, "{what} against {logged_w}");
            }
            // The activations are the profile's within 1 % (the constant
            // per logit was set on the 8B's row alone).
            if let Some(act) = logged_act {
                let got = c.activation_bytes() / GIB;
                assert!((got / act - 1.0).abs() < 0.01, "{what}: activations {got:.3} against {act}");
            }
            // Under the other schedulers, the flat reserve.
            c.scheduler = SchedulerPolicy::Trtllm;
            assert_eq!(c.activation_bytes(), c.calibration.activation_gib * GIB);
        }
        // The log's Qwen3-0.6B (d 1,024, the same 151,936-token vocabulary
        // as Qwen3-32B): 5.56 GiB logged.
        let mut c = cfg("qwen3-8b", "h100", Precision::Bf16);
        c.model.hidden_size = 1024;
        let got = c.activation_bytes() / GIB;
        assert!((got / 5.56 - 1.0).abs() < 0.01, "Qwen3-0.6B's activations {got:.3}");
        // Two logs from elsewhere: Qwen3-30B-A3B on a large GPU (1,024
        // sequences; vllm-project/vllm#30942: "torch peak memory
        // increase: 5.58GiB"), and Qwen3-8B on a 23.5 GiB GPU, whose
        // smaller defaults are an L4's (256 sequences, 2,048 tokens; a
        // public notes file's log: 1.40 GiB).
        for (model, gpu, logged) in [("qwen3-30b-a3b", "h100", 5.58), ("qwen3-8b", "l4", 1.40)] {
            let got = cfg(model, gpu, Precision::Bf16).activation_bytes() / GIB;
            assert!((got / logged - 1.0).abs() < 0.01, "{model} on {gpu}: activations {got:.3} against {logged}");
        }
    }

    /// SGLang's cache against its own logs: (what, model, GPU, precision,
    /// TP, the share given (`None`: SGLang's default), its chunk, the
    /// logged cache in GiB (or a budget before pages, for the MI355X), and
    /// this engine's).
    type SglangLog = (&'static str, &'static str, &'static str, Precision, u32, Option<f64>, u32, f64, f64);
    const SGLANG_MEMORY_LOGS: [SglangLog; 4] = [
        // didier-durand/llms-in-clouds, docs/sglang.md (March 2025, MIT):
        // QwQ-32B on four L4s, SGLang's then default share 0.85: 46,611
        // tokens, K and V 1.42 GiB each. Qwen3-32B stands in: its cache
        // has QwQ's shape (64 layers, 8 KV heads of 128), its weights
        // QwQ's count within 0.1 %.
        ("QwQ-32B, 4 × L4", "qwen3-32b", "l4", Precision::Bf16, 4, Some(0.85), 2048, 2.84, 3.13),
        // vllm-project/vllm#21348: Qwen3-235B-A22B-FP8 on four H100s at
        // 0.93: 367,404 tokens, K and V 8.23 GiB each.
        ("Qwen3-235B-A22B FP8, 4 × H100", "qwen3-235b-a22b", "h100", Precision::Fp8, 4, Some(0.93), 8192, 16.46, 18.22),
        // sgl-project/sglang#18263: Qwen3-30B-A3B on one MI355X at the
        // default share (logged 0.911): "initial available_bytes 204.63 GB".
        ("Qwen3-30B-A3B, MI355X", "qwen3-30b-a3b", "mi355x", Precision::Bf16, 1, None, 16384, 204.63, 205.10),
        // ai-dynamo/aisimulate#263 (its worked example): DeepSeek-R1 FP8 on
        // eight H200s at 0.82, ~509k tokens observed, 70,272 bytes each.
        ("DeepSeek-R1 FP8, 8 × H200", "deepseek-v3", "h200", Precision::Fp8, 8, Some(0.82), 32768, 33.31, 35.97),
    ];

    #[test]
    fn the_cache_s_size_under_sglang_is_checked_against_its_logs() {
        for (what, model, gpu, precision, tp, share, chunk, logged, quoted) in SGLANG_MEMORY_LOGS {
            let mut c = cfg(model, gpu, precision);
            (c.tp, c.scheduler, c.gpu_memory_utilization, c.max_num_batched_tokens) =
                (tp, SchedulerPolicy::Sglang, share, chunk);
            let got = kv_capacity(&c).unwrap().kv_bytes_per_gpu / GIB;
            assert!((got - quoted).abs() < 0.005, "{what}: {got:.2} GiB, quote the new figure");
            // Within 11 % of every log, above each: the weights SGLang
            // loads are a little more than the checkpoint's parameters
            // (QwQ's logged 15.54 GiB a GPU against 15.26 counted).
            assert!(got > logged && got / logged < 1.11, "{what}: {got:.2} against {logged}");
            // The flat reserve inside the share that this replaced put the
            // smallest of them at none at all: QwQ on four L4s did not fit.
            let old = c.gpu.memory_bytes() * c.memory_share()
                - kv_capacity(&c).unwrap().weight_bytes_per_gpu
                - (c.calibration.activation_gib + c.calibration.runtime_gib) * GIB;
            if gpu == "l4" {
                assert!(old < 0.0, "{what}: {old}");
            }
        }
        // The default share, against those SGLang logged: 0.835 for one
        // H100 with its 8,192-token chunk (SGLang's documentation
        // notebooks' server arguments; it reads nvidia-smi's 81,559 MiB
        // where the catalog holds CUDA's 79.18 GiB), 0.911 for one MI355X
        // with its 16,384 (sglang#18263).
        let share = |model: &str, gpu: &str, tp: u32, chunk: u32| {
            let mut c = cfg(model, gpu, Precision::Bf16);
            (c.tp, c.scheduler, c.max_num_batched_tokens) = (tp, SchedulerPolicy::Sglang, chunk);
            c.memory_share()
        };
        assert!((share("llama-3.1-8b", "h100", 1, 8192) - 0.835).abs() <= 0.0011);
        assert_eq!(share("qwen3-30b-a3b", "mi355x", 1, 16384), 0.911);
        // Its terms, each in its direction: more TP, a larger chunk, DP
        // attention and a drafter reserve more; a given share is taken.
        assert!(share("llama-3.1-70b", "h100", 8, 8192) < share("llama-3.1-70b", "h100", 4, 8192));
        assert!(share("llama-3.1-8b", "l40s", 1, 16384) < share("llama-3.1-8b", "l40s", 1, 4096));
        let mut c = cfg("deepseek-v3", "h200", Precision::Fp8);
        (c.tp, c.scheduler) = (8, SchedulerPolicy::Sglang);
        let tp8 = c.memory_share();
        c.ep = 8;
        c.tp = 1;
        assert!(c.memory_share() < tp8, "DP attention over eight ranks reserves its padding");
        c.spec = Some(crate::engine::SpecDecoding { tokens: 3, acceptance: 0.7, draft_cost: 0.05 });
        let drafting = c.memory_share();
        assert!((c.clone().rank_config().memory_share() - drafting).abs() < 1e-12, "each rank keeps the group's");
        c.spec = None;
        assert!(drafting < c.memory_share());
        c.gpu_memory_utilization = Some(0.7);
        assert_eq!(c.memory_share(), 0.7);
        // Disaggregated (sglang#29615): one H100 a prefill instance keeps no
        // graphs' reserve, 0.841 (512 + 8,192 × 1.5 + 128 MiB), and a
        // decode one sizes its activations to its batch, 256 graphs' up to
        // 2,048 tokens, its reserve then at the 10 GiB floor, 0.874; a
        // share given is each pool's.
        let mut pd = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        (pd.scheduler, pd.pd) = (SchedulerPolicy::Sglang, Some(crate::engine::Disaggregation::parse("1:1").unwrap()));
        assert_eq!(
            (pd.memory_share(), pd.pool(false).memory_share(), pd.pool(true).memory_share()),
            (0.834, 0.841, 0.874)
        );
        let engines = pd.engine_configs();
        assert!(kv_capacity(&engines[1]).unwrap().tokens() > kv_capacity(&engines[0]).unwrap().tokens());
        pd.gpu_memory_utilization = Some(0.8);
        assert_eq!((pd.pool(false).memory_share(), pd.pool(true).memory_share()), (0.8, 0.8));
        // A refusal under SGLang offers a share that leaves its
        // activations 5 GiB: 0.93 of an H100 (0.95 would leave 4), none
        // on an L4, whose own default is already past 0.77.
        let mut big = cfg("llama-3.1-70b", "h100", Precision::Bf16);
        (big.tp, big.scheduler) = (2, SchedulerPolicy::Sglang);
        let why = kv_capacity(&big).unwrap_err().to_string();
        assert!(why.contains("--gpu-memory-utilization 0.93") && !why.contains("0.95"), "{why}");
        let fullest = |gpu: &str, s: SchedulerPolicy| {
            EngineConfig { scheduler: s, ..cfg("llama-3.1-8b", gpu, Precision::Bf16) }.fullest_share()
        };
        assert_eq!(
            [
                fullest("h100", SchedulerPolicy::Sglang),
                fullest("l4", SchedulerPolicy::Sglang),
                fullest("b200", SchedulerPolicy::Sglang)
            ],
            [0.93, 0.77, 0.95]
        );
        assert_eq!(fullest("l4", SchedulerPolicy::Vllm), 0.95);
        // vLLM's and TensorRT-LLM's default is 0.9 wherever they run.
        c.gpu_memory_utilization = None;
        for s in [SchedulerPolicy::Vllm, SchedulerPolicy::Trtllm] {
            c.scheduler = s;
            assert_eq!(c.memory_share(), 0.9);
        }
    }

    #[test]
    fn a_mixture_of_experts_activation_traffic_is_counted_where_asked() {
        // Qwen3-235B-A22B on eight H100s (TP 8): a routed pair moves
        // (3·4,096 + 6·1,536/8) × 2 bytes in each of 94 layers. A prefill
        // chunk of 8,192 tokens with it counted: the experts' products are
        // their own roofline, bound by that traffic (20.2 MB a token), the
        // rest the step's; a dense model is untouched.
        let mut c = cfg("qwen3-235b-a22b", "h100", Precision::Bf16);
        c.tp = 8;
        assert_eq!(c.calibration.moe_activation_traffic, 1.0, "counted by default");
        let on = c.clone();
        c.calibration.moe_activation_traffic = 0.0;
        let (off_r, on_r) = (Roofline::new(&c).unwrap(), Roofline::new(&on).unwrap());
        assert_eq!(on_r.moe_act_bytes_per_pair, 8.0 * 94.0 * (3.0 * 4096.0 + 6.0 * 192.0) * 2.0);
        let mut chunk = BatchShape::default();
        chunk.add_prefill(0, 8192);
        let (off, on_t) = (off_r.breakdown(&chunk).gemm.as_secs_f64(), on_r.breakdown(&chunk).gemm.as_secs_f64());
        let pairs = 8192.0 * 8.0;
        let traffic = pairs * on_r.moe_act_bytes_per_pair / on_r.weight_rate;
        let expert_c = pairs * on_r.expert_flops_per_pair / on_r.expert_rate;
        assert!(traffic > expert_c, "the experts' products bound by their activations: {traffic} > {expert_c}");
        assert!(on_t > off * 1.1 && on_t < off + traffic, "{off} → {on_t}");
        // Decode of one sequence: its weights' reads dwarf its activations.
        let mut one = BatchShape::default();
        one.add_decode(1024);
        let (a, b) = (off_r.step_time(&one).as_secs_f64(), on_r.step_time(&one).as_secs_f64());
        assert!(b >= a && b < a * 1.01, "{a} → {b}");
        // TensorRT-LLM's scheduler counts none: its kernels fuse otherwise.
        let trt = EngineConfig { scheduler: SchedulerPolicy::Trtllm, ..on.clone() };
        assert_eq!(trt.moe_activation_traffic(), 0.0);
        let trt_off = EngineConfig { scheduler: SchedulerPolicy::Trtllm, ..c.clone() };
        assert_eq!(Roofline::new(&trt).unwrap().step_time(&chunk), Roofline::new(&trt_off).unwrap().step_time(&chunk));
        // A dense model has none.
        let mut dense = cfg("llama-3.1-70b", "h100", Precision::Fp8);
        dense.tp = 2;
        let mut dense_on = dense.clone();
        dense_on.calibration.moe_activation_traffic = 1.0;
        assert_eq!(
            Roofline::new(&dense).unwrap().step_time(&chunk),
            Roofline::new(&dense_on).unwrap().step_time(&chunk)
        );
        // Under expert parallelism the experts are whole on their GPUs, the
        // products four times as wide: the chunk stays bound by their
        // compute, and a memory-bound step of 256 decodes carries the
        // traffic beside the experts' weights.
        let mut ep = on.clone();
        ep.ep = 8;
        let mut ep_off = c.clone();
        ep_off.ep = 8;
        let (r, r_off) = (Roofline::new(&ep).unwrap(), Roofline::new(&ep_off).unwrap());
        assert_eq!(r.step_time(&chunk), r_off.step_time(&chunk));
        let mut decodes = BatchShape::default();
        (0..256).for_each(|_| decodes.add_decode(1024));
        assert!(r.step_time(&decodes) > r_off.step_time(&decodes));
    }

    #[test]
    fn fp8_weights_without_fp8_cores_run_as_w8a16_but_under_tensorrt_llm() {
        // An A100 under vLLM (or SGLang): FP8 Marlin, 1-byte weights at the
        // 16-bit peak, a step as INT8's; the same request under TensorRT-LLM
        // is refused, naming the widths that run.
        let fp8 = cfg("qwen3-32b", "a100", Precision::Fp8);
        assert_eq!(fp8.compute_precision(), Precision::Int8);
        let int8 = cfg("qwen3-32b", "a100", Precision::Int8);
        let mut decode = BatchShape::default();
        (0..64).for_each(|_| decode.add_decode(2048));
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 4096);
        for b in [decode, prefill] {
            let step = |c: &EngineConfig| Roofline::new(c).unwrap().step_time(&b);
            assert_eq!(step(&fp8), step(&int8));
        }
        assert_eq!(kv_capacity(&fp8).unwrap().num_blocks, kv_capacity(&int8).unwrap().num_blocks);
        let sglang = EngineConfig { scheduler: SchedulerPolicy::Sglang, ..fp8.clone() };
        assert_eq!(sglang.compute_precision(), Precision::Int8);
        sglang.validate().unwrap();
        let trt = EngineConfig { scheduler: SchedulerPolicy::Trtllm, ..fp8.clone() };
        assert_eq!(trt.compute_precision(), Precision::Fp8);
        let err = trt.validate().unwrap_err().to_string();
        assert!(err.contains("no FP8 tensor cores") && err.contains("int8"), "{err}");
        // Where FP8 cores are, FP8 is FP8.
        assert_eq!(cfg("qwen3-32b", "h100", Precision::Fp8).compute_precision(), Precision::Fp8);
    }

    #[test]
    fn fp4_weights_on_cdna4_are_read_at_aiter_s_share() {
        // The 70B's decode of 8 sequences on one MI355X: its products read
        // their 4-bit weights at `eta_fp4_weights` of η_w (AITER's W4A4,
        // 0.67), so they take 1/0.67 of the bytes' time, and 0.84 of the
        // FP8 products' (AITER's own kernels: 0.79 at the median); its
        // prefill's, compute-bound, are as fast as before. A B200 reads FP4
        // at η_w.
        let mut decode = BatchShape::default();
        (0..8).for_each(|_| decode.add_decode(1024));
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 8192);
        let gemm = |c: &EngineConfig, b: &BatchShape| Roofline::new(c).unwrap().breakdown(b).gemm.as_secs_f64();
        let fp4 = cfg("llama-3.3-70b", "mi355x", Precision::Fp4);
        assert_eq!(fp4.calibration.eta_fp4_weights, crate::engine::calibration::CDNA4_FP4_WEIGHTS);
        let mut at_eta_w = fp4.clone();
        at_eta_w.calibration.eta_fp4_weights = 1.0;
        let slower = gemm(&fp4, &decode) / gemm(&at_eta_w, &decode);
        // The 16-bit LM head and embedding rows are read at η_w.
        assert!(slower > 1.4 && slower < 1.0 / 0.67, "{slower}");
        let against_fp8 = gemm(&fp4, &decode) / gemm(&cfg("llama-3.3-70b", "mi355x", Precision::Fp8), &decode);
        assert!((0.8..0.9).contains(&against_fp8), "{against_fp8}");
        assert_eq!(gemm(&fp4, &prefill), gemm(&at_eta_w, &prefill));
        let b200 = cfg("llama-3.3-70b", "b200", Precision::Fp4);
        assert_eq!(b200.calibration.eta_fp4_weights, 1.0);
        // FP8 weights, and MXFP4 experts (their fused kernels), untouched.
        let fp8 = cfg("llama-3.3-70b", "mi355x", Precision::Fp8);
        let mut fp8_other = fp8.clone();
        fp8_other.calibration.eta_fp4_weights = 0.1;
        assert_eq!(gemm(&fp8, &decode), gemm(&fp8_other, &decode));
        let oss = cfg("gpt-oss-120b", "mi355x", Precision::Mxfp4);
        let mut oss_other = oss.clone();
        oss_other.calibration.eta_fp4_weights = 0.1;
        let mut oss_decode = BatchShape::of_model(&oss.model);
        (0..8).for_each(|_| oss_decode.add_decode(1024));
        assert_eq!(gemm(&oss, &oss_decode), gemm(&oss_other, &oss_decode));
    }

    #[test]
    fn a_model_too_big_says_what_would_fit() {
        let err = kv_capacity(&cfg("llama-3.1-70b", "h100", Precision::Bf16)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::ModelDoesNotFit { .. }));
        assert!(text.contains("--tp 2") && text.contains("--precision int4"), "{text}");
        let err = kv_capacity(&cfg("llama-3.1-405b", "l4", Precision::Int4)).unwrap_err();
        assert!(err.to_string().contains("--tp 16"), "{err}");
        // Where vLLM's sampler reserve is what tips it (GPT-OSS's 201,088
        // logits for 1,024 requests, 7.4 GiB), fewer sequences are offered;
        // TensorRT-LLM's flat reserve has no such lever.
        let mut c = cfg("gpt-oss-120b", "h100", Precision::Mxfp4);
        c.gpu_memory_utilization = Some(0.86);
        let text = kv_capacity(&c).unwrap_err().to_string();
        assert!(
            text.contains("or --max-num-seqs 512 (vLLM reserves its sampler's memory for 1024 requests)"),
            "{text}"
        );
        c.scheduler = SchedulerPolicy::Trtllm;
        let text = kv_capacity(&c).map_or_else(|e| e.to_string(), |_| String::new());
        assert!(!text.contains("--max-num-seqs"), "{text}");
    }

    #[test]
    fn tensor_parallel_splits_weights_and_kv() {
        let one = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        let mut two = one.clone();
        two.tp = 2;
        let (a, b) = (kv_capacity(&one).unwrap(), kv_capacity(&two).unwrap());
        assert_eq!(b.weight_bytes_per_gpu * 2.0, a.weight_bytes_per_gpu);
        assert_eq!(b.kv_bytes_per_token_per_gpu * 2.0, a.kv_bytes_per_token_per_gpu);
        assert!(b.tokens() > 2 * a.tokens());
        let mut three = one;
        three.tp = 3;
        assert!(matches!(kv_capacity(&three), Err(Error::InvalidConfig(_))));
    }

    /// A TP group wider than the NVLink domain all-reduces over the network
    /// (it had run at NVLink's rate: TP 64 of H100s decoding 2.7 times as
    /// fast as TP 8); within GB200's 72-GPU domain it stays on NVLink.
    #[test]
    fn tensor_parallelism_past_the_nvlink_domain_crosses_the_network() {
        let tp = |gpu: &str, n: u32| {
            let mut c = cfg("llama-3.1-405b", gpu, Precision::Fp8);
            c.tp = n;
            Roofline::new(&c).unwrap()
        };
        let mut decode = BatchShape::default();
        decode.add_decode(1000);
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 4096);
        for b in [&decode, &prefill] {
            let (h8, h16) = (tp("h100", 8).breakdown(b), tp("h100", 16).breakdown(b));
            // Per token and GPU the network is 9 times slower than NVLink,
            // plus 30 µs a call.
            assert!(h16.tensor_parallel > 3 * h8.tensor_parallel, "{:?} against {:?}", h16, h8);
            let (g8, g16) = (tp("gb200", 8).breakdown(b), tp("gb200", 16).breakdown(b));
            assert!(g16.tensor_parallel < 2 * g8.tensor_parallel, "{:?} against {:?}", g16, g8);
        }
    }

    #[test]
    fn decode_is_weight_bound_and_large_prefill_compute_bound() {
        let c = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        let r = Roofline::new(&c).unwrap();
        let mut decode = BatchShape::default();
        decode.add_decode(100);
        let b = r.breakdown(&decode);
        // 16.06 GB of weights less the input embedding's table (128,256 ×
        // 4,096 × 2 B), of which one row is read: 15.01 GB at 3.35 TB/s × 0.73.
        let table = 128_256.0 * 4096.0 * 2.0;
        let weights = (16_059_990_016.0 - table + 4096.0 * 2.0) / (3.35e12 * c.calibration.eta_weights);
        assert!((b.gemm.as_secs_f64() - weights).abs() < 1e-9, "{:?} against {weights}", b.gemm);
        assert_eq!(b.tensor_parallel, Duration::ZERO);
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 8192);
        // 2 · P a token, and the LM head's logits for the last one.
        let flops = (2.0 * 8192.0 * 6_979_321_856.0 + 2.0 * 128_256.0 * 4096.0) / (989e12 * c.calibration.eta_compute);
        assert!((r.breakdown(&prefill).gemm.as_secs_f64() - flops).abs() < 1e-9);
        assert!(r.step_time(&prefill) > r.step_time(&decode) * 5);
        assert_eq!(r.step_time(&BatchShape::default()), Duration::ZERO);
    }

    #[test]
    fn fp8_halves_weight_reads_and_fp8_kv_halves_kv_reads() {
        let bf16 = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        let mut fp8 = cfg("llama-3.1-8b", "h100", Precision::Fp8);
        let mut decode = BatchShape::default();
        decode.add_decode(100_000);
        let t = |c: &EngineConfig| Roofline::new(c).unwrap().breakdown(&decode);
        assert!(t(&fp8).gemm < t(&bf16).gemm.mul_f64(0.6));
        let before = t(&fp8).attention;
        fp8.kv_cache_dtype = KvCacheDtype::Fp8;
        assert!((t(&fp8).attention.as_secs_f64() * 2.0 - before.as_secs_f64()).abs() < 1e-6);
    }

    /// Attention multiplies in the KV cache's type, not the weights': a
    /// long prompt's attention (compute-bound) takes as long with FP4 or FP8
    /// weights as with 16-bit ones beside a 16-bit cache, and an FP8 cache
    /// halves it on a GPU with FP8 tensor cores (an A100 has none, and its
    /// FP8 cache attends in 16 bits).
    #[test]
    fn attention_runs_at_the_kv_caches_precision() {
        let mut prompt = BatchShape::default();
        prompt.add_prefill(0, 32_768);
        let attention = |model: &str, gpu: &str, p: Precision, kv: KvCacheDtype| {
            let mut c = cfg(model, gpu, p);
            c.kv_cache_dtype = kv;
            Roofline::new(&c).unwrap().breakdown(&prompt).attention.as_secs_f64()
        };
        let (auto, fp8) = (KvCacheDtype::Auto, KvCacheDtype::Fp8);
        let bf16 = attention("llama-3.1-8b", "b200", Precision::Bf16, auto);
        for p in [Precision::Fp8, Precision::Fp4] {
            let a = attention("llama-3.1-8b", "b200", p, auto);
            assert!((a / bf16 - 1.0).abs() < 1e-9, "{p}: {a} against {bf16}");
        }
        let a = attention("llama-3.1-8b", "b200", Precision::Fp4, fp8);
        assert!((a * 2.0 / bf16 - 1.0).abs() < 1e-9, "an FP8 cache: {a} against {bf16}");
        let a100 = attention("llama-3.1-8b", "a100", Precision::Bf16, auto);
        assert_eq!(attention("llama-3.1-8b", "a100", Precision::Bf16, fp8), a100);
    }

    #[test]
    fn tensor_parallel_all_reduce_costs_latency_and_bytes() {
        let mut c = cfg("llama-3.1-70b", "h200", Precision::Bf16);
        c.tp = 4;
        let r = Roofline::new(&c).unwrap();
        let mut small = BatchShape::default();
        small.add_decode(10);
        let mut big = BatchShape::default();
        big.add_prefill(0, 8192);
        let (s, b) = (r.breakdown(&small).tensor_parallel, r.breakdown(&big).tensor_parallel);
        let floor = 160.0 * c.calibration.allreduce_latency_us * 1e-6;
        assert!(s.as_secs_f64() >= floor && s.as_secs_f64() < floor * 1.01);
        assert!(b > s * 2);
    }

    #[test]
    fn moe_reads_more_experts_as_the_batch_grows() {
        let r = Roofline::new(&cfg("mixtral-8x7b", "h100", Precision::Bf16)).unwrap();
        let gemm = |n: u32| {
            let mut b = BatchShape::default();
            for _ in 0..n {
                b.add_decode(100);
            }
            r.breakdown(&b).gemm
        };
        // One token reads 2 of 8 experts, 64 tokens nearly all of them.
        assert!(gemm(64) > gemm(1).mul_f64(2.5));
    }

    #[test]
    fn calibration_overlay_replaces_named_fields_only() {
        let base = Calibration::default();
        let out = base.overlay_json(r#"{"eta_kv": 0.6, "c_step_us": 200}"#).unwrap();
        assert_eq!((out.eta_kv, out.c_step_us), (0.6, 200.0));
        assert_eq!(out.eta_weights, base.eta_weights);
        let err = base.overlay_json(r#"{"eta_kvv": 0.6}"#).unwrap_err().to_string();
        assert!(err.contains("eta_kv,") || err.contains("eta_kv"), "{err}");
        assert!(err.contains("eta_kvv"), "{err}");
        assert!(base.overlay_json(r#"{"eta_kv": 1.5}"#).is_err());
        assert!(base.overlay_json(r#"{"eta_kv": "fast"}"#).is_err());
        // Values past any engine's: a century-long step, an efficiency of
        // 1e-300, a petabyte of activations.
        for (json, says) in [
            (r#"{"c_step_us": 1e15}"#, "c_step_us = 1000000000000000 is past any engine's"),
            (r#"{"eta_weights": 1e-300}"#, "is below any engine's"),
            (r#"{"activation_gib": 1e9}"#, "activation_gib = 1000000000 is past any engine's"),
        ] {
            let err = base.overlay_json(json).unwrap_err().to_string();
            assert!(err.contains(says), "{json}: {err}");
        }
        let text = serde_json::to_string(&base).unwrap();
        assert!(text.contains("\"frontend_overhead_ms\""), "{text}");
        assert_eq!(serde_json::from_str::<Calibration>(&text).unwrap(), base);
    }

    #[test]
    fn fp4_on_blackwell_reads_a_quarter_of_bf16_and_is_refused_on_hopper() {
        let mut decode = BatchShape::default();
        decode.add_decode(100);
        let gemm = |p: Precision| Roofline::new(&cfg("llama-3.1-70b", "b200", p)).unwrap().breakdown(&decode).gemm;
        let (bf16, fp8, fp4) = (gemm(Precision::Bf16), gemm(Precision::Fp8), gemm(Precision::Fp4));
        assert!(fp4 < fp8.mul_f64(0.7) && fp4 > bf16.mul_f64(0.25), "{bf16:?} {fp8:?} {fp4:?}");
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 8192);
        let big = |p: Precision| Roofline::new(&cfg("llama-3.1-70b", "b200", p)).unwrap().breakdown(&prefill).gemm;
        // Compute-bound: twice FP8's peak, half its time.
        assert!((big(Precision::Fp4).as_secs_f64() * 2.0 / big(Precision::Fp8).as_secs_f64() - 1.0).abs() < 0.01);
        let err = Roofline::new(&cfg("llama-3.1-8b", "h100", Precision::Fp4)).unwrap_err().to_string();
        assert!(err.contains("FP4") && err.contains("b200"), "{err}");
    }

    #[test]
    fn power_lies_between_idle_and_tdp_and_rises_with_the_work() {
        let c = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        let r = Roofline::new(&c).unwrap();
        let power = |b: &BatchShape| {
            let (t, p) = r.step_time_and_power(b);
            assert_eq!(t, r.step_time(b), "the same time as step_time");
            p
        };
        let mut one = BatchShape::default();
        one.add_decode(1000);
        let mut many = BatchShape::default();
        for _ in 0..128 {
            many.add_decode(1000);
        }
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 8192);
        let (p1, p128, pf) = (power(&one), power(&many), power(&prefill));
        // Batch-1 decode streams the weights: memory-bound, little compute.
        assert!(p1.memory_utilisation > 0.7 && p1.compute_utilisation < 0.05, "{p1:?}");
        // A large prefill is compute-bound and draws close to the TDP.
        assert!(pf.compute_utilisation > 0.8 && pf.watts > 0.9 * c.gpu.tdp_w, "{pf:?}");
        assert!(c.gpu.idle_w < p1.watts && p1.watts < p128.watts && p128.watts < pf.watts, "{p1:?} {p128:?} {pf:?}");
        assert!(pf.watts <= c.gpu.tdp_w);
        // TP GPUs draw together.
        let mut tp2 = c.clone();
        tp2.tp = 2;
        let r2 = Roofline::new(&tp2).unwrap();
        assert_eq!(r2.provisioned_watts(), 2.0 * c.gpu.tdp_w);
        assert_eq!(r2.idle_watts(), 2.0 * c.gpu.idle_w);
    }

    /// The weights fit and one block of the KV cache does not: the error
    /// says so (it had said the weights took 32 GiB of 66 and to add TP).
    #[test]
    fn a_kv_block_past_the_memory_left_is_named_with_its_fixes() {
        let gqa = r#"{"num_hidden_layers":1,"hidden_size":1,"num_attention_heads":65536,
            "num_key_value_heads":65536,"head_dim":65536,"intermediate_size":1,"vocab_size":1}"#;
        let model = ModelSpec::from_hf_config_str(gqa, "wide").unwrap();
        let c = EngineConfig::new(model, GpuSpec::lookup("h100").unwrap(), Precision::Bf16);
        let err = kv_capacity(&c).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::KvBlockDoesNotFit { .. }), "{err:?}");
        // 16 GiB a token (2 × 65,536 heads × 65,536 × 2 bytes), 256 GiB a block;
        // TP 8 splits the heads, 2-token blocks fit as they are.
        for says in [
            "the weights fit (32.0 GiB per GPU)",
            "one KV-cache block of 16 tokens takes 256.0 GiB per GPU",
            "leaves after the weights, activations and runtime",
            "try --tp 8 (it splits the KV heads), or --block-size 2, or a GPU with more memory",
        ] {
            assert!(text.contains(says), "{says}: {text}");
        }
        assert!(!text.contains("does not fit"), "{text}");
        // Latent attention: every TP rank holds the whole latent, so TP does
        // not help; a smaller block does.
        let mla = r#"{"num_hidden_layers":1,"hidden_size":1,"num_attention_heads":16,"kv_lora_rank":67108864,
            "qk_nope_head_dim":1,"qk_rope_head_dim":1,"v_head_dim":1,"intermediate_size":1,"vocab_size":1}"#;
        let mut c = EngineConfig::new(
            ModelSpec::from_hf_config_str(mla, "latent").unwrap(),
            GpuSpec::lookup("h100").unwrap(),
            Precision::Bf16,
        );
        c.block_size = 1024;
        let text = kv_capacity(&c).unwrap_err().to_string();
        assert!(
            text.contains("block of 1024 tokens takes 128.0 GiB") && text.contains("or --block-size 512"),
            "{text}"
        );
        assert!(!text.contains("--tp"), "{text}");
        // Weights that do not fit keep their own words.
        let err = kv_capacity(&cfg("llama-3.1-70b", "h100", Precision::Bf16)).unwrap_err();
        assert!(matches!(err, Error::ModelDoesNotFit { .. }), "{err:?}");
    }

    #[test]
    fn deepseek_v3_caches_its_latent_on_every_tp_rank() {
        let mut c = cfg("deepseek-v3", "h200", Precision::Fp8);
        c.tp = 8;
        let cap = kv_capacity(&c).unwrap();
        // 61 layers × 576 elements × 2 bytes, not split over TP; about 78 GiB
        // of FP8 weights (16-bit embeddings) per GPU, some 43 GiB left.
        assert_eq!(cap.kv_bytes_per_token_per_gpu, 70_272.0);
        assert!((cap.weight_bytes_per_gpu / GIB - 78.3).abs() < 0.1, "{cap:?}");
        assert!(cap.tokens() > 600_000 && cap.tokens() < 700_000, "{cap:?}");
        // Attention at TP 8: the absorbed form's flops split over the GPUs,
        // the whole latent cache read by each. The cache is 16-bit, so the
        // attention multiplies at the 16-bit peak (989 TFLOPS), not the FP8
        // weights' 1,979.
        let r = Roofline::new(&c).unwrap();
        let mut decode = BatchShape::default();
        decode.add_decode(100_000);
        let cal = &c.calibration;
        let flops = 61.0 * 128.0 * 2176.0 * 100_000.0 / (8.0 * 989e12 * cal.eta_compute);
        let bytes = 100_001.0 * 70_272.0 / (4.8e12 * cal.eta_kv);
        let att = r.breakdown(&decode).attention.as_secs_f64();
        assert!((att / flops.max(bytes) - 1.0).abs() < 1e-6, "{att} vs {flops} / {bytes}");
        // A prefill's pairs cost the non-absorbed form's 2·(128 + 64) + 2·128
        // = 640 flops a head, not 2,176: an 8,192-token prompt's attention.
        let mut prefill = BatchShape::default();
        prefill.add_prefill(0, 8192);
        let pairs = 8192.0 * 4096.0;
        let flops = 61.0 * 128.0 * 640.0 * pairs / (8.0 * 989e12 * cal.eta_compute);
        let bytes = 8192.0 * 70_272.0 / (4.8e12 * cal.eta_kv);
        let att = r.breakdown(&prefill).attention.as_secs_f64();
        assert!((att / flops.max(bytes) - 1.0).abs() < 1e-6, "{att} vs {flops} / {bytes}");
        // A step of both: each pair at its own cost.
        let mut both = prefill;
        both.add_decode(100_000);
        let flops = 61.0 * 128.0 * (640.0 * pairs + 2176.0 * 100_000.0) / (8.0 * 989e12 * cal.eta_compute);
        let bytes = (8192.0 + 100_001.0) * 70_272.0 / (4.8e12 * cal.eta_kv);
        let att = r.breakdown(&both).attention.as_secs_f64();
        assert!((att / flops.max(bytes) - 1.0).abs() < 1e-6, "{att} vs {flops} / {bytes}");
        // One decode reads the weights that are not routed experts (the
        // shared experts and the three dense layers among them; the LM head,
        // and one row of the input embedding) and 8 of the 256 experts of
        // each MoE layer: about 37 B of 671 B.
        let one = r.weight_bytes(1.0);
        let routed = c.model.expert_params_all_layers() as f64;
        let (table, row) = (129_280.0 * 7168.0 * 2.0, 7168.0 * 2.0);
        let always = c.model.weight_bytes(Precision::Fp8) - 256.0 * routed - table + row;
        assert!((one - always - 8.0 * routed).abs() < 1.0, "{one}");
        assert!(always > (61 * 187_105_280 + 3 * 396_361_728 + 58 * 44_040_192u64) as f64, "{always}");
    }

    /// A step reads the LM head's table and its tokens' rows of the input
    /// embedding, so tied and untied embeddings step alike (an untied model
    /// had read a second table a step: 6.5 % of the 8B's 16-bit decode),
    /// though memory holds both tables; and every sequence's logits cost
    /// 2 · V · d flops at the 16-bit peak.
    #[test]
    fn a_step_reads_the_lm_head_and_its_rows_of_the_embedding() {
        let untied = cfg("llama-3.1-8b", "h100", Precision::Fp8);
        let mut tied = untied.clone();
        tied.model.tie_word_embeddings = true;
        let table = 128_256.0 * 4096.0 * 2.0;
        assert_eq!(untied.model.weight_bytes(Precision::Fp8) - tied.model.weight_bytes(Precision::Fp8), table);
        let (u, t) = (Roofline::new(&untied).unwrap(), Roofline::new(&tied).unwrap());
        for n in [1u32, 64, 4096] {
            let mut decode = BatchShape::default();
            (0..n).for_each(|_| decode.add_decode(1000));
            assert_eq!(u.step_time(&decode), t.step_time(&decode), "{n} decodes");
            let mut prefill = BatchShape::default();
            prefill.add_prefill(0, n);
            assert_eq!(u.step_time(&prefill), t.step_time(&prefill), "a prompt of {n}");
        }
        // 256 decodes are compute-bound: the head's flops add to the
        // products', at half the FP8 rate.
        let mut decodes = BatchShape::default();
        (0..256).for_each(|_| decodes.add_decode(1000));
        let mut headless = untied.clone();
        headless.model.vocab_size = 1;
        let h = Roofline::new(&headless).unwrap();
        let added = u.breakdown(&decodes).gemm.as_secs_f64() - h.breakdown(&decodes).gemm.as_secs_f64();
        let want = 256.0 * 2.0 * (128_256.0 - 1.0) * 4096.0 / (989e12 * untied.calibration.eta_compute);
        assert!((added / want - 1.0).abs() < 1e-6, "{added} against {want}");
    }

    #[test]
    fn shared_experts_are_read_every_step() {
        let text = r#"{"hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
            "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
            "num_hidden_layers": 24, "num_attention_heads": 16, "vocab_size": 151936}"#;
        let with = ModelSpec::from_hf_config_str(text, "qwen1.5-moe").unwrap();
        let without = ModelSpec { shared_expert_intermediate_size: 0, ..with.clone() };
        let roofline = |m: &ModelSpec| {
            Roofline::new(&EngineConfig::new(m.clone(), GpuSpec::lookup("h100").unwrap(), Precision::Bf16)).unwrap()
        };
        let (a, b) = (roofline(&with), roofline(&without));
        let shared = 24.0 * 3.0 * 2048.0 * 5632.0;
        // Read whatever the batch: at one token and at a thousand.
        for n in [1.0, 1000.0] {
            assert!((a.weight_bytes(n) - b.weight_bytes(n) - shared * 2.0).abs() < 1.0, "{n}");
        }
        assert_eq!(a.flops_per_token - b.flops_per_token, 2.0 * shared);
        assert_eq!(a.expert_bytes, b.expert_bytes);
    }

    #[test]
    fn a_sliding_window_spares_half_of_gpt_oss_s_attention_at_long_context() {
        let c = cfg("gpt-oss-120b", "h200", Precision::Mxfp4);
        let mut full = c.clone();
        full.model.sliding_window = None;
        let (windowed, whole) = (Roofline::new(&c).unwrap(), Roofline::new(&full).unwrap());
        let attention = |r: &Roofline, m: &ModelSpec, context: u32| {
            let mut b = BatchShape::of_model(m);
            for _ in 0..64 {
                b.add_decode(context);
            }
            r.breakdown(&b).attention.as_secs_f64()
        };
        // Half the layers read 128 tokens where they had read 32,768: the
        // step's attention is (0.5 · 32,768 + 0.5 · 128) / 32,768 ≈ 0.50 of it.
        let ratio = attention(&windowed, &c.model, 32_768) / attention(&whole, &full.model, 32_768);
        assert!((0.48..0.53).contains(&ratio), "{ratio}");
        // Inside the window nothing changes.
        assert_eq!(attention(&windowed, &c.model, 100), attention(&whole, &full.model, 100));
        // A prefill's pairs: a chunk within the window counts as a full one,
        // one past it W a query, and chunks add up to the prompt they split.
        assert_eq!(windowed_pairs(0, 100, 128), 100.0 * 50.0);
        assert_eq!(windowed_pairs(1000, 10, 128), 1280.0);
        let whole_prompt = windowed_pairs(0, 4096, 128);
        assert_eq!(windowed_pairs(0, 100, 128) + windowed_pairs(100, 3996, 128), whole_prompt);
        let mut prompt = BatchShape::of_model(&c.model);
        prompt.add_prefill(0, 8192);
        let a = prompt.attended();
        assert_eq!(a.prefill_attention, 0.5 * prompt.prefill_attention + 0.5 * whole_prompt_of(8192));
        // The cache holds the full layers' bytes a token: twice the tokens.
        let (kv, kv_full) = (kv_capacity(&c).unwrap(), kv_capacity(&full).unwrap());
        assert_eq!(kv.kv_bytes_per_token_per_gpu * 2.0, kv_full.kv_bytes_per_token_per_gpu);
        assert!(kv.num_blocks >= 2 * kv_full.num_blocks && kv.num_blocks <= 2 * kv_full.num_blocks + 1);
    }

    /// TensorRT-LLM's cache keeps every token of Llama 4's chunked layers
    /// (it frees a sliding window's blocks only); vLLM's frees a chunk's,
    /// and so holds more tokens in the same memory. GPT-OSS's sliding
    /// window is freed under both. The attention is the chunk's either way.
    #[test]
    fn tensorrt_llm_s_cache_keeps_chunked_layers_whole() {
        let vllm = cfg("llama-4-scout", "h200", Precision::Fp8);
        let trt = EngineConfig { scheduler: SchedulerPolicy::Trtllm, ..vllm.clone() };
        assert!(trt.kv_model().sliding_window.is_none() && vllm.kv_model().sliding_window.is_some());
        assert_eq!(trt.model, vllm.model, "the attention's window stays the model's");
        let per_token = |c: &EngineConfig| kv_capacity(c).unwrap().kv_bytes_per_token_per_gpu;
        // Scout: chunked attention in 36 of 48 layers; a full one's bytes a
        // token are the 12 full layers' four times over.
        assert_eq!(per_token(&trt), per_token(&vllm) * 4.0);
        let mut whole = vllm.clone();
        whole.model.sliding_window = None;
        assert_eq!(per_token(&trt), per_token(&whole));
        // A 20,000-token sequence: TensorRT-LLM's blocks grow with it,
        // vLLM's chunked layers stop at the chunk's.
        let blocks = |c: &EngineConfig| {
            let m = c.kv_model();
            (m.kv_blocks_for(20_000, 16), m.kv_blocks_for(40_000, 16))
        };
        assert_eq!(blocks(&trt), (1250, 2500));
        let (short, long) = blocks(&vllm);
        assert_eq!(long - short, 1250, "only the full layers' blocks grow past the chunk");
        // A sliding window (GPT-OSS) is freed under TensorRT-LLM too.
        let gpt = EngineConfig { scheduler: SchedulerPolicy::Trtllm, ..cfg("gpt-oss-120b", "h200", Precision::Mxfp4) };
        assert_eq!(gpt.kv_model().sliding_window, gpt.model.sliding_window);
    }

    fn whole_prompt_of(n: u32) -> f64 {
        windowed_pairs(0, n, 128)
    }

    /// [`SlidingWindow::pairs`] of a sliding window of `window`.
    fn windowed_pairs(cached: u32, new: u32, window: u32) -> f64 {
        SlidingWindow { window, layers: 1, chunked: false }.pairs(cached, new)
    }

    /// [`SlidingWindow::pairs`] of chunks of `chunk`.
    fn chunked_pairs(cached: u32, new: u32, chunk: u32) -> f64 {
        SlidingWindow { window: chunk, layers: 1, chunked: true }.pairs(cached, new)
    }

    #[test]
    fn mxfp4_times_a_mixture_s_experts_at_its_rate_and_the_rest_16_bit() {
        // On a B200 against FP8 activations (W4A8) the experts' products
        // run at FP8's peak and attention's at BF16's: a prefill,
        // compute-bound, lands between all-FP8 and all-BF16; on an H200
        // (W4A16) at BF16's (at its full rate here: `eta_w4a16_moe` 1), with
        // half the bytes of FP8.
        let step = |gpu: &str, p: Precision| {
            let mut c = cfg("gpt-oss-120b", gpu, p);
            c.calibration.eta_w4a16_moe = 1.0;
            if p == Precision::Mxfp4 && c.gpu.runs_w4a8() {
                c.mxfp4_activations = Some(crate::engine::Mxfp4Activations::Fp8);
            }
            let mut b = BatchShape::of_model(&c.model);
            b.add_prefill(0, 8192);
            Roofline::new(&c).unwrap().breakdown(&b).gemm.as_secs_f64()
        };
        let (mx, fp8, bf16) =
            (step("b200", Precision::Mxfp4), step("b200", Precision::Fp8), step("b200", Precision::Bf16));
        assert!(fp8 < mx && mx < bf16, "{fp8} {mx} {bf16}");
        let (mx, bf16) = (step("h200", Precision::Mxfp4), step("h200", Precision::Bf16));
        assert!((mx / bf16 - 1.0).abs() < 1e-9, "{mx} {bf16}");
        // A decode of one reads the hit experts' 4.25-bit weights and the
        // 16-bit rest: less than FP8's bytes, more than an all-4-bit body's.
        let decode = |p: Precision| {
            let c = cfg("gpt-oss-120b", "h200", p);
            let mut b = BatchShape::of_model(&c.model);
            b.add_decode(10);
            Roofline::new(&c).unwrap().weight_bytes(1.0)
        };
        let (mx, fp8, int4) = (decode(Precision::Mxfp4), decode(Precision::Fp8), decode(Precision::Int4));
        assert!(int4 < mx && mx < fp8, "{int4} {mx} {fp8}");
    }

    #[test]
    fn chunked_attention_sees_its_own_chunk_alone() {
        // Llama 4: 36 of 48 layers attend within their chunk of 8,192.
        let c = cfg("llama-4-maverick", "h200", Precision::Fp8);
        let mut b = BatchShape::of_model(&c.model);
        b.add_decode(8192 * 4 + 100);
        assert_eq!(b.windowed_decode_context, 100);
        let a = b.attended();
        assert_eq!(a.decode_context, 0.25 * (8192.0 * 4.0 + 100.0) + 0.75 * 100.0);
        // A chunk's pairs: inside the first chunk a full layer's; a chunk
        // that crosses a boundary starts afresh there; chunks add up.
        assert_eq!(chunked_pairs(0, 100, 8192), 100.0 * 50.0);
        assert_eq!(chunked_pairs(8192, 100, 8192), 100.0 * 50.0);
        assert_eq!(chunked_pairs(8000, 392, 8192), 192.0 * (8000.0 + 96.0) + 200.0 * 100.0);
        assert_eq!(chunked_pairs(0, 20_000, 8192), chunked_pairs(0, 8000, 8192) + chunked_pairs(8000, 12_000, 8192));
        // A whole chunk's pairs, C² / 2, each chunk of a long prompt alike.
        assert_eq!(chunked_pairs(0, 3 * 8192, 8192), 3.0 * 8192.0 * 8192.0 / 2.0);
        // Its attention at 32,768 tokens of context: a quarter of the
        // layers' whole, the rest within the last chunk.
        let mut full = c.clone();
        full.model.sliding_window = None;
        let attention = |cfg: &EngineConfig, context: u32| {
            let mut b = BatchShape::of_model(&cfg.model);
            for _ in 0..64 {
                b.add_decode(context);
            }
            Roofline::new(cfg).unwrap().breakdown(&b).attention.as_secs_f64()
        };
        let ratio = attention(&c, 32_768 + 1_000) / attention(&full, 32_768 + 1_000);
        assert!((0.25..0.30).contains(&ratio), "{ratio}");
    }

    #[test]
    fn w4a16_experts_multiply_at_their_share_of_the_16_bit_rate() {
        // On an H200 (no FP4 cores) MXFP4 experts run at eta_w4a16_moe of
        // the 16-bit rate: a compute-bound prefill's products take longer
        // by the experts' share; on a B200 against FP8 activations (W4A8)
        // the constant does nothing, nor for a model's other precisions.
        let gemm = |gpu: &str, p: Precision, eta: f64| {
            let mut c = cfg("gpt-oss-20b", gpu, p);
            c.calibration.eta_w4a16_moe = eta;
            if p == Precision::Mxfp4 && gpu == "b200" {
                c.mxfp4_activations = Some(crate::engine::Mxfp4Activations::Fp8);
            }
            let mut b = BatchShape::of_model(&c.model);
            b.add_prefill(0, 16_384);
            Roofline::new(&c).unwrap().breakdown(&b).gemm.as_secs_f64()
        };
        let (slow, full) = (gemm("h200", Precision::Mxfp4, 0.34), gemm("h200", Precision::Mxfp4, 1.0));
        let m = ModelSpec::lookup("gpt-oss-20b").unwrap();
        let experts = m.expert_params_all_layers() as f64 * 4.0 / m.active_params() as f64;
        let want = 1.0 - experts + experts / 0.34;
        assert!((slow / full / want - 1.0).abs() < 0.02, "{} against {want}", slow / full);
        assert_eq!(gemm("b200", Precision::Mxfp4, 0.34), gemm("b200", Precision::Mxfp4, 1.0));
        assert_eq!(gemm("h200", Precision::Bf16, 0.34), gemm("h200", Precision::Bf16, 1.0));
        // The shipped constant, and a calibration that gives another.
        assert_eq!(Calibration::for_family(crate::engine::GpuFamily::Hopper).eta_w4a16_moe, 0.34);
        let err = Calibration::default().overlay(&serde_json::json!({"eta_w4a16_moe": 0.0})).unwrap_err();
        assert!(err.to_string().contains("eta_w4a16_moe = 0 must lie in (0, 1]"), "{err}");
    }

    #[test]
    fn mxfp4_activations_pick_the_experts_rate() {
        use crate::engine::Mxfp4Activations::{Bf16, Fp8};
        // A compute-bound prefill's products on an MI355X (FP4 cores): named
        // FP8 (W4A8) the experts run at the FP8 rate; named 16-bit (AITER's
        // A16W4, as InferenceMAX's script sets it) at eta_w4a16_moe of the
        // 16-bit rate, the rest 16-bit either way.
        let gemm = |gpu: &str, a: Option<crate::engine::Mxfp4Activations>| {
            let mut c = cfg("gpt-oss-120b", gpu, Precision::Mxfp4);
            c.mxfp4_activations = a;
            let mut b = BatchShape::of_model(&c.model);
            b.add_prefill(0, 16_384);
            (Roofline::new(&c).unwrap().breakdown(&b).gemm.as_secs_f64(), c)
        };
        let ((fp8, c), (w4a16, _)) = (gemm("mi355x", Some(Fp8)), gemm("mi355x", Some(Bf16)));
        assert!(!c.mxfp4_w4a16());
        // The experts as vLLM pads them on the MI355X (tiles of 256).
        let served = c.served_model();
        let m = served.as_ref();
        let all = m.active_params() as f64;
        let experts = m.expert_params_all_layers() as f64 * f64::from(m.moe.unwrap().experts_per_token);
        let (bf16_peak, fp8_peak) =
            (c.gpu.peak_flops(Precision::Bf16).unwrap(), c.gpu.peak_flops(Precision::Fp8).unwrap());
        let eta = c.calibration.eta_w4a16_moe;
        let want = (experts / (bf16_peak * eta) + (all - experts) / bf16_peak)
            / (experts / fp8_peak + (all - experts) / bf16_peak);
        assert!(want > 2.0, "{want}");
        assert!((w4a16 / fp8 / want - 1.0).abs() < 0.03, "{} against {want}", w4a16 / fp8);
        // Named as the server's default, nothing moves: vLLM's 16-bit on a
        // B200 and on an H200.
        assert_eq!(gemm("b200", Some(Bf16)).0, gemm("b200", None).0);
        assert_eq!(gemm("h200", Some(Bf16)).0, gemm("h200", None).0);
        // Refused where it cannot apply: FP8 activations without FP4
        // cores, and any model or precision but an MXFP4 mixture of experts.
        let refused = |model: &str, gpu: &str, p: Precision, a| {
            let mut c = cfg(model, gpu, p);
            c.mxfp4_activations = Some(a);
            c.validate().unwrap_err().to_string()
        };
        let e = refused("gpt-oss-120b", "h200", Precision::Mxfp4, Fp8);
        assert!(e.contains("runs on FP4 tensor cores, which the H200 lacks") && e.contains("bf16"), "{e}");
        let e = refused("llama-3.1-8b", "b200", Precision::Fp8, Bf16);
        assert!(e.contains("is for an MXFP4 mixture of experts") && e.contains("drop it"), "{e}");
    }

    #[test]
    fn vllm_pads_mxfp4_experts_to_its_kernels_tiles() {
        use crate::engine::SchedulerPolicy::{Sglang, Vllm};
        let pad = |gpu: &str, tp: u32, ep: u32, s| {
            let mut c = cfg("gpt-oss-120b", gpu, Precision::Mxfp4);
            (c.tp, c.ep, c.scheduler) = (tp, ep, s);
            c.mxfp4_expert_padding()
        };
        // GPT-OSS-120B's experts, 2,880 by 2,880: FlashInfer's tiles of 256
        // on a B200 (each TP partition's inner size, 2,880 / TP, rounded up),
        // Triton's 64 on the inner size alone on Hopper (none at TP 1),
        // Marlin's on the A100, ROCm's 256 on gfx950 and 128 on gfx942.
        assert_eq!(pad("b200", 1, 1, Vllm), Some((3072, 3072)));
        assert_eq!(pad("b200", 8, 1, Vllm), Some((3072, 8 * 512)));
        assert_eq!(pad("h200", 1, 1, Vllm), None);
        assert_eq!(pad("h200", 8, 1, Vllm), Some((2880, 8 * 384)));
        assert_eq!(pad("a100", 1, 1, Vllm), Some((3072, 2944)));
        assert_eq!(pad("mi355x", 1, 1, Vllm), Some((3072, 3072)));
        assert_eq!(pad("mi300x", 2, 1, Vllm), Some((2944, 2 * 1536)));
        // Under expert parallelism the experts are whole on their GPUs.
        assert_eq!(pad("b200", 8, 8, Vllm), Some((3072, 3072)));
        // SGLang's: FlashInfer's 256 on a B200, triton_kernels' MXFP4 block
        // of 32 on the inner size on Hopper (360 a partition at TP 8 held
        // as 384); not its ROCm path, nor its experts upcast to 16 bits
        // under expert parallelism on Hopper.
        assert_eq!(pad("b200", 8, 1, Sglang), Some((3072, 8 * 512)));
        assert_eq!(pad("b200", 8, 8, Sglang), Some((3072, 3072)));
        assert_eq!(pad("h200", 1, 1, Sglang), None);
        assert_eq!(pad("h200", 8, 1, Sglang), Some((2880, 8 * 384)));
        assert_eq!(pad("h200", 4, 1, Sglang), Some((2880, 4 * 736)));
        assert_eq!(pad("h200", 8, 8, Sglang), None);
        assert_eq!(pad("mi355x", 1, 1, Sglang), None);
        // TensorRT-LLM's own padding is not modelled; nor another precision.
        assert_eq!(pad("b200", 8, 1, crate::engine::SchedulerPolicy::Trtllm), None);
        let mut bf16 = cfg("gpt-oss-120b", "b200", Precision::Bf16);
        bf16.tp = 8;
        assert_eq!(bf16.mxfp4_expert_padding(), None);
        // The padded experts cost what they hold: at TP 8 on a B200 a
        // prefill's expert products take 3,072 × 4,096 / 2,880² = 1.517
        // times as long, and the weights take memory from the KV cache.
        let run = |s| {
            let mut c = cfg("gpt-oss-120b", "b200", Precision::Mxfp4);
            (c.tp, c.scheduler) = (8, s);
            // The same kernels' rate under each (each server's default differs).
            c.mxfp4_activations = Some(crate::engine::Mxfp4Activations::Fp8);
            let r = Roofline::new(&c).unwrap();
            (r.expert_compute_s(16_384.0), kv_capacity_unchecked(&c).weight_bytes_per_gpu)
        };
        // TensorRT-LLM's experts as the checkpoint has them.
        let ((padded, padded_w), (plain, plain_w)) = (run(Vllm), run(crate::engine::SchedulerPolicy::Trtllm));
        assert_eq!(run(Sglang), (padded, padded_w));
        let want = 3072.0 * 4096.0 / (2880.0 * 2880.0);
        // (The padded inner size is held whole: 4,369 for 4,369.07.)
        assert!((padded / plain / want - 1.0).abs() < 1e-4, "{} against {want}", padded / plain);
        assert!(padded_w > plain_w * 1.3, "{padded_w} {plain_w}");
        // The name stays the checkpoint's.
        let mut c = cfg("gpt-oss-120b", "b200", Precision::Mxfp4);
        c.tp = 8;
        assert_eq!(c.served_model().name, c.model.name);
        // The fused-MoE kernels move the padded activations: at TP 8 on a
        // B200, 36 layers of (3 × 3,072 + 6 × 512) × 2 bytes a pair, where
        // an H200's at TP 1 (unpadded) move (3 × 2,880 + 6 × 2,880) × 2.
        let pair = |gpu: &str, tp: u32, s| {
            let mut c = cfg("gpt-oss-120b", gpu, Precision::Mxfp4);
            (c.tp, c.scheduler) = (tp, s);
            c.moe_activation_bytes_per_pair(f64::from(tp))
        };
        assert_eq!(pair("b200", 8, Vllm), 36.0 * (3.0 * 3072.0 + 6.0 * 512.0) * 2.0);
        assert_eq!(pair("b200", 8, Sglang), pair("b200", 8, Vllm));
        assert_eq!(pair("h200", 1, Sglang), 36.0 * (3.0 * 2880.0 + 6.0 * 2880.0) * 2.0);
    }

    #[test]
    fn each_server_multiplies_mxfp4_experts_as_it_does_unless_told() {
        use crate::engine::Mxfp4Activations::{Bf16, Fp8};
        use crate::engine::SchedulerPolicy::{Sglang, Trtllm, Vllm};
        // vLLM keeps 16-bit activations on FP4 cores too (FlashInfer's
        // MXFP4 × BF16 on Blackwell, Triton's on ROCm); SGLang and
        // TensorRT-LLM quantize them to MXFP8 there; without FP4 cores all
        // run 16-bit.
        let default = |gpu: &str, s| {
            let mut c = cfg("gpt-oss-120b", gpu, Precision::Mxfp4);
            c.scheduler = s;
            (c.default_mxfp4_activations(), c.mxfp4_w4a16())
        };
        for gpu in ["b200", "gb200", "mi355x"] {
            assert_eq!(default(gpu, Vllm), (Bf16, true), "{gpu}");
            assert_eq!(default(gpu, Sglang), (Fp8, false), "{gpu}");
            assert_eq!(default(gpu, Trtllm), (Fp8, false), "{gpu}");
        }
        for gpu in ["h200", "h100", "mi300x", "a100"] {
            for s in [Vllm, Sglang, Trtllm] {
                assert_eq!(default(gpu, s), (Bf16, true), "{gpu} {s}");
            }
        }
        // The default is what a B200's vLLM prefill then takes: the 16-bit
        // experts' time, not the FP8 one's.
        let gemm = |s, a| {
            let mut c = cfg("gpt-oss-120b", "b200", Precision::Mxfp4);
            c.scheduler = s;
            c.mxfp4_activations = a;
            let mut b = BatchShape::of_model(&c.model);
            b.add_prefill(0, 16_384);
            Roofline::new(&c).unwrap().breakdown(&b).gemm.as_secs_f64()
        };
        assert_eq!(gemm(Vllm, None), gemm(Vllm, Some(Bf16)));
        assert_eq!(gemm(Sglang, None), gemm(Sglang, Some(Fp8)));
        assert!(gemm(Vllm, None) > 1.5 * gemm(Sglang, None), "{} {}", gemm(Vllm, None), gemm(Sglang, None));
    }
}
